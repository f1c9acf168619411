/* Traces: a snapshot's stretch of bytecode walked to the lines its
 * allocations are charged to (convert/jit_int.h; the mapping of an
 * address to a snapshot is convert/jit.c's).
 *
 * Snapshots sit where the trace's state changes, not at every bytecode: a
 * statement's allocation often runs in the stretch that begins at the
 * statement before. So a stretch is walked, from its snapshot's PC, over
 * straight-line bytecode (following JMP, into the functions the trace
 * inlined there: the Lua functions its IR guards on, as KGC constants, in
 * order; a tail call's callee too; a metamethod a table access, CAT or
 * arithmetic called, which the IR looked up in a metatable or the next
 * snapshot has running) up to the next snapshot's PC, a branch, a loop or
 * a return out of the stretch's function into a frame the snapshot does
 * not hold (out of one it holds, a Lua frame or a metamethod's
 * continuation, the walk goes on in the caller). If the walk meets exactly one bytecode that
 * allocates (TNEW, TDUP, CAT, FNEW, KCDATA, a call that was not inlined:
 * a builtin, charged to its caller's line as the interpreter's are), or
 * else exactly one table store (which may grow the table), the stretch's
 * allocations are charged to its line. A stretch with several (up to
 * MAX_SITES) runs their calls in order: the k-th of its calls to what
 * allocates is the k-th's, when they are as many (convert/jit.c's
 * call_site); else the k-th distinct call site (machine code offset) its
 * new blocks come from is charged to the k-th, not exact when an earlier
 * site allocates later than a later one (a CAT whose string is already
 * interned makes none) or a builtin allocates from several call sites;
 * with more sites than bytecodes, and otherwise, the snapshot's line.
 *
 * Sunk allocations: convert/jit_sunk.c. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/jit_int.h"
#include "target/ljref.h"

/* -- A stretch ------------------------------------------------------------- */

struct walk {
	struct conv_vm *v;
	struct ttrace *tr;
	const struct tsnap *sn; /* the stretch's snapshot */
	const struct tsnap *stop; /* the next snapshot: the stretch ends there */
	uint64_t stop_pt; /* its prototype and PC */
	uint64_t stop_pc;
	const uint64_t *callees; /* inlined functions, in order */
	const uint64_t *callee_fns; /* and their GCfuncs */
	const uint8_t *callee_mm; /* and how each was called (mm_kind) */
	uint32_t retf, ir_hi; /* the stretch's IR: the next RETF looked at, its end */
	int dry, at_stop; /* a way tried at a branch (branch_to); it got to the stop */
	int stop_depth;   /* the depth it got there at */
	int skip_stop;    /* the stop's PC met once in an inlined call: not yet it */
	int stop_entry;   /* the stop is at a function's entry (its header) */
	unsigned branches; /* branches tried (LMT_WALK_BRANCHES) */
	unsigned ncallees, next;
	unsigned steps; /* bytecodes walked; WALK_MAX: the stretch ended */
	unsigned nalloc, nstore; /* bytecodes that allocate / store */
	uint64_t alloc_pt, store_pt, vstore_pt; /* the last of each */
	uint32_t alloc_pos, store_pos, vstore_pos;
	unsigned builtins;       /* calls among the allocating */
	/* The builtins the stretch's IR guards on (not Lua functions), in
	 * order; the next not yet taken */
	const uint64_t *bfns;
	unsigned nbfns, bnext;
	/* the IR refs where each callee and builtin is first guarded */
	const uint32_t *crefs, *brefs;
	uint64_t pts[MAX_SITES]; /* the allocating, in order */
	uint32_t poss[MAX_SITES];
	struct chain path;       /* the inlined calls walked into now */
	struct chain chs[MAX_SITES + 1]; /* at each allocating (MAX_SITES:
					  * the last) */
	struct chain store_ch;
	/* The allocating bytecodes and the stores, in order (a store whose
	 * IR grows the table, NEWREF, is a site too: resolve_walk) */
	unsigned nsites, nvstore;
	uint64_t spts[MAX_SITES];
	uint32_t sposs[MAX_SITES];
	struct chain schs[MAX_SITES];
};

/* Bytecode pos of pt, one that allocates or stores, in w's sites. */
static void walk_site(struct walk *w, uint64_t pt, uint32_t pos)
{
	if (w->nsites < MAX_SITES) {
		w->spts[w->nsites] = pt;
		w->sposs[w->nsites] = pos;
		w->schs[w->nsites] = w->path;
	}
	w->nsites++;
}

static void walk_alloc(struct walk *w, uint64_t pt, uint32_t pos)
{
	if (w->nalloc < MAX_SITES) {
		w->pts[w->nalloc] = pt;
		w->poss[w->nalloc] = pos;
		w->chs[w->nalloc] = w->path;
	}
	w->nalloc++;
	w->alloc_pt = pt;
	w->alloc_pos = pos;
	w->chs[MAX_SITES] = w->path;
	walk_site(w, pt, pos);
}

/* The Lua function a CALL at pos of GCfunc fn calls, if its slot was
 * loaded from one of fn's upvalues (UGET): a constant the trace need not
 * guard on. Its prototype, or 0; its GCfunc in *cfn. */
