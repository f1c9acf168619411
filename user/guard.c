/* The guardian (see guard.h). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"
#include "luamemtrace.h"

size_t guard_stops(int stops_fd, struct held **v)
{
	struct held *a = NULL, *na;
	struct lmt_stop k;
	size_t n = 0, cap = 0;

	while (!bpf_map_get_next_key(stops_fd, n ? &a[n - 1].k : NULL, &k)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(na = realloc(a, cap * sizeof(*a))))
				break;
			a = na;
		}
		a[n].k = k;
		/* Gone since (released by the guardian): its key still leads
		 * on, its value is none. */
		if (bpf_map_lookup_elem(stops_fd, &k, &a[n].h))
			memset(&a[n].h, 0, sizeof(a[n].h));
		n++;
	}
	*v = a;
	return n;
}

/* -- Stops of other tracers ------------------------------------------------ */

static int is_stops(const struct bpf_map_info *in)
{
	return !strcmp(in->name, "lmt_stops") && in->type == BPF_MAP_TYPE_HASH &&
	       in->key_size == sizeof(struct lmt_stop) &&
	       in->value_size == sizeof(struct lmt_hold);
}

/* Descriptors of every tracer's stops map, ours included (found by name
 * and shape among the system's maps): their count, in *fds (free it). */
static size_t stop_maps(int **fds)
{
	__u32 id = 0;
	size_t n = 0, cap = 0;
	int *a = NULL, *na;

	while (!bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info in;
		__u32 len = sizeof(in);
		int fd = bpf_map_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&in, 0, sizeof(in));
		if (bpf_obj_get_info_by_fd(fd, &in, &len) || !is_stops(&in)) {
			close(fd);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 4;
			if (!(na = realloc(a, cap * sizeof(*a)))) {
				close(fd);
				break;
			}
			a = na;
		}
		a[n++] = fd;
	}
	*fds = a;
	return n;
}

/* Does a map of fds hold a stop of tgid? */
static int held_in(const int *fds, size_t n, __u32 tgid)
{
	for (size_t i = 0; i < n; i++) {
		struct lmt_stop k, *prev = NULL;
		struct lmt_hold h;

		while (!bpf_map_get_next_key(fds[i], prev, &k)) {
			if (k.tgid == tgid && !bpf_map_lookup_elem(fds[i], &k, &h) &&
			    h.state == LMT_STOP_HELD)
				return 1;
			prev = &k;
		}
	}
	return 0;
}

void guard_release(int stops_fd, const struct held *v, size_t n)
{
	int *fds = NULL;
	size_t nfd;

	/* Released first, then looked for: of two tracers releasing one
	 * process at once, the later to mark sees the other's mark, so at
	 * least one continues it. SIGCONT before the entry goes: a tracer
	 * killed in between leaves one SIGCONT too many (harmless), never one
	 * too few. */
	for (size_t i = 0; i < n; i++) {
		struct lmt_hold h = v[i].h;

		h.state = LMT_STOP_RELEASED;
		bpf_map_update_elem(stops_fd, &v[i].k, &h, BPF_EXIST);
	}
	nfd = n ? stop_maps(&fds) : 0;
	for (size_t i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < i && v[j].k.tgid != v[i].k.tgid; j++)
			;
		if (j == i && !held_in(fds, nfd, v[i].k.tgid))
			kill((pid_t)v[i].k.tgid, SIGCONT);
	}
	for (size_t i = 0; i < nfd; i++)
		close(fds[i]);
	free(fds);
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(stops_fd, &v[i].k);
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
		struct held *v;
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
