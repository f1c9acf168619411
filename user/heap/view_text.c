/* The text report of a heap copy. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"

#define NTYPES 13

struct trow {
	uint64_t n, bytes, live_n, live_bytes;
};

static void summary(const struct heap *h, FILE *f)
{
	struct trow t[NTYPES], all;
	uint64_t other = 0;

	memset(t, 0, sizeof(t));
	memset(&all, 0, sizeof(all));
	for (size_t i = 0; i < h->n; i++) {
		const struct hobj *o = &h->o[i];
		struct trow *r = &t[o->gct < NTYPES ? o->gct : 0];

		r->n++;
		r->bytes += o->size;
		if (o->flags & HOBJ_REACHED) {
			r->live_n++;
			r->live_bytes += o->size;
		}
	}
	fprintf(f, "%-10s %10s %14s %10s %14s %10s %14s\n", "type", "objects", "bytes",
		"reachable", "bytes", "garbage", "bytes");
	for (unsigned g = 0; g < NTYPES; g++) {
		const struct trow *r = &t[g];

		if (!r->n)
			continue;
		fprintf(f, "%-10s %10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64
			   " %10" PRIu64 " %14" PRIu64 "\n",
			heap_type_name(g), r->n, r->bytes, r->live_n, r->live_bytes,
			r->n - r->live_n, r->bytes - r->live_bytes);
		all.n += r->n;
		all.bytes += r->bytes;
		all.live_n += r->live_n;
		all.live_bytes += r->live_bytes;
	}
	fprintf(f, "%-10s %10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64 " %10" PRIu64
		   " %14" PRIu64 "\n",
		"all", all.n, all.bytes, all.live_n, all.live_bytes, all.n - all.live_n,
		all.bytes - all.live_bytes);
	fprintf(f, "\nreconciliation with gc.total\n");
	fprintf(f, "  %-46s %14" PRIu64 "\n", "objects walked", all.bytes);
	for (unsigned k = 0; k < HOTHER_N; k++) {
		fprintf(f, "  %-46s %14" PRIu64 "\n", heap_other_name[k], h->other[k]);
		other += h->other[k];
	}
	fprintf(f, "  %-46s %14" PRIu64 "\n", "sum", all.bytes + other);
	fprintf(f, "  %-46s %14" PRIu64 "\n", "gc.total", h->gc_total);
	fprintf(f, "  %-46s %14" PRId64 "\n", "remainder (gc.total - sum)",
		(int64_t)(h->gc_total - (all.bytes + other)));
}

static void caps(const struct heap *h, FILE *f)
{
	const struct hcounts *c = &h->c;
	const struct { const char *what; uint64_t n; } r[] = {
		{ "objects past the object cap", c->over_objs },
		{ "objects past the copy's byte cap", c->over_bytes },
		{ "objects copied in part (a cap, or unreadable)", c->short_objs },
		{ "unreadable object addresses", c->unreadable },
		{ "objects of an unknown type", c->bad_type },
		{ "object lists cut (a repeat, or the cap)", c->list_cut },
		{ "copy ended at the stop's time cap", c->timed_out },
		{ "references to no walked object", c->dangling },
	};
	int any = 0;

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		if (!r[i].n)
			continue;
		if (!any++)
			fprintf(f, "\nincomplete:\n");
		fprintf(f, "  %s: %" PRIu64 "\n", r[i].what, r[i].n);
	}
}

/* -- Top lists ------------------------------------------------------------ */

static const struct heap *sort_h;