static uint64_t uget_callee(struct walk *w, const struct tproto *tp,
			    uint32_t pos, uint64_t fn, uint64_t *cfn)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const uint32_t a = tp->bc[pos] >> 8 & 0xff;
	const unsigned rs = lj_refsz(w->v->var); /* GCRef, MRef */
	uint64_t uv = 0, tvp = 0, tv;

	if (!fn)
		return 0;
	for (uint32_t p = pos; p-- > 1 && pos - p <= 16;) {
		const uint32_t ins = tp->bc[p];

		if ((ins >> 8 & 0xff) != a)
			continue;
		if ((ins & 0xff) != u->bc_uget ||
		    jit_rd(w->v, w->tr, fn + u->fn_uvptr + rs * (ins >> 16), &uv, rs) ||
		    jit_rd(w->v, w->tr, uv + u->uv_v, &tvp, rs) ||
		    jit_rd(w->v, w->tr, tvp, &tv, 8) ||
		    lj_itype(w->v->var, tv) != u->itype_func)
			return 0;
		*cfn = lj_tv_gc(w->v->var, tv);
		return jit_fn_proto(w->v, w->tr, *cfn);
	}
	return 0;
}

/* The load that filled the slot a CALL at pos of prototype pt (tp) calls:
 * its PC (0 if none is near) and instruction. */
static uint64_t load_of(struct walk *w, uint64_t pt, const struct tproto *tp,
			uint32_t pos, uint32_t *ins)
{
	const uint32_t a = tp->bc[pos] >> 8 & 0xff;

	for (uint32_t p = pos; p-- > 1 && pos - p <= 16;)
		if ((tp->bc[p] >> 8 & 0xff) == a) {
			*ins = tp->bc[p];
			return pt + w->v->var->lay.pt_size + 4 * (uint64_t)p;
		}
	return 0;
}

/* The builtin an earlier call of the trace took from load (PC, in
 * prototype pt, instruction ins): the same load, or (same) one by the
 * same instruction in pt into another slot (ffi.new loaded twice by
 * TGETS "new" from one table: the IR folds the second load into the
 * first and guards once). Its index in tr's, or -1. */
static int bload_find(const struct ttrace *tr, uint64_t pt, uint64_t load, uint32_t ins,
		      int same)
{
	for (unsigned k = 0; load && k < tr->nbloads; k++)
		if (same ? tr->bload_pt[k] == pt &&
				   (tr->bload_ins[k] & 0xffff00ff) == (ins & 0xffff00ff) :
			   tr->bload_pc[k] == load)
			return (int)k;
	return -1;
}

/* The builtin a CALL at pos of prototype pt (tp) calls, compiled into
 * the trace: the one the same load (the instruction that filled the
 * called slot, by its PC) gave an earlier call of the trace, else the
 * next the stretch's IR guards on, else (past the last guard) the one a
 * load by the same instruction gave. Its GCfunc, or 0 if not known. */
static uint64_t builtin_at(struct walk *w, uint64_t pt, const struct tproto *tp,
			   uint32_t pos)
{
	struct ttrace *tr = w->tr;
	uint32_t lins = 0;
	const uint64_t load = load_of(w, pt, tp, pos, &lins);
	uint64_t fn;
	int k;

	if ((k = bload_find(tr, pt, load, lins, 0)) >= 0) {
		/* its guard again, if the IR made one */
		if (w->bnext < w->nbfns && w->bfns[w->bnext] == tr->bload_fn[k])
			w->bnext++;
		return tr->bload_fn[k];
	}
	if (w->bnext >= w->nbfns)
		return (k = bload_find(tr, pt, load, lins, 1)) >= 0 ? tr->bload_fn[k] : 0;
	fn = w->bfns[w->bnext++];
	if (load && tr->nbloads < MAX_BLOADS && !w->dry) {
		tr->bload_pc[tr->nbloads] = load;
		tr->bload_pt[tr->nbloads] = pt;
		tr->bload_ins[tr->nbloads] = lins;
		tr->bload_fn[tr->nbloads++] = fn;
	}
	return fn;
}

/* A CALL at pos of pt (tp) calls a builtin, not the next inlined Lua
 * function: its slot's load gave an earlier call a builtin, or the
 * stretch's IR guards on the next builtin before the next Lua function
 * (brefs, crefs: where each is first guarded). */
static int builtin_first(struct walk *w, uint64_t pt, const struct tproto *tp,
			 uint32_t pos, unsigned nx)
{
	uint32_t lins = 0;
	const uint64_t load = load_of(w, pt, tp, pos, &lins);

	if (bload_find(w->tr, pt, load, lins, 0) >= 0)
		return 1;
	return w->bnext < w->nbfns && nx < w->ncallees && w->brefs[w->bnext] < w->crefs[nx];
}

/* The Lua function the stretch's next snapshot has framed at slot (a call
 * still running where the stretch ends) by the call whose return PC is
 * retpc (0: a tail call, its caller's link): its prototype, or 0; its
 * GCfunc in *cfn when the snapshot keeps it. A frame there whose link is
 * another return PC is another call's at the same slot (bump() called on
 * two lines). */
static uint64_t stop_callee(struct walk *w, uint32_t slot, uint64_t retpc, uint64_t *cfn)
{
	uint64_t link = 0;

	if (!w->stop)
		return 0;
	/* The trace's base frame (slot 0: a tail call from it): FR2 flags its
	 * link's slot when tail-called; without FR2 no snapshot holds it. */
	if (jit_fr_get(w->stop, slot + 1, &link) && (slot || w->v->var->lay.gc64))
		return 0;
	if ((link & LJ_FRAME_TYPE) != 0 || (retpc && link && link != retpc))
		return 0;
	if (!jit_fr_get(w->stop, slot, cfn))
		return jit_fn_proto(w->v, w->tr, *cfn & LJ_GCVMASK);
	*cfn = 0;
	return w->stop->baseslot == slot + 2 ? w->stop_pt : 0;
}

/* The walk got to the stretch's next snapshot, at depth: it ends there.
 * 1, walk_call's "the walk of pt ends". */
static int reach_stop(struct walk *w, int depth)
{
	w->steps = WALK_MAX;
	w->at_stop = 1;
	w->stop_depth = depth;
	return 1;
}

