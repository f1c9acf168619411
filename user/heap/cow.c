/* A copy-on-write copy of the target (heap.h: hcow_*): the target, stopped
 * whole, forks once (a clone injected into its main thread, with no exit
 * signal: target/inject.h), and runs on; the child, stopped before its
 * first instruction and never resumed, keeps the target's memory as it
 * was at the fork while the copy reads it; then it is killed, and reaped
 * by a wait4 injected the same way. The target's stops last the fork
 * (its page tables copied) and the wait, not the copy.
 *
 * What it costs the target: each page it writes while the child lives is
 * copied (a page fault, and the page's memory charged to it: at most its
 * anonymous memory, which hcow_usable wants room for). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap/heap.h"
#include "target/inject.h"
#include "target/proc.h"

/* -- Is it to be forked ------------------------------------------------------ */

/* The number after "\nkey" in buf (a /proc text), or -1. */
static long long field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	char *e;
	long long v;

	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	v = strtoll(p, &e, 10);
	return e == p || v < 0 ? -1 : v;
}

/* A cgroup file's value: bytes, UINT64_MAX for "max" (or v1's
 * "unlimited", a number past 2^62), 0 if unreadable. */
static uint64_t cg_value(const char *base, const char *dir, const char *file)
{
	char p[1400], b[64], *e;
	unsigned long long v;

	if (snprintf(p, sizeof(p), "/sys/fs/cgroup%s%s/%s", base, dir, file) >= (int)sizeof(p) ||
	    proc_small(p, b, sizeof(b)) < 0)
		return 0;
	if (!strncmp(b, "max", 3))
		return UINT64_MAX;
	v = strtoull(b, &e, 10);
	return e == b ? 0 : v >= (1ULL << 62) ? UINT64_MAX : (uint64_t)v;
}

/* The least room under the memory limits of cgroup path (written on)
 * and its ancestors, in the hierarchy at /sys/fs/cgroup<base> (v2: ""
 * with memory.max, v1: "/memory" with memory.limit_in_bytes). */
static uint64_t cg_path_room(const char *base, char *path, int v1)
{
	const char *max_f = v1 ? "memory.limit_in_bytes" : "memory.max";
	const char *cur_f = v1 ? "memory.usage_in_bytes" : "memory.current";
	uint64_t room = UINT64_MAX;
	char *slash;

	for (;;) {
		uint64_t max = cg_value(base, path, max_f), cur;

		if (max && max != UINT64_MAX) {
			cur = cg_value(base, path, cur_f);
			room = cur >= max ? 0 : (max - cur < room ? max - cur : room);
		}
		if (!(slash = strrchr(path, '/')) || slash == path)
			break;
		*slash = 0;
	}
	return room;
}

/* The least room under the memory limits of pid's cgroups (v2's, and
 * v1's memory controller's, under /sys/fs/cgroup): bytes, UINT64_MAX if
 * none limits it (or the kernel has no hierarchy), 0 if unknown (a path
 * from outside our cgroup namespace, "/..", or a file longer than read). */
