/* ptcheck: probes/ptscan.c on a child of ours, whose pages are known
 * (tests/heap.bats on the host, tests/kernels/guest.bats on Debian's
 * kernels). Eight pages: 0-5 written and 6 read (the zero page); 0-3
 * made read-only; the child's soft-dirty bits cleared; then page 4
 * written again. Page 7 is never touched. Prints "sd" or "nosd" (does
 * this kernel keep soft-dirty bits: page 4's pagemap entry), then one
 * digit a page, 1 where the scan says unwritten since the clear, and the
 * pages claimed; or "off: why". With soft-dirty bits: 11110100 (0-3
 * write-protected; 4 written since; 5 write-protected by the clear; 6
 * special; 7 absent); without, the clear changes nothing: 11110000.
 * Exit 0, or 1 when the scan could not run. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/ptscan.h"

static int put(pid_t k, const char *rel, const char *s)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)k, rel);
	if ((fd = open(path, O_WRONLY)) < 0)
		return -1;
	ok = write(fd, s, 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

int main(void)
{
	uint8_t u[8] = { 0 }, *m;
	int to[2], back[2], r = 1, pm;
	struct ptscan *p;
	char why[160], path[64], c;
	uint64_t e = 0;
	pid_t k;

	m = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || pipe(to) || pipe(back))
		return 1;
	if (!(k = fork())) {
		volatile uint8_t x;

		for (int i = 0; i < 6; i++)
			m[i * 4096] = 1;
		x = m[6 * 4096];
		(void)x;
		if (mprotect(m, 4 * 4096, PROT_READ) || write(back[1], "r", 1) != 1 ||
		    read(to[0], &c, 1) != 1)
			_exit(1);
		m[4 * 4096] = 2;
		if (write(back[1], "w", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	if (k < 0 || read(back[0], &c, 1) != 1 || put(k, "clear_refs", "4") ||
	    write(to[1], "g", 1) != 1 || read(back[0], &c, 1) != 1)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)k);
	if ((pm = open(path, O_RDONLY)) < 0 ||
	    pread(pm, &e, 8, (off_t)((uintptr_t)(m + 4 * 4096) / 4096 * 8)) != 8)
		goto out;
	close(pm);
	printf("%s ", e & (1ull << 55) ? "sd" : "nosd");
	if (!(p = ptscan_open(k, why, sizeof(why)))) {
		printf("off: %s\n", why);
	} else if (ptscan_unwritten(p, (uint64_t)(uintptr_t)m, 8, u)) {
		printf("off: %s\n", ptscan_why(p));
	} else {
		for (int i = 0; i < 8; i++)
			putchar('0' + u[i]);
		printf(" %llu claimed\n", (unsigned long long)ptscan_claimed(p));
		r = 0;
	}
	ptscan_close(p);
out:
	kill(k, SIGKILL);
	waitpid(k, NULL, 0);
	return r;
}