/* Is the stretch's next snapshot at the entry of the function a call
 * from slot (its return PC retpc) enters: the snapshot's innermost frame
 * at slot + 2, its link that return PC (a frame at the same slot from
 * another call is not it). */
static int entry_stop(const struct walk *w, uint32_t slot, uint64_t retpc)
{
	uint64_t link;

	return w->stop_entry && w->stop->baseslot == slot + 2 &&
	       !jit_fr_get(w->stop, slot + 1, &link) && link == retpc;
}

/* Does the stretch's next snapshot have a frame of prototype p (its
 * GCfunc, then a Lua frame's link in the next slot) above slot: a call
 * made inside the one at slot? One pass over its frame slots (in slot
 * order), a function read only below a Lua frame's link. */
static int stop_frames_above(struct walk *w, uint32_t slot, uint64_t p)
{
	const struct tsnap *s = w->stop;

	if (!s || !p)
		return 0;
	for (uint32_t k = 0; k + 1 < s->nfr; k++) {
		const uint64_t link = s->fr[k + 1].v;

		if (s->fr[k].slot > slot && s->fr[k].slot + 2 <= s->baseslot &&
		    s->fr[k + 1].slot == s->fr[k].slot + 1 && link &&
		    (link & LJ_FRAME_TYPE) == 0 &&
		    jit_fn_proto(w->v, w->tr, s->fr[k].v & LJ_GCVMASK) == p)
			return 1;
	}
	return 0;
}

static void walk(struct walk *w, uint64_t pt, uint64_t fn, uint32_t pos,
		 int depth, uint32_t base);

/* Where the stretch's next snapshot has a metamethod running that a
 * bytecode of prototype pt (tp) called: a continuation frame, its
 * caller's PC (after that bytecode) below it. The bytecode's position,
 * the first after from if several; 0 if none. The metamethod's GCfunc
 * in *cfn, 0 if not kept. */
static uint32_t stop_mm(struct walk *w, uint64_t pt, const struct tproto *tp,
			uint32_t from, uint64_t *cfn)
{
	const uint64_t bc0 = pt + w->v->var->lay.pt_size;
	uint32_t best = 0;
	uint64_t link;

	*cfn = 0;
	for (uint32_t k = 0; w->stop && k < w->stop->nfr; k++) {
		const struct sfr *f = &w->stop->fr[k];
		uint32_t at;

		if (f->v <= bc0 || f->v >= bc0 + 4 * (uint64_t)tp->sizebc ||
		    (f->v - bc0) % 4 || jit_fr_get(w->stop, f->slot + 2, &link) ||
		    (link & LJ_FRAME_TYPEP) != LJ_FRAME_CONT)
			continue;
		at = (uint32_t)((f->v - bc0) / 4) - 1;
		if (at >= from && (!best || at < best)) {
			best = at;
			if (jit_fr_get(w->stop, f->slot + 1, cfn))
				*cfn = 0;
		}
	}
	return best;
}

/* The bytecode at pos of prototype pt (tp, of a frame at base), which
 * may call a metamethod of kind mm: if the trace inlined one there (the
 * next snapshot has it running, or the next function the IR guards on
 * was looked up as one of that kind, and no later bytecode has the next
 * snapshot's), walked into, in the frame rec_mm_prep makes above the
 * caller's (a continuation at its framesize, then the function). 1 if
 * walked, else 0. */
static int walk_mm(struct walk *w, uint64_t pt, const struct tproto *tp,
		   uint32_t pos, int depth, uint32_t base, int mm)
{
	const uint32_t slot = base + (tp->bc[0] >> 8 & 0xff) + 2;
	uint64_t callee = 0, cfn = 0, sfn;
	unsigned nx = w->next;
	uint32_t at;

	if (depth >= MAX_DEPTH)
		return 0;
	while (nx < w->ncallees && w->callees[nx] == pt && !w->callee_mm[nx])
		nx++;
	at = stop_mm(w, pt, tp, pos, &sfn);
	if (at && at != pos)
		return 0; /* a later bytecode's */
	if (nx < w->ncallees && w->callee_mm[nx] == mm) {
		callee = w->callees[nx];
		cfn = w->callee_fns[nx];
		w->next = nx + 1;
	} else if (at == pos && sfn && (callee = jit_fn_proto(w->v, w->tr,
						      sfn & LJ_GCVMASK))) {
		cfn = sfn;
	} else {
		return 0;
	}
	w->path.pt[depth] = pt;
	w->path.pos[depth] = pos;
	w->path.n = (uint32_t)depth + 1;
	walk(w, callee, cfn & LJ_GCVMASK, 1, depth + 1, slot + 2);
	w->path.n = (uint32_t)depth;
	return 1;
}

/* The caller of the trace's base frame, where the trace returns below
 * it: the return PC of the stretch's next RETF guard (lj_record_ret;
 * the caller's frame takes the base slot): its prototype, *pos the PC's
 * position after the CALL, *cbase the base slot. NULL if none. */
static struct tproto *retf_caller(struct walk *w, uint64_t *pt, uint32_t *pos,
				  uint32_t *cbase)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const struct ttrace *tr = w->tr;
	struct tproto *tp;

	for (; w->retf < w->ir_hi; w->retf++) {
		const uint8_t *ins = jit_ir_at(tr, w->retf), *k;
		uint64_t pc;
		uint32_t c;

		if (!ins || ins[u->ir_o] != u->ir_retf)
			continue;
		w->retf++;
		c = jit_ir_opn(u, ins, 1);
		if (!(k = jit_ir_at(tr, c)) || k[u->ir_o] != u->ir_kptr ||
		    jit_kref(w->v, tr, c, &pc) ||
		    !(tp = jit_at_pc(w->v, w->tr, pc, pt, pos)) ||
		    !*pos || *pos - 1 >= tp->sizebc)
			return NULL;
		*cbase = 2;
		return tp;
	}
	return NULL;
}

