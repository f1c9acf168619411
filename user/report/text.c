/* The standard parser's report: ALLOCATIONS, REALLOCATIONS,
 * DEALLOCATIONS, HEAP SUMMARY (and BY STACK), ALIASES; and the summary's
 * top sites. An output: reads the aggregate, calls no other output. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/esc.h"
#include "keys.h"
#include "live.h"
#include "text.h"
#include "util/numfmt.h"

static int cmp_group(const void *a, const void *b, void *ctx)
{
	const struct report *rp = ctx;
	const struct group *x = &rp->grp[*(const uint32_t *)a];
	const struct group *y = &rp->grp[*(const uint32_t *)b];
	const struct loc *lx = &rp->loc[x->loc], *ly = &rp->loc[y->loc];
	int c;
	if (x->num != y->num)
		return x->num > y->num ? -1 : 1;
	if (x->alloc != y->alloc)
		return x->alloc > y->alloc ? -1 : 1;
	if ((c = str_cmp(&rp->sp, x->name, y->name)))
		return c;
	if (x->free != y->free)
		return x->free > y->free ? -1 : 1;
	if (lx->addr != ly->addr)
		return lx->addr < ly->addr ? -1 : 1;
	if (lx->line != ly->line)
		return lx->line < ly->line ? -1 : 1;
	return (lx->trace > ly->trace) - (lx->trace < ly->trace);
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct report *rp = ctx;
	return str_cmp(&rp->sp, *(const uint32_t *)a, *(const uint32_t *)b);
}

static void put_name(FILE *out, const struct report *rp, uint32_t id)
{
	fwrite(str_ptr(&rp->sp, id), 1, rp->sp.s[id].len, out);
}

/* humanize.lua render() for one event kind: its first max groups, each
 * line after indent. */
static int render(struct report *rp, FILE *out, uint8_t kind, int human, const char *indent,
		  uint32_t max)
{
	uint32_t *ids = malloc(((size_t)rp->ngrp + 1) * sizeof(*ids)), n = 0, *names = NULL;
	uint64_t *start = calloc((size_t)rp->ngrp + 2, sizeof(*start));
	uint32_t *oname = malloc((rp->on + 1) * sizeof(*oname));
	if (!ids || !start || !oname) {
		free(ids);
		free(start);
		free(oname);
		return -1;
	}
	for (uint32_t g = 0; g < rp->ngrp; g++) {
		if (rp->grp[g].kind == kind)
			ids[n++] = g;
		start[g + 1] = start[g] + nowners(rp, g);
	}
	/* Owner names bucketed by group (counting sort over the table). */
	for (uint64_t k = 0; rp->otab && k <= rp->omask; k++)
		if (rp->otab[k].g1)
			oname[start[rp->otab[k].g1 - 1]++] = rp->otab[k].name;
	for (uint32_t g = rp->ngrp; g > 0; g--)
		start[g] = start[g - 1];
	start[0] = 0;
	qsort_r(ids, n, sizeof(*ids), cmp_group, rp);
	for (uint32_t i = 0; i < n && i < max; i++) {
		const struct group *gp = &rp->grp[ids[i]];
		char num[32], a[40], f[40];
		const uint32_t nn = nowners(rp, ids[i]);
		lua_d(num, scaled(rp, gp->num));
		fmt_bytes(a, scaled(rp, gp->alloc), human);
		fmt_bytes(f, scaled(rp, gp->free), human);
		fputs(indent, out);
		put_name(out, rp, gp->name);
		fprintf(out, ": %s events\t+%s\t-%s\n", num, a, f);
		if (!nn)
			continue;
		names = oname + start[ids[i]];
		qsort_r(names, nn, sizeof(*names), cmp_name, rp);
		fprintf(out, "%s\tOverrides:\n", indent);
		for (uint32_t k = 0; k < nn; k++) {
			fprintf(out, "%s\t\t", indent);
			put_name(out, rp, names[k]);
			fputc('\n', out);
		}
		fputc('\n', out);
	}
	free(oname);
	free(start);
	free(ids);
	return 0;
}

/* process.lua form_heap_delta(): a = dbytes (as int64), b = nalloc, c = nfree. */
static int heap_delta(struct report *rp, struct accset *s)
{
	struct acc *x;
	for (uint32_t g = 0; g < rp->ngrp; g++) {
		const struct group *gp = &rp->grp[g];
		if (gp->kind == MP_ALLOC && gp->alloc > 0 && (x = acc_of(s, gp->name))) {
			x->a += gp->alloc;
			x->b += gp->num;
		}
	}
	/* Owners of REALLOC and FREE groups (ALLOC groups have none). */
	for (uint64_t k = 0; rp->otab && k <= rp->omask; k++) {
		const struct oslot *ow = &rp->otab[k];
		if (ow->g1) {
			if (!(x = acc_of(s, ow->name)))
				break;
			if (ow->allocated > 0) {
				x->a += ow->allocated;
				x->b += ow->count;
			}
			if (ow->freed > 0) {
				x->a -= ow->freed;
				x->c += ow->count;
			}
		}
	}
	return s->oom ? -1 : 0;
}

