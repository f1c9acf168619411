/* Stopping the target for a copy: a stop recorded in a stops map the
 * guardian holds (session/guard.h), so that the target is continued whatever
 * happens to us, and by the guardian's deadline at the latest. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "session/guard.h"
#include "util/clock.h"
#include "heap/heap.h"
#include "target/inject.h"
#include "target/proc.h"


int hstop_init(struct hstop *s, pid_t pid, int pidfd)
{
	memset(s, 0, sizeof(*s));
	s->pidfd = pidfd;
	s->stops_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "lmt_stops", sizeof(struct lmt_stop),
				     sizeof(struct lmt_hold), 16, NULL);
	if (s->stops_fd < 0)
		return -errno;
	s->inj = inj_rec_new(); /* NULL: no copy-on-write copy (cow.c) */
	if ((s->guardian = guard_start(s->stops_fd, s->inj)) < 0 ||
	    guard_record(s->guardian, s->stops_fd)) {
		int e = errno ? errno : EIO;

		hstop_end(s);
		return -e;
	}
	return 0;
}

int hstop_stop(struct hstop *s, pid_t pid)
{
	struct lmt_stop k = { .tgid = (__u32)pid, .seq = ++s->seq };
	struct lmt_hold hv = { .state = LMT_STOP_HELD };
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t start = proc_start(pid, s->pidfd), until;
	int r;

	r = proc_stopped(pid);
	if (r < 0)
		return -ESRCH;
	if (r) { /* stopped by someone else: read as it is, left so */
		s->was_stopped = 1;
		return 0;
	}
	if (!start || hz <= 0)
		return -ESRCH;
	hv.start = (uint64_t)((int64_t)(start * (uint64_t)(1000000000 / hz)) -
			      guard_boot_offset());
	s->t0 = hv.since = boot_ns();
	if (bpf_map_update_elem(s->stops_fd, &k, &hv, BPF_NOEXIST))
		return -errno;
	s->held = 1;
	if (proc_signal(s->pidfd, SIGSTOP)) {
		int expired;

		hstop_cont(s, &expired);
		return -ESRCH;
	}
	until = s->t0 + (uint64_t)LMT_HEAP_STOPWAIT_MS * 1000000;
	while ((r = proc_stopped(pid)) == 0 && boot_ns() < until) {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	}
	if (r != 1) {
		int expired;

		hstop_cont(s, &expired);
		return r < 0 ? -ESRCH : -ETIMEDOUT;
	}
	return 0;
}

uint64_t hstop_cont(struct hstop *s, int *expired)
{
	struct held *v = NULL;
	size_t n;
	uint64_t ns;

	*expired = 0;
	if (!s->held)
		return 0;
	ns = boot_ns() - s->t0;
	n = guard_expired(s->stops_fd, &v);
	*expired = n > 0;
	free(v);
	v = NULL;
	n = guard_stops(s->stops_fd, &v);
	if (n)
		guard_release(s->stops_fd, v, n);
	free(v);
	s->held = 0;
	return ns;
}

void hstop_end(struct hstop *s)
{
	if (s->stops_fd > 0)
		close(s->stops_fd); /* the guardian exits with us */
	s->stops_fd = -1;
	/* the guardian keeps its own view of the record */
	if (s->inj)
		munmap(s->inj, sizeof(*s->inj));
	s->inj = NULL;
}
