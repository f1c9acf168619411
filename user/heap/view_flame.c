/* luamemtrace heap --flamegraph: the tracer's flame graph page
 * (report/flame.c, its page and assets) over the dominator tree. A frame
 * is an object, named by its step from its immediate dominator (its path
 * past the dominator's, or its whole path when it is held otherwise),
 * with its type; a frame's weight is the object's retained bytes: each
 * key holds the object's own bytes and those of its dominated objects
 * that have no frame of their own (LMT_HEAP_FLAME_FRAMES, _DEPTH).
 * Values per key: [bytes, objects] three times (the page's weights). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "report/flame.h"

#define NOFRAME UINT32_MAX

struct hfl {
	const struct heap *h;
	uint32_t *frame;  /* per object: its frame, or NOFRAME */
	char **key;       /* per frame: its folded key */
	uint32_t *obj;    /* per frame: its object */
	uint8_t *depth;   /* per frame */
	uint64_t (*v)[2]; /* per frame: bytes, objects */
	uint32_t n;
};

static const struct heap *sort_h;

static int by_retained(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint64_t x = sort_h->retained[i], y = sort_h->retained[j];

	return x < y ? 1 : x > y ? -1 : (i > j) - (i < j);
}

/* Frame label of object i: its path past its dominator d's, ';' written
 * as Lua's \059 (the page splits keys at ';'), and its type. */
static void label(const struct heap *h, uint32_t i, char *out, size_t len)
{
	char p[1024], dp[1024], *s = p;
	size_t n = 0, dl;
	uint32_t d = h->idom[i];

	heap_path(h, i, p, sizeof(p));
	if (d < h->n) {
		heap_path(h, d, dp, sizeof(dp));
		dl = strlen(dp);
		if (dl && strlen(p) > dl && !strncmp(p, dp, dl))
			s = p + dl;
	}
	for (; *s && n + 5 < len; s++) {
		if (*s == ';') {
			memcpy(out + n, "\\059", 4);
			n += 4;
		} else {
			out[n++] = *s;
		}
	}
	snprintf(out + n, len - n, " (%s)", heap_type_name(h->o[i].gct));
}

/* Picks the frames: objects by retained size, each under its
 * dominator's frame (a dominator retains more: it comes first). */
static int frames(struct hfl *x)
{
	const struct heap *h = x->h;
	uint32_t *ix = malloc((h->reached ? h->reached : 1) * sizeof(*ix));
	size_t m = 0;
	char lb[LMT_HEAP_FLAME_LABEL];

	if (!ix)
		return -1;
	for (size_t i = 0; i < h->n && m < h->reached; i++)
		if ((h->o[i].flags & HOBJ_REACHED) && h->idom[i] <= h->n)
			ix[m++] = (uint32_t)i;
	sort_h = h;
	qsort(ix, m, sizeof(*ix), by_retained);
	for (size_t k = 0; k < m && x->n < LMT_HEAP_FLAME_FRAMES; k++) {
		uint32_t i = ix[k], d = h->idom[i], pf = d < h->n ? x->frame[d] : NOFRAME;
		size_t pl;
		char *key;

		if (d < h->n && (pf == NOFRAME || x->depth[pf] >= LMT_HEAP_FLAME_DEPTH))
			continue;
		label(h, i, lb, sizeof(lb));
		pl = pf == NOFRAME ? 0 : strlen(x->key[pf]);
		if (!(key = malloc(pl + 1 + strlen(lb) + 1))) {
			free(ix);
			return -1;
		}
		if (pl)
			memcpy(key, x->key[pf], pl);
		sprintf(key + pl, "%s%s", pl ? ";" : "", lb);
		x->key[x->n] = key;
		x->obj[x->n] = i;
		x->depth[x->n] = (uint8_t)(pf == NOFRAME ? 1 : x->depth[pf] + 1);
		x->frame[i] = x->n++;
	}
	free(ix);
	return 0;
}

/* Each reached object's bytes to its nearest frame (itself, or up its
 * dominators; "(more objects)" at the top when none has one: index n). */