/* The caller of the frame at base, when snapshot sn holds the frame's
 * link (a frame the trace entered: an inlined call, or a metamethod's
 * call from a continuation frame, its caller's PC below it): its
 * prototype, *pos its return PC's position after the CALL (or the
 * bytecode that called the metamethod), *cbase its base slot; for the
 * trace's base frame, its caller by RETF (retf_caller). NULL if not, or
 * if the continuation decides a comparison's branch. */
static struct tproto *caller_of(struct walk *w, uint32_t base, uint64_t *pt,
				uint32_t *pos, uint32_t *cbase)
{
	const struct lj_ulayout *u = &w->v->var->u;
	struct tproto *tp;
	uint64_t link, pc;
	uint32_t d;

	if (!w->sn || base < 2 || w->path.popped >= MAX_DEPTH)
		return NULL;
	if (jit_fr_get(w->sn, base - 1, &link))
		return base == 2 ? retf_caller(w, pt, pos, cbase) : NULL;
	if ((link & LJ_FRAME_TYPEP) == LJ_FRAME_VARG) {
		/* FRAME_VARG: a vararg function's frame, its fixed arguments
		 * copied up from the call's own frame below (rec_func_vararg),
		 * whose link is the caller's */
		d = (uint32_t)(link >> 3);
		if (link >> 3 > base || d < 2 || base - d < 2)
			return NULL;
		base -= d;
		if (jit_fr_get(w->sn, base - 1, &link))
			return base == 2 ? retf_caller(w, pt, pos, cbase) : NULL;
	}
	if ((link & LJ_FRAME_TYPE) == 0)
		pc = link; /* a Lua frame: its return PC */
	else if ((link & LJ_FRAME_TYPEP) != LJ_FRAME_CONT || base < 3 ||
		 jit_fr_get(w->sn, base - 3, &pc))
		return NULL;
	if (!(tp = jit_at_pc(w->v, w->tr, pc, pt, pos)) || !*pos ||
	    *pos - 1 >= tp->sizebc)
		return NULL;
	if ((link & LJ_FRAME_TYPE) == 0)
		d = (tp->bc[*pos - 1] >> 8 & 0xff) + 2; /* FR2: func and link slots */
	else if ((tp->bc[*pos - 1] & 0xff) > u->bc_cond_hi && link >> 3 <= base)
		d = (uint32_t)(link >> 3); /* the continuation's delta */
	else
		return NULL;
	if (d > base || d < 2)
		return NULL;
	*cbase = base - d;
	return tp;
}

/* A return out of the frame at base (the snapshot's innermost frame, or
 * one below it the walk returned to): the walk goes on in its caller
 * after the CALL (caller_of), else the stretch ends. */
static void walk_out(struct walk *w, uint32_t base)
{
	uint64_t pt, cfn;
	uint32_t pos, cbase;

	if (!caller_of(w, base, &pt, &pos, &cbase)) {
		w->steps = WALK_MAX;
		return;
	}
	if (cbase < 2 || jit_fr_get(w->sn, cbase - 2, &cfn))
		cfn = 0;
	w->path.popped++;
	walk(w, pt, cfn & LJ_GCVMASK, pos, 0, cbase);
}

/* A builtin (GCfunc bfn, 0 if not known) tail-called from the frame at
 * base, depth calls into the stretch: charged as the interpreter charges
 * it, to the CALL that made that frame (the inlined call at depth - 1,
 * else the frame's caller, caller_of), the builtin on top. */
static void tail_builtin(struct walk *w, uint64_t bfn, int depth, uint32_t base)
{
	const struct chain keep = w->path;
	uint64_t pt;
	uint32_t pos, cbase;

	if (depth > 0) {
		w->path.n = (uint32_t)depth - 1;
		w->path.bfn = bfn;
		walk_alloc(w, w->path.pt[depth - 1], w->path.pos[depth - 1]);
	} else if (caller_of(w, base, &pt, &pos, &cbase)) {
		w->path.popped++;
		w->path.bfn = bfn;
		walk_alloc(w, pt, pos - 1);
	} else {
		return;
	}
	w->builtins++;
	w->path = keep;
}

/* A branch at pos of prototype pt (tp; fn, depth and base as walk's):
 * the position the trace went on at, told by trying both ways (each as
 * far as its first branch) for the one that gets to the next snapshot's
 * PC, or either when both get there past the same allocating bytecodes;
 * 0 if not told. ISTYPE and ISNUM go on or raise. */
static uint32_t two_ways(struct walk *w, uint64_t pt, uint64_t fn, const uint32_t to[2],
			 int depth, uint32_t base);

/* May the walk try two ways: not itself a way tried, a next snapshot to
 * get to, LMT_WALK_BRANCHES not spent? */
static int may_try(const struct walk *w)
{
	return !w->dry && w->stop && w->branches < LMT_WALK_BRANCHES;
}

static uint32_t branch_to(struct walk *w, uint64_t pt, uint64_t fn,
			  const struct tproto *tp, uint32_t pos, int depth,
			  uint32_t base)
{
	const struct lj_ulayout *u = &w->v->var->u;
	uint32_t to[2];

	if (pos + 1 >= tp->sizebc || (tp->bc[pos + 1] & 0xff) != u->bc_jmp)
		return (tp->bc[pos] & 0xff) >= u->bc_cond_hi - 1 ? pos + 1 : 0;
	to[0] = pos + 2;
	to[1] = pos + 2 + (tp->bc[pos + 1] >> 16) - 0x8000;
	return two_ways(w, pt, fn, to, depth, base);
}

