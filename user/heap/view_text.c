/* The text report of a heap copy. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "heap.h"

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

void heap_view_text(struct heap *h, const struct hview *v, FILE *f)
{
	(void)v;
	fprintf(f, "VM 0x%" PRIx64 " (%s)\n", h->L, h->var->name);
	if (h->stopped_before)
		fprintf(f, "target was stopped already: read as it was, left stopped\n");
	else
		fprintf(f, "target stopped %.3f ms\n", (double)h->pause_ns / 1e6);
	summary(h, f);
	caps(h, f);
}
