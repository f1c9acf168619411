/* Reads of the target through a cache of blocks (heap.h): objects lie
 * close together, so most of a copy's reads cost no system call. A cache
 * filled while the target ran is made that of the stopped target by
 * re-reading the pages it wrote meanwhile (hpages_scan, hpages_reread,
 * dirty.c) and reading those it wrote outside it (hpages_scan_fresh,
 * hpages_read_fresh); a copy made from it after the target runs on notes
 * what it reads of the target, checked by hpages_verify. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/clock.h"
#include "heap/heap.h"
#include "probes/ptscan.h"
#include "target/proc.h"

struct block {
	uint32_t start; /* bytes before what was read (a mapping may start
			 * inside the block) */
	uint32_t valid; /* read up to here (a mapping may end) */
	uint8_t d[HPAGES_BLOCK];
};

static void free_block(void *b)
{
	free(b);
}

/* Notes [addr, addr + len) read of the target after a frozen stop
 * (hpages_verify). Past the list's room (LMT_HEAP_UNVERIFIED) the note
 * cannot be kept: unv_over is set and hpages_verify says not known. */
static void note(struct hpages *c, uint64_t addr, size_t len)
{
	if (!c->frozen || !len)
		return;
	if (c->nunv == c->capunv) {
		size_t m = c->capunv ? 2 * c->capunv : 1024;
		struct hrun *v = m <= LMT_HEAP_UNVERIFIED ? realloc(c->unv, m * sizeof(*v)) : NULL;

		if (!v) {
			c->unv_over = 1;
			return;
		}
		c->unv = v;
		c->capunv = m;
	}
	c->unv[c->nunv++] = (struct hrun){ addr, (uint32_t)(len < UINT32_MAX ? len : UINT32_MAX) };
	if (len >= UINT32_MAX)
		c->unv_over = 1;
}

/* A read the cache does not serve. */
static int direct(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	int e = proc_read(pid, addr, buf, len);

	c->direct++;
	if (!e) /* what failed gave the copy nothing to check */
		note(c, addr, len);
	return e;
}

/* A read no one block serves, put together from the blocks and the
 * pages kept apart (hpages_preload's side pages: those a block that met a
 * hole does not hold), page by page; else read of the target. */
static int assemble(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	uint64_t a = addr;
	size_t left = len;

	if (!c->side.n)
		return direct(c, pid, addr, buf, len);
	while (left) {
		uint64_t pg = a & ~(uint64_t)(HPAGES_SIDE - 1), base = a & ~(uint64_t)(HPAGES_BLOCK - 1);
		size_t k = HPAGES_SIDE - (a - pg) < left ? HPAGES_SIDE - (a - pg) : left;
		const struct block *b = u64map_get(&c->m, base + 1);
		const uint8_t *sp;

		if (b && a - base >= b->start && a - base + k <= b->valid)
			memcpy(out, b->d + (a - base), k);
		else if ((sp = u64map_get(&c->side, pg + 1)))
			memcpy(out, sp + (a - pg), k);
		else
			return direct(c, pid, addr, buf, len);
		out += k;
		a += k;
		left -= k;
	}
	return 0;
}

