/* Allocator probes (probes/alloc.c): a process's allocators probed by
 * PID, as uprobe_multi links (--duty), as one session link each, or on a
 * session link shared by the traced processes that map the file; a VM
 * registered in BPF's maps before its allocator is probed. */
#ifndef LMT_ALLOC_H
#define LMT_ALLOC_H

#include <stdint.h>

#include "probes/allocf.h"

struct probes;
struct probe_proc;
struct vminfo;

/* Every traced process's allocator probes on that have none (--duty's
 * windows, and the first processes once all are attached), shared links
 * first (struct shl); strict: a failure said, and -1. */
int alloc_probes_on(struct probes *t, int strict);
/* Or their links moved to out (uprobe_multi links' fds to fds), each
 * allocator's entries before its returns. */
void alloc_probes_take(struct probes *t, struct links *out, struct fdv *fds);
/* Says a process not traced that hit a shared link (struct shl). */
void foreign_check(struct probes *t);
/* A process's links, its allocators' too (later: on the reaper thread). */
void proc_links_free(struct probe_proc *p, int later);
/* The allocator at addr in p probed (once per allocator): 0, or -1 said. */
int attach_allocf(struct probes *t, struct probe_proc *p, uint64_t addr);
/* Has BPF a VM of process tgid with allocator state ud? 1 and its
 * global_State in *g, or 0. */
int vm_registered(struct probes *t, uint32_t tgid, uint64_t ud, uint64_t *g);
/* VM v of p (nvm: p's VMs, v's included) registered in BPF's maps as
 * number id, its slot claimed, its allocator probed, and BPF told to
 * register p's next VMs itself: 0, or -1 said. */
int vm_register(struct probes *t, struct probe_proc *p, unsigned nvm,
		const struct vminfo *v, uint32_t id);

/* VM id of process tgid (L, ud), which BPF registered itself, removed
 * from BPF's maps and its slot freed: only its own entries. */
void vm_unregister(struct probes *t, uint32_t tgid, uint32_t id, uint64_t L, uint64_t ud);

#endif
