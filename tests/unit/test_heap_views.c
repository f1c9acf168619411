/* C type names of the heap's groups (user/heap/groups.c), from a forged
 * FFI C type table laid out as LuaJIT 2.1 GC64's (CType: info, size, sib,
 * next, name): lj_ctype_repr's names for numbers, structs, pointers and
 * arrays; a table that loops, an index past the table, a name that is no
 * string: "ctype #N", never a read past the copy (ASan) nor a hang; then
 * every id of a table of random bytes named within the buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"

#include "check.h"

static const struct lj_variant *V;
static struct heap H;

/* C type id: info (kind << 28 | flags | cid), size, name's address. */
static void ct(uint32_t id, uint32_t info, uint32_t size, uint64_t name)
{
	uint8_t *c = H.ctypes + (size_t)id * V->h.ct_sizeof;

	memcpy(c + V->h.ct_info, &info, 4);
	memcpy(c + V->h.ct_size, &size, 4);
	memcpy(c + V->h.ct_name, &name, 8);
}

static int named(uint32_t id, const char *want)
{
	char b[256];

	heap_ctype_name(&H, id, b, sizeof(b));
	if (strcmp(b, want))
		printf("# ctype %u: \"%s\", not \"%s\"\n", id, b, want);
	return !strcmp(b, want);
}

int main(void)
{
	enum { S = 0x1000, T = 0x2000, NCT = 12 };
	uint8_t sb[64] = { 0 }, tb[64] = { 0 };
	char small[8];

	V = &lj_variants[0];
	H.var = V;
	/* a string "lmt_point" at S, a table at T */
	sb[9] = (uint8_t)V->h.tstr;
	*(uint32_t *)(sb + V->lay.str_len) = 9;
	memcpy(sb + V->h.str_sizeof, "lmt_point", 9);
	heap_add(&H, S, sb[9], sb, V->h.str_sizeof + 9);
	tb[9] = (uint8_t)V->h.ttab;
	heap_add(&H, T, tb[9], tb, V->h.tab_sizeof);
	H.nctypes = NCT;
	H.ctypes = calloc(NCT, V->h.ct_sizeof);
	ct(1, 0x00000000u, 4, 0);                 /* CT_NUM int32_t */
	ct(2, 0x00800000u, 8, 0);                 /* CT_NUM unsigned: uint64_t */
	ct(3, 0x04000000u, 8, 0);                 /* CT_NUM fp: double */
	ct(4, 0x10000000u, 8, S);                 /* CT_STRUCT lmt_point */
	ct(5, 0x20000000u | 4, 8, 0);             /* CT_PTR to 4 */
	ct(6, 0x30000000u | 4, 24, 0);            /* CT_ARRAY of 4, 24 bytes */
	ct(7, 0x20000000u | 7, 8, 0);             /* CT_PTR to itself */
	ct(8, 0x80000000u | 8, 0, 0);             /* CT_ATTRIB to itself */
	ct(9, 0x80000000u | 4, 0, 0);             /* CT_ATTRIB to 4 */
	ct(10, 0x10800000u, 8, T);                /* CT_STRUCT union, named by a table */
	ct(11, 0x20000000u | 60000, 8, 0);        /* CT_PTR past the table */

	CHECK("int32_t", named(1, "int32_t"));
	CHECK("uint64_t", named(2, "uint64_t"));
	CHECK("double", named(3, "double"));
	CHECK("struct named by its CType.name string", named(4, "struct lmt_point"));
	CHECK("a pointer to it", named(5, "struct lmt_point *"));
	CHECK("an array of it", named(6, "struct lmt_point[24 bytes]"));
	CHECK("a pointer to itself: cut at LMT_HEAP_CTYPE_DEPTH",
	      named(7, "ctype #7 * * * * * * *"));
	CHECK("an attribute of itself: cut", named(8, "ctype #8"));
	CHECK("an attribute: through it", named(9, "struct lmt_point"));
	CHECK("a name that is no string: by number", named(10, "union #10"));
	CHECK("a pointer past the table", named(11, "ctype #60000 *"));
	CHECK("an id past the table", named(70000, "ctype #70000"));
	heap_ctype_name(&H, 6, small, sizeof(small));
	CHECK("cut to the buffer", !strcmp(small, "struct "));

	/* random tables: every id named, NUL-terminated within the buffer */
	srand(43);
	{
		int bounded = 1;

		for (int round = 0; round < 200; round++) {
			for (size_t k = 0; k < (size_t)NCT * V->h.ct_sizeof; k++)
				H.ctypes[k] = (uint8_t)rand();
			for (uint32_t id = 0; id < NCT; id++) {
				char b[64];

				memset(b, 'x', sizeof(b));
				heap_ctype_name(&H, id, b, sizeof(b));
				bounded &= memchr(b, 0, sizeof(b)) != NULL;
			}
		}
		CHECK("random C type tables: each name bounded", bounded);
	}
	heap_free(&H);
	return fails != 0;
}
