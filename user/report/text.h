/* The text report (text.c): the standard parser's ALLOCATIONS,
 * REALLOCATIONS, DEALLOCATIONS, HEAP SUMMARY (and BY STACK), ALIASES. An
 * output: reads the aggregate, calls no other output. */
#ifndef LMT_REPORT_TEXT_H
#define LMT_REPORT_TEXT_H

#include <stdio.h>

#include "model.h"

/* REPORT_STANDARD or REPORT_LEAK_ONLY as o says. 0, or -1 out of memory. */
int text_print(struct report *rp, FILE *out, const struct report_opts *o);

#endif
