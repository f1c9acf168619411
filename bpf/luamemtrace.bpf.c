// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* luamemtrace's programs, in the order of an event's path.
 *
 * The allocator: alloc_enter runs at a probe site inside allocf(ud, ptr,
 * osize, nsize) where the argument registers still hold the arguments. It
 * finds the VM by ud (the programs run only in the traced process: every
 * probe is attached for its PID), charges the call by the in-VM profiler's
 * rules, and sends the event at once; alloc_return writes an
 * allocation's new address into it (bpf/await.h). As a session, the two
 * are one program, and the return runs only where the entry did not tell
 * the address itself (bpf/lja.h). Prototypes and traces are announced
 * ahead of the first event that names them.
 *
 * The process: new VMs (lua_newstate's return), dlopen (_dl_debug_state),
 * exec and lua_close. A new VM whose allocator is not probed yet, and a
 * dlopen, stop the process until user space has caught up (bpf/stop.h).
 *
 * The machinery sits in headers, one concern each: state.h, lj.h (LuaJIT's
 * ABI), read.h, cache.h, ring.h (VMs and their batches), announce.h,
 * attribute.h, await.h, newvm.h. One compilation unit.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "luamemtrace.h"
#include "state.h"
#include "lj.h"
#include "direct.h"
#include "po.h"
#include "lja.h"
#include "read.h"
#include "cache.h"
#include "stop.h"
#include "ring.h"
#include "announce.h"
#include "trace.h"
#include "attribute.h"
#include "await.h"
#include "stack.h"
#include "newvm.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";


/* -- The allocator --------------------------------------------------------- */

/* An allocator call at its entry: which VM, what is charged, then the
 * event leaves; an allocation's return completes it (bpf/await.h).
 *
 * The allocator's programs are sleepable: the kernel runs a non-sleepable
 * uprobe program inside rcu_read_lock(), and a sleepable one under the
 * RCU-tasks-trace lock it takes for every uprobe program anyway
 * (docs/costs.md). Their reads stay the non-faulting kind, so they never
 * sleep: per-CPU scratch is as safe as in a non-sleepable program. The
 * floor's programs are sleepable too, so the floor is the cheapest probe. */
/* An attributed event goes, noted for its return (bpf/await.h); the
 * run's reads counted. sess: the probe is a session, whose entry says
 * whether its return runs: not for a free, nor for an allocation whose
 * address the entry told (ev->naddr set), which then leave no note.
 * What the session's entry returns: 1, no return. */
static __always_inline int deliver(struct ctx *c, struct lmt_ev *ev, int sess)
{
	const int done = sess && (ev->kind == LMT_FREE || ev->naddr);
	__u64 mark;
	__u32 off = 0;

	if (done || ev->kind == LMT_FREE) {
		send(c, ev);
		if (!sess)
			await_none(c, AW_FREE);
	} else {
		mark = await_mark(c);
		ev->naddr = mark;
		await_note(c, mark, send_at(c, ev, &off), off, AW_NONE);
	}
	c->st->reads += c->reads;
	c->st->direct += c->direct;
	return done;
}

/* -- Links shared by processes (user/probes/alloc.c: struct shl) ------------------ */

/* While a link with no PID is on (shl_on), its probes are in every
 * process that maps the file: one not traced that hits it is noted here,
 * with its name, for user space to say (its hits run to vm_of and no
 * further: no event, no return probed). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct lmt_comm);
} foreign SEC(".maps");

/* Once per process until user space takes it: a lookup first (an update
 * of a key there locks its bucket all the same). */
static __always_inline void foreign_note(__u32 tgid)
{
	struct lmt_comm v;

	if (!shl_on || bpf_map_lookup_elem(&foreign, &tgid))
		return;
	bpf_get_current_comm(v.comm, sizeof(v.comm));
	bpf_map_update_elem(&foreign, &tgid, &v, BPF_NOEXIST);
}

/* -- Addresses told at entry (bpf/lja.h) ------------------------------- */

/* A session's cookie: what its entry told its return, the address told
 * and the VM's slot, for the return to check. */
#define PRED_CK (1ULL << 63)
#define PRED_SI(k) ((__u32)((k) >> 48) & (LMT_NSLOT - 1))
#define PRED_ADDR(k) ((k) & ((1ULL << 48) - 1))

/* An allocation's or reallocation's address at its entry, for a VM in a
 * slot whose returns have not contradicted it: into ev->naddr where the
 * VM's allocator has earned it (its returns agreed LMT_PRED_TRUST times)
 * and this one is not checked (one in LMT_PRED_EVERY, or all under
 * LMT_TEST_PREDICT=1), else into the cookie for the return to check. Not
 * with --floor=events, which reads nothing of the target. */
static __always_inline void pred_tell(struct ctx *c, __u64 ud, struct lmt_ev *ev,
				      __u64 *ck)
{
	struct lmt_slot *sl = c->sl;
	__u64 a;

	if (!sl || sl->pwrong || no_pred || no_attr || ab_leaves(LMT_AB_W_TOLD) ||
	    !(a = lja_predict(c, ud, ev->oaddr, ev->nsize)) ||
	    a >= (1ULL << 48))
		return;
	if (pred_test == 2 && sl->pok >= LMT_PRED_TRUST)
		a += LJA_MEM; /* the test of a contradiction after trust */
	if (sl->pok >= LMT_PRED_TRUST && pred_test != 1 &&
	    (++sl->pn & (LMT_PRED_EVERY - 1))) {
		ev->naddr = a;
		c->st->pred++;
		return;
	}
	*ck = PRED_CK | (__u64)c->si << 48 | a;
}

/* The return's check of what its entry told (cookie k). A contradiction
 * ends telling for the slot's VM: on trial (its allocator is not
 * lj_alloc's: nothing told was used), or after (then the addresses told
 * since its last check may be wrong: user space says so loudly,
 * user/streams/summary.c). */
static __always_inline void pred_check(struct ctx *c, __u64 k, __u64 ret)
{
	__u32 si = PRED_SI(k);
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &si);

	c->st->pchk++;
	if (!sl)
		return;
	if (PRED_ADDR(k) == ret) {
		if (sl->pok < LMT_PRED_TRUST)
			sl->pok++;
		return;
	}
	if (sl->pok >= LMT_PRED_TRUST)
		c->st->pwrong++;
	else
		c->st->pdecl++;
	sl->pwrong = 1;
}

