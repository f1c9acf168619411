/* --duty PERCENT: the allocator probed in windows that cover PERCENT of
 * the time, one at a random place in each period; off, it costs the
 * target nothing (a probe with no program attached still traps, so the
 * probes themselves come and go).
 *
 * What was recorded is measured, not assumed: a window runs from the
 * start of its probes' attach to the instant it closes (duty_off), and
 * the seconds of all windows scale the sample to the whole run (summary,
 * sidecar, reports: info_scale). A uprobe's detach waits for the kernel's
 * grace periods (docs/costs.md: ~0.04 s a uprobe_multi link, in parallel;
 * ~0.1 s a perf link, one at a time): they go on a thread of their own,
 * off the consumer's, and no window opens before the last one's probes
 * are gone. Allocator probes are put on in windows only, new processes'
 * too (attach_allocf).
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "session/session.h"
#include "probes/alloc.h"

/* A window per period; shorter runs (-d) have one period, and a slow
 * detach makes them longer (closed). */
#define DUTY_PERIOD 10.0

static void *close_fd(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

/* The closing window's links, on a thread of their own: uprobe_multi
 * links on a thread each, as each waits for its own grace period (the
 * window's flag makes their order moot); perf links in order (entries
 * first), as the kernel takes them one at a time anyway. */
static void *close_all(void *arg)
{
	struct duty *d = arg;
	pthread_t th[64];
	unsigned n = 0;

	for (unsigned i = 0; i < d->dfd.n; i++)
		if (n == 64 || pthread_create(&th[n], NULL, close_fd, (void *)(intptr_t)d->dfd.v[i]))
			close(d->dfd.v[i]);
		else
			n++;
	while (n)
		pthread_join(th[--n], NULL);
	d->dfd.n = 0;
	for (unsigned i = 0; i < d->dying.n; i++)
		bpf_link__destroy(d->dying.v[i]);
	d->dying.n = 0;
	d->last = now();
	__atomic_store_n(&d->busy, 0, __ATOMIC_RELEASE);
	return NULL;
}

static double window(const struct tr *t)
{
	return t->o->duty / 100 * t->duty.period;
}

/* The next window's start: at a random place in the next period that
 * has room for it after now. */
static void plan_next(struct tr *t, double tn)
{
	struct duty *d = &t->duty;
	const double w = window(t);

	do
		d->pstart += d->period;
	while (d->pstart + d->period - w < tn);
	d->next = d->pstart + drand48() * (d->period - w);
	if (d->next < tn)
		d->next = tn;
}

/* The window ends now (duty_off: nothing more is recorded), its probes
 * go on the closers' threads. */
static void close_window(struct tr *t)
{
	struct duty *d = &t->duty;

	__atomic_store_n(&t->probes.skel->bss->duty_off, 1, __ATOMIC_SEQ_CST);
	d->on = 0;
	t->probes.duty_off = 1;
	d->closing = now();
	d->sampled += d->closing - d->opened;
	d->last = d->closing;
	/* What entered before duty_off returns in microseconds, long before
	 * its return probe can be gone. */
	alloc_probes_take(&t->probes, &d->dying, &d->dfd);
	__atomic_store_n(&d->busy, 1, __ATOMIC_RELEASE);
	d->closer = !pthread_create(&d->th, NULL, close_all, d);
	if (!d->closer)
		close_all(d); /* here, then: the loop waits */
}

/* The closing window's probes are all gone (wait: waits for them); the
 * next window planned. */
static int closed(struct tr *t, int wait)
{
	struct duty *d = &t->duty;

	if (!d->closing)
		return 1;
	if (!wait && __atomic_load_n(&d->busy, __ATOMIC_ACQUIRE))
		return 0;
	if (d->closer)
		pthread_join(d->th, NULL);
	d->closer = 0;
	/* The detach's time, measured: the target still traps meanwhile.
	 * Windows are made at least twice that long (longer periods), or
	 * it would be most of their cost. */
	d->tail = d->last - d->closing;
	if (t->o->verbose)
		err1("--duty: window %u recorded %.3f s, its probes went in %.3f s", d->windows,
		     d->closing - d->opened, d->tail);
	if (2 * d->tail * 100 / t->o->duty > d->period)
		d->period = 2 * d->tail * 100 / t->o->duty;
	d->closing = 0;
	plan_next(t, now());
	return 1;
}

/* Tracing comes back after time without it: bpf/state.h's tracing_back,
 * before the programs trace again. */
static void tracing_back(struct tr *t)
{
	__atomic_fetch_add(&t->probes.skel->bss->offgen, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&t->probes.skel->bss->pcgen, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&t->probes.skel->bss->trgen, 1, __ATOMIC_SEQ_CST);
}

/* -- --ab=MS ---------------------------------------------------------------- */

/* Benchmark: the programs switch between tracing and the floor (they
 * return at once: bpf/state.h, ab_skip; with --ab-without, tracing
 * without those parts: ab_leaves) every MS ms, each switch said
 * with the wall clock, so that a load's own log can be cut into paired
 * windows a few hundred ms apart: the host's drift over seconds, larger
 * than the cost measured, falls out of the pairs (tests/bench/hosts.sh). */
static void ab_say(struct tr *t)
{
	const double w = wall_now();

	/* the next turn from the instant said: the turns said are MS apart
	 * at least, however long the switch took */
	t->duty.ab_next = now() + t->o->ab_ms / 1000;
	err1("--ab: %s from %.6f", t->probes.skel->bss->ab_floor ? t->o->ab_name : "traced", w);
}

static void ab_turn(struct tr *t)
{
	const double tn = now();

	if (!t->o->ab_ms || tn < t->duty.ab_next)
		return;
	if (t->probes.skel->bss->ab_floor)
		tracing_back(t);
	__atomic_store_n(&t->probes.skel->bss->ab_floor, !t->probes.skel->bss->ab_floor, __ATOMIC_SEQ_CST);
	ab_say(t);
}

/* -- --duty ------------------------------------------------------------------ */

void duty_start(struct tr *t)
{
	struct duty *d = &t->duty;
	const double tn = now();

	if (t->o->ab_ms)
		ab_say(t);
	if (!t->o->duty)
		return;
	srand48((long)(wall_now() * 1e6) ^ (long)getpid());
	d->period = DUTY_PERIOD;
	if (t->deadline && t->deadline - tn < d->period && t->deadline > tn)
		d->period = t->deadline - tn;
	d->pstart = tn - d->period;
	plan_next(t, tn);
}

void duty_turn(struct tr *t)
{
	struct duty *d = &t->duty;
	const double tn = now();

	ab_turn(t);
	if (!t->o->duty || !closed(t, 0) || tn < d->next)
		return;
	if (d->on) {
		close_window(t); /* the next is planned once it is closed */
		return;
	}
	/* A window due at -d's end is not opened: the loop ends the run. */
	if (t->deadline && tn >= t->deadline)
		return;
	d->opened = tn;
	d->on = 1;
	t->probes.duty_off = 0;
	d->windows++;
	/* The probes stay on for the last detach's time after the window
	 * closes: it is taken off the window, so that they are on for
	 * PERCENT of the time (periods keep a window at least twice it). */
	d->next = tn + window(t) - (d->tail < window(t) / 2 ? d->tail : window(t) / 2);
	/* What the probes did not see while off (traces made, functions and
	 * prototypes freed, their addresses reused) is checked again. */
	tracing_back(t);
	__atomic_store_n(&t->probes.skel->bss->duty_off, 0, __ATOMIC_SEQ_CST);
	alloc_probes_on(&t->probes, 0);
	if (t->o->verbose)
		err1("--duty: window %u opened at %.2f s, probes on in %.3f s", d->windows,
		     tn - t->t0, now() - tn);
}

/* ms, or less: until at (a time of now()), rounded up. */
static int ms_until(double at, int ms)
{
	const double left = (at - now()) * 1000;

	return left < 0 ? 0 : left + 1 < ms ? (int)left + 1 : ms;
}

int duty_wait_ms(const struct tr *t, int ms)
{
	const struct duty *d = &t->duty;

	if (t->o->ab_ms)
		ms = ms_until(d->ab_next, ms);
	if (!t->o->duty)
		return ms;
	if (d->closing)
		return ms < 10 ? ms : 10;
	return ms_until(d->next, ms);
}

void duty_end(struct tr *t)
{
	struct duty *d = &t->duty;

	if (!t->o->duty)
		return;
	closed(t, 1);
	if (d->on)
		d->sampled += now() - d->opened;
	d->on = 0;
	t->probes.duty_off = 1;
	free(d->dying.v);
	d->dying.v = NULL;
	d->dying.cap = 0;
	free(d->dfd.v);
	d->dfd.v = NULL;
	d->dfd.cap = 0;
}

double duty_sampled(const struct tr *t)
{
	const struct duty *d = &t->duty;

	return d->sampled + (d->on ? now() - d->opened : 0);
}
