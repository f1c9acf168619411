/* Forging LuaJIT 2.1 objects for the heap's unit tests (test_heap.c,
 * test_heap_join.c, test_heap32.c): a VM's GG_State, a TValue of a GC
 * object (GC64), fields at an offset. */
#ifndef LMT_UNIT_HEAP_FORGE_H
#define LMT_UNIT_HEAP_FORGE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"

/* The TValue of the GC object at addr of type gct (~itype, GC64). */
static inline uint64_t tv(uint64_t addr, unsigned gct)
{
	return ((uint64_t)~(uint64_t)gct << 47) | addr;
}

static inline void put64(uint8_t *b, unsigned off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static inline void put32(uint8_t *b, unsigned off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

/* H's VM: variant V's, its main lua_State at L, its GG_State a zeroed
 * buffer (H->gg) the test fills. */
static inline void forge_gg(struct heap *H, const struct lj_variant *V, uint64_t L)
{
	H->var = V;
	H->L = L;
	H->g = L + V->lay.gg_g;
	H->gglen = V->h.gg_size;
	H->gg = calloc(1, H->gglen);
}

#endif
