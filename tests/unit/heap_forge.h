/* Forging LuaJIT 2.1 GC64 objects for the heap's unit tests (test_heap.c,
 * test_heap_join.c): a TValue of a GC object, fields at an offset. */
#ifndef LMT_UNIT_HEAP_FORGE_H
#define LMT_UNIT_HEAP_FORGE_H

#include <stdint.h>
#include <string.h>

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

#endif
