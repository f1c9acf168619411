/* Traces: what is read of the target (convert/jit_int.h): reads within a
 * trace's budgets and its process's (target/caps.h), the bytes kept, the
 * trace's IR constants and snapshots' frame slots, and the prototypes it
 * runs (bytecode and line tables, found by a PC). */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/jit_int.h"
#include "streams/out.h"
#include "target/ljref.h"
#include "target/proc.h"

/* A read of the target for trace tr, within its read budget and its
 * process's (the trace counted once if that one stops it). */
int jit_rd(struct conv_vm *v, struct ttrace *tr, uint64_t addr, void *buf, size_t len)
{
	if (v->p->tr_reads >= LMT_PROC_READS_MAX) {
		v->p->tr_budget += !tr->budget;
		tr->budget = tr->over = 1;
		return -1;
	}
	if (tr->reads >= LMT_TRACE_READS_MAX) {
		tr->over = 1;
		return -1;
	}
	tr->reads++;
	v->p->tr_reads++;
	return proc_read(v->p->pid, addr, buf, len);
}

/* n more bytes kept for trace tr: 0, or -1 over its budget. */
int jit_keep(struct ttrace *tr, size_t n)
{
	if (tr->bytes + n > LMT_TRACE_BYTES_MAX) {
		tr->over = 1;
		return -1;
	}
	tr->bytes += n;
	return 0;
}

static void tproto_free(void *p)
{
	struct tproto *tp = p;

	if (tp) {
		free(tp->lines);
		free(tp->bc);
	}
	free(tp);
}

void jit_trace_free(void *p)
{
	struct ttrace *tr = p;

	for (uint32_t i = 0; tr && i < tr->nsnap; i++) {
		for (int k = 0; k <= MAX_SITES; k++)
			free(tr->s[i].ch[k]);
		free(tr->s[i].fr);
		free(tr->s[i].below);
	}
	if (tr) {
		u64map_free(&tr->protos, tproto_free);
		free(tr->ir);
		free(tr->xsunk);
		free(tr->calls);
		free(tr->mc);
	}
	free(tr);
}

/* The trace's machine code, sz bytes at mc, kept for jit_calls (read
 * while BPF holds the process: the trace may be gone by its first event).
 * A read that fails or a length over LMT_TRACE_MCODE_MAX: none kept, no
 * calls told. */
void jit_read_mcode(struct conv_vm *v, struct ttrace *tr, uint64_t mc, uint32_t sz)
{
	if (!mc || !sz || sz > LMT_TRACE_MCODE_MAX || jit_keep(tr, sz) || !(tr->mc = malloc(sz)))
		return;
	if (jit_rd(v, tr, mc, tr->mc, sz)) {
		free(tr->mc);
		tr->mc = NULL;
		return;
	}
	tr->mcaddr = mc;
	tr->szmcode = sz;
}

/* The calls of the kept machine code, in order, decoded at the first
 * need (not while the process is held): each instruction from the first
 * (LuaJIT's trace code holds no data: its constants live in the IR and
 * the dispatch table, its exit stubs apart). Bytes that do not decode to
 * the end: no calls, the trace's sites by rank alone. */
void jit_calls(struct ttrace *tr)
{
	uint8_t *code = tr->mc;
	const uint8_t *p = code;
	size_t n = tr->szmcode, cap = 0;
	uint64_t a = tr->mcaddr;
	struct tcall *c = NULL;
	csh h;
	cs_insn *in;
	int ran = 0;

	if (!code)
		return;
	tr->mc = NULL; /* decoded once */
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) == CS_ERR_OK) {
		if ((in = cs_malloc(h))) {
			ran = 1;
			while (n && cs_disasm_iter(h, &p, &n, &a, in)) {
				struct tcall *m;

				if (in->id != X86_INS_CALL)
					continue;
				if (tr->ncalls == cap) {
					cap = cap ? 2 * cap : 16;
					if (!(m = realloc(c, cap * sizeof(*c))))
						break;
					c = m;
				}
				c[tr->ncalls].ret = (uint32_t)(a - tr->mcaddr);
				c[tr->ncalls].to = 0;
				if (in->size == 5 && in->bytes[0] == 0xe8) { /* call rel32 */
					int32_t rel;

					memcpy(&rel, in->bytes + 1, 4);
					c[tr->ncalls].to = a + (uint64_t)(int64_t)rel;
				}
				tr->ncalls++;
			}
			cs_free(in, 1);
		}
		cs_close(&h);
	}
	free(code);
	if (!ran || n || jit_keep(tr, (size_t)tr->ncalls * sizeof(*c))) {
		free(c);
		c = NULL;
		tr->ncalls = 0;
	}
	tr->calls = c;
}

