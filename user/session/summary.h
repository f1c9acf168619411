/* What a trace did (session/summary.c): on stderr when it ends, and the
 * losses every sidecar says. */
#ifndef LMT_SUMMARY_H
#define LMT_SUMMARY_H

#include "session/session.h"

void sum_stats(struct tr *t, struct lmt_stats *s);
void summary(struct tr *t, const struct lmt_stats *s, double secs);
/* Anything lost: the exit status's rule and the sidecar's are one. */
int trace_lossy(const struct tr *t, const struct lmt_stats *st);

/* Stream o's sidecar from the trace's state, now (done: final, with st). */
void out_info(struct tr *t, struct tout *o, const struct lmt_stats *st, int done);
/* Ends stream o (out_finish), its final sidecar written. */
void stream_end(struct tr *t, struct tout *o, const char *end);

#endif