int hpages_read(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	uint64_t a = addr;
	size_t left = len;

	if (addr > UINT64_MAX - len)
		return direct(c, pid, addr, buf, len);
	while (left) {
		uint64_t base = a & ~(uint64_t)(HPAGES_BLOCK - 1), off = a - base;
		size_t k = HPAGES_BLOCK - off < left ? HPAGES_BLOCK - off : left;
		struct block *b = u64map_get(&c->m, base + 1);

		if (!b) {
			ssize_t n;
			int err;

			if (c->bytes + sizeof(*b) > (c->allow ? c->allow : LMT_HEAP_COPY_MAX))
				return direct(c, pid, addr, buf, len);
			if (c->spare) {
				b = c->spare[--c->nspare];
				if (!c->nspare) {
					free(c->spare);
					c->spare = NULL;
				}
			} else if (!(b = malloc(sizeof(*b)))) {
				return direct(c, pid, addr, buf, len);
			}
			b->start = 0;
			n = proc_read_some(pid, base, b->d, HPAGES_BLOCK);
			if (n <= 0) { /* the block from a's page, if it is there */
				b->start = (uint32_t)(off & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1));
				n = proc_read_some(pid, base + b->start, b->d + b->start,
						   HPAGES_BLOCK - b->start);
			}
			if (n <= 0) { /* nothing there: not kept (nor refreshed) */
				free(b);
				return direct(c, pid, addr, buf, len);
			}
			b->valid = b->start + (uint32_t)n;
			u64map_put(&c->m, base + 1, b, &err);
			if (err) {
				free(b);
				return direct(c, pid, addr, buf, len);
			}
			note(c, base + b->start, (size_t)n);
			c->bytes += sizeof(*b);
			c->reads++;
		}
		/* Not all of it cached (its block starts or ends in unmapped
		 * memory): read as asked. */
		if (off < b->start || off + k > b->valid)
			return assemble(c, pid, addr, buf, len);
		memcpy(out, b->d + off, k);
		out += k;
		a += k;
		left -= k;
	}
	return 0;
}

ssize_t hpages_read_some(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint64_t base = addr & ~(uint64_t)(HPAGES_BLOCK - 1), off = addr - base;
	const struct block *b;
	ssize_t n;

	if (!hpages_read(c, pid, addr, buf, len))
		return (ssize_t)len;
	/* what its block holds of it, if it starts there (a block ends
	 * where its mapping does): the cache's, not read again */
	b = u64map_get(&c->m, base + 1);
	if (b && off >= b->start && off < b->valid) {
		n = (ssize_t)(b->valid - off < len ? b->valid - off : len);
		memcpy(buf, b->d + off, (size_t)n);
		return n;
	}
	n = proc_read_some(pid, addr, buf, len);
	if (n > 0)
		note(c, addr, (size_t)n);
	return n;
}

void hpages_allow(struct hpages *c, uint64_t gc_total)
{
	uint64_t more = gc_total < LMT_HEAP_COPY_MAX ? 2 * gc_total + (16u << 20) : LMT_HEAP_COPY_MAX;

	c->allow = c->allow + more < LMT_HEAP_COPY_MAX ? c->allow + more : LMT_HEAP_COPY_MAX;
}

void hpages_spare(struct hpages *c, size_t n)
{
	void **v;

	if (c->spare || !n || !(v = malloc(n * sizeof(*v))))
		return;
	c->spare = v;
	for (c->nspare = 0; c->nspare < n; c->nspare++) {
		struct block *b = malloc(sizeof(*b));

		if (!b)
			break;
		memset(b, 0, sizeof(*b)); /* touched now */
		c->spare[c->nspare] = b;
	}
	if (!c->nspare) {
		free(c->spare);
		c->spare = NULL;
	}
	u64map_reserve(&c->m, n);
}

void hpages_recycle(struct hpages *c)
{
	void **v = c->m.n ? realloc(c->spare, (c->nspare + c->m.n) * sizeof(*v)) : NULL;

	if (!v) { /* all dropped; the scan of its entries kept */
		struct ptscan *pt = c->pt;
		uint64_t cleared = c->pt_cleared;

		c->pt = NULL;
		hpages_free(c);
		c->pt = pt;
		c->pt_cleared = cleared;
		return;
	}
	c->spare = v;
	for (size_t i = 0; i < c->m.cap; i++)
		if (c->m.k[i] && c->m.v[i]) {
			c->spare[c->nspare++] = c->m.v[i];
			c->m.v[i] = NULL;
		}
	memset(c->m.k, 0, c->m.cap * sizeof(*c->m.k));
	c->m.n = c->m.dead = 0;
	c->bytes = 0;
}

void hpages_free(struct hpages *c)
{
	while (c->nspare)
		free(c->spare[--c->nspare]);
	free(c->spare);
	u64map_free(&c->m, free_block);
	u64map_free(&c->side, free_block);
	free(c->run);
	free(c->fresh);
	free(c->unv);
	ptscan_close(c->pt);
	memset(c, 0, sizeof(*c));
}

/* -- Re-reading what changed ------------------------------------------------- */

