/* Select: which processes a trace follows. A process is known by its PID
 * and a descriptor of it (a pidfd, taken before anything is read of it,
 * so a PID reused between discovery and attach shows as the first
 * process's exit); --all finds every process that maps LuaJIT, and --exe
 * narrows it. A lock per process tells two tracers of it about each
 * other. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "session/session.h"
#include "session/life.h"
#include "session/select.h"
#include "util/hash.h"
#include "session/stops.h"
#include "capture/ring.h"
#include "target/caps.h"

#include "target/elfsym.h"
#include "target/seen.h"
#include "session/guard.h"
#include "target/tfile.h"
#include "probes/hooks.h"
#include "probes/object.h"

/* New VMs no layout variant matched (select_newvm): -- COMMAND's last
 * line tells them from a command that made no VM (session/run.c). */
static unsigned vms_unmatched;

unsigned select_unmatched(void)
{
	return vms_unmatched;
}

/* -- A process ------------------------------------------------------------- */

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

int select_named(const char *exe, const char *comm, const char *const *names, unsigned n)
{
	char b[PATH_MAX];

	snprintf(b, sizeof(b), "%s", base_of(exe));
	b[strcspn(b, " ")] = 0; /* " (deleted)" */
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(names[i], b) || !strcmp(names[i], comm))
			return 1;
	return 0;
}

/* Does the process pass --exe? */
static int proc_wanted(const struct tr *t, const struct tproc *p)
{
	const struct topts *o = t->o;

	return !o->nexes || select_named(p->exe, p->comm, (const char *const *)o->exes, o->nexes);
}

/* "tracing PID N (comm)", and its PID in its own PID namespace if that
 * is not ours (a container). */
static void said_tracing(const struct tproc *p)
{
	const pid_t ns = proc_nspid(p->pid);

	if (ns)
		err1("tracing PID %d (%s), PID %d in its namespace", (int)p->pid, p->comm,
		     (int)ns);
	else
		err1("tracing PID %d (%s)", (int)p->pid, p->comm);
}

/* -- Its VMs --------------------------------------------------------------- */

int is_luajit(int fd)
{
	uint64_t off;

	return !elfsym_offset(fd, "lua_newstate", &off) &&
	       !elfsym_offset(fd, "luaJIT_setmode", &off);
}

/* Does pid map a LuaJIT file (m: its maps)? Then its version string
 * (seen_version) in ver, or "no version string". */
static int luajit_version(pid_t pid, const struct pmaps *m, char *ver, size_t len)
{
	int lj = 0;

	snprintf(ver, len, "no version string");
	for (size_t i = 0; i < m->n && !lj; i++) {
		struct tfile f;
		if (m->v[i].perms[2] != 'x' || !pmap_is_file(&m->v[i]) ||
		    tfile_open(&f, pid, &m->v[i]))
			continue;
		if ((lj = is_luajit(f.fd)) && seen_version(f.fd, ver, len))
			snprintf(ver, len, "no version string");
		tfile_close(&f);
	}
	return lj;
}

