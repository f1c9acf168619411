/* The readers of a target's memory (convert/jit.c, convert/luanames.c, target/vmscan.c, convert/lines.c)
 * fed forged LuaJIT structures built in this test's own memory: proc_read
 * is defined here and reads it, counting the reads. Under ASan and UBSan:
 * a read or write out of bounds fails the test. Offsets: user/target/layout.c's
 * LuaJIT 2.1 GC64 entry. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert/conv.h"
#include "streams/out.h"
#include "convert/jit.h"

#include "convert/lines.h"
#include "convert/luanames.h"
#include "target/caps.h"
#include "target/vmscan.h"

#include "check.h"

/* -- The target: this process's memory --------------------------------- */

#define ARENA (64u << 20)
#include "arena.h"

const struct pmap *pmaps_find(const struct pmaps *m, uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++)
		if (addr >= m->v[i].lo && addr < m->v[i].hi)
			return &m->v[i];
	return NULL;
}

/* -- The tracer's side: what convert/jit.c writes ---------------------------- */

static unsigned syms, syms_noname;
static size_t last_name_len;
static char last_name[LMT_CHUNKNAME_MAX + 1];

void out_sym(struct tout *o, const struct mp_sym *s)
{
	syms++;
	syms_noname += !s->name_len;
	last_name_len = s->name_len;
	if (s->name_len <= LMT_CHUNKNAME_MAX)
		memcpy(last_name, s->name, s->name_len);
}

const char *lua_name(struct conv_vm *v, uint64_t key)
{
	return NULL;
}

/* -- Forged structures ------------------------------------------------- */

static const struct lj_variant *var = &lj_variants[0];
#define U (&var->u)
#define LAY (&var->lay)

#define OP_FUNCF 89
#define OP_KSHORT 41
#define SNAP_FRAME 0x010000
#define REF_BIAS 0x8000

static void put(void *base, unsigned off, const void *v, size_t n)
{
	memcpy((uint8_t *)base + off, v, n);
}
#define PUT(b, off, v) do { __typeof__(v) v_ = (v); put((b), (off), &v_, sizeof(v_)); } while (0)

/* A GCstr of len bytes (its length field says flen). */
static uint64_t fstr(const char *s, uint32_t len, uint32_t flen)
{
	uint8_t *b = zalloc(LAY->str_size + len + 1);

	PUT(b, LAY->str_len, flen);
	memcpy(b + LAY->str_size, s, len);
	return (uintptr_t)b;
}

/* A prototype of sizebc instructions: FUNCF, then KSHORTs; line 10 + pos
 * (mod 256), chunk name name. */
static uint64_t fproto(uint32_t sizebc, uint64_t name)
{
	/* one block, as lj_parse.c makes it: header, bytecode, lines */
	const uint32_t sizept = LAY->pt_size + 4 * sizebc + sizebc;
	uint8_t *b = zalloc(sizept);
	uint8_t *li = b + LAY->pt_size + 4 * sizebc;
	uint32_t *bc = (uint32_t *)(b + LAY->pt_size);

	b[U->pt_gct] = (uint8_t)U->tproto;
	PUT(b, LAY->pt_sizebc, sizebc);
	PUT(b, LAY->pt_chunkname, name);
	PUT(b, LAY->pt_firstline, (int32_t)10);
	PUT(b, LAY->pt_numline, (uint32_t)200); /* one byte a line */
	PUT(b, LAY->pt_lineinfo, (uint64_t)(uintptr_t)li);
	PUT(b, var->h.pt_sizept, sizept);
	bc[0] = OP_FUNCF;
	for (uint32_t i = 1; i < sizebc; i++) {
		bc[i] = OP_KSHORT;
		li[i - 1] = (uint8_t)i;
	}
	return (uintptr_t)b;
}

static uint64_t pc_of(uint64_t pt, uint32_t pos)
{
	return pt + LAY->pt_size + 4 * (uint64_t)pos;
}

/* A C function's GCfunc (ffid 1), calling f. */
static uint64_t fcfunc(uint64_t f)
{
	uint8_t *b = zalloc(64);

	b[LAY->fn_ffid] = 1;
	PUT(b, LAY->fn_f, f);
	return (uintptr_t)b;
}

/* A GCtrace: nsnap snapshots (12 bytes each), a map, IR [nk, nins). */
struct ftrace {
	uint8_t *T;
	uint8_t *snap;
	uint32_t *map;
	uint64_t *ir; /* from nk */
};

static struct ftrace ftrace(uint16_t nsnap, uint32_t nsnapmap, uint32_t nk, uint32_t nins)
{
	struct ftrace f = { .T = zalloc(256) };

	f.snap = zalloc((size_t)nsnap * U->snap_size + 1);
	f.map = zalloc((size_t)nsnapmap * 4 + 4);
	f.ir = zalloc((size_t)(nins - nk) * 8 + 8);
	PUT(f.T, U->T_nsnap, nsnap);
	PUT(f.T, U->T_nsnapmap, nsnapmap);
	PUT(f.T, U->T_snap, (uint64_t)(uintptr_t)f.snap);
	PUT(f.T, U->T_snapmap, (uint64_t)(uintptr_t)f.map);
	PUT(f.T, U->T_nk, nk);
	PUT(f.T, U->T_nins, nins);
	/* LuaJIT's T->ir is biased: ir[ref] for ref from nk */
	PUT(f.T, U->T_ir, (uint64_t)(uintptr_t)f.ir - (uint64_t)nk * 8);
	return f;
}

