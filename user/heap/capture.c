/* Taking a process's snapshot at a bounded pause (heap.h: heap_capture).
 *
 * With soft-dirty bits (dirty.c): the target's bits cleared, its VMs
 * copied while it runs (what is read stays in the block cache, pages.c),
 * passes that read again what it wrote meanwhile, then the stop: the kept
 * pages it wrote since the last pass read again, and the pages it wrote
 * outside them (memory allocated since) read too, each VM checked, the bits
 * cleared. The cache is then the stopped target's image: the target runs
 * on, and the VMs are copied from the image; what the image lacks is read
 * of the running target and checked unwritten since the stop (pages.c's
 * hpages_verify). So the stop lasts the look-up and the re-read, not the
 * walk. A check that fails, or a stop that could not read all in its time,
 * and the copy is made stopped, as without bits. Without them: nothing
 * kept is trusted, the copy is made again stopped, but into memory the
 * running copy sized and touched (our page faults are not the target's
 * wait). --stopped: the whole copy with the target stopped, nothing read
 * before. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

#include "format/exitcode.h"
#include "util/clock.h"
#include "heap/heap.h"
#include "probes/ptscan.h"
#include "util/knobs.h"
#include "target/proc.h"
#include "target/vmscan.h"

/* One snapshot of a process at a time: another's clear_refs would erase
 * the soft-dirty bits this one's passes and check rely on. A lock on
 * LMT_HEAP_LOCK_DIR/heap.PID (root's directory: no one else can hold it);
 * the descriptor held until the capture ends. fd, -EBUSY (another holds
 * it), or -errno (no lock to be had: the capture goes on without). */
static int hold_pid(pid_t pid)
{
	char path[64];
	int fd;

	if (mkdir(LMT_HEAP_LOCK_DIR, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), LMT_HEAP_LOCK_DIR "/heap.%d", (int)pid);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return e;
	}
	return fd;
}

static uint64_t ms_ns(unsigned ms)
{
	return (uint64_t)ms * 1000000;
}

/* A deadline ms from now (boot time, ns). */
static uint64_t ms_on(unsigned ms)
{
	return boot_ns() + ms_ns(ms);
}

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
	uint64_t deadline = ms_on(LMT_HEAP_RUNCOPY_MS);

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

/* The passes (LMT_HEAP_PASSES, LMT_HEAP_PASS_MS): each a short stop to
 * look up the pages written since the last (kept ones, and outside the
 * copy) and clear the bits, the pages found read again while the target
 * runs on. They wait for a quiet moment: they end when one finds few pages
 * (LMT_HEAP_PASS_DONE), so that the final stop, right after, has few to read.
 * A stop that fails or finds the target stopped by someone else ends
 * them: the final stop says it. */
