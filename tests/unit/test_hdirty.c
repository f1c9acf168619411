/* user/heap/dirty.c's pages written since the clear: pagemap's word, and
 * which pages it asks of their own entries (probes/ptscan.h, stubbed:
 * every page asked is said unwritten, or the run is stale). A pagemap
 * of crafted entries in a file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap/heap.h"
#include "probes/ptscan.h"
#include "target/proc.h"

#include "check.h"

#define SD (1ull << 55)
#define EXCL (1ull << 56)
#define UFFD (1ull << 57)
#define FILE_ (1ull << 61)
#define SWAP (1ull << 62)
#define PRES (1ull << 63)

struct ptscan {
	int stale; /* runs still to answer stale */
	int calls;
	uint64_t lo, n; /* the last run's range */
};

int proc_openat(pid_t pid, const char *rel, int flags)
{
	return -ENOENT;
}

int ptscan_unwritten(struct ptscan *p, uint64_t addr, size_t n, uint8_t *unw)
{
	p->calls++;
	p->lo = addr;
	p->n = n;
	if (p->stale) {
		p->stale--;
		return -ESTALE;
	}
	memset(unw, 1, n);
	return 0;
}

const char *ptscan_why(const struct ptscan *p)
{
	return "";
}

static int same(const uint8_t *a, const char *want)
{
	for (size_t i = 0; want[i]; i++)
		if (a[i] != (uint8_t)(want[i] - '0'))
			return 0;
	return 1;
}

int main(void)
{
	/* pages 16-23: asked (cleared); fork's or KSM's; a file's;
	 * userfaultfd's; swapped; unwritten; absent; asked */
	const uint64_t e[8] = { SD | PRES | EXCL, SD | PRES, SD | PRES | EXCL | FILE_,
				SD | PRES | EXCL | UFFD, SD | SWAP, PRES | EXCL, 0, SD | PRES | EXCL };
	const uint64_t addr = 16 * 4096;
	char path[] = "/tmp/lmt-hdirty-XXXXXX";
	struct ptscan pt = { 0 };
	uint64_t cleared = 0;
	uint8_t out[8];
	int fd = mkstemp(path);

	if (fd < 0 || pwrite(fd, e, sizeof(e), 16 * 8) != (ssize_t)sizeof(e))
		return 1;
	unlink(path);

	CHECK("hdirty: pagemap alone: written, or neither present nor swapped",
	      !hdirty_pages(fd, NULL, &cleared, addr, 8, out) && same(out, "11111011") && !cleared);
	CHECK("hdirty: pagemap alone, written and there",
	      !hdirty_written(fd, NULL, &cleared, addr, 8, out) && same(out, "11111001"));
	CHECK("hdirty: own entries asked only of pages present, mapped once, not a file's, "
	      "not userfaultfd's: two cleared",
	      !hdirty_pages(fd, &pt, &cleared, addr, 8, out) && same(out, "01111010") &&
		      cleared == 2 && pt.calls == 1 && pt.lo == addr && pt.n == 8);
	cleared = 0;
	CHECK("hdirty: the same for pages written and there",
	      !hdirty_written(fd, &pt, &cleared, addr, 8, out) && same(out, "01111000") &&
		      cleared == 2);
	pt = (struct ptscan){ .stale = 2 };
	cleared = 0;
	CHECK("hdirty: a run stale twice: pagemap's word kept",
	      !hdirty_pages(fd, &pt, &cleared, addr, 8, out) && same(out, "11111011") &&
		      !cleared && pt.calls == 2);
	pt = (struct ptscan){ .stale = 1 };
	CHECK("hdirty: a run stale once, then answered",
	      !hdirty_pages(fd, &pt, &cleared, addr, 8, out) && same(out, "01111010") &&
		      cleared == 2 && pt.calls == 2);
	pt = (struct ptscan){ 0 };
	CHECK("hdirty: no page to ask, no run",
	      !hdirty_pages(fd, &pt, &cleared, addr + 5 * 4096, 2, out) && same(out, "01") &&
		      !pt.calls);
	close(fd);
	return fails != 0;
}