static void fsnap(struct ftrace *f, unsigned i, uint32_t mapofs, uint16_t ref,
		  uint16_t mcofs, uint8_t nent)
{
	uint8_t *e = f->snap + (size_t)i * U->snap_size;

	PUT(e, U->snap_mapofs, mapofs);
	PUT(e, U->snap_ref, ref);
	PUT(e, U->snap_mcofs, mcofs);
	e[U->snap_nent] = nent;
}

static struct conv_proc proc;
static struct tout out;

static struct conv_vm *fvm(void)
{
	struct conv_vm *v = calloc(1, sizeof(*v));

	v->var = var;
	v->out = &out;
	conv_vm_link(&proc, v);
	return v;
}

static void vm_gone(struct conv_vm *v)
{
	struct conv_vm **pp = &proc.vms;

	traces_free(v);
	while (*pp != v)
		pp = &(*pp)->next;
	*pp = v->next;
	if (proc.last == v)
		for (proc.last = proc.vms; proc.last && proc.last->next; proc.last = proc.last->next)
			;
	free(v);
}

/* Trace traceno (f, its start prototype pt, machine code mc of sz bytes
 * if mc) added as BPF announces one. */
static void add_mc(struct conv_vm *v, uint64_t traceno, const struct ftrace *f, uint64_t pt,
		   const uint8_t *mc, uint32_t sz)
{
	struct lmt_trace r = { .traceno = traceno, .T = (uintptr_t)f->T, .proto = pt,
			       .mcode = (uintptr_t)mc, .szmcode = mc ? sz : 0 };

	traces_add(v, &r);
}

static void add(struct conv_vm *v, uint64_t traceno, const struct ftrace *f, uint64_t pt)
{
	add_mc(v, traceno, f, pt, NULL, 0);
}

/* An event at machine code offset ofs of trace traceno: its line and
 * stack. The count of frames. */
static unsigned event(struct conv_vm *v, uint64_t traceno, uint32_t ofs, struct mp_event *m,
		      struct sk_frame *fr, unsigned max, int *whole)
{
	struct tloc at;

	*m = (struct mp_event){ .kind = MP_ALLOC, .src = MP_SRC_TRACE, .loc = traceno,
				.line = ofs };
	*whole = -1;
	if (traces_line(v, m, 0, &at))
		return 0;
	return traces_frames(v, &at, m, fr, max, whole);
}

/* -- Snapshot frames ---------------------------------------------------- */

/* One snapshot at bc[1] of pt, base slot 6 (its function at slot 4, its
 * link at 5), with frame entries e (in slot order); IR constants hold
 * their values (ir[ref + 1]). */
struct fent {
	uint32_t slot, flags;
	uint64_t v;
};

static struct ftrace frames_trace(uint64_t pt, const struct fent *e, unsigned n)
{
	const uint32_t nk = REF_BIAS - 2 * n, nins = REF_BIAS + 1;
	struct ftrace f = ftrace(1, n + 2, nk, nins);
	const uint64_t pcbase = pc_of(pt, 1) << 8 | (6 - 2);

	for (unsigned i = 0; i < n; i++) {
		f.ir[2 * i + 1] = e[i].v;
		f.map[i] = e[i].slot << 24 | e[i].flags | (nk + 2 * i);
	}
	memcpy(&f.map[n], &pcbase, 8);
	fsnap(&f, 0, 0, REF_BIAS, 0, (uint8_t)n);
	return f;
}

static void test_frames(void)
{
	const uint64_t pt = fproto(4, fstr("@f.lua", 6, 6)), cfn = fcfunc(0x1234);
	struct sk_frame fr[16];
	struct mp_event m;
	struct conv_vm *v = fvm();
	int whole;
	unsigned n;

	proc.tr_cut = 0;
	/* LuaJIT's C frame: FRAME_C, four slots below: a C function's frame
	 * at slot 0. */
	{
		const struct fent e[] = { { 0, 0, cfn }, { 1, SNAP_FRAME, 0 },
					  { 5, SNAP_FRAME, 4 << 3 | 1 } };
		struct ftrace good = frames_trace(pt, e, 3);

		add(v, 1, &good, pt);
		n = event(v, 1, 0, &m, fr, 16, &whole);
		CHECK("frames: a C frame's link: the event's line, then the C function",
		      n == 2 && fr[0].addr == pt && fr[0].line == 11 &&
		      fr[1].src == MP_SRC_CFUNC && fr[1].addr == 0x1234 && whole == 1);
		CHECK("frames: a real trace is not counted cut", proc.tr_cut == 0);
	}
	/* A vararg function's frame: FRAME_VARG, two slots above the call's
	 * own frame (slots 2 and 3), whose link is the Lua caller's return
	 * PC (after bc[1]): walked through, no frame of its own. */
	{
		const struct fent e[] = { { 0, 0, cfn }, { 1, SNAP_FRAME, 0 },
					  { 2, 0, cfn }, { 3, SNAP_FRAME, pc_of(pt, 2) },
					  { 5, SNAP_FRAME, 2 << 3 | 3 } };
		struct ftrace varg = frames_trace(pt, e, 5);

		add(v, 9, &varg, pt);
		n = event(v, 9, 0, &m, fr, 16, &whole);
		CHECK("frames: FRAME_VARG walked through to the caller's return PC",
		      n == 2 && fr[0].addr == pt && fr[1].src == MP_SRC_LFUNC &&
		      fr[1].addr == pt && fr[1].line == 11 && whole == 1);
	}
	/* A link of 1 or 2 (a continuation, its PC below it): a frame of no
	 * slots; the walk used to stay at the slot and write past its
	 * output. */
	for (uint64_t link = 1; link <= 2; link++) {
		const struct fent e[] = { { 3, 0x020000 /* SNAP_CONT */, pc_of(pt, 2) },
					  { 4, 0, cfn }, { 5, SNAP_FRAME, link } };
		struct ftrace bad = frames_trace(pt, e, 3);
		const uint64_t cut = proc.tr_cut;
		char name[64];

		add(v, 1 + link, &bad, pt);
		n = event(v, 1 + link, 0, &m, fr, 16, &whole);
		snprintf(name, sizeof(name), "frames: link %u: the walk stops, not whole",
			 (unsigned)link);
		CHECK(name, n == 1 && fr[0].addr == pt && whole == 0);
		snprintf(name, sizeof(name), "frames: link %u: the trace counted cut",
			 (unsigned)link);
		CHECK(name, proc.tr_cut == cut + 1);
	}
	vm_gone(v);
}

