/* The heap copy's model, sizes, references and marking (user/heap/), fed
 * forged objects laid out as LuaJIT 2.1 GC64 lays them (user/layout.c's
 * first entry): exact sizes from lj_gc.c's frees, weak tables as lj_gc.c
 * treats them, reads past an object's copied bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"

#include "check.h"
#include "heap_forge.h"

/* hstop_now is stop.c's (not linked: no target here). */
uint64_t hstop_now(void)
{
	return 0;
}

static const struct lj_variant *V;
static struct heap H;

/* A table at a: array slots arr[0..asize), then nodes (key, value) pairs
 * (nn of them: hmask nn - 1), its metatable mt. */
static long tab(uint64_t a, int8_t colo, uint32_t asize, const uint64_t *arr, uint32_t nn,
		const uint64_t *kv, uint64_t mt)
{
	size_t len = V->h.tab_sizeof + asize * 8 + nn * V->u.node_size;
	uint8_t *b = calloc(1, len);
	long i;

	b[9] = (uint8_t)V->h.ttab;
	b[V->h.tab_colo] = (uint8_t)colo;
	put32(b, V->h.tab_asize, asize);
	put32(b, V->u.tab_hmask, nn ? nn - 1 : 0);
	put64(b, V->h.tab_metatable, mt);
	for (uint32_t k = 0; k < asize; k++)
		put64(b, V->h.tab_sizeof + 8 * k, arr ? arr[k] : ~0ull);
	for (uint32_t k = 0; k < nn; k++) {
		unsigned at = V->h.tab_sizeof + asize * 8 + k * V->u.node_size;

		put64(b, at + V->u.node_key, kv ? kv[2 * k] : ~0ull);
		put64(b, at + V->u.node_val, kv ? kv[2 * k + 1] : ~0ull);
	}
	i = heap_add(&H, a, b[9], b, len);
	free(b);
	return i;
}

static long str(uint64_t a, const char *s)
{
	uint8_t b[64] = { 0 };

	b[9] = (uint8_t)V->h.tstr;
	put32(b, V->lay.str_len, (uint32_t)strlen(s));
	memcpy(b + V->h.str_sizeof, s, strlen(s));
	return heap_add(&H, a, b[9], b, V->h.str_sizeof + strlen(s));
}

static long thread(uint64_t a, uint64_t env, uint32_t stacksize)
{
	uint8_t b[256] = { 0 };

	b[9] = (uint8_t)V->lay.tthread;
	put64(b, V->h.L_env, env);
	put32(b, V->h.L_stacksize, stacksize);
	return heap_add(&H, a, b[9], b, V->sizeof_L);
}

static long func(uint64_t a, int c, unsigned nup)
{
	uint8_t b[256] = { 0 };

	b[9] = (uint8_t)V->lay.tfunc;
	b[V->lay.fn_ffid] = (uint8_t)c;
	b[V->h.fn_nupvalues] = (uint8_t)nup;
	return heap_add(&H, a, b[9], b, (c ? V->h.fnc_sizeof : V->h.fnl_sizeof) - 8 + 8 * nup);
}

