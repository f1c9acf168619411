/* A stack slot named by its local (user/heap/paths.c's put_local): a
 * forged coroutine of LuaJIT 2.1 GC64 whose body's frame holds a table in
 * its first local, the frame above it a call (its link the return PC into
 * the body's bytecode), the body's prototype with its varinfo; then each
 * part made to lie (the PC outside the bytecode or not an instruction's,
 * a link of no Lua call, varinfo outside the copy, a frame list past the
 * stack, a local not live at the PC, a prototype cut short): the slot's
 * number, never a name read from elsewhere. And a continuation frame above
 * the body: its PC read where frame_contpc reads it, and made to lie. */
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

/* An object at a of type gct: its header hdr (len bytes), then ex. */
static long obj(uint64_t a, unsigned gct, uint8_t *hdr, size_t len, const void *ex, size_t exlen)
{
	uint8_t *b = calloc(1, len + exlen);
	long i;

	memcpy(b, hdr, len);
	b[9] = (uint8_t)gct;
	if (exlen)
		memcpy(b + len, ex, exlen);
	i = heap_add(&H, a, (uint8_t)gct, b, len + exlen);
	free(b);
	return i;
}

static uint8_t *raw(uint64_t a)
{
	return (uint8_t *)(uintptr_t)heap_raw(&H, &H.o[heap_find(&H, a)]);
}

enum { L = 0x10000, G = 0x20000, R = 0x30000, CO = 0x40000, ST = 0x41000, F1 = 0x50000,
       F2 = 0x51000, P = 0x60000, S = 0x70000, T = 0x80000, DBG = P + 0x100 };

static const char *path_of_t(void)
{
	static char p[256];

	heap_path(&H, (uint32_t)heap_find(&H, T), p, sizeof(p));
	return p;
}