static int by_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Drops block key (its address + 1) from the cache: read again when asked. */
static void drop(struct hpages *c, uint64_t key)
{
	struct block *b = u64map_del(&c->m, key);

	if (b) {
		free(b);
		c->bytes -= sizeof(*b);
	}
}

/* Kept pages the target wrote since hdirty_clear, as runs of adjacent
 * pages within a block (c->run). */
int hpages_scan(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t n = 0, per;
	uint64_t *keys;
	uint8_t *dirty;
	int pm, e = 0;

	memset(r, 0, sizeof(*r));
	c->nrun = 0;
	if (ps <= 0 || HPAGES_BLOCK % (unsigned long)ps)
		return -EINVAL;
	per = HPAGES_BLOCK / (size_t)ps;
	if (!c->m.n)
		return 0;
	if ((pm = hdirty_open(pid)) < 0)
		return pm;
	keys = malloc(c->m.n * sizeof(*keys));
	dirty = malloc(HREFRESH_RUN * per);
	if (!keys || !dirty) {
		e = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < c->m.cap; i++)
		if (c->m.k[i] && c->m.v[i] && n < c->m.n)
			keys[n++] = c->m.k[i];
	qsort(keys, n, sizeof(*keys), by_addr);
	r->blocks = n;
	/* Runs of adjacent blocks, HREFRESH_RUN at most: one pagemap read each. */
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && j - i < HREFRESH_RUN &&
				keys[j] == keys[j - 1] + HPAGES_BLOCK; j++)
			;
		if (boot_ns() > deadline) {
			e = -ETIMEDOUT;
			goto out;
		}
		/* entries not there (the mapping gone since): read again */
		if (hdirty_pages(pm, c->pt, &c->pt_cleared, keys[i] - 1, (j - i) * per, dirty)) {
			for (size_t k = i; k < j; k++)
				drop(c, keys[k]);
			r->dropped += j - i;
			continue;
		}
		for (size_t k = i; k < j; k++) {
			uint8_t *d = dirty + (k - i) * per;
			const struct block *b = u64map_get(&c->m, keys[k]);

			/* its pages outside what was read: not its (unmapped) */
			for (size_t p = 0; p < per; p++)
				if (p * (size_t)ps < b->start || p * (size_t)ps >= b->valid)
					d[p] = 0;
			r->pages += per;
			for (size_t p = 0; p < per; p++) {
				size_t q = p;

				if (!d[p])
					continue;
				while (q + 1 < per && d[q + 1])
					q++;
				r->dirty += q - p + 1;
				if (c->nrun == c->caprun) {
					size_t m = c->caprun ? 2 * c->caprun : 4096;
					struct hrun *v = realloc(c->run, m * sizeof(*v));

					if (!v) {
						e = -ENOMEM;
						goto out;
					}
					c->run = v;
					c->caprun = m;
				}
				c->run[c->nrun++] = (struct hrun){ keys[k] - 1 + p * (uint64_t)ps,
								   (uint32_t)((q - p + 1) * (size_t)ps) };
				p = q;
			}
		}
	}
out:
	/* Not all looked at: nothing kept is trusted, all read again. */
	if (e) {
		u64map_free(&c->m, free_block);
		c->bytes = 0;
		c->nrun = 0;
	}
	free(keys);
	free(dirty);
	close(pm);
	return e;
}

/* The part of run u its block holds (a block may end short: valid). */
static struct block *run_block(struct hpages *c, const struct hrun *u, size_t *len)
{
	uint64_t base = u->addr & ~(uint64_t)(HPAGES_BLOCK - 1), off = u->addr - base;
	struct block *b = u64map_get(&c->m, base + 1);

	*len = 0;
	if (b && off >= b->start && off < b->valid)
		*len = u->len < b->valid - off ? u->len : b->valid - off;
	return b;
}

