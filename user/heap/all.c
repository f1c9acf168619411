/* luamemtrace heap --all [--exe NAME]... [-o DIR]: every process running
 * LuaJIT snapshotted, one at a time (each stop bounded and ended before
 * the next: heap_capture), found as the tracer's --all finds them
 * (session/select.c: select_each, select_named, is_luajit). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/exitcode.h"
#include "heap/heap.h"
#include "session/select.h"
#include "target/proc.h"
#include "target/tfile.h"

struct cand {
	const struct hopts *o;
	struct u64map files; /* dev ^ inode -> 1 LuaJIT, 2 not */
	pid_t *pid;
	size_t n, cap;
	uint64_t over;       /* processes past LMT_HEAP_PROCS_MAX */
};

/* Does pid map LuaJIT (an executable file mapping with LuaJIT's symbols,
 * each file looked at once)? */
static int maps_luajit(struct cand *c, pid_t pid)
{
	struct pmaps m;
	int lj = 0, err;

	if (pmaps_load(pid, &m))
		return 0;
	for (size_t i = 0; i < m.n && !lj; i++) {
		const struct pmap *mp = &m.v[i];
		const uint64_t key = pmap_key(mp);
		intptr_t v;
		struct tfile f;

		if (mp->perms[2] != 'x' || !pmap_is_file(mp))
			continue;
		if (!(v = (intptr_t)u64map_get(&c->files, key))) {
			if (tfile_open(&f, pid, mp))
				continue;
			v = is_luajit(f.fd) ? 1 : 2;
			tfile_close(&f);
			u64map_put(&c->files, key, (void *)v, &err);
		}
		lj = v == 1;
	}
	pmaps_free(&m);
	return lj;
}

/* Its executable's path and its comm, by name (not selected yet). */
static int names_of(pid_t pid, char *exe, size_t elen, char *comm, size_t clen)
{
	char rel[32];
	ssize_t n;
	int fd;

	snprintf(rel, sizeof(rel), "/proc/%d/exe", (int)pid);
	if ((n = readlink(rel, exe, elen - 1)) < 0)
		return -1;
	exe[n] = 0;
	if ((fd = proc_openat(pid, "comm", O_RDONLY)) < 0)
		return -1;
	n = read(fd, comm, clen - 1);
	close(fd);
	if (n <= 0)
		return -1;
	comm[n] = 0;
	comm[strcspn(comm, "\n")] = 0;
	return 0;
}

static void candidate(void *ctx, pid_t pid)
{
	struct cand *c = ctx;
	char exe[PATH_MAX], comm[64];

	if (c->o->nexes && (names_of(pid, exe, sizeof(exe), comm, sizeof(comm)) ||
			    !select_named(exe, comm, c->o->exes, c->o->nexes)))
		return;
	if (!maps_luajit(c, pid))
		return;
	if (c->n == LMT_HEAP_PROCS_MAX) {
		c->over++;
		return;
	}
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 16;
		pid_t *nv = realloc(c->pid, nc * sizeof(*nv));

		if (!nv) {
			c->over++;
			return;
		}
		c->pid = nv;
		c->cap = nc;
	}
	c->pid[c->n++] = pid;
}

int heap_all(const struct hopts *o, const char *dir)
{
	struct cand c = { .o = o };
	size_t ok = 0, failed = 0;
	int rc = LMT_OK;

	if (dir && mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "luamemtrace heap: %s: %s\n", dir, strerror(errno));
		return LMT_ERR;
	}
	if (select_each(0, candidate, &c)) {
		u64map_free(&c.files, NULL);
		return LMT_ERR;
	}
	u64map_free(&c.files, NULL);
	for (size_t i = 0; i < c.n; i++) {
		char path[PATH_MAX], title[64];
		int r;

		snprintf(title, sizeof(title), "== PID %d", (int)c.pid[i]);
		if (dir && snprintf(path, sizeof(path), "%s/%d.lmh", dir, (int)c.pid[i]) >=
			   (int)sizeof(path)) {
			fprintf(stderr, "luamemtrace heap: %s: name too long\n", dir);
			free(c.pid);
			return LMT_ERR;
		}
		fflush(stdout);
		r = heap_snap(c.pid[i], o, dir ? path : NULL, title);
		if (r == LMT_OK || r == LMT_LOSSY) {
			ok++;
			if (r == LMT_LOSSY)
				rc = LMT_LOSSY;
		} else {
			failed++; /* heap_snap said why, naming it */
		}
		printf("\n");
	}
	free(c.pid);
	if (c.over)
		fprintf(stderr, "luamemtrace heap: %llu more processes over %d: not snapshotted\n",
			(unsigned long long)c.over, LMT_HEAP_PROCS_MAX);
	if (!ok && !failed && !c.over) {
		fprintf(stderr, "luamemtrace heap: no process running LuaJIT%s\n",
			o->nexes ? " by that name" : "");
		return LMT_ERR;
	}
	fprintf(stderr, "luamemtrace heap: %zu process%s snapshotted, %zu failed\n", ok,
		ok == 1 ? "" : "es", failed + (size_t)c.over);
	return failed || c.over ? LMT_ERR : rc;
}
