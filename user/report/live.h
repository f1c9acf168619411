/* The live stage (live.c): live blocks by address and their owners,
 * linking a realloc or free to its block's previous owner ("Overrides"),
 * and held bytes over time; fed by aggregate.c, on a second thread where
 * there is a CPU for it. */
#ifndef LMT_REPORT_LIVE_H
#define LMT_REPORT_LIVE_H

#include "model.h"

/* Group g's distinct previous owners. */
uint32_t nowners(const struct report *rp, uint32_t g);
void live_event(struct report *rp, const struct lev *e);
/* live_event on each, prefetching the block map. */
void live_batch(struct report *rp, const struct lev *e, size_t n);
/* report_temporal: the blocks live at the end join the cells (freed in
 * bucket nb), once. 0, or -1 out of memory. */
int temporal_end(struct report *rp);
/* The live thread: started (NULL: none, work stays inline), handed the
 * batch being filled, stopped. */
struct lpipe *pipe_start(struct report *rp);
void pipe_push(struct lpipe *hp);
void pipe_stop(struct report *rp);
/* Waits until the live stage has caught up with every event given:
 * before any output reads the aggregate. */
void report_sync(struct report *rp);

#endif
