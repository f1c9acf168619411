/* Taking a process's snapshot at a bounded pause (heap.h: heap_capture).
 *
 * With soft-dirty bits (dirty.c): the target's bits cleared, its VMs
 * copied while it runs (what is read stays in the block cache, pages.c),
 * then it is stopped, the pages it wrote meanwhile are read again
 * (hpages_refresh), and the VMs are copied again from the cache: every
 * kept byte is now the stopped target's, so the copy is of one instant,
 * and the stop lasts the re-read and a walk in our memory. Without them:
 * nothing kept is trusted, the copy is made again stopped, but into memory
 * the running copy sized and touched (our page faults are not the
 * target's wait). --stopped: the whole copy with the target stopped,
 * nothing read before. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "format/exitcode.h"
#include "util/clock.h"
#include "heap/heap.h"
#include "target/proc.h"
#include "target/vmscan.h"

static int fail(const char *what, int err)
{
	fprintf(stderr, "luamemtrace heap: %s: %s\n", what, strerror(err));
	return LMT_ERR;
}

/* The copy while the target runs: fills pg, and reserves in hs[i] the
 * room its copy of VM i took and a quarter more (so that the stopped copy
 * allocates nothing: a page fault of ours is time the target waits). Its
 * copies are dropped (a running VM's mix instants). Whatever it meets is
 * bounded as a stopped copy is (copy.c), and by LMT_HEAP_RUNCOPY_MS. */
static void copy_running(pid_t pid, const struct pmaps *m, const struct vmscan *sc,
			 const char *variant, struct hpages *pg, struct heap *hs)
{
	uint64_t deadline = boot_ns() + (uint64_t)LMT_HEAP_RUNCOPY_MS * 1000000;

	pg->running = 1;
	for (size_t i = 0; i < sc->n; i++) {
		struct heap h = { 0 };
		struct vminfo vi;
		char why[256];

		if (vm_at(pid, m, variant, sc->v[i].L, &vi, why, sizeof(why)))
			continue; /* said by the stopped copy */
		heap_copy_in(pid, vi.var, vi.L, deadline, pg, &h);
		heap_reserve(&hs[i], h.n + h.n / 4 + 1024, h.alen + h.alen / 4 + (64u << 10));
		heap_free(&h);
	}
	pg->running = 0;
	/* the stopped copy's misses: what the target allocated meanwhile */
	hpages_spare(pg, pg->m.n / 4 + 64);
}

/* The passes (LMT_HEAP_PASSES): each a short stop to look up and clear
 * the bits, the pages found read again while the target runs on. A stop
 * that fails or finds the target stopped by someone else ends them: the
 * final stop says it. */
static void passes(pid_t pid, struct hstop *s, struct hpages *pg, struct hcapture *cap)
{
	uint64_t last = UINT64_MAX;

	while (cap->soft && cap->passes < LMT_HEAP_PASSES) {
		struct hrefresh r;
		uint64_t ns;
		int err, expired;

		if (hstop_stop(s, pid))
			return;
		if (s->was_stopped) {
			hstop_cont(s, &expired);
			return;
		}
		err = hpages_scan(pg, pid, boot_ns() + (uint64_t)LMT_HEAP_STOP_MS * 1000000, &r);
		if (!err && (err = hdirty_clear(pid)))
			pg->nrun = 0;
		ns = hstop_cont(s, &expired);
		cap->expired |= expired;
		cap->pause_ns += ns;
		cap->pass_ns += ns;
		cap->pause_max = ns > cap->pause_max ? ns : cap->pause_max;
		if (err) { /* the final stop reads all again */
			cap->soft = 0;
			snprintf(cap->why, sizeof(cap->why), "a pass: %s", strerror(-err));
			return;
		}
		hpages_reread(pg, pid, &r);
		cap->passes++;
		cap->pass_pages += r.dirty;
		if (r.dirty <= LMT_HEAP_PASS_DONE || r.dirty > last / 2)
			return;
		last = r.dirty;
	}
}

