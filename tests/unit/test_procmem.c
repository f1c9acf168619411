/* user/target/proc.c's reads of a target: through a descriptor bound to the
 * process, never by its PID alone. A read of a process that exited fails,
 * and so does one after its PID was given to another process (--reuse,
 * root: a PID namespace of our own makes the reuse certain; run by
 * tests/hostile_stops.bats). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../user/target/proc.c"
#include "../../user/util/u64set.c"
#include "check.h"

static volatile uint64_t mark; /* at the same address in every fork */

/* A child that sets mark to v, says so on fd w, and waits to be killed. */
static pid_t child(uint64_t v, int w)
{
	pid_t c = fork();

	if (c == 0) {
		mark = v;
		if (write(w, "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	return c;
}

static void ready(int r)
{
	char b;

	if (read(r, &b, 1) != 1)
		exit(2);
}

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Bound, read, killed: the read fails; an unbound PID is never read. */
static void dead_fails(void)
{
	int p[2], fd;
	uint64_t got = 0;
	pid_t a;

	if (pipe(p))
		exit(2);
	a = child(0xa1a1a1a1, p[1]);
	ready(p[0]);
	fd = pidfd_of(a);
	CHECK("bind a live process", fd >= 0 && proc_bind(a, fd) == 0);
	CHECK("read it: its own memory",
	      proc_read(a, (uint64_t)(uintptr_t)&mark, &got, 8) == 0 && got == 0xa1a1a1a1);
	{
		struct pmaps m;
		int d = proc_dir(a, fd);

		CHECK("its /proc directory, its maps and start: read",
		      d >= 0 && pmaps_load(a, &m) == 0 && m.n > 0 && proc_start(a, fd) > 0);
		pmaps_free(&m);
		if (d >= 0)
			close(d);
	}
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	got = 0;
	CHECK("read after its exit: fails (ESRCH), nothing copied",
	      proc_read(a, (uint64_t)(uintptr_t)&mark, &got, 8) == -ESRCH && got == 0);
	{
		struct pmaps m;

		CHECK("its maps, start, directory after its exit: none",
		      pmaps_load(a, &m) < 0 && m.n == 0 && proc_start(a, fd) == 0 &&
		      proc_dir(a, fd) < 0 && proc_openat(a, "comm", O_RDONLY) < 0);
	}
	CHECK("a bind of a process gone fails", proc_bind(a, fd) < 0);
	proc_unbind(a, fd);
	close(fd);
	CHECK("an unbound PID is not read (ours)",
	      proc_read(getpid(), (uint64_t)(uintptr_t)&mark, &got, 8) == -ESRCH);
	CHECK("signal 0 through a live process's pidfd: 0",
	      (fd = pidfd_of(getpid())) >= 0 && proc_signal(fd, 0) == 0);
	close(fd);
	close(p[0]);
	close(p[1]);
}

/* In a PID namespace of our own (we are its init): A bound, A exits,
 * the next PID given is A's (ns_last_pid), to B. Reads of A's PID do not
 * reach B. */
static int reuse_in_ns(void)
{
	int p[2], fd, f, n;
	uint64_t got = 0;
	char last[32];
	pid_t a, b;

	/* Our own /proc: PIDs as this namespace sees them. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", 0, NULL) || pipe(p))
		return 2;
	a = child(0xa1a1a1a1, p[1]);
	ready(p[0]);
	fd = pidfd_of(a);
	CHECK("bind A", fd >= 0 && proc_bind(a, fd) == 0);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	n = snprintf(last, sizeof(last), "%d", (int)a - 1);
	f = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
	if (f < 0 || write(f, last, (size_t)n) != n)
		return 2;
	close(f);
	b = child(0xb2b2b2b2, p[1]);
	ready(p[0]);
	CHECK("B was given A's PID", b == a);
	CHECK("a read of A's PID fails: B's memory not copied",
	      proc_read(a, (uint64_t)(uintptr_t)&mark, &got, 8) < 0 && got == 0);
	CHECK("A's pidfd does not signal B", proc_signal(fd, 0) == -ESRCH);
	{
		struct pmaps m;
		char comm[32];

		CHECK("A's /proc directory: not B's (ESRCH)", proc_dir(a, fd) == -ESRCH);
		CHECK("A's maps, comm, exe, start: not B's",
		      pmaps_load(a, &m) < 0 && m.n == 0 &&
		      proc_openat(a, "comm", O_RDONLY) < 0 &&
		      proc_readlinkat(a, "exe", comm, sizeof(comm)) < 0 &&
		      proc_start(a, fd) == 0);
	}
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	return fails != 0;
}

/* In a child: after unshare, the process that made the namespace can
 * make no thread once its init is gone (LeakSanitizer's at exit). */
static int reuse(void)
{
	int st;
	pid_t c = fork(), i;

	if (c == 0) {
		if (unshare(CLONE_NEWPID | CLONE_NEWNS)) {
			printf("not ok - a PID namespace (root needed): %s\n",
			       strerror(errno));
			_exit(1);
		}
		i = fork(); /* the namespace's init */
		if (i == 0)
			_exit(reuse_in_ns());
		_exit(waitpid(i, &st, 0) == i && WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("not ok - the namespace's checks (status %d)\n", st);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--reuse"))
		return reuse();
	dead_fails();
	return fails != 0;
}
