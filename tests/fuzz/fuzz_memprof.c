/* libFuzzer target: bytes -> reader -> report (every output format), and
 * the records read -> writer -> reader again, which must give the same
 * records (the writer and reader agree on every record the reader accepts).
 *
 *   make fuzz FUZZ_SECONDS=30
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/memprof_read.h"
#include "format/memprof_write.h"
#include "report/report.h"

/* The Makefile builds with recoverable UBSan: make any report fatal, so
 * libFuzzer saves the input. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static FILE *devnull;
static struct mpw w;

static int same_sym(const struct mp_sym *a, const struct mp_sym *b)
{
	return a->kind == b->kind && a->addr == b->addr && a->name_len == b->name_len &&
	       !memcmp(a->name, b->name, a->name_len) && a->proto == b->proto &&
	       a->line == b->line;
}

static int same_event(const struct mp_event *a, const struct mp_event *b)
{
	return a->kind == b->kind && a->src == b->src && a->loc == b->loc &&
	       a->line == b->line && a->oaddr == b->oaddr && a->osize == b->osize &&
	       a->naddr == b->naddr && a->nsize == b->nsize;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct report_opts opts[] = {
		{ .format = REPORT_STANDARD },
		{ .format = REPORT_STANDARD, .human = 1 },
		{ .format = REPORT_LEAK_ONLY },
		{ .format = REPORT_FOLDED, .weight = REPORT_W_BYTES },
		{ .format = REPORT_FOLDED, .weight = REPORT_W_EVENTS },
		{ .format = REPORT_FOLDED, .weight = REPORT_W_LIVE },
	};
	FILE *in;
	struct mpr *r, *r2;
	struct report *rp;
	struct mp_sym s, s2;
	struct mp_event e, e2, batch[16];
	size_t nbatch = 0;
	int rc, rc2, fd;

	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	if (!size || !(in = fmemopen((void *)data, size, "rb")))
		return 0;
	fd = memfd_create("fuzz", 0);
	if (fd < 0)
		abort();
	r = mpr_open_file(in, "fuzz");
	rp = report_new();
	mpw_init(&w, fd);
	/* The writer decides symtab vs event-symtab by mpw_begin_events; the
	 * reader hides that, so everything is re-written as leading symtab
	 * until the first event. */
	/* Events go to the report in batches, as `luamemtrace report` does
	 * (the heap stage on its own thread); a symbol flushes the batch. */
	while ((rc = mpr_next(r, &s, &e)) > 0) {
		if (rc == MPR_SYM) {
			report_events(rp, batch, nbatch);
			nbatch = 0;
			report_sym(rp, &s);
			mpw_sym(&w, &s);
		} else {
			batch[nbatch++] = e;
			if (nbatch == sizeof(batch) / sizeof(batch[0])) {
				report_events(rp, batch, nbatch);
				nbatch = 0;
			}
			mpw_begin_events(&w);
			mpw_event(&w, &e);
		}
	}
	report_events(rp, batch, nbatch);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		report_print(rp, devnull, &opts[i]);
	report_print_top(rp, devnull, 5, 1);
	if (mpw_finish(&w))
		abort();
	if (rc != MPR_END && rc != MPR_TRUNC && rc != MPR_ERROR)
		abort();
	if (rc != MPR_END && !strstr(mpr_diag(r), "fuzz: offset "))
		abort();

	/* Round trip: the re-encoded stream reads back as the same records. */
	fclose(in);
	mpr_close(r);
	if (!(in = fmemopen((void *)data, size, "rb")))
		abort();
	r = mpr_open_file(in, "fuzz");
	lseek(fd, 0, SEEK_SET);
	r2 = mpr_open_fd(fd, "again");
	for (;;) {
		rc = mpr_next(r, &s, &e);
		if (rc <= 0)
			break;
		/* s.name lives in r until its next call; compare first. */
		rc2 = mpr_next(r2, &s2, &e2);
		if (rc2 != rc || (rc == MPR_SYM ? !same_sym(&s, &s2) : !same_event(&e, &e2)))
			abort();
	}
	if (mpr_next(r2, &s2, &e2) != MPR_END)
		abort();
	mpr_close(r2);
	mpr_close(r);
	fclose(in);
	close(fd);
	report_free(rp);
	return 0;
}
