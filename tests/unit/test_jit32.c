/* Traces of a VM without FR2 (LuaJIT 2.1 with GC64 off, the "LuaJIT 2.1
 * GC64 off" entry of user/target/layout.c), fed to convert/jit.c forged in
 * this test's own memory below 4 GiB (32-bit references hold it):
 * a snapshot's 32-bit PC and its frame links after its entries (lj_snap.c
 * snapshot_framelinks), a frame one slot, IR_KGC's reference in the
 * instruction. Each stack is the one the same frames give under FR2
 * (tests/unit/test_forged.c). Under ASan and UBSan. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "convert/conv.h"
#include "convert/jit.h"
#include "convert/lines.h"
#include "convert/luanames.h"
#include "streams/out.h"
#include "target/caps.h"
#include "target/vmscan.h"

#include "check.h"

/* -- The target: this process's memory, below 4 GiB ---------------------- */

#define ARENA (4u << 20)
#include "arena.h"

const struct pmap *pmaps_find(const struct pmaps *m, uint64_t addr)
{
	return NULL;
}

void out_sym(struct tout *o, const struct mp_sym *s)
{
}

const char *lua_name(struct conv_vm *v, uint64_t key)
{
	return NULL;
}

/* -- Forged structures, GC64 off ----------------------------------------- */

static const struct lj_variant *var;
#define U (&var->u)
#define LAY (&var->lay)

#define OP_FUNCF 89
#define OP_KSHORT 41
#define OP_CALL 66
#define OP_TGETV 56
#define SNAP_FRAME 0x010000
#define SNAP_CONT 0x020000
#define REF_BIAS 0x8000
#define FRAME_C 1
#define FRAME_CONT 2

static void put(void *base, unsigned off, const void *v, size_t n)
{
	memcpy((uint8_t *)base + off, v, n);
}
#define PUT(b, off, v) do { __typeof__(v) v_ = (v); put((b), (off), &v_, sizeof(v_)); } while (0)

static uint32_t ref32(const void *p)
{
	return (uint32_t)(uintptr_t)p;
}

static uint32_t fstr(const char *s)
{
	const uint32_t len = (uint32_t)strlen(s);
	uint8_t *b = zalloc(LAY->str_size + len + 1);

	PUT(b, LAY->str_len, len);
	memcpy(b + LAY->str_size, s, len);
	return ref32(b);
}

/* A prototype of sizebc instructions: FUNCF (framesize 3), then KSHORTs;
 * line 10 + pos. Its bytecode in *bc. */
static uint32_t fproto(uint32_t sizebc, uint32_t **bc)
{
	/* one block, as lj_parse.c makes it: header, bytecode, lines */
	const uint32_t sizept = LAY->pt_size + 4 * sizebc + sizebc;
	uint8_t *b = zalloc(sizept);
	uint8_t *li = b + LAY->pt_size + 4 * sizebc;

	*bc = (uint32_t *)(b + LAY->pt_size);
	b[U->pt_gct] = (uint8_t)U->tproto;
	PUT(b, LAY->pt_sizebc, sizebc);
	PUT(b, LAY->pt_chunkname, fstr("@f.lua"));
	PUT(b, LAY->pt_firstline, (int32_t)10);
	PUT(b, LAY->pt_numline, (uint32_t)200);
	PUT(b, LAY->pt_lineinfo, ref32(li));
	PUT(b, var->h.pt_sizept, sizept);
	(*bc)[0] = OP_FUNCF | 3 << 8;
	for (uint32_t i = 1; i < sizebc; i++) {
		(*bc)[i] = OP_KSHORT;
		li[i - 1] = (uint8_t)i;
	}
	return ref32(b);
}

static uint32_t pc_of(uint32_t pt, uint32_t pos)
{
	return pt + LAY->pt_size + 4 * pos;
}

/* A Lua function's GCfunc (ffid 0) of prototype pt. */
static uint32_t flfunc(uint32_t pt)
{
	uint8_t *b = zalloc(32);

	PUT(b, LAY->fn_pc, pc_of(pt, 0));
	return ref32(b);
}