static int by_retained(const void *a, const void *b)
{
	uint64_t x = sort_h->retained[*(const uint32_t *)a], y = sort_h->retained[*(const uint32_t *)b];

	return x < y ? 1 : x > y ? -1 : (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int by_size(const void *a, const void *b)
{
	uint64_t x = sort_h->o[*(const uint32_t *)a].size, y = sort_h->o[*(const uint32_t *)b].size;

	return x < y ? 1 : x > y ? -1 : (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static void tops(const struct heap *h, const struct hview *v, FILE *f)
{
	uint32_t *ix = malloc((h->reached ? h->reached : 1) * sizeof(*ix));
	size_t m = 0;
	char path[1024];

	if (!ix)
		return;
	for (size_t i = 0; i < h->n; i++)
		if (h->o[i].flags & HOBJ_REACHED)
			ix[m++] = (uint32_t)i;
	sort_h = h;
	if (h->retained) {
		qsort(ix, m, sizeof(*ix), by_retained);
		fprintf(f, "\ntop retainers (retained: the bytes freed with it)\n");
		fprintf(f, "%12s %10s  %-9s %s\n", "retained", "shallow", "type", "path");
		for (size_t k = 0; k < m && k < (size_t)v->top; k++) {
			heap_path(h, ix[k], path, sizeof(path));
			fprintf(f, "%12" PRIu64 " %10" PRIu64 "  %-9s %s\n", h->retained[ix[k]],
				h->o[ix[k]].size, heap_type_name(h->o[ix[k]].gct), path);
		}
	} else {
		fprintf(f, "\nno dominator tree: %" PRIu64 " edges are over its cap\n", h->edges);
	}
	qsort(ix, m, sizeof(*ix), by_size);
	fprintf(f, "\nlargest objects\n");
	fprintf(f, "%12s  %-9s %s\n", "bytes", "type", "path");
	for (size_t k = 0; k < m && k < (size_t)v->top; k++) {
		heap_path(h, ix[k], path, sizeof(path));
		fprintf(f, "%12" PRIu64 "  %-9s %s\n", h->o[ix[k]].size,
			heap_type_name(h->o[ix[k]].gct), path);
	}
	free(ix);
}

/* -- Groups ------------------------------------------------------------------ */

struct grp {
	uint32_t key; /* the metatable or prototype object */
	uint64_t n, bytes;
};

static int by_bytes(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;

	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : (x->key > y->key) - (x->key < y->key);
}

/* Reached tables by metatable (protos 0), or Lua functions by prototype. */
static void groups(const struct heap *h, const struct hview *v, int protos, FILE *f)
{
	const struct lj_variant *var = h->var;
	struct u64map at = { 0 };
	struct grp *g = NULL;
	size_t ng = 0, cap = 0;
	char name[1024];
	int err;

	for (size_t i = 0; i < h->n; i++) {
		const struct hobj *o = &h->o[i];
		long key;
		void *p;

		if (!(o->flags & HOBJ_REACHED))
			continue;
		if (protos) {
			if (o->gct != var->lay.tfunc || heap_u8(h, o, var->lay.fn_ffid))
				continue;
			key = heap_find(h, heap_ref(h, o, var->lay.fn_pc) - var->lay.pt_size);
		} else {
			if (o->gct != var->h.ttab)
				continue;
			key = heap_find(h, heap_ref(h, o, var->h.tab_metatable));
		}
		if (key < 0)
			continue;
		if (!(p = u64map_get(&at, (uint64_t)key + 1))) {
			if (ng == cap) {
				struct grp *ngp = realloc(g, (cap = cap ? 2 * cap : 64) * sizeof(*g));

				if (!ngp)
					break;
				g = ngp;
			}
			g[ng] = (struct grp){ .key = (uint32_t)key };
			p = (void *)(uintptr_t)++ng;
			u64map_put(&at, (uint64_t)key + 1, p, &err);
			if (err)
				break;
		}
		g[(uintptr_t)p - 1].n++;
		g[(uintptr_t)p - 1].bytes += o->size;
	}
	u64map_free(&at, NULL);
	if (g)
		qsort(g, ng, sizeof(*g), by_bytes);
	fprintf(f, "\n%s\n%10s %12s  %s\n", protos ? "functions by prototype" : "tables by metatable",
		"objects", "bytes", protos ? "prototype" : "metatable");
	for (size_t k = 0; k < ng && k < (size_t)v->top; k++) {
		if (protos)
			heap_where(h, g[k].key, name, sizeof(name));
		else
			heap_path(h, g[k].key, name, sizeof(name));
		fprintf(f, "%10" PRIu64 " %12" PRIu64 "  %s\n", g[k].n, g[k].bytes, name);
	}
	free(g);
}

void heap_view_text(struct heap *h, const struct hview *v, FILE *f)
{
	fprintf(f, "VM 0x%" PRIx64 " (%s)\n", h->L, h->var->name);
	if (h->stopped_before)
		fprintf(f, "target was stopped already: read as it was, left stopped\n");
	else
		fprintf(f, "target stopped %.3f ms\n", (double)h->pause_ns / 1e6);
	summary(h, f);
	caps(h, f);
	tops(h, v, f);
	heap_view_suspects(h, f);
	groups(h, v, 0, f);
	groups(h, v, 1, f);
	if (h->join)
		heap_view_join(h, v, f);
	heap_view_groups(h, v, f);
}