/* Does a copy not add up (it was stopped inside a change of its lists
 * or accounting): a list cut, an unreadable or unknown object, or objects
 * and other memory that are not gc.total? Not if it ran out of time. */
static int torn(const struct heap *hs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct heap *h = &hs[i];
		uint64_t sum = 0;

		if (!h->var)
			continue;
		if (h->c.timed_out)
			return 0; /* another try would end so too */
		if (h->c.list_cut || h->c.unreadable || h->c.bad_type)
			return 1;
		for (size_t j = 0; j < h->n; j++)
			sum += h->o[j].size;
		for (size_t j = 0; j < HOTHER_N; j++)
			sum += h->other[j];
		if (sum != h->gc_total)
			return 1;
	}
	return 0;
}

/* A copy kept for another try: its room kept (heap_reserve), the rest
 * freed. */
static void reset(struct heap *h)
{
	struct heap r = { .o = h->o, .cap = h->cap, .arena = h->arena, .acap = h->acap,
			  .at = h->at };

	h->o = NULL;
	h->arena = NULL;
	memset(&h->at, 0, sizeof(h->at));
	heap_free(h);
	if (r.at.cap) {
		memset(r.at.k, 0, r.at.cap * sizeof(*r.at.k));
		memset(r.at.v, 0, r.at.cap * sizeof(*r.at.v));
	}
	r.at.n = r.at.dead = 0;
	*h = r;
}

/* One stop: the target stopped, the kept pages it wrote read again, every
 * VM copied. With soft-dirty bits they are cleared again before it runs
 * on, for another try. 0, -errno (the copy failed: it is to be continued),
 * or an exit status (not stopped: said). */
static int stop_copy(pid_t pid, struct hstop *s, const struct pmaps *m,
		     const struct vmscan *sc, const char *variant, struct hpages *pg,
		     struct heap *hs, struct hcapture *cap)
{
	uint64_t deadline;
	int err;

	for (size_t i = 0; i < sc->n; i++)
		if (hs[i].var)
			reset(&hs[i]);
	if ((err = hstop_stop(s, pid))) {
		hpages_free(pg);
		hstop_end(s);
		return fail(err == -ETIMEDOUT ? "the target did not stop in time (continued)"
					      : "stopping the target", -err);
	}
	deadline = boot_ns() + (uint64_t)LMT_HEAP_STOP_MS * 1000000;
	/* Stopped by someone else: its bits may be someone else's too, and
	 * nothing changes: read again in full, as a stopped copy. */
	if (s->was_stopped || !cap->soft)
		hpages_recycle(pg); /* nothing kept is known to be unchanged */
	else if ((err = hpages_refresh(pg, pid, deadline, &cap->r))) {
		cap->soft = 0;
		snprintf(cap->why, sizeof(cap->why), "pagemap: %s", strerror(-err));
	}
	err = 0;
	for (size_t i = 0; i < sc->n; i++) {
		struct vminfo vi;
		char why[256];

		/* Checked again, stopped: it may have closed since the scan. */
		if (vm_at(pid, m, variant, sc->v[i].L, &vi, why, sizeof(why))) {
			if (cap->tries == 1)
				fprintf(stderr, "luamemtrace heap: VM 0x%llx gone: %s\n",
					(unsigned long long)sc->v[i].L, why);
			continue;
		}
		if ((err = heap_copy_in(pid, vi.var, vi.L, deadline, pg, &hs[i])))
			break;
	}
	/* what it writes from here is seen at the next try */
	if (cap->soft && !s->was_stopped && hdirty_clear(pid)) {
		cap->soft = 0;
		snprintf(cap->why, sizeof(cap->why), "clear_refs failed while stopped");
	}
	return err;
}