int proc_find_vms(struct tr *t, struct tproc *p, struct vmscan *scan, int quiet)
{
	const struct topts *o = t->o;
	char why[PATH_MAX + 8];
	struct timespec t0, t1;
	struct pmaps m;
	int r = pmaps_load(p->pid, &m);

	if (r) {
		if (!quiet)
			err1("cannot read /proc/%d/maps: %s", (int)p->pid, strerror(-r));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = vm_scan(p->pid, &m, o->variant, scan);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (o->verbose && !r)
		err1("PID %d: %zu VM%s found in %.0f ms (%.1f MiB read)",
		     (int)p->pid, scan->n, scan->n == 1 ? "" : "s",
		     (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
		     (double)scan->scanned / (1 << 20));
	if (!r && scan->over) {
		p->vms_unchecked += scan->over;
		err1("PID %d: more than %d VMs: %zu more candidates not checked, "
		     "not traced", (int)p->pid, LMT_VMS_MAX, scan->over);
	}
	if (r) {
		if (!quiet)
			err1("cannot scan PID %d: %s", (int)p->pid, strerror(-r));
		pmaps_free(&m);
		return -1;
	}
	if (!scan->n && !quiet) {
		char ver[LMT_SEEN_VERSION_MAX + 1];
		int lj = luajit_version(p->pid, &m, ver, sizeof(ver));

		/* Self-pointers like L->glref also occur by chance
		 * (allocator free lists): only LuaJIT's own symbols
		 * tell an unknown layout from no LuaJIT at all. */
		if (!lj) {
			err1("PID %d runs no LuaJIT VM", (int)p->pid);
		} else {
			why[0] = 0;
			if (scan->first_reject[0])
				snprintf(why, sizeof(why), " (%s)", scan->first_reject);
			err1("unrecognised LuaJIT layout in PID %d: LuaJIT is loaded "
			     "but no VM matched %s%s; seen: %s, %s", (int)p->pid,
			     o->variant ? o->variant : "any known variant", why, ver,
			     vm_refs_seen(scan->shape64, scan->shape32));
		}
	}
	pmaps_free(&m);
	return scan->n ? 0 : -1;
}


/* -- --all ----------------------------------------------------------------- */

/* Does pid's mapping m hold LuaJIT? Then its file is watched (for every
 * process only if root's: watch_file). Files found: dev ^ inode -> 1
 * LuaJIT, 2 not; each read from the one descriptor that maps named. */
static int file_is_luajit(struct tr *t, struct u64map *seen, pid_t pid,
			  const struct pmap *m)
{
	const uint64_t key = pmap_key(m);
	intptr_t v = (intptr_t)u64map_get(seen, key);
	struct tfile f;
	int err;

	if (v == 2 || tfile_open(&f, pid, m))
		return 0;
	if (!v) {
		v = is_luajit(f.fd) ? 1 : 2;
		u64map_put(seen, key, (void *)v, &err);
	}
	if (v == 1)
		watch_file(&t->probes, &f, pid);
	tfile_close(&f);
	return v == 1;
}

/* Where Debian and OpenResty put LuaJIT: watched even if nothing maps them
 * now, for the processes that start later. */
static const char *const known_files[] = {
	"/usr/lib/*/libluajit*.so*", "/usr/local/lib/libluajit*.so*",
	"/usr/local/openresty/luajit/lib/libluajit*.so*",
	"/usr/bin/luajit*", "/usr/local/bin/luajit*",
	"/usr/local/openresty/luajit/bin/luajit*",
};

static void watch_known(struct tr *t, struct u64map *seen)
{
	for (size_t i = 0; i < sizeof(known_files) / sizeof(known_files[0]); i++) {
		glob_t g;

		if (glob(known_files[i], 0, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			struct tfile f;

			(void)seen;
			if (tfile_open_path(&f, g.gl_pathv[j]))
				continue;
			if (is_luajit(f.fd))
				watch_file(&t->probes, &f, 0);
			tfile_close(&f);
		}
		globfree(&g);
	}
}

/* One process of /proc: traced if it maps LuaJIT, passes --exe and has a
 * VM; its LuaJIT files watched either way. */
static void consider(struct tr *t, struct u64map *seen, pid_t pid)
{
	struct tproc *p;
	struct pmaps m;
	struct vmscan scan = { 0 };
	int lj = 0;

	if (pmaps_load(pid, &m))
		return;
	for (size_t i = 0; i < m.n; i++) {
		const struct pmap *mp = &m.v[i];
		if (mp->perms[2] == 'x' && pmap_is_file(mp) &&
		    file_is_luajit(t, seen, pid, mp))
			lj = 1;
	}
	pmaps_free(&m);
	if (!lj || !(p = proc_new(t, pid, 1)))
		return;
	if (!proc_wanted(t, p) || proc_find_vms(t, p, &scan, 1) ||
	    proc_attach(t, p, scan.v, scan.n)) {
		/* Left out (or no VM yet: BPF reports its first). A left-out
		 * process stays known, so its new VMs do not stop it. */
		if (!proc_wanted(t, p))
			proc_ignore(t, p);
		else if (p->attached) /* listed by proc_begin: ended, not freed */
			proc_end(t, p, "error");
		else
			proc_drop(t, p);
	}
	vm_scan_free(&scan);
}

/* --all's rescan: the processes of the last listing, and the files found
 * not to be LuaJIT (for good), kept between rescans. Over
 * LMT_RESCAN_FILES_MAX such files they are dropped and taken again (a
 * target making file after file costs only reads). */
#define LMT_RESCAN_FILES_MAX 65536
static struct u64set rescan_pids, rescan_not_lj;

/* Does pid map a LuaJIT file that no probe watches for every process? */
static int maps_unwatched(struct tr *t, pid_t pid)
{
	struct pmaps m;
	int r = 0;

	if (pmaps_load(pid, &m))
		return 0;
	for (size_t i = 0; i < m.n && !r; i++) {
		const struct pmap *mp = &m.v[i];
		const uint64_t key = pmap_key(mp);
		struct tfile f;

		if (mp->perms[2] != 'x' || !pmap_is_file(mp) ||
		    u64set_has(&rescan_not_lj, key) || tfile_open(&f, pid, mp))
			continue;
		if (!is_luajit(f.fd)) {
			if (rescan_not_lj.n >= LMT_RESCAN_FILES_MAX)
				u64set_free(&rescan_not_lj);
			u64set_add(&rescan_not_lj, key);
		} else {
			/* watched for every process: BPF reports its VMs */
			r = !u64set_has(&t->probes.watched, tfile_key(&f));
		}
		tfile_close(&f);
	}
	pmaps_free(&m);
	return r;
}

/* A PID of a listing as the rescan remembers it: with its comm, so that
 * a process first listed before it exec'd LuaJIT (a container's shell
 * or unshare, then its luajit) is new again once it has. */
static uint64_t rescan_key(pid_t pid)
{
	char comm[17];
	ssize_t n = 0;
	int fd = proc_openat(pid, "comm", O_RDONLY);

	if (fd >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
	}
	return (uint64_t)(uint32_t)pid |
	       (hash_bytes64(comm, n > 0 ? (size_t)n : 0) & 0xffffffff00000000ULL);
}

struct rescan_ctx {
	struct tr *t;
	struct u64set now;
	struct u64map seen;
};

/* One PID of the listing: new since the last, not known, and mapping a
 * LuaJIT file no probe of ours watches (a container's own copy): watched
 * from now on, attached if its VM runs. */
static void rescan_one(void *ctx, pid_t pid)
{
	struct rescan_ctx *c = ctx;
	struct tr *t = c->t;
	const struct tproc *p;
	const uint64_t key = rescan_key(pid);

	if (u64set_add(&c->now, key) != 1 || u64set_has(&rescan_pids, key) ||
	    proc_of(t, (uint32_t)pid) || !maps_unwatched(t, pid))
		return;
	consider(t, &c->seen, pid);
	if ((p = proc_of(t, (uint32_t)pid)) && p->attached && !p->ignored && !t->o->quiet)
		said_tracing(p);
}

void select_rescan(struct tr *t)
{
	struct rescan_ctx c = { .t = t };

	if (select_each(t->guardian, rescan_one, &c)) {
		u64set_free(&c.now);
		return;
	}
	u64map_free(&c.seen, NULL);
	u64set_free(&rescan_pids);
	rescan_pids = c.now;
}

void select_free(void)
{
	u64set_free(&rescan_pids);
	u64set_free(&rescan_not_lj);
}

int select_each(pid_t skip, void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	const pid_t self = getpid();

	if (!d) {
		err1("cannot read /proc: %s", strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		char *e;
		long pid = strtol(de->d_name, &e, 10);

		if (*e || pid <= 0 || pid > INT32_MAX || pid == self || pid == skip)
			continue;
		fn(ctx, (pid_t)pid);
	}
	closedir(d);
	return 0;
}

struct all_ctx {
	struct tr *t;
	struct u64map seen;
};

static void consider_one(void *ctx, pid_t pid)
{
	struct all_ctx *c = ctx;

	u64set_add(&rescan_pids, rescan_key(pid));
	consider(c->t, &c->seen, pid);
}

int select_all(struct tr *t)
{
	struct all_ctx c = { .t = t };

	if (select_each(t->guardian, consider_one, &c))
		return -1;
	watch_known(t, &c.seen);
	u64map_free(&c.seen, NULL);
	return 0;
}

/* lua_newstate returned in a process whose new VM user space must
 * register: a traced process's new allocator, or with --all a process not
 * seen before (stopped meanwhile). */
void select_newvm(struct tr *t, const struct lmt_newvm *n)
{
	struct tproc *p = proc_of(t, n->tgid);
	struct vminfo v;
	struct pmaps m;
	char why[160];
	int fresh = 0, want;

	if (t->stopping)
		return;
	if (n->registered) { /* BPF did it: its allocator is probed */
		struct tvm *tv;

		if (p && !vm_get(t, n->tgid, n->id) && vms_full(p)) {
			vm_refuse(t, p, n->id, n->L, n->ud);
			return;
		}
		tv = p ? vm_known(t, p, n->id, n->L, n->g, n->ud, p->next_num) : NULL;
		if (tv && t->o->verbose)
			fprintf(stderr, "luamemtrace: PID %u VM %u: L 0x%" PRIx64
				" g 0x%" PRIx64 ", allocator 0x%" PRIx64 " ud 0x%"
				PRIx64 " (registered in BPF)\n", n->tgid, tv->num,
				(uint64_t)n->L, (uint64_t)n->g, (uint64_t)n->allocf,
				(uint64_t)n->ud);
		return;
	}
	if (!p) { /* --all: a process not seen before */
		p = proc_new(t, (pid_t)n->tgid, 1);
		if (!p) { /* gone already */
			if (n->left_out)
				forget_proc(&t->probes, n->tgid);
			return;
		}
		fresh = 1;
		want = proc_wanted(t, p);
		/* Left out by BPF, it ran on: listed as BPF told (a name
		 * changed since cannot bring back what went unseen). */
		if (n->left_out && want) {
			err1("warning: PID %d (%s) not traced: its name changed "
			     "after its first VM", (int)p->pid, p->comm);
			t->lost_vm++;
		}
		if (n->left_out || !want) {
			proc_ignore(t, p);
			return;
		}
	}
	if (p->ignored)
		return;
	/* -- COMMAND was bound before it executed its program: its memory
	 * is the program's from here (target/proc.h; stopped, our child). */
	if (!p->attached && p->pid == t->probes.cmd_pid && proc_bind(p->pid, p->pidfd)) {
		err1("warning: PID %d: cannot open its memory: not traced", (int)p->pid);
		t->lost_vm++;
		return;
	}
	if (pmaps_load((pid_t)n->tgid, &m) == 0) {
		if (vm_at((pid_t)n->tgid, &m, t->o->variant, n->L, &v, why,
			  sizeof(why)) == 0) {
			int r = p->attached ? add_vm(t, p, &v) : proc_attach(t, p, &v, 1);
			if (r)
				t->lost_vm++;
			else if (!p->nvm || (p->nvm == 1 && !t->o->quiet && t->o->all))
				said_tracing(p);
		} else {
			char ver[LMT_SEEN_VERSION_MAX + 1];
			size_t n64 = 0, n32 = 0;

			luajit_version((pid_t)n->tgid, &m, ver, sizeof(ver));
			vm_shape_at((pid_t)n->tgid, n->L, &n64, &n32);
			err1("warning: new lua_State 0x%" PRIx64 " in PID %u not "
			     "traced: %s; seen: %s, %s", (uint64_t)n->L, n->tgid, why,
			     ver, vm_refs_seen(n64, n32));
			t->lost_vm++;
			vms_unmatched++;
		}
		pmaps_free(&m);
	}
	if (fresh && !p->attached)
		proc_drop(t, p);
}