/* The way of two (positions to[0], to[1] of pt) the trace went on at:
 * each tried as far as its first branch, the one that gets to the next
 * snapshot's PC, or either when both get there past the same allocating
 * bytecodes; 0 if not told (LMT_WALK_BRANCHES tried, no next snapshot). */
static uint32_t two_ways(struct walk *w, uint64_t pt, uint64_t fn, const uint32_t to[2],
			 int depth, uint32_t base)
{
	uint32_t got = 0;
	struct walk t[2];

	if (!may_try(w))
		return 0;
	w->branches++;
	for (int k = 0; k < 2; k++) {
		t[k] = *w;
		t[k].dry = 1;
		walk(&t[k], pt, fn, to[k], depth, base);
		if (t[k].at_stop)
			got = got ? 0 : to[k] + 1;
	}
	/* both (a branch that joins again, `a or b`): one, if they meet
	 * the same allocating bytecodes and stores */
	if (!got && t[0].at_stop && t[1].at_stop && t[0].nalloc == t[1].nalloc &&
	    t[0].nstore == t[1].nstore && t[0].nalloc <= MAX_SITES &&
	    !memcmp(t[0].pts, t[1].pts, t[0].nalloc * sizeof(t[0].pts[0])) &&
	    !memcmp(t[0].poss, t[1].poss, t[0].nalloc * sizeof(t[0].poss[0])))
		got = to[0] + 1;
	return got ? got - 1 : 0;
}

/* The position of pt (tp) in its loop's body, from the loop's instruction
 * at pos (FORL, ITERL and their J forms; a J form keeps a trace's number
 * where the others keep the jump): the instruction after its FORI, or
 * after the JMP (ISNEXT for pairs) to its ITERC (ITERN), looked for as
 * far back as a jump reaches (D: 16 bits). 0 if not found. */
static uint32_t loop_body(const struct walk *w, const struct tproto *tp, uint32_t pos)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const unsigned op = tp->bc[pos] & 0xff;
	const uint32_t lo = pos > 0x8002 ? pos - 0x8002 : 0;

	if (op != u->bc_fori + 4 && op != u->bc_fori + 7) /* JFORL, JITERL */
		return pos + 1 + (tp->bc[pos] >> 16) - 0x8000;
	for (uint32_t q = pos; q-- > lo;) {
		const uint32_t ins = tp->bc[q];
		const unsigned qop = ins & 0xff;
		const uint32_t to = q + 1 + (ins >> 16) - 0x8000;

		if (op == u->bc_fori + 4 ? (qop == u->bc_fori || qop == u->bc_fori + 1) && to == pos + 1
					 : (qop == u->bc_jmp || qop == u->bc_isnext) && to + 1 == pos)
			return q + 1;
	}
	return 0;
}

/* A loop's instruction at pos of pt (tp): the position the trace went on
 * at, told as a branch's (two_ways): into the loop's body or out of it;
 * 0 if not told. A LOOP (while, repeat) only marks where one begins. */
static uint32_t loop_to(struct walk *w, uint64_t pt, uint64_t fn, const struct tproto *tp,
			uint32_t pos, int depth, uint32_t base)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const unsigned op = tp->bc[pos] & 0xff;
	uint32_t to[2];

	if (op >= u->bc_fori + 8) /* LOOP, ILOOP, JLOOP */
		return pos + 1;
	if (!may_try(w)) /* before the scan for the body */
		return 0;
	if (op <= u->bc_fori + 1) { /* FORI, JFORI: in, or past it */
		to[0] = pos + 1;
		to[1] = pos + 1 + (tp->bc[pos] >> 16) - 0x8000;
	} else { /* FORL, ITERL and theirs: out, or round again */
		to[0] = pos + 1;
		to[1] = loop_body(w, tp, pos);
	}
	if (!to[1] || to[1] >= tp->sizebc || to[0] >= tp->sizebc) {
		w->branches++; /* a loop not told counts as one tried */
		return 0;
	}
	return two_ways(w, pt, fn, to, depth, base);
}

/* Builtin bfn (a GCfunc, 0: not known) allocates nothing (vmdef's list). */
static int builtin_noalloc(struct walk *w, uint64_t bfn)
{
	uint8_t ffid;

	return bfn && !jit_fn_ffid(w->v, w->tr, bfn, &ffid) &&
	       vmdef_ff_noalloc(w->v->var->vmdef, ffid);
}

/* How far above its call's frame an inlined callee's frame is: a vararg
 * function's (BC_FUNCV, IFUNCV, JFUNCV, the last of lj_bc.h's function
 * headers) is moved up past its arguments, the function's slot and its
 * link (rec_func_vararg: J->maxslot + 1 + LJ_FR2, FR2's numbering); 0 for
 * another, or when the call passes a variable number (CALLM, CALLMT). */
static uint32_t varg_shift(struct walk *w, uint64_t callee, unsigned op, uint32_t ins)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const struct tproto *tp = jit_proto_get(w->v, w->tr, callee);
	unsigned f;

	if (!tp || !tp->sizebc || (op != u->bc_call && op != u->bc_callt))
		return 0;
	f = tp->bc[0] & 0xff;
	if (f + 2 < u->bc_func_hi || f > u->bc_func_hi)
		return 0;
	return (ins >> 16 & 0xff) - 1 + 2; /* C - 1 arguments */
}

/* The call at pos of prototype pt (tp, of function fn; instruction ins),
 * its frame at base: an inlined Lua function walked into, or a builtin
 * charged to it. 1 when the walk of pt ends there (a tail call, the
 * stretch's steps spent), 0 to go on after it. */