/* --stacks: the event left in struct stk gets its stack (bpf/stack.h),
 * then goes as in enter(), which returns what this does (sess: from a
 * session). A global function: the verifier walks it once, apart from
 * the entry program's many paths. */
__noinline int stack_send(struct pt_regs *ctx, int sess)
{
	struct ctx c = { .regs = ctx };
	const struct lmt_vm *vm;
	struct stk *s;

	if (!ctx || ctx_open(&c, ctx))
		return sess;
	if (!(s = stk_get()) || !(vm = vm_of(&c, s->ud))) {
		if (!sess)
			await_none(&c, AW_NONE);
		return sess;
	}
	c.reads = s->reads;
	c.direct = s->direct;
	s->ev.stk = stack_of(&c, vm, s);
	if (!s->ev.stk)
		c.st->lost_stk++;
	return deliver(&c, &s->ev, sess);
}

/* --stacks without a session in the compatible programs: stack_send by a
 * tail call. Before 6.13 (no private stacks) a program and the functions
 * it calls have 512 bytes of stack in all, and the entry's frame (the
 * charges inlined) and stack_send's walk exceed them; a tail call leaves
 * the entry's frame behind. Both programs are not sleepable: a sleepable
 * program may not use a tail call's map (it costs the rcu_read_lock()
 * around them: docs/costs.md). */
#define STK_TAIL 2

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} stktail SEC(".maps");

/* An allocator call at its entry. ck: the session's cookie (NULL: the
 * probe is no session; its return runs whatever this returns). A
 * session's return runs where this returns 0: an allocation or
 * reallocation recorded whose address it did not tell, and, in the
 * floor's --ab windows, every one (the floor's probes). */