/* The trace's IR [nk, nins): read for the functions it inlined. */
void jit_read_ir(struct conv_vm *v, struct ttrace *tr, uint64_t T)
{
	const struct lj_ulayout *u = &v->var->u;
	uint64_t ir = 0;
	uint32_t nk = 0, nins = 0;

	/* Constants below REF_BIAS, instructions above it. */
	if (jit_rd(v, tr, T + u->T_ir, &ir, 8) || jit_rd(v, tr, T + u->T_nk, &nk, 4) ||
	    jit_rd(v, tr, T + u->T_nins, &nins, 4) || !ir)
		return;
	if (nk > u->ref_bias || nins <= u->ref_bias || nins - nk > LMT_TRACE_IR_MAX) {
		tr->over = 1;
		return;
	}
	if (jit_keep(tr, (size_t)(nins - nk) * 8))
		return;
	tr->ir = malloc((size_t)(nins - nk) * 8);
	if (!tr->ir || jit_rd(v, tr, ir + (uint64_t)nk * 8, tr->ir,
			  (size_t)(nins - nk) * 8)) {
		free(tr->ir);
		tr->ir = NULL;
		return;
	}
	tr->nk = nk;
	tr->nins = nins;
}

/* The pointer constant at IR ref of trace tr (IR_KGC, IR_KPTR). */
int jit_kref(const struct conv_vm *v, const struct ttrace *tr, uint32_t ref,
	     uint64_t *out)
{
	if (!tr->ir || ref < tr->nk || ref >= tr->nins)
		return -1;
	if (!v->var->lay.gc64) { /* the instruction's op12: lj_ir.h's gcr, ptr */
		*out = (uint32_t)tr->ir[ref - tr->nk];
		return 0;
	}
	if (ref + 1 >= tr->nins || ref + 1 >= v->var->u.ref_bias)
		return -1;
	*out = tr->ir[ref + 1 - tr->nk];
	return 0;
}

/* The constant of snapshot sn's frame slot slot, in *v. */
int jit_fr_get(const struct tsnap *sn, uint32_t slot, uint64_t *v)
{
	for (uint32_t k = 0; k < sn->nfr; k++)
		if (sn->fr[k].slot == slot) {
			*v = sn->fr[k].v;
			return 0;
		}
	return -1;
}

/* -- Snapshots' frames, FR2 ------------------------------------------------ */

/* Entry k of ent is a frame's: a link, or the function below one (FR2
 * flags the link only). Entries are in slot order. */
static int frame_entry(const uint32_t *ent, uint32_t nent, uint32_t k)
{
	return (ent[k] & (SNAP_FRAME | SNAP_CONT)) ||
	       (k + 1 < nent && (ent[k + 1] & SNAP_FRAME) &&
		ent[k + 1] >> 24 == (ent[k] >> 24) + 1);
}

/* FR2 (GC64): after the entries, one 64-bit word, PC << 8 | base slot - 2
 * (snapshot_framelinks); the frames' links and functions are entries,
 * 64-bit constants (IR_KNUM, IR_KGC) whose value is in the next IR slot. */
static int snap_fr2(struct ttrace *tr, struct tsnap *sn, const uint32_t *ent,
		    uint32_t nent, const uint32_t *map, uint32_t nmap)
{
	uint64_t pcbase;
	uint32_t n = 0;

	if (nmap < 2)
		return -1;
	memcpy(&pcbase, map, 8);
	sn->pc = pcbase >> 8;
	sn->baseslot = (uint32_t)(pcbase & 0xff) + 2;
	for (uint32_t k = 0; k < nent; k++)
		n += frame_entry(ent, nent, k);
	if (!n || !tr->ir || jit_keep(tr, n * sizeof(*sn->fr)) ||
	    !(sn->fr = calloc(n, sizeof(*sn->fr))))
		return 0;
	for (uint32_t k = 0; k < nent; k++) {
		const uint32_t ref = ent[k] & 0xffff;

		/* Not jit_kref: ref REF_BIAS - 1 (REF_NIL, FR2's slot-1 mark of
		 * a tail-called base frame, lj_snap.c) is kept, its slot's
		 * presence what stop_callee reads (measured: without it the
		 * closures corpus loses half its stacks). */
		if (!frame_entry(ent, nent, k) || ref < tr->nk ||
		    ref + 1 >= tr->nins || ref >= REF_BIAS)
			continue;
		sn->fr[sn->nfr++] = (struct sfr){ .slot = ent[k] >> 24,
						  .v = tr->ir[ref + 1 - tr->nk] };
	}
	return 0;
}

