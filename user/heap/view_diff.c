/* luamemtrace heap --diff A B: what grew between two snapshots of one
 * process. VMs are paired by their main lua_State's address. Per pair:
 * reachable objects and bytes by type; growth by retention path (B's
 * largest retainers against the same object in A, found by address and
 * type, else by the same path); growth by group (tables by metatable,
 * functions by prototype, cdata by C type); and the objects of A still
 * live in B (the same address and type, reachable in both). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/exitcode.h"
#include "heap/heap.h"

#define NTYPES 13

/* -- By type ------------------------------------------------------------------ */

static void by_type(const struct heap *a, const struct heap *b, FILE *f)
{
	uint64_t n[2][NTYPES] = { { 0 } }, by[2][NTYPES] = { { 0 } };
	const struct heap *h[2] = { a, b };

	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < h[s]->n; i++) {
			const struct hobj *o = &h[s]->o[i];

			if (o->flags & HOBJ_REACHED) {
				n[s][o->gct < NTYPES ? o->gct : 0]++;
				by[s][o->gct < NTYPES ? o->gct : 0] += o->size;
			}
		}
	fprintf(f, "reachable by type\n%-10s %10s %10s %10s %14s %14s %14s\n", "type", "A", "B",
		"change", "bytes A", "bytes B", "change");
	for (unsigned g = 0; g < NTYPES; g++)
		if (n[0][g] || n[1][g])
			fprintf(f, "%-10s %10" PRIu64 " %10" PRIu64 " %+10" PRId64 " %14" PRIu64
				   " %14" PRIu64 " %+14" PRId64 "\n",
				heap_type_name(g), n[0][g], n[1][g], (int64_t)(n[1][g] - n[0][g]),
				by[0][g], by[1][g], (int64_t)(by[1][g] - by[0][g]));
}

/* -- Objects of A still live in B ----------------------------------------------- */

static void still_live(const struct heap *a, const struct heap *b, FILE *f)
{
	uint64_t n[NTYPES] = { 0 }, live[NTYPES] = { 0 }, bytes[NTYPES] = { 0 };

	for (size_t i = 0; i < a->n; i++) {
		const struct hobj *o = &a->o[i];
		unsigned g = o->gct < NTYPES ? o->gct : 0;
		long j;

		if (!(o->flags & HOBJ_REACHED))
			continue;
		n[g]++;
		j = heap_find(b, o->addr);
		if (j >= 0 && b->o[j].gct == o->gct && (b->o[j].flags & HOBJ_REACHED)) {
			live[g]++;
			bytes[g] += b->o[j].size;
		}
	}
	fprintf(f, "\nobjects of A still live in B (the same address and type)\n"
		   "%-10s %10s %10s %14s\n", "type", "in A", "still", "bytes in B");
	for (unsigned g = 0; g < NTYPES; g++)
		if (n[g])
			fprintf(f, "%-10s %10" PRIu64 " %10" PRIu64 " %14" PRIu64 "\n",
				heap_type_name(g), n[g], live[g], bytes[g]);
}

/* -- Growth by path ---------------------------------------------------------------- */

static const struct heap *sort_h;

static int by_retained(const void *x, const void *y)
{
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	uint64_t p = sort_h->retained[i], q = sort_h->retained[j];

	return p < q ? 1 : p > q ? -1 : (i > j) - (i < j);
}

/* The largest retainers of h, at most LMT_HEAP_DIFF_PATHS: their count. */
static size_t largest(const struct heap *h, uint32_t *ix)
{
	size_t m = 0;

	for (size_t i = 0; i < h->n && m < h->reached; i++)
		if (h->o[i].flags & HOBJ_REACHED)
			ix[m++] = (uint32_t)i;
	sort_h = h;
	qsort(ix, m, sizeof(*ix), by_retained);
	return m < LMT_HEAP_DIFF_PATHS ? m : LMT_HEAP_DIFF_PATHS;
}

static uint64_t fnv(const char *s)
{
	uint64_t x = 0xcbf29ce484222325ull;

	for (; *s; s++)
		x = (x ^ (uint8_t)*s) * 0x100000001b3ull;
	return x | 1; /* never 0: a u64map key */
}

struct prow {
	uint32_t i;
	uint64_t ra, rb;
	int64_t d;
};

static int by_growth(const void *x, const void *y)
{
	const struct prow *p = x, *q = y;

	return p->d < q->d ? 1 : p->d > q->d ? -1 : (p->i > q->i) - (p->i < q->i);
}

