/* Folded stacks (flamegraph.pl, speedscope, inferno). */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


#include "report_int.h"

static void folded_line(FILE *out, const struct report *rp, const uint32_t *frames, size_t n,
			uint64_t w)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = str_ptr(&rp->sp, frames[i]);
		const uint32_t len = rp->sp.s[frames[i]].len;
		if (i)
			fputc(';', out);
		for (uint32_t k = 0; k < len; k++)
			fputc(p[k] == ';' ? ',' : p[k], out);
	}
	fprintf(out, " %" PRIu64 "\n", w);
}

static int cmp_acc_name(const void *pa, const void *pb, void *ctx)
{
	const struct report *rp = ctx;
	const struct acc *x = pa, *y = pb;
	return str_cmp(&rp->sp, x->name, y->name);
}

int folded(struct report *rp, FILE *out, enum report_weight w)
{
	struct accset s = { 0 };
	struct acc *x;
	int rc;
	if (w == REPORT_W_LIVE) {
		for (uint64_t i = 0; rp->heap && i <= rp->hmask; i++)
			if (rp->heap[i].loc1 && (x = acc_of(&s, rp->heap[i].name)))
				x->a += rp->heap[i].size;
	} else {
		for (uint32_t g = 0; g < rp->ngrp; g++) {
			const struct group *gp = &rp->grp[g];
			if (gp->kind == MP_FREE || !(x = acc_of(&s, gp->name)))
				continue;
			x->a += w == REPORT_W_EVENTS ? gp->num : gp->alloc;
		}
	}
	if (s.n)
		qsort_r(s.v, s.n, sizeof(*s.v), cmp_acc_name, rp);
	for (uint32_t i = 0; i < s.n; i++)
		if (s.v[i].a)
			folded_line(out, rp, &s.v[i].name, 1, s.v[i].a);
	rc = s.oom ? -1 : 0;
	acc_free(&s);
	return rc;
}