/* -- Snapshots' frames, without FR2 ---------------------------------------- */

/* Without FR2 (GC64 off, lj_frame.h) a frame is one slot, its function
 * in the low 32 bits, its link in the high: the entry flagged SNAP_FRAME
 * holds the function (an IR_KGC when constant), one flagged SNAP_CONT a
 * continuation (its PC in the slot's high half). The links follow the
 * entries (snapshot_framelinks): the PC, then per frame above slot 0,
 * innermost first, a Lua frame's return PC, a continuation's size and
 * type then its PC, another frame's size and type; lj_snap_restore hands
 * them out from the last, to the flagged entries above slot 0 in slot
 * order. The base slot is the innermost frame's + 1.
 *
 * They are renumbered as FR2 numbers them, which the walks of stretches
 * and of frames read (convert/jit_walk.c, jit_frames.c): each frame slot,
 * slot 0's too, one more slot (FR2: a continuation's function, then its
 * PC; a frame's function, then its link), so slot s with k flagged slots
 * at or below it (slot 0 counted) is s + k; a size is renumbered by the
 * flagged slots it spans. */
#define MAX_SNAP_FRAMES 256 /* a snapshot's flagged slots: one per slot, a
			     * slot number is 8 bits */

static int snap_fr1(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn,
		    const uint32_t *ent, uint32_t nent, const uint32_t *map,
		    uint32_t nmap, uint32_t *rawbase)
{
	uint32_t fslot[MAX_SNAP_FRAMES], nf = 0, j = 0, top = 0, last = 0;

	if (nmap < 1)
		return -1;
	sn->pc = map[0];
	/* the flagged slots above 0, ascending (a map not so is not LuaJIT's) */
	for (uint32_t k = 0; k < nent; k++) {
		const uint32_t slot = ent[k] >> 24;

		if (k && slot <= last)
			return -1;
		last = slot;
		if ((ent[k] & (SNAP_FRAME | SNAP_CONT)) && slot)
			fslot[nf++] = slot;
	}
	if (nmap < 1 + nf)
		return -1;
	top = nf ? fslot[nf - 1] : 0;
	*rawbase = top + 1;
	sn->baseslot = top + nf + 2;
	if (!tr->ir || jit_keep(tr, (2 * nf + 1) * sizeof(*sn->fr)) ||
	    !(sn->fr = calloc(2 * nf + 1, sizeof(*sn->fr))))
		return 0;
	for (uint32_t k = 0; k < nent; k++) {
		const uint32_t slot = ent[k] >> 24, ref = ent[k] & 0xffff;
		const uint8_t *ins = jit_ir_at(tr, ref);
		uint64_t link = 0, fn, d, p;
		uint32_t kp;

		if (!(ent[k] & (SNAP_FRAME | SNAP_CONT)))
			continue;
		if (slot) { /* now j + 1 flagged slots at or below it, slot 0 too */
			link = map[nf - j];
			j++;
		}
		if ((ent[k] & SNAP_FRAME) && ins && ref < REF_BIAS &&
		    ins[v->var->u.ir_o] == v->var->u.ir_kgc && !jit_kref(v, tr, ref, &fn))
			sn->fr[sn->nfr++] = (struct sfr){ .slot = slot + j, .v = fn };
		if (!slot)
			continue; /* the base frame's link: not in the map */
		if ((ent[k] & SNAP_FRAME) && (link & LJ_FRAME_TYPE) != 0) {
			/* a size: slots down to the frame below, flagged too */
			d = link >> 3;
			p = slot - (d < slot ? d : slot);
			for (kp = 0; kp < j - 1 && fslot[kp] < p; kp++)
				;
			if (!d || d > slot || (p && (kp == j - 1 || fslot[kp] != p))) {
				tr->over = 1; /* a forged link */
				continue;
			}
			/* frames at or below p: kp + 1 (p = 0: 1) */
			link = (d + j + 1 - (p ? kp + 2 : 1)) << 3 | (link & LJ_FRAME_TYPEP);
		}
		sn->fr[sn->nfr++] = (struct sfr){ .slot = slot + j + 1, .v = link };
	}
	return 0;
}