/* -- A stretch's sites by its calls ------------------------------------- */

/* Trace traceno of pt (bc[1], bc[2]: TNEW, lines 11 and 12; bc[3] RET0),
 * one snapshot at bc[1], its machine code mc (sz bytes): an event at
 * offset ofs, its line. */
static int64_t calls_line(struct conv_vm *v, uint64_t traceno, uint64_t pt, const uint8_t *mc,
			  uint32_t sz, uint32_t ofs)
{
	struct ftrace f = frames_trace(pt, NULL, 0);
	struct mp_event m = { .kind = MP_ALLOC, .src = MP_SRC_TRACE, .loc = traceno,
			      .line = ofs };
	struct tloc at;

	add_mc(v, traceno, &f, pt, mc, sz);
	return traces_line(v, &m, 0, &at) ? -1 : (int64_t)m.line;
}

static void test_calls(void)
{
	const uint64_t pt = fproto(8, fstr("@c.lua", 6, 6));
	uint32_t *bc = (uint32_t *)(uintptr_t)(pt + LAY->pt_size);
	uint8_t *mc = zalloc(64);
	struct conv_vm *v = fvm();
	int32_t rel;

	proc.tr_cut = 0;
	bc[1] = bc[2] = U->bc_tnew;
	bc[3] = U->bc_ret0;
	/* two calls of one function (lj_tab_new1), returning at 5 and 10 */
	memset(mc, 0x90, 64);
	for (int k = 0; k < 2; k++) {
		mc[5 * k] = 0xe8;
		rel = 0x1000 - 5 * (k + 1);
		memcpy(mc + 5 * k + 1, &rel, 4);
	}
	/* The first call made nothing this time (the site's rank among those
	 * seen would make the second the first bytecode's): the second's
	 * new block is the second TNEW's, the call told by its place. */
	CHECK("calls: a stretch's second allocating call is its second bytecode's",
	      calls_line(v, 1, pt, mc, 64, 10) == 12);
	CHECK("calls: ... and its first the first's", calls_line(v, 1, pt, mc, 64, 5) == 11);
	/* Machine code that does not decode to its end, or over the cap:
	 * no calls told, the rank among the sites seen (the first seen, the
	 * first bytecode). */
	mc[20] = 0x06; /* no instruction in 64-bit mode */
	CHECK("calls: machine code that does not decode: by rank",
	      calls_line(v, 2, pt, mc, 64, 10) == 11);
	mc[20] = 0x90;
	CHECK("calls: machine code over LMT_TRACE_MCODE_MAX: by rank",
	      calls_line(v, 3, pt, mc, LMT_TRACE_MCODE_MAX + 1, 10) == 11);
	CHECK("calls: none of them counted cut", proc.tr_cut == 0);
	vm_gone(v);
}

/* -- A stretch over a loop's instruction ----------------------------------- */

/* An instruction op A D, D a jump from pos to to. */
static uint32_t jump(unsigned op, uint32_t pos, uint32_t to)
{
	return op | (to - (pos + 1) + 0x8000) << 16;
}

/* Trace traceno of pt: snapshot 0 at PC pc0, snapshot 1 (machine code
 * from offset 100) at PC pc1; an event at offset 10, its line. */
static int64_t two_snaps_line(struct conv_vm *v, uint64_t traceno, uint64_t pt, uint64_t pc0,
			      uint64_t pc1)
{
	struct ftrace f = ftrace(2, 4, REF_BIAS, REF_BIAS + 1);
	const uint64_t pcs[2] = { pc0 << 8 | 4, pc1 << 8 | 4 };
	struct mp_event m;
	struct sk_frame fr[4];
	int whole;

	memcpy(&f.map[0], &pcs[0], 8);
	memcpy(&f.map[2], &pcs[1], 8);
	fsnap(&f, 0, 0, REF_BIAS, 0, 0);
	fsnap(&f, 1, 2, REF_BIAS, 100, 0);
	add(v, traceno, &f, pt);
	return event(v, traceno, 10, &m, fr, 4, &whole) ? (int64_t)m.line : -1;
}

/* The same, snapshot 0 at bc[from], snapshot 1 at bc[stop]. */
static int64_t loop_line(struct conv_vm *v, uint64_t traceno, uint64_t pt, uint32_t from,
			 uint32_t stop)
{
	return two_snaps_line(v, traceno, pt, pc_of(pt, from), pc_of(pt, stop));
}

/* for k, v in it() do local t = {} end; local u = {}: JMP to the ITERC,
 * the body's TNEW, the ITERC, the loop's JITERL (its D a trace's number),
 * a TNEW after the loop. A stretch from the JITERL (a stitched
 * iterator's continuation) goes where the next snapshot is. */