int main(void)
{
	enum { L = 0x10000, G = 0x20000, R = 0x30000, T1 = 0x40000, W = 0x50000,
	       S1 = 0x60000, S2 = 0x70000, T2 = 0x80000, T3 = 0x90000, T4 = 0xa0000,
	       F1 = 0xb0000, F2 = 0xc0000, T5 = 0xd0000 };
	uint64_t rarr[2], t1arr[2], wkv[4], c3[2], c4[2];
	long i;

	V = &lj_variants[0];
	forge_gg(&H, V, L);
	put64(H.gg, V->lay.gg_g + V->u.g_registrytv, tv(R, V->h.ttab));

	/* registry R: [0] = T5, [1] = T1; T1 (weak values, metatable W):
	 * [1] = T2; W: __mode = "v", and T5 as a key */
	rarr[0] = tv(T5, V->h.ttab);
	rarr[1] = tv(T1, V->h.ttab);
	t1arr[0] = ~0ull;
	t1arr[1] = tv(T2, V->h.ttab);
	wkv[0] = tv(S1, V->h.tstr);
	wkv[1] = tv(S2, V->h.tstr);
	wkv[2] = tv(T5, V->h.ttab); /* W[T5] = 1.0: T5 also a key of W */
	wkv[3] = 0x3ff0000000000000ull;
	c3[0] = tv(T4, V->h.ttab);
	c3[1] = tv(S1, V->h.tstr);
	c4[0] = tv(T3, V->h.ttab);
	c4[1] = tv(S1, V->h.tstr);
	thread(L, G, 47);
	tab(G, 0, 0, NULL, 0, NULL, 0);
	tab(R, 2, 2, rarr, 0, NULL, 0);       /* colocated array of 2 */
	tab(T1, (int8_t)(2 | 0x80), 2, t1arr, 0, NULL, W); /* array moved out: colo | 0x80 */
	tab(W, 0, 0, NULL, 2, wkv, 0);        /* hmask 1: __mode = "v" */
	str(S1, "__mode");
	str(S2, "v");
	tab(T2, 0, 0, NULL, 0, NULL, 0);
	tab(T5, 0, 0, NULL, 0, NULL, 0);
	tab(T3, 0, 0, NULL, 1, c3, 0);        /* T3 <-> T4: a cycle, unreachable */
	tab(T4, 0, 0, NULL, 1, c4, 0);
	func(F1, 0, 2);
	func(F2, 1, 1);
	heap_sizes(&H);

	/* -- Sizes (lj_gc.c's frees) -- */
	CHECK("main thread: sizeof(lua_State) + 47 stack slots",
	      H.o[heap_find(&H, L)].size == 96 + 47 * 8);
	CHECK("table, array colocated (colo 2): sizeof(GCtab) + 2 slots",
	      H.o[heap_find(&H, R)].size == 64 + 16);
	CHECK("table, array moved out (colo 0x82): its colo block and its array",
	      H.o[heap_find(&H, T1)].size == 64 + 16 + 16);
	CHECK("table, hmask 1: two 24-byte nodes", H.o[heap_find(&H, W)].size == 64 + 48);
	CHECK("string of 6: lj_str_size rounds len + 1 up to 4",
	      H.o[heap_find(&H, S1)].size == 24 + 8);
	CHECK("string of 1", H.o[heap_find(&H, S2)].size == 24 + 4);
	CHECK("Lua function, 2 upvalues: sizeLfunc(2)", H.o[heap_find(&H, F1)].size == 40 + 16);
	CHECK("C function, 1 upvalue: sizeCfunc(1)", H.o[heap_find(&H, F2)].size == 48 + 8);

	/* -- Reading past the copy -- */
	i = heap_find(&H, S2);
	CHECK("a field past an object's copied bytes reads 0",
	      heap_u64(&H, &H.o[i], H.o[i].rawlen - 4) == 0 &&
	      heap_u64(&H, &H.o[i], ~0ull - 2) == 0);
	CHECK("an address no object has is not found", heap_find(&H, 0x12345) == -1 &&
	      heap_find(&H, 0) == -1);

	/* -- Weak tables and marking -- */
	CHECK("__mode = \"v\" read from the metatable's hash part",
	      heap_weak(&H, &H.o[heap_find(&H, T1)]) == 16);
	CHECK("mark ran", heap_mark(&H) == 0);
	CHECK("reached: L, its env, the registry, T1, its metatable, its two strings, T5",
	      H.reached == 8);
	CHECK("a weak table's value is not reached",
	      !(H.o[heap_find(&H, T2)].flags & HOBJ_REACHED));
	CHECK("a cycle nothing holds is not reached",
	      !(H.o[heap_find(&H, T3)].flags & HOBJ_REACHED) &&
	      !(H.o[heap_find(&H, T4)].flags & HOBJ_REACHED));
	CHECK("reached bytes: the sum of the reached objects' sizes",
	      H.reached_bytes == (96 + 376) + 64 + 80 + 96 + 112 + 32 + 28 + 64);
	CHECK("no dangling reference", H.c.dangling == 0);

	/* -- Dominators and retained sizes -- */
	CHECK("dominator tree built", heap_dom(&H) == 0);
	CHECK("T5, reached from R and from W (under R): dominated by R",
	      H.idom[heap_find(&H, T5)] == (uint32_t)heap_find(&H, R));
	CHECK("W retains itself and its two strings", H.retained[heap_find(&H, W)] == 112 + 32 + 28);
	CHECK("T1 retains W's", H.retained[heap_find(&H, T1)] == 96 + 172);
	CHECK("R retains T1's and T5", H.retained[heap_find(&H, R)] == 80 + 268 + 64);
	CHECK("G, reached as a root and as L's env: its own size",
	      H.retained[heap_find(&H, G)] == 64 && H.idom[heap_find(&H, G)] == H.n);
	CHECK("the super-root retains every reached byte", H.retained[H.n] == H.reached_bytes);
	CHECK("an unreached object has no dominator", H.idom[heap_find(&H, T2)] == UINT32_MAX);

	/* -- Paths -- */
	{
		char p[256];

		heap_path(&H, (uint32_t)heap_find(&H, T1), p, sizeof(p));
		CHECK("registry[1]", !strcmp(p, "registry[1]"));
		heap_path(&H, (uint32_t)heap_find(&H, S2), p, sizeof(p));
		CHECK("registry[1][metatable].__mode", !strcmp(p, "registry[1][metatable].__mode"));
		heap_path(&H, (uint32_t)heap_find(&H, T2), p, sizeof(p));
		CHECK("an unreached object's path", !strcmp(p, "(unreachable)"));
	}
	heap_free(&H);
	return fails != 0;
}
