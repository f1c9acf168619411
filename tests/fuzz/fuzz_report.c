/* libFuzzer target: `luamemtrace report` as run, on files anyone may have
 * written. The input is up to three streams, each a stream, its stacks
 * companion and its sidecar, parts split by SEP (a part left empty: that
 * file absent). Each run writes them to files and runs report_main over
 * them in every output format (text, --leak-only, --by-stack, --folded
 * with each weight, --pprof, --flamegraph), over the streams together (a
 * merge if several).
 *
 *   make fuzz FUZZ_SECONDS=30
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"

#define SEP "\n--lmt-part--\n"
enum { NSTREAM = 3, NPART = 3 };

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static char dir[64];

/* Writes data[0..n) to path; if n is 0, an empty file if keep, else
 * none. */
static void put(const char *path, const uint8_t *data, size_t n, int keep)
{
	int fd;

	unlink(path);
	if (!n && !keep)
		return;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
	    write(fd, data, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* At exit: the files and their directory go. */
static void cleanup(void)
{
	static const char *const suffix[] = { "", ".stacks", ".info" };
	char path[128];

	for (int s = 0; s < NSTREAM; s++)
		for (int k = 0; k < NPART; k++) {
			snprintf(path, sizeof(path), "%s/s%d.bin%s", dir, s, suffix[k]);
			unlink(path);
		}
	rmdir(dir);
}

static void run(int argc, char **argv)
{
	report_main(argc, argv);
	fflush(stdout);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fmts[][2] = {
		{ NULL, NULL }, { "--leak-only", NULL }, { "--leak-only", "--by-stack" },
		{ "--folded", "--weight=bytes" }, { "--folded", "--weight=events" },
		{ "--folded", "--weight=live" }, { "--pprof", NULL }, { "--flamegraph", NULL },
	};
	static const char *const suffix[NPART] = { "", ".stacks", ".info" };
	char paths[NSTREAM][96], *argv[8 + NSTREAM];
	const uint8_t *p = data, *end = data + size;
	int nstream = 0;

	if (!dir[0]) {
		strcpy(dir, "/tmp/lmt-fuzz-XXXXXX");
		/* Output goes nowhere: only crashes, leaks and UB matter. */
		if (!mkdtemp(dir) || !freopen("/dev/null", "w", stdout) || atexit(cleanup))
			abort();
	}
	for (int s = 0; s < NSTREAM && p < end; s++) {
		snprintf(paths[s], sizeof(paths[s]), "%s/s%d.bin", dir, s);
		for (int k = 0; k < NPART; k++) {
			const uint8_t *q = p < end ? memmem(p, (size_t)(end - p), SEP, strlen(SEP)) : NULL;
			const size_t n = (size_t)((q ? q : end) - p);
			char path[128];

			snprintf(path, sizeof(path), "%s%s", paths[s], suffix[k]);
			/* An empty stream is still a file: report reads it. */
			put(path, p, n, !k);
			p = q ? q + strlen(SEP) : end;
		}
		nstream++;
	}
	if (!nstream)
		return 0;
	for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
		int argc = 0;

		argv[argc++] = "report";
		for (int i = 0; i < 2 && fmts[f][i]; i++)
			argv[argc++] = (char *)fmts[f][i];
		/* One stream alone, or several merged. */
		for (int s = 0; s < nstream; s++)
			argv[argc + s] = paths[s];
		argv[argc + nstream] = NULL;
		run(argc + nstream, argv);
	}
	return 0;
}
