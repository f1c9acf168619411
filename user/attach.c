/* Attach: load the BPF object, probe allocators and the hooks that tell
 * us a process changed (lua_newstate, lua_close, dlopen), register VMs.
 *
 * Every probe is a perf-event link owned by this process, so the kernel
 * removes them when we exit or die; nothing is pinned. */
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
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <dirent.h>
#include <sys/syscall.h>

#include "trace.h"

#include "elfsym.h"
#include "proc.h"
#include "symbols.h"
#include "tfile.h"
#include "traces.h"
#include "callstacks.h"

/* -- Links --------------------------------------------------------------- */

int link_add(struct links *ls, struct bpf_link *l)
{
	if (!l)
		return -errno ? -errno : -EINVAL;
	if (ls->n == ls->cap) {
		unsigned cap = ls->cap ? 2 * ls->cap : 16;
		struct bpf_link **nv = realloc(ls->v, cap * sizeof(*nv));
		if (!nv) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
		ls->v = nv;
		ls->cap = cap;
	}
	ls->v[ls->n++] = l;
	return 0;
}

/* Newest first: an allocation's entry probe goes before its return probe. */
void links_free(struct links *ls)
{
	while (ls->n)
		bpf_link__destroy(ls->v[--ls->n]);
	free(ls->v);
	while (ls->nfd)
		close(ls->fds[--ls->nfd]);
	free(ls->fds);
	memset(ls, 0, sizeof(*ls));
}

void links_hold(struct links *ls, struct tfile *f)
{
	int *nv = realloc(ls->fds, (ls->nfd + 1) * sizeof(*nv));

	if (!nv)
		return; /* closed by its owner: the probes stay */
	ls->fds = nv;
	ls->fds[ls->nfd++] = f->fd;
	f->fd = -1;
}

/* -- Links of ended processes ---------------------------------------------- */

/* Removing a uprobe waits for the kernel's RCU grace periods: tens of
 * milliseconds each, hundreds for a process's set, during which the ring
 * would fill. The probes of a process that has ended fire no more, so they
 * go on a thread of their own (links_join waits for it). */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct links q;
	pthread_t th;
	int started, busy, quit;
} reaper = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *reap_links(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&reaper.mu);
	for (;;) {
		while (!reaper.q.n && !reaper.quit)
			pthread_cond_wait(&reaper.cv, &reaper.mu);
		if (!reaper.q.n)
			break;
		struct bpf_link *l = reaper.q.v[--reaper.q.n];
		reaper.busy = 1;
		pthread_mutex_unlock(&reaper.mu);
		bpf_link__destroy(l);
		pthread_mutex_lock(&reaper.mu);
		reaper.busy = 0;
		pthread_cond_broadcast(&reaper.cv);
	}
	pthread_mutex_unlock(&reaper.mu);
	return NULL;
}

void links_free_later(struct links *ls)
{
	pthread_mutex_lock(&reaper.mu);
	if (!reaper.started)
		reaper.started = !pthread_create(&reaper.th, NULL, reap_links, NULL);
	/* Oldest first here: the queue is taken from its end. */
	while (reaper.started && ls->n) {
		struct bpf_link *l = ls->v[0];
		memmove(ls->v, ls->v + 1, --ls->n * sizeof(*ls->v));
		if (link_add(&reaper.q, l))
			break; /* link_add destroyed it */
	}
	pthread_cond_signal(&reaper.cv);
	pthread_mutex_unlock(&reaper.mu);
	links_free(ls); /* what could not be queued */
}

void links_join(void)
{
	pthread_mutex_lock(&reaper.mu);
	if (!reaper.started) {
		pthread_mutex_unlock(&reaper.mu);
		return;
	}
	reaper.quit = 1;
	pthread_cond_broadcast(&reaper.cv);
	pthread_mutex_unlock(&reaper.mu);
	pthread_join(reaper.th, NULL);
	reaper.started = 0;
	reaper.quit = 0;
	free(reaper.q.v);
	memset(&reaper.q, 0, sizeof(reaper.q));
}

/* -- Knobs for tests and benchmarks ---------------------------------------- */

/* Environment variable n's level: 1 to max for "1" to max (a digit),
 * else 0. A switch is on at "1" alone (max '1'). */
static uint8_t env_level(const char *n, char max)
{
	const char *v = getenv(n);

	return v && v[0] >= '1' && v[0] <= max && !v[1] ? (uint8_t)(v[0] - '0') : 0;
}

/* -- The BPF object ------------------------------------------------------ */

/* -- Direct reads (bpf/direct.h) ----------------------------------------- */

/* The CPU's physical address bits, from /proc/cpuinfo; 0 where the
 * direct reads do not apply (5-level page tables: la57). */
static unsigned phys_bits(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	unsigned bits = 0;
	int la57 = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags", 5) && strstr(line, " la57"))
			la57 = 1;
		if (!bits && !strncmp(line, "address sizes", 13)) {
			const char *c = strchr(line, ':');

			if (c)
				bits = (unsigned)strtoul(c + 1, NULL, 10);
		}
	}
	fclose(f);
	return la57 || bits < 32 || bits > 52 ? 0 : bits;
}

/* The end of RAM's physical addresses: the highest end of a top-level
 * "System RAM" range of /proc/iomem (root sees the addresses); 0 if
 * unknown. */
static uint64_t ram_top(void)
{
	FILE *f = fopen("/proc/iomem", "r");
	char line[256];
	uint64_t top = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (line[0] != ' ' && strstr(line, ": System RAM") &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2 && hi + 1 > top)
			top = hi + 1;
	}
	fclose(f);
	return top;
}

/* Before load: a table entry's frame bits, and where RAM ends. */
static void direct_config(struct tr *t)
{
	const unsigned bits = phys_bits();
	const uint64_t top = ram_top();

	if (bits)
		t->skel->rodata->dr_mask = ((1ULL << bits) - 1) & ~4095ULL;
	/* Unknown: nothing is RAM, no read is direct (direct_start). */
	t->skel->rodata->dr_top = top;
	t->skel->rodata->dr_fresh = env_level("LMT_WALK_PER_RUN", '1');
}

/* After load: find_po finds the direct map and checks it by reading a
 * word of ours. Off (every read through the helper) where it cannot,
 * or with LMT_NO_DIRECT=1 (tests, benchmarks). */
