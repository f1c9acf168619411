/* ptcheck: probes/ptscan.c on a child of ours, whose pages are known
 * (tests/heap.bats on the host, tests/kernels/guest.bats on Debian's
 * kernels). Eight pages of a private writable mapping: 0-5 written, 6
 * read (the zero page), 7 never touched; 0-1 made read-only; a fork
 * (copy-on-write write-protects the rest); the child's soft-dirty bits
 * cleared; page 4 written again (a new page, its bit set), and another
 * fork, which write-protects it too. Prints "sd" or "nosd" (does this
 * kernel keep soft-dirty bits: page 4's pagemap entry), then one digit a
 * page, 1 where the walk says present, write-protected and not
 * soft-dirty in a writable mapping, and the pages claimed; or "off: why".
 * Pages 0-1 are in a mapping not writable, 6 is special, 7 absent: 0.
 * Pages 2, 3 and 5: 1 (shared with a fork: user/heap/dirty.c does not
 * ask of such pages, pagemap's exclusive bit; the walk answers for the
 * entry). Page 4: 0 with soft-dirty bits (written since the clear), 1
 * without them: 00110100 or 00111100. Exit 0, or 1 when the walk could
 * not run. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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

/* A child of ours that pauses until its parent dies. */
static void hold(void)
{
	if (!fork()) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
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

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < 6; i++)
			m[i * 4096] = 1;
		x = m[6 * 4096];
		(void)x;
		if (mprotect(m, 2 * 4096, PROT_READ))
			_exit(1);
		hold();
		if (write(back[1], "r", 1) != 1 || read(to[0], &c, 1) != 1)
			_exit(1);
		m[4 * 4096] = 2;
		hold();
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
	/* on stderr, for a reader of a failure: each page's pagemap entry
	 * (present, exclusive, soft-dirty) */
	for (int i = 0; i < 8; i++) {
		uint64_t x = 0;

		if (pread(pm, &x, 8, (off_t)((uintptr_t)(m + i * 4096) / 4096 * 8)) == 8)
			fprintf(stderr, "page %d: present %d exclusive %d soft-dirty %d\n", i,
				(int)(x >> 63), (int)(x >> 56 & 1), (int)(x >> 55 & 1));
	}
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
