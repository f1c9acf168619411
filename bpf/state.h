/* The BPF side's state: knobs user space sets before load, flags it
 * flips while tracing, the per-CPU counters and scratch, and struct ctx,
 * what one program run carries from helper to helper. */
#ifndef LMT_BPF_STATE_H
#define LMT_BPF_STATE_H

/* -- Knobs and flags ---------------------------------------------------- */

/* A CPU wakes the consumer once it has submitted this much since its last
 * wakeup; below it the consumer finds the data on its next timed poll.
 * Counted per CPU, not asked of the ring (bpf_ringbuf_query is a helper
 * call per record). Set by user space before load. */
const volatile __u64 wakeup_bytes = 256 * 1024;

/* Benchmark only (--ab): an allocation of LMT_AB_MARK bytes switches the
 * allocator's programs between tracing and doing nothing, so the floor and
 * luamemtrace alternate in one process, which cancels the drifts that move
 * whole runs; with --ab=MS (LMT_AB_TIMED) user space alone switches them,
 * by time (user/session/duty.c). Off, the verifier drops this code (a constant at
 * load). */
const volatile __u8 ab = 0; /* LMT_AB_MARKED, LMT_AB_TIMED */
const volatile __u8 ab_without = 0; /* LMT_AB_W_*: --ab-without */
__u8 ab_floor;
/* Set by user space while a session link with no PID is on (user/probes/alloc.c:
 * struct shl): the allocator's programs then run in processes not traced
 * too, which vm_of tells apart and foreign_note notes. */
__u8 shl_on;

/* Set by user space before load. one_stream: several VMs of the process
 * write one stream (-o FILE): a second VM turns numbering on (multi,
 * struct lmt_slot).
 * follow: forked children are traced (-o DIR). all_procs: a new VM in any
 * process that maps a probed LuaJIT is reported (--all). */
const volatile __u8 one_stream = 1;
const volatile __u8 follow = 0;
const volatile __u8 all_procs = 0;
/* --all --exe: the exes map holds the names wanted (bpf/newvm.h). */
const volatile __u8 exe_filter = 0;
/* --jit=trace: compiled code charged to its trace, as in-VM (bpf/trace.h). */
const volatile __u8 jit_trace = 0;
/* --floor=events: every event sent, each charged to the VM with no read
 * of the target (benchmark: the event path's own cost, the reads'
 * left out). Off, the verifier drops it. */
const volatile __u8 no_attr = 0;
/* --stacks: frames per stack at most (bpf/stack.h); 0: no stacks. */
const volatile __u32 stack_depth = 0;
/* --no-loss: a process whose events find the ring over half full waits,
 * stopped, until user space has drained it (bpf/ring.h: pressure). */
const volatile __u8 no_loss = 0;
/* For tests (LMT_TEST_AWAIT=1 or 2): an allocation's return takes no
 * note of its entry (bpf/await.h), as when its thread moved to another
 * CPU, and searches the batches; 2: the batch it finds its event in is
 * sent first, so that its address goes alone, as when its event had
 * left its batch. */
const volatile __u8 await_test = 0;
/* bpf/lja.h: addresses not told at entry (LMT_NO_PREDICT=1). Tests
 * (LMT_TEST_PREDICT): every one told checked at its return, none used
 * (1); every one told wrong once its VM's allocator is trusted (2). */
const volatile __u8 no_pred = 0;
/* --floor=entry: the floor's session asks for no return at all. */
const volatile __u8 floor_entry = 0;
const volatile __u8 pred_test = 0;
/* CPUs whose per-CPU values a return may look at (bpf/await.h): the
 * possible CPUs. Set by user space before load. */
const volatile __u32 ncpus = 1;

