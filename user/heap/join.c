/* A heap copy joined with a trace (luamemtrace heap --with FILE): each
 * object's blocks (lj_gc.c frees them apart: a table's header with its
 * colocated array, its separate array part, its hash part; a thread's
 * lua_State and its stack; every other object one block) matched by
 * address and size with the blocks live at the end of the trace, which
 * the report library's live stage keeps (report.h: report_block_at). A
 * block matched was allocated, or last reallocated, while traced: its
 * location (and, with FILE.stacks, its stack) is known; any other was
 * allocated before the trace, or by an event the trace does not have.
 *
 * Valid when the snapshot is of the instant the trace ends (or the trace
 * runs on past it): a block freed after the trace and its address given
 * to an object of the same size would be taken for the traced one. The
 * trace is of one process (its sidecar's PID is checked by heap.c); its
 * VMs share an address space, so an address live at one instant is one
 * VM's, and a stream of several VMs is matched as one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "report/report.h"
#include "util/esc.h"

#define NONE UINT32_MAX

/* A row: objects of one type by the site (or stack) that allocated
 * their blocks. */
struct jrow {
	uint32_t id;      /* report_block's site_id or stack_id */
	uint8_t gct;
	uint64_t n;       /* objects whose own block was allocated there */
	uint64_t bytes;   /* bytes of their blocks allocated there */
	const char *name; /* valid while the report lives */
	size_t len;
};

struct jrows {
	struct jrow *v;
	size_t n, cap;
	struct u64map at; /* (id << 8 | gct) + 1 -> index + 1 */
};

struct hjoin {
	const char *trace;   /* the stream's path */
	uint64_t nblocks;    /* blocks live at the trace's end */
	uint64_t *kself;     /* per object: its bytes allocated while traced */
	uint64_t *kret;      /* per object: of its retained bytes, those */
	uint64_t objs[2][2], bytes[2][2]; /* [reached][traced] */
	uint64_t matched;    /* blocks matched */
	uint64_t other_size; /* blocks at a traced address, of another size */
	int stacks;          /* the trace has stacks */
	struct jrows sites, stks; /* reached objects only */
};

/* -- Blocks of an object -------------------------------------------------- */

struct jblk {
	uint64_t addr, size;
	int own; /* the object's own block (its header): where it was born */
};

/* The blocks lj_gc.c frees for object o (their sizes add up to o->size,
 * sizes.c): how many, at most 3. */
static unsigned blocks(const struct heap *h, const struct hobj *o, struct jblk *b)
{
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	unsigned g = o->gct;

	if (g == hl->ttab) {
		uint64_t asize = heap_u32(h, o, hl->tab_asize), hmask = heap_u32(h, o, v->u.tab_hmask);
		int8_t colo = (int8_t)heap_u8(h, o, hl->tab_colo);
		unsigned n = 0;

		b[n++] = (struct jblk){ o->addr,
					hl->tab_sizeof + ((uint64_t)(uint8_t)colo & 0x7f) * 8, 1 };
		if (asize && colo <= 0)
			b[n++] = (struct jblk){ heap_ref(h, o, hl->tab_array), asize * 8, 0 };
		if (hmask)
			b[n++] = (struct jblk){ heap_ref(h, o, v->u.tab_node),
						(hmask + 1) * v->u.node_size, 0 };
		return n;
	}
	if (g == v->lay.tthread) {
		unsigned n = 0;

		if (!(o->flags & HOBJ_MAIN)) /* else in GG_State */
			b[n++] = (struct jblk){ o->addr, v->sizeof_L, 1 };
		b[n++] = (struct jblk){ heap_ref(h, o, v->lay.L_stack),
					(uint64_t)heap_u32(h, o, hl->L_stacksize) * 8, 0 };
		return n;
	}
	if (g == hl->tcdata && (heap_u8(h, o, v->lay.L_gct - 1) & 0x80)) {
		/* memcdatav: GCcdataVar's offset (its first field, copied after
		 * the header) back from the object */
		b[0] = (struct jblk){ o->addr - heap_u16(h, o, hl->cd_sizeof), o->size, 1 };
		return 1;
	}
	b[0] = (struct jblk){ o->addr, o->size, 1 };
	return 1;
}

