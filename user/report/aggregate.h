/* Naming (aggregate.c), for the stack reader and the outputs. */
#ifndef LMT_REPORT_AGGREGATE_H
#define LMT_REPORT_AGGREGATE_H

#include "model.h"

/* Location (addr, line, trace) as the report names it now. */
uint32_t name_of(struct report *rp, uint64_t addr, uint64_t line, uint64_t trace);
/* A C function as a stack's frame names it: "[C] " and the stream's
 * symbol ("[C] luajit+0x92c0", "[C] cjson.encode (...)"), the symbol's
 * offset added if it is not the function's own ("[C] lib.so+0x10+0x8"),
 * else as name_of. NONE out of memory. */
uint32_t cframe_name(struct report *rp, uint64_t addr);
/* Frame name is a Lua line: prototype addr (if the stream named it),
 * line, and the name its caller gives the function (fname, fname_len
 * bytes; none if 0); kept for pprof (struct pframe). 0, or -1 out of
 * memory. */
int pframe_add(struct report *rp, uint32_t name, uint64_t addr, uint64_t line,
	       const char *fname, size_t fname_len);

#endif