static uint64_t cg_room(pid_t pid)
{
	char b[4096], *line, *next;
	uint64_t room = UINT64_MAX;
	int fd = proc_openat(pid, "cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (!n) /* no hierarchy at all: nothing limits it */
		return UINT64_MAX;
	if (n < 0 || n == (ssize_t)sizeof(b) - 1)
		return 0;
	b[n] = 0;
	for (line = b; *line; line = next) {
		char *c1 = strchr(line, ':'), *c2, *nl = strchr(line, '\n');
		uint64_t r = UINT64_MAX;

		if (!nl)
			return 0;
		*nl = 0;
		next = nl + 1;
		if (!c1 || !(c2 = strchr(c1 + 1, ':')) || c2[1] != '/')
			return 0;
		*c2 = 0;
		if (strstr(c2 + 1, "/.."))
			return 0;
		if (!strcmp(line, "0") && !c1[1])
			r = cg_path_room("", c2 + 1, 0);
		else if (strstr(c1 + 1, "memory") &&
			 (!strcmp(c1 + 1, "memory") || strstr(c1 + 1, ",memory,") ||
			  !strncmp(c1 + 1, "memory,", 7) ||
			  (strlen(c1 + 1) > 7 && !strcmp(c2 - 7, ",memory"))))
			r = cg_path_room("/memory", c2 + 1, 1);
		room = r < room ? r : room;
	}
	return room;
}

int hcow_usable(pid_t pid, char *why, size_t n)
{
	char st[8192], mi[4096];
	long long tracer, seccomp, anon, avail;
	uint64_t need, room;
	int fd;
	ssize_t k;

	if (!inj_supported()) {
		snprintf(why, n, "not on this architecture");
		return -1;
	}
	fd = proc_openat(pid, "status", O_RDONLY | O_CLOEXEC);
	k = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (k <= 0 || proc_small("/proc/meminfo", mi, sizeof(mi)) < 0) {
		snprintf(why, n, "its status could not be read");
		return -1;
	}
	st[k] = 0;
	tracer = field(st, "\nTracerPid:");
	seccomp = field(st, "\nSeccomp:");
	anon = field(st, "\nRssAnon:");
	avail = field(mi, "MemAvailable:");
	if (tracer != 0) {
		snprintf(why, n, "it is traced by PID %lld", tracer);
		return -1;
	}
	/* A filter may forbid the fork, or kill it for one: not asked. */
	if (seccomp != 0) {
		snprintf(why, n, "it runs under seccomp (mode %lld)", seccomp);
		return -1;
	}
	if (anon < 0 || avail < 0) {
		snprintf(why, n, "its memory could not be read");
		return -1;
	}
	need = (uint64_t)anon * 1024 + LMT_HEAP_COW_ROOM;
	if ((uint64_t)avail * 1024 < need) {
		snprintf(why, n, "%llu MB available, its writes could copy %llu MB",
			 (unsigned long long)avail / 1024, (unsigned long long)(anon + 1023) / 1024);
		return -1;
	}
	if ((room = cg_room(pid)) < need) {
		if (room)
			snprintf(why, n, "%llu MB under its cgroup's memory limit, its writes "
				 "could copy %llu MB", (unsigned long long)(room >> 20),
				 (unsigned long long)(anon + 1023) / 1024);
		else
			snprintf(why, n, "its cgroup's memory room is unknown");
		return -1;
	}
	return 0;
}

/* -- The fork, the end ------------------------------------------------------- */

/* A stop of pid, one call injected into its main thread, continued: 0
 * with *ret the call's return, or -errno. *ns: the stop. */
static int call_stopped(struct hstop *s, pid_t pid, long nr, const uint64_t a[6],
			int64_t *ret, uint64_t *ns, int *expired)
{
	struct inj j;
	int err, before = s->was_stopped;

	*ns = 0;
	*expired = 0;
	if ((err = hstop_stop(s, pid)))
		return err;
	/* stopped by someone else: stopped all the same */
	err = inj_attach(&j, s->inj, pid, pid, proc_start(pid, s->pidfd));
	if (!err) {
		err = inj_call(&j, nr, a, ret);
		inj_detach(&j);
	}
	if (!s->was_stopped)
		*ns = hstop_cont(s, expired);
	s->was_stopped = before;
	return err;
}

int hcow_fork(struct hcow *c, struct hstop *s, pid_t pid, int *expired)
{
	static const uint64_t none[6]; /* clone(0, 0, ...): a fork, no exit signal */
	int64_t ret = -1;
	int err;

	memset(c, 0, sizeof(*c));
	c->cfd = -1;
	*expired = 0;
	if (!s->inj)
		return -ENOSYS;
	if (s->inj->child)
		return -EBUSY; /* an earlier one not reaped */
	if ((err = proc_stopped(pid)) != 0)
		return err < 0 ? err : -EALREADY; /* stopped by someone else */
	err = call_stopped(s, pid, SYS_clone, none, &ret, &c->fork_ns, expired);
	if (!err && ret < 0)
		err = (int)ret; /* the fork failed in it */
	/* Continued by the guardian first: its threads may have run before
	 * the fork. */
	if (!err && *expired)
		err = -ETIMEDOUT;
	if (!err && !s->inj->child)
		err = -ECHILD;
	if (!err) {
		c->child = s->inj->child;
		if ((c->cfd = (int)syscall(SYS_pidfd_open, c->child, 0)) < 0 ||
		    proc_bind(c->child, c->cfd))
			err = -ESRCH;
	}
	if (err)
		hcow_end(c, s, pid);
	else
		inj_test_point(INJ_AT_COPY);
	return err;
}

void hcow_end(struct hcow *c, struct hstop *s, pid_t pid)
{
	uint64_t a[6] = { 0 };
	int64_t ret = 0;
	int expired;

	if (c->cfd >= 0) {
		proc_unbind(c->child, c->cfd);
		close(c->cfd);
	}
	c->cfd = -1;
	if (!s->inj || !s->inj->child)
		return;
	inj_child_kill(s->inj);
	inj_test_point(INJ_AT_KILLED);
	a[0] = (uint64_t)s->inj->child_ns;
	a[2] = __WALL | WNOHANG;
	if (!call_stopped(s, pid, SYS_wait4, a, &ret, &c->reap_ns, &expired) &&
	    ret == s->inj->child_ns)
		s->inj->child = 0;
	c->unreaped = s->inj->child != 0;
}