static __always_inline int enter(struct pt_regs *ctx, __u64 ud, __u64 ptr,
				 __u64 osize, __u64 nsize, const int kst,
				 const int stk, __u64 *ck)
{
	struct ctx cs = {}, *c = &cs;
	struct lmt_ev evs, *ev = &evs;
	struct gq qs, *q = &qs;
	const struct lmt_vm *vm;

	/* A perf link's program returns 0 (else the kernel sends a sample;
	 * an old uprobe_multi kernel removes the probe). */
	if (ab_skip(nsize))
		return ck ? nsize == 0 : 0;
	/* The compatible programs' event and q: in the scratch (struct
	 * scratch), their stack kept for the charges inlined. */
	if (!kst) {
		struct scratch *sc = scratch_get();

		if (!sc)
			return ck != NULL;
		ev = &sc->ev;
		q = &sc->q;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = nsize == 0 ? LMT_FREE : ptr == 0 ? LMT_ALLOC : LMT_REALLOC;
	ev->oaddr = ptr;
	ev->nsize = nsize;
	if (ctx_open(c, ctx))
		return ck != NULL;
	/* Not recorded: its return must not take an older note for its
	 * own. */
	if (duty_off || !(vm = vm_of(c, ud))) {
		if (ck && !duty_off)
			foreign_note(c->tgid);
		if (ck)
			return 1;
		await_none(c, nsize ? AW_NONE : AW_FREE);
		return 0;
	}
	ev->osize = ev->kind == LMT_ALLOC ? 0 : osize;
	q->got = 0;
	if (no_attr || ab_leaves(LMT_AB_W_ATTR)) {
		charge_internal(ev);
	} else {
		fn_forget(c, ptr);
		attribute(c, vm, ptr, ev, kst, q);
		obj_freed(c, vm, ev);
	}
	if (ck && ev->kind != LMT_FREE)
		pred_tell(c, ud, ev, ck);
	/* --stacks: stack_send walks the stack and sends the event. */
	if (stk && ev->src != LMT_SRC_INTERNAL) {
		struct stk *s = stk_get();

		if (s) {
			s->ev = *ev;
			s->ud = ud;
			s->reads = c->reads;
			s->direct = c->direct;
			s->have = (q->got & GQ_L) != 0;
			s->L = q->L;
			s->base = q->base;
			s->stack = q->stack;
			s->pc = (q->got & GQ_PC) ? q->spc : 0;
			if (stk == STK_TAIL) {
				bpf_tail_call(ctx, &stktail, 0);
				/* not there: the event without its stack */
				c->st->lost_stk++;
				return deliver(c, ev, 0);
			}
			return stack_send(ctx, ck != NULL) != 0;
		}
		c->st->lost_stk++;
	}
	return deliver(c, ev, ck != NULL);
}


SEC("uprobe")
int BPF_KPROBE(stack_tail)
{
	stack_send(ctx, 0);
	return 0;
}

/* The allocator's entry probe: alloc_enter where the kernel keeps gread_k
 * on its stack, alloc_enter_compat elsewhere (user space loads one); with
 * --stacks, the _stk pair. */
SEC("uprobe.s")
int BPF_KPROBE(alloc_enter, __u64 ud, __u64 ptr, __u64 osize, __u64 nsize)
{
	return enter(ctx, ud, ptr, osize, nsize, 1, 0, NULL);
}

SEC("uprobe.s")
int BPF_KPROBE(alloc_enter_compat, __u64 ud, __u64 ptr, __u64 osize,
	       __u64 nsize)
{
	return enter(ctx, ud, ptr, osize, nsize, 0, 0, NULL);
}

SEC("uprobe.s")
int BPF_KPROBE(alloc_enter_stk, __u64 ud, __u64 ptr, __u64 osize, __u64 nsize)
{
	return enter(ctx, ud, ptr, osize, nsize, 1, 1, NULL);
}

SEC("uprobe") /* not sleepable: STK_TAIL */
int BPF_KPROBE(alloc_enter_stk_compat, __u64 ud, __u64 ptr, __u64 osize,
	       __u64 nsize)
{
	return enter(ctx, ud, ptr, osize, nsize, 0, STK_TAIL, NULL);
}

/* An allocation's return: its new address into its event. */
static __always_inline void leave(struct pt_regs *ctx, __u64 ret, __u64 k)
{
	struct ctx c = { .regs = ctx };

	if ((ab && !ab_without && ab_floor) || ctx_open(&c, ctx))
		return;
	await_arrive(&c, ret);
	if (k & PRED_CK)
		pred_check(&c, k, ret);
}

SEC("uretprobe.s")
int BPF_KRETPROBE(alloc_return, __u64 ret)
{
	leave(ctx, ret, 0);
	return 0;
}

/* The allocator's probes as one session (BPF_TRACE_UPROBE_SESSION, kernel
 * 6.13+): one program at the entry and, where the entry returned 0, at the
 * return. The return of a free, and of an allocation whose address the
 * entry told (bpf/lja.h), is not probed at all: no trap. Four, as the
 * entry programs above. */
extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;

static __always_inline int session(struct pt_regs *ctx, const int kst, const int stk)
{
	__u64 *ck = bpf_session_cookie();

	if (!ck)
		return 0;
	if (bpf_session_is_return()) {
		leave(ctx, PT_REGS_RC(ctx), *ck);
		return 0;
	}
	return enter(ctx, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
		     PT_REGS_PARM4(ctx), kst, stk, ck);
}

#define ALLOC_SESSION(name, kst, stk)                      \
	SEC("uprobe.s") int name(struct pt_regs *ctx)     \
	{                                                 \
		return session(ctx, kst, stk);            \
	}

ALLOC_SESSION(alloc_session, 1, 0)
ALLOC_SESSION(alloc_session_compat, 0, 0)
ALLOC_SESSION(alloc_session_stk, 1, 1)
ALLOC_SESSION(alloc_session_stk_compat, 0, 1)

/* -- The process --------------------------------------------------------- */

/* lua_newstate returned. A VM whose allocator is probed is registered on
 * the spot, so none of its allocations is missed and nothing stops.
 * Otherwise the process stops until user space has probed the new
 * allocator; with --all, so does a process not seen before (user space
 * decides whether it is traced), unless --exe leaves it out here. Without
 * room for the record nothing stops, and the VM is counted lost. */
static __always_inline int newstate(__u64 L)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr;
	struct lmt_newvm *n;

	/* Once tracing stops, a new VM is none of our business: above all,
	 * its process is not stopped. */
	if (!L || stop)
		return 0;
	pr = bpf_map_lookup_elem(&procs, &tgid);
	if ((!pr && !all_procs) || (pr && pr->ignore))
		return 0;
	n = proc_rec(sizeof(*n), LMT_REC_NEWVM);
	if (!n)
		return 0;
	n->tgid = tgid;
	n->L = L;
	n->registered = pr && register_vm(tgid, pr, L, n);
	/* A process --exe leaves out is not stopped: its entry says so
	 * from now on (an exec ends it, on_exec; another thread's VM may
	 * have made it already), and user space lists it as BPF told,
	 * whatever its name by then. */
	if (!pr && exe_filter && exe_left_out()) {
		struct lmt_proc ig = { .ignore = 1 };

		bpf_map_update_elem(&procs, &tgid, &ig, BPF_NOEXIST);
		n->left_out = 1;
	}
	/* No room to record the stop: the VM's first allocations may pass
	 * before user space probes its allocator. Said, not silent. */
	if (!n->registered && !n->left_out && !stop_process(tgid, 0))
		count_lost_vm();
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A thread's last lua_newstate return, its L: luaL_newstate calls
 * lua_newstate in a GC64 build and returns the same VM. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);   /* pid_tgid */
	__type(value, __u64); /* L */
} lastnew SEC(".maps");

