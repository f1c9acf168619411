/* Allocator probes (probes/alloc.h): where each goes (probes/placement.h),
 * as perf links by PID, uprobe_multi links (--duty), one session link per
 * allocator, or one session link shared by the traced processes that map
 * an allocator's file (struct shl); a VM registered in BPF's maps and its
 * slot claimed before its allocator is probed. */
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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <signal.h>

#include "luamemtrace.h"
#include "luamemtrace.skel.h"
#include "probes/probes.h"
#include "probes/alloc.h"
#include "probes/links.h"
#include "target/elfsym.h"
#include "target/proc.h"
#include "target/tfile.h"
#include "target/vmscan.h"
#include "util/clock.h"
#include "util/knobs.h"
#include "util/log.h"

/* -- uprobe_multi links (--duty) ---------------------------------------- */

/* One link covers a process's offsets of a program, and removing it waits
 * for one grace period outside the perf events' global mutex: ~10x faster
 * than perf links (docs/costs.md), which is what --duty pays at every
 * window's close. The attribute's layout: probes/kfeat.h. */

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

/* -- Allocators and VMs -------------------------------------------------- */

static int attach_at(struct probes *t, struct allocf *a, struct probe_proc *p, uint64_t off, int ret)
{
	struct bpf_program *pe = t->o.floor ? t->skel->progs.floor_enter :
					       t->enter;
	struct bpf_program *pr = t->o.floor ? t->skel->progs.floor_return :
					       t->skel->progs.alloc_return;
	/* The return probe first, and gone last (a->rets): no allocation
	 * is seen entering without its return being caught, or it would
	 * count as missed. */
	int r = ret && !t->o.floor_entry ? link_add(&a->rets, bpf_program__attach_uprobe(pr, true,
				p->pid, a->f.path, (size_t)off)) : 0;

	if (r)
		return r;
	return link_add(&a->links, bpf_program__attach_uprobe(pe, false, p->pid,
							      a->f.path, (size_t)off));
}

/* Allocator a probed on its two paths (probes/placement.c's split plan). */
static int split_of(const struct probes *t, const struct allocf *a)
{
	return a->plan.split && t->o.mode == PROBES_AUTO;
}

/* Allocator a's probes as uprobe_multi links: one session, the entry
 * program at both sites asking for the return where it needs it (the
 * floor's: every allocation's); else two links, the return first, as
 * attach_at's. 0 or -errno. */
/* The allocator's entry program on uprobe_multi links: the session's
 * floor under --floor. */
static struct bpf_program *um_enter(const struct probes *t)
{
	return t->sess && t->o.floor ? t->skel->progs.floor_session : t->enter;
}

static int allocf_on_um(struct probes *t, struct probe_proc *p, struct allocf *a)
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
static int shl_key(const struct probes *t, const struct allocf *a, struct shl *k)
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
static struct shl *shl_open_for(struct probes *t, const struct shl *k)
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

/* -- The session's processes (struct probes_ops) ------------------------- */

static int pid_is(void *arg, struct probe_proc *p)
{
	return p->pid == *(const pid_t *)arg;
}

/* Is process pid one the session traces (which: struct probes_ops)? */
static int traced(const struct probes *t, enum probes_which which, pid_t pid)
{
	return t->ops->each_proc(t->ctx, which, pid_is, &pid);
}

/* Is every process that maps file (dev, ino) one traced and live, and
 * are they at least the members (nmem: else maps name the file otherwise
 * than we took it)? A process whose maps cannot be read even by root
 * (PID 1 of some VMs, a non-dumpable process under an LSM) is taken as
 * not mapping it: if it does, its first hits are said (foreign_check). */