/* -- Rows ------------------------------------------------------------------- */

static struct jrow *row(struct jrows *r, uint32_t id, uint8_t gct, const char *name, size_t len)
{
	uint64_t key = (((uint64_t)id << 8) | gct) + 1;
	void *p = u64map_get(&r->at, key);
	int err = 0;

	if (p)
		return &r->v[(uintptr_t)p - 1];
	if (r->n == r->cap) {
		size_t nc = r->cap ? 2 * r->cap : 64;
		struct jrow *nv = realloc(r->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		r->v = nv;
		r->cap = nc;
	}
	u64map_put(&r->at, key, (void *)(uintptr_t)(r->n + 1), &err);
	if (err)
		return NULL;
	r->v[r->n] = (struct jrow){ .id = id, .gct = gct, .name = name, .len = len };
	return &r->v[r->n++];
}

/* Adds a traced block of a reached object to its site's (and stack's)
 * row: 0 or -ENOMEM. */
static int count(struct hjoin *j, const struct report_block *rb, uint8_t gct, int own)
{
	struct jrow *s = row(&j->sites, rb->site_id, gct, rb->site, rb->site_len);

	if (!s)
		return -ENOMEM;
	s->n += own;
	s->bytes += rb->size;
	if (!rb->stack)
		return 0;
	if (!(s = row(&j->stks, rb->stack_id, gct, rb->stack, rb->stack_len)))
		return -ENOMEM;
	s->n += own;
	s->bytes += rb->size;
	return 0;
}

/* -- Retained bytes allocated while traced ------------------------------- */

/* kret: kself summed up the dominator tree, leaves first (each object's
 * children counted, then taken as they are done). 0 or -ENOMEM. */
static int retained(const struct heap *h, struct hjoin *j)
{
	uint32_t *left = calloc(h->n + 1, sizeof(*left)), *q = malloc((h->n + 1) * sizeof(*q));
	size_t qn = 0;

	if (!left || !q) {
		free(left);
		free(q);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->n; i++)
		if (h->idom[i] < h->n)
			left[h->idom[i]]++;
	for (size_t i = 0; i < h->n; i++) {
		j->kret[i] = h->idom[i] == NONE ? 0 : j->kself[i];
		if (h->idom[i] != NONE && !left[i])
			q[qn++] = (uint32_t)i;
	}
	/* each object is queued once, when its last child is done */
	while (qn) {
		uint32_t i = q[--qn], p = h->idom[i];

		if (p >= h->n)
			continue;
		j->kret[p] += j->kret[i];
		if (!--left[p])
			q[qn++] = p;
	}
	free(left);
	free(q);
	return 0;
}

/* -- Joining ---------------------------------------------------------------- */

static void join_free(struct hjoin *j);

int heap_join(struct heap *h, struct report *rp, const char *trace)
{
	struct hjoin *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	h->join = j;
	h->join_free = join_free;
	j->trace = trace;
	j->nblocks = report_nblocks(rp);
	if (!(j->kself = calloc(h->n ? h->n : 1, sizeof(*j->kself))) ||
	    !(j->kret = calloc(h->n ? h->n : 1, sizeof(*j->kret))))
		return -ENOMEM;
	for (size_t i = 0; i < h->n; i++) {
		const struct hobj *o = &h->o[i];
		const int reached = !!(o->flags & HOBJ_REACHED);
		struct jblk b[3];
		unsigned nb = blocks(h, o, b);
		int own = 0;

		for (unsigned k = 0; k < nb; k++) {
			struct report_block rb;

			if (!b[k].size || !report_block_at(rp, b[k].addr, &rb))
				continue;
			if (rb.size != b[k].size) {
				j->other_size++;
				continue;
			}
			j->matched++;
			j->kself[i] += b[k].size;
			own |= b[k].own;
			if (reached && count(j, &rb, o->gct, b[k].own))
				return -ENOMEM;
			if (rb.stack)
				j->stacks = 1;
		}
		j->objs[reached][own]++;
		j->bytes[reached][1] += j->kself[i];
		j->bytes[reached][0] += o->size - (j->kself[i] < o->size ? j->kself[i] : o->size);
	}
	return h->idom && h->retained ? retained(h, j) : 0;
}

static void join_free(struct hjoin *j)
{
	if (!j)
		return;
	free(j->kself);
	free(j->kret);
	free(j->sites.v);
	u64map_free(&j->sites.at, NULL);
	free(j->stks.v);
	u64map_free(&j->stks.at, NULL);
	free(j);
}

/* -- The report's part ------------------------------------------------------ */

static int by_bytes(const void *a, const void *b)
{
	const struct jrow *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->gct > y->gct) - (x->gct < y->gct);
}