SEC("uretprobe")
int BPF_KRETPROBE(newstate_return, __u64 L)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (L)
		bpf_map_update_elem(&lastnew, &id, &L, BPF_ANY);
	return newstate(L);
}

/* luaL_newstate returned: a new VM, unless lua_newstate just returned it
 * on this thread. Without GC64 on x86-64 luaL_newstate makes its VM
 * without lua_newstate (lj_state_newstate; lua_newstate refuses). */
SEC("uretprobe")
int BPF_KRETPROBE(lnewstate_return, __u64 L)
{
	__u64 id = bpf_get_current_pid_tgid(), *last = bpf_map_lookup_elem(&lastnew, &id);

	if (last && *last == L) {
		bpf_map_delete_elem(&lastnew, &id);
		return 0;
	}
	return newstate(L);
}

/* The dynamic linker's debugger hook, _dl_debug_state, runs before and
 * after a dlopen or dlclose changes the process's objects. A C module's
 * functions are named from its file, which must be read while it is
 * mapped, however soon the process exits: stop it until user space has. */
SEC("uprobe")
int BPF_KPROBE(dl_state)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct lmt_mapped *n;

	/* Before its first VM nothing is named yet: user space reads every
	 * object when it registers that VM. */
	if (stop || !pr || !pr->has_layout || pr->ignore)
		return 0;
	n = proc_rec(sizeof(*n), LMT_REC_MAPPED);
	if (!n)
		return 0;
	n->tgid = tgid;
	if (!stop_process(tgid, 0))
		count_lost_vm(); /* a module's names may come too late */
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* libc's exit() in a traced process with a VM: a return from main,
 * os.exit. Its last events are named from its memory (a C function's Lua
 * name from its tables, a Lua frame's from its caller's bytecode), which
 * is gone a moment later; user space reads them a poll later: stop it
 * until user space has read what it sent (its slots too: user/capture/
 * ring.c, slots_exiting). Not _exit, not a fatal signal. Once a process. */
