/* The block cache's re-read of written pages (user/heap/pages.c): only
 * the pages whose bits say written are read again, runs that touch in
 * the target in one read, and a block that cannot be read again is
 * dropped. A whole image read (hpages_preload) serves every page the
 * target had once it is gone, past a hole too. The target is a buffer of ours; its reads and its soft-dirty
 * bits are this file's (proc_read*, hdirty_*). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "heap/heap.h"
#include "target/proc.h"

#include "check.h"

#define NB 4
#define PG 4096u
#define PER (HPAGES_BLOCK / PG)

static _Alignas(HPAGES_BLOCK) uint8_t tgt[NB * HPAGES_BLOCK];
static uint8_t written[NB * PER]; /* a page's soft-dirty bit */
static size_t hole = SIZE_MAX;    /* a page of tgt that cannot be read */
static unsigned readv_calls, read_calls;
static int gone;                  /* the target is gone: nothing reads */
static int pagemap_fd = -1;       /* its pagemap, if made (hpages_preload) */

static uint64_t at(size_t blk, size_t page)
{
	return (uint64_t)(uintptr_t)tgt + blk * HPAGES_BLOCK + page * PG;
}

/* Readable bytes of tgt from addr, up to len. */
static size_t readable(uint64_t addr, size_t len)
{
	uint64_t lo = (uint64_t)(uintptr_t)tgt, end = lo + sizeof(tgt);

	if (addr < lo || addr >= end)
		return 0;
	if (len > end - addr)
		len = end - addr;
	if (hole != SIZE_MAX) {
		uint64_t h = lo + hole * PG;

		if (addr >= h && addr < h + PG)
			return 0;
		if (addr < h && addr + len > h)
			len = h - addr;
	}
	return len;
}

ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t n = gone ? 0 : readable(addr, len);

	read_calls++;
	if (!n)
		return -EFAULT;
	memcpy(buf, (void *)(uintptr_t)addr, n);
	return (ssize_t)n;
}