/* A C function's GCfunc (ffid 1), calling f. */
static uint32_t fcfunc(uint64_t f)
{
	uint8_t *b = zalloc(32);

	b[LAY->fn_ffid] = 1;
	PUT(b, LAY->fn_f, f);
	return ref32(b);
}

/* A GCtrace of one snapshot at pc: entries e (in slot order), each a
 * constant (IR_KGC's reference in the instruction, or 0: not one), then
 * the snapshot's links (its PC first). */
struct fent {
	uint32_t slot, flags, k;
};

static uint8_t *ftrace(const struct fent *e, unsigned n, const uint32_t *links,
		       unsigned nl)
{
	const uint32_t nk = REF_BIAS - n, nins = REF_BIAS + 1;
	uint8_t *T = zalloc(256), *snap = zalloc(U->snap_size);
	uint32_t *map = zalloc((n + nl) * 4);
	uint64_t *ir = zalloc((nins - nk) * 8);

	PUT(T, U->T_nsnap, (uint16_t)1);
	PUT(T, U->T_nsnapmap, n + nl);
	PUT(T, U->T_snap, (uint64_t)(uintptr_t)snap);
	PUT(T, U->T_snapmap, (uint64_t)(uintptr_t)map);
	PUT(T, U->T_nk, nk);
	PUT(T, U->T_nins, nins);
	PUT(T, U->T_ir, (uint64_t)(uintptr_t)ir - (uint64_t)nk * 8);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *ins = (uint8_t *)&ir[i];

		PUT(ins, 0, e[i].k); /* op12: its GCRef */
		ins[U->ir_o] = e[i].k ? (uint8_t)U->ir_kgc : (uint8_t)U->ir_kptr;
		map[i] = e[i].slot << 24 | e[i].flags | (nk + i);
	}
	memcpy(map + n, links, nl * 4);
	PUT(snap, U->snap_mapofs, (uint32_t)0);
	PUT(snap, U->snap_ref, (uint16_t)REF_BIAS);
	PUT(snap, U->snap_mcofs, (uint16_t)0);
	snap[U->snap_nent] = (uint8_t)n;
	return T;
}

static struct conv_proc proc;
static struct tout out;

/* The stack of an allocation in trace T (started in pt): its frames. */
static unsigned stack_of(uint8_t *T, uint32_t pt, struct sk_frame *fr, int *whole)
{
	static uint64_t traceno;
	struct lmt_trace r = { .traceno = ++traceno, .T = (uintptr_t)T, .proto = pt };
	struct conv_vm *v = calloc(1, sizeof(*v));
	struct mp_event m = { .kind = MP_ALLOC, .src = MP_SRC_TRACE, .loc = traceno };
	struct tloc at;
	unsigned n = 0;

	v->var = var;
	v->out = &out;
	conv_vm_link(&proc, v);
	traces_add(v, &r);
	*whole = -1;
	if (!traces_line(v, &m, 0, &at))
		n = traces_frames(v, &at, &m, fr, 8, whole);
	traces_free(v);
	proc.vms = proc.last = NULL;
	free(v);
	return n;
}

