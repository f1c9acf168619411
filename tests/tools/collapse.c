/* collapse PID SECONDS: moves a process's memory under a tracer. For
 * SECONDS, over and over, every 2 MiB of its private writable anonymous
 * mappings is collapsed into a huge page (process_madvise MADV_COLLAPSE):
 * its data copied to a new frame and the old frames freed, its page
 * table replaced by one entry, as khugepaged does. Prints "collapsed N
 * huge K" (calls that succeeded, already huge ranges included; the most
 * KiB of huge pages the process had at once) and exits 0 if the process
 * outlived it, 1 if it went first. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HUGE (2UL << 20)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: collapse PID SECONDS\n");
		return 2;
	}
	const int pid = atoi(argv[1]);
	const double end = now() + atof(argv[2]);
	const int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	unsigned long collapsed = 0, huge = 0;
	char path[64], line[512], rollup[64];

	if (pfd < 0) {
		fprintf(stderr, "collapse: pidfd_open %d: %s\n", pid, strerror(errno));
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	snprintf(rollup, sizeof(rollup), "/proc/%d/smaps_rollup", pid);
	while (now() < end) {
		FILE *f = fopen(path, "r");

		if (!f) {
			printf("collapsed %lu huge %lu\n", collapsed, huge);
			return 1;
		}
		while (fgets(line, sizeof(line), f)) {
			uint64_t lo, hi, off;
			char perm[8];
			unsigned long ino;
			int n = 0;

			/* Anonymous: no path after the inode. */
			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %lu %n",
				   &lo, &hi, perm, &off, &ino, &n) < 5 || ino ||
			    strncmp(perm, "rw-p", 4) || (n && line[n] && line[n] != '\n'))
				continue;
			for (uint64_t a = (lo + HUGE - 1) & ~(HUGE - 1); a + HUGE <= hi; a += HUGE) {
				struct iovec v = { .iov_base = (void *)(uintptr_t)a, .iov_len = HUGE };

				if (syscall(SYS_process_madvise, pfd, &v, 1, MADV_COLLAPSE, 0) ==
				    (long)HUGE)
					collapsed++;
			}
		}
		fclose(f);
		if ((f = fopen(rollup, "r"))) {
			unsigned long kb;

			while (fgets(line, sizeof(line), f))
				if (sscanf(line, "AnonHugePages: %lu", &kb) == 1 && kb > huge)
					huge = kb;
			fclose(f);
		}
		usleep(20000);
	}
	printf("collapsed %lu huge %lu\n", collapsed, huge);
	return 0;
}