static int walk_call(struct walk *w, uint64_t pt, uint64_t fn, const struct tproto *tp,
		     uint32_t pos, int depth, uint32_t base, uint32_t ins)
{
	const struct lj_ulayout *u = &w->v->var->u;
	/* An inlined Lua function: one read from an upvalue,
	 * else the next the IR guards on (not this one) unless
	 * the next snapshot has another framed in its slot.
	 * A tail call's callee takes its caller's place, in the
	 * stack too, and its return is its caller's. */
	const unsigned op = ins & 0xff;
	const int tail = op == u->bc_callt || op == u->bc_callmt;
	const uint32_t slot = tail ? base - 2 : base + (ins >> 8 & 0xff);
	const uint64_t retpc = pt + w->v->var->lay.pt_size + 4 * (uint64_t)(pos + 1);
	uint64_t callee = 0, cfn = 0, sfn = 0, scallee;
	unsigned nx = w->next;

	/* The next snapshot at the entry of the function this call enters:
	 * the stretch ends at the call. */
	if (!tail && entry_stop(w, slot, retpc)) {
		return reach_stop(w, depth);
	}
	while (nx < w->ncallees && w->callees[nx] == pt)
		nx++;
	if ((callee = uget_callee(w, tp, pos, fn, &cfn)) &&
	    nx < w->ncallees && w->callees[nx] == callee)
		w->next = nx + 1;
	scallee = callee ? 0 : stop_callee(w, slot, tail ? 0 : retpc, &sfn);
	if (!callee && scallee == pt && nx > w->next) {
		callee = pt; /* recursion */
		cfn = sfn;
		w->next++;
	} else if (!callee && scallee &&
		   (nx >= w->ncallees || w->callees[nx] == scallee)) {
		callee = scallee;
		cfn = sfn;
		w->next = nx + (nx < w->ncallees);
	} else if (!callee && scallee && nx < w->ncallees &&
		   stop_frames_above(w, slot, w->callees[nx])) {
		/* the IR's next is called inside this call (the snapshot
		 * frames it above): this one is the snapshot's, which
		 * the IR did not guard (a closure in an upvalue) */
		callee = scallee;
		cfn = sfn;
	} else if (!callee && nx < w->ncallees &&
		   (w->callee_mm[nx] == MM_NONE ||
		    w->callee_mm[nx] == MM_CALL) && !builtin_first(w, pt, tp, pos, nx)) {
		callee = w->callees[nx];
		cfn = w->callee_fns[nx];
		w->next = nx + 1;
	}
	/* A tail call into the function the next snapshot is at the entry
	 * of: its frame in the caller's place (its link the caller's, which
	 * tells no call apart), the stretch ends at the call. */
	if (callee && tail && w->stop_entry && callee == w->stop_pt &&
	    w->stop->baseslot == base + varg_shift(w, callee, op, ins)) {
		return reach_stop(w, depth);
	}
	if (callee && tail) {
		w->path.tailed |= !depth;
		walk(w, callee, cfn, 1, depth, base + varg_shift(w, callee, op, ins));
		if (!depth)
			w->steps = WALK_MAX;
		return 1;
	} else if (callee && depth < MAX_DEPTH) {
		w->path.pt[depth] = pt;
		w->path.pos[depth] = pos;
		w->path.n = (uint32_t)depth + 1;
		walk(w, callee, cfn, 1, depth + 1, slot + 2 + varg_shift(w, callee, op, ins));
		w->path.n = (uint32_t)depth;
		if (w->steps >= WALK_MAX)
			return 1;
	} else if (tail) {
		/* a builtin's tail call: its caller's frame is
		 * gone, it is charged to the call before */
		tail_builtin(w, builtin_at(w, pt, tp, pos), depth, base);
		w->steps = WALK_MAX;
		return 1;
	} else if (op == u->bc_iterc) {
		/* An iterator compiled in that is no Lua function:
		 * ipairs_aux or next, neither allocates (one the trace
		 * does not compile is where it stitched: its stop) */
		if (w->bnext < w->nbfns && builtin_noalloc(w, w->bfns[w->bnext]))
			w->bnext++;
	} else {
		/* a builtin: charged to the call, its frame
		 * on top of the stack as the interpreter's; one
		 * that never allocates is no site */
		w->path.bfn = builtin_at(w, pt, tp, pos);
		if (!builtin_noalloc(w, w->path.bfn)) {
			walk_alloc(w, pt, pos);
			w->builtins++;
		}
		w->path.bfn = 0;
	}
	return 0;
}

/* Walks prototype pt (of GCfunc fn, if known) from position pos (see the
 * head of this file). depth: inside an inlined function, which returns to
 * its caller; base: its frame's first slot, in the snapshot's numbering. */
