/* Folded stacks (flamegraph.pl, speedscope, inferno) and HEAP SUMMARY BY
 * STACK. A folded line is "frame;frame weight", root first: ';' separates
 * frames, so names hold none (report/stacks.c); flamegraph.pl takes the
 * weight after the last space, so spaces in names are fine. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


#include "report_int.h"

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

static int cmp_acc_name(const void *pa, const void *pb, void *ctx)
{
	const struct report *rp = ctx;
	const struct acc *x = pa, *y = pb;
	return str_cmp(&rp->sp, x->name, y->name);
}

void live_by_key(struct report *rp, struct accset *s)
{
	struct acc *x;

	for (uint64_t i = 0; rp->blk && i <= rp->bmask; i++)
		if (rp->blk[i].loc1 && (x = acc_of(s, rp->blk[i].key))) {
			x->a += rp->blk[i].size;
			x->b++;
		}
}

static void scale_acc(const struct report *rp, struct accset *s)
{
	for (uint32_t i = 0; rp->scale > 1 && i < s->n; i++) {
		s->v[i].a = scaled(rp, s->v[i].a);
		s->v[i].b = scaled(rp, s->v[i].b);
	}
}

void alloc_by_key(struct report *rp, int stacks, struct accset *s)
{
	struct acc *x;

	if (stacks && rp->has_stacks) {
		for (uint32_t i = 0; i < rp->fold.n; i++)
			if ((x = acc_of(s, rp->fold.v[i].name))) {
				x->a += rp->fold.v[i].a;
				x->b += rp->fold.v[i].b;
			}
		scale_acc(rp, s);
		return;
	}
	for (uint32_t g = 0; g < rp->ngrp; g++)
		if (rp->grp[g].kind != MP_FREE && (x = acc_of(s, rp->grp[g].name))) {
			x->a += rp->grp[g].alloc;
			x->b += rp->grp[g].num;
		}
	scale_acc(rp, s);
}

/* Without a companion a stack is one frame, the event's location; with
 * one, each event's folded stack (report/stacks.c), and an event without
 * a stack its location alone. */
int folded(struct report *rp, FILE *out, enum report_weight w)
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

/* Largest first, then by name. */
static int cmp_live(const void *pa, const void *pb, void *ctx)
{
	const struct acc *x = pa, *y = pb;
	if (x->a != y->a)
		return x->a > y->a ? -1 : 1;
	return cmp_acc_name(pa, pb, ctx);
}

int leak_by_stack(struct report *rp, FILE *out, int human)
{
	struct accset s = { 0 };
	int rc;

	live_by_key(rp, &s);
	if (s.n)
		qsort_r(s.v, s.n, sizeof(*s.v), cmp_live, rp);
	fputs("HEAP SUMMARY BY STACK:\n", out);
	for (uint32_t i = 0; i < s.n; i++) {
		const char *p = str_ptr(&rp->sp, s.v[i].name);
		const char *end = p + rp->sp.s[s.v[i].name].len;
		char b[40], nb[32];

		fmt_bytes(b, s.v[i].a, human);
		lua_d(nb, s.v[i].b);
		fprintf(out, "%s in %s blocks, allocated at:\n", b, nb);
		/* The frames, innermost first. */
		while (end > p) {
			const char *sep = end;
			while (sep > p && sep[-1] != ';')
				sep--;
			fprintf(out, "\t%.*s\n", (int)(end - sep), sep);
			end = sep > p ? sep - 1 : p;
		}
	}
	fputc('\n', out);
	rc = s.oom ? -1 : 0;
	acc_free(&s);
	return rc;
}

/* -- The live view (report.h: report_sites) ------------------------------- */

struct report_site *report_sites(struct report *rp, int stacks, size_t *n)
{
	struct accset s = { 0 };
	struct report_site *v = NULL;
	struct acc *x;

	report_sync(rp);
	stacks = stacks && rp->has_stacks;
	alloc_by_key(rp, stacks, &s);
	/* Held now: c bytes; the blocks are counted apart. */
	for (uint64_t i = 0; rp->blk && i <= rp->bmask; i++)
		if (rp->blk[i].loc1 &&
		    (x = acc_of(&s, stacks ? rp->blk[i].key : rp->blk[i].name)))
			x->c += rp->blk[i].size;
	if (!s.oom && (v = calloc(s.n + 1, sizeof(*v)))) {
		for (uint32_t i = 0; i < s.n; i++)
			v[i] = (struct report_site){ .name = str_ptr(&rp->sp, s.v[i].name),
						     .name_len = rp->sp.s[s.v[i].name].len,
						     .alloc = s.v[i].a, .nalloc = s.v[i].b,
						     .held = s.v[i].c };
		for (uint64_t i = 0; rp->blk && i <= rp->bmask; i++) {
			const uint64_t *k;
			if (rp->blk[i].loc1 &&
			    (k = kvmap_get(&s.idx, (uint64_t)(stacks ? rp->blk[i].key :
								    rp->blk[i].name) + 1)))
				v[*k].nheld++;
		}
		*n = s.n;
	}
	acc_free(&s);
	return v;
}
