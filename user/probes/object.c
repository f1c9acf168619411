/* The BPF object (probes/object.h): configured from the options, the
 * kernel's features (probes/kfeat.h) and the knobs, loaded with the
 * kernel-stack reader or the compatible one; what it keeps of a process
 * purged when the process ends. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "luamemtrace.h"
#include "luamemtrace.skel.h"
#include "probes/probes.h"
#include "util/log.h"
#include "probes/object.h"
#include "probes/physmem.h"
#include "util/knobs.h"

/* -- The BPF object ------------------------------------------------------ */

/* -- Direct reads (bpf/direct.h) ----------------------------------------- */

/* Before load: a table entry's frame bits, and where RAM ends. */
static void direct_config(struct probes *t)
{
	const unsigned bits = physmem_bits();
	const uint64_t top = physmem_top();

	if (bits)
		t->skel->rodata->dr_mask = ((1ULL << bits) - 1) & ~4095ULL;
	/* Unknown: nothing is RAM, no read is direct (direct_start). */
	t->skel->rodata->dr_top = top;
	t->skel->rodata->dr_fresh = knobs.walk_per_run;
}

/* After load: find_po finds the direct map and checks it by reading a
 * word of ours. Off (every read through the helper) where it cannot,
 * or with LMT_NO_DIRECT=1 (tests, benchmarks). */
static void direct_start(struct probes *t)
{
	const unsigned bits = physmem_bits();
	volatile uint64_t word = 0x6c6d7464ULL << 32 | (uint64_t)getpid() << 1 | 1;
	struct lmt_po a = { .probe = (uint64_t)(uintptr_t)&word };
	LIBBPF_OPTS(bpf_test_run_opts, ro, .ctx_in = &a, .ctx_size_in = sizeof(a));
	const char *why = NULL;

	t->direct_po = 0;
	a.want = word;
	if (knobs.no_direct)
		why = "LMT_NO_DIRECT=1";
	else if (!t->kf.rdonly_cast)
		why = "the kernel has no bpf_rdonly_cast: 6.2";
	else if (!bits)
		why = "5-level page tables, or no address sizes in /proc/cpuinfo";
	else if (!t->skel->rodata->dr_top)
		why = "no System RAM in /proc/iomem";
	else {
		/* The PGD's frame is in RAM: its GiB is below RAM's end. */
		a.gib = (t->skel->rodata->dr_top >> 30) + 1;
		if (bpf_prog_test_run_opts(bpf_program__fd(t->skel->progs.find_po), &ro))
			why = strerror(errno);
		else if (ro.retval)
			why = ro.retval == 2 ? "direct map not found" :
			      ro.retval == 3 ? "check read failed" : "no page tables";
		else
			t->direct_po = a.po;
	}
	if (t->o.verbose) {
		if (why)
			fprintf(stderr, "luamemtrace: reads through the helper (%s)\n", why);
		else
			fprintf(stderr, "luamemtrace: reads through the page tables "
				"(direct map at %#" PRIx64 ")\n", t->direct_po);
	}
}

/* -- --all --exe ------------------------------------------------------------ */

/* Can BPF leave out the processes --exe does not name (bpf/newvm.h,
 * exe_left_out)? Only names it can hold whole. */
static int exe_filter(const struct probe_opts *o)
{
	if (!o->all || !o->nexes || o->nexes > LMT_EXES_MAX)
		return 0;
	for (unsigned i = 0; i < o->nexes; i++)
		if (strlen(o->exes[i]) >= LMT_EXE_LEN)
			return 0;
	return 1;
}

