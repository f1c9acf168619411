/* Which pages the target wrote while it was copied running: the kernel's
 * soft-dirty bits (Documentation/admin-guide/mm/soft-dirty.rst). Writing
 * "4" to /proc/PID/clear_refs clears them; a write to a page sets its bit
 * again (bit 55 of its /proc/PID/pagemap entry). Both files are opened
 * through the process's bound /proc directory (target/proc.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap/heap.h"
#include "probes/ptscan.h"
#include "ptscan_def.h"
#include "target/proc.h"

#define PM_SOFT_DIRTY (1ull << 55)
#define PM_MMAP_EXCLUSIVE (1ull << 56)
#define PM_UFFD_WP (1ull << 57)
#define PM_FILE (1ull << 61)
#define PM_SWAP (1ull << 62)
#define PM_PRESENT (1ull << 63)
/* What the pages' own entries may be asked of: a present anonymous page
 * mapped once (not shared by a fork or KSM, not a zero page, not a
 * file's or shared memory's, whose content changes without a write
 * through this entry), not under userfaultfd's write-protection. */
#define PM_OWN_ASK(e) (((e) & (PM_SOFT_DIRTY | PM_PRESENT | PM_MMAP_EXCLUSIVE | PM_FILE | \
			      PM_UFFD_WP)) == (PM_SOFT_DIRTY | PM_PRESENT | PM_MMAP_EXCLUSIVE))

/* -- Does this kernel keep the bits? ---------------------------------------- */

/* A kernel without CONFIG_MEM_SOFT_DIRTY takes "4" and never sets the bit:
 * every page would look unchanged. So the bits are tried on a page of
 * ours: clear, 0 before a write, 1 after it. */
static int self_test(char *why, size_t len)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t e0 = 0, e1 = 0;
	volatile uint8_t *p;
	int cr, pm, ok = 0;

	p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return 0;
	}
	p[0] = 1; /* faulted in before the clear */
	cr = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (cr < 0 || pm < 0 || write(cr, "4", 1) != 1) {
		snprintf(why, len, "/proc/self/clear_refs: %s", strerror(errno));
	} else {
		off_t at = (off_t)((uintptr_t)p / (uint64_t)ps * 8);

		if (pread(pm, &e0, 8, at) == 8) {
			p[0] = 2;
			ok = pread(pm, &e1, 8, at) == 8 && !(e0 & PM_SOFT_DIRTY) &&
			     (e1 & PM_SOFT_DIRTY);
		}
		if (!ok)
			snprintf(why, len, "the kernel keeps no soft-dirty bits "
				 "(CONFIG_MEM_SOFT_DIRTY)");
	}
	if (cr >= 0)
		close(cr);
	if (pm >= 0)
		close(pm);
	munmap((void *)p, (size_t)ps);
	return ok;
}

int hdirty_usable(char *why, size_t len)
{
	static int known = -1;
	static char said[160];

	if (known < 0)
		known = self_test(said, sizeof(said));
	snprintf(why, len, "%s", said);
	return known;
}

/* -- The target's bits ------------------------------------------------------ */

int hdirty_clear(pid_t pid)
{
	int fd = proc_openat(pid, "clear_refs", O_WRONLY), e = 0;

	if (fd < 0)
		return fd;
	if (write(fd, "4", 1) != 1)
		e = -errno;
	close(fd);
	return e;
}

int hdirty_open(pid_t pid)
{
	return proc_openat(pid, "pagemap", O_RDONLY);
}

/* The pages of [addr, addr + n pages) pagemap called written (cand[k]) that
 * their own entries say unwritten since the clear (a mapping new or grown
 * since is written whole for pagemap: probes/ptscan.h): out[k] cleared,
 * counted in *cleared. One scan per PT_RUN pages; one whose tables
 * changed under it is taken again once, then its pages keep pagemap's
 * word. */
static void own_bits(struct ptscan *pt, uint64_t addr, size_t n, const uint8_t *cand,
		     uint8_t *out, uint64_t *cleared)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint8_t *unw = malloc(PT_RUN);

	if (!unw)
		return;

	for (size_t k = 0; k < n;) {
		size_t m = n - k < PT_RUN ? n - k : PT_RUN, j;
		int e;

		for (j = 0; j < m && !cand[k + j]; j++)
			;
		if (j == m) {
			k += m;
			continue;
		}
		memset(unw, 0, m);
		if ((e = ptscan_unwritten(pt, addr + k * (uint64_t)ps, m, unw)) == -ESTALE)
			e = ptscan_unwritten(pt, addr + k * (uint64_t)ps, m, unw);
		if (e == -ESTALE) { /* again: its pages keep pagemap's word */
			k += m;
			continue;
		}
		if (e)
			break; /* off (said by the capture), or the process gone */
		for (j = 0; j < m; j++)
			if (cand[k + j] && unw[j] && out[k + j]) {
				out[k + j] = 0;
				++*cleared;
			}
		k += m;
	}
	free(unw);
}

/* Each page's entry from addr, n of them: dirty (written: 0) or written;
 * with pt, refined by the pages' own entries (own_bits). */
static int entries(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		   uint8_t *out, int written)
{
	uint64_t e[512];
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t pg = addr / (uint64_t)ps;
	uint8_t *cand = NULL;
	int any = 0;

	if (ps <= 0 || pg > (uint64_t)INT64_MAX / 8 - n)
		return -EINVAL;
	if (pt && !ptscan_why(pt)[0] && !(cand = calloc(n ? n : 1, 1)))
		return -ENOMEM;
	for (size_t k = 0; k < n;) {
		size_t m = n - k < 512 ? n - k : 512;
		ssize_t got = pread(pmfd, e, m * 8, (off_t)((pg + k) * 8));

		if (got < 0 || (size_t)got != m * 8) {
			free(cand);
			return got < 0 ? -errno : -EIO;
		}
		/* Changed: its bit; or neither present nor swapped (dropped
		 * since, it reads as zeros now): taken as changed. Written:
		 * its bit, and there. Only some pages' bits are asked of
		 * their own entries (PM_OWN_ASK). */
		for (size_t j = 0; j < m; j++) {
			out[k + j] = written ? (e[j] & PM_SOFT_DIRTY) && (e[j] & (PM_PRESENT | PM_SWAP))
					     : (e[j] & PM_SOFT_DIRTY) || !(e[j] & (PM_PRESENT | PM_SWAP));
			if (cand && out[k + j] && PM_OWN_ASK(e[j]))
				any = cand[k + j] = 1;
		}
		k += m;
	}
	if (any)
		own_bits(pt, addr, n, cand, out, cleared);
	free(cand);
	return 0;
}

int hdirty_pages(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		 uint8_t *dirty)
{
	return entries(pmfd, pt, cleared, addr, n, dirty, 0);
}

int hdirty_written(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		   uint8_t *written)
{
	return entries(pmfd, pt, cleared, addr, n, written, 1);
}
