/* A prototype's line table, as LuaJIT's lj_debug_line reads it: from a
 * prototype's record (BPF sends it) or read from the target (a prototype
 * a trace inlined). */
#ifndef LMT_LINES_H
#define LMT_LINES_H

#include <stdint.h>

struct pline {
	int32_t firstline;
	uint32_t sizebc, numline;
	uint8_t width; /* 1, 2, 4 */
	uint32_t len;
	uint8_t li[];
};

/* lj_debug_line(pt, pos); -1 when pos is past the bytecode (LuaJIT's
 * JLOOP undo case, charged INTERNAL). */
int64_t pline_line(const struct pline *p, uint64_t pos);

#endif