__u64 pcgen; /* bumped by every announced prototype's free */
__u64 trgen; /* bumped by every allocation of the assembler (bpf/announce.h) */
/* Bumped, with pcgen and trgen, as tracing comes back after time without
 * it (a --duty window opening, --ab's turn from the floor or from
 * --ab-without's windows): frees it did not see may have let new GCfuncs
 * and prototypes take old ones' addresses, so what was cached or announced
 * before is checked again (struct obj_val's gen, fncache's salt). */
__u64 offgen;
__u32 multi;   /* VMs share a stream: events are numbered (struct lmt_slot) */
__u32 nobatch; /* VMs share a ud: no batching (struct lmt_slot) */
/* The sequence's last number given. A section of its own: it is written
 * by every event while numbered, and must not share a cache line with
 * the flags every event reads. */
__u64 seqn SEC(".data.seq") = 0;

/* The next number of the sequence while events are numbered, else 0. */
static __always_inline __u64 seq_next(void)
{
	return multi ? __sync_fetch_and_add(&seqn, 1) + 1 : 0;
}
/* Set by user space when tracing ends, before it detaches (which takes a
 * while): the allocator's programs do nothing from then on, so the end of
 * the trace is one instant. An allocation that entered before it and
 * returns after is in flight (bpf/await.h). */
__u32 stop;
/* --duty, set by user space as a window closes, cleared as one opens:
 * the entry programs record nothing, returns complete what entered
 * before, so a window ends at one instant however long its probes take
 * to go (user/session/duty.c). */
__u32 duty_off;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lmt_percpu);
} stats SEC(".maps");

/* Processes whose new VMs we want to hear about (bpf/newvm.h), and what
 * the stacks of each want at its lua_close (bpf/stack.h: unnamed). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lmt_proc);
} procs SEC(".maps");

/* The run. Its four pointers come first and are found again by a charge
 * called apart (bpf/attribute.h: apart_open); the scalars from si on go
 * to it in place, as they lie (struct apart): scalars only there. */
struct ctx {
	void *regs; /* the probe's pt_regs (bpf/await.h: await_mark) */
	struct lmt_stats *st;
	struct lmt_percpu *pc;
	struct lmt_slot *sl; /* the VM's slot, if it has one */
	__u32 si;            /* its index */
	__u32 tgid;
	__u32 vmid;          /* the VM's id (struct lmt_vm) */
	__u32 reads;
	__u32 direct;        /* of them, read directly (bpf/direct.h) */
	__u64 pgd;           /* the task's page tables (bpf/direct.h) */
	__u64 task;          /* the current task, once asked (cur_task) */
	__s32 vmstate;       /* for a charge called apart: charge_jit's */
	__u32 how;           /* and APART_* (bpf/attribute.h) */
};

/* The run's context: the per-CPU value; -1 when tracing is off. */
static __always_inline int ctx_open(struct ctx *c, void *regs)
{
	__u32 zero = 0;

	c->regs = regs;
	c->pc = bpf_map_lookup_elem(&stats, &zero);
	if (!c->pc || stop)
		return -1;
	c->st = &c->pc->st;
	return 0;
}

/* Tracing is back after time without it (see offgen). */
static __always_inline void tracing_back(void)
{
	__sync_fetch_and_add(&offgen, 1);
	__sync_fetch_and_add(&pcgen, 1);
	__sync_fetch_and_add(&trgen, 1);
}

/* --ab: an allocation of LMT_AB_MARK bytes switches between the floor and
 * tracing; 1 while the floor is on. Off, the verifier drops it all. */
static __always_inline int ab_skip(__u64 nsize)
{
	if (!ab)
		return 0;
	if (ab == LMT_AB_MARKED && nsize == LMT_AB_MARK) {
		ab_floor = !ab_floor;
		if (!ab_floor)
			tracing_back();
	}
	return !ab_without && ab_floor;
}

/* --ab-without: is this run in the floor's window, going without part
 * (LMT_AB_W_*)? Off, the verifier drops it. */
static __always_inline int ab_leaves(__u8 part)
{
	return (ab_without & part) && *(volatile __u8 *)&ab_floor;
}

#endif
