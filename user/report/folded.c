/* Folded stacks (flamegraph.pl, speedscope, inferno). An output: reads
 * the aggregate, calls no other output. A folded line is "frame;frame weight", root first: ';' separates
 * frames, so names hold none (report/stacks.c); flamegraph.pl takes the
 * weight after the last space, so spaces in names are fine. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "keys.h"

static void folded_line(FILE *out, const struct report *rp, const uint32_t *frames, size_t n,
			uint64_t w)
{
	if (rp->label)
		fprintf(out, "%s;", rp->label);
	for (size_t i = 0; i < n; i++) {
		const char *p = str_ptr(&rp->sp, frames[i]);
		const uint32_t len = rp->sp.s[frames[i]].len;
		if (i)
			fputc(';', out);
		for (uint32_t k = 0; k < len; k++)
			fputc(p[k] == ';' && !rp->has_stacks ? ',' : p[k], out);
	}
	fprintf(out, " %" PRIu64 "\n", w);
}

/* Without a companion a stack is one frame, the event's location; with
 * one, each event's folded stack (report/stacks.c), and an event without
 * a stack its location alone. */
int folded_print(struct report *rp, FILE *out, enum report_weight w)
{
	struct accset s = { 0 };
	int rc;
	if (w == REPORT_W_LIVE) {
		live_by_key(rp, &s);
	} else {
		alloc_by_key(rp, 1, &s);
		for (uint32_t i = 0; w == REPORT_W_EVENTS && i < s.n; i++)
			s.v[i].a = s.v[i].b;
	}
	if (s.n)
		qsort_r(s.v, s.n, sizeof(*s.v), cmp_acc_name, rp);
	for (uint32_t i = 0; i < s.n; i++)
		if (s.v[i].a)
			folded_line(out, rp, &s.v[i].name, 1, s.v[i].a);
	rc = s.oom || rp->fold.oom ? -1 : 0;
	acc_free(&s);
	return rc;
}

