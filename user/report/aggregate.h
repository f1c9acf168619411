/* Naming (aggregate.c), for the stack reader and the outputs. */
#ifndef LMT_REPORT_AGGREGATE_H
#define LMT_REPORT_AGGREGATE_H

#include "model.h"

/* Location (addr, line, trace) as the report names it now. */
uint32_t name_of(struct report *rp, uint64_t addr, uint64_t line, uint64_t trace);
/* Frame name is a Lua line: prototype addr (if the stream named it),
 * line; kept for pprof (struct pframe). 0, or -1 out of memory. */
int pframe_add(struct report *rp, uint32_t name, uint64_t addr, uint64_t line);

#endif
