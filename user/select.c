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

#include "trace.h"
#include "readcaps.h"

#include "elfsym.h"
#include "guard.h"
#include "tfile.h"

/* -- A process ------------------------------------------------------------- */

struct tproc *proc_new(struct tr *t, pid_t pid, int quiet)
{
	struct tproc *p = calloc(1, sizeof(*p));
	ssize_t n;
	int fd;

	if (!p) {
		err1("out of memory");
		return NULL;
	}
	p->t = t;
	p->pid = pid;
	p->lockfd = -1;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0) {
		if (!quiet)
			err1(errno == ESRCH ? "no such process: %d" :
			     "cannot open process %d", (int)pid);
		free(p);
		return NULL;
	}
	/* Its memory by descriptor from now on (proc.h). */
	if (proc_bind(pid, p->pidfd)) {
		if (!quiet)
			err1("cannot open process %d's memory", (int)pid);
		close(p->pidfd);
		free(p);
		return NULL;
	}
	p->start = proc_start(pid, p->pidfd);
	/* by its bound /proc directory (proc.h: proc_dir) */
	if ((fd = proc_openat(pid, "comm", O_RDONLY)) >= 0) {
		n = read(fd, p->comm, sizeof(p->comm) - 1);
		close(fd);
		p->comm[n > 0 ? n : 0] = 0;
		p->comm[strcspn(p->comm, "\n")] = 0;
	}
	if (proc_readlinkat(pid, "exe", p->exe, sizeof(p->exe)) < 0)
		p->exe[0] = 0;
	syms_init(&p->syms, pid, proc_sym, p);
	return p;
}

void proc_drop(struct tr *t, struct tproc *p)
{
	(void)t;
	proc_unlock(p);
	proc_unbind(p->pid, p->pidfd);
	if (p->pidfd >= 0)
		close(p->pidfd);
	proc_links_free(p, 0);
	for (unsigned i = 0; i < p->naf; i++)
		tfile_close(&p->af[i].f);
	u64set_free(&p->hooked);
	syms_free(&p->syms);
	free(p->vms);
	free(p);
}

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

int proc_wanted(const struct tr *t, const struct tproc *p)
{
	const struct topts *o = t->o;
	char exe[PATH_MAX];

	if (!o->nexes)
		return 1;
	snprintf(exe, sizeof(exe), "%s", base_of(p->exe));
	exe[strcspn(exe, " ")] = 0; /* " (deleted)" */
	for (unsigned i = 0; i < o->nexes; i++)
		if (!strcmp(o->exes[i], exe) || !strcmp(o->exes[i], p->comm))
			return 1;
	return 0;
}

/* -- Its VMs --------------------------------------------------------------- */

int is_luajit(int fd)
{
	uint64_t off;

	return !elfsym_offset(fd, "lua_newstate", &off) &&
	       !elfsym_offset(fd, "luaJIT_setmode", &off);
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
		int lj = 0;
		for (size_t i = 0; i < m.n && !lj; i++) {
			struct tfile f;
			if (m.v[i].perms[2] != 'x' || !pmap_is_file(&m.v[i]) ||
			    tfile_open(&f, p->pid, &m.v[i]))
				continue;
			lj = is_luajit(f.fd);
			tfile_close(&f);
		}
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
			     "but no VM matched %s%s", (int)p->pid,
			     o->variant ? o->variant : "any known variant", why);
		}
	}
	pmaps_free(&m);
	return scan->n ? 0 : -1;
}

/* -- Tracers of one process ------------------------------------------------ */

#define LOCKDIR "/run/luamemtrace"

/* A file per process (PID and start time), locked shared by each tracer
 * of it: one that cannot take it exclusively is not alone. */
void proc_lock(struct tr *t, struct tproc *p)
{
	char path[96];

	(void)t;
	if (mkdir(LOCKDIR, 0700) && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), LOCKDIR "/%d.%" PRIu64, (int)p->pid, p->start);
	p->lockfd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (p->lockfd < 0)
		return;
	if (flock(p->lockfd, LOCK_EX | LOCK_NB))
		p->others = errno == EWOULDBLOCK;
	flock(p->lockfd, LOCK_SH);
}

void proc_unlock(struct tproc *p)
{
	char path[96];
	int fd;

	if (p->lockfd < 0)
		return;
	close(p->lockfd);
	p->lockfd = -1;
	/* The last tracer of it removes the file. */
	snprintf(path, sizeof(path), LOCKDIR "/%d.%" PRIu64, (int)p->pid, p->start);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB))
		unlink(path);
	if (fd >= 0)
		close(fd);
}

/* -- --all ----------------------------------------------------------------- */

/* Does pid's mapping m hold LuaJIT? Then its file is watched (for every
 * process only if root's: watch_file). Files found: dev ^ inode -> 1
 * LuaJIT, 2 not; each read from the one descriptor that maps named. */
static int file_is_luajit(struct tr *t, struct u64map *seen, pid_t pid,
			  const struct pmap *m)
{
	uint64_t key = ((uint64_t)m->dev_major << 52 ^ (uint64_t)m->dev_minor << 40 ^
			m->inode) | 1;
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
		watch_file(t, &f, pid);
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
				watch_file(t, &f, 0);
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

int select_all(struct tr *t)
{
	struct u64map seen = { 0 };
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

		if (*e || pid <= 0 || pid == self || pid == t->guardian)
			continue;
		consider(t, &seen, (pid_t)pid);
	}
	closedir(d);
	watch_known(t, &seen);
	u64map_free(&seen, NULL);
	return 0;
}
