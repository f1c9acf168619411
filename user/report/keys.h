/* The aggregate by key, for the outputs (keys.c): a key is an event's
 * folded stack (stacks.c) when the report has stacks, else its location's
 * name. Each fills an accset the caller frees (acc_free); s->oom says
 * whether it is complete. */
#ifndef LMT_REPORT_KEYS_H
#define LMT_REPORT_KEYS_H

#include "model.h"

/* Live blocks by key (struct block): a bytes, b blocks. */
void live_by_key(struct report *rp, struct accset *s);
/* What each key allocated (ALLOC and REALLOC): a bytes, b events, scaled
 * (report_scale); by folded stack if stacks and the report has them, else
 * by location. */
void alloc_by_key(struct report *rp, int stacks, struct accset *s);
/* qsort_r order of struct acc by name; ctx: the report. */
int cmp_acc_name(const void *pa, const void *pb, void *ctx);

#endif