static void direct_start(struct tr *t)
{
	const unsigned bits = phys_bits();
	volatile uint64_t word = 0x6c6d7464ULL << 32 | (uint64_t)getpid() << 1 | 1;
	struct lmt_po a = { .probe = (uint64_t)(uintptr_t)&word };
	LIBBPF_OPTS(bpf_test_run_opts, ro, .ctx_in = &a, .ctx_size_in = sizeof(a));
	const char *why = NULL;

	t->direct_po = 0;
	a.want = word;
	if (env_level("LMT_NO_DIRECT", '1'))
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
	if (t->o->verbose) {
		if (why)
			fprintf(stderr, "luamemtrace: reads through the helper (%s)\n", why);
		else
			fprintf(stderr, "luamemtrace: reads through the page tables "
				"(direct map at %#" PRIx64 ")\n", t->direct_po);
	}
}

/* -- uprobe_multi links (--duty) ---------------------------------------- */

/* One link covers a process's offsets of a program, and removing it waits
 * for one grace period outside the perf events' global mutex: ~10x faster
 * than perf links (docs/costs.md), which is what --duty pays at every
 * window's close. The attribute's layout: kfeat.h. */

/* A link of prog at path's offs in pid: its fd, or -errno. ret: the
 * return probes; type: LMT_TRACE_UPROBE_MULTI or _SESSION. */
