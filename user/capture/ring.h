/* Capture: BPF's records read from the ring and the slots (struct
 * lmt_slot), decoded, and put back in the order each VM sent them (takes,
 * awaits), then handed to conversion (convert/events.h) VM by VM. Nothing
 * here decides a process's fate: what BPF says of a process's life (a new
 * VM, a fork, an exec) goes up through the session's callbacks (struct
 * capture_ops), which never drain the ring themselves: a change that needs
 * the ring read (unbatch) is asked for, and the session's loop does it.
 * Capture knows the session's processes and VMs only through those
 * callbacks: its part of the trace is struct capture, of a VM struct
 * cap_vm (embedded in the session's structs). */
#ifndef LMT_RING_H
#define LMT_RING_H

#include <stddef.h>
#include <stdint.h>

#include "luamemtrace.skel.h"
#include "convert/conv.h"
#include "streams/out.h"
#include "util/u64set.h"

struct ring_buffer;
struct take;

/* A VM, for capture. The session fills in cv, tgid and id when it makes
 * the VM; capture keeps the rest. */
struct cap_vm {
	struct conv_vm *cv;  /* its conversion state (convert/conv.h) */
	uint32_t tgid, id;   /* its process, BPF's number (struct lmt_vm) */
	int closed;          /* it ran lua_close */
	/* batches merge_round took from its slot, not yet converted, in
	 * order (capture/ring.c: take_add) */
	struct take *takes;
	unsigned ntakes, takes_cap;
};

/* What capture reports up and asks of the session (ctx: struct
 * capture's). None of them reads the ring. */
struct capture_ops {
	/* A traced VM by its process and BPF's number (NULL: none): a lookup. */
	struct cap_vm *(*vm_get)(void *ctx, uint32_t tgid, uint32_t id);
	/* A VM BPF registered itself whose first record this is: made by
	 * the session (NULL: not traced: no such live process, one left
	 * out, or one with all the VMs it may have). */
	struct cap_vm *(*vm_new)(void *ctx, uint32_t tgid, uint32_t id);
	/* Is tgid a live traced process with all the VMs it may have (its
	 * further VMs' events go with them, refused)? */
	int (*vms_full)(void *ctx, uint32_t tgid);
	/* fn(arg, v) for each VM of the live process tgid (live), or of
	 * every process seen whose PID is tgid (0: every one), in the order
	 * the processes were seen and each one's VMs were found, until fn
	 * returns non-zero: that, or 0. */
	int (*each_vm)(void *ctx, uint32_t tgid, int live,
		       int (*fn)(void *arg, struct cap_vm *v), void *arg);
	/* lua_newstate returned where user space must register the VM */
	void (*newvm)(void *ctx, const struct lmt_newvm *n);
	/* a traced process forked (its child stopped) */
	void (*fork)(void *ctx, const struct lmt_fork *f);
	/* a traced process executed a new program */
	void (*exec)(void *ctx, uint32_t tgid);
	/* a traced process mapped a file: its symbols are to be read again */
	void (*mapped)(void *ctx, uint32_t tgid);
};

/* Capture's part of a trace. The session sets ops, ctx, skel, no_loss,
 * rb, and maps slots and rb_pos; capture keeps the rest. */
struct capture {
	const struct capture_ops *ops;
	void *ctx;
	struct luamemtrace_bpf *skel;
	int no_loss;            /* --no-loss: its ring share is counted */
	struct ring_buffer *rb;
	struct lmt_slot *slots; /* the slots map, mmapped */
	size_t slots_len;
	void *rb_pos;           /* the ring's position pages, mmapped */
	size_t rb_pos_len;
	uint64_t bad_recs;      /* batched records that cannot be: not written */
	/* allocations awaiting their return, by their thread's mark
	 * (capture/ring.c: awaits); those whose return never came, and those
	 * in flight when their process or the trace ended */
	struct u64map awaits;
	uint64_t aw_missed, aw_left;
	unsigned closed;        /* VMs that ran lua_close while traced */
	int takes;              /* a VM has a take */
	int unbatch_req;        /* unbatch() once out of the ring's callback */
	/* processes stopped at exit() (LMT_REC_EXITING): their slots are
	 * read, once out of the ring's callback (slots_exiting) */
	struct u64set exiting;
};

/* The ring buffer's callback (ctx: the struct capture). */
int on_rec(void *ctx, void *data, size_t sz);
/* Every record the ring holds now, read. */
void drain(struct capture *c);
/* VMs share a ud: batching ends (nobatch), and what the slots hold is
 * read after what the ring holds. unbatch_request only asks: from a
 * callback; the session calls unbatch once out of it. */
void unbatch_request(struct capture *c);
void unbatch(struct capture *c);
/* The processes stopped at exit() since the last call (their stops not
 * released yet): what their slots hold, read now, while the memory their
 * names are read from still exists. */
void slots_exiting(struct capture *c);
/* -o FILE with several VMs: what is held in stream one goes, as far as it
 * can (streams/merge.h). */
void merge_round(struct capture *c, struct tout *one);
/* A VM's takes (merge_round's), unread: gone. */
void takes_free(struct cap_vm *v);
/* What the slots of tgid (0: all) held, read; with release, they are
 * freed; its allocations awaiting their return counted in flight. */
void slots_left(struct capture *c, uint32_t tgid, int release);

#endif