int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = proc_read_some(pid, addr, buf, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

ssize_t proc_readv(pid_t pid, uint64_t addr, const struct iovec *iov, int n)
{
	ssize_t got = 0;

	readv_calls++;
	for (int i = 0; i < n; i++) {
		size_t k = readable(addr, iov[i].iov_len);

		memcpy(iov[i].iov_base, (void *)(uintptr_t)addr, k);
		got += (ssize_t)k;
		addr += k;
		if (k < iov[i].iov_len)
			break;
	}
	return got ? got : -EFAULT;
}

int hdirty_open(pid_t pid)
{
	return pagemap_fd >= 0 ? dup(pagemap_fd) : open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int hdirty_pages(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		 uint8_t *dirty)
{
	size_t first = (addr - (uint64_t)(uintptr_t)tgt) / PG;

	if (first + n > NB * PER)
		return -EIO;
	memcpy(dirty, written + first, n);
	return 0;
}

int hdirty_written(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		   uint8_t *w)
{
	return hdirty_pages(pmfd, pt, cleared, addr, n, w);
}

/* No page table entries read here (pt is NULL). */
void ptscan_close(struct ptscan *p)
{
}

/* The target's maps: tgt, one private writable mapping. */
int pmaps_load(pid_t pid, struct pmaps *m)
{
	m->v = calloc(1, sizeof(*m->v));
	if (!m->v)
		return -ENOMEM;
	m->n = 1;
	m->v->lo = (uint64_t)(uintptr_t)tgt;
	m->v->hi = m->v->lo + sizeof(tgt);
	memcpy(m->v->perms, "rw-p", 5);
	return 0;
}

void pmaps_free(struct pmaps *m)
{
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Writes c over page p of tgt; its bit set if mark. */
static void write_page(size_t p, char c, int mark)
{
	memset(tgt + p * PG, c, PG);
	if (mark)
		written[p] = 1;
}

/* The cache's byte at the start of page p. */
static int cached(struct hpages *c, size_t p)
{
	uint8_t b = 0;

	if (hpages_read(c, 1, (uint64_t)(uintptr_t)tgt + p * PG, &b, 1))
		return -1;
	return b;
}

int main(void)
{
	struct hpages c = { 0 };
	struct hrefresh r;
	int ok = 1;

	memset(tgt, 'a', sizeof(tgt));
	for (size_t b = 0; b < NB; b++)
		ok &= hpages_read(&c, 1, at(b, 0), &(uint8_t){ 0 }, 1) == 0;
	CHECK("4 blocks kept, read once each", ok && c.m.n == NB && c.reads == NB);

	/* written: block 0's last page to block 2's first (one run in the
	 * target, three blocks), and block 3's third; block 0's third page
	 * changed with no bit (not read again: the cache keeps 'a') */
	write_page(PER - 1, 'b', 1);
	for (size_t p = PER; p < 2 * PER; p++)
		write_page(p, 'b', 1);
	write_page(2 * PER, 'b', 1);
	write_page(3 * PER + 2, 'b', 1);
	write_page(PER - 2, 'c', 0);
	read_calls = readv_calls = 0;
	CHECK("refreshed", hpages_refresh(&c, 1, UINT64_MAX, &r) == 0);
	CHECK("4 blocks, 16 pages, 7 written",
	      r.blocks == NB && r.pages == NB * PER && r.dirty == 7 && r.dropped == 0);
	CHECK("two reads: the run over three blocks, and block 3's page",
	      r.reads == 2 && readv_calls == 2 && read_calls == 0);
	CHECK("the written pages read again",
	      cached(&c, PER - 1) == 'b' && cached(&c, PER + 3) == 'b' &&
	      cached(&c, 2 * PER) == 'b' && cached(&c, 3 * PER + 2) == 'b');
	CHECK("the others kept as read",
	      cached(&c, PER - 2) == 'a' && cached(&c, 2 * PER + 1) == 'a' &&
	      cached(&c, 3 * PER + 3) == 'a');
	CHECK("no block read from the target since", c.reads == NB && read_calls == 0);

	/* block 1's second and third pages written, the third unreadable:
	 * the run read alone, then block 1 dropped (read again when asked) */
	memset(written, 0, sizeof(written));
	write_page(PER + 1, 'd', 1);
	write_page(PER + 2, 'd', 1);
	hole = PER + 2;
	CHECK("refreshed past a page that cannot be read",
	      hpages_refresh(&c, 1, UINT64_MAX, &r) == 0 && r.dirty == 2);
	CHECK("block 1 dropped, the others kept", c.m.n == NB - 1 &&
	      !u64map_get(&c.m, at(1, 0) + 1) && u64map_get(&c.m, at(0, 0) + 1));
	CHECK("a read, then the run alone", r.reads == 2 && readv_calls == 3 && read_calls == 1);

	/* no bit set: nothing read */
	hole = SIZE_MAX;
	CHECK("nothing written: nothing read", (memset(written, 0, sizeof(written)),
	      hpages_refresh(&c, 1, UINT64_MAX, &r) == 0) && r.dirty == 0 && r.reads == 0);
	hpages_free(&c);

	/* -- Pages written outside the kept blocks, and the image's check -- */
	memset(&c, 0, sizeof(c));
	memset(written, 0, sizeof(written));
	memset(tgt, 'a', sizeof(tgt));
	ok = hpages_read(&c, 1, at(0, 0), &(uint8_t){ 0 }, 1) == 0 &&
	     hpages_read(&c, 1, at(1, 0), &(uint8_t){ 0 }, 1) == 0;
	write_page(PER + 1, 'e', 1);     /* kept: hpages_scan's */
	write_page(2 * PER + 1, 'e', 1); /* block 2: two pages written */
	write_page(2 * PER + 3, 'e', 1);
	write_page(3 * PER, 'e', 0);     /* block 3: not written since */
	memset(&r, 0, sizeof(r));
	{
		struct pmaps mm;

		ok &= pmaps_load(1, &mm) == 0;
		CHECK("the pages written outside the kept blocks looked up",
		      ok && hpages_scan(&c, 1, UINT64_MAX, &r) == 0 && r.dirty == 1 &&
		      hpages_scan_fresh(&c, 1, &mm, UINT64_MAX, &r) == 0 && r.fresh == 2 &&
		      r.fresh_blocks == 1 && c.nfresh == 1);
		mm.v->hi = mm.v->lo + ((uint64_t)LMT_HEAP_FRESH_SCAN_PAGES + 1) * PG;
		CHECK("mappings past what may be looked up: none read",
		      hpages_scan_fresh(&c, 1, &mm, UINT64_MAX, &r) == -E2BIG && c.nfresh == 0);
		mm.v->hi = mm.v->lo + sizeof(tgt);
		CHECK("looked up again", hpages_scan_fresh(&c, 1, &mm, UINT64_MAX, &r) == 0 &&
		      c.nfresh == 1);
		pmaps_free(&mm);
	}
	hpages_reread(&c, 1, UINT64_MAX, &r);
	hpages_read_fresh(&c, 1, UINT64_MAX, &r);
	CHECK("block 2 read whole, block 3 not",
	      c.m.n == 3 && u64map_get(&c.m, at(2, 0) + 1) && !u64map_get(&c.m, at(3, 0) + 1));
	write_page(2 * PER + 1, 'f', 0); /* after the stop: the image keeps 'e' */
	CHECK("the image: the stop's bytes", cached(&c, PER + 1) == 'e' &&
	      cached(&c, 2 * PER + 1) == 'e' && cached(&c, 2 * PER + 2) == 'a');
	{
		uint64_t stale = 9;

		memset(written, 0, sizeof(written)); /* the stop's clear */
		c.frozen = 1;
		CHECK("a block the image lacks read, noted",
		      cached(&c, 3 * PER) == 'e' && c.nunv == 1);
		CHECK("the image's own blocks not noted", cached(&c, 0) == 'a' && c.nunv == 1);
		write_page(3 * PER + 1, 'g', 1); /* the target runs on */
		CHECK("written since the stop: stale",
		      hpages_verify(&c, 1, &stale) == 0 && stale == 1 && c.nunv == 0);
	}
	hpages_free(&c);

	/* A mapping that starts inside a block (its first page not there):
	 * the block from the page asked, its first page neither looked up
	 * nor read again */
	memset(&c, 0, sizeof(c));
	memset(written, 0, sizeof(written));
	memset(tgt, 'a', sizeof(tgt));
	hole = 0;
	c.frozen = 1;
	read_calls = 0;
	CHECK("a block from its second page", cached(&c, 1) == 'a' && c.m.n == 1 &&
	      c.direct == 0 && read_calls == 2 && c.nunv == 1 &&
	      c.unv[0].addr == at(0, 1) && c.unv[0].len == 3 * PG);
	{
		uint64_t stale = 9;

		CHECK("its reads unwritten since: checked",
		      hpages_verify(&c, 1, &stale) == 0 && stale == 0);
	}
	written[0] = 1; /* not there: taken as written by the pagemap */
	CHECK("its first page not looked up",
	      hpages_scan(&c, 1, UINT64_MAX, &r) == 0 && r.dirty == 0 && c.nrun == 0);
	{
		uint8_t nm[2 * PG];
		uint64_t stale = 9;

		/* a read from the block's last page on, past what the block
		 * holds (hole: the page after tgt's end is not there either):
		 * what the cache holds, nothing noted */
		hole = SIZE_MAX;
		c.nunv = 0;
		memset(nm, 0, sizeof(nm));
		CHECK("a read past the end of what is there: the cache's part, not noted",
		      hpages_read_some(&c, 1, at(NB - 1, PER - 1), nm, sizeof(nm)) == (ssize_t)PG &&
		      nm[0] == 'a' && c.nunv == 1 && hpages_verify(&c, 1, &stale) == 0);
	}
	hpages_free(&c);

	/* The stop's re-read past its deadline: the blocks of the runs left
	 * dropped (read again as the copy asks), not kept stale */
	memset(&c, 0, sizeof(c));
	memset(written, 0, sizeof(written));
	for (size_t b = 0; b < NB; b++)
		hpages_read(&c, 1, at(b, 0), &(uint8_t){ 0 }, 1);
	write_page(1, 'h', 1);
	write_page(2 * PER + 1, 'h', 1);
	memset(&r, 0, sizeof(r));
	CHECK("looked up", hpages_scan(&c, 1, UINT64_MAX, &r) == 0 && r.dirty == 2 && c.nrun == 2);
	hpages_reread(&c, 1, 0, &r);
	CHECK("past the deadline: both blocks dropped, counted",
	      r.late == 2 && c.m.n == NB - 2 && !u64map_get(&c.m, at(0, 0) + 1) &&
	      !u64map_get(&c.m, at(2, 0) + 1) && cached(&c, 1) == 'h');
	hpages_free(&c);

	/* A whole image (hpages_preload, a fork's child): every page the
	 * target has read, then the target gone; block 1 meets a hole at
	 * its second page, so its third and fourth are kept apart, and a
	 * read from the fourth into block 2 is put together. */
	{
		uint64_t pm[NB * PER], ps = PG, bytes = 0;
		struct pmaps mm = { 0 };
		char path[] = "/tmp/lmt-pagemap-XXXXXX";
		uint8_t two[16];

		memset(&c, 0, sizeof(c));
		memset(tgt, 'a', sizeof(tgt));
		for (size_t p = 0; p < NB * PER; p++) {
			tgt[p * PG] = (uint8_t)('A' + p);
			tgt[p * PG + PG - 8] = (uint8_t)('a' + p);
			pm[p] = 1ULL << 63;
		}
		hole = PER + 1;
		pm[hole] = 0;
		pagemap_fd = mkstemp(path);
		unlink(path);
		pmaps_load(1, &mm);
		CHECK("a pagemap", pagemap_fd >= 0 &&
		      pwrite(pagemap_fd, pm, sizeof(pm), (off_t)(at(0, 0) / ps * 8)) == (ssize_t)sizeof(pm));
		CHECK("read whole", hpages_preload(&c, 1, &mm, UINT64_MAX, &bytes) == 0 &&
		      c.m.n == NB && c.side.n == 2 && bytes == (NB - 1) * HPAGES_BLOCK + PG + 2 * PG);
		gone = 1;
		CHECK("gone: each page it had from the image, the two past the hole kept apart",
		      cached(&c, 0) == 'A' && cached(&c, PER) == 'A' + PER &&
		      cached(&c, PER + 2) == 'A' + PER + 2 && cached(&c, PER + 3) == 'A' + PER + 3 &&
		      cached(&c, 2 * PER) == 'A' + 2 * PER && cached(&c, NB * PER - 1) == 'A' + NB * PER - 1);
		CHECK("a read across a page kept apart and the next block, put together",
		      hpages_read(&c, 1, at(1, 3) + PG - 8, two, 16) == 0 &&
		      two[0] == 'a' + PER + 3 && two[8] == 'A' + 2 * PER);
		CHECK("the hole: not read", cached(&c, hole) == -1);
		pmaps_free(&mm);
		hpages_free(&c);
		close(pagemap_fd);
		pagemap_fd = -1;
		gone = 0;
		hole = SIZE_MAX;
	}
	return fails != 0;
}