static int mappers_traced(struct probes *t, uint64_t dev, uint64_t ino, unsigned nmem,
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
		if (maps && !traced(t, PROBES_LIVE, (pid_t)pid)) {
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
static int allocf_on(struct probes *t, struct probe_proc *p, struct allocf *a)
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

struct members {
	const struct probes *t;
	const struct shl *k;
	struct shl *sh;
	int n;
};

static int members_of(void *arg, struct probe_proc *q)
{
	struct members *m = arg;

	for (unsigned i = 0; i < q->naf; i++) {
		struct allocf *b = &q->af[i];
		struct shl kb;

		if (shl_key(m->t, b, &kb) || !shl_same(m->k, &kb))
			continue;
		if (!allocf_bare(b))
			return -1;
		if (m->sh) {
			b->sh = m->sh;
			m->sh->refs++;
		}
		m->n++;
	}
	return 0;
}

/* The live allocators of key k: how many, or -1 if one has probes of its
 * own (a shared link would probe it twice: each event twice); with sh,
 * each put on it. */
static int shl_members(struct probes *t, const struct shl *k, struct shl *sh)
{
	struct members m = { t, k, sh, 0 };

	return t->ops->each_proc(t->ctx, PROBES_LIVE, members_of, &m) ? -1 : m.n;
}

/* The shared link for allocator a and the others of its file, where two
 * or more processes have it, none has probes yet, and every process that
 * maps it is traced: 1 made, 0 not (probes by PID), -errno. */
static int shl_make(struct probes *t, struct allocf *a)
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

		if (t->o.verbose && other)
			err1("%d processes share the allocator in %s: a link each (PID %ld, "
			     "not traced, maps it)", n, tfile_name(&a->f, f, sizeof(f)), other);
		else if (t->o.verbose)
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
	if (t->o.verbose) {
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
void foreign_check(struct probes *t)
{
	const struct bpf_map *m = t->skel->maps.foreign;
	const double tn = now();
	uint32_t k, next;
	int more;

	if (!t->skel->bss->shl_on)
		return;
	for (more = !bpf_map__get_next_key(m, NULL, &k, sizeof(k)); more; k = next) {
		struct lmt_comm v;
		unsigned i, free_ = LMT_FOREIGN_MAX;

		/* traced, or traced once (a VM being closed, a process that
		 * ended since, hits it unknown too) */
		more = !bpf_map__get_next_key(m, &k, &next, sizeof(next));
		if (traced(t, PROBES_ATTACHED, (pid_t)k)) {
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
/* One pass of alloc_probes_on. */
struct pass {
	struct probes *t;
	struct shl no[LMT_SHL_MAX]; /* keys found not to share, this pass */
	unsigned nno;
	int strict, bad;
};

static int probes_on(void *arg, struct probe_proc *p)
{
	struct pass *ps = arg;
	struct probes *t = ps->t;

	for (unsigned i = 0; i < p->naf; i++) {
		struct allocf *a = &p->af[i];
		struct shl k;
		int asked = 0, r = 0;

		if (!allocf_bare(a))
			continue;
		if (!shl_key(t, a, &k)) {
			for (unsigned j = 0; j < ps->nno; j++)
				asked |= shl_same(&ps->no[j], &k);
			if (!asked && (r = shl_make(t, a)) <= 0 && ps->nno < LMT_SHL_MAX)
				ps->no[ps->nno++] = k; /* each its own: the scan once */
		}
		if (r <= 0) /* a shared link that failed: each its own */
			r = allocf_on(t, p, a);
		if (r < 0 && ps->strict && !t->o.all && !kill(p->pid, 0)) {
			char f[PATH_MAX];

			err1("cannot attach uprobes to %s: %s",
			     tfile_name(&a->f, f, sizeof(f)), strerror(-r));
			ps->bad = -1;
		}
		if (r < 0)
			allocf_off(a); /* gone meanwhile */
	}
	return 0;
}

int alloc_probes_on(struct probes *t, int strict)
{
	struct pass ps = { .t = t, .strict = strict };

	t->ops->each_proc(t->ctx, PROBES_LIVE, probes_on, &ps);
	return ps.bad;
}

static void links_move(struct links *from, struct links *to)
{
	while (from->n && !link_add(to, from->v[from->n - 1]))
		from->n--;
	links_free(from); /* what could not be moved */
}

/* fd + 1 of a uprobe_multi link to fds (closed here if there is no
 * room). */
static void mfd_move(struct fdv *fds, int *mfd)
{
	int *v;

	if (!*mfd)
		return;
	if (fds->n == fds->cap) {
		v = realloc(fds->v, (fds->cap ? 2 * fds->cap : 16) * sizeof(*v));
		if (!v) {
			mfd_close(mfd);
			return;
		}
		fds->v = v;
		fds->cap = fds->cap ? 2 * fds->cap : 16;
	}
	fds->v[fds->n++] = *mfd - 1;
	*mfd = 0;
}

struct taken {
	struct links *out;
	struct fdv *fds;
};

static int probes_take(void *arg, struct probe_proc *p)
{
	struct taken *tk = arg;

	for (unsigned i = 0; i < p->naf; i++) {
		links_move(&p->af[i].links, tk->out);
		links_move(&p->af[i].rets, tk->out);
		mfd_move(tk->fds, &p->af[i].mfd[0]);
		mfd_move(tk->fds, &p->af[i].mfd[1]);
		if (p->af[i].sh) {
			mfd_move(tk->fds, &p->af[i].sh->mfd);
			p->af[i].sh->refs = 0;
			p->af[i].sh = NULL;
		}
	}
	return 0;
}

void alloc_probes_take(struct probes *t, struct links *out, struct fdv *fds)
{
	struct taken tk = { out, fds };

	t->ops->each_proc(t->ctx, PROBES_ALL, probes_take, &tk);
}

void proc_links_free(struct probe_proc *p, int later)
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
/* Allocator a of p at addr, in the file mapped at mp: its file opened
 * and its probes planned (probes/placement.h), as --probes asks: 0, or -1
 * said (a's file closed). */
static int allocf_plan(const struct probes *t, const struct probe_proc *p,
		       struct allocf *a, uint64_t addr, const struct pmap *mp)
{
	char err[256];
	int r;

	memset(a, 0, sizeof(*a));
	a->addr = addr;
	/* the file, once: what is read and probed is what maps named */
	r = tfile_open(&a->f, p->pid, mp);
	if (r) {
		err1("PID %d: cannot open the allocator's file %s: %s", (int)p->pid,
		     mp->path, r == -ESTALE ? "another file is mapped there now" :
		     strerror(-r));
		return -1;
	}
	a->dev = makedev(mp->dev_major, mp->dev_minor); /* as maps name it */
	a->ino = a->f.ino;
	if (probe_plan(a->f.fd, addr, addr - mp->lo + mp->off, &a->plan, err, sizeof(err))) {
		err1("%s", err);
		tfile_close(&a->f);
		return -1;
	}
	if (t->o.verbose)
		err1("PID %d: allocator 0x%" PRIx64 " in %s", (int)p->pid, addr, mp->path);
	if (t->o.mode == PROBES_ENTRY) {
		a->plan.split = 0;
		a->plan.all.addr = addr;
		a->plan.all.off = addr - mp->lo + mp->off;
		a->plan.all.emulated = 0;
		snprintf(a->plan.all.text, sizeof(a->plan.all.text), "entry");
		a->plan.warning[0] = 0;
	}
	return 0;
}

int attach_allocf(struct probes *t, struct probe_proc *p, uint64_t addr)
{
	struct allocf *a;
	const struct pmap *mp;
	struct pmaps m;
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
	if (allocf_plan(t, p, a, addr, mp)) {
		pmaps_free(&m);
		return -1;
	}
	if (split_of(t, a)) {
		describe("free path", &a->plan.free_site, t->o.verbose);
		describe("allocation path", &a->plan.alloc_site, t->o.verbose);
	} else {
		/* Said once, not for every process that has it. */
		if (a->plan.warning[0] && !t->o.quiet && !t->warned++)
			err1("warning: %s", a->plan.warning);
		describe("allocator", &a->plan.all, t->o.verbose);
	}
	/* --duty: on in windows only (session/duty.c); the first processes' once
	 * all are attached (alloc_probes_on) */
	r = !t->duty_off && !t->defer ? allocf_on(t, p, a) : 0;
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

static int slot_claim(struct lmt_slot *s, const struct lmt_vm_key *k,
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
static void slot_put(struct probes *t, const struct lmt_vm_key *k, const struct lmt_vm *vm)
{
	struct lmt_slot *s;

	if (!t->slots)
		return;
	s = &t->slots[lmt_slot_of(k->ud)];
	if (!slot_claim(s, k, vm))
		return;
	if (__atomic_load_n(&s->ud, __ATOMIC_ACQUIRE) != k->ud &&
	    __atomic_load_n(&s->live, __ATOMIC_ACQUIRE))
		return; /* another ud's: the vms map serves this VM */
	__atomic_store_n(&s->shared, 1, __ATOMIC_RELEASE);
	slot_claim(&t->slots[lmt_slot2_of(k->tgid, k->ud)], k, vm);
}

/* -- VMs in BPF's maps ----------------------------------------------------- */

int vm_registered(struct probes *t, uint32_t tgid, uint64_t ud, uint64_t *g)
{
	struct lmt_vm_key k = { .tgid = tgid, .ud = ud };
	struct lmt_vm known;

	if (bpf_map__lookup_elem(t->skel->maps.vms, &k, sizeof(k), &known,
				 sizeof(known), 0))
		return 0;
	*g = known.g;
	return 1;
}

int vm_register(struct probes *t, struct probe_proc *p, unsigned nvm,
		const struct vminfo *v, uint32_t id)
{
	const uint32_t tgid = (uint32_t)p->pid;
	struct lmt_vm_key k = { .tgid = tgid, .ud = v->allocd };
	struct lmt_vm val = { .g = v->g, .id = id, .lay = v->var->lay };
	struct { uint32_t tgid, pad; uint64_t L; } mk = { tgid, 0, v->L };
	/* From now on BPF registers this process's new VMs itself. */
	struct lmt_proc pr = { .has_layout = 1, .next_id = 1u << 16,
			       .lay = v->var->lay }, old;
	struct lmt_allocf_key ak = { .tgid = tgid, .allocf = v->allocf };
	uint32_t tg = tgid, one = 1;

	/* A second VM in one stream: events are numbered from now on
	 * (struct lmt_slot), before it has any. */
	if (!t->o.follow && nvm > 1)
		t->skel->bss->multi = 1;
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
	if (bpf_map__lookup_elem(t->skel->maps.procs, &tg, sizeof(tg), &old,
				 sizeof(old), 0) ||
	    !old.has_layout) {
		pr.spawn = (uint8_t)(p->pid == t->cmd_pid);
		bpf_map__update_elem(t->skel->maps.procs, &tg, sizeof(tg),
				     &pr, sizeof(pr), BPF_ANY);
	}
	bpf_map__update_elem(t->skel->maps.allocfs, &ak, sizeof(ak), &one,
			     sizeof(one), BPF_ANY);
	return 0;
}

/* Frees VM (k, id)'s slot if it holds one: its batch dropped, as the VM. A
 * slot a program holds right now stays: its batches come, and go as the
 * VM's (capture/ring.c: on_batch). */
static void slot_free(struct probes *t, const struct lmt_vm_key *k, uint32_t id)
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

void vm_unregister(struct probes *t, uint32_t tgid, uint32_t id, uint64_t L, uint64_t ud)
{
	struct lmt_vm_key k = { .tgid = tgid, .ud = ud }, mv;
	struct { uint32_t tgid, pad; uint64_t L; } mk = { k.tgid, 0, L };
	struct lmt_vm known;

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
