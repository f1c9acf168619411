/* What a trace did (streams/summary.c): on stderr when it ends, and the
 * losses every sidecar says. */
#ifndef LMT_SUMMARY_H
#define LMT_SUMMARY_H

#include "session/session.h"

void sum_stats(struct tr *t, struct lmt_stats *s);
void summary(struct tr *t, const struct lmt_stats *s, double secs);
/* Anything lost: the exit status's rule and the sidecar's are one. */
int trace_lossy(const struct tr *t, const struct lmt_stats *st);
void losses(const struct tr *t, const struct lmt_stats *st, struct info *in);

#endif