SEC("uprobe")
int BPF_KPROBE(exit_enter)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct lmt_exiting *n;

	if (stop || !pr || !pr->has_layout || pr->ignore || pr->exiting)
		return 0;
	pr->exiting = 1;
	n = bpf_ringbuf_reserve(&rb, sizeof(*n), 0);
	if (!n)
		return 0; /* names not read then are counted (fn_unread) */
	__builtin_memset(n, 0, sizeof(*n));
	n->rec = LMT_REC_EXITING;
	n->tgid = tgid;
	if (!stop_process(tgid, 0)) {
		bpf_ringbuf_discard(n, 0);
		return 0;
	}
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A traced process executed a new program. Its probes sit on files, by
 * PID: they would go on firing in the new image. Its tracing ends at this
 * instant: it leaves procs, so nothing of the new image is registered,
 * and user space ends its streams. -- COMMAND's execs before its first VM
 * are its start (a script's #! line, /usr/bin/env, a wrapper that execs
 * luajit). With --all, a new image that makes a VM is a new process. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct lmt_exec *n;

	if (!pr || stop)
		return 0;
	if (pr->spawn && !pr->has_layout)
		return 0;
	bpf_map_delete_elem(&procs, &tgid);
	n = proc_rec(sizeof(*n), LMT_REC_EXEC);
	if (!n)
		return 0; /* counted: user space finds the end at the exit */
	n->tgid = tgid;
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A traced process forked. Followed with -o DIR only (otherwise only
 * counted): the child has the parent's VMs at the same addresses,
 * registered for it here, before it runs, and it is stopped until user
 * space has probed it (its probes are by PID too). A child sharing its
 * parent's memory (vfork, posix_spawn) runs nothing of the VM before it
 * executes something else: not followed. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	struct forked f = { .ptgid = parent->tgid, .tgid = child->tgid };
	struct lmt_proc *pr;
	struct lmt_fork *n;

	if (stop || f.ptgid == f.tgid || child->mm == parent->mm)
		return 0;
	pr = bpf_map_lookup_elem(&procs, &f.ptgid);
	if (!pr || !pr->has_layout || pr->ignore)
		return 0;
	n = proc_rec(sizeof(*n), LMT_REC_FORK);
	if (!n)
		return 0;
	n->ptgid = f.ptgid;
	n->tgid = f.tgid;
	/* fork_stop NONE: user space counts the child not followed */
	if (follow && fork_stop != LMT_FORK_STOP_NONE) {
		if (!fork_copy(&f, pr))
			n->stopped = stop_task(child, f.tgid);
		if (!n->stopped)
			count_lost_vm();
	}
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A new task's first code (kernels before 6.13: see stop_born). Loaded
 * only there, and only where children are followed. */
SEC("fexit/schedule_tail")
int BPF_PROG(child_start, struct task_struct *prev)
{
	stop_born();
	return 0;
}

/* A SIGCONT to a process we hold stopped, not ours (we mark a stop
 * released before we send it): user space says the process may have run
 * unseen (user/capture/ring.c, check_held). Signals are rare: this costs
 * nothing. */
SEC("tp_btf/signal_generate")
int BPF_PROG(on_signal, int sig, struct kernel_siginfo *info,
	     struct task_struct *task)
{
	if (sig == SIGCONT)
		stops_continued(task->tgid);
	return 0;
}

