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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
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
 * "unlimited", a number past 2^62), 0 if it is not there, 1 if its path
 * is too long to be looked at (unknown: no fork). */
static uint64_t cg_value(const char *base, const char *dir, const char *file)
{
	char p[4200], b[64], *e;
	unsigned long long v;

	if (snprintf(p, sizeof(p), "/sys/fs/cgroup%s%s/%s", base, dir, file) >= (int)sizeof(p))
		return 1;
	if (proc_small(p, b, sizeof(b)) < 0)
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
		/* past memory.high the target is throttled: a limit too */
		uint64_t high = v1 ? 0 : cg_value(base, path, "memory.high");

		if (high && high < max)
			max = high;
		if (max == 1)
			return 0; /* unknown */
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
	ssize_t n = proc_text(pid, "cgroup", b, sizeof(b));

	if (!n) /* no hierarchy at all: nothing limits it */
		return UINT64_MAX;
	if (n < 0 || n == (ssize_t)sizeof(b) - 1)
		return 0;
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
		if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) /* v2: "0::" */
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

/* Its status's (rel: "status", or a thread's "task/TID/status")
 * TracerPid, Seccomp, and its anonymous and swapped memory (kB): 0, or -1
 * if unreadable. */
static int status_of(pid_t pid, const char *rel, long long *tracer, long long *seccomp,
		     long long *anon, long long *swap)
{
	char st[8192];

	if (proc_text(pid, rel, st, sizeof(st)) <= 0)
		return -1;
	*tracer = field(st, "\nTracerPid:");
	*seccomp = field(st, "\nSeccomp:");
	*anon = field(st, "\nRssAnon:");
	*swap = field(st, "\nVmSwap:");
	return *tracer < 0 || *seccomp < 0 || *anon < 0 ? -1 : 0;
}

/* Does the namespace link ns (under pid's /proc directory: "ns/pid",
 * "task/TID/ns/pid") name the same as its for-children link (no
 * namespace made for its next child, which our fork would take)? */
static int ns_same(pid_t pid, const char *ns, const char *children)
{
	char a[64], b[64];
	ssize_t r;

	if ((r = proc_readlinkat(pid, ns, a, sizeof(a))) <= 0)
		return r == -ENOENT; /* a kernel without time namespaces */
	/* none to read: a PID namespace made, its init not yet forked */
	if (proc_readlinkat(pid, children, b, sizeof(b)) <= 0)
		return 0;
	return !strcmp(a, b);
}

/* Does pid hold a userfaultfd, or more descriptors than we look at
 * (LMT_HEAP_COW_FDS)? */
static int has_uffd(pid_t pid)
{
	int fd = proc_openat(pid, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), found = 0;
	struct dirent *de;
	unsigned k = 0;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	while (!found && (de = readdir(d))) {
		char l[64];
		ssize_t r;

		if (de->d_name[0] == '.')
			continue;
		if (++k > LMT_HEAP_COW_FDS) {
			found = 1;
			break;
		}
		r = readlinkat(dirfd(d), de->d_name, l, sizeof(l) - 1);
		if (r > 0) {
			l[r] = 0;
			found = !strcmp(l, "anon_inode:[userfaultfd]");
		}
	}
	closedir(d);
	return found;
}

int hcow_usable(pid_t pid, char *why, size_t n)
{
	char mi[4096];
	long long tracer, seccomp, anon, swap, avail;
	uint64_t need, room;

	if (!inj_supported()) {
		snprintf(why, n, "not on this architecture");
		return -1;
	}
	if (status_of(pid, "status", &tracer, &seccomp, &anon, &swap) ||
	    proc_small("/proc/meminfo", mi, sizeof(mi)) < 0 ||
	    (avail = field(mi, "MemAvailable:")) < 0) {
		snprintf(why, n, "its status could not be read");
		return -1;
	}
	if (tracer != 0) {
		snprintf(why, n, "it is traced by PID %lld", tracer);
		return -1;
	}
	/* A filter may forbid the fork, or kill it for one: not asked. */
	if (seccomp != 0) {
		snprintf(why, n, "it runs under seccomp (mode %lld)", seccomp);
		return -1;
	}
	/* A userfaultfd that hears of forks waits for its reader, which
	 * may be a thread of the target, stopped: the fork would never end. */
	if (has_uffd(pid)) {
		snprintf(why, n, "it holds a userfaultfd (or its descriptors could not all be "
			 "looked at)");
		return -1;
	}
	/* A PID or time namespace made for its next child would be ours. */
	if (!ns_same(pid, "ns/pid", "ns/pid_for_children") ||
	    !ns_same(pid, "ns/time", "ns/time_for_children")) {
		snprintf(why, n, "a namespace is pending for its next child");
		return -1;
	}
	/* what its writes may copy (swapped pages too), and our copy of it */
	if (swap < 0)
		swap = 0;
	need = (uint64_t)(anon + swap) * 1024 + LMT_HEAP_COW_ROOM;
	if ((uint64_t)avail * 1024 < 2 * need) {
		snprintf(why, n, "%llu MB available, its writes could copy %llu MB and our "
			 "copy take as much", (unsigned long long)avail / 1024,
			 (unsigned long long)(anon + swap + 1023) / 1024);
		return -1;
	}
	if ((room = cg_room(pid)) < need) {
		if (room > 1)
			snprintf(why, n, "%llu MB under its cgroup's memory limit, its writes "
				 "could copy %llu MB", (unsigned long long)(room >> 20),
				 (unsigned long long)(anon + swap + 1023) / 1024);
		else
			snprintf(why, n, "its cgroup's memory room is unknown");
		return -1;
	}
	return 0;
}