int heap_capture(pid_t pid, int pidfd, const struct pmaps *m, const struct vmscan *sc,
		 const char *variant, int stopped, struct heap *hs, struct hcapture *cap)
{
	struct hpages pg = { 0 };
	struct hstop s;
	uint64_t t0;
	int err = 0, prio;

	memset(cap, 0, sizeof(*cap));
	if ((err = hstop_init(&s, pid, pidfd)))
		return fail("starting the guardian", -err);
	if (stopped)
		snprintf(cap->why, sizeof(cap->why), "--stopped");
	else if (hdirty_usable(cap->why, sizeof(cap->why))) {
		if ((err = hdirty_clear(pid)))
			snprintf(cap->why, sizeof(cap->why), "clear_refs: %s", strerror(-err));
		else
			cap->soft = 1;
	}
	if (!stopped) {
		t0 = boot_ns();
		copy_running(pid, m, sc, variant, &pg, hs);
		passes(pid, &s, &pg, cap);
		cap->run_ns = boot_ns() - t0;
	}
	/* While it is stopped the target waits for our CPU time: on a busy
	 * host, ours first (the stop is bounded: LMT_HEAP_STOP_MS). */
	errno = 0;
	prio = getpriority(PRIO_PROCESS, 0);
	if (errno || setpriority(PRIO_PROCESS, 0, LMT_HEAP_STOP_NICE))
		prio = INT_MIN;
	for (cap->tries = 1;; cap->tries++) {
		uint64_t ns;
		int expired;

		if ((err = stop_copy(pid, &s, m, sc, variant, &pg, hs, cap)) > 0)
			return err;
		ns = hstop_cont(&s, &expired);
		cap->expired |= expired;
		cap->pause_ns += ns;
		cap->stop_max = ns > cap->stop_max ? ns : cap->stop_max;
		cap->pause_max = ns > cap->pause_max ? ns : cap->pause_max;
		if (err || s.was_stopped || cap->tries >= LMT_HEAP_TRIES || !torn(hs, sc->n))
			break;
		/* it runs on a little (out of what it was inside), then again */
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	if (prio != INT_MIN)
		setpriority(PRIO_PROCESS, 0, prio);
	cap->was_stopped = s.was_stopped;
	hstop_end(&s);
	hpages_free(&pg);
	for (size_t i = 0; i < sc->n; i++) {
		hs[i].pause_ns = cap->pause_max;
		hs[i].stopped_before = s.was_stopped;
		hs[i].pid = (uint32_t)pid;
	}
	return err ? fail("copying the heap", -err) : 0;
}

void heap_capture_say(pid_t pid, const struct hcapture *cap, FILE *f)
{
	char tries[96] = "", pass[200] = "";

	if (cap->was_stopped)
		return; /* the report says it */
	if (cap->tries > 1)
		snprintf(tries, sizeof(tries), " (%d stops, %.1f ms in all: a copy that did not "
			 "add up taken again)", cap->tries,
			 (double)(cap->pause_ns - cap->pass_ns) / 1e6);
	if (cap->passes)
		snprintf(pass, sizeof(pass), "; %d passes read again %llu pages it wrote, "
			 "stopped %.1f ms in all to find them", cap->passes,
			 (unsigned long long)cap->pass_pages, (double)cap->pass_ns / 1e6);
	if (cap->soft)
		fprintf(f, "luamemtrace heap: PID %d: copied while it ran (%.0f ms%s), then "
			"stopped %.1f ms%s: %llu of %llu pages written meanwhile, read again "
			"(%llu reads); longest stop %.1f ms\n",
			(int)pid, (double)cap->run_ns / 1e6, pass, (double)cap->stop_max / 1e6, tries,
			(unsigned long long)cap->r.dirty, (unsigned long long)cap->r.pages,
			(unsigned long long)cap->r.reads, (double)cap->pause_max / 1e6);
	else
		fprintf(f, "luamemtrace heap: PID %d: copied stopped %.1f ms%s: no soft-dirty "
			"bits (%s)%s\n", (int)pid, (double)cap->stop_max / 1e6, tries, cap->why, pass);
}