static int by_path(const struct heap *a, const struct heap *b, const struct hview *v, FILE *f)
{
	uint32_t *ia = malloc((a->reached ? a->reached : 1) * sizeof(*ia));
	uint32_t *ib = malloc((b->reached ? b->reached : 1) * sizeof(*ib));
	struct prow *r = NULL;
	struct u64map pa = { 0 };
	size_t ma = 0, mb = 0, shown = 0;
	char path[1024];
	int err = 0;

	if (!ia || !ib || !(r = calloc(LMT_HEAP_DIFF_PATHS, sizeof(*r))))
		goto out;
	ma = largest(a, ia);
	mb = largest(b, ib);
	/* A's largest by path (a hash of it) */
	for (size_t k = 0; k < ma && !err; k++) {
		heap_path(a, ia[k], path, sizeof(path));
		if (!u64map_get(&pa, fnv(path)))
			u64map_put(&pa, fnv(path), (void *)(uintptr_t)(ia[k] + 1ull), &err);
	}
	for (size_t k = 0; k < mb; k++) {
		const struct hobj *o = &b->o[ib[k]];
		long j = heap_find(a, o->addr);
		void *p;

		r[k].i = ib[k];
		r[k].rb = b->retained[ib[k]];
		if (j >= 0 && a->o[j].gct == o->gct && (a->o[j].flags & HOBJ_REACHED)) {
			r[k].ra = a->retained[j];
		} else {
			heap_path(b, ib[k], path, sizeof(path));
			if ((p = u64map_get(&pa, fnv(path))))
				r[k].ra = a->retained[(uintptr_t)p - 1];
		}
		r[k].d = (int64_t)(r[k].rb - r[k].ra);
	}
	qsort(r, mb, sizeof(*r), by_growth);
	fprintf(f, "\ngrowth by path (B's %zu largest retainers; A's by the same object, else "
		   "the same path)\n%12s %12s %12s  %-9s %s\n", mb, "grown", "retained A",
		"retained B", "type", "path");
	for (size_t k = 0; k < mb && shown < (size_t)v->top && r[k].d > 0; k++, shown++) {
		heap_path(b, r[k].i, path, sizeof(path));
		fprintf(f, "%+12" PRId64 " %12" PRIu64 " %12" PRIu64 "  %-9s %s\n", r[k].d, r[k].ra,
			r[k].rb, heap_type_name(b->o[r[k].i].gct), path);
	}
	if (!shown)
		fprintf(f, "  none grew\n");
out:
	u64map_free(&pa, NULL);
	free(ia);
	free(ib);
	free(r);
	return (!ia || !ib || !r || err) ? -1 : 0;
}

/* -- Growth by group ------------------------------------------------------------------ */

struct grow {
	char *name;
	uint64_t n[2], bytes[2];
};

struct gset {
	struct u64map at; /* group key -> index + 1 */
	struct grow *g;
	size_t n, cap;
	uint64_t over;    /* objects of groups past LMT_HEAP_DIFF_GROUPS */
};

/* Object i's group key (a kind in the top bits), or 0: none. */
static uint64_t group_key(const struct heap *h, const struct hobj *o)
{
	const struct lj_variant *var = h->var;
	long k;

	if (o->gct == var->h.ttab) {
		k = heap_find(h, heap_ref(h, o, var->h.tab_metatable));
		return k >= 0 ? 1ull << 60 | (uint64_t)k : 4ull << 60;
	}
	if (o->gct == var->lay.tfunc && !heap_u8(h, o, var->lay.fn_ffid)) {
		k = heap_find(h, heap_ref(h, o, var->lay.fn_pc) - var->lay.pt_size);
		return k >= 0 ? 2ull << 60 | (uint64_t)k : 0;
	}
	if (o->gct == var->h.tcdata)
		return 3ull << 60 | heap_u16(h, o, var->h.cd_ctypeid);
	return 0;
}

static void group_name(const struct heap *h, uint64_t key, char *buf, size_t len)
{
	char s[1024];
	uint32_t id = (uint32_t)(key & 0xffffffff);

	switch (key >> 60) {
	case 1:
		heap_path(h, id, s, sizeof(s));
		snprintf(buf, len, "table of %s", s);
		break;
	case 2:
		heap_where(h, id, s, sizeof(s));
		snprintf(buf, len, "function %s", s);
		break;
	case 3:
		heap_ctype_name(h, id, s, sizeof(s));
		snprintf(buf, len, "cdata %s", s);
		break;
	default:
		snprintf(buf, len, "table without a metatable");
	}
}