/* The names into the exes map, after load: 0, or -1 said. */
static int exes_fill(struct probes *t)
{
	for (unsigned i = 0; t->skel->rodata->exe_filter && i < t->o.nexes; i++) {
		struct lmt_exe k = { 0 };
		uint8_t one = 1;

		memcpy(k.name, t->o.exes[i], strlen(t->o.exes[i]));
		if (bpf_map__update_elem(t->skel->maps.exes, &k, sizeof(k), &one,
					 sizeof(one), BPF_ANY)) {
			err1("cannot set --exe in BPF: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The entry program of kst's kind (kernel-stack reads or not) that
 * t->sess and --stacks ask for, the only one of the eight loaded; the
 * tail call and the floor's session program where they are used. */
static void entry_pick(struct probes *t, int kst)
{
	const struct probe_opts *o = &t->o;
	/* One entry program of eight: kernel-stack reads or not;
	 * stacks or not; a session or an entry probe. */
	struct bpf_program *e[4][2] = {
		{ t->skel->progs.alloc_enter_compat, t->skel->progs.alloc_enter },
		{ t->skel->progs.alloc_enter_stk_compat,
		  t->skel->progs.alloc_enter_stk },
		{ t->skel->progs.alloc_session_compat, t->skel->progs.alloc_session },
		{ t->skel->progs.alloc_session_stk_compat,
		  t->skel->progs.alloc_session_stk },
	};

	t->enter = e[2 * !!t->sess + !!o->stacks][!!kst];
	for (int i = 0; i < 8; i++)
		if (e[i / 2][i % 2] != t->enter)
			bpf_program__set_autoload(e[i / 2][i % 2], false);
	/* alloc_enter_stk_compat sends the stack by a tail call */
	bpf_program__set_autoload(t->skel->progs.stack_tail,
				  t->enter == t->skel->progs.alloc_enter_stk_compat);
	if (t->sess)
		bpf_program__set_expected_attach_type(t->enter,
			(enum bpf_attach_type)LMT_TRACE_UPROBE_SESSION);
	if (t->sess && o->floor)
		bpf_program__set_expected_attach_type(t->skel->progs.floor_session,
			(enum bpf_attach_type)LMT_TRACE_UPROBE_SESSION);
	else
		bpf_program__set_autoload(t->skel->progs.floor_session, false);
}

/* The object's read-only settings from the options and the kernel's
 * features, before load. */
static void rodata_set(struct probes *t)
{
	const struct probe_opts *o = &t->o;

	/* What the kernel lacks is switched off before load (probes/kfeat.h). */
	t->skel->rodata->kf_rdonly_cast = (uint8_t)t->kf.rdonly_cast;
	t->skel->rodata->fork_stop = t->kf.signal_task ? LMT_FORK_STOP_TASK :
				     t->kf.sched_tail ? LMT_FORK_STOP_SELF : LMT_FORK_STOP_NONE;
	bpf_program__set_autoload(t->skel->progs.child_start,
				  t->skel->rodata->fork_stop == LMT_FORK_STOP_SELF && t->o.follow);
	if (o->rb_bytes)
		bpf_map__set_max_entries(t->skel->maps.rb, (uint32_t)o->rb_bytes);
	{
		/* Each CPU counts its own bytes: wake at 1/16 of the ring in all. */
		const long ncpu = libbpf_num_possible_cpus();
		uint64_t wb = bpf_map__max_entries(t->skel->maps.rb) / 16 /
			      (uint64_t)(ncpu > 0 ? ncpu : 1);
		t->skel->rodata->wakeup_bytes = wb < 4096 ? 4096 : wb;
	}
	t->skel->rodata->ab = o->ab_ms ? LMT_AB_TIMED : o->ab ? LMT_AB_MARKED : 0;
	t->skel->rodata->ab_without = (uint8_t)o->ab_without;
	t->skel->rodata->one_stream = !t->o.follow;
	t->skel->rodata->follow = (uint8_t)t->o.follow;
	t->skel->rodata->all_procs = (uint8_t)o->all;
	t->skel->rodata->exe_filter = (uint8_t)exe_filter(o);
	t->skel->rodata->jit_trace = (uint8_t)o->jit_trace;
	t->skel->rodata->stack_depth = o->stacks;
	t->skel->rodata->no_loss = (uint8_t)o->no_loss;
	t->skel->rodata->no_attr = (uint8_t)o->floor_events;
	{
		const int ncpu = libbpf_num_possible_cpus();

		t->skel->rodata->ncpus = ncpu > 0 ? (uint32_t)ncpu : 1;
	}
	direct_config(t);
	t->skel->rodata->await_test = knobs.test_await;
	t->skel->rodata->floor_entry = (uint8_t)o->floor_entry;
	t->skel->rodata->no_pred = knobs.no_predict;
	t->skel->rodata->pred_test = knobs.test_predict;
}

/* After load: the direct reads started, the stack program put where the
 * tail call finds it, --exe's names set: 0, or -1 said. */
static int loaded(struct probes *t, int kst)
{
	const struct probe_opts *o = &t->o;

	if (t->sess && o->verbose)
		err1("allocator probes as a session (one uprobe_multi link): returns "
		     "where the entry asks%s",
		     knobs.no_predict ? " (addresses not told at entry)" : "");
	if (o->verbose)
		fprintf(stderr, "luamemtrace: reads land on the %s\n",
			kst ? "kernel stack" : "per-CPU scratch");
	direct_start(t);
	if (bpf_program__autoload(t->skel->progs.stack_tail)) {
		uint32_t zero = 0;
		int fd = bpf_program__fd(t->skel->progs.stack_tail);

		if (bpf_map__update_elem(t->skel->maps.stktail, &zero, sizeof(zero),
					 &fd, sizeof(fd), BPF_ANY)) {
			err1("cannot set the stack program: %s", strerror(errno));
			return -1;
		}
	}
	return exes_fill(t);
}

/* load_kind's answer when the kernel refused a session's or uprobe_multi
 * links' programs: the kind before may load. */
#define LOAD_REFUSED 1

/* Opens and loads the object once, with the kind of allocator probes
 * the kernel and the refusals so far allow: 0, -1 (said, but for a kst
 * object: the caller tries the other), or LOAD_REFUSED. */
static int load_kind(struct probes *t, int kst)
{
	const struct probe_opts *o = &t->o;

	luamemtrace_bpf__destroy(t->skel);
	t->skel = luamemtrace_bpf__open();
	if (!t->skel) {
		err1("cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	/* The allocator's probes as one session link where the kernel has
	 * them: a return trap only where its entry asks. */
	t->no_shared = knobs.no_shared;
	t->sess = !t->sess_refused && t->kf.session;
	entry_pick(t, kst);
	rodata_set(t);
	/* --duty closes its windows faster with uprobe_multi links, whose
	 * programs are loaded for them. */
	t->multi = o->duty && !o->floor && !t->sess && !t->multi_refused &&
		   t->kf.uprobe_multi;
	if (t->multi) {
		if (o->verbose)
			err1("--duty: allocator probes as uprobe_multi links");
		bpf_program__set_expected_attach_type(t->enter,
			(enum bpf_attach_type)LMT_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(t->skel->progs.alloc_return,
			(enum bpf_attach_type)LMT_TRACE_UPROBE_MULTI);
	}
	/* Children are followed only into streams of their own (with -o
	 * FILE they are counted). */
	if (!luamemtrace_bpf__load(t->skel))
		return loaded(t, kst);
	if (t->sess || t->multi) {
		if (o->verbose)
			err1("the programs did not load for %s (%s); the kind before",
			     t->sess ? "a session" : "uprobe_multi links", strerror(errno));
		return LOAD_REFUSED;
	}
	if (kst) {
		if (o->verbose)
			fprintf(stderr, "luamemtrace: the kernel-stack reader did not "
				"load (%s); using the compatible one\n", strerror(errno));
		return -1;
	}
	if (o->stacks && !kst)
		/* 6.1's verifier counts the stack walk's frames (stack_tail,
		 * stack_send, its loop's callback, a read) over 512 bytes; 6.12's
		 * takes them (tests/kernels) */
		err1("--stacks: this kernel's verifier refuses the stack walk's "
		     "programs (%s; kernel %s: 6.12 takes them); trace without --stacks",
		     strerror(errno), t->kf.release);
	else
		err1("cannot load the BPF programs: %s (LMT_LIBBPF_DEBUG=1 shows "
		     "the verifier log)", strerror(errno));
	return -1;
}

/* Open and load the BPF object with one of the two entry programs: kst,
 * the one whose reads land on the kernel stack (tried first where the
 * kernel should take it), or the compatible one.
 * The kernel may take a session's or uprobe_multi links' programs but not
 * these: then the kind before is tried (without a session, uprobe_multi
 * links for --duty or perf links; without uprobe_multi links, perf
 * links), so three tries at most, each refusal ending one kind. A kind
 * is refused for good only if a later one loads: else the compatible
 * reader tries it again. */
int open_load(struct probes *t, int kst)
{
	int *refused[2];
	unsigned n = 0;
	int r;

	while ((r = load_kind(t, kst)) == LOAD_REFUSED && n < 2) {
		refused[n] = t->sess ? &t->sess_refused : &t->multi_refused;
		*refused[n++] = 1;
	}
	if (r)
		while (n)
			*refused[--n] = 0;
	return r ? -1 : 0;
}

/* -- Processes ------------------------------------------------------------ */

/* Removes every entry of tgid from a map whose keys start with it. */
static void purge(struct bpf_map *m, uint32_t tgid)
{
	const size_t ks = bpf_map__key_size(m);
	uint8_t k[64], next[64];
	int fd = bpf_map__fd(m), first = 1;

	if (ks > sizeof(k) || ks < 4)
		return;
	while (!bpf_map_get_next_key(fd, first ? NULL : k, next)) {
		uint32_t tg;

		memcpy(&tg, next, 4);
		if (tg == tgid && !bpf_map_delete_elem(fd, next))
			continue; /* next's successor: ask again from k */
		memcpy(k, next, ks);
		first = 0;
	}
}

void forget_proc(struct probes *t, uint32_t tgid)
{
	struct luamemtrace_bpf *s = t->skel;

	bpf_map__delete_elem(s->maps.procs, &tgid, sizeof(tgid), 0);
	purge(s->maps.vms, tgid);
	purge(s->maps.mains, tgid);
	purge(s->maps.allocfs, tgid);
	purge(s->maps.objs, tgid);
	purge(s->maps.traces, tgid);
}

void bpf_ignore(struct probes *t, uint32_t tgid)
{
	struct lmt_proc pr = { .ignore = 1 };

	bpf_map__update_elem(t->skel->maps.procs, &tgid, sizeof(tgid), &pr, sizeof(pr),
			     BPF_ANY);
}
