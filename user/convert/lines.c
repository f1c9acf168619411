/* A prototype's line table (lj_debug_line). */
#include <stdint.h>

#include "convert/lines.h"

/* lj_debug_line(pt, pos); -1 when pos is past the bytecode (LuaJIT's
 * JLOOP undo case, charged INTERNAL). */
int64_t pline_line(const struct pline *p, uint64_t pos)
{
	uint64_t i;

	if (pos > p->sizebc)
		return -1;
	if (!p->len && p->sizebc > 1)
		return 0; /* stripped: no line info */
	if (pos == p->sizebc)
		return (int64_t)p->firstline + p->numline;
	if (pos == 0)
		return p->firstline;
	i = (pos - 1) * p->width;
	if (i + p->width > p->len)
		return -1;
	if (p->width == 1)
		return (int64_t)p->firstline + p->li[i];
	if (p->width == 2)
		return (int64_t)p->firstline + (p->li[i] | p->li[i + 1] << 8);
	return (int64_t)p->firstline + (int64_t)((uint32_t)p->li[i] |
		(uint32_t)p->li[i + 1] << 8 | (uint32_t)p->li[i + 2] << 16 |
		(uint32_t)p->li[i + 3] << 24);
}