static void test_loops(void)
{
	const uint64_t pt = fproto(9, fstr("@l.lua", 6, 6));
	uint32_t *bc = (uint32_t *)(uintptr_t)(pt + LAY->pt_size);
	const unsigned jiterl = U->bc_fori + 7, jforl = U->bc_fori + 4;
	struct conv_vm *v = fvm();

	proc.tr_cut = 0;
	bc[1] = jump(U->bc_jmp, 1, 4);
	bc[2] = U->bc_tnew;  /* line 12 */
	bc[4] = U->bc_iterc; /* line 14 */
	bc[5] = jiterl | 1u << 16; /* line 15, trace 1 */
	bc[6] = U->bc_tnew;  /* line 16 */
	bc[7] = U->bc_ret0;
	CHECK("loops: JITERL into its body (the JMP's), the next snapshot there: the body's TNEW",
	      loop_line(v, 1, pt, 5, 3) == 12);
	CHECK("loops: JITERL out of the loop, the next snapshot after it: the TNEW after",
	      loop_line(v, 2, pt, 5, 7) == 16);
	/* the JMP gone: the body not found, the walk ends at the loop (the
	 * snapshot's own line, as before) */
	bc[1] = U->bc_jmp | 0x8000u << 16;
	CHECK("loops: JITERL whose JMP is not found: the snapshot's line",
	      loop_line(v, 3, pt, 5, 3) == 15);
	/* for i = 1, n do local t = {} end: FORI past the loop, JFORL */
	bc[1] = jump(U->bc_fori, 1, 6);
	bc[5] = jforl | 1u << 16;
	CHECK("loops: JFORL into its body (its FORI's)", loop_line(v, 4, pt, 5, 3) == 12);
	CHECK("loops: FORI past the loop, the next snapshot there", loop_line(v, 5, pt, 1, 7) == 16);
	CHECK("loops: FORI into the body", loop_line(v, 6, pt, 1, 3) == 12);
	CHECK("loops: none counted cut", proc.tr_cut == 0);
	vm_gone(v);
}

/* -- A stretch that ends at a function's entry -------------------------- */

/* Trace traceno of pt: its first snapshot at bc[1] (base slot 6), its
 * last at the entry of pt2, base slot base, the link below it (slot
 * base - 1) link. The lines of events at offsets 10, 20, 30, 40 of the
 * first stretch, in l[]. */
static void entry_lines(struct conv_vm *v, uint64_t traceno, uint64_t pt, uint64_t pt2,
			uint32_t base, uint64_t link, int64_t l[4])
{
	const uint32_t nk = REF_BIAS - 2;
	struct ftrace f = ftrace(2, 5, nk, REF_BIAS + 1);
	const uint64_t pcs[2] = { pc_of(pt, 1) << 8 | 4, pc_of(pt2, 0) << 8 | (base - 2) };
	struct mp_event m;
	struct sk_frame fr[4];
	int whole;

	f.ir[1] = link;
	memcpy(&f.map[0], &pcs[0], 8);
	f.map[2] = (base - 1) << 24 | SNAP_FRAME | nk;
	memcpy(&f.map[3], &pcs[1], 8);
	fsnap(&f, 0, 0, REF_BIAS, 0, 0);
	fsnap(&f, 1, 2, REF_BIAS, 100, 1);
	add(v, traceno, &f, pt);
	for (int k = 0; k < 4; k++)
		l[k] = event(v, traceno, 10 + 10 * (uint32_t)k, &m, fr, 4, &whole) ?
			       (int64_t)m.line : -1;
}

/* t1 = {}; g(); t3 = {}; g(); t5 = {}, the two calls from one slot (9),
 * the trace ending at g's entry, linked to g's own trace: its stretch ends
 * at the call whose return PC the last snapshot's frame has as link. A
 * call to a function not known is charged as a builtin's (a site). */
static void test_entry(void)
{
	const uint64_t pt = fproto(7, fstr("@e.lua", 6, 6)), pt2 = fproto(4, fstr("@g.lua", 6, 6));
	uint32_t *bc = (uint32_t *)(uintptr_t)(pt + LAY->pt_size);
	const uint32_t call = U->bc_call | 3u << 8 | 1u << 16 | 1u << 24;
	struct conv_vm *v = fvm();
	int64_t l[4];

	bc[1] = bc[3] = bc[5] = U->bc_tnew; /* lines 11, 13, 15 */
	bc[2] = bc[4] = call;               /* lines 12, 14 */
	bc[6] = U->bc_ret0;
	/* the second call's: TNEW, the first call, TNEW, then the stop */
	entry_lines(v, 1, pt, pt2, 11, pc_of(pt, 5), l);
	CHECK("entry: the last snapshot at the second call's entry: three sites, the call before it not walked into",
	      l[0] == 11 && l[1] == 12 && l[2] == 13);
	CHECK("entry: ... and no site past the call it enters (a fourth: the snapshot's own line)",
	      l[3] == 11);
	/* the first call's: one site, every event its */
	entry_lines(v, 2, pt, pt2, 11, pc_of(pt, 3), l);
	CHECK("entry: the last snapshot at the first call's entry: one site",
	      l[0] == 11 && l[1] == 11);
	/* t1 = {}; return g() into g = function() local t2 = {} ... end: the
	 * snapshot at g's entry has g's frame in the caller's place (base 6,
	 * the caller's own link below): the stretch ends at the tail call,
	 * g's TNEW (its line 12) not walked into */
	bc[2] = U->bc_callt | 4u << 8 | 1u << 16;
	((uint32_t *)(uintptr_t)(pt2 + LAY->pt_size))[2] = U->bc_tnew;
	entry_lines(v, 3, pt, pt2, 6, pc_of(pt2, 3), l);
	CHECK("entry: the last snapshot at a tail call's callee's entry: the stretch ends at the tail call",
	      l[0] == 11 && l[1] == 11);
	vm_gone(v);
}

