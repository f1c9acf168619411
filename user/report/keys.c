/* The aggregate by key (keys.h): what each key allocated and holds. */
#include "keys.h"

void live_by_key(struct report *rp, struct accset *s)
{
	struct acc *x;

	for (uint64_t i = 0; rp->blk && i <= rp->bmask; i++)
		if (rp->blk[i].loc1 && (x = acc_of(s, rp->blk[i].key))) {
			x->a += rp->blk[i].size;
			x->b++;
		}
}

static void scale_acc(const struct report *rp, struct accset *s)
{
	for (uint32_t i = 0; rp->scale > 1 && i < s->n; i++) {
		s->v[i].a = scaled(rp, s->v[i].a);
		s->v[i].b = scaled(rp, s->v[i].b);
	}
}

void alloc_by_key(struct report *rp, int stacks, struct accset *s)
{
	struct acc *x;

	if (stacks && rp->has_stacks) {
		for (uint32_t i = 0; i < rp->fold.n; i++)
			if ((x = acc_of(s, rp->fold.v[i].name))) {
				x->a += rp->fold.v[i].a;
				x->b += rp->fold.v[i].b;
			}
		scale_acc(rp, s);
		return;
	}
	for (uint32_t g = 0; g < rp->ngrp; g++)
		if (rp->grp[g].kind != MP_FREE && (x = acc_of(s, rp->grp[g].name))) {
			x->a += rp->grp[g].alloc;
			x->b += rp->grp[g].num;
		}
	scale_acc(rp, s);
}

int cmp_acc_name(const void *pa, const void *pb, void *ctx)
{
	const struct report *rp = ctx;
	const struct acc *x = pa, *y = pb;
	return str_cmp(&rp->sp, x->name, y->name);
}