static int um_link(int prog_fd, const char *path, const uint64_t *offs, unsigned n, int ret,
		   pid_t pid, uint32_t type)
{
	struct lmt_um_attr l = { .prog_fd = (uint32_t)prog_fd,
				 .attach_type = type,
				 .path = (uint64_t)(uintptr_t)path,
				 .offsets = (uint64_t)(uintptr_t)offs,
				 .cnt = n,
				 .um_flags = ret ? LMT_F_UPROBE_MULTI_RETURN : 0,
				 .pid = (uint32_t)pid };
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	memcpy(&a, &l, sizeof(l));
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

static void mfd_close(int *mfd)
{
	if (*mfd)
		close(*mfd - 1);
	*mfd = 0;
}

/* -- --all --exe ------------------------------------------------------------ */

/* Can BPF leave out the processes --exe does not name (bpf/newvm.h,
 * exe_left_out)? Only names it can hold whole. */
static int exe_filter(const struct topts *o)
{
	if (!o->all || !o->nexes || o->nexes > LMT_EXES_MAX)
		return 0;
	for (unsigned i = 0; i < o->nexes; i++)
		if (strlen(o->exes[i]) >= LMT_EXE_LEN)
			return 0;
	return 1;
}

/* The names into the exes map, after load: 0, or -1 said. */
static int exes_fill(struct tr *t)
{
	for (unsigned i = 0; t->skel->rodata->exe_filter && i < t->o->nexes; i++) {
		struct lmt_exe k = { 0 };
		uint8_t one = 1;

		memcpy(k.name, t->o->exes[i], strlen(t->o->exes[i]));
		if (bpf_map__update_elem(t->skel->maps.exes, &k, sizeof(k), &one,
					 sizeof(one), BPF_ANY)) {
			err1("cannot set --exe in BPF: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Open and load the BPF object with one of the two entry programs: kst,
 * the one whose reads land on the kernel stack (tried first where the
 * kernel should take it), or the compatible one. */
int open_load(struct tr *t, int kst)
{
	const struct topts *o = t->o;

	luamemtrace_bpf__destroy(t->skel);
	t->skel = luamemtrace_bpf__open();
	if (!t->skel) {
		err1("cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	/* The allocator's probes as one session link where the kernel has
	 * them: a return trap only where its entry asks. */
	t->no_shared = env_level("LMT_NO_SHARED", '1');
	t->sess = !t->sess_refused && t->kf.session;
	{
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
	/* What the kernel lacks is switched off before load (kfeat.h). */
	t->skel->rodata->kf_rdonly_cast = (uint8_t)t->kf.rdonly_cast;
	t->skel->rodata->fork_stop = t->kf.signal_task ? LMT_FORK_STOP_TASK :
				     t->kf.sched_tail ? LMT_FORK_STOP_SELF : LMT_FORK_STOP_NONE;
	bpf_program__set_autoload(t->skel->progs.child_start,
				  t->skel->rodata->fork_stop == LMT_FORK_STOP_SELF && t->dir);
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
	t->skel->rodata->one_stream = !t->dir;
	t->skel->rodata->follow = (uint8_t)t->dir;
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
	t->skel->rodata->await_test = env_level("LMT_TEST_AWAIT", '2');
	t->skel->rodata->floor_entry = (uint8_t)o->floor_entry;
	t->skel->rodata->no_pred = env_level("LMT_NO_PREDICT", '1');
	t->skel->rodata->pred_test = env_level("LMT_TEST_PREDICT", '2');
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
	if (!luamemtrace_bpf__load(t->skel)) {
		if (t->sess && o->verbose)
			err1("allocator probes as a session (one uprobe_multi link): returns "
			     "where the entry asks%s",
			     env_level("LMT_NO_PREDICT", '1') ? " (addresses not told at entry)" : "");
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
	if (t->sess || t->multi) {
		/* The kernel takes such programs but not these: without a
		 * session, two links (--duty) or perf links; without
		 * uprobe_multi links, perf links. Refused for good only if
		 * the other kind loads: else the compatible reader tries
		 * this kind again. */
		int *refused = t->sess ? &t->sess_refused : &t->multi_refused;

		if (o->verbose)
			err1("the programs did not load for %s (%s); the kind before",
			     t->sess ? "a session" : "uprobe_multi links", strerror(errno));
		*refused = 1;
		if (open_load(t, kst)) {
			*refused = 0;
			return -1;
		}
		return 0;
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

/* -- Allocators and VMs -------------------------------------------------- */

static int attach_at(struct tr *t, struct allocf *a, struct tproc *p, uint64_t off, int ret)
{
	struct bpf_program *pe = t->o->floor ? t->skel->progs.floor_enter :
					       t->enter;
	struct bpf_program *pr = t->o->floor ? t->skel->progs.floor_return :
					       t->skel->progs.alloc_return;
	/* The return probe first, and gone last (a->rets): no allocation
	 * is seen entering without its return being caught, or it would
	 * count as missed. */
	int r = ret && !t->o->floor_entry ? link_add(&a->rets, bpf_program__attach_uprobe(pr, true,
				p->pid, a->f.path, (size_t)off)) : 0;

	if (r)
		return r;
	return link_add(&a->links, bpf_program__attach_uprobe(pe, false, p->pid,
							      a->f.path, (size_t)off));
}

/* Allocator a probed on its two paths (probe.c's split plan). */
static int split_of(const struct tr *t, const struct allocf *a)
{
	return a->plan.split && t->o->probes == PROBES_AUTO;
}

/* Allocator a's probes as uprobe_multi links: one session, the entry
 * program at both sites asking for the return where it needs it (the
 * floor's: every allocation's); else two links, the return first, as
 * attach_at's. 0 or -errno. */
/* The allocator's entry program on uprobe_multi links: the session's
 * floor under --floor. */
static struct bpf_program *um_enter(const struct tr *t)
{
	return t->sess && t->o->floor ? t->skel->progs.floor_session : t->enter;
}

static int allocf_on_um(struct tr *t, struct tproc *p, struct allocf *a)
{
	const int split = split_of(t, a);
	const uint64_t ent[2] = { split ? a->plan.alloc_site.off : a->plan.all.off,
				  a->plan.free_site.off };
	struct bpf_program *pe = um_enter(t);
	int fd;

	if (!t->sess) {
		fd = um_link(bpf_program__fd(t->skel->progs.alloc_return), a->f.path, ent, 1, 1,
			     p->pid, LMT_TRACE_UPROBE_MULTI);
		if (fd < 0)
			return fd;
		a->mfd[1] = fd + 1;
	}
	fd = um_link(bpf_program__fd(pe), a->f.path, ent, split ? 2 : 1, 0, p->pid,
		     t->sess ? LMT_TRACE_UPROBE_SESSION : LMT_TRACE_UPROBE_MULTI);
	if (fd < 0)
		return fd;
	a->mfd[0] = fd + 1;
	return 0;
}

/* -- Links shared by processes ------------------------------------------- */

/* The kernel runs every link's program on a probe whatever process hit
 * it, and a session link of another process answers "probe the return"
 * there (its PID filter runs before the program): traced processes that
 * share an allocator's file (nginx's workers) each had every return
 * trapped for the others' sakes (docs/costs.md). One link with no PID
 * for them runs once and asks for a return only where the entry could not
 * tell the address; it puts the probe in every process that maps the
 * file, so it is made only where those are all traced, and a process that
 * maps the file since and hits it is said (foreign_check). */

/* Allocator a's file (as maps name it: the scan below compares maps with
 * maps) and the offsets of its session link: 0, or -1. */
static int shl_key(const struct tr *t, const struct allocf *a, struct shl *k)
{
	if (!a->ino)
		return -1;
	memset(k, 0, sizeof(*k));
	k->dev = a->dev;
	k->ino = a->ino;
	k->n = split_of(t, a) ? 2 : 1;
	k->off[0] = k->n == 2 ? a->plan.alloc_site.off : a->plan.all.off;
	k->off[1] = k->n == 2 ? a->plan.free_site.off : 0;
	return 0;
}

static int shl_same(const struct shl *x, const struct shl *y)
{
	return x->dev == y->dev && x->ino == y->ino && x->n == y->n &&
	       x->off[0] == y->off[0] && x->off[1] == y->off[1];
}

/* The open shared link for key k, if any. */
static struct shl *shl_open_for(struct tr *t, const struct shl *k)
{
	for (unsigned i = 0; i < LMT_SHL_MAX; i++)
		if (t->shl[i].mfd && shl_same(&t->shl[i], k))
			return &t->shl[i];
	return NULL;
}

/* Allocator a off its shared link; the link closed with its last. */
static void shl_put(struct allocf *a)
{
	if (!a->sh)
		return;
	if (a->sh->refs && !--a->sh->refs)
		mfd_close(&a->sh->mfd);
	a->sh = NULL;
}

/* Is every process that maps file (dev, ino) one traced and live, and
 * are they at least the members (nmem: else maps name the file otherwise
 * than we took it)? A process whose maps cannot be read even by root
 * (PID 1 of some VMs, a non-dumpable process under an LSM) is taken as
 * not mapping it: if it does, its first hits are said (foreign_check). */
static int mappers_traced(struct tr *t, uint64_t dev, uint64_t ino, unsigned nmem,
			  long *other)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[64], *line = NULL;
	size_t lcap = 0;
	int ok = d != NULL;
	unsigned found = 0;

	while (ok && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		const struct tproc *p;
		FILE *f;
		int maps = 0;

		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		if (!(f = fopen(path, "re")))
			continue;
		/* getline: a path over 4 KiB would end a fixed buffer's line
		 * early, and its rest parse as a mapping */
		while (!maps && getline(&line, &lcap, f) > 0) {
			unsigned maj, min;
			unsigned long long in;

			maps = sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &in) == 3 &&
			       in == ino && makedev(maj, min) == dev;
		}
		if (ferror(f))
			maps = 1;
		fclose(f);
		p = maps ? u64map_get(&t->pmap, (uint64_t)pid | 1ULL << 32) : NULL;
		if (maps && (!p || !p->attached || p->ended)) {
			ok = 0;
			*other = pid;
		}
		found += maps;
	}
	free(line);
	if (d)
		closedir(d);
	return ok && found >= nmem;
}

/* Allocator a's probes, by its plan; on the shared link of its file if
 * one is open (the kernel put its probes in a's process with the rest). */
static int allocf_on(struct tr *t, struct tproc *p, struct allocf *a)
{
	struct shl k, *sh;
	int r;

	if (t->sess && !t->no_shared && !shl_key(t, a, &k) && (sh = shl_open_for(t, &k))) {
		sh->refs++;
		a->sh = sh;
		return 0;
	}
	if (t->sess || t->multi)
		return allocf_on_um(t, p, a);
	if (split_of(t, a)) {
		r = attach_at(t, a, p, a->plan.free_site.off, 0);
		if (!r)
			r = attach_at(t, a, p, a->plan.alloc_site.off, 1);
	} else {
		r = attach_at(t, a, p, a->plan.all.off, 1);
	}
	return r;
}

/* Allocator a's probes gone, here and now: entries, then returns. */
static void allocf_off(struct allocf *a)
{
	links_free(&a->links);
	mfd_close(&a->mfd[0]);
	links_free(&a->rets);
	mfd_close(&a->mfd[1]);
	shl_put(a);
}

static int allocf_bare(const struct allocf *a)
{
	return !a->links.n && !a->rets.n && !a->mfd[0] && !a->mfd[1] && !a->sh;
}

/* The live allocators of key k: how many, or -1 if one has probes of its
 * own (a shared link would probe it twice: each event twice); with sh,
 * each put on it. */
static int shl_members(struct tr *t, const struct shl *k, struct shl *sh)
{
	int n = 0;

	for (struct tproc *q = t->procs; q; q = q->next)
		for (unsigned i = 0; q->attached && !q->ended && i < q->naf; i++) {
			struct allocf *b = &q->af[i];
			struct shl kb;

			if (shl_key(t, b, &kb) || !shl_same(k, &kb))
				continue;
			if (!allocf_bare(b))
				return -1;
			if (sh) {
				b->sh = sh;
				sh->refs++;
			}
			n++;
		}
	return n;
}

/* The shared link for allocator a and the others of its file, where two
 * or more processes have it, none has probes yet, and every process that
 * maps it is traced: 1 made, 0 not (probes by PID), -errno. */
static int shl_make(struct tr *t, struct allocf *a)
{
	struct shl k, *sh = NULL;
	struct statfs sf = { 0 };
	long other = 0;
	int n, fd;

	if (!t->sess || t->no_shared || shl_key(t, a, &k) || (n = shl_members(t, &k, NULL)) < 2)
		return 0;
	for (unsigned i = 0; !sh && i < LMT_SHL_MAX; i++)
		if (!t->shl[i].mfd)
			sh = &t->shl[i];
	/* overlayfs: maps name the overlay's inode, the probe goes on the
	 * layer's, which other containers' overlays show as theirs. A file
	 * not root's alone may be a target's making: no probe for every
	 * process on it (tfile_trusted). */
	if (!sh || !tfile_trusted(&a->f) || fstatfs(a->f.fd, &sf) ||
	    sf.f_type == OVERLAYFS_SUPER_MAGIC ||
	    !mappers_traced(t, k.dev, k.ino, (unsigned)n, &other)) {
		char f[PATH_MAX];

		if (t->o->verbose && other)
			err1("%d processes share the allocator in %s: a link each (PID %ld, "
			     "not traced, maps it)", n, tfile_name(&a->f, f, sizeof(f)), other);
		else if (t->o->verbose)
			err1("%d processes share the allocator in %s: a link each (%s)", n,
			     tfile_name(&a->f, f, sizeof(f)), !sh ? "too many shared links" :
			     !tfile_trusted(&a->f) ? "a file not root's, or writable by others" :
			     sf.f_type == OVERLAYFS_SUPER_MAGIC ? "a file on overlayfs" :
			     "its processes' maps name it otherwise");
		return 0;
	}
	fd = um_link(bpf_program__fd(um_enter(t)), a->f.path, k.off, k.n, 0, 0,
		     LMT_TRACE_UPROBE_SESSION);
	if (fd < 0)
		return fd;
	*sh = k;
	sh->mfd = fd + 1;
	__atomic_store_n(&t->skel->bss->shl_on, 1, __ATOMIC_RELEASE);
	shl_members(t, &k, sh);
	if (t->o->verbose) {
		char f[PATH_MAX];

		err1("%u processes' allocator in %s: one session link for them "
		     "(every process that maps it is traced)", sh->refs,
		     tfile_name(&a->f, f, sizeof(f)));
	}
	return 1;
}

/* A process that no one asked to trace hit a shared link (BPF noted it:
 * foreign_note): said once, with what it costs it. Not before a second
 * has passed: a process being attached (--all: its first VM's own
 * allocations come before lua_newstate returns) hits it unknown too. */
void foreign_check(struct tr *t)
{
	const struct bpf_map *m = t->skel->maps.foreign;
	const double tn = now();
	uint32_t k, next;
	int more;

	if (!t->skel->bss->shl_on)
		return;
	for (more = !bpf_map__get_next_key(m, NULL, &k, sizeof(k)); more; k = next) {
		const struct tproc *p;
		struct lmt_comm v;
		unsigned i, free_ = LMT_FOREIGN_MAX;

		/* traced, or traced once (a VM being closed, a process that
		 * ended since, hits it unknown too) */
		for (p = t->procs; p && !(p->pid == (pid_t)k && p->attached); p = p->next)
			;
		more = !bpf_map__get_next_key(m, &k, &next, sizeof(next));
		if (p) {
			bpf_map__delete_elem(m, &k, sizeof(k), 0);
			for (i = 0; i < LMT_FOREIGN_MAX; i++)
				if (t->fseen[i].tgid == k)
					t->fseen[i].tgid = 0;
			continue;
		}
		/* first seen now, or a second ago */
		for (i = 0; i < LMT_FOREIGN_MAX && t->fseen[i].tgid != k; i++)
			if (!t->fseen[i].tgid && free_ == LMT_FOREIGN_MAX)
				free_ = i;
		if (i == LMT_FOREIGN_MAX) { /* its name, as BPF saw it */
			if (free_ == LMT_FOREIGN_MAX)
				continue;
			t->fseen[free_].tgid = k;
			t->fseen[free_].at = tn;
			if (bpf_map__lookup_elem(m, &k, sizeof(k), &v, sizeof(v), 0))
				v.comm[0] = 0;
			v.comm[sizeof(v.comm) - 1] = 0;
			snprintf(t->fseen[free_].comm, sizeof(t->fseen[free_].comm), "%s",
				 v.comm[0] ? v.comm : "?");
			continue;
		}
		if (tn - t->fseen[i].at < 1.0)
			continue;
		t->fseen[i].tgid = 0;
		bpf_map__delete_elem(m, &k, sizeof(k), 0);
		if (u64set_add(&t->foreign, k) != 1)
			continue;
		err1("warning: PID %u (%s), not traced, maps an allocator whose probe the "
		     "traced processes share: its calls trap (~0.5 us each, nothing "
		     "recorded) until tracing ends (LMT_NO_SHARED=1: a probe for each "
		     "process)", k, t->fseen[i].comm);
	}
}

/* Every live process's allocators without probes get them: shared
 * links first, where they can be. strict: a failure is said, and -1
 * (else the process is taken as gone meanwhile). */
int alloc_probes_on(struct tr *t, int strict)
{
	struct shl no[LMT_SHL_MAX]; /* keys found not to share, this pass */
	unsigned nno = 0;
	int r, bad = 0;

	for (struct tproc *p = t->procs; p; p = p->next)
		for (unsigned i = 0; i < p->naf; i++) {
			struct allocf *a = &p->af[i];
			struct shl k;
			int asked = 0;

			if (!p->attached || p->ended || !allocf_bare(a))
				continue;
			r = 0;
			if (!shl_key(t, a, &k)) {
				for (unsigned j = 0; j < nno; j++)
					asked |= shl_same(&no[j], &k);
				if (!asked && (r = shl_make(t, a)) <= 0 && nno < LMT_SHL_MAX)
					no[nno++] = k; /* each its own: the scan once */
			}
			if (r <= 0) /* a shared link that failed: each its own */
				r = allocf_on(t, p, a);
			if (r < 0 && strict && !t->o->all && !kill(p->pid, 0)) {
				char f[PATH_MAX];

				err1("cannot attach uprobes to %s: %s",
				     tfile_name(&a->f, f, sizeof(f)), strerror(-r));
				bad = -1;
			}
			if (r < 0)
				allocf_off(a); /* gone meanwhile */
		}
	return bad;
}

static void links_move(struct links *from, struct links *to)
{
	while (from->n && !link_add(to, from->v[from->n - 1]))
		from->n--;
	links_free(from); /* what could not be moved */
}

/* fd + 1 of a uprobe_multi link to the closing window's (closed here if
 * there is no room). */
static void mfd_move(struct duty *d, int *mfd)
{
	int *v;

	if (!*mfd)
		return;
	if (d->ndfd == d->capfd) {
		v = realloc(d->dfd, (d->capfd ? 2 * d->capfd : 16) * sizeof(*v));
		if (!v) {
			mfd_close(mfd);
			return;
		}
		d->dfd = v;
		d->capfd = d->capfd ? 2 * d->capfd : 16;
	}
	d->dfd[d->ndfd++] = *mfd - 1;
	*mfd = 0;
}

void alloc_probes_take(struct tr *t, struct links *out)
{
	for (struct tproc *p = t->procs; p; p = p->next)
		for (unsigned i = 0; i < p->naf; i++) {
			links_move(&p->af[i].links, out);
			links_move(&p->af[i].rets, out);
			mfd_move(&t->duty, &p->af[i].mfd[0]);
			mfd_move(&t->duty, &p->af[i].mfd[1]);
			if (p->af[i].sh) {
				mfd_move(&t->duty, &p->af[i].sh->mfd);
				p->af[i].sh->refs = 0;
				p->af[i].sh = NULL;
			}
		}
}

void proc_links_free(struct tproc *p, int later)
{
	for (unsigned i = 0; i < p->naf; i++) {
		struct allocf *a = &p->af[i];

		if (later) { /* the reaper takes the newest first */
			links_free_later(&a->rets);
			links_free_later(&a->links);
			mfd_close(&a->mfd[0]);
			mfd_close(&a->mfd[1]);
			shl_put(a);
		} else {
			allocf_off(a);
		}
	}
	(later ? links_free_later : links_free)(&p->links);
}

static void describe(const char *what, const struct probe_site *s, int verbose)
{
	if (verbose)
		err1("%s probe at 0x%" PRIx64 " (%s)%s", what, s->addr, s->text,
			s->emulated ? "" : ", single-stepped");
}

/* Probes the allocator at runtime address addr of process p, once. Its
 * probes are by PID: a process we do not trace pays nothing for them. */
static int attach_allocf(struct tr *t, struct tproc *p, uint64_t addr)
{
	struct allocf *a;
	const struct pmap *mp;
	struct pmaps m;
	char err[256];
	int r;

	for (unsigned i = 0; i < p->naf; i++)
		if (p->af[i].addr == addr)
			return 0;
	if (p->naf == sizeof(p->af) / sizeof(p->af[0])) {
		err1("PID %d: too many distinct allocators", (int)p->pid);
		return -1;
	}
	r = pmaps_load(p->pid, &m);
	if (r) {
		err1("cannot read /proc/%d/maps: %s", (int)p->pid, strerror(-r));
		return -1;
	}
	mp = pmaps_find(&m, addr);
	if (!mp || !pmap_is_file(mp)) {
		err1("the allocator 0x%" PRIx64 " is not in a mapped file "
		     "(JIT-generated or anonymous code cannot be probed)", addr);
		pmaps_free(&m);
		return -1;
	}
	a = &p->af[p->naf];
	memset(a, 0, sizeof(*a));
	a->addr = addr;
	/* the file, once: what is read and probed is what maps named */
	r = tfile_open(&a->f, p->pid, mp);
	if (r) {
		err1("PID %d: cannot open the allocator's file %s: %s", (int)p->pid,
		     mp->path, r == -ESTALE ? "another file is mapped there now" :
		     strerror(-r));
		pmaps_free(&m);
		return -1;
	}
	a->dev = makedev(mp->dev_major, mp->dev_minor); /* as maps name it */
	a->ino = a->f.ino;
	r = probe_plan(a->f.fd, addr, addr - mp->lo + mp->off, &a->plan, err,
		       sizeof(err));
	if (r) {
		err1("%s", err);
		tfile_close(&a->f);
		pmaps_free(&m);
		return -1;
	}
	if (t->o->verbose)
		err1("PID %d: allocator 0x%" PRIx64 " in %s", (int)p->pid, addr,
		     mp->path);
	if (t->o->probes == PROBES_ENTRY) {
		a->plan.split = 0;
		a->plan.all.addr = addr;
		a->plan.all.off = addr - mp->lo + mp->off;
		a->plan.all.emulated = 0;
		snprintf(a->plan.all.text, sizeof(a->plan.all.text), "entry");
		a->plan.warning[0] = 0;
	}
	if (split_of(t, a)) {
		describe("free path", &a->plan.free_site, t->o->verbose);
		describe("allocation path", &a->plan.alloc_site, t->o->verbose);
	} else {
		/* Said once, not for every process that has it. */
		if (a->plan.warning[0] && !t->o->quiet && !t->warned++)
			err1("warning: %s", a->plan.warning);
		describe("allocator", &a->plan.all, t->o->verbose);
	}
	/* --duty: on in windows only (duty.c); the first processes' once
	 * all are attached (alloc_probes_on) */
	r = (!t->o->duty || t->duty.on) && !t->defer ? allocf_on(t, p, a) : 0;
	if (r) {
		err1("cannot attach uprobes to %s: %s", mp->path, strerror(-r));
		allocf_off(a); /* what did attach (a is not counted) */
		tfile_close(&a->f);
		pmaps_free(&m);
		return -1;
	}
	pmaps_free(&m);
	p->naf++;
	return 0;
}

static int slot_take(struct lmt_slot *s, const struct lmt_vm_key *k,
		     const struct lmt_vm *vm)
{
	uint32_t free_ = 0;

	if (!__atomic_compare_exchange_n(&s->tgid, &free_, k->tgid, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return -1;
	s->ud = k->ud;
	s->pok = 0;
	s->pwrong = 0;
	s->pn = 0;
	s->vm = *vm;
	*(struct lmt_batch *)s->buf = (struct lmt_batch){ .rec = LMT_REC_BATCH,
							  .tgid = k->tgid,
							  .vm = vm->id };
	s->len = sizeof(struct lmt_batch);
	s->nev = 0;
	__atomic_store_n(&s->live, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Claim the VM's slot (see struct lmt_slot), if it is free: its ud's, or
 * where another process has that ud, its process's. Before its probes:
 * the ud's slot must say it is shared before the VM's first event. */
static void slot_put(struct tr *t, const struct lmt_vm_key *k, const struct lmt_vm *vm)
{
	struct lmt_slot *s;

	if (!t->slots)
		return;
	s = &t->slots[lmt_slot_of(k->ud)];
	if (!slot_take(s, k, vm))
		return;
	if (__atomic_load_n(&s->ud, __ATOMIC_ACQUIRE) != k->ud &&
	    __atomic_load_n(&s->live, __ATOMIC_ACQUIRE))
		return; /* another ud's: the vms map serves this VM */
	__atomic_store_n(&s->shared, 1, __ATOMIC_RELEASE);
	slot_take(&t->slots[lmt_slot2_of(k->tgid, k->ud)], k, vm);
}

void vm_state_free(struct tvm *v)
{
	u64map_free(&v->lines, free);
	u64map_free(&v->pnames, free);
	traces_free(v);
	stk_forget_vm(v);
	takes_free(v);
	u64map_free(&v->cnames, free);
	u64set_free(&v->cnamed);
	u64set_free(&v->cmissed);
}

/* A VM of p as user space knows it, and its stream. */
static struct tvm *vm_new(struct tr *t, struct tproc *p, uint32_t id,
			  uint64_t L, uint64_t g, uint64_t ud, unsigned num)
{
	struct tvm *v, **nv;
	int err;

	if (vms_full(p) || !(v = calloc(1, sizeof(*v))))
		return NULL;
	if (p->nvm == p->nvm_cap) {
		unsigned cap = p->nvm_cap ? 2 * p->nvm_cap : 4;
		nv = realloc(p->vms, cap * sizeof(*nv));
		if (!nv) {
			free(v);
			return NULL;
		}
		p->vms = nv;
		p->nvm_cap = cap;
	}
	*v = (struct tvm){ .p = p, .id = id, .num = num, .L = L, .g = g, .ud = ud,
			   .var = p->var };
	if (num >= p->next_num)
		p->next_num = num + 1;
	v->out = out_for(t, v);
	if (!v->out) {
		free(v);
		return NULL;
	}
	u64map_put(&t->vmap, (uint64_t)p->pid << 32 | id, v, &err);
	if (err) {
		free(v);
		return NULL;
	}
	p->vms[p->nvm++] = v;
	return v;
}

struct tvm *vm_get(struct tr *t, uint32_t tgid, uint32_t id)
{
	return u64map_get(&t->vmap, (uint64_t)tgid << 32 | id);
}

/* A VM over p's cap: counted, said once. */
static void vm_over(struct tproc *p)
{
	if (!p->vms_over++)
		err1("warning: PID %d: more than %d VMs: the ones it makes from now on "
		     "are not traced (counted)", (int)p->pid, LMT_VMS_MAX);
}

/* Frees VM (k, id)'s slot if it holds one: its batch dropped, as the VM. A
 * slot a program holds right now stays: its batches come, and go as the
 * VM's (consume.c: on_batch). */
static void slot_free(struct tr *t, const struct lmt_vm_key *k, uint32_t id)
{
	const uint32_t si[2] = { lmt_slot_of(k->ud), lmt_slot2_of(k->tgid, k->ud) };

	for (int i = 0; t->slots && i < 2; i++) {
		struct lmt_slot *s = &t->slots[si[i]];
		uint32_t free_ = 0;

		if (__atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE) != k->tgid ||
		    s->ud != k->ud || s->vm.id != id ||
		    !__atomic_compare_exchange_n(&s->busy, &free_, LMT_BUSY_USER, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		s->len = sizeof(struct lmt_batch);
		s->nev = 0;
		__atomic_store_n(&s->live, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&s->tgid, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	}
}

void vm_refuse(struct tr *t, struct tproc *p, uint32_t id, uint64_t L, uint64_t ud)
{
	struct lmt_vm_key k = { .tgid = (uint32_t)p->pid, .ud = ud }, mv;
	struct { uint32_t tgid, pad; uint64_t L; } mk = { k.tgid, 0, L };
	struct lmt_vm known;

	vm_over(p);
	/* Only its own entries: a later VM may have its ud (or L) by now,
	 * itself over the cap, refused when its record comes. */
	if (!bpf_map__lookup_elem(t->skel->maps.vms, &k, sizeof(k), &known,
				  sizeof(known), 0) && known.id == id)
		bpf_map__delete_elem(t->skel->maps.vms, &k, sizeof(k), 0);
	if (!bpf_map__lookup_elem(t->skel->maps.mains, &mk, sizeof(mk), &mv,
				  sizeof(mv), 0) && mv.ud == ud)
		bpf_map__delete_elem(t->skel->maps.mains, &mk, sizeof(mk), 0);
	slot_free(t, &k, id);
}

/* A VM BPF registered itself (a second VM, a forked child's). */
struct tvm *vm_known(struct tr *t, struct tproc *p, uint32_t id, uint64_t L,
		     uint64_t g, uint64_t ud, unsigned num)
{
	struct tvm *v = vm_get(t, (uint32_t)p->pid, id);

	return v ? v : vm_new(t, p, id, L, g, ud, num);
}

int add_vm(struct tr *t, struct tproc *p, const struct vminfo *v)
{
	const uint32_t tgid = (uint32_t)p->pid;
	struct lmt_vm_key k = { .tgid = tgid, .ud = v->allocd };
	struct lmt_vm val = { .g = v->g, .id = p->next_num, .lay = v->var->lay },
		      known;
	struct tvm *tv;

	if (bpf_map__lookup_elem(t->skel->maps.vms, &k, sizeof(k), &known,
				 sizeof(known), 0) == 0) {
		/* Known, or another VM with the same ud: then their events
		 * cannot be told apart, share a stream, and must not be
		 * batched. */
		if (known.g != v->g) {
			if (!t->skel->bss->nobatch)
				unbatch(t);
			if (!t->o->quiet)
				err1("warning: PID %d: VMs 0x%" PRIx64 " and 0x%" PRIx64
				     " share an allocator's ud: their events share "
				     "one stream", (int)p->pid, (uint64_t)known.g, v->g);
		}
		return 0;
	}
	if (vms_full(p)) {
		vm_over(p);
		return 0;
	}
	p->var = v->var;
	struct { uint32_t tgid, pad; uint64_t L; } mk = { tgid, 0, v->L };
	/* A second VM in one stream: events are numbered from now on
	 * (struct lmt_slot), before it has any. */
	if (!t->dir && p->nvm)
		t->skel->bss->multi = 1;
	tv = vm_new(t, p, val.id, v->L, v->g, v->allocd, val.id);
	if (!tv)
		return -1;
	/* Registered, then probed: its first event finds it. */
	if (bpf_map__update_elem(t->skel->maps.vms, &k, sizeof(k), &val,
				 sizeof(val), BPF_ANY) ||
	    bpf_map__update_elem(t->skel->maps.mains, &mk, sizeof(mk), &k,
				 sizeof(k), BPF_ANY)) {
		err1("cannot register VM 0x%" PRIx64 ": %s", v->L, strerror(errno));
		return -1;
	}
	slot_put(t, &k, &val);
	if (attach_allocf(t, p, v->allocf))
		return -1;
	if (t->o->verbose)
		fprintf(stderr, "luamemtrace: PID %d VM %u: L 0x%" PRIx64 " g 0x%"
			PRIx64 " (%s), allocator 0x%" PRIx64 " ud 0x%" PRIx64 "\n",
			(int)p->pid, tv->num, v->L, v->g, v->var->name, v->allocf,
			v->allocd);
	{
		/* From now on BPF registers this process's new VMs itself. */
		struct lmt_proc pr = { .has_layout = 1, .next_id = 1u << 16,
				       .lay = v->var->lay };
		struct lmt_allocf_key ak = { .tgid = tgid, .allocf = v->allocf };
		uint32_t tg = tgid, one = 1;
		struct lmt_proc old;

		if (bpf_map__lookup_elem(t->skel->maps.procs, &tg, sizeof(tg), &old,
					 sizeof(old), 0) ||
		    !old.has_layout) {
			pr.spawn = (uint8_t)(p->pid == t->cmd_pid);
			bpf_map__update_elem(t->skel->maps.procs, &tg, sizeof(tg),
					     &pr, sizeof(pr), BPF_ANY);
		}
		bpf_map__update_elem(t->skel->maps.allocfs, &ak, sizeof(ak), &one,
				     sizeof(one), BPF_ANY);
	}
	t->var = v->var;
	/* The process is stopped or attached: what it maps now is readable
	 * now, while the consumer may only get to its events after it exits. */
	syms_scan(&p->syms);
	return 0;
}

/* -- Hooks --------------------------------------------------------------- */

/* Probes what tells us process p changed while we trace it, in every
 * object that has it: lua_newstate's return (VMs created while we trace,
 * or before the command's first line), lua_close, and the dynamic linker's
 * _dl_debug_state (a dlopen: C names read while the module is mapped).
 * With --all the first two are watched for every process (watch_file). */
/* The key of file f's per-process watch for pid (watch_file), in
 * t->watched with the files watched for every process. */
static uint64_t watch_key(const struct tfile *f, pid_t pid)
{
	return (tfile_key(f) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)pid << 1) | 1;
}

static void hooks_of(struct tr *t, struct tproc *p, struct tfile *f)
{
	const unsigned before = p->links.n;
	char name[PATH_MAX];
	uint64_t off;

	if (u64set_add(&p->hooked, tfile_key(f)) != 1)
		return;
	if (!elfsym_offset(f->fd, "_dl_debug_state", &off) &&
	    !link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.dl_state,
							   false, p->pid, f->path,
							   (size_t)off)) &&
	    t->o->verbose)
		err1("PID %d: watching dlopen in %s", (int)p->pid,
		     tfile_name(f, name, sizeof(name)));
	/* --all watches the rest: for every process (a file of root's), or
	 * for the process that mapped it when found (watch_file) */
	if ((t->o->all && (u64set_has(&t->watched, tfile_key(f)) ||
			   u64set_has(&t->watched, watch_key(f, p->pid)))) ||
	    elfsym_offset(f->fd, "lua_newstate", &off))
		goto out;
	if (link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.newstate_return,
							   true, p->pid, f->path,
							   (size_t)off)) == 0 &&
	    t->o->verbose)
		err1("PID %d: watching lua_newstate in %s", (int)p->pid,
		     tfile_name(f, name, sizeof(name)));
	if (!elfsym_offset(f->fd, "lua_close", &off))
		link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.close_enter,
							       false, p->pid, f->path,
							       (size_t)off));
out:
	if (p->links.n > before)
		links_hold(&p->links, f);
}

void proc_hooks(struct tr *t, struct tproc *p, const struct pmaps *m)
{
	struct u64set seen = { 0 };

	for (size_t i = 0; i < m->n; i++) {
		const struct pmap *mp = &m->v[i];
		struct tfile f;

		if (mp->perms[2] != 'x' || !pmap_is_file(mp) ||
		    u64set_add(&seen, mp->inode) != 1 || tfile_open(&f, p->pid, mp))
			continue;
		hooks_of(t, p, &f);
		tfile_close(&f);
	}
	u64set_free(&seen);
}

int watch_file(struct tr *t, struct tfile *f, pid_t pid)
{
	const int all = tfile_trusted(f);
	const unsigned before = t->links.n;
	char name[PATH_MAX];
	uint64_t off;
	int r;

	if (!all && pid <= 0) {
		if (t->o->verbose)
			err1("not watching %s for new VMs: not root's, or writable by others",
			     tfile_name(f, name, sizeof(name)));
		return 0;
	}
	if (u64set_add(&t->watched, all ? tfile_key(f) : watch_key(f, pid)) != 1)
		return 0;
	if (elfsym_offset(f->fd, "lua_newstate", &off))
		return -1;
	r = link_add(&t->links, bpf_program__attach_uprobe(t->skel->progs.newstate_return,
							   true, all ? -1 : pid, f->path,
							   (size_t)off));
	if (!r && !elfsym_offset(f->fd, "lua_close", &off))
		r = link_add(&t->links, bpf_program__attach_uprobe(t->skel->progs.close_enter,
								   false, all ? -1 : pid, f->path,
								   (size_t)off));
	if (t->links.n > before)
		links_hold(&t->links, f);
	if (r)
		err1("warning: cannot watch %s for new VMs: %s",
		     tfile_name(f, name, sizeof(name)), strerror(-r));
	else if (t->o->verbose && all)
		err1("watching lua_newstate in %s (every process)",
		     tfile_name(f, name, sizeof(name)));
	else if (t->o->verbose)
		err1("watching lua_newstate in %s (PID %d only: the file is not root's, "
		     "or is writable by others)", tfile_name(f, name, sizeof(name)), (int)pid);
	return r;
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

void forget_proc(struct tr *t, uint32_t tgid)
{
	struct luamemtrace_bpf *s = t->skel;

	bpf_map__delete_elem(s->maps.procs, &tgid, sizeof(tgid), 0);
	purge(s->maps.vms, tgid);
	purge(s->maps.mains, tgid);
	purge(s->maps.allocfs, tgid);
	purge(s->maps.objs, tgid);
	purge(s->maps.traces, tgid);
}

void proc_link(struct tr *t, struct tproc *p)
{
	int err;

	p->next = t->procs;
	t->procs = p;
	u64map_put(&t->pmap, (uint64_t)p->pid | 1ULL << 32, p, &err);
	t->nprocs++;
	if (!p->ignored)
		t->nlive++;
}

void proc_ignore(struct tr *t, struct tproc *p)
{
	uint32_t tg = (uint32_t)p->pid;
	struct lmt_proc pr = { .ignore = 1 };

	p->ignored = 1;
	bpf_map__update_elem(t->skel->maps.procs, &tg, sizeof(tg), &pr, sizeof(pr),
			     BPF_ANY);
	proc_link(t, p);
}

/* Says so once tracing: with a second tracer, each stream is whole. */
static void announce(struct tr *t, struct tproc *p)
{
	if (p->others && !t->o->quiet)
		err1("PID %d is traced by another luamemtrace too: each writes "
		     "its whole streams (and the process pays both)", (int)p->pid);
}

/* A process joins the trace: locked, listed, its C symbols read. */
static void proc_begin(struct tr *t, struct tproc *p)
{
	proc_lock(t, p);
	if (!u64map_get(&t->pmap, (uint64_t)p->pid | 1ULL << 32))
		proc_link(t, p);
	p->attached = 1;
	syms_scan(&p->syms);
}

/* ... and once its VMs are in: the hooks of its objects. */
static int proc_ready(struct tr *t, struct tproc *p)
{
	struct pmaps m;

	if (!pmaps_load(p->pid, &m)) {
		proc_hooks(t, p, &m);
		pmaps_free(&m);
	}
	announce(t, p);
	return 0;
}

int proc_attach(struct tr *t, struct tproc *p, const struct vminfo *vms, size_t n)
{
	proc_begin(t, p);
	for (size_t i = 0; i < n; i++)
		if (add_vm(t, p, &vms[i]))
			return -1;
	return proc_ready(t, p);
}

int proc_attach_child(struct tr *t, struct tproc *parent, struct tproc *c)
{
	c->parent = parent->pid;
	c->var = parent->var;
	proc_begin(t, c);
	/* The parent's VMs, as BPF copied them: same ids and numbers. */
	for (unsigned i = 0; i < parent->nvm; i++) {
		const struct tvm *pv = parent->vms[i];
		if (!pv->closed &&
		    !vm_known(t, c, pv->id, pv->L, pv->g, pv->ud, pv->num))
			return -1;
	}
	/* Its allocators: the parent's files, at its addresses. */
	for (unsigned i = 0; i < parent->naf; i++)
		if (attach_allocf(t, c, parent->af[i].addr))
			return -1;
	return proc_ready(t, c);
}

static void on_needed(void *ctx, uint64_t unused, const char *soname)
{
	static const char *dirs[] = { "/lib/x86_64-linux-gnu",
				      "/usr/lib/x86_64-linux-gnu",
				      "/usr/local/lib", "/lib", "/usr/lib" };
	struct tr *t = ctx;
	struct tproc *c = u64map_get(&t->pmap, (uint64_t)t->cmd_pid | 1ULL << 32);
	char p[PATH_MAX];

	if (!strstr(soname, "luajit") || !c)
		return;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct tfile f;

		snprintf(p, sizeof(p), "%s/%s", dirs[i], soname);
		if (!tfile_open_path(&f, p)) {
			hooks_of(t, c, &f);
			tfile_close(&f);
			return;
		}
	}
}

/* Watches lua_newstate in the program (following one #! line) and in a
 * libluajit it links against, and dlopen in its dynamic linker. */
int cmd_probes(struct tr *t, const char *exe)
{
	char interp[PATH_MAX], line[PATH_MAX];
	const char *bin = exe;
	FILE *f = fopen(exe, "re");
	struct tproc *c = u64map_get(&t->pmap, (uint64_t)t->cmd_pid | 1ULL << 32);
	struct tfile bf, lf;
	unsigned before;

	if (!c)
		return -1;
	if (f && fgets(line, sizeof(line), f) && !strncmp(line, "#!", 2)) {
		char *s = line + 2;
		s += strspn(s, " \t");
		s[strcspn(s, " \t\n")] = 0;
		if (!strcmp(s, "/usr/bin/env")) {
			char *a = s + strlen(s) + 1;
			a += strspn(a, " \t");
			a[strcspn(a, " \t\n")] = 0;
			s = a;
		}
		if (!resolve_cmd(s, interp))
			bin = interp;
	}
	if (f)
		fclose(f);
	/* the operator's program, read once by its descriptor */
	if (tfile_open_path(&bf, bin))
		return -1;
	if (!elfsym_interp(bf.fd, line, sizeof(line)) && !tfile_open_path(&lf, line)) {
		hooks_of(t, c, &lf);
		tfile_close(&lf);
	}
	before = c->links.n;
	hooks_of(t, c, &bf);
	elfsym_needed(bf.fd, on_needed, t);
	tfile_close(&bf);
	return c->links.n > before ? 0 : -1;
}