void hpages_reread(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r)
{
	struct iovec iov[HREREAD_IOV];

	/* Runs in address order, each touching the next in the target: one
	 * read of at most HREREAD_IOV of them. */
	for (size_t i = 0, j; i < c->nrun; i = j) {
		uint64_t want = 0;
		ssize_t got;
		int n = 0;

		/* past the deadline: the blocks of the runs left are dropped
		 * (what is kept is the target's as of the look-up, or nothing) */
		if (boot_ns() > deadline) {
			for (j = i; j < c->nrun; j++) {
				uint64_t key = (c->run[j].addr & ~(uint64_t)(HPAGES_BLOCK - 1)) + 1;

				r->late += !!u64map_get(&c->m, key);
				drop(c, key);
			}
			break;
		}

		for (j = i; j < c->nrun && n < HREREAD_IOV; j++) {
			const struct hrun *u = &c->run[j];
			struct block *b;
			size_t len;

			if (j > i && u->addr != c->run[j - 1].addr + c->run[j - 1].len)
				break;
			b = run_block(c, u, &len);
			if (!b || len != u->len) {
				if (j == i)
					j++; /* alone, below */
				break;
			}
			iov[n++] = (struct iovec){ b->d + (u->addr & (HPAGES_BLOCK - 1)), len };
			want += len;
		}
		r->reads++;
		got = n ? proc_readv(pid, c->run[i].addr, iov, n) : -EFAULT;
		if (got == (ssize_t)want)
			continue;
		/* Not all of it read: each run of it alone, a block that
		 * cannot be read dropped (read again as the copy asks). */
		for (size_t k = i; k < j; k++) {
			const struct hrun *u = &c->run[k];
			size_t len;
			struct block *b = run_block(c, u, &len);

			if (!b)
				continue;
			r->reads++;
			if (!len || proc_read(pid, u->addr, b->d + (u->addr & (HPAGES_BLOCK - 1)), len))
				drop(c, (u->addr & ~(uint64_t)(HPAGES_BLOCK - 1)) + 1);
		}
	}
	c->nrun = 0;
}

int hpages_refresh(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r)
{
	int e = hpages_scan(c, pid, deadline, r);

	if (!e)
		hpages_reread(c, pid, deadline, r);
	return e;
}

/* -- Pages written outside the kept blocks ----------------------------------- */

/* May the VM's objects lie in mapping p: private and writable, not the
 * main thread's stack nor the kernel's pages ([vvar], [vsyscall]). */
static int writable(const struct pmap *p)
{
	return p->perms[1] == 'w' && p->perms[3] == 'p' && p->hi > p->lo &&
	       strcmp(p->path, "[stack]") && strncmp(p->path, "[v", 2);
}

/* Are the writable mappings of m more pages than may be looked up
 * (LMT_HEAP_FRESH_SCAN_PAGES)? */
static int over_scan(const struct pmaps *m, long ps)
{
	uint64_t total = 0;

	for (size_t i = 0; i < m->n; i++)
		if (writable(&m->v[i]) &&
		    (total += (m->v[i].hi - m->v[i].lo) / (uint64_t)ps) > LMT_HEAP_FRESH_SCAN_PAGES)
			return 1;
	return 0;
}