static void weigh(struct hfl *x, uint32_t *near)
{
	const struct heap *h = x->h;

	for (size_t i = 0; i < h->n; i++)
		near[i] = NOFRAME;
	for (size_t i = 0; i < h->n; i++) {
		uint32_t at = (uint32_t)i, f;

		if (!(h->o[i].flags & HOBJ_REACHED) || h->idom[i] > h->n)
			continue;
		/* up to a frame or a known nearest one; then the path set */
		while (x->frame[at] == NOFRAME && near[at] == NOFRAME && h->idom[at] < h->n)
			at = h->idom[at];
		f = x->frame[at] != NOFRAME ? x->frame[at] : near[at] != NOFRAME ? near[at] : x->n;
		for (uint32_t u = (uint32_t)i; u != at; u = h->idom[u])
			near[u] = f;
		near[at] = f;
		x->v[f][0] += h->o[i].size;
		x->v[f][1]++;
	}
}

static int add(struct fl *page, const struct hfl *x, const char *root)
{
	size_t rl = root ? strlen(root) + 1 : 0;

	for (uint32_t k = 0; k <= x->n; k++) {
		const char *key = k < x->n ? x->key[k] : "(more objects)";
		size_t kl = strlen(key);
		uint64_t v[6] = { x->v[k][0], x->v[k][1], x->v[k][0], x->v[k][1], x->v[k][0],
				  x->v[k][1] };
		char *b;
		int rc;

		if (!x->v[k][1])
			continue;
		if (!(b = malloc(rl + kl + 1)))
			return -1;
		if (root)
			sprintf(b, "%s;", root);
		memcpy(b + rl, key, kl + 1);
		rc = flame_key(page, b, rl + kl, v);
		free(b);
		if (rc)
			return -1;
	}
	return 0;
}

static int one(struct fl *page, const struct heap *h, const char *root)
{
	struct hfl x = { .h = h };
	uint32_t *near = NULL;
	int rc = -1;

	x.frame = malloc((h->n ? h->n : 1) * sizeof(*x.frame));
	near = malloc((h->n ? h->n : 1) * sizeof(*near));
	x.key = calloc(LMT_HEAP_FLAME_FRAMES, sizeof(*x.key));
	x.obj = calloc(LMT_HEAP_FLAME_FRAMES, sizeof(*x.obj));
	x.depth = calloc(LMT_HEAP_FLAME_FRAMES, 1);
	x.v = calloc(LMT_HEAP_FLAME_FRAMES + 1, sizeof(*x.v));
	if (x.frame && near && x.key && x.obj && x.depth && x.v) {
		for (size_t i = 0; i < h->n; i++)
			x.frame[i] = NOFRAME;
		if (!frames(&x)) {
			weigh(&x, near);
			rc = add(page, &x, root);
		}
	}
	for (uint32_t k = 0; x.key && k < x.n; k++)
		free(x.key[k]);
	free(x.key);
	free(x.obj);
	free(x.depth);
	free(x.v);
	free(x.frame);
	free(near);
	return rc;
}

int heap_view_flame(struct heap *hs, size_t n, const char *const *labels, const char *title,
		    FILE *out)
{
	struct fl *page = flame_new();
	uint64_t bytes = 0, objs = 0;
	char sum[256];
	int rc = page ? 0 : -1;

	for (size_t i = 0; i < n && !rc; i++) {
		if (!hs[i].var)
			continue;
		if (!hs[i].retained) {
			fprintf(stderr, "luamemtrace heap: no dominator tree (over "
					"LMT_HEAP_EDGES_MAX): no flame graph\n");
			rc = -1;
			break;
		}
		for (size_t k = 0; k < hs[i].n; k++)
			if (hs[i].o[k].flags & HOBJ_REACHED) {
				bytes += hs[i].o[k].size;
				objs++;
			}
		rc = one(page, &hs[i], n > 1 ? labels[i] : NULL);
	}
	snprintf(sum, sizeof(sum),
		 "%" PRIu64 " reachable bytes in %" PRIu64 " objects, by retention path from the "
		 "roots (the dominator tree): a frame's width is what the collector would free "
		 "if that object went.", bytes, objs);
	if (!rc)
		rc = flame_heap(page, sum);
	if (!rc)
		rc = flame_write(page, out, title);
	flame_free(page);
	return rc;
}