/* lua_close(L): the VM tears itself down. Like the in-VM profiler, which
 * lua_close stops, we stop there, so that what is live at the end of the
 * program is what the stream shows as live. */
SEC("uprobe")
int BPF_KPROBE(close_enter, __u64 L)
{
	struct main_key mk = { .tgid = bpf_get_current_pid_tgid() >> 32, .L = L };
	struct lmt_vm_key *vk = bpf_map_lookup_elem(&mains, &mk);
	struct lmt_vm_key k;
	struct lmt_vm *vm;
	struct lmt_close *n;
	struct lmt_proc *pr;
	__u32 id;

	if (!vk)
		return 0;
	k = *vk;
	vm = bpf_map_lookup_elem(&vms, &k);
	if (!vm)
		return 0;
	id = vm->id;
	{
		/* Its batch goes first: the VM's last events precede CLOSE. */
		struct ctx c = { .tgid = mk.tgid };
		struct lmt_slot *sl = slot_find(k.tgid, k.ud, &c.si);
		__u32 zero = 0;

		c.pc = bpf_map_lookup_elem(&stats, &zero);
		if (c.pc && sl && sl->live) {
			c.st = &c.pc->st;
			flush_slot(&c, sl);
			sl->live = 0;
		}
	}
	bpf_map_delete_elem(&vms, &k);
	bpf_map_delete_elem(&mains, &mk);
	n = bpf_ringbuf_reserve(&rb, sizeof(*n), 0);
	if (!n)
		return 0;
	__builtin_memset(n, 0, sizeof(*n));
	n->rec = LMT_REC_CLOSE;
	n->tgid = k.tgid;
	n->vm = id;
	/* With --stacks, stacks first seen since the last such stop: their
	 * frames' names are read from the callers' bytecode, which the
	 * process frees here and takes with it when it exits (a script's
	 * last stacks, read after it ended): it waits until they are read. */
	pr = stack_depth ? bpf_map_lookup_elem(&procs, &mk.tgid) : 0;
	if (pr && pr->unnamed) {
		pr->unnamed = 0;
		n->stopped = stop_process(mk.tgid, 0);
	}
	bpf_ringbuf_submit(n, n->stopped ? BPF_RB_FORCE_WAKEUP : 0);
	return 0;
}

/* The benchmark floor: the same probe points with programs that do
 * nothing, to measure what the probes themselves cost. Sleepable, as the
 * allocator's programs are (see alloc_enter): the cheapest kind here. */
SEC("uprobe.s")
int floor_enter(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe.s")
int floor_return(struct pt_regs *ctx)
{
	return 0;
}

/* The floor as a session: the return of every allocation runs, as it
 * would without addresses told at entry; a free's does not (--floor=entry:
 * none does). */
SEC("uprobe.s")
int floor_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return())
		return 0;
	return floor_entry || PT_REGS_PARM4(ctx) == 0;
}

/* -- Start ------------------------------------------------------------------ */

/* find_po: the direct map's base for bpf/direct.h, run once by user space
 * (BPF_PROG_TEST_RUN) on its own page tables (bpf/po.h's search), then
 * checked: a direct read of a value user space chose must give it. */
SEC("syscall")
int find_po(struct lmt_po *a)
{
	struct lmt_po l = { .gib = a->gib, .probe = a->probe, .want = a->want };
	struct ctx c = {};
	__u64 got = 0;
	int r = 0;

	dr_po = 0;
	c.pc = bpf_map_lookup_elem(&stats, &(__u32){ 0 });
	l.pgd = dr_pgd(&c);
	/* 4-level tables put the direct map above 0xffff800000000000 */
	if (l.pgd < 0xffff800000000000ULL || l.gib > (1U << 23))
		r = 1;
	else if (!(l.po = po_find(l.pgd, l.gib, dr_mask, dr_top, l.probe, l.want)))
		r = 2;
	if (!r) {
		dr_po = l.po;
		if (dr_read(&c, &got, 8, l.probe) || got != l.want) {
			dr_po = 0;
			r = 3;
		}
	}
	/* The context's fields by constant offsets: it is written back. */
	a->pgd = l.pgd;
	a->po = l.po;
	return r;
}