static void rows(struct jrows *r, const char *title, int top, FILE *f)
{
	qsort(r->v, r->n, sizeof(*r->v), by_bytes);
	fprintf(f, "\n%s\n%10s %12s  %-9s %s\n", title, "objects", "bytes", "type", "where");
	for (size_t k = 0; k < r->n && k < (size_t)top; k++)
		fprintf(f, "%10" PRIu64 " %12" PRIu64 "  %-9s %.*s\n", r->v[k].n, r->v[k].bytes,
			heap_type_name(r->v[k].gct), (int)r->v[k].len, r->v[k].name);
}

static const struct heap *sort_h;

static int by_retained(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (sort_h->retained[x] != sort_h->retained[y])
		return sort_h->retained[x] < sort_h->retained[y] ? 1 : -1;
	return (x > y) - (x < y);
}

void heap_view_join(const struct heap *h, const struct hview *v, FILE *f)
{
	struct hjoin *j = h->join;
	static const char *const what[2] = { "before the trace (or not in it)",
					     "allocated while traced (site known)" };
	char path[1024], tp[ESC_MAX(1024)];

	fprintf(f, "\njoined with the trace %s: %" PRIu64 " blocks live at its end, %" PRIu64
		   " of them this VM's objects'\n", esc_cstr(tp, sizeof(tp), j->trace), j->nblocks, j->matched);
	fprintf(f, "%-38s %10s %14s %10s %14s\n", "", "reachable", "bytes", "garbage", "bytes");
	for (int t = 1; t >= 0; t--)
		fprintf(f, "%-38s %10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64 "\n",
			what[t], j->objs[1][t], j->bytes[1][t], j->objs[0][t], j->bytes[0][t]);
	fprintf(f, "(objects: by their own block; bytes: by each block, a table's array and "
		   "hash parts apart)\n");
	if (j->other_size)
		fprintf(f, "blocks at an address live in the trace with another size "
			   "(taken as before): %" PRIu64 "\n", j->other_size);
	if (h->retained) {
		uint32_t *ix = malloc((h->reached ? h->reached : 1) * sizeof(*ix));
		size_t m = 0;

		if (ix) {
			for (size_t i = 0; i < h->n; i++)
				if (h->o[i].flags & HOBJ_REACHED)
					ix[m++] = (uint32_t)i;
			sort_h = h;
			qsort(ix, m, sizeof(*ix), by_retained);
			fprintf(f, "\ntop retainers, retained bytes by when they were allocated\n");
			fprintf(f, "%12s %12s %12s  %-9s %s\n", "retained", "traced", "before",
				"type", "path");
			for (size_t k = 0; k < m && k < (size_t)v->top; k++) {
				uint64_t r = h->retained[ix[k]], kr = j->kret[ix[k]];

				heap_path(h, ix[k], path, sizeof(path));
				fprintf(f, "%12" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %-9s %s\n", r, kr,
					r - (kr < r ? kr : r), heap_type_name(h->o[ix[k]].gct), path);
			}
			free(ix);
		}
	}
	rows(&j->sites, "sites of reachable objects allocated while traced", v->top, f);
	if (j->stacks)
		rows(&j->stks, "stacks of reachable objects allocated while traced "
			       "(root first)", v->top, f);
}
