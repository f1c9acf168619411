/* heap --with (user/heap/join.c): a forged heap (LuaJIT 2.1 GC64's layout,
 * user/target/layout.c's first entry) joined with a forged trace fed to the
 * report library: each object's blocks matched by address and size, a
 * block of another size said and taken as before, freed blocks not
 * matched, the traced bytes summed up the dominator tree, the report's
 * rows. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "report/report.h"

#include "check.h"
#include "heap_forge.h"

static const struct lj_variant *V;
static struct heap H;

/* A table at a, array slots arr[0..asize) (at array if not colocated),
 * nn empty hash nodes at node. */
static long tab(uint64_t a, int8_t colo, uint32_t asize, const uint64_t *arr, uint64_t array,
		uint32_t nn, uint64_t node)
{
	size_t len = V->h.tab_sizeof + asize * 8 + nn * V->u.node_size;
	uint8_t *b = calloc(1, len);
	long i;

	b[9] = (uint8_t)V->h.ttab;
	b[V->h.tab_colo] = (uint8_t)colo;
	put32(b, V->h.tab_asize, asize);
	put32(b, V->u.tab_hmask, nn ? nn - 1 : 0);
	put64(b, V->h.tab_array, array);
	put64(b, V->u.tab_node, node);
	for (uint32_t k = 0; k < asize; k++)
		put64(b, V->h.tab_sizeof + 8 * k, arr ? arr[k] : ~0ull);
	for (uint32_t k = 0; k < nn; k++) {
		unsigned at = V->h.tab_sizeof + asize * 8 + k * V->u.node_size;

		put64(b, at + V->u.node_key, ~0ull);
		put64(b, at + V->u.node_val, ~0ull);
	}
	i = heap_add(&H, a, b[9], b, len);
	free(b);
	return i;
}

static void ev(struct report *rp, uint8_t kind, uint64_t line, uint64_t oaddr, uint64_t osize,
	       uint64_t naddr, uint64_t nsize)
{
	struct mp_event e = { .kind = kind, .src = MP_SRC_LFUNC, .loc = 0x1000, .line = line,
			      .oaddr = oaddr, .osize = osize, .naddr = naddr, .nsize = nsize };

	report_event(rp, &e);
}

int main(void)
{
	enum { L = 0x10000, G = 0x20000, R = 0x30000, T1 = 0x40000, A1 = 0x50000,
	       N1 = 0x60000, T2 = 0x70000, T3 = 0x80000, STK = 0x90000, GONE = 0xa0000 };
	struct mp_sym sym = { .kind = MP_SYM_LFUNC, .addr = 0x1000, .name = "@t.lua",
			      .name_len = 6, .line = 1 };
	struct report *rp = report_new();
	uint64_t rarr[2], t1arr[2];
	uint8_t b[256] = { 0 };
	char *text = NULL;
	size_t textlen = 0;
	FILE *f;
	long l;

	V = &lj_variants[0];
	forge_gg(&H, V, L);
	put64(H.gg, V->lay.gg_g + V->u.g_registrytv, tv(R, V->h.ttab));

	/* the main thread (its lua_State in GG_State; its stack a block at
	 * STK), the registry R: [0] = T1, [1] = T3; T1: its array part moved
	 * out (A1), two hash nodes (N1), [1] = T2 */
	b[9] = (uint8_t)V->lay.tthread;
	put64(b, V->h.L_env, G);
	put32(b, V->h.L_stacksize, 47);
	put64(b, V->lay.L_stack, STK);
	l = heap_add(&H, L, b[9], b, V->sizeof_L);
	H.o[l].flags |= HOBJ_MAIN;
	tab(G, 0, 0, NULL, 0, 0, 0);
	rarr[0] = tv(T1, V->h.ttab);
	rarr[1] = tv(T3, V->h.ttab);
	tab(R, 2, 2, rarr, R + V->h.tab_sizeof, 0, 0);
	t1arr[0] = ~0ull;
	t1arr[1] = tv(T2, V->h.ttab);
	tab(T1, (int8_t)(2 | 0x80), 2, t1arr, A1, 2, N1);
	tab(T2, 0, 0, NULL, 0, 0, 0);
	tab(T3, 0, 0, NULL, 0, 0, 0);
	heap_sizes(&H);

	/* The trace: T1's colocated block at line 5, its array part at 6,
	 * its hash part (48 bytes) given as 24 at 7; T2 at 8; T3 allocated
	 * and freed, then its address given to a block of 40 (another
	 * object's); the stack at 9; a block no object has. */
	report_sym(rp, &sym);
	ev(rp, MP_ALLOC, 5, 0, 0, T1, 64 + 16);
	ev(rp, MP_ALLOC, 6, 0, 0, A1, 8);
	ev(rp, MP_REALLOC, 6, A1, 8, A1, 16);
	ev(rp, MP_ALLOC, 7, 0, 0, N1, 24);
	ev(rp, MP_ALLOC, 8, 0, 0, T2, 64);
	ev(rp, MP_ALLOC, 8, 0, 0, T3, 64);
	ev(rp, MP_FREE, 0, T3, 64, 0, 0);
	ev(rp, MP_ALLOC, 8, 0, 0, T3, 40);
	ev(rp, MP_ALLOC, 9, 0, 0, STK, 47 * 8);
	ev(rp, MP_ALLOC, 9, 0, 0, GONE, 100);

	CHECK("mark, dominators and join", !heap_mark(&H) && !heap_dom(&H) &&
	      !heap_join(&H, rp, "t.bin"));
	CHECK("every object reached", H.reached == 6);
	f = open_memstream(&text, &textlen);
	heap_view_text(&H, &(struct hview){ .top = 10 }, f);
	fclose(f);
	fputs(text, stdout);
	CHECK("said: the trace, its live blocks, those matched",
	      strstr(text, "\njoined with the trace t.bin: 7 blocks live at its end, 4 of them "
			   "this VM's objects'\n"));
	CHECK("said: the two blocks of another size",
	      strstr(text, "\nblocks at an address live in the trace with another size (taken "
			   "as before): 2\n"));
	CHECK("reached, traced: T1 and T2 (by their own block); 80 + 16 + 64 + 376 bytes",
	      strstr(text, "\nallocated while traced (site known)             2            536 "));
	CHECK("reached, before: L (its lua_State GG_State's), _G, the registry, T3",
	      strstr(text, "\nbefore the trace (or not in it)                 4            352 "));
	CHECK("sites by type: T1's colo block at line 5, its array part at 6",
	      strstr(text, "\n         1           80  table     @t.lua:5\n") &&
	      strstr(text, "\n         0           16  table     @t.lua:6\n"));
	CHECK("the stack at line 9, no thread born there",
	      strstr(text, "\n         0          376  thread    @t.lua:9\n"));
	CHECK("retainers split: the registry (80) retains T1 (144), T2 and T3 (64 each), "
	      "of them T1's colo block and array part and T2 traced",
	      strstr(text, "\n         352          160          192  table     registry\n"));
	CHECK("T1 retains its traced bytes and T2's; its hash part before",
	      strstr(text, "\n         208          160           48  table     registry[0]\n"));
	free(text);
	heap_free(&H);
	report_free(rp);
	return fails != 0;
}
