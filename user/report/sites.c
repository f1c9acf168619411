/* The live view's rows (report.h: report_sites), for luamemtrace top: by
 * location or by stack, what each allocated and holds now. An output:
 * reads the aggregate, calls no other output. */
#include <stdlib.h>

#include "keys.h"
#include "live.h"

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