/* Snapshot sn's PC, base slot and frame slots. */
int jit_snap_read(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn,
		  const uint32_t *ent, uint32_t nent, const uint32_t *map,
		  uint32_t nmap, uint32_t *rawbase)
{
	if (!v->var->lay.gc64)
		return snap_fr1(v, tr, sn, ent, nent, map, nmap, rawbase);
	if (snap_fr2(tr, sn, ent, nent, map, nmap))
		return -1;
	*rawbase = sn->baseslot;
	return 0;
}

/* -- Prototypes ------------------------------------------------------------ */

/* Bytes a line takes in a prototype's line table (lj_parse.c's
 * fs_prep_line, lj_bcread.c): by numline, a BCLine (signed). */
static uint32_t line_width(uint32_t numline)
{
	const int32_t n = (int32_t)numline;

	return n < 256 ? 1 : n < 65536 ? 2 : 4;
}

/* The instructions of the GCproto whose header is w (LMT_PTWIN bytes
 * at pt), 0 if w is none: its type tag, and one block (sizept) holding
 * its bytecode, then its line table (lj_func.c's layout). A header found
 * scanning back from a PC (proto_of) may be another object's words that
 * pass the tag by chance: their sizept and lineinfo do not hold together. */
static uint32_t proto_header(const struct conv_vm *v, const uint8_t *w, uint64_t pt)
{
	const struct lj_variant *var = v->var;
	const struct lj_layout *l = &var->lay;
	uint32_t sizebc, numline, sizept;
	uint64_t bcend, li, need;

	if (var->u.pt_gct >= LMT_PTWIN || var->h.pt_sizept + 4 > LMT_PTWIN ||
	    w[var->u.pt_gct] != var->u.tproto)
		return 0;
	memcpy(&sizebc, w + l->pt_sizebc, 4);
	memcpy(&numline, w + l->pt_numline, 4);
	memcpy(&sizept, w + var->h.pt_sizept, 4);
	li = lj_ref_at(var, w, l->pt_lineinfo);
	if (!sizebc || sizebc > MAX_BC)
		return 0;
	bcend = pt + l->pt_size + 4 * (uint64_t)sizebc;
	if (sizept < bcend - pt)
		return 0;
	/* the line table, (sizebc - 1) entries, after the bytecode and in
	 * the block (li - pt wraps to a huge value for an li below pt) */
	need = (uint64_t)(sizebc - 1) * line_width(numline);
	if (li && (li < bcend || li - pt > sizept || need > sizept - (li - pt)))
		return 0;
	return sizebc;
}

/* Prototype pt of trace tr: its bytecode and lines, read once; its
 * symbol written to the stream the first time. NULL if unreadable. */
struct tproto *jit_proto_get(struct conv_vm *v, struct ttrace *tr, uint64_t pt)
{
	const struct lj_layout *l = &v->var->lay;
	struct tproto *tp = u64map_get(&tr->protos, pt);
	uint8_t w[LMT_PTWIN];
	uint32_t sizebc, numline, len = 0, width, n;
	int32_t first;
	uint64_t str, li;
	char name[LMT_CHUNKNAME_MAX];
	int err;

