/* The heap's model, sizes, references and marking (user/heap/) with GC64
 * off: forged objects laid out as the "LuaJIT 2.1 GC64 off" entry lays
 * them (32-bit GCRef/MRef, NaN-tagged TValues, one-slot frames whose
 * function is untyped, kept after the stack slots as copy.c's frame walk
 * leaves them). */
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

/* The TValue of the GC object at addr of type gct, GC64 off: the itype
 * in the high 32 bits, the reference in the low 32. */
static uint64_t tv32(uint64_t addr, unsigned gct)
{
	return (uint64_t)(uint32_t)~gct << 32 | (uint32_t)addr;
}

/* An object of type gct: hdr bytes of b, and the extra bytes after. */
static long obj(uint64_t a, unsigned gct, uint8_t *b, size_t hdr, const void *extra,
		size_t nextra)
{
	uint8_t buf[512];

	memcpy(buf, b, hdr);
	if (nextra)
		memcpy(buf + hdr, extra, nextra);
	buf[V->lay.L_gct] = (uint8_t)gct;
	return heap_add(&H, a, (uint8_t)gct, buf, hdr + nextra);
}

static long tab(uint64_t a, uint32_t mt)
{
	uint8_t b[64] = { 0 };

	put32(b, V->h.tab_metatable, mt);
	return obj(a, V->h.ttab, b, V->h.tab_sizeof, NULL, 0);
}

static long str(uint64_t a, const char *s)
{
	uint8_t b[64] = { 0 };

	put32(b, V->lay.str_len, (uint32_t)strlen(s));
	return obj(a, V->h.tstr, b, V->h.str_sizeof, s, strlen(s));
}

/* A closed upvalue holding value. */
static long upval(uint64_t a, uint64_t value)
{
	uint8_t b[64] = { 0 };

	b[V->h.uv_closed] = 1;
	put64(b, V->h.uv_tv, value);
	return obj(a, V->h.tupval, b, V->h.uv_sizeof, NULL, 0);
}