static void walk(struct walk *w, uint64_t pt, uint64_t fn, uint32_t pos,
		 int depth, uint32_t base)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const uint64_t ptsz = w->v->var->lay.pt_size;
	struct tproto *tp = jit_proto_get(w->v, w->tr, pt);

	/* a snapshot at a function's entry: its body follows the header */
	if (tp && !pos && tp->sizebc > 1 && (tp->bc[0] & 0xff) >= u->bc_func_lo &&
	    (tp->bc[0] & 0xff) <= u->bc_func_hi)
		pos = 1;
	while (tp && pos < tp->sizebc && w->steps++ < WALK_MAX) {
		const uint32_t ins = tp->bc[pos];
		const unsigned op = ins & 0xff;

		/* The next snapshot's PC, unless it is where the stretch
		 * began: two snapshots in a row at one PC (an inlined
		 * function called again) have its whole way round between. */
		if (w->steps > 1 && pt == w->stop_pt &&
		    pt + ptsz + 4 * (uint64_t)pos == w->stop_pc) {
			if (w->skip_stop && depth > 0) {
				w->skip_stop = 0;
			} else {
				reach_stop(w, depth); /* the stretch ends here */
				return;
			}
		}
		if (op <= u->bc_cond_hi) {
			/* a branch: the way to the next snapshot, if one */
			if (!(pos = branch_to(w, pt, fn, tp, pos, depth, base)))
				return;
			continue;
		}
		/* A metamethod the trace inlined: called as a function */
		if ((op == u->bc_cat && walk_mm(w, pt, tp, pos, depth, base, MM_CONCAT)) ||
		    (op >= u->bc_tgetv && op <= u->bc_tgetb &&
		     walk_mm(w, pt, tp, pos, depth, base, MM_INDEX)) ||
		    ((op == u->bc_tsetv || op == u->bc_tsets || op == u->bc_tsetb) &&
		     walk_mm(w, pt, tp, pos, depth, base, MM_NEWINDEX)) ||
		    (op >= u->bc_unm && op <= u->bc_pow &&
		     walk_mm(w, pt, tp, pos, depth, base, MM_ARITH))) {
			if (w->steps >= WALK_MAX)
				return;
		} else if (op == u->bc_tnew || op == u->bc_tdup || op == u->bc_cat ||
			   op == u->bc_fnew || op == u->bc_kcdata) {
			walk_alloc(w, pt, pos);
		} else if (op == u->bc_tsetv || op == u->bc_tsets ||
			   op == u->bc_tsetb || op == u->bc_tsetm) {
			w->nstore++;
			w->store_pt = pt;
			w->store_pos = pos;
			w->store_ch = w->path;
			/* by a key not a constant string (an array's growth,
			 * out[#out + 1]); a field's store is left out */
			if (op != u->bc_tsets) {
				w->nvstore++;
				w->vstore_pt = pt;
				w->vstore_pos = pos;
				walk_site(w, pt, pos);
			}
		} else if (op == u->bc_call || op == u->bc_callm || op == u->bc_callt ||
			   op == u->bc_callmt || op == u->bc_iterc) {
			if (walk_call(w, pt, fn, tp, pos, depth, base, ins))
				return;
		} else if (op == u->bc_ret || op == u->bc_ret0 || op == u->bc_ret1 ||
			   op == u->bc_retm) {
			if (!depth)
				walk_out(w, base);
			return;
		} else if (op == u->bc_jmp) {
			pos = pos + 1 + (ins >> 16) - 0x8000;
			continue;
		} else if (op == u->bc_varg || op == u->bc_iterc + 1) {
			/* a vararg function's extra arguments copied, the
			 * next key of pairs (ITERN, allocates nothing): on */
		} else if (op == u->bc_isnext) {
			pos = pos + 1 + (ins >> 16) - 0x8000; /* to its ITERN */
			continue;
		} else if (op >= u->bc_fori && op <= u->bc_jloop) {
			if (!(pos = loop_to(w, pt, fn, tp, pos, depth, base)))
				return;
			continue;
		} else if (op > u->bc_jmp) {
			return; /* headers */
		}
		pos++;
	}
}

/* Keeps chain c for allocating bytecode k of snapshot sn, with the lines
 * of its calls (-1 if not known). */
static void keep_chain(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn, int k,
		       const struct chain *c)
{
	struct chain *kc;

	if ((!c->n && !c->tailed && !c->popped && !c->bfn) || sn->ch[k] || jit_keep(tr, sizeof(*c)) ||
	    !(kc = sn->ch[k] = malloc(sizeof(*c))))
		return;
	*kc = *c;
	if (kc->bfn && jit_fn_frame(v, tr, kc->bfn, &kc->leaf))
		kc->bfn = 0;
	for (uint32_t j = 0; j < kc->n; j++) {
		const struct tproto *tp = jit_proto_get(v, tr, kc->pt[j]);
		kc->line[j] = tp ? pline_line(tp->lines, kc->pos[j]) : -1;
	}
}

/* Where each snapshot's stretch ends: at the next snapshot that is not a
 * function's entry (the frame of an inlined call: its code is not apart),
 * unless one before it cannot be located; the last at a function's entry
 * too (a trace that links to that function's own trace: the stretch ends
 * at the call entry_stop tells by its frame's link). One pass from the
 * last, each snapshot's PC located once: linear in the snapshots. */
void jit_stretch_ends(struct conv_vm *v, struct ttrace *tr)
{
	uint32_t next = 0;

	for (uint32_t j = tr->nsnap; j-- > 1;) {
		struct tproto *sp;
		uint32_t spos;

		if (!(sp = jit_at_pc(v, tr, tr->s[j].pc, &tr->s[j].spt, &spos)))
			next = 0;
		else if (spos < sp->sizebc && (spos > 0 || j + 1 == tr->nsnap))
			next = j + 1;
		tr->s[j - 1].stop = next;
	}
}

/* Resolves snapshot i of trace tr: the prototype and line its stretch is
 * charged to. Once: every later event of the stretch finds it done, and
 * the walk's state (kilobytes, zeroed) is set up only the first time. */
static int resolve_walk(struct conv_vm *v, struct ttrace *tr, uint32_t i);

int jit_resolve(struct conv_vm *v, struct ttrace *tr, uint32_t i)
{
	const uint32_t r = tr->s[i].resolved;

	return r ? (r == 1 ? 0 : -1) : resolve_walk(v, tr, i);
}

