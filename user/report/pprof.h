/* The pprof profile (pprof.c). An output: reads the aggregate, calls no
 * other output. */
#ifndef LMT_REPORT_PPROF_H
#define LMT_REPORT_PPROF_H

#include <stdio.h>

#include "model.h"

/* The gzipped pprof profile (REPORT_PPROF); of several reports:
 * pprof_new, pprof_add each (label: its "process" label), pprof_write. */
int pprof_print(struct report *rp, FILE *out);
struct pp *pprof_new(void);
int pprof_add(struct pp *p, struct report *rp, const char *label);
int pprof_write(struct pp *p, FILE *out);
void pprof_free(struct pp *p);

#endif