int main(void)
{
	enum { L = 0x10000, ST = 0x11000, G = 0x20000, R = 0x30000, F1 = 0x40000,
	       F2 = 0x41000, P = 0x50000, S1 = 0x60000, S2 = 0x61000, S3 = 0x62000,
	       T1 = 0x70000, T2 = 0x71000, T3 = 0x72000, U1 = 0x80000, U2 = 0x81000,
	       U3 = 0x82000, GARB = 0x90000 };
	uint8_t b[256];
	uint64_t slots[5];
	uint32_t frames[2], kgc[2], uv[3];

	for (unsigned k = 0; k < lj_nvariants; k++)
		if (!strcmp(lj_variants[k].name, "LuaJIT 2.1 GC64 off"))
			V = &lj_variants[k];
	CHECK("the GC64 off entry has the heap walker's offsets", V && V->h.gg_size == 5416);
	if (!V)
		return 1;
	forge_gg(&H, V, L);
	put64(H.gg, V->lay.gg_g + V->u.g_registrytv, tv32(R, V->h.ttab));
	put32(H.gg, V->lay.gg_g + V->h.g_gcroot + 4 * 5, S3); /* gcroot[5] */
	put32(H.gg, V->lay.gg_g + V->h.g_gc_total, 123456);

	/* The main thread: stack ST, 5 slots up to top, base at slot 4.
	 * [0] itself (the dummy frame), [1] a C frame of F1 (its link: delta
	 * 8, FRAME_C), [2] T1, [3] a Lua frame of F2 (its link a PC),
	 * [4] S1. The frames, top first: 3, 1. */
	memset(b, 0, sizeof(b));
	put32(b, V->lay.L_stack, ST);
	put64(b, V->h.L_top, ST + 5 * 8);
	put64(b, V->lay.L_base, ST + 4 * 8);
	put32(b, V->h.L_env, G);
	put32(b, V->h.L_stacksize, 10);
	slots[0] = tv32(L, V->lay.tthread);
	slots[1] = (uint64_t)(8 | 1) << 32 | F1;
	slots[2] = tv32(T1, V->h.ttab);
	slots[3] = (uint64_t)0x00401004 << 32 | F2;
	slots[4] = tv32(S1, V->h.tstr);
	frames[0] = 3;
	frames[1] = 1;
	{
		uint8_t ex[5 * 8 + 8];

		memcpy(ex, slots, sizeof(slots));
		memcpy(ex + sizeof(slots), frames, sizeof(frames));
		obj(L, V->lay.tthread, b, V->sizeof_L, ex, sizeof(ex));
	}
	H.o[heap_find(&H, L)].flags |= HOBJ_MAIN;
	tab(G, 0);
	tab(R, 0);
	tab(T1, 0xdead0000); /* its metatable: no object */
	tab(T2, 0);
	tab(T3, 0);
	tab(GARB, 0);
	str(S1, "abc");
	str(S2, "x");
	str(S3, "__index");

	/* F1: a Lua function of prototype P, 3 upvalues (uvptr[] 4 bytes
	 * each: one in its 24-byte header, two after it) */
	memset(b, 0, sizeof(b));
	b[V->h.fn_nupvalues] = 3;
	put32(b, V->lay.fn_pc, P + V->lay.pt_size);
	uv[0] = U1;
	uv[1] = U2;
	uv[2] = U3;
	memcpy(b + V->u.fn_uvptr, uv, sizeof(uv));
	obj(F1, V->lay.tfunc, b, V->u.fn_uvptr + sizeof(uv), NULL, 0);
	upval(U1, tv32(T2, V->h.ttab));
	upval(U2, 0x3ff0000000000000ull); /* 1.0: no object */
	upval(U3, ~0ull);                 /* nil */
	/* F2: a C function with no upvalues */
	memset(b, 0, sizeof(b));
	b[V->lay.fn_ffid] = 1;
	obj(F2, V->lay.tfunc, b, V->h.fn_upvalue, NULL, 0);
	/* P: chunk name S2, constants kgc[-2] = T3, kgc[-1] = S2 */
	memset(b, 0, sizeof(b));
	put32(b, V->lay.pt_chunkname, S2);
	put32(b, V->h.pt_sizekgc, 2);
	put32(b, V->h.pt_sizept, 200);
	kgc[0] = T3;
	kgc[1] = S2;
	obj(P, V->h.tproto, b, V->lay.pt_size, kgc, sizeof(kgc));
	heap_sizes(&H);

	/* -- References and values at 32 bits -- */
	{
		const struct hobj *f1 = &H.o[heap_find(&H, F1)];

		CHECK("a GCRef read at 4 bytes (uvptr[1], the next one beside it)",
		      heap_ref(&H, f1, V->u.fn_uvptr + 4) == U2);
		CHECK("gc.total (GCSize) at 4 bytes", heap_gref(&H, V->h.g_gc_total) == 123456);
		CHECK("a TValue's object: the low 32 bits of a GC itype",
		      heap_tv_gc(&H, tv32(T1, V->h.ttab)) == T1 &&
		      heap_tv_gc(&H, 0x3ff0000000000000ull) == 0 &&
		      heap_tv_gc(&H, (uint64_t)0xfffffffdu << 32 | 0x1234) == 0);
	}

	/* -- Sizes (lj_gc.c's frees, GC64 off) -- */
	CHECK("main thread: sizeof(lua_State) 64 + 10 slots",
	      H.o[heap_find(&H, L)].size == 64 + 10 * 8);
	CHECK("table: sizeof(GCtab) 32", H.o[heap_find(&H, T1)].size == 32);
	CHECK("string of 3: sizeof(GCstr) 20 + 4", H.o[heap_find(&H, S1)].size == 24);
	CHECK("Lua function, 3 upvalues: sizeLfunc(3), GCRefs of 4", H.o[heap_find(&H, F1)].size ==
	      20 + 3 * 4);
	CHECK("C function, no upvalue: sizeCfunc(0)", H.o[heap_find(&H, F2)].size == 32);
	CHECK("upvalue: sizeof(GCupval) 24", H.o[heap_find(&H, U1)].size == 24);

	/* -- Marking -- */
	CHECK("mark ran", heap_mark(&H) == 0);
	CHECK("the frames' untyped functions reached (gc_traverse_frames)",
	      (H.o[heap_find(&H, F1)].flags & HOBJ_REACHED) &&
	      (H.o[heap_find(&H, F2)].flags & HOBJ_REACHED));
	CHECK("through F1: its prototype, its constants (kgc[] of 4 bytes), its upvalues' values",
	      (H.o[heap_find(&H, P)].flags & HOBJ_REACHED) &&
	      (H.o[heap_find(&H, T3)].flags & HOBJ_REACHED) &&
	      (H.o[heap_find(&H, T2)].flags & HOBJ_REACHED));
	CHECK("gcroot[5], 4 bytes a root", H.o[heap_find(&H, S3)].flags & HOBJ_REACHED);
	CHECK("reached: all but GARB", H.reached == H.n - 1 &&
	      !(H.o[heap_find(&H, GARB)].flags & HOBJ_REACHED));
	CHECK("the metatable reference outside the heap: counted, not followed",
	      H.c.dangling == 1);
	{
		char p[256];

		heap_path(&H, (uint32_t)heap_find(&H, F2), p, sizeof(p));
		CHECK("a frame's function named by its slot", !strcmp(p, "stack slot 3 of main thread"));
		heap_path(&H, (uint32_t)heap_find(&H, T3), p, sizeof(p));
		CHECK("a constant of the frame's prototype",
		      !strcmp(p, "stack slot 1 of main thread[prototype][constant]"));
	}

	/* -- Frames beyond the copy: a slot list that lies is not read past -- */
	{
		struct hobj *l = &H.o[heap_find(&H, L)];
		const uint8_t *fr;
		uint64_t n, nf;

		heap_stack(&H, l, &n, &fr, &nf);
		CHECK("the copy's 5 slots and 2 frames", n == 5 && nf == 2);
		l->rawlen -= 4; /* half a frame list */
		heap_stack(&H, l, &n, &fr, &nf);
		CHECK("a cut frame list: the whole entries only", n == 5 && nf == 1);
		l->rawlen -= 8 + 4; /* a slot short: no frames */
		heap_stack(&H, l, &n, &fr, &nf);
		CHECK("a stack short of top: its slots, no frames", n == 4 && nf == 0);
	}
	heap_free(&H);
	return fails != 0;
}