/* -- PCs in no prototype ------------------------------------------------ */

/* Trace traceno of pt, its first snapshot at bc[1] and its last at PC pc:
 * the line of an event in the first's stretch; the symbols written
 * without a name in *noname. */
static int64_t nopc_line(struct conv_vm *v, uint64_t traceno, uint64_t pt, uint64_t pc,
			 unsigned *noname)
{
	int64_t line;

	syms_noname = 0;
	line = two_snaps_line(v, traceno, pt, pc_of(pt, 1), pc);
	*noname = syms_noname;
	return line;
}

/* At b: words that pass for a GCproto's header (its type tag, sizebc,
 * sizept, lineinfo), a FUNCF 64 bytes before b + at. */
static void fake_header(uint8_t *b, unsigned at, uint32_t sizebc, uint32_t sizept, uint64_t li)
{
	uint8_t *h = b + at - 64 - LAY->pt_size;

	h[U->pt_gct] = (uint8_t)U->tproto;
	PUT(h, LAY->pt_sizebc, sizebc);
	PUT(h, var->h.pt_sizept, sizept);
	PUT(h, LAY->pt_lineinfo, li);
	PUT(h, LAY->pt_size, (uint32_t)OP_FUNCF);
}

/* A trace that returns into pcall's frame ends at a snapshot whose PC is
 * g->bc_cfunc_ext, a C function's, inside GG_State. Scanning back from it
 * met words that passed for a header (the tag, a function header's
 * opcode, sizebc from a pointer's top half) in ~1 run of 100: the stretch
 * before it was walked as a prototype with no name and line 0. */
static void test_nopc(void)
{
	const uint64_t pt = fproto(4, fstr("@f.lua", 6, 6));
	const unsigned gsz = var->h.gg_size;
	uint8_t *gg = zalloc(gsz + 4096), *blk = zalloc(4096);
	struct conv_vm *v = fvm();
	unsigned noname;
	int64_t line;

	v->g = (uintptr_t)gg + LAY->gg_g;
	/* in GG_State: no prototype's, whatever is before it (here a
	 * header that holds together) */
	fake_header(gg, LAY->gg_g + 360, 256, LAY->pt_size + 4 * 256, 0);
	line = nopc_line(v, 1, pt, (uintptr_t)gg + LAY->gg_g + 360, &noname);
	CHECK("no PC: a C function's (in GG_State): no prototype found, none named empty",
	      line == 11 && noname == 0);
	/* elsewhere: a header whose block does not hold its bytecode */
	fake_header(blk, 1024, 200, 0, 0);
	line = nopc_line(v, 2, pt, (uintptr_t)blk + 1024, &noname);
	CHECK("no PC: a header whose sizept does not hold its bytecode is none",
	      line == 11 && noname == 0);
	/* its lines outside its block */
	fake_header(blk, 2048, 200, 2000, (uintptr_t)blk);
	line = nopc_line(v, 3, pt, (uintptr_t)blk + 2048, &noname);
	CHECK("no PC: a header whose line table is outside its block is none",
	      line == 11 && noname == 0);
	/* one that holds together is a prototype (of no name: forged so) */
	fake_header(blk, 3072, 200, LAY->pt_size + 4 * 200, 0);
	line = nopc_line(v, 4, pt, (uintptr_t)blk + 3072, &noname);
	CHECK("no PC: a header that holds together is read as a prototype", noname == 1);
	vm_gone(v);
}

/* -- IR ------------------------------------------------------------------ */

/* An instruction naming, as its operand, a function constant whose
 * pointer would be past the IR's end. */
static void test_ir(void)
{
	const uint64_t pt = fproto(4, fstr("@f.lua", 6, 6));
	const uint32_t nk = 100, nins = 102;
	struct ftrace f = ftrace(1, 3, nk, nins);
	const uint64_t pcbase = pc_of(pt, 1) << 8;
	struct conv_vm *v = fvm();
	uint8_t *ins = (uint8_t *)&f.ir[0], *kg = (uint8_t *)&f.ir[1];
	const uint16_t c = nk + 1;

	proc.tr_cut = 0;
	memcpy(ins + U->ir_op1, &c, 2);
	kg[U->ir_o] = (uint8_t)U->ir_kgc;
	kg[U->ir_t] = (uint8_t)U->irt_func;
	memcpy(&f.map[0], &pcbase, 8);
	fsnap(&f, 0, 0, (uint16_t)nk, 0, 0);
	add(v, 1, &f, pt);
	CHECK("ir: nins below REF_BIAS: refused, counted", proc.tr_cut == 1);

	/* The same trace, real bounds: the constant is read, ir[c + 1]. */
	{
		const uint32_t nk2 = REF_BIAS - 2, nins2 = REF_BIAS + 1;
		struct ftrace g = ftrace(1, 3, nk2, nins2);
		uint8_t *ins2 = (uint8_t *)&g.ir[2], *kg2 = (uint8_t *)&g.ir[0];
		const uint16_t c2 = (uint16_t)nk2;
		struct sk_frame fr[4];
		struct mp_event m;
		int whole;

		memcpy(ins2 + U->ir_op1, &c2, 2);
		kg2[U->ir_o] = (uint8_t)U->ir_kgc;
		kg2[U->ir_t] = (uint8_t)U->irt_func;
		g.ir[1] = fcfunc(0x99); /* a C function: not inlined */
		memcpy(&g.map[0], &pcbase, 8);
		fsnap(&g, 0, 0, (uint16_t)nk2, 0, 0);
		add(v, 2, &g, pt);
		CHECK("ir: within bounds: resolved, not cut",
		      event(v, 2, 0, &m, fr, 4, &whole) == 1 && m.loc == pt &&
		      m.line == 11 && proc.tr_cut == 1);
	}
	vm_gone(v);
	proc.tr_cut = 0;
}