static void passes(pid_t pid, struct hstop *s, struct hpages *pg, struct hcapture *cap)
{
	uint64_t t0 = boot_ns(), end;

	/* the longer of LMT_HEAP_PASS_MS and twice the copy while it ran: a
	 * slower host (or a larger heap) takes longer to read again */
	end = t0 + ms_ns(LMT_HEAP_PASS_MS);
	if (cap->run_ns && t0 + 2 * cap->run_ns > end)
		end = t0 + 2 * cap->run_ns;
	while (cap->soft && cap->passes < LMT_HEAP_PASSES && boot_ns() < end &&
	       cap->pass_ns < ms_ns(LMT_HEAP_PASS_STOPS_MS)) {
		struct hrefresh r;
		struct pmaps m = { 0 };
		uint64_t ns, deadline;
		int err, expired, mok;

		/* its maps before the stop (a mapping made after them is read
		 * at the final stop) */
		mok = !pmaps_load(pid, &m);
		if (hstop_stop(s, pid)) {
			pmaps_free(&m);
			return;
		}
		if (s->was_stopped) {
			hstop_cont(s, &expired);
			return;
		}
		deadline = ms_on(LMT_HEAP_STOP_MS);
		err = hpages_scan(pg, pid, deadline, &r);
		/* memory written outside the copy: read too (not found, it is
		 * at the final stop) */
		if (!err && (!mok || hpages_scan_fresh(pg, pid, &m, deadline, &r)))
			r.fresh = r.fresh_blocks = 0;
		pmaps_free(&m);
		if (!err && (err = hdirty_clear(pid)))
			pg->nrun = pg->nfresh = 0;
		ns = hstop_cont(s, &expired);
		cap->expired |= expired;
		cap->pause_ns += ns;
		cap->pass_ns += ns;
		cap->pause_max = ns > cap->pause_max ? ns : cap->pause_max;
		/* Continued by the guardian before the clear: what it wrote
		 * meanwhile has no bit. The final stop reads all again. */
		if (!err && expired)
			err = -ETIMEDOUT;
		if (err) {
			cap->soft = 0;
			snprintf(cap->why, sizeof(cap->why), "a pass: %s", strerror(-err));
			return;
		}
		hpages_reread(pg, pid, UINT64_MAX, &r);
		hpages_read_fresh(pg, pid, ms_on(LMT_HEAP_RUNCOPY_MS), &r);
		cap->passes++;
		cap->pass_pages += r.dirty + r.fresh;
		if (r.dirty + r.fresh <= LMT_HEAP_PASS_DONE)
			return;
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

/* One stop: the target stopped; with soft-dirty bits, the kept pages it
 * wrote since the last clear read again. Then either (image) the pages it
 * wrote outside them read too, so that the cache is the stopped target's
 * image, and each VM only checked (vi[i], its variant and address; the
 * copy is made from the image once it runs on: copy_image); or every VM
 * copied now. With soft-dirty bits they are cleared again before it runs
 * on. 0, -errno (the copy failed: it is to be continued), or an exit
 * status (not stopped: said). */
static int stop_copy(pid_t pid, struct hstop *s, const struct pmaps *m,
		     const struct vmscan *sc, const char *variant, struct hpages *pg,
		     struct heap *hs, struct vminfo *vi, int *image, struct hcapture *cap)
{
	struct pmaps now = { 0 };
	uint64_t deadline;
	int err, was_image;

	for (size_t i = 0; i < sc->n; i++)
		if (hs[i].var)
			reset(&hs[i]);
	/* its maps before the stop: a mapping made after them is read after
	 * it runs on, and checked */
	if (*image && pmaps_load(pid, &now)) {
		*image = 0;
		snprintf(cap->image_why, sizeof(cap->image_why), "its maps could not be read");
	}
	if ((err = hstop_stop(s, pid))) {
		pmaps_free(&now);
		hpages_free(pg);
		hstop_end(s);
		return fail(err == -ETIMEDOUT ? "the target did not stop in time (continued)"
					      : "stopping the target", -err);
	}
	deadline = ms_on(LMT_HEAP_STOP_MS);
	was_image = *image;
	/* Stopped by someone else: its bits may be someone else's too, and
	 * nothing changes: read again in full, as a stopped copy. */
	if (s->was_stopped || !cap->soft) {
		hpages_recycle(pg); /* nothing kept is known to be unchanged */
		*image = 0;
	} else if ((err = hpages_scan(pg, pid, deadline, &cap->r))) {
		cap->soft = *image = 0;
		snprintf(cap->why, sizeof(cap->why), "pagemap: %s", strerror(-err));
	} else {
		if (*image && (err = hpages_scan_fresh(pg, pid, &now, deadline, &cap->r))) {
			*image = 0; /* what it lacks read stopped */
			snprintf(cap->image_why, sizeof(cap->image_why), "looking up the pages "
				 "written outside the copy: %s", strerror(-err));
		}
		hpages_reread(pg, pid, deadline, &cap->r);
		if (*image)
			hpages_read_fresh(pg, pid, deadline, &cap->r);
		/* what the stop could not read in its time: read after it, it
		 * would not be the stop's */
		if (*image && (cap->r.late || boot_ns() > deadline)) {
			*image = 0;
			snprintf(cap->image_why, sizeof(cap->image_why), "the stop's re-read ended at "
				 "its time cap");
		}
	}
	pmaps_free(&now);
	err = 0;
	for (size_t i = 0; i < sc->n; i++) {
		char why[256];

		/* Checked again, stopped: it may have closed since the scan. */
		vi[i].var = NULL;
		if (vm_at(pid, m, variant, sc->v[i].L, &vi[i], why, sizeof(why))) {
			vi[i].var = NULL;
			if (cap->tries == 1)
				fprintf(stderr, "luamemtrace heap: VM 0x%llx gone: %s\n",
					(unsigned long long)sc->v[i].L, why);
			continue;
		}
		/* An image given up for its time: copied at the next stop,
		 * which has its own (the cache is this stop's, the bits
		 * cleared below) */
		if (!*image && !was_image &&
		    (err = heap_copy_in(pid, vi[i].var, vi[i].L, deadline, pg, &hs[i])))
			break;
	}
	/* what it writes from here is seen at the next try, and by the
	 * check of what a copy from the image reads of it */
	if (cap->soft && !s->was_stopped && hdirty_clear(pid)) {
		cap->soft = *image = 0;
		snprintf(cap->why, sizeof(cap->why), "clear_refs failed while stopped");
	}
	/* nothing copied in this stop: another one, copied stopped */
	if (!err && was_image && !*image)
		return -EAGAIN;
	return err;
}

/* The copy from the stop's image, the target running on: what the image
 * lacks (memory no copy had reached and the target did not write before
 * the stop) is read of the running target and checked unwritten since the
 * stop's clear. 0 (*stale: pages written since: the copy is not of the
 * stop's instant), or -errno. */
static int copy_image(pid_t pid, const struct vmscan *sc, const struct vminfo *vi,
		      struct hpages *pg, struct heap *hs, struct hcapture *cap, uint64_t *stale)
{
	uint64_t t0 = boot_ns(), deadline = t0 + ms_ns(LMT_HEAP_RUNCOPY_MS);
	int err = 0, e;

	pg->frozen = 1;
	for (size_t i = 0; i < sc->n && !err; i++)
		if (vi[i].var)
			err = heap_copy_in(pid, vi[i].var, vi[i].L, deadline, pg, &hs[i]);
	pg->frozen = 0;
	/* a read that failed (the process or the VM gone since the stop):
	 * not the stop's instant, another stop says which */
	if (err == -EIO) {
		err = 0;
		*stale = 1;
	}
	cap->image_reads += pg->nunv;
	if ((e = hpages_verify(pg, pid, stale)) && !err) {
		*stale = 1;
		snprintf(cap->image_why, sizeof(cap->image_why), "checking its reads of the "
			 "running target: %s", strerror(-e));
	}
	cap->image_ns += boot_ns() - t0;
	return err;
}

/* After a copy that did not add up: the target runs on out of what it
 * was inside, for a time drawn at random up to 2^tries ms
 * (LMT_HEAP_RETRY_MS at most): a step that lasts longer than a fixed wait
 * (a sweep, a string table's rehash) is not met again in step. */
static void retry_wait(int tries)
{
	uint64_t cap = ms_ns(LMT_HEAP_RETRY_MS), ns = cap, r;

	if (tries < 16 && ms_ns(1u << tries) < cap)
		ns = ms_ns(1u << tries);
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = boot_ns() * 0x9e3779b97f4a7c15ull;
	ns = ms_ns(1) / 2 + r % ns;
	nanosleep(&(struct timespec){ (time_t)(ns / 1000000000), (long)(ns % 1000000000) },
		  NULL);
}

/* The copy from copy-on-write forks of the target (cow.c): each try a
 * fork (the target stopped as long as it takes); the child's private
 * writable memory read whole while the target runs on (hpages_preload),
 * then the child killed and reaped: the copy is made from what was read,
 * with no process. Where the memory could not all be read (a cap, the
 * time), the copy reads the rest of the child as it goes, and the child
 * lives until it ends. 0 (copied: cap->cow), or -errno having copied
 * nothing, with cap->cow_why (the copy is then made the other way). */
static int cow_capture(pid_t pid, struct hstop *s, const struct vmscan *sc,
		       const char *variant, struct heap *hs, struct hcapture *cap)
{
	int err = 0;

	for (cap->tries = 1;; cap->tries++) {
		struct hpages pg = { 0 };
		struct pmaps cm = { 0 };
		struct vminfo *vi;
		struct hcow c;
		uint64_t t0, deadline, bytes = 0;
		int expired, perr;

		if ((err = hcow_fork(&c, s, pid, &expired))) {
			cap->expired |= expired;
			if (cap->tries == 1) {
				snprintf(cap->cow_why, sizeof(cap->cow_why), "the fork: %s",
					 strerror(-err));
				return err;
			}
			err = 0;
			cap->tries--;
			break; /* the last copy stands, said as it is */
		}
		cap->cow = 1;
		cap->pause_ns += c.fork_ns;
		cap->stop_max = c.fork_ns > cap->stop_max ? c.fork_ns : cap->stop_max;
		t0 = boot_ns();
		deadline = t0 + ms_ns(LMT_HEAP_RUNCOPY_MS);
		if (!(vi = calloc(sc->n ? sc->n : 1, sizeof(*vi))) || pmaps_load(c.child, &cm)) {
			free(vi);
			hcow_end(&c, s, pid);
			if (cap->tries == 1) { /* made the other way */
				cap->cow = 0;
				snprintf(cap->cow_why, sizeof(cap->cow_why), "its maps could not "
					 "be read");
				return -EIO;
			}
			cap->tries--;
			break;
		}
		/* its maps are the target's at the fork */
		for (size_t i = 0; i < sc->n; i++) {
			char why[256];

			if (vm_at(c.child, &cm, variant, sc->v[i].L, &vi[i], why, sizeof(why))) {
				vi[i].var = NULL;
				if (cap->tries == 1)
					fprintf(stderr, "luamemtrace heap: VM 0x%llx gone: %s\n",
						(unsigned long long)sc->v[i].L, why);
			}
		}
		perr = hpages_preload(&pg, c.child, &cm, deadline, &bytes);
		pmaps_free(&cm);
		cap->cow_bytes = bytes;
		if (!perr) { /* all read: the child goes now */
			hcow_end(&c, s, pid);
			cap->cow_ns = boot_ns() - t0;
			cap->cow_why[0] = 0;
		} else {
			snprintf(cap->cow_why, sizeof(cap->cow_why), "reading it whole: %s; the "
				 "rest read as the copy went", strerror(-perr));
		}
		/* the last copy dropped only now, this one sure to be made;
		 * the walk has its own time (a read whole that took it all
		 * would leave it none) */
		deadline = ms_on(LMT_HEAP_RUNCOPY_MS);
		for (size_t i = 0; i < sc->n; i++)
			if (hs[i].var)
				reset(&hs[i]);
		for (size_t i = 0; i < sc->n && !err; i++) {
			hs[i].var = NULL;
			if (vi[i].var)
				err = heap_copy_in(c.child, vi[i].var, vi[i].L, deadline, &pg, &hs[i]);
		}
		free(vi);
		hpages_free(&pg);
		if (perr) {
			hcow_end(&c, s, pid);
			cap->cow_ns = boot_ns() - t0;
		}
		cap->pause_ns += c.reap_ns;
		cap->reap_max = c.reap_ns > cap->reap_max ? c.reap_ns : cap->reap_max;
		cap->unreaped |= c.unreaped;
		if (err || !(cap->torn = torn(hs, sc->n)) || cap->tries >= LMT_HEAP_TRIES ||
		    c.unreaped)
			break;
		retry_wait(cap->tries);
	}
	cap->pause_max = cap->stop_max > cap->reap_max ? cap->stop_max : cap->reap_max;
	for (size_t i = 0; i < sc->n; i++) {
		hs[i].pause_ns = cap->pause_max;
		hs[i].pid = (uint32_t)pid;
	}
	return err ? fail("copying the heap", -err) : 0;
}

/* The capture under the guardian s (ended here, whatever happens). */
static int capture(pid_t pid, struct hstop *s, const struct pmaps *m, const struct vmscan *sc,
		   const char *variant, int stopped, int nofork, struct heap *hs,
		   struct hcapture *cap)
{
	struct hpages pg = { 0 };
	struct vminfo *vi;
	uint64_t t0;
	int err = 0, prio, image;

	/* A fork's copy first, where it may be made: the target stopped
	 * for the fork alone. */
	if (!stopped && !nofork && !hcow_usable(pid, cap->cow_why, sizeof(cap->cow_why)) &&
	    (err = cow_capture(pid, s, sc, variant, hs, cap)) >= 0) {
		hstop_end(s);
		return err;
	}
	if (stopped || nofork)
		cap->cow_why[0] = 0; /* asked for: not said */
	err = 0;
	if (stopped)
		snprintf(cap->why, sizeof(cap->why), "--stopped");
	else if (hdirty_usable(cap->why, sizeof(cap->why))) {
		if ((err = hdirty_clear(pid)))
			snprintf(cap->why, sizeof(cap->why), "clear_refs: %s", strerror(-err));
		else
			cap->soft = 1;
	}
	/* pagemap calls a mapping that is new or grew written whole: the
	 * pages' own entries tell (probes/ptscan.h) */
	if (cap->soft && knobs.no_ptscan)
		snprintf(cap->own_why, sizeof(cap->own_why), "LMT_NO_PTSCAN=1");
	else if (cap->soft && !(pg.pt = ptscan_open(pid, cap->own_why, sizeof(cap->own_why))) &&
		 !cap->own_why[0])
		snprintf(cap->own_why, sizeof(cap->own_why), "not opened");
	if (!stopped) {
		t0 = boot_ns();
		copy_running(pid, m, sc, variant, &pg, hs);
		cap->run_ns = boot_ns() - t0;
		passes(pid, s, &pg, cap);
		cap->run_ns = boot_ns() - t0;
	}
	/* While it is stopped the target waits for our CPU time: on a busy
	 * host, ours first (the stop is bounded: LMT_HEAP_STOP_MS). */
	errno = 0;
	prio = getpriority(PRIO_PROCESS, 0);
	if (errno || setpriority(PRIO_PROCESS, 0, LMT_HEAP_STOP_NICE))
		prio = INT_MIN;
	if (!(vi = calloc(sc->n ? sc->n : 1, sizeof(*vi)))) {
		hpages_free(&pg);
		hstop_end(s);
		return fail("copying the heap", ENOMEM);
	}
	image = cap->soft;
	for (cap->tries = 1;; cap->tries++) {
		uint64_t ns, stale = 0;
		int expired;

		cap->torn = 0;
		if ((err = stop_copy(pid, s, m, sc, variant, &pg, hs, vi, &image, cap)) > 0) {
			free(vi);
			if (prio != INT_MIN)
				setpriority(PRIO_PROCESS, 0, prio);
			return err;
		}
		ns = hstop_cont(s, &expired);
		cap->expired |= expired;
		cap->pause_ns += ns;
		cap->stop_max = ns > cap->stop_max ? ns : cap->stop_max;
		cap->pause_max = ns > cap->pause_max ? ns : cap->pause_max;
		/* Continued by the guardian before the clear: what it wrote
		 * meanwhile has no bit, nothing kept is trusted from here. An
		 * image is given up: another stop, a full copy stopped. */
		if (expired && cap->soft) {
			cap->soft = 0;
			snprintf(cap->why, sizeof(cap->why), "the guardian continued the target "
				 "during a stop");
		}
		if (!err && image && expired) {
			image = 0;
			snprintf(cap->image_why, sizeof(cap->image_why), "the guardian continued "
				 "the target first");
			continue;
		}
		if (err == -EAGAIN) { /* an image given up in its stop */
			err = 0;
			continue;
		}
		if (!err && image)
			err = copy_image(pid, sc, vi, &pg, hs, cap, &stale);
		cap->image = image && !stale;
		if (err || s->was_stopped)
			break;
		/* Read of it after the stop, and written since: again. The
		 * blocks read so are kept now, and read again at the next stop
		 * if written; after LMT_HEAP_IMAGE_TRIES, copied stopped. */
		if (stale) {
			cap->image_stale += stale;
			image = ++cap->image_tries < LMT_HEAP_IMAGE_TRIES;
			continue;
		}
		if (!(cap->torn = torn(hs, sc->n)) || cap->tries >= LMT_HEAP_TRIES ||
		    cap->pause_ns - cap->pass_ns >= ms_ns(LMT_HEAP_TRIES_MS))
			break;
		retry_wait(cap->tries);
	}
	free(vi);
	if (prio != INT_MIN)
		setpriority(PRIO_PROCESS, 0, prio);
	cap->was_stopped = s->was_stopped;
	cap->own_cleared = pg.pt_cleared;
	if (pg.pt && ptscan_why(pg.pt)[0])
		snprintf(cap->own_why, sizeof(cap->own_why), "%s", ptscan_why(pg.pt));
	hstop_end(s);
	hpages_free(&pg);
	for (size_t i = 0; i < sc->n; i++) {
		hs[i].pause_ns = cap->pause_max;
		hs[i].stopped_before = s->was_stopped;
		hs[i].pid = (uint32_t)pid;
	}
	return err ? fail("copying the heap", -err) : 0;
}

int heap_capture(pid_t pid, int pidfd, const struct pmaps *m, const struct vmscan *sc,
		 const char *variant, int how, struct heap *hs, struct hcapture *cap)
{
	struct hstop s;
	int lock, rc;

	memset(cap, 0, sizeof(*cap));
	if ((rc = hstop_init(&s, pid, pidfd)))
		return fail("starting the guardian", -rc);
	/* taken once the guardian is forked: it never holds the lock (a
	 * guardian not yet run when we exit would keep the next one out) */
	lock = hold_pid(pid);
	if (lock == -EBUSY) {
		hstop_end(&s);
		fprintf(stderr, "luamemtrace heap: PID %d: another luamemtrace heap is copying "
			"it; one at a time\n", (int)pid);
		return LMT_ERR;
	}
	rc = capture(pid, &s, m, sc, variant, how & HCAP_STOPPED, how & HCAP_NO_FORK, hs, cap);
	if (lock >= 0)
		close(lock);
	return rc;
}

void heap_capture_say(pid_t pid, const struct hcapture *cap, FILE *f)
{
	char tries[224] = "", pass[200] = "", after[300] = "", own[224] = "";

	if (cap->was_stopped)
		return; /* the report says it */
	if (cap->cow) {
		if (cap->tries > 1)
			snprintf(tries, sizeof(tries), " (%d forks: %s)", cap->tries,
				 cap->torn ? "none added up, each met the VM inside an allocation "
					     "or a sweep step: the report's remainder and "
					     "incomplete lines say by how much"
					   : "a copy that did not add up taken again");
		if (cap->cow_why[0])
			snprintf(own, sizeof(own), " (%s)", cap->cow_why);
		fprintf(f, "luamemtrace heap: PID %d: stopped %.1f ms to fork a copy-on-write "
			"copy of it%s, read %.1f MB of the copy in %.0f ms as it ran on%s, then "
			"stopped %.1f ms to reap the copy%s; longest stop %.1f ms\n", (int)pid,
			(double)cap->stop_max / 1e6, tries, (double)cap->cow_bytes / (1 << 20),
			(double)cap->cow_ns / 1e6, own, (double)cap->reap_max / 1e6,
			cap->unreaped ? " (not reaped: left to the guardian)" : "",
			(double)cap->pause_max / 1e6);
		return;
	}
	if (cap->cow_why[0])
		fprintf(f, "luamemtrace heap: PID %d: not forked for a copy-on-write copy: %s\n",
			(int)pid, cap->cow_why);
	if (cap->torn)
		snprintf(tries, sizeof(tries), " (%d stop%s, %.1f ms in all: no copy added up, "
			 "each met the VM inside an allocation or a sweep step: the report's "
			 "remainder and incomplete lines say by how much)",
			 cap->tries, cap->tries > 1 ? "s" : "",
			 (double)(cap->pause_ns - cap->pass_ns) / 1e6);
	else if (cap->tries > 1)
		snprintf(tries, sizeof(tries), " (%d stops, %.1f ms in all: a copy that did not "
			 "add up taken again)", cap->tries,
			 (double)(cap->pause_ns - cap->pass_ns) / 1e6);
	if (cap->passes)
		snprintf(pass, sizeof(pass), "; %d passes read again %llu pages it wrote, "
			 "stopped %.1f ms in all to find them", cap->passes,
			 (unsigned long long)cap->pass_pages, (double)cap->pass_ns / 1e6);
	if (cap->image)
		snprintf(after, sizeof(after), "; copied from that image as it ran on (%.0f ms, "
			 "%llu reads of it checked unwritten since)", (double)cap->image_ns / 1e6,
			 (unsigned long long)cap->image_reads);
	else if (cap->image_stale)
		snprintf(after, sizeof(after), "; the copies from the image read %llu pages "
			 "written since: copied stopped", (unsigned long long)cap->image_stale);
	if (cap->image && cap->image_stale)
		snprintf(after + strlen(after), sizeof(after) - strlen(after), " (%llu pages "
			 "written since an earlier stop: taken again)",
			 (unsigned long long)cap->image_stale);
	else if (cap->image_why[0])
		snprintf(after, sizeof(after), "; copied stopped (%s)", cap->image_why);
	if (cap->own_why[0])
		snprintf(own, sizeof(own), " (pagemap's word alone: %s)", cap->own_why);
	else if (cap->own_cleared)
		snprintf(own, sizeof(own), " (%llu pages pagemap called written, of mappings new "
			 "or grown, unwritten by their own entries)",
			 (unsigned long long)cap->own_cleared);
	if (cap->soft)
		fprintf(f, "luamemtrace heap: PID %d: copied while it ran (%.0f ms%s), then "
			"stopped %.1f ms%s%s: %llu of %llu pages written meanwhile, read again, "
			"and %llu outside the copy (%llu reads)%s; longest stop %.1f ms\n",
			(int)pid, (double)cap->run_ns / 1e6, pass, (double)cap->stop_max / 1e6, tries, own,
			(unsigned long long)cap->r.dirty, (unsigned long long)cap->r.pages,
			(unsigned long long)cap->r.fresh, (unsigned long long)cap->r.reads, after,
			(double)cap->pause_max / 1e6);
	else
		fprintf(f, "luamemtrace heap: PID %d: copied stopped %.1f ms%s: no soft-dirty "
			"bits (%s)%s\n", (int)pid, (double)cap->stop_max / 1e6, tries, cap->why, pass);
}