static void test_frames(void)
{
	/* room before the prototypes: a PC's prototype is found by reading
	 * back over its bytecode in blocks (convert/jit_read.c) */
	const void *pad = zalloc(256);
	uint32_t *abc, *bbc;
	const uint32_t a = fproto(4, &abc), b = fproto(4, &bbc);
	const uint32_t fa = flfunc(a), fb = flfunc(b), cf = fcfunc(0x1234);
	struct sk_frame fr[8];
	int whole;
	unsigned n;

	(void)pad;
	/* a's bc[2]: CALL A=3 (its callee's frame at slot 1 + 3), or
	 * TGETV (an __index metamethod called from it) */
	abc[2] = OP_CALL | 3 << 8;
	{
		/* b inlined into a: b's frame at slot 4, its link a's return PC */
		const struct fent e[] = { { 0, SNAP_FRAME, fa }, { 4, SNAP_FRAME, fb } };
		const uint32_t l[] = { pc_of(b, 1), pc_of(a, 3) };

		n = stack_of(ftrace(e, 2, l, 2), a, fr, &whole);
		CHECK("GC64 off: a Lua frame's link: the snapshot's 32-bit PC, then its caller at the CALL's line",
		      n == 2 && fr[0].addr == b && fr[0].line == 11 && fr[1].addr == a &&
		      fr[1].line == 12 && whole == 1);
		CHECK("GC64 off: a real trace is not counted cut", proc.tr_cut == 0);
	}
	{
		/* a C function's frame at slot 0, a's frame four slots above */
		const struct fent e[] = { { 0, SNAP_FRAME, cf }, { 4, SNAP_FRAME, fa } };
		const uint32_t l[] = { pc_of(a, 3), 4 << 3 | FRAME_C };

		n = stack_of(ftrace(e, 2, l, 2), a, fr, &whole);
		CHECK("GC64 off: a sized link: the frame below it, a C function",
		      n == 2 && fr[0].addr == a && fr[0].line == 13 &&
		      fr[1].src == MP_SRC_CFUNC && fr[1].addr == 0x1234 && whole == 1);
	}
	abc[2] = OP_TGETV | 3 << 8;
	{
		/* b an __index metamethod of a's TGETV: a continuation at a's
		 * framesize (slot 1 + 3), b's frame above it; the links
		 * innermost first: b's size and type, the continuation's PC */
		const struct fent e[] = { { 0, SNAP_FRAME, fa }, { 4, SNAP_CONT, 0 },
					  { 5, SNAP_FRAME, fb } };
		const uint32_t l[] = { pc_of(b, 1), 5 << 3 | FRAME_CONT, pc_of(a, 3) };

		n = stack_of(ftrace(e, 3, l, 3), a, fr, &whole);
		CHECK("GC64 off: a continuation's frame: its caller at the bytecode that called it",
		      n == 2 && fr[0].addr == b && fr[0].line == 11 && fr[1].addr == a &&
		      fr[1].line == 12 && whole == 1);
	}
	{
		/* a size past slot 0, and one landing on no frame */
		const struct fent e[] = { { 0, SNAP_FRAME, cf }, { 4, SNAP_FRAME, fa } };
		const uint32_t l1[] = { pc_of(a, 3), 9 << 3 | FRAME_C };
		const uint32_t l2[] = { pc_of(a, 3), 2 << 3 | FRAME_C };
		const uint64_t cut = proc.tr_cut;

		n = stack_of(ftrace(e, 2, l1, 2), a, fr, &whole);
		CHECK("GC64 off: a link past slot 0: the event's line, not whole",
		      n == 1 && fr[0].addr == a && whole == 0);
		n = stack_of(ftrace(e, 2, l2, 2), a, fr, &whole);
		CHECK("GC64 off: a link to no frame: the event's line, not whole",
		      n == 1 && fr[0].addr == a && whole == 0);
		CHECK("GC64 off: both traces counted cut", proc.tr_cut == cut + 2);
	}
	{
		/* fewer links than flagged slots, entries out of slot order */
		const struct fent e[] = { { 0, SNAP_FRAME, fa }, { 4, SNAP_FRAME, fb } };
		const struct fent bad[] = { { 4, SNAP_FRAME, fb }, { 0, SNAP_FRAME, fa } };
		const uint32_t l[] = { pc_of(b, 1), pc_of(a, 3) };
		const uint64_t cut = proc.tr_cut;

		n = stack_of(ftrace(e, 2, l, 1), a, fr, &whole);
		CHECK("GC64 off: a map short of its links: not resolved", n == 0);
		n = stack_of(ftrace(bad, 2, l, 2), a, fr, &whole);
		CHECK("GC64 off: entries out of slot order: not resolved", n == 0);
		CHECK("GC64 off: both counted cut", proc.tr_cut == cut + 2);
	}
}

int main(void)
{
	for (unsigned i = 0; i < lj_nvariants; i++)
		if (!strcmp(lj_variants[i].name, "LuaJIT 2.1 GC64 off"))
			var = &lj_variants[i];
	arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (!var || arena == MAP_FAILED) {
		fprintf(stderr, "test_jit32: no GC64-off entry, or no memory below 4 GiB\n");
		return 2;
	}
	proc.pid = getpid();
	test_frames();
	munmap(arena, ARENA);
	return fails != 0;
}