/* -- Caps and budgets ---------------------------------------------------- */

static void test_caps(void)
{
	const uint64_t pt = fproto(4, fstr("@f.lua", 6, 6));
	struct conv_vm *v = fvm();
	uint64_t r0;

	proc.tr_cut = 0;
	{
		struct ftrace f = ftrace(1, 3, REF_BIAS - 2, REF_BIAS + 1);
		PUT(f.T, U->T_nsnap, (uint16_t)65535);
		r0 = reads;
		add(v, 1, &f, pt);
		CHECK("caps: 65535 snapshots: refused unread, counted",
		      proc.tr_cut == 1 && reads - r0 <= 4);
	}
	{
		struct ftrace f = ftrace(1, 3, REF_BIAS - 2, REF_BIAS + 1);
		PUT(f.T, U->T_nsnapmap, (uint32_t)LMT_TRACE_SNAPMAP_MAX + 1);
		add(v, 2, &f, pt);
		CHECK("caps: a snapshot map over its cap: refused, counted", proc.tr_cut == 2);
	}
	{
		struct ftrace f = ftrace(1, 3, REF_BIAS - 2, REF_BIAS + 1);
		add(v, (uint64_t)LMT_TRACENO_MAX + 1, &f, pt);
		add(v, 0, &f, pt);
		CHECK("caps: trace numbers 0 and 65536: refused, counted", proc.tr_cut == 4);
	}
	vm_gone(v);
	proc.tr_cut = 0;
}

/* A trace of nsnap snapshots, each at a function entry of a prototype the
 * trace did not start in (found by walking back over its bytecode). */
static struct ftrace many_snaps(uint16_t nsnap, uint64_t pt2)
{
	struct ftrace f = ftrace(nsnap, 2u * nsnap, REF_BIAS - 2, REF_BIAS + 1);

	for (unsigned i = 0; i < nsnap; i++) {
		const uint64_t pcbase = pc_of(pt2, i % 2 ? 1 : 2000) << 8;

		memcpy(&f.map[2 * i], &pcbase, 8);
		fsnap(&f, i, 2 * i, REF_BIAS, (uint16_t)i, 0);
	}
	return f;
}

static void test_budget(void)
{
	const uint64_t pt = fproto(4, fstr("@f.lua", 6, 6));
	const uint64_t pt2 = fproto(4096, fstr("@g.lua", 6, 6));
	struct conv_vm *v = fvm(), *w = fvm();
	uint64_t r0 = reads, most = 0;
	struct mp_event m;
	struct sk_frame fr[4];
	int whole;

	/* A prototype found by walking back: read once for the trace, not
	 * once a snapshot (it was nsnap^2). */
	{
		struct ftrace f = many_snaps(200, pt2);
		add(v, 1, &f, pt);
		CHECK("budget: 200 snapshots in one prototype: under 100 reads",
		      reads - r0 < 100);
		CHECK("budget: ... and resolved",
		      event(v, 1, 1, &m, fr, 4, &whole) >= 1 && m.loc == pt2 && m.line == 11);
	}
	/* Many trace numbers naming one trace at the snapshot cap: the
	 * process's traces stay within its budget, the oldest go. */
	{
		struct ftrace f = many_snaps(LMT_TRACE_SNAPS_MAX, pt2);
		for (uint64_t no = 2; no < 300; no++) {
			r0 = reads;
			add(no % 2 ? v : w, no, &f, pt);
			most = reads - r0 > most ? reads - r0 : most;
		}
		CHECK("budget: 298 traces of 2048 snapshots: within the process's bytes",
		      proc.tr_bytes <= LMT_PROC_TRACE_BYTES_MAX && proc.tr_bytes > 0);
		CHECK("budget: ... the oldest evicted, counted", proc.tr_evicted > 100);
		CHECK("budget: ... each under the read budget", most <= LMT_TRACE_READS_MAX);
		CHECK("budget: ... the newest kept",
		      event(v, 299, 1, &m, fr, 4, &whole) >= 1 && m.loc == pt2);
	}
	vm_gone(w);
	vm_gone(v);
	CHECK("budget: freed: the process's bytes back to 0", proc.tr_bytes == 0);
	proc.tr_evicted = 0;
}

/* The process's budget of reads (LMT_PROC_READS_MAX): over it, a new
 * trace is not read at all and one under way stops; each counted once, in
 * tr_budget (not tr_cut); their events stay at trace granularity. */
