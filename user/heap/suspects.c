/* Leak suspects as Eclipse MAT flags them: an object that is not a root
 * (not held by the super-root directly) retaining at least
 * LMT_HEAP_SUSPECT_PCT percent of the reachable bytes, taken where the
 * bytes accumulate: none of its children in the dominator tree retains
 * that much too (package.loaded.x.cache, not package.loaded.x above it). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "heap/heap.h"

void heap_view_suspects(struct heap *h, FILE *f)
{
	uint64_t total = 0, min;
	uint8_t *big;
	char path[1024];
	int any = 0;

	if (!h->retained || !h->idom)
		return;
	for (size_t i = 0; i < h->n; i++)
		if (h->o[i].flags & HOBJ_REACHED)
			total += h->o[i].size;
	min = (total * LMT_HEAP_SUSPECT_PCT + 99) / 100;
	if (!(big = calloc(h->n ? h->n : 1, 1)))
		return;
	/* big[i]: 1 over the share; 2 over it with a child over it too */
	for (size_t i = 0; i < h->n; i++)
		if ((h->o[i].flags & HOBJ_REACHED) && h->retained[i] >= min && min)
			big[i] |= 1;
	for (size_t i = 0; i < h->n; i++)
		if ((big[i] & 1) && h->idom[i] < h->n)
			big[h->idom[i]] |= 2;
	fprintf(f, "\nleak suspects (an object, not a root, retaining >= %d%% of the %" PRIu64
		   " reachable bytes)\n", LMT_HEAP_SUSPECT_PCT, total);
	for (size_t i = 0; i < h->n; i++) {
		if (big[i] != 1 || h->idom[i] > h->n || !h->par || h->par[i].kind == HE_ROOT)
			continue;
		if (!any++)
			fprintf(f, "%12s %6s  %-9s %s\n", "retained", "share", "type", "path");
		heap_path(h, (uint32_t)i, path, sizeof(path));
		fprintf(f, "%12" PRIu64 " %5.1f%%  %-9s %s\n", h->retained[i],
			100.0 * (double)h->retained[i] / (double)total, heap_type_name(h->o[i].gct),
			path);
	}
	if (!any)
		fprintf(f, "  none\n");
	free(big);
}