int main(void)
{
	/* varinfo: "buf" and "(for index)" live over [0, 10) */
	static const uint8_t vi[] = { 'b', 'u', 'f', 0, 0, 10, 1, 0, 10, 0 };
	const char *slot = "stack slot 4 of coroutine at w.lua:30";
	uint8_t b[256];
	uint64_t slots[10], arr[1], bc0, pc;
	uint32_t frames[2];
	uint8_t *co, *pt;

	V = &lj_variants[0];
	forge_gg(&H, V, L);
	put64(H.gg, V->lay.gg_g + V->u.g_registrytv, tv(R, V->h.ttab));

	/* the main thread, its env, and the registry: [1] = CO */
	memset(b, 0, sizeof(b));
	put64(b, V->h.L_env, G);
	obj(L, V->lay.tthread, b, V->sizeof_L, NULL, 0);
	H.o[heap_find(&H, L)].flags |= HOBJ_MAIN;
	memset(b, 0, sizeof(b));
	obj(G, V->h.ttab, b, V->h.tab_sizeof, NULL, 0);
	arr[0] = tv(CO, V->lay.tthread);
	memset(b, 0, sizeof(b));
	put32(b, V->h.tab_asize, 1);
	b[V->h.tab_colo] = 1;
	obj(R, V->h.ttab, b, V->h.tab_sizeof, arr, sizeof(arr));

	/* P: "@w.lua" line 30, 10 instructions, its debug names at DBG (no
	 * upvalue names: varinfo first) */
	bc0 = P + V->lay.pt_size;
	memset(b, 0, sizeof(b));
	put64(b, V->lay.pt_chunkname, S);
	put32(b, V->lay.pt_firstline, 30);
	put32(b, V->lay.pt_sizebc, 10);
	put32(b, V->h.pt_sizept, 0x200);
	put64(b, V->h.pt_uvinfo, DBG);
	put64(b, V->h.pt_varinfo, DBG);
	obj(P, V->h.tproto, b, V->lay.pt_size, vi, sizeof(vi));
	memset(b, 0, sizeof(b));
	put32(b, V->lay.str_len, 6);
	memcpy(b + V->h.str_sizeof, "@w.lua", 6);
	obj(S, V->h.tstr, b, V->h.str_sizeof + 6, NULL, 0);
	/* F1, the body: Lua, of P; F2: a C function (coroutine.yield) */
	memset(b, 0, sizeof(b));
	put64(b, V->lay.fn_pc, bc0);
	obj(F1, V->lay.tfunc, b, V->h.fnl_sizeof, NULL, 0);
	memset(b, 0, sizeof(b));
	b[V->lay.fn_ffid] = 1;
	obj(F2, V->lay.tfunc, b, V->h.fnc_sizeof, NULL, 0);
	memset(b, 0, sizeof(b));
	obj(T, V->h.ttab, b, V->h.tab_sizeof, NULL, 0);

	/* CO's stack, FR2: [0] itself, [1] nil, [2] F1 and [3] its link (a C
	 * frame's), [4] buf = T, [5] (for index) = 1.0, [6] F2 and [7] its
	 * link: the return PC after instruction 2 of P; [8], [9] nil (a
	 * continuation's, below). Frames, top first: 7, 3. */
	pc = bc0 + 3 * 4;
	slots[0] = tv(CO, V->lay.tthread);
	slots[1] = ~0ull;
	slots[2] = tv(F1, V->lay.tfunc);
	slots[3] = 16 | 1;
	slots[4] = tv(T, V->h.ttab);
	slots[5] = 0x3ff0000000000000ull;
	slots[6] = tv(F2, V->lay.tfunc);
	slots[7] = pc;
	slots[8] = slots[9] = ~0ull;
	frames[0] = 7;
	frames[1] = 3;
	memset(b, 0, sizeof(b));
	put64(b, V->lay.L_stack, ST);
	put64(b, V->h.L_top, ST + 10 * 8);
	put64(b, V->h.L_env, G);
	{
		uint8_t ex[sizeof(slots) + sizeof(frames)];

		memcpy(ex, slots, sizeof(slots));
		memcpy(ex + sizeof(slots), frames, sizeof(frames));
		obj(CO, V->lay.tthread, b, V->sizeof_L, ex, sizeof(ex));
	}
	heap_sizes(&H);
	CHECK("mark ran", heap_mark(&H) == 0);
	co = raw(CO) + V->sizeof_L;
	pt = raw(P);

	/* -- Named -- */
	CHECK("a coroutine body's local: its name, the coroutine by its body",
	      !strcmp(path_of_t(), "local buf in coroutine at w.lua:30"));

	/* -- Lies: the slot's number -- */
	put64(co, 7 * 8, bc0 + 11 * 4);
	CHECK("a return PC past the bytecode", !strcmp(path_of_t(), slot));
	put64(co, 7 * 8, bc0);
	CHECK("a return PC at the bytecode's start (no call before it)", !strcmp(path_of_t(), slot));
	put64(co, 7 * 8, bc0 + 6);
	CHECK("a return PC inside an instruction", !strcmp(path_of_t(), slot));
	put64(co, 7 * 8, pc | 1);
	CHECK("a link of a C frame: no PC", !strcmp(path_of_t(), slot));
	put64(co, 7 * 8, pc);
	CHECK("restored", !strcmp(path_of_t(), "local buf in coroutine at w.lua:30"));

	put64(pt, V->h.pt_varinfo, DBG - 8);
	CHECK("varinfo before the names copied", !strcmp(path_of_t(), slot));
	put64(pt, V->h.pt_varinfo, DBG + sizeof(vi));
	CHECK("varinfo past the names copied", !strcmp(path_of_t(), slot));
	put64(pt, V->h.pt_varinfo, DBG);
	pt[V->lay.pt_size + 4] = 5; /* buf's start PC: 5, after the PC (2) */
	CHECK("a local not live at the PC", !strcmp(path_of_t(), slot));
	pt[V->lay.pt_size + 4] = 0;
	H.o[heap_find(&H, P)].flags |= HOBJ_SHORT;
	CHECK("a prototype cut short", !strcmp(path_of_t(), slot));
	H.o[heap_find(&H, P)].flags &= (uint8_t)~HOBJ_SHORT;

	frames[0] = 100;
	memcpy(co + 10 * 8, frames, 4);
	CHECK("a frame above past the stack", !strcmp(path_of_t(), slot));
	frames[0] = 5;
	memcpy(co + 10 * 8, frames, 4);
	CHECK("a frame above whose function is the slot", !strcmp(path_of_t(), slot));
	frames[0] = 7;
	memcpy(co + 10 * 8, frames, 4);
	CHECK("all restored", !strcmp(path_of_t(), "local buf in coroutine at w.lua:30"));

	/* -- A continuation frame above the body (a metamethod's call, a
	 * stitched trace's C call): [6] its continuation, [7] the PC to
	 * resume the body at (frame_contpc), [8] F2, [9] its link -- */
	put64(co, 6 * 8, 0x1234);
	put64(co, 8 * 8, tv(F2, V->lay.tfunc));
	put64(co, 9 * 8, 6 * 8 | 2);
	frames[0] = 9;
	memcpy(co + 10 * 8, frames, 4);
	CHECK("a local below a continuation frame: named by its PC",
	      !strcmp(path_of_t(), "local buf in coroutine at w.lua:30"));
	put64(co, 7 * 8, bc0 + 11 * 4);
	CHECK("a continuation's PC past the bytecode", !strcmp(path_of_t(), slot));
	put64(co, 7 * 8, pc | 1);
	CHECK("a continuation's PC not an instruction's", !strcmp(path_of_t(), slot));
	put64(co, 7 * 8, pc);
	put64(co, 9 * 8, 6 * 8 | 6);
	CHECK("a pcall's frame: no PC", !strcmp(path_of_t(), slot));
	put64(co, 9 * 8, 6 * 8 | 2);
	frames[0] = 7;
	memcpy(co + 10 * 8, frames, 4);
	put64(co, 7 * 8, 6 * 8 | 2);
	CHECK("a continuation whose own slots hold the local", !strcmp(path_of_t(), slot));
	heap_free(&H);
	return fails != 0;
}
