/* Reachability from the GC's roots (edges.c's references), breadth first
 * over the copy: every object is queued at most once; the edge that first
 * reached it is kept (a shortest path from the roots, for its name). */
#include <errno.h>
#include <stdlib.h>

#include "heap/heap.h"

struct q {
	struct heap *h;
	uint32_t *v;
	size_t n;
};

static int reach(void *ctx, const struct hedge *e)
{
	struct q *q = ctx;
	struct hobj *o = &q->h->o[e->to];

	if (!(o->flags & HOBJ_REACHED)) {
		o->flags |= HOBJ_REACHED;
		q->h->par[e->to] = *e;
		q->v[q->n++] = e->to; /* at most h->n: each object once */
	}
	return 0;
}

int heap_mark(struct heap *h)
{
	struct q q = { .h = h, .v = malloc((h->n + 1) * sizeof(uint32_t)) };

	free(h->par);
	free(h->wk);
	free(h->thr);
	h->par = calloc(h->n + 1, sizeof(*h->par));
	h->wk = calloc(h->n + 1, 1);
	h->thr = malloc((h->n + 1) * sizeof(*h->thr));
	h->nthr = 0;
	if (!q.v || !h->par || !h->wk || !h->thr) {
		free(q.v);
		return -ENOMEM;
	}
	for (size_t k = 0; k < h->n; k++)
		if (h->o[k].gct == h->var->lay.tthread)
			h->thr[h->nthr++] = (uint32_t)k;
	h->c.dangling = 0;
	heap_edges(h, (uint32_t)h->n, reach, &q);
	for (size_t k = 0; k < q.n; k++)
		heap_edges(h, q.v[k], reach, &q);
	h->reached = q.n;
	h->reached_bytes = 0;
	for (size_t k = 0; k < q.n; k++)
		h->reached_bytes += h->o[q.v[k]].size;
	free(q.v);
	return 0;
}