/* Adds side s's reached objects by group name into gs (names merged). */
static int groups_of(const struct heap *h, int s, struct gset *gs)
{
	struct u64map local = { 0 }; /* key -> group index + 1 */
	char name[1200];
	int err = 0;

	for (size_t i = 0; i < h->n && !err; i++) {
		const struct hobj *o = &h->o[i];
		uint64_t key;
		void *p;

		if (!(o->flags & HOBJ_REACHED) || !(key = group_key(h, o)))
			continue;
		if (!(p = u64map_get(&local, key))) {
			uint64_t hk;

			group_name(h, key, name, sizeof(name));
			hk = fnv(name);
			if (!(p = u64map_get(&gs->at, hk))) {
				if (gs->n >= LMT_HEAP_DIFF_GROUPS) {
					gs->over++;
					continue;
				}
				if (gs->n == gs->cap) {
					struct grow *ng = realloc(gs->g, (gs->cap = gs->cap ? 2 * gs->cap : 64) *
									     sizeof(*ng));
					if (!ng) {
						err = 1;
						break;
					}
					gs->g = ng;
				}
				gs->g[gs->n] = (struct grow){ .name = strdup(name) };
				if (!gs->g[gs->n].name) {
					err = 1;
					break;
				}
				p = (void *)(uintptr_t)++gs->n;
				u64map_put(&gs->at, hk, p, &err);
			}
			if (!err)
				u64map_put(&local, key, p, &err);
		}
		gs->g[(uintptr_t)p - 1].n[s]++;
		gs->g[(uintptr_t)p - 1].bytes[s] += o->size;
	}
	u64map_free(&local, NULL);
	return err ? -1 : 0;
}

static int by_change(const void *x, const void *y)
{
	const struct grow *p = x, *q = y;
	int64_t a = (int64_t)(p->bytes[1] - p->bytes[0]), b = (int64_t)(q->bytes[1] - q->bytes[0]);

	return a < b ? 1 : a > b ? -1 : strcmp(p->name, q->name);
}

static int by_group(const struct heap *a, const struct heap *b, const struct hview *v, FILE *f)
{
	struct gset gs = { 0 };
	size_t shown = 0;
	int rc = groups_of(a, 0, &gs) || groups_of(b, 1, &gs) ? -1 : 0;

	if (gs.g)
		qsort(gs.g, gs.n, sizeof(*gs.g), by_change);
	fprintf(f, "\ngrowth by group\n%10s %10s %12s %12s  %s\n", "objects A", "objects B",
		"bytes A", "bytes B", "group");
	for (size_t k = 0; k < gs.n && shown < (size_t)v->top; k++) {
		const struct grow *g = &gs.g[k];

		if (g->bytes[1] <= g->bytes[0])
			continue;
		shown++;
		fprintf(f, "%10" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %s\n", g->n[0],
			g->n[1], g->bytes[0], g->bytes[1], g->name);
	}
	if (!shown)
		fprintf(f, "  none grew\n");
	if (gs.over)
		fprintf(f, "  objects of groups past the cap (LMT_HEAP_DIFF_GROUPS): %" PRIu64 "\n",
			gs.over);
	for (size_t k = 0; k < gs.n; k++)
		free(gs.g[k].name);
	free(gs.g);
	u64map_free(&gs.at, NULL);
	return rc;
}

/* -- Entry ------------------------------------------------------------------------- */

int heap_view_diff(struct heap *a, size_t na, struct heap *b, size_t nb, const struct hview *v,
		   FILE *f)
{
	int rc = LMT_OK, first = 1;

	fprintf(f, "A: process %u, %zu VM(s); B: process %u, %zu VM(s)\n", na ? a[0].pid : 0, na,
		nb ? b[0].pid : 0, nb);
	for (size_t j = 0; j < nb; j++) {
		size_t i;

		for (i = 0; i < na && a[i].L != b[j].L; i++)
			;
		fprintf(f, "%sVM 0x%" PRIx64 "%s\n", first ? "\n" : "\n\n", b[j].L,
			i == na ? ": only in B" : "");
		first = 0;
		if (i == na)
			continue;
		if (!a[i].retained || !b[j].retained) {
			fprintf(f, "no dominator tree (over LMT_HEAP_EDGES_MAX): by type only\n");
			by_type(&a[i], &b[j], f);
			continue;
		}
		by_type(&a[i], &b[j], f);
		if (by_path(&a[i], &b[j], v, f) || by_group(&a[i], &b[j], v, f))
			return LMT_ERR;
		still_live(&a[i], &b[j], f);
		if (memcmp(&a[i].c, &(struct hcounts){ 0 }, sizeof(a[i].c)) ||
		    memcmp(&b[j].c, &(struct hcounts){ 0 }, sizeof(b[j].c))) {
			fprintf(f, "\nincomplete: a copy skipped objects or parts (each file's "
				   "report says which)\n");
			rc = LMT_LOSSY;
		}
	}
	for (size_t i = 0; i < na; i++) {
		size_t j;

		for (j = 0; j < nb && a[i].L != b[j].L; j++)
			;
		if (j == nb)
			fprintf(f, "\nVM 0x%" PRIx64 ": only in A\n", a[i].L);
	}
	return rc;
}
