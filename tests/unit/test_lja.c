/* The address an allocation will get, told from LuaJIT's allocator state
 * (bpf/lja.h): lja_plan on allocator heads laid out by hand, one for
 * each of lj_alloc_malloc's branches and their bounds; then against the
 * real allocator, Debian's libluajit's (lua_getallocf gives its function
 * and state), over a long random run of allocations and frees of every
 * size class, and reallocations of them: each address told must be the
 * one the allocator returns. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <lua.h>
#include <lauxlib.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define LMT_LJA_HOST
#include "lja.h"

#include "check.h"

/* A head: smallmap | treemap << 32, dvsize, topsize, dv, top. */
static int plan(__u32 smallmap, __u32 treemap, __u64 dvsize, __u64 topsize, __u64 nsize,
		__u64 *v)
{
	const __u64 h[5] = { smallmap | (__u64)treemap << 32, dvsize, topsize, 0x1000, 0x8000 };

	*v = 0;
	return lja_plan(h, nsize, v);
}

static void by_hand(void)
{
	__u64 v;

	CHECK("ffs 1", lja_ffs(1) == 0);
	CHECK("ffs 2^31", lja_ffs(1U << 31) == 31);
	CHECK("ffs 0x50", lja_ffs(0x50) == 4);
	/* A table's 64 bytes: a 72-byte chunk, bin 9. Nothing binned, no
	 * dv: the top. */
	CHECK("empty: top", plan(0, 0, 0, 1 << 20, 64, &v) == LJA_AT && v == 0x8000 + 16);
	CHECK("its bin", plan(1U << 9, 0, 0, 1 << 20, 64, &v) == LJA_BIN && v == 9);
	CHECK("the next bin, remainderless", plan(1U << 10, 0, 0, 1 << 20, 64, &v) == LJA_BIN &&
						  v == 10);
	CHECK("a later bin, split", plan(1U << 20, 0, 0, 1 << 20, 64, &v) == LJA_BIN && v == 20);
	CHECK("dv before a later bin", plan(1U << 20, 0, 72, 1 << 20, 64, &v) == LJA_AT &&
					      v == 0x1000 + 16);
	CHECK("dv one byte short: the later bin",
	      plan(1U << 20, 0, 71, 1 << 20, 64, &v) == LJA_BIN && v == 20);
	CHECK("a tree before dv/top when dv is short", plan(0, 1, 0, 1 << 20, 64, &v) == LJA_NONE);
	CHECK("dv fits: no tree", plan(0, 1, 80, 1 << 20, 64, &v) == LJA_AT && v == 0x1000 + 16);
	CHECK("a bin below its own: not it", plan(1U << 8, 0, 0, 1 << 20, 64, &v) == LJA_AT &&
						    v == 0x8000 + 16);
	/* The smallest chunk: requests up to 24 bytes. */
	CHECK("1 byte: bin 4", plan(1U << 4, 0, 0, 1 << 20, 1, &v) == LJA_BIN && v == 4);
	CHECK("24 bytes: bin 4", plan(1U << 4, 0, 0, 1 << 20, 24, &v) == LJA_BIN && v == 4);
	CHECK("25 bytes: bin 5", plan(1U << 5, 0, 0, 1 << 20, 25, &v) == LJA_BIN && v == 5);
	CHECK("240 bytes: bin 31", plan(1U << 31, 0, 0, 1 << 20, 240, &v) == LJA_BIN && v == 31);
	CHECK("241 bytes: large, no bins", plan(1U << 31, 0, 0, 1 << 20, 241, &v) == LJA_AT &&
						   v == 0x8000 + 16);
	CHECK("large with a tree", plan(0, 1, 1 << 20, 1 << 20, 300, &v) == LJA_NONE);
	CHECK("large, dv exact", plan(0, 0, 312, 1 << 20, 300, &v) == LJA_AT && v == 0x1000 + 16);
	CHECK("large, top exact: system", plan(0, 0, 0, 312, 300, &v) == LJA_NONE);
	CHECK("large, top one more", plan(0, 0, 0, 313, 300, &v) == LJA_AT && v == 0x8000 + 16);
	CHECK("too large", plan(0, 0, ~0ULL, ~0ULL, ~0ULL - 100, &v) == LJA_NONE);
	{
		/* A block of 80 bytes (chunk 0x2000, user memory at 0x2010),
		 * in use, its previous chunk too; top at 0x8000. */
		const __u64 h[5] = { 0, 0, 4096, 0, 0x8000 }, in[2] = { 0, 80 | 3 },
			    direct[2] = { 16 | 1, 4096 | 2 }, last[2] = { 0, (0x8000 - 0x2000) | 3 };

		CHECK("realloc shrinking: in place",
		      lja_plan_realloc(h, in, 0x2010, 20, &v) == LJA_AT && v == 0x2010);
		CHECK("realloc to the chunk's own size: in place",
		      lja_plan_realloc(h, in, 0x2010, 72, &v) == LJA_AT && v == 0x2010);
		CHECK("realloc one byte more: moved, to top",
		      lja_plan_realloc(h, in, 0x2010, 73, &v) == LJA_AT && v == 0x8000 + 16);
		CHECK("realloc of the chunk before top: grown into it",
		      lja_plan_realloc(h, last, 0x2010, 0x6800, &v) == LJA_AT && v == 0x2010);
		CHECK("realloc before top, top not enough: moved, nowhere known",
		      lja_plan_realloc(h, last, 0x2010, 0x6000 + 4096, &v) == LJA_NONE);
		CHECK("realloc of a mapped block: mremap",
		      lja_plan_realloc(h, direct, 0x2010, 20, &v) == LJA_NONE);
	}
}

