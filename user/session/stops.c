/* Stops: the processes BPF stopped for us (a new VM, a fork, a dlopen,
 * --no-loss), released once what they sent before stopping is read; the
 * guardian's expiries and SIGCONTs not ours said (session/guard.h). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"
#include "session/guard.h"
#include "session/life.h"
#include "capture/ring.h"
#include "target/proc.h"
#include "util/knobs.h"

/* Is every thread of tgid stopped, or gone (target/proc.h)? */
static int stopped(pid_t tgid)
{
	return proc_stopped(tgid) != 0;
}

/* Are the processes of the stops v all stopped (or children attached
 * before they ran, which need no wait)? */
static int all_stopped(struct tr *t, const struct held *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct tproc *p = proc_of(t, v[i].k.tgid);

		if (held_first(v, i) && !(p && p->nowait) && !stopped((pid_t)v[i].k.tgid))
			return 0;
	}
	return 1;
}

/* For tests (LMT_TEST_HOLD=MS): stops are held MS longer, before they are
 * handled, for a SIGCONT not ours, or another tracer's, to come
 * meanwhile. */
static void test_hold(void)
{
	if (knobs.test_hold_ms)
		usleep((useconds_t)knobs.test_hold_ms * 1000);
}

/* Processes sent a SIGCONT not ours while stopped for us (struct
 * lmt_hold, as guard_release marked it), but for a pacing stop
 * (--no-loss): said, once a process. */
static void check_held(struct tr *t, const struct held *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tproc *p = proc_of(t, v[i].k.tgid);
		size_t j;

		if (!v[i].h.conts || v[i].h.soft || (p && p->ran_held))
			continue;
		for (j = 0; j < i && !(v[j].k.tgid == v[i].k.tgid && v[j].h.conts &&
				       !v[j].h.soft); j++)
			;
		if (j < i)
			continue;
		if (p)
			p->ran_held = 1;
		err1("warning: PID %u ran while stopped for the tracer (a SIGCONT "
		     "not ours: another tracer's, or anyone's): what it did "
		     "meanwhile may be missing (a new VM's first allocations, "
		     "a module's names)", v[i].k.tgid);
		t->ran_held++;
	}
}

/* Stops the guardian ended for being held past the deadline (the tracer
 * stalled: user/session/guard.h): said, once a process and a round; the process
 * ran before we were done with it, so its stream is incomplete, but for
 * a pacing stop (--no-loss: what it loses is counted). */
static void said_expired(struct tr *t, const struct held *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tproc *p = proc_of(t, v[i].k.tgid);
		size_t j;

		if (v[i].h.state != LMT_STOP_EXPIRED)
			continue;
		for (j = 0; j < i && !(v[j].k.tgid == v[i].k.tgid &&
				       v[j].h.state == LMT_STOP_EXPIRED); j++)
			;
		if (j < i)
			continue;
		t->expired++;
		err1("warning: PID %u held stopped over %.1f s (the tracer "
		     "stalled): the guardian continued it%s", v[i].k.tgid,
		     LMT_HOLD_MAX_MS / 1e3,
		     v[i].h.soft ? "" : "; what it did meanwhile may be missing");
		if (!v[i].h.soft && !(p && p->ran_held)) {
			if (p)
				p->ran_held = 1;
			t->ran_held++;
		}
		if (t->o->no_loss) /* it may pause again */
			bpf_map__delete_elem(t->probes.skel->maps.paused, &v[i].k.tgid,
					     sizeof(v[i].k.tgid), 0);
	}
}

/* Keeps of v the stops of processes in w (seen stopped): the others'
 * are for the next round. Their count. */
static size_t stops_of(struct held *v, size_t n, const struct held *w, size_t nw)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < nw && w[j].k.tgid != v[i].k.tgid; j++)
			;
		if (j < nw)
			v[k++] = v[i];
	}
	return k;
}

void settle_stops(struct tr *t, int block)
{
	struct held *v;
	size_t n = guard_expired(t->stops_fd, &v);

	check_held(t, v, n); /* a SIGCONT not ours came first: said as such */
	said_expired(t, v, n);
	free(v);
	n = guard_stops(t->stops_fd, &v);

	if (n && !all_stopped(t, v, n)) {
		if (!t->settling)
			t->settling = now();
		while (block && now() - t->settling < 2 && !all_stopped(t, v, n))
			usleep(200);
		if (now() - t->settling < 2 && !all_stopped(t, v, n)) {
			free(v);
			return; /* again after the next poll */
		}
	}
	t->settling = 0;
	if (n) {
		/* Stops of these processes made while we waited are in now,
		 * and none can come: release them all. */
		struct held *w = v;
		size_t nw = n;

		n = guard_stops(t->stops_fd, &v);
		n = stops_of(v, n, w, nw);
		free(w);
		test_hold();
		drain(&t->cap);
		slots_exiting(&t->cap);
	}
	if (t->cap.unbatch_req)
		unbatch(&t->cap);
	for (size_t i = 0; t->rescan.n && i < t->rescan.cap; i++) {
		struct tproc *p;
		if (t->rescan.k[i] && (p = proc_of(t, (uint32_t)t->rescan.k[i])))
			syms_scan(&p->cv.syms);
	}
	if (t->rescan.n) {
		u64set_free(&t->rescan);
		memset(&t->rescan, 0, sizeof(t->rescan));
	}
	if (guard_release(t->stops_fd, v, n) && !t->peers_warned++)
		err1("warning: cannot look at other tracers' stops (%s): a "
		     "process two tracers stop may be continued before the "
		     "other is done with it", strerror(errno));
	check_held(t, v, n);
	said_expired(t, v, n); /* ended by the guardian as we released them */
	/* --no-loss: drained, they may pause again */
	for (size_t i = 0; t->o->no_loss && i < n; i++)
		bpf_map__delete_elem(t->probes.skel->maps.paused, &v[i].k.tgid, sizeof(v[i].k.tgid), 0);
	free(v);
}