static int cmp_acc_a(const void *pa, const void *pb, void *ctx)
{
	const struct report *rp = ctx;
	const struct acc *x = pa, *y = pb;
	const int64_t a = (int64_t)x->a, b = (int64_t)y->a;
	if (a != b)
		return a > b ? -1 : 1;
	return str_cmp(&rp->sp, x->name, y->name);
}

/* humanize.lua leak_info(). */
static int leak_info(struct report *rp, FILE *out, int human)
{
	struct accset s = { 0 };
	int rc = heap_delta(rp, &s);
	if (s.n)
		qsort_r(s.v, s.n, sizeof(*s.v), cmp_acc_a, rp);
	fputs("HEAP SUMMARY:\n", out);
	for (uint32_t i = 0; i < s.n; i++) {
		const struct acc *x = &s.v[i];
		char b[40], na[32], nf[32];
		if ((int64_t)x->a <= 0)
			break;
		fmt_bytes(b, x->a, human);
		lua_d(na, x->b);
		lua_d(nf, x->c);
		put_name(out, rp, x->name);
		fprintf(out, " holds %s: %s allocs, %s frees\n", b, na, nf);
	}
	fputc('\n', out);
	acc_free(&s);
	return rc;
}

/* humanize.lua aliases(): lines split on '\n', empty ones skipped. */
static void aliases(struct report *rp, FILE *out)
{
	if (!rp->nalias)
		return;
	fputs("ALIASES:\n", out);
	for (uint32_t k = 0; k < rp->nalias; k++) {
		const uint32_t id = rp->alias[k];
		const char *p = str_ptr(&rp->sp, id), *end = p + rp->sp.s[id].len;
		unsigned lineno = 1;
		fprintf(out, "function_alias_%u:\n", k + 1);
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *e = nl ? nl : end;
			if (e > p) {
				rp->sb.len = 0;
				sb_escaped(&rp->sb, p, (size_t)(e - p), ESC_TAB);
				fprintf(out, "%u\t| ", lineno++);
				if (!rp->sb.oom)
					fwrite(rp->sb.p, 1, rp->sb.len, out);
				fputc('\n', out);
			}
			p = e + 1;
		}
		fputs("\n\n", out);
	}
}

/* Largest first, then by name. */
static int cmp_live(const void *pa, const void *pb, void *ctx)
{
	const struct acc *x = pa, *y = pb;
	if (x->a != y->a)
		return x->a > y->a ? -1 : 1;
	return cmp_acc_name(pa, pb, ctx);
}

/* HEAP SUMMARY BY STACK: live blocks by their allocating stack. */
static int leak_by_stack(struct report *rp, FILE *out, int human)
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

int text_print(struct report *rp, FILE *out, const struct report_opts *o)
{
	int rc = 0;

	if (rp->scale > 1)
		fprintf(out, "ESTIMATES: a --duty sample; what was allocated and freed is "
			     "scaled x%.3f to the whole run, HEAP SUMMARY is the sample's own "
			     "(blocks allocated in a window whose free no window saw)\n\n",
			rp->scale);
	if (o->format != REPORT_LEAK_ONLY) {
		static const char *const title[] = { "ALLOCATIONS", "REALLOCATIONS",
						     "DEALLOCATIONS" };
		static const uint8_t kinds[] = { MP_ALLOC, MP_REALLOC, MP_FREE };
		for (int k = 0; k < 3; k++) {
			fprintf(out, "%s\n", title[k]);
			rc |= render(rp, out, kinds[k], o->human, "", UINT32_MAX);
			fputc('\n', out);
		}
	}
	rc |= leak_info(rp, out, o->human);
	if (o->by_stack)
		rc |= leak_by_stack(rp, out, o->human);
	aliases(rp, out);
	return rc ? -1 : 0;
}

/* The first n lines of ALLOCATIONS (ALLOC groups have no Overrides, so a
 * line per group), as `report` prints them: a summary that adds kinds or
 * merges names would match no line of it. */
void report_print_top(struct report *rp, FILE *out, int n, int human)
{
	report_sync(rp);
	fprintf(out, "  top allocation sites (first lines of ALLOCATIONS in "
		     "'luamemtrace report%s'):\n", human ? " --human-readable" : "");
	render(rp, out, MP_ALLOC, human, "  ", n > 0 ? (uint32_t)n : 0);
}