/* -- The real allocator -------------------------------------------------- */

/* glibc's generator, seeded in real(): the same run every time */
static __u64 rnd(void)
{
	return (__u64)random();
}

/* Sizes as a VM asks: mostly small objects, some strings and arrays, a few
 * large enough for the tree bins and for mmap. */
static size_t size_of(void)
{
	__u64 r = rnd() % 1000;

	if (r < 700)
		return 1 + rnd() % 120;
	if (r < 900)
		return 1 + rnd() % 600;
	if (r < 990)
		return 256 + rnd() % 8000;
	return 100000 + rnd() % 200000;
}

#define NLIVE 4096
#define NOPS 400000

static void real(void)
{
	static void *live[NLIVE];
	static size_t lsz[NLIVE];
	lua_State *L = luaL_newstate();
	void *ud = NULL;
	lua_Alloc f;
	unsigned told = 0, none = 0, wrong = 0, allocs = 0, reallocs = 0, kinds[3] = { 0 };
	/* each branch told: a bin's own size (or the next), a later bin
	 * split, dv, top, a block kept in place, one grown into top (rare
	 * here, a handful a run: by hand above) */
	unsigned fit = 0, split = 0, dv = 0, top = 0, kept = 0, grown = 0;

	if (!L) {
		CHECK("luaL_newstate", 0);
		return;
	}
	f = lua_getallocf(L, &ud);
	srandom(1);
	for (unsigned i = 0; i < NOPS; i++) {
		unsigned k = (unsigned)(rnd() % NLIVE);
		__u64 h[LJA_HEAD / 8], ch[2], v = 0, want;
		const char *b = live[k];
		void *p;
		int how;

		if (b && rnd() % 4) {
			f(ud, live[k], lsz[k], 0);
			live[k] = NULL;
			continue;
		}
		/* an allocation, or a quarter of the time a reallocation (in
		 * place, or moved) */
		lsz[k] = size_of();
		memcpy(h, ud, sizeof(h));
		if (b) {
			memcpy(ch, b - LJA_MEM, sizeof(ch));
			how = lja_plan_realloc(h, ch, (__u64)(uintptr_t)b, lsz[k], &v);
			reallocs++;
		} else {
			how = lja_plan(h, lsz[k], &v);
			allocs++;
		}
		kinds[how]++;
		if (how != LJA_NONE) {
			const __u64 nb = lja_chunk(lsz[k]);

			if (how == LJA_BIN)
				*(v <= (nb >> 3) + 1 ? &fit : &split) += 1;
			else if (b && v == (__u64)(uintptr_t)b)
				*((ch[1] & ~3ULL) >= nb ? &kept : &grown) += 1;
			else
				*(v == h[3] + LJA_MEM ? &dv : &top) += 1;
		}
		/* a bin's first chunk, read before the allocator takes it */
		want = how == LJA_AT ? v :
		       how == LJA_BIN ? *(const __u64 *)((const char *)ud + LJA_BINFD(v)) + LJA_MEM :
					0;
		p = f(ud, live[k], 0, lsz[k]);
		live[k] = p;
		if (!want) {
			none++;
			continue;
		}
		told++;
		if (want != (__u64)(uintptr_t)p && wrong++ < 5)
			printf("# %s to %zu bytes: told %#llx, got %p (plan %d, bin/addr %#llx)\n",
			       b ? "realloc" : "alloc", lsz[k], (unsigned long long)want, p, how,
			       (unsigned long long)v);
	}
	for (unsigned k = 0; k < NLIVE; k++)
		if (live[k])
			f(ud, live[k], lsz[k], 0);
	lua_close(L);
	printf("# %u allocations and %u reallocations: %u told (%u from a bin, %u in place or "
	       "at dv or top), %u left to the return, %u wrong\n", allocs, reallocs, told,
	       kinds[LJA_BIN], kinds[LJA_AT], none, wrong);
	CHECK("the real allocator: no address told wrong", wrong == 0);
	printf("# told: %u a bin's own size or the next, %u a later bin split, %u dv, %u top, "
	       "%u kept in place, %u grown into top\n", fit, split, dv, top, kept, grown);
	CHECK("the real allocator: a bin of the size (or the next) told", fit > 0);
	CHECK("the real allocator: a later bin, split, told", split > 0);
	CHECK("the real allocator: dv told", dv > 0);
	CHECK("the real allocator: top told", top > 0);
	CHECK("the real allocator: a reallocation in place told", kept > 0);
	CHECK("the real allocator: some left to the return (trees, mmap)", none > 0);
	CHECK("the real allocator: most told", told > (allocs + reallocs) / 2);
}

int main(void)
{
	by_hand();
	real();
	return fails != 0;
}
