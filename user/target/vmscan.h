/* Finding LuaJIT VMs in a process's memory, without symbols. */
#ifndef LMT_VM_H
#define LMT_VM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target/layout.h"
#include "target/proc.h"
#include "util/u64set.h"

struct vminfo {
	uint64_t L; /* main lua_State (start of GG_State) */
	uint64_t g;
	uint64_t allocf, allocd;
	int32_t vmstate;
	const struct lj_variant *var;
};

struct vmscan {
	struct vminfo *v;
	size_t n;
	uint64_t scanned; /* bytes read */
	/* What was seen when nothing validated, for the error message. */
	size_t candidates; /* glref self-references found */
	size_t over;       /* ones past LMT_VMS_MAX VMs: not checked */
	struct u64set seen; /* VMs found (L) */
	/* Words shaped like a main lua_State's glref, of any known or
	 * unknown size (vm_refs_seen): with 64-bit references, 32-bit ones */
	size_t shape64, shape32;
	char first_reject[256];
};

/* Scans the writable private memory of pid for main lua_States. variant
 * restricts the table to one entry (NULL: try all). 0 or -errno. */
int vm_scan(pid_t pid, const struct pmaps *m, const char *variant,
	    struct vmscan *out);
void vm_scan_free(struct vmscan *s);
/* Validates a lua_State address (e.g. from lua_newstate's return). If L
 * is a coroutine, the VM of its main thread is returned. 0 or -EINVAL. */
int vm_at(pid_t pid, const struct pmaps *m, const char *variant, uint64_t L,
	  struct vminfo *out, char *why, size_t whylen);

/* The shapes of the lua_State at L, as vm_scan counts them. */
void vm_shape_at(pid_t pid, uint64_t L, size_t *shape64, size_t *shape32);
/* What the shapes tell of an unknown build's references: a phrase. */
const char *vm_refs_seen(size_t shape64, size_t shape32);

#endif