	if (tp)
		return tp;
	if (jit_rd(v, tr, pt, w, sizeof(w)))
		return NULL;
	if (!(sizebc = proto_header(v, w, pt)))
		return NULL;
	memcpy(&numline, w + l->pt_numline, 4);
	memcpy(&first, w + l->pt_firstline, 4);
	str = lj_ref_at(v->var, w, l->pt_chunkname);
	li = lj_ref_at(v->var, w, l->pt_lineinfo);
	width = line_width(numline);
	n = sizebc > 1 ? (sizebc - 1) * width : 0;
	if (jit_keep(tr, sizeof(*tp) + sizeof(*tp->lines) + n + (size_t)sizebc * 4))
		return NULL;
	tp = calloc(1, sizeof(*tp));
	if (!tp || !(tp->lines = malloc(sizeof(*tp->lines) + n)) ||
	    !(tp->bc = malloc((size_t)sizebc * 4)) ||
	    jit_rd(v, tr, pt + l->pt_size, tp->bc, (size_t)sizebc * 4)) {
		tproto_free(tp);
		return NULL;
	}
	tp->sizebc = sizebc;
	*tp->lines = (struct pline){ .firstline = first, .sizebc = sizebc,
				     .numline = numline, .width = (uint8_t)width };
	if (li && n && !jit_rd(v, tr, li, tp->lines->li, n))
		tp->lines->len = n;
	/* Its chunk name, cut to LMT_CHUNKNAME_MAX (target/caps.h). */
	if (!str || jit_rd(v, tr, str + l->str_len, &len, 4))
		len = 0;
	if (len > LMT_CHUNKNAME_MAX) {
		v->p->names_long++;
		len = jit_rd(v, tr, str + l->str_size, name, LMT_CHUNKNAME_MAX - 3) ?
			      0 : LMT_CHUNKNAME_MAX;
		memcpy(name + LMT_CHUNKNAME_MAX - 3, "...", 3);
	} else if (len && jit_rd(v, tr, str + l->str_size, name, len)) {
		len = 0;
	}
	out_sym(v->out, &(struct mp_sym){ .kind = MP_SYM_LFUNC, .addr = pt,
					  .line = (uint64_t)(int64_t)first,
					  .name = name, .name_len = len });
	u64map_put(&tr->protos, pt, tp, &err);
	if (err) {
		tproto_free(tp);
		return NULL;
	}
	return tp;
}

/* The prototype whose bytecode holds pc: the trace's start, else found
 * by walking back to the header instruction. 0 if none: a C function's
 * PC (a snapshot where the trace returns into pcall's frame has
 * g->bc_cfunc_ext, inside GG_State) is in none. */
static uint64_t proto_of(struct conv_vm *v, struct ttrace *tr, uint64_t pc)
{
	const struct lj_ulayout *u = &v->var->u;
	const uint64_t ptsz = v->var->lay.pt_size, gg = v->g - v->var->lay.gg_g;
	uint8_t hw[LMT_PTWIN];
	uint32_t w[64], sizebc;

	if (pc - gg < v->var->h.gg_size)
		return 0;
	if (tr->startpt) {
		const struct tproto *k = u64map_get(&tr->protos, tr->startpt);
		if (k && pc >= tr->startpt + ptsz &&
		    pc < tr->startpt + ptsz + 4 * (uint64_t)k->sizebc)
			return tr->startpt;
	}
	/* One the trace has read already: no read of the target. */
	for (size_t i = 0; i < tr->protos.cap; i++) {
		const struct tproto *k = tr->protos.v[i];
		const uint64_t at = tr->protos.k[i];

		if (k && pc >= at + ptsz && pc < at + ptsz + 4 * (uint64_t)k->sizebc)
			return at;
	}
	for (uint64_t end = pc + 4, n = 0; n < 4 * (uint64_t)MAX_BC; n += sizeof(w)) {
		uint64_t at = end - sizeof(w);
		if (jit_rd(v, tr, at, w, sizeof(w)))
			return 0;
		for (int i = 63; i >= 0; i--) {
			const uint8_t op = (uint8_t)w[i];
			const uint64_t bc0 = at + 4 * (uint64_t)i, pt = bc0 - ptsz;

			if (op < u->bc_func_lo || op > u->bc_func_hi)
				continue;
			/* the first header met is pc's, or pc is in none */
			if (jit_rd(v, tr, pt, hw, sizeof(hw)) ||
			    !(sizebc = proto_header(v, hw, pt)) || (pc - bc0) / 4 >= sizebc)
				return 0;
			return pt;
		}
		end = at;
	}
	return 0;
}

/* The prototype holding PC pc of trace tr, read, and pc's position in it;
 * NULL if it cannot be found or read. */
struct tproto *jit_at_pc(struct conv_vm *v, struct ttrace *tr, uint64_t pc,
			 uint64_t *pt, uint32_t *pos)
{
	struct tproto *tp;

	if (tr->startpt)
		jit_proto_get(v, tr, tr->startpt); /* proto_of looks there first */
	if (!pc || !(*pt = proto_of(v, tr, pc)) || !(tp = jit_proto_get(v, tr, *pt)))
		return NULL;
	*pos = (uint32_t)((pc - *pt - v->var->lay.pt_size) / 4);
	return tp;
}