static void test_proc_budget(void)
{
	const uint64_t pt = fproto(4, fstr("@f.lua", 6, 6));
	const uint64_t pt2 = fproto(4096, fstr("@g.lua", 6, 6));
	struct ftrace f = many_snaps(200, pt2);
	struct conv_vm *v = fvm();
	struct mp_event m;
	struct sk_frame fr[4];
	uint64_t r0;
	int whole;

	proc.tr_cut = proc.tr_budget = 0;
	/* At the budget: three traces, no read of the target */
	proc.tr_reads = LMT_PROC_READS_MAX;
	r0 = reads;
	for (uint64_t no = 1; no <= 3; no++)
		add(v, no, &f, pt);
	CHECK("proc budget: 3 traces over it: none read, 3 counted, none cut",
	      reads == r0 && proc.tr_budget == 3 && proc.tr_cut == 0);
	CHECK("proc budget: ... an event of one at trace granularity",
	      event(v, 2, 1, &m, fr, 4, &whole) == 0 && m.src == MP_SRC_TRACE &&
	      m.loc == 2 && m.line == 1);
	/* 20 reads left: the header and snapshots (6 + 2), then 12 of the
	 * walks; the trace stops there, counted once */
	proc.tr_reads = LMT_PROC_READS_MAX - 20;
	r0 = reads;
	add(v, 4, &f, pt);
	CHECK("proc budget: a trace stopped by it: counted once, not cut",
	      proc.tr_budget == 4 && proc.tr_cut == 0);
	CHECK("proc budget: ... the reads within it",
	      reads - r0 <= 20 && proc.tr_reads == LMT_PROC_READS_MAX);
	/* Under the budget again (not in a real trace: it only grows), the
	 * same trace resolves: the budget was what stopped it */
	proc.tr_reads = 0;
	add(v, 5, &f, pt);
	CHECK("proc budget: under it, the same trace resolved",
	      proc.tr_budget == 4 && event(v, 5, 1, &m, fr, 4, &whole) >= 1 &&
	      m.loc == pt2 && m.line == 11);
	vm_gone(v);
	proc.tr_budget = proc.tr_reads = 0;
}

/* -- Chunk names and line tables ----------------------------------------- */

static void test_names(void)
{
	static char src[LMT_CHUNKNAME_MAX + 100];
	struct conv_vm *v = fvm();
	uint64_t pt;

	memset(src, 'x', sizeof(src));
	/* load(big_source) without a name: the length says 60 MB. */
	pt = fproto(4, fstr(src, sizeof(src), 60u << 20));
	{
		struct ftrace f = ftrace(1, 3, REF_BIAS - 2, REF_BIAS + 1);
		const uint64_t pcbase = pc_of(pt, 1) << 8;

		memcpy(&f.map[0], &pcbase, 8);
		fsnap(&f, 0, 0, REF_BIAS, 0, 0);
		add(v, 1, &f, pt);
	}
	CHECK("names: a 60 MB chunk name: cut to LMT_CHUNKNAME_MAX, ending in ...",
	      last_name_len == LMT_CHUNKNAME_MAX &&
	      !memcmp(last_name + LMT_CHUNKNAME_MAX - 3, "...", 3) &&
	      last_name[0] == 'x' && proc.names_long == 1);
	vm_gone(v);

	/* A line table whose width says more than it holds. */
	{
		struct pline *l = calloc(1, sizeof(*l) + 2);
		*l = (struct pline){ .firstline = 1, .sizebc = 1000, .numline = 100000,
				     .width = 4, .len = 2 };
		CHECK("lines: past a short table: -1", pline_line(l, 500) == -1 &&
		      pline_line(l, 1001) == -1 && pline_line(l, 1000) == 100001);
		free(l);
	}
}

/* -- package.loaded ------------------------------------------------------ */

#define ITYPE(t) ((uint64_t)(int64_t)(t) << 47)

static uint64_t tv_str(uint64_t s)
{
	return ITYPE(U->itype_str) | s;
}

/* A table of n hash nodes (keys "k0".., values val, or vals[i]). */
static uint64_t ftab(unsigned n, uint64_t val, const uint64_t *keys, const uint64_t *vals)
{
	uint8_t *t = zalloc(64), *node = zalloc((size_t)n * U->node_size);

	PUT(t, U->tab_node, (uint64_t)(uintptr_t)node);
	PUT(t, U->tab_hmask, (uint32_t)(n - 1));
	for (unsigned i = 0; i < n; i++) {
		char k[16];
		uint64_t key = keys ? keys[i] : 0, v = vals ? vals[i] : val;

		if (!key) {
			snprintf(k, sizeof(k), "k%u", i);
			key = tv_str(fstr(k, (uint32_t)strlen(k), (uint32_t)strlen(k)));
		}
		PUT(node, i * U->node_size + U->node_key, key);
		PUT(node, i * U->node_size + U->node_val, v);
	}
	return (uintptr_t)t;
}

/* A global_State whose registry's _LOADED is loaded. */
static uint64_t fg(uint64_t loaded)
{
	uint8_t *g = zalloc(1024);
	const uint64_t key = tv_str(fstr("_LOADED", 7, 7)),
		       val = ITYPE(U->itype_tab) | loaded;

	PUT(g, U->g_registrytv, ITYPE(U->itype_tab) | ftab(1, 0, &key, &val));
	return (uintptr_t)g;
}

