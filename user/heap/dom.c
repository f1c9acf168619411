/* The dominator tree of the reachable graph and each object's retained
 * size: Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm"
 * (2001), over a reverse postorder from the super-root (h->n), whose
 * successors are the GC's roots. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"

#define NONE UINT32_MAX

struct elist {
	uint32_t *f, *t;
	uint64_t n, cap;
	int over;
};

static int add_edge(void *ctx, const struct hedge *e)
{
	struct elist *l = ctx;

	if (l->n == l->cap) {
		uint64_t nc = l->cap ? 2 * l->cap : 4096;
		uint32_t *nf, *nt;

		if (l->n >= LMT_HEAP_EDGES_MAX) {
			l->over = 1;
			return 1;
		}
		if (nc > LMT_HEAP_EDGES_MAX)
			nc = LMT_HEAP_EDGES_MAX;
		nf = realloc(l->f, nc * sizeof(*nf));
		if (nf)
			l->f = nf;
		nt = nf ? realloc(l->t, nc * sizeof(*nt)) : NULL;
		if (!nt)
			return -1;
		l->t = nt;
		l->cap = nc;
	}
	l->f[l->n] = e->from;
	l->t[l->n++] = e->to;
	return 0;
}

/* Compressed rows: off[v]..off[v+1] index adj; by from (succ) or to (pred). */
static int csr(const struct elist *l, size_t nn, int by_to, uint64_t **off, uint32_t **adj)
{
	const uint32_t *key = by_to ? l->t : l->f, *val = by_to ? l->f : l->t;
	uint64_t *o = calloc(nn + 1, sizeof(*o)), *fill;
	uint32_t *a = malloc((l->n ? l->n : 1) * sizeof(*a));

	if (!o || !a || !(fill = malloc((nn + 1) * sizeof(*fill)))) {
		free(o);
		free(a);
		return -1;
	}
	for (uint64_t k = 0; k < l->n; k++)
		o[key[k] + 1]++;
	for (size_t v = 0; v < nn; v++)
		o[v + 1] += o[v];
	memcpy(fill, o, (nn + 1) * sizeof(*fill));
	for (uint64_t k = 0; k < l->n; k++)
		a[fill[key[k]]++] = val[k];
	free(fill);
	*off = o;
	*adj = a;
	return 0;
}

static uint32_t intersect(const uint32_t *idom, const uint32_t *po, uint32_t a, uint32_t b)
{
	while (a != b) {
		while (po[a] < po[b])
			a = idom[a];
		while (po[b] < po[a])
			b = idom[b];
	}
	return a;
}

/* Postorder numbers by an iterative depth-first search from root over
 * the successors so/sa: po[v] (NONE if v is not reached), order[k] the
 * node numbered k, *npo how many. 0, or -1 out of memory. */
static int postorder(const uint64_t *so, const uint32_t *sa, size_t nn, uint32_t root,
		     uint32_t *po, uint32_t *order, uint32_t *npo)
{
	uint32_t *stk = malloc(nn * sizeof(*stk));
	uint64_t *pos = malloc(nn * sizeof(*pos));
	uint8_t *seen = calloc(nn, 1);
	size_t sp = 0;
	int err = -1;

	if (!stk || !pos || !seen)
		goto out;
	for (size_t v = 0; v < nn; v++) {
		po[v] = NONE;
		pos[v] = so[v];
	}
	*npo = 0;
	stk[sp++] = root;
	seen[root] = 1;
	while (sp) {
		uint32_t v = stk[sp - 1];

		if (pos[v] < so[v + 1]) {
			uint32_t w = sa[pos[v]++];

			if (!seen[w]) {
				seen[w] = 1;
				stk[sp++] = w; /* each node once: sp <= nn */
			}
		} else {
			po[v] = *npo;
			order[(*npo)++] = v;
			sp--;
		}
	}
	err = 0;
out:
	free(stk);
	free(pos);
	free(seen);
	return err;
}

/* Immediate dominators into idom (all NONE on entry), to a fixed point
 * over the reverse postorder, from the predecessors po_off/pa. */
static void idoms(uint32_t *idom, const uint32_t *po, const uint32_t *order, uint32_t npo,
		  const uint64_t *po_off, const uint32_t *pa, uint32_t root)
{
	int changed;

	idom[root] = root;
	do {
		changed = 0;
		for (uint32_t k = npo - 1; k-- > 0;) {
			uint32_t b = order[k], nd = NONE;

			for (uint64_t e = po_off[b]; e < po_off[b + 1]; e++) {
				uint32_t p = pa[e];

				if (idom[p] == NONE)
					continue;
				nd = nd == NONE ? p : intersect(idom, po, p, nd);
			}
			if (nd != NONE && idom[b] != nd) {
				idom[b] = nd;
				changed = 1;
			}
		}
	} while (changed);
}

int heap_dom(struct heap *h)
{
	const size_t nn = h->n + 1, root = h->n;
	uint64_t dangling = h->c.dangling, *so = NULL, *po_off = NULL;
	uint32_t *sa = NULL, *pa = NULL, *po = NULL, *order = NULL;
	struct elist l = { 0 };
	uint32_t npo = 0;
	int err = -ENOMEM;

	/* The edges, once (heap_edges counts dangling references again) */
	if (heap_edges(h, (uint32_t)root, add_edge, &l) < 0)
		goto out;
	for (size_t i = 0; i < h->n && !l.over; i++)
		if ((h->o[i].flags & HOBJ_REACHED) && heap_edges(h, (uint32_t)i, add_edge, &l) < 0)
			goto out;
	h->c.dangling = dangling;
	h->edges = l.n;
	if (l.over) {
		h->dom_over = 1;
		err = -E2BIG;
		goto out;
	}
	if (csr(&l, nn, 0, &so, &sa) || csr(&l, nn, 1, &po_off, &pa))
		goto out;
	free(l.f);
	free(l.t);
	l.f = l.t = NULL;

	po = malloc(nn * sizeof(*po));
	order = malloc(nn * sizeof(*order));
	h->idom = malloc(nn * sizeof(*h->idom));
	h->retained = calloc(nn, sizeof(*h->retained));
	if (!po || !order || !h->idom || !h->retained ||
	    postorder(so, sa, nn, (uint32_t)root, po, order, &npo))
		goto out;
	for (size_t v = 0; v < nn; v++)
		h->idom[v] = NONE;
	idoms(h->idom, po, order, npo, po_off, pa, (uint32_t)root);

	/* Retained: each node's size, added up the tree (postorder) */
	for (uint32_t k = 0; k < npo; k++) {
		uint32_t v = order[k];

		if (v != root)
			h->retained[v] += h->o[v].size;
		if (v != root && h->idom[v] != NONE)
			h->retained[h->idom[v]] += h->retained[v];
	}
	err = 0;
out:
	h->c.dangling = dangling;
	free(l.f);
	free(l.t);
	free(so);
	free(sa);
	free(po_off);
	free(pa);
	free(po);
	free(order);
	if (err) {
		free(h->idom);
		free(h->retained);
		h->idom = NULL;
		h->retained = NULL;
	}
	return err;
}
