/* Folded stacks (folded.c). An output: reads the aggregate, calls no
 * other output. */
#ifndef LMT_REPORT_FOLDED_H
#define LMT_REPORT_FOLDED_H

#include <stdio.h>

#include "model.h"

/* REPORT_FOLDED, weighted by w. 0, or -1 out of memory. */
int folded_print(struct report *rp, FILE *out, enum report_weight w);

#endif