/* Notes page pa (c->fresh). */
static int page_add(struct hpages *c, uint64_t pa)
{
	if (c->nfresh == c->capfresh) {
		size_t m = c->capfresh ? 2 * c->capfresh : 1024;
		uint64_t *v = realloc(c->fresh, m * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->fresh = v;
		c->capfresh = m;
	}
	c->fresh[c->nfresh++] = pa;
	return 0;
}

/* Notes page pa, unless the last noted is in its block. */
static int fresh_add(struct hpages *c, uint64_t pa)
{
	uint64_t mask = ~(uint64_t)(HPAGES_BLOCK - 1);

	if (c->nfresh && (c->fresh[c->nfresh - 1] & mask) == (pa & mask))
		return 0;
	return page_add(c, pa);
}

/* Calls fn(ctx, a, n) for the writable mappings of m in pieces of at
 * most per pages from a (one pagemap read each), until one returns
 * non-zero (returned). */
static int each_piece(const struct pmaps *m, long ps, size_t per,
		      int (*fn)(void *ctx, uint64_t a, size_t n), void *ctx)
{
	int e = 0;

	for (size_t i = 0; i < m->n && !e; i++) {
		const struct pmap *p = &m->v[i];

		if (!writable(p))
			continue;
		for (uint64_t a = p->lo; a < p->hi && !e; a += per * (uint64_t)ps)
			e = fn(ctx, a, (p->hi - a) / (uint64_t)ps < per ?
					       (size_t)((p->hi - a) / (uint64_t)ps) : per);
	}
	return e;
}

/* Before each_piece over m: c's list of pages emptied, the page size
 * and pages a piece (*ps, *per), bounded before a pagemap read (what may
 * be looked up), pid's pagemap opened: its descriptor, or -errno. */
static int pieces_open(struct hpages *c, pid_t pid, const struct pmaps *m, long *ps,
		       size_t *per)
{
	*ps = sysconf(_SC_PAGESIZE);
	*per = *ps > 0 ? HFRESH_SCAN / (size_t)*ps : 0;
	c->nfresh = 0;
	if (!*per)
		return -EINVAL;
	if (over_scan(m, *ps))
		return -E2BIG;
	return hdirty_open(pid);
}

/* hpages_scan_fresh's piece: its pages written outside the kept blocks. */
struct fresh_ctx {
	struct hpages *c;
	struct hrefresh *r;
	uint8_t *w;
	int pm;
	long ps;
	uint64_t deadline;
};

static int fresh_piece(void *ctx, uint64_t a, size_t n)
{
	struct fresh_ctx *f = ctx;
	struct hpages *c = f->c;
	int e;

	if (boot_ns() > f->deadline)
		return -ETIMEDOUT;
	if ((e = hdirty_written(f->pm, c->pt, &c->pt_cleared, a, n, f->w)))
		return e;
	for (size_t k = 0; k < n && !e; k++) {
		uint64_t pa = a + k * (uint64_t)f->ps, base = pa & ~(uint64_t)(HPAGES_BLOCK - 1);
		const struct block *b;

		if (!f->w[k])
			continue;
		/* kept, and the page among what was read: hpages_scan's */
		b = u64map_get(&c->m, base + 1);
		if (b && pa - base >= b->start && pa - base < b->valid)
			continue;
		f->r->fresh++;
		e = fresh_add(c, pa);
	}
	return e;
}

int hpages_scan_fresh(struct hpages *c, pid_t pid, const struct pmaps *m, uint64_t deadline,
		      struct hrefresh *r)
{
	long ps;
	size_t per;
	uint8_t *w = NULL;
	int pm, e = 0;

	if ((pm = pieces_open(c, pid, m, &ps, &per)) < 0)
		return pm;
	if (!(w = malloc(per))) {
		e = -ENOMEM;
		goto out;
	}
	{
		struct fresh_ctx f = { c, r, w, pm, ps, deadline };

		e = each_piece(m, ps, per, fresh_piece, &f);
	}
out:
	if (e)
		c->nfresh = 0;
	r->fresh_blocks = c->nfresh;
	free(w);
	close(pm);
	return e;
}

void hpages_read_fresh(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r)
{
	uint64_t share = (c->allow ? c->allow : LMT_HEAP_COPY_MAX) / LMT_HEAP_FRESH_SHARE;
	uint8_t one;

	/* hpages_read keeps each block whole, as a copy's miss would; a
	 * kept block that did not reach the page (a mapping made or grown
	 * next to it since) read again */
	for (size_t i = 0; i < c->nfresh && boot_ns() <= deadline; i++) {
		uint64_t base = c->fresh[i] & ~(uint64_t)(HPAGES_BLOCK - 1);
		int kept = !!u64map_get(&c->m, base + 1);

		if (!kept && c->fresh_bytes + sizeof(struct block) > share) {
			r->fresh_over += c->nfresh - i;
			break;
		}
		drop(c, base + 1);
		if (hpages_read(c, pid, c->fresh[i], &one, 1) == 0) {
			r->reads++;
			if (!kept)
				c->fresh_bytes += sizeof(struct block);
		}
	}
	c->nfresh = 0;
}

/* -- A whole image ------------------------------------------------------------ */

/* hpages_preload's piece: the pages it has, noted. */
struct present_ctx {
	struct hpages *c;
	uint64_t *e;
	int pm;
	long ps;
};

static int present_piece(void *ctx, uint64_t a, size_t n)
{
	struct present_ctx *pc = ctx;
	ssize_t got = pread(pc->pm, pc->e, n * sizeof(*pc->e),
			    (off_t)(a / (uint64_t)pc->ps * sizeof(*pc->e)));
	int err = 0;

	if (got != (ssize_t)(n * sizeof(*pc->e)))
		return got < 0 ? -errno : -EIO;
	for (size_t k = 0; k < n && !err; k++)
		if (pc->e[k] >> 62)
			err = page_add(pc->c, a + k * (uint64_t)pc->ps);
	return err;
}

int hpages_preload(struct hpages *c, pid_t pid, const struct pmaps *m, uint64_t deadline,
		   uint64_t *bytes)
{
	long ps;
	size_t per;
	uint64_t *e = NULL;
	int pm, err = 0;
	uint8_t one;

	*bytes = 0;
	if ((pm = pieces_open(c, pid, m, &ps, &per)) < 0)
		return pm;
	if (!(e = malloc(per * sizeof(*e)))) {
		close(pm);
		return -ENOMEM;
	}
	/* the pages it has (present or swapped): what it never touched is
	 * not read */
	{
		struct present_ctx pc = { c, e, pm, ps };

		err = each_piece(m, ps, per, present_piece, &pc);
	}
	free(e);
	close(pm);
	for (size_t i = 0; i < c->nfresh && !err; i++) {
		uint64_t pa = c->fresh[i], base = pa & ~(uint64_t)(HPAGES_BLOCK - 1);
		const struct block *b = u64map_get(&c->m, base + 1);
		uint8_t *sp;

		if (boot_ns() > deadline) {
			err = -ETIMEDOUT;
			break;
		}
		if (c->bytes + HPAGES_BLOCK > (c->allow ? c->allow : LMT_HEAP_COPY_MAX)) {
			err = -E2BIG;
			break;
		}
		/* a block that starts or ends in unmapped memory is kept from
		 * the page on (hpages_read) */
		if (!b && hpages_read(c, pid, pa, &one, 1) == 0 &&
		    (b = u64map_get(&c->m, base + 1)))
			*bytes += b->valid - b->start;
		/* a page the block does not hold (a hole between it and the
		 * block's start): kept apart, whole */
		if (b && pa - base >= b->start && pa - base + HPAGES_SIDE <= b->valid)
			continue;
		if (u64map_get(&c->side, pa + 1) || !(sp = malloc(HPAGES_SIDE)))
			continue;
		if (proc_read(pid, pa, sp, HPAGES_SIDE) || (u64map_put(&c->side, pa + 1, sp, &err), err)) {
			free(sp);
			err = 0;
			continue;
		}
		c->bytes += HPAGES_SIDE;
		*bytes += HPAGES_SIDE;
	}
	c->nfresh = 0;
	return err;
}

int hpages_verify(struct hpages *c, pid_t pid, uint64_t *stale)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint8_t d[HPAGES_BLOCK / 512];
	int pm, e = 0;

	*stale = 0;
	if (c->unv_over) {
		e = -E2BIG;
		goto out;
	}
	if (ps <= 0 || (size_t)ps < 512) {
		e = -EINVAL;
		goto out;
	}
	if (!c->nunv)
		goto out;
	if ((pm = hdirty_open(pid)) < 0) {
		e = pm;
		goto out;
	}
	for (size_t i = 0; i < c->nunv && !e; i++) {
		uint64_t lo = c->unv[i].addr & ~(uint64_t)(ps - 1);
		uint64_t hi = c->unv[i].addr + c->unv[i].len;

		if (hi < lo) { /* wrapped: no such read succeeds */
			e = -EINVAL;
			break;
		}
		/* page by page, at most a block's worth of entries a read */
		while (lo < hi && !e) {
			size_t n = (hi - lo + (uint64_t)ps - 1) / (uint64_t)ps;

			n = n < sizeof(d) ? n : sizeof(d);
			if ((e = hdirty_pages(pm, c->pt, &c->pt_cleared, lo, n, d)))
				break;
			for (size_t k = 0; k < n; k++)
				*stale += d[k];
			lo += n * (uint64_t)ps;
		}
	}
	close(pm);
out:
	c->nunv = 0;
	c->unv_over = 0;
	return e;
}
