/* Capture: BPF's records read from the ring and the slots (struct
 * lmt_slot), decoded, and put back in the order each VM sent them (takes,
 * awaits), then handed to conversion (convert/events.h) VM by VM. Nothing
 * here decides a process's fate: what BPF says of a process's life (a new
 * VM, a fork, an exec) goes up through the session's callbacks (struct
 * capture_ops), which never drain the ring themselves: a change that needs
 * the ring read (unbatch) is asked for, and the session's loop does it. */
#ifndef LMT_RING_H
#define LMT_RING_H

#include "session/session.h"

struct capture_ops {
	/* A VM BPF registered itself whose first record this is: made by
	 * the session (NULL: not traced). */
	struct tvm *(*vm_new)(struct tr *t, struct tproc *p, uint32_t id);
	/* lua_newstate returned where user space must register the VM */
	void (*newvm)(struct tr *t, const struct lmt_newvm *n);
	/* a traced process forked (its child stopped) */
	void (*fork)(struct tr *t, const struct lmt_fork *f);
	/* a traced process executed a new program */
	void (*exec)(struct tr *t, uint32_t tgid);
};

/* The ring buffer's callback (ctx: the trace). */
int on_rec(void *ctx, void *data, size_t sz);
/* Every record the ring holds now, read. */
void drain(struct tr *t);
/* VMs share a ud: batching ends (nobatch), and what the slots hold is
 * read after what the ring holds. unbatch_request only asks: from a
 * callback; the session calls unbatch once out of it. */
void unbatch_request(struct tr *t);
void unbatch(struct tr *t);
/* -o FILE with several VMs: what is held goes, as far as it can
 * (streams/merge.h). */
void merge_round(struct tr *t);
/* A VM's takes (merge_round's), unread: gone. */
void takes_free(struct tvm *v);
/* What the slots of tgid (0: all) held, read; with release, they are
 * freed; its allocations awaiting their return counted in flight. */
void slots_left(struct tr *t, uint32_t tgid, int release);

#endif