static __attribute__((noinline)) int resolve_walk(struct conv_vm *v, struct ttrace *tr,
						  uint32_t i)
{
	struct tsnap *sn = &tr->s[i];
	struct tproto *tp;
	struct walk w = { .v = v, .tr = tr, .sn = sn }, w0;
	uint64_t callees[16], fns[16], bfns[16];
	uint32_t crefs[16], brefs[16];
	uint8_t mms[16];
	uint64_t pt = 0, fn;
	uint32_t pos;
	unsigned nref, nvref;
	int64_t line;

	sn->resolved = 2;
	if (!jit_at_pc(v, tr, sn->pc, &sn->pt, &pos))
		return -1;
	if (sn->stop) {
		w.stop = &tr->s[sn->stop - 1];
		w.stop_pc = w.stop->pc;
		w.stop_pt = w.stop->spt;
		w.stop_entry = w.stop_pc == w.stop_pt + v->var->lay.pt_size;
	}
	w.callees = callees;
	w.callee_fns = fns;
	w.callee_mm = mms;
	w.retf = sn->ref;
	w.ir_hi = i + 1 < tr->nsnap ? tr->s[i + 1].ref : tr->nins;
	w.ncallees = jit_inlined(v, tr, sn->ref, w.ir_hi, callees, fns, mms, crefs, 16,
				 bfns, brefs, &w.nbfns);
	w.bfns = bfns;
	w.crefs = crefs;
	w.brefs = brefs;
	/* the stretch's own function, when the snapshot keeps it */
	if (jit_fr_get(sn, sn->baseslot - 2, &fn))
		fn = 0;
	w0 = w;
	walk(&w, sn->pt, fn & LJ_GCVMASK, pos, 0, sn->baseslot);
	nref = jit_newrefs(v, tr, sn->ref, w.ir_hi, &nvref);
	/* Got to the next snapshot's PC in an inlined function with fewer
	 * stores by a variable key than the IR's NEWREFs by one: the same
	 * function called again with its frame at the same slot (chained
	 * calls, b:add(x):add(y), the IR guarding the function once) has the
	 * snapshot, its first call's store still ahead. Walked again past
	 * that first meeting: taken if it gets to the snapshot's PC again
	 * with as many stores as NEWREFs. */
	if (w.at_stop && w.stop_depth > 0 && w.nvstore < nvref) {
		struct walk w2 = w0;

		w2.skip_stop = 1;
		walk(&w2, sn->pt, fn & LJ_GCVMASK, pos, 0, sn->baseslot);
		if (w2.at_stop && w2.nvstore == nvref)
			w = w2;
	}
	sn->nalloc = w.nalloc;
	/* Stores that may grow their table (by a key not a constant string:
	 * all of the stretch's stores, as many as the IR's NEWREFs, or as
	 * many as its NEWREFs by a key not a GC constant, each one) are
	 * sites among the allocating bytecodes, in order. */
	if (w.nvstore && w.nalloc + w.nvstore >= 2 && w.nsites <= MAX_SITES &&
	    ((w.nvstore == w.nstore && nref == w.nstore) || nvref == w.nvstore)) {
		memcpy(w.pts, w.spts, sizeof(w.pts));
		memcpy(w.poss, w.sposs, sizeof(w.poss));
		memcpy(w.chs, w.schs, sizeof(w.schs));
		w.nalloc = w.nsites;
		/* one store that may grow a table: a growth by reallocation
		 * is its */
		for (uint32_t k = 0; w.nvstore == 1 && nref == nvref && k < w.nsites; k++)
			if (w.spts[k] == w.vstore_pt && w.sposs[k] == w.vstore_pos)
				sn->rsite = k + 1;
	}
	if (w.nalloc >= 2 && w.nalloc <= MAX_SITES) {
		for (uint32_t k = 0; k < w.nalloc; k++) {
			struct tproto *bp = jit_proto_get(v, tr, w.pts[k]);
			sn->b_pt[k] = w.pts[k];
			sn->b_line[k] = bp ? pline_line(bp->lines, w.poss[k]) : -1;
			if (sn->b_line[k] < 0)
				break;
			sn->nb = k + 1;
		}
		if (sn->nb != w.nalloc)
			sn->nb = sn->rsite = 0;
	}
	/* several: which allocated first is not known, nor so their builtins
	 * (a site by its rank, site_line, is one only if each allocates:
	 * tostring(i % 10) .. "/" of a number interned makes one); a builtin
	 * kept, framed only where the calls tell the site (traces_frames) */
	for (uint32_t k = 0; sn->nb && k < sn->nb; k++)
		keep_chain(v, tr, sn, k, &w.chs[k]);
	if (sn->nalloc == 1) {
		pt = w.alloc_pt;
		pos = w.alloc_pos;
		keep_chain(v, tr, sn, MAX_SITES, &w.chs[MAX_SITES]);
	} else if (!sn->nalloc && w.nstore == 1) {
		pt = w.store_pt;
		pos = w.store_pos;
		keep_chain(v, tr, sn, MAX_SITES, &w.store_ch);
	} else {
		pt = sn->pt;
	}
	tp = jit_proto_get(v, tr, pt);
	if (!tp)
		return -1;
	/* The line of the instruction at pos. */
	line = pline_line(tp->lines, pos);
	if (line < 0)
		return -1;
	sn->pt = pt;
	sn->line = line;
	sn->resolved = 1;
	return 0;
}

/* An exit through snapshot i: the line it resumes at. */
int jit_resolve_exit(struct conv_vm *v, struct ttrace *tr, uint32_t i)
{
	struct tsnap *sn = &tr->s[i];
	struct tproto *tp;
	uint32_t pos;
	int64_t line;

	if (sn->xresolved)
		return sn->xresolved == 1 ? 0 : -1;
	sn->xresolved = 2;
	if (!(tp = jit_at_pc(v, tr, sn->pc, &sn->xpt, &pos)))
		return -1;
	line = pline_line(tp->lines, pos);
	if (line < 0)
		return -1;
	sn->xline = line;
	sn->xresolved = 1;
	return 0;
}