static void test_luanames(void)
{
	struct u64map names = { 0 };
	uint64_t nodes = 0;
	int r;

	/* Benign: loaded.mod.f is a C function. */
	{
		const uint64_t f = fcfunc(0x4242);
		const uint64_t fk = tv_str(fstr("f", 1, 1)), fv = ITYPE(U->itype_func) | f;
		const uint64_t mod = ftab(1, 0, &fk, &fv);
		const uint64_t mk = tv_str(fstr("mod", 3, 3)), mv = ITYPE(U->itype_tab) | mod;

		r = luanames_read(getpid(), var, fg(ftab(1, 0, &mk, &mv)), &names, &nodes);
		CHECK("luanames: mod.f named", !r && u64map_get(&names, 0x4242) &&
		      !strcmp(u64map_get(&names, 0x4242), "mod.f") && nodes == 3);
	}
	/* package.loaded holding one self-referencing table 4096 times: each
	 * table walked once a depth. */
	{
		uint64_t *vals = calloc(4096, 8);
		uint64_t self = ftab(4096, 0, NULL, NULL), loaded;
		uint8_t *node;

		memcpy(&node, (uint8_t *)(uintptr_t)self + U->tab_node, 8);
		for (unsigned i = 0; i < 4096; i++) {
			vals[i] = ITYPE(U->itype_tab) | self;
			PUT(node, i * U->node_size + U->node_val, vals[i]);
		}
		loaded = ftab(4096, 0, NULL, vals);
		nodes = 0;
		reads = 0;
		r = luanames_read(getpid(), var, fg(loaded), &names, &nodes);
		CHECK("luanames: a self-referencing table 4096 times: each table read "
		      "once a depth", r == 0 && nodes == 1 + 4096 + 2 * 4096);
		CHECK("luanames: ... reads bounded (not 4096^2)", reads < 8 * 4096 * 4);
		free(vals);
	}
	/* Over the walk's node budget: cut, said. */
	{
		const unsigned n = LMT_NAMES_TAB_NODES_MAX / 2;
		uint64_t *vals = calloc(4, 8), *keys = calloc(4, 8);

		for (unsigned i = 0; i < 4; i++) {
			char k[8];
			snprintf(k, sizeof(k), "m%u", i);
			keys[i] = tv_str(fstr(k, 2, 2));
			vals[i] = ITYPE(U->itype_tab) | ftab(n, 0, NULL, NULL);
		}
		nodes = 0;
		r = luanames_read(getpid(), var, fg(ftab(4, 0, keys, vals)), &names, &nodes);
		CHECK("luanames: four tables of 32768 nodes: the walk cut at its budget",
		      r == 1 && nodes <= LMT_NAMES_NODES_MAX);
		free(vals);
		free(keys);
	}
	u64map_free(&names, free);
}

/* -- VMs ----------------------------------------------------------------- */

/* A heap of forged GG_States: L->glref == g, g->mainthref == L, a sane
 * vmstate, allocf in executable memory, cur_L this VM's. */
static void test_vms(void)
{
	const unsigned n = LMT_VMS_MAX + 44, stride = 1024;
	uint8_t *heap = zalloc((size_t)n * stride);
	static uint8_t code[4096];
	struct pmap maps[2] = {
		{ .lo = (uintptr_t)heap, .hi = (uintptr_t)heap + (uint64_t)n * stride,
		  .perms = "rw-p", .path = "[heap]" },
		{ .lo = (uintptr_t)code, .hi = (uintptr_t)code + sizeof(code), .perms = "r-xp",
		  .path = "/x" },
	};
	struct pmaps m = { .v = maps, .n = 2 };
	struct vmscan s;
	int r;

	for (unsigned i = 0; i < n; i++) {
		uint8_t *L = heap + (size_t)i * stride;
		const uint64_t l = (uintptr_t)L, g = l + LAY->gg_g;

		L[LAY->L_gct] = (uint8_t)LAY->tthread;
		PUT(L, LAY->L_glref, g);
		PUT(L, LAY->gg_g + LAY->g_mainthref, l);
		PUT(L, LAY->gg_g + LAY->g_vmstate, (int32_t)~0);
		PUT(L, LAY->gg_g + LAY->g_allocf, (uint64_t)(uintptr_t)code);
		PUT(L, LAY->gg_g + LAY->g_cur_L, l);
	}
	r = vm_scan(getpid(), &m, NULL, &s);
	CHECK("vms: 300 forged GG_States: LMT_VMS_MAX kept, the rest counted",
	      !r && s.n == LMT_VMS_MAX && s.over == n - LMT_VMS_MAX);
	CHECK("vms: ... each once", s.n > 1 && s.v[0].L != s.v[1].L &&
	      s.v[s.n - 1].L == (uintptr_t)heap + (uint64_t)(LMT_VMS_MAX - 1) * stride);
	/* an unknown build's line: each is shaped as a GC64 main lua_State */
	CHECK("vms: each seen with 64-bit references, none with 32-bit ones",
	      s.shape64 == n && s.shape32 == 0 &&
	      !strcmp(vm_refs_seen(s.shape64, s.shape32), "64-bit references (GC64)"));
	{
		size_t n64 = 0, n32 = 0;

		vm_shape_at(getpid(), (uintptr_t)heap, &n64, &n32);
		CHECK("vms: vm_shape_at the first: GC64's shape", n64 == 1 && n32 == 0);
		heap[LAY->L_gct] = 0;
		vm_shape_at(getpid(), (uintptr_t)heap, &n64, &n32);
		CHECK("vms: ... without a thread's type tag: no shape", n64 == 1 && n32 == 0);
		CHECK("vms: neither or both shapes tell nothing",
		      !strcmp(vm_refs_seen(0, 0), "reference width not told") &&
		      !strcmp(vm_refs_seen(2, 1), "reference width not told") &&
		      !strcmp(vm_refs_seen(0, 3), "32-bit references (GC64 off)"));
	}
	vm_scan_free(&s);
}

int main(void)
{
	proc.pid = getpid();
	test_frames();
	test_calls();
	test_loops();
	test_entry();
	test_nopc();
	test_ir();
	test_caps();
	test_budget();
	test_proc_budget();
	test_names();
	test_luanames();
	test_vms();
	free(arena);
	return fails != 0;
}
