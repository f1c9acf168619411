/* The guardian (see guard.h). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"
#include "luamemtrace.h"

size_t guard_stops(int stops_fd, struct lmt_stop **v)
{
	struct lmt_stop k, *a = NULL, *na;
	size_t n = 0, cap = 0;

	while (!bpf_map_get_next_key(stops_fd, n ? &k : NULL, &k)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(na = realloc(a, cap * sizeof(*a))))
				break;
			a = na;
		}
		a[n++] = k;
	}
	*v = a;
	return n;
}

void guard_release(int stops_fd, const struct lmt_stop *v, size_t n)
{
	/* SIGCONT before the entry goes: a tracer killed in between leaves
	 * one SIGCONT too many (harmless), never one too few. */
	for (size_t i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < i && v[j].tgid != v[i].tgid; j++)
			;
		if (j == i)
			kill((pid_t)v[i].tgid, SIGCONT);
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(stops_fd, &v[i]);
}

/* Moves fd to want (want < 3 + 2: the guardian's two). */
static int move_fd(int fd, int want)
{
	if (fd == want)
		return 0;
	return dup2(fd, want) < 0 ? -1 : 0;
}

static void guard_main(int stops_fd, int pidfd)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP,
				       SIGTTIN, SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2 };
	struct pollfd p = { .events = POLLIN };
	int nul;

	setsid(); /* out of the tracer's process group and terminal */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	prctl(PR_SET_NAME, "lmt-guardian");
	/* Keep the map and the pidfd, above 2, then drop everything else:
	 * a probe's descriptor kept here would keep the probe. */
	stops_fd = fcntl(stops_fd, F_DUPFD_CLOEXEC, 10);
	pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 10 + 1);
	if (stops_fd < 0 || pidfd < 0 || move_fd(stops_fd, 3) ||
	    move_fd(pidfd, 4))
		_exit(1);
	syscall(SYS_close_range, 5U, ~0U, 0U);
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > 2)
			close(nul);
	}
	/* A pidfd turns readable when the whole thread group has exited:
	 * its descriptors, and so its probes, are gone by then. */
	p.fd = 4;
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	{
		struct lmt_stop *v;
		size_t n = guard_stops(3, &v);

		guard_release(3, v, n);
	}
	_exit(0);
}

pid_t guard_start(int stops_fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	pid_t c;

	if (pidfd < 0)
		return -1;
	c = fork();
	if (c == 0)
		guard_main(stops_fd, pidfd);
	close(pidfd);
	return c;
}