/* -- The fork, the end ------------------------------------------------------- */

/* A thread of pid that has not ended: its first one if so, else the
 * first of its task directory that is neither a zombie nor dead; pid
 * if none is found (the attach then fails). */
static pid_t live_thread(pid_t pid)
{
	char rel[48];
	struct dirent *de;
	pid_t tid = pid;
	DIR *d;
	int fd;
	char c;

	snprintf(rel, sizeof(rel), "task/%d/stat", (int)pid);
	if ((c = proc_state(pid, rel)) && c != 'Z' && c != 'X')
		return pid;
	if ((fd = proc_openat(pid, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return pid;
	}
	for (int k = 0; (de = readdir(d)) && k < 4096; k++) {
		long t = atol(de->d_name);

		if (t <= 0 || t == pid || t > INT32_MAX)
			continue;
		snprintf(rel, sizeof(rel), "task/%ld/stat", t);
		if ((c = proc_state(pid, rel)) && c != 'Z' && c != 'X') {
			tid = (pid_t)t;
			break;
		}
	}
	closedir(d);
	return tid;
}

/* A stop of pid, one call injected into a thread of it, continued: 0
 * with *ret the call's return, or -errno. *ns: the stop. */
static int call_stopped(struct hstop *s, pid_t pid, long nr, const uint64_t a[6],
			int64_t *ret, uint64_t *ns, int *expired)
{
	struct inj j;
	sigset_t quit, old;
	pid_t tid;
	int err, before = s->was_stopped;

	*ns = 0;
	*expired = 0;
	/* Ctrl-C and the like wait until the call is made and undone: our
	 * death while the kernel makes a fork would make its child with no
	 * tracer (the guardian covers the rest, and SIGKILL) */
	sigemptyset(&quit);
	sigaddset(&quit, SIGINT);
	sigaddset(&quit, SIGTERM);
	sigaddset(&quit, SIGHUP);
	sigaddset(&quit, SIGQUIT);
	sigprocmask(SIG_BLOCK, &quit, &old);
	if ((err = hstop_stop(s, pid))) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return err;
	}
	/* stopped by someone else: stopped all the same (the guardian then
	 * neither stops nor continues it). A thread of it alive (its first
	 * may have ended); that thread's seccomp filter and namespaces
	 * looked at again, stopped: a filter made since would see the call. */
	s->inj->others_stop = s->was_stopped;
	tid = live_thread(pid);
	err = inj_attach(&j, s->inj, pid, tid, proc_start(pid, s->pidfd));
	if (!err) {
		long long tr, sc, an, sw;
		char st[64], nsp[64], nsc[64], nst[64], nstc[64];

		snprintf(st, sizeof(st), "task/%d/status", (int)tid);
		snprintf(nsp, sizeof(nsp), "task/%d/ns/pid", (int)tid);
		snprintf(nsc, sizeof(nsc), "task/%d/ns/pid_for_children", (int)tid);
		snprintf(nst, sizeof(nst), "task/%d/ns/time", (int)tid);
		snprintf(nstc, sizeof(nstc), "task/%d/ns/time_for_children", (int)tid);
		if (status_of(pid, st, &tr, &sc, &an, &sw) || sc != 0 ||
		    (nr == SYS_clone && (!ns_same(pid, nsp, nsc) || !ns_same(pid, nst, nstc))))
			err = -EPERM;
		else
			err = inj_call(&j, nr, a, ret);
		inj_detach(&j);
	}
	if (!s->was_stopped)
		*ns = hstop_cont(s, expired);
	s->was_stopped = before;
	sigprocmask(SIG_SETMASK, &old, NULL);
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
