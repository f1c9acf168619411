/* Attribution: where an allocator call is charged, by the in-VM
 * profiler's rules (docs/stream-format.md, "Attribution"). */
#ifndef LMT_BPF_ATTRIBUTE_H
#define LMT_BPF_ATTRIBUTE_H

/* What attribution needs of a GCfunc, by address: a GCfunc never changes,
 * so this saves a read per event of a known function, and for a
 * Lua function the objs lookup of its prototype too (a live function keeps
 * its prototype alive, so it stays announced). Direct-mapped and shared by
 * all CPUs without locks: chk covers the other words, so a slot torn by
 * two writers is a miss, never a wrong answer. A free of the address
 * clears the slot.
 *
 * The free of any block looks here, and a random line of this map costs
 * more than the rest of a free's program (docs/costs.md), so
 * fntag keeps 16 more bits of each slot's hash (0: none) in 8 KiB that
 * stay in cache: a free whose tag differs skips the map. A hit needs the
 * tag too, and a writer stores the tag after the entry, so an entry is
 * only ever used while its tag stands, and its tag stands from before any
 * use until the slot is rewritten or its function freed. */
#define FNC_BITS 12
#define FNC_N (1 << FNC_BITS)
#define FNC_SALT 0x6c75616d656d7472ULL
#define FN_POS 1       /* prototype announced with its line table */
#define FN_BPF_LINES 2 /* prototype announced; BPF computes its lines */

struct fnc {
	__u64 fn;   /* GCfunc address, 0 = empty */
	__u64 pcf;  /* fn->pc (Lua) or fn->f (C, fast) | ffid << 48 | flags << 56 */
	__u64 meta; /* tgid | VM id << 32: a VM closed and its memory reused
		     * by a later VM (whose frees we saw none of) never hits */
	__u64 szb;  /* Lua: the prototype's sizebc */
	__u64 chk;  /* dm_chk of the others */
};

/* Bytecode address -> the prototype it belongs to, for what the
 * interpreter saved as its PC (SAVE_PC in the C frame). With the
 * interpreter in INTERP state, the in-VM profiler charges the top frame:
 * a Lua function at SAVE_PC, or a fast function's Lua caller at the frame
 * link, and every fast function that stores SAVE_PC while it can allocate
 * stores either that link or &GG->bcff[i]+1, which is no prototype's
 * bytecode (LuaJIT's vm_x64.dasc, luajit and luajit2 alike: tostring,
 * fff_fallback, coroutine.*; string.sub/char/reverse/lower/upper). So a
 * SAVE_PC found here is charged without reading the frame, a read saved
 * per event. Entries are filled from the frame-based path only, hence
 * only for bytecode of announced prototypes; a prototype's free bumps
 * pcgen, which every entry's check word covers. (One known exception, an
 * error: a stack overflow raised while calling a C function runs in INTERP
 * with the caller's SAVE_PC; its message, if not interned, is charged to
 * the Lua caller's line instead of the C function.) */
#define PCC_BITS 12
#define PCC_N (1 << PCC_BITS)
#define PCC_SALT 0x7063636163686521ULL

struct pcc {
	__u64 pc;
	__u64 pt;   /* prototype | flags << 56 */
	__u64 meta; /* tgid | VM id << 32 */
	__u64 chk;  /* dm_chk of the others, salted with pcgen */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCC_N);
	__type(key, __u32);
	__type(value, struct pcc);
} pccache SEC(".maps");

__u16 fntag[FNC_N]; /* struct fnc */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FNC_N);
	__type(key, __u32);
	__type(value, struct fnc);
} fncache SEC(".maps");

struct fninfo {
	__u64 pcf;
	__u32 sizebc;
	__u8 ffid, flags;
};

/* The entries' salt: one cached before tracing was last back may name a
 * GCfunc freed unseen (bpf/state.h: offgen). */
static __always_inline __u64 fnc_salt(void)
{
	return FNC_SALT ^ *(volatile __u64 *)&offgen * LMT_HASH_K;
}

/* A GCfunc's entry and its tag (struct fnc). */
static __always_inline __u32 fnc_slot(__u64 fn, __u32 tgid, __u16 *tag)
{
	__u64 h = dm_hash(fn >> 3, (__u64)tgid << 40);

	*tag = (__u16)(h >> 36) | 1;
	return dm_slot(h, FNC_BITS);
}

static __always_inline volatile __u16 *fntag_of(__u32 k)
{
	BOUND(k, 0xfff); /* FNC_N - 1 */
	return &fntag[k];
}

/* A freed or reallocated block may be a cached GCfunc: drop it. */
static __always_inline void fn_forget(struct ctx *c, __u64 ptr)
{
	__u16 tag;
	__u32 k;
	struct fnc *e;

	if (!ptr)
		return;
	k = fnc_slot(ptr, c->tgid, &tag);
	if (*fntag_of(k) != tag)
		return;
	*fntag_of(k) = 0;
	e = bpf_map_lookup_elem(&fncache, &k);
	if (e && e->fn == ptr)
		e->fn = 0;
}

/* GCfunc fn of this VM: from the cache, or read (through win) and cached.
 * A Lua function's prototype is announced on the way. */
static __always_inline int fn_get(struct ctx *c, const struct lmt_vm *vm,
				  __u64 fn, __u8 *win, struct fninfo *fi)
{
	const struct lj_layout *lay = &vm->lay;
	const __u64 meta = c->tgid | (__u64)vm->id << 32;
	__u16 tag;
	__u32 k = fnc_slot(fn, c->tgid, &tag);
	struct fnc *e = bpf_map_lookup_elem(&fncache, &k);
	__u64 w[4];
	struct obj_val *o;

	if (!e)
		return -1;
	if (dm_get(e, w, 4, fnc_salt()) && w[0] == fn && w[2] == meta &&
	    *fntag_of(k) == tag) {
		fi->pcf = w[1] & ((1ULL << 48) - 1);
		fi->ffid = (__u8)(w[1] >> 48);
		fi->flags = (__u8)(w[1] >> 56);
		fi->sizebc = (__u32)w[3];
		return 0;
	}
	/* a GCfunc by its type tag (gct: at L_gct in every GC object) */
	if (rd(c, win, LMT_FNWIN, fn) || F8(win, lay->L_gct) != lay->tfunc)
		return -1;
	fi->ffid = F8(win, lay->fn_ffid);
	fi->flags = 0;
	fi->sizebc = 0;
	if (fi->ffid == FF_LUA) {
		fi->pcf = win_ref(lay->gc64, win, lay->fn_pc);
		o = see_proto(c, vm, fi->pcf - lay->pt_size);
		if (!o)
			return 0; /* not cached: announce again next time */
		fi->flags = o->bpf_lines ? FN_BPF_LINES : FN_POS;
		fi->sizebc = o->sizebc;
	} else {
		fi->pcf = F64(win, lay->fn_f);
	}
	/* User addresses fit in 48 bits. */
	if (fi->pcf >> 48)
		return 0;
	w[0] = fn;
	w[1] = fi->pcf | (__u64)fi->ffid << 48 | (__u64)fi->flags << 56;
	w[2] = meta;
	w[3] = fi->sizebc;
	dm_put(e, w, 4, fnc_salt());
	asm volatile("" ::: "memory");
	*fntag_of(k) = tag;
	return 0;
}

static __always_inline struct pcc *pcc_of(__u64 pc, __u32 tgid)
{
	__u32 k = dm_slot(dm_hash(pc >> 2, (__u64)tgid << 40), PCC_BITS);

	return bpf_map_lookup_elem(&pccache, &k);
}

/* The prototype whose bytecode holds pc, if cached (see struct pcc). */
static __always_inline int pc_get(struct ctx *c, const struct lmt_vm *vm,
				  __u64 pc, struct fninfo *fi)
{
	struct pcc *e = pcc_of(pc, c->tgid);
	__u64 w[3];

	if (!e || !dm_get(e, w, 3, PCC_SALT ^ pcgen * LMT_HASH_K) || w[0] != pc ||
	    w[2] != (c->tgid | (__u64)vm->id << 32))
		return -1;
	fi->pcf = (w[1] & ((1ULL << 48) - 1)) + vm->lay.pt_size;
	fi->flags = (__u8)(w[1] >> 56);
	fi->ffid = FF_LUA;
	fi->sizebc = 0;
	return 0;
}

/* Remember that pc is bytecode of Lua function fi's prototype, if it is. */
static __always_inline void pc_put(struct ctx *c, const struct lmt_vm *vm,
				   __u64 pc, const struct fninfo *fi)
{
	__u64 bc = fi->pcf, pt = fi->pcf - vm->lay.pt_size, w[3];
	struct pcc *e;

	if (!fi->flags || pc < bc + 4 || pc > bc + 4 * (__u64)fi->sizebc ||
	    (pc & 3) || (pt >> 48))
		return;
	e = pcc_of(pc, c->tgid);
	if (!e)
		return;
	w[0] = pc;
	w[1] = pt | (__u64)fi->flags << 56;
	w[2] = c->tgid | (__u64)vm->id << 32;
	dm_put(e, w, 3, PCC_SALT ^ pcgen * LMT_HASH_K);
}

/* -- Charges --------------------------------------------------------------- */

/* Each sets the event's source, location and line once, and returns the
 * source it chose. */

static __always_inline __u8 charge_internal(struct lmt_ev *e)
{
	e->src = LMT_SRC_INTERNAL;
	e->loc = 0;
	e->line = 0;
	return LMT_SRC_INTERNAL;
}

/* An event whose vmstate could not be read: the VM's. It may have been
 * the assembler's, making a new trace (bpf/announce.h: trgen). */
static __always_inline __u8 charge_unread(struct lmt_ev *e)
{
	trace_stale();
	return charge_internal(e);
}

static __always_inline __u8 charge_cfunc(struct lmt_ev *e, __u64 f)
{
	e->src = LMT_SRC_CFUNC;
	e->loc = f;
	e->line = 0;
	return LMT_SRC_CFUNC;
}

/* Trace traceno's code, at offset ofs of its machine code if it is not
 * -1 (LMT_EV_MCOFS). */
static __always_inline __u8 charge_trace(struct lmt_ev *e, __u32 traceno, long ofs)
{
	e->src = LMT_SRC_TRACE;
	e->loc = traceno;
	e->line = 0;
	if (ofs >= 0) {
		e->flags |= LMT_EV_MCOFS;
		e->line = (__u32)ofs;
	}
	return LMT_SRC_TRACE;
}

/* Code of trace vmstate charged as charge_jit would, where it is one of
 * the traces this CPU charged last (bpf/trace.h: tm_get): 0; -1 where
 * charge_jit must (another trace, one made since, or the stack not
 * readable in place). */
static __always_inline int charge_memo(struct ctx *c, __s32 vmstate, struct lmt_ev *e)
{
	__u64 mc, sz;
	__u32 ofs;
	int r = -1;

	if (tm_get(c->pc, c->tgid, (__u32)vmstate, c->vmid, *(volatile __u64 *)&trgen,
		   &mc, &sz))
		return -1;
	if (!jit_trace && !ab_leaves(LMT_AB_W_SEARCH) &&
	    (r = trace_ret(c, mc, sz, &ofs, 1)) == -2)
		return -1;
	charge_trace(e, (__u32)vmstate, r ? -1 : (long)ofs);
	return 0;
}

/* Code of trace vmstate, or a trace's exit (LMT_VMST_EXIT), announced on
 * the way (one call site of see_trace: the verifier walks it once).
 * Code: where in its machine code (LMT_EV_MCOFS), unless --jit=trace or
 * no return address is found. An exit: what it allocates restores sunk
 * objects of the exit's snapshot (lj_snap_restore), J->parent and
 * J->exitno (LMT_EV_EXIT); the in-VM profiler charges it to the VM
 * (--jit=trace). */
static __always_inline __u8 charge_jit(struct ctx *c, const struct lmt_vm *vm,
				       __s32 vmstate, __u8 exit, struct lmt_ev *e)
{
	const struct lj_layout *lay = &vm->lay;
	__u32 px[2] = { (__u32)vmstate, 0 };
	/* before see_trace: the memo must not outlive a trgen it did not see */
	const __u64 gen = *(volatile __u64 *)&trgen;
	struct tinfo ti;
	__u32 ofs;
	int seen;

	if (exit && (jit_trace ||
		     rd(c, px, 8, vm->g - lay->gg_g + lay->gg_J + lay->J_parent) ||
		     !px[0]))
		return charge_internal(e);
	seen = !see_trace(c, vm, px[0], &ti);
	if (exit && !seen)
		return charge_internal(e);
	if (exit) {
		charge_trace(e, px[0], -1);
		e->flags |= LMT_EV_EXIT;
		e->line = px[1];
		return LMT_SRC_TRACE;
	}
	if (seen)
		tm_put(c->pc, c->tgid, px[0], c->vmid, ti.mcode, ti.szmcode, gen);
	return charge_trace(e, px[0],
			    seen && !jit_trace && !ab_leaves(LMT_AB_W_SEARCH) &&
			    !trace_ret(c, ti.mcode, ti.szmcode, &ofs, 0) ? (long)ofs : -1);
}

/* Lua function fi at the line of the instruction before ins; the VM's if
 * that has no line. */
static __always_inline __u8 charge_lua(struct ctx *c, const struct lmt_vm *vm,
				       const struct fninfo *fi, __u64 ins,
				       struct lmt_ev *e)
{
	__u64 pt = fi->pcf - vm->lay.pt_size, bc = fi->pcf;
	__s64 line;

	if (ins < bc + 4 || ((ins - bc) & 3))
		return charge_internal(e);
	if (fi->flags & FN_POS) {
		/* lj_debug_frameline's position; user space has the table. */
		line = ((ins - bc) >> 2) - 1;
		e->flags |= LMT_EV_POS;
	} else {
		line = proto_line(c, vm, pt, ins);
		if (line < 0)
			return charge_internal(e);
	}
	e->src = LMT_SRC_LFUNC;
	e->loc = pt;
	e->line = (__u64)line;
	return LMT_SRC_LFUNC;
}

/* Fast function fi in frame f (link: its frame link): its Lua caller at
 * the call, if there is one; else the builtin's C function. */
static __always_inline __u8 charge_ffunc(struct ctx *c, const struct lmt_vm *vm,
					 const struct fninfo *fi, __u64 f,
					 __u64 link, struct lmt_ev *e)
{
	__u64 pframe, pfn, ins = 0;
	struct fninfo pfi;

	if (frame_islua(link)) {
		__u32 call;
		/* The caller is the prototype holding the link. */
		if (!pc_get(c, vm, link, &pfi))
			return charge_lua(c, vm, &pfi, link, e);
		if (rd(c, &call, 4, link - 4))
			return charge_cfunc(e, fi->pcf);
		pframe = frame_prevl(f, call, vm->lay.gc64);
		ins = link;
	} else {
		pframe = frame_prevd(f, link);
		if (frame_iscont(link)) {
			if (rd(c, &ins, 8, frame_contpc(f, vm->lay.gc64)))
				return charge_cfunc(e, fi->pcf);
			ins = frame_link(ins, vm->lay.gc64);
		}
	}
	if (rd(c, &pfn, 8, frame_func(pframe, vm->lay.gc64)))
		return charge_cfunc(e, fi->pcf);
	pfn = frame_gc(vm->lay.gc64, pfn, vm->lay.tfunc);
	if (!pfn || fn_get(c, vm, pfn, c->pc->fw, &pfi) || pfi.ffid != FF_LUA)
		return charge_cfunc(e, fi->pcf);
	/* A Lua caller below a C-type link needs a walk of the C frames;
	 * rare, charged to the VM. */
	if (!ins)
		return charge_internal(e);
	if (charge_lua(c, vm, &pfi, ins, e) == LMT_SRC_LFUNC && frame_islua(link))
		pc_put(c, vm, ins, &pfi);
	return e->src;
}

/* The top frame of cur_L, as gread found it (FRAME and INTERP states). */
static __always_inline __u8 charge_frame(struct ctx *c, const struct lmt_vm *vm,
					 struct gq *q, __u8 interp,
					 __u64 ptr, struct lmt_ev *e)
{
	__u64 f, fn, spc = 0, fr[2];
	struct fninfo fi;

	if (!(q->got & GQ_L))
		return charge_internal(e);
	/* Growing or shrinking a Lua stack is charged to the VM, as the
	 * in-VM profiler does (resizestack runs in INTERP there). */
	if (ptr && ptr == q->stack)
		return charge_internal(e);
	/* The interpreter: what it saved as its PC may name the prototype
	 * without a look at the frame (struct pcc). */
	if (interp && q->cfa) {
		if (!(q->got & GQ_PC))
			return charge_internal(e);
		/* lua_cpcall's frame saves its L as the PC, and a frame's
		 * saved L is the lua_State it runs. */
		spc = q->spc;
		if (!spc || spc == q->L || (spc & 3))
			spc = 0;
		else if (!pc_get(c, vm, spc, &fi))
			return charge_lua(c, vm, &fi, spc, e);
	}
	f = frame_of_base(q->base);
	/* the function's slot and the one above: the link's (FR2), else
	 * the frame's first (its link in fr[0]) */
	if (rdd(c, fr, 16, frame_func(f, vm->lay.gc64)))
		return charge_internal(e);
	fn = frame_gc(vm->lay.gc64, fr[0], vm->lay.tfunc);
	if (!fn)
		return charge_internal(e); /* bottom frame: host C code between calls */
	if (fn_get(c, vm, fn, c->pc->w, &fi))
		return charge_internal(e);
	if (fi.ffid == FF_C)
		return charge_cfunc(e, fi.pcf);
	if (fi.ffid != FF_LUA)
		return charge_ffunc(c, vm, &fi, f,
				    frame_link(vm->lay.gc64 ? fr[1] : fr[0], vm->lay.gc64), e);
	/* Lua on top: the PC saved in the innermost C frame. */
	if (!interp) {
		if (!q->cfa || rdd(c, &spc, 8, q->cfa + vm->lay.cf_pc))
			return charge_internal(e);
		spc = gcref(&vm->lay, spc); /* a 32-bit PC without GC64 */
		if (spc == q->L)
			spc = 0;
		q->spc = spc; /* the stack's top frame (bpf/stack.h) */
		q->got |= GQ_PC;
	}
	if (!spc)
		return charge_internal(e);
	if (charge_lua(c, vm, &fi, spc, e) == LMT_SRC_LFUNC && interp)
		pc_put(c, vm, spc, &fi);
	return e->src;
}

/* -- Charges apart --------------------------------------------------------- */

/* Kernels before 6.13 give a program and the global functions it calls
 * 512 bytes of stack in all (no private stacks): the compatible entry
 * programs keep their event and struct gq here (not their run: pointers
 * stored in a map come back as numbers). A
 * program on a CPU runs to its end before another there uses it (the
 * reads in between do not sleep). */
struct scratch {
	struct gq q;
	struct lmt_ev ev;
};

/* Defined after struct lmt_slot's map (ring.h): clang 14 writes a struct
 * that a map's value first names through a pointer as a forward
 * declaration only, and libbpf then cannot size the slots map. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratchs SEC(".maps");

static __always_inline struct scratch *scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratchs, &zero);
}


/* charge_jit and charge_frame are called through a global function: the
 * verifier walks it once, alone, instead of them once for every path of
 * the entry program that reaches them (inlined, they were most of what it
 * walked, and of the tracer's start: docs/costs.md). A global function's
 * pointer arguments are memory to the verifier, and a struct it gets may
 * hold scalars only: the run (struct ctx) goes as its scalars, the callee
 * finds its pointers again, and what it changed comes back. */
struct apart {
	/* struct ctx's scalars, from si on (CTX_TAIL) */
	__u32 si, tgid, vmid, reads, direct, pad;
	__u64 pgd, task;
	__s32 vmstate; /* charge_jit's */
	__u32 how;     /* APART_* */
};
#define APART_EXIT 1   /* charge_jit: a trace's exit */
#define APART_INTERP 2 /* charge_frame: the interpreter's state */
#define APART_SL 4     /* the run has its VM's slot (c->sl) */
#define CTX_TAIL (sizeof(struct ctx) - __builtin_offsetof(struct ctx, si))
#define CTX_AT(f) (__builtin_offsetof(struct ctx, f) - __builtin_offsetof(struct ctx, si))
_Static_assert(__builtin_offsetof(struct ctx, si) == 4 * sizeof(void *) &&
	       sizeof(struct apart) == CTX_TAIL &&
	       __builtin_offsetof(struct apart, task) == CTX_AT(task) &&
	       __builtin_offsetof(struct apart, vmstate) == CTX_AT(vmstate) &&
	       __builtin_offsetof(struct apart, how) == CTX_AT(how),
	       "struct apart is struct ctx after its four pointers");

/* The callee's run from a: the per-CPU value and the slot looked up again
 * (the same elements: an array's do not move). */
static __always_inline int apart_open(struct ctx *c, const struct apart *a, void *regs)
{
	__u32 zero = 0;

	c->regs = regs;
	c->pc = bpf_map_lookup_elem(&stats, &zero);
	if (!c->pc)
		return -1;
	c->st = &c->pc->st;
	__builtin_memcpy(&c->si, a, CTX_TAIL);
	c->sl = (a->how & APART_SL) ? bpf_map_lookup_elem(&slots, &c->si) : NULL;
	return 0;
}

/* charge_frame with q (gread's), else charge_jit: for the entry
 * programs whose reads land on the kernel stack (6.18), where private
 * stacks (6.13) let a program and what it calls have more than 512 bytes
 * of stack in all. */
__noinline int charge_apart(struct pt_regs *regs, struct apart *a, const struct lmt_vm *vm,
			    struct gq *q, struct lmt_ev *e)
{
	struct ctx c;
	int r;

	if (!e)
		return 0;
	if (!regs || !a || !vm || apart_open(&c, a, regs))
		return charge_internal(e);
	if (q)
		r = charge_frame(&c, vm, q, (a->how & APART_INTERP) != 0, q->ptr, e);
	else
		r = charge_jit(&c, vm, a->vmstate, (a->how & APART_EXIT) != 0, e);
	/* what it changed of the run: its reads, the task and page tables */
	__builtin_memcpy(a, &c.si, CTX_TAIL);
	return r;
}

/* The same from the entry program's run c, its scalars passed in place:
 * what the charge changed of them is there when it returns. */
static __always_inline __u8 charge_from(struct ctx *c, __s32 vmstate, __u32 how,
					const struct lmt_vm *vm, struct gq *q,
					struct lmt_ev *e, const int kst)
{
	if (!kst) {
		/* The compatible programs: inline, in the entry's frame.
		 * Before 6.13 (no private stacks) a program and the
		 * functions it calls have 512 bytes of stack in all, which
		 * charge_apart's frame and the entry's exceed; the verifier
		 * walks every path of the entry through them (slower to
		 * load: docs/costs.md). */
		if (q)
			return charge_frame(c, vm, q, (how & APART_INTERP) != 0, q->ptr, e);
		return charge_jit(c, vm, vmstate, (how & APART_EXIT) != 0, e);
	}
	c->vmstate = vmstate;
	c->how = how | (c->sl ? APART_SL : 0);
	return charge_apart(c->regs, (struct apart *)&c->si, vm, q, e);
}

/* -- Attribution ------------------------------------------------------------ */

/* What gread needs of the layout: it runs as a subprogram that sees q
 * alone (struct gq). */
static __always_inline void gq_init(struct gq *q, const struct lmt_vm *vm,
				    __u64 ptr)
{
	const struct lj_layout *lay = &vm->lay;

	q->gg = vm->g - lay->gg_g;
	q->ptr = ptr;
	q->off = lay->L_base;
	q->n = lay->gg_g + lay->g_cur_L + 8 - lay->L_base;
	q->vms = lay->gg_g + lay->g_vmstate - lay->L_base;
	q->curl = lay->gg_g + lay->g_cur_L - lay->L_base;
	q->stk = lay->L_stack - lay->L_base;
	q->cf = lay->L_cframe - lay->L_base;
	q->cfpc = lay->cf_pc;
	q->gc64 = lay->gc64;
	q->nvmst = lay->nvmst;
	__builtin_memcpy(q->vmst, lay->vmst, sizeof(q->vmst));
}

/* The in-VM profiler's rules on a stock VM (docs/stream-format.md,
 * "Attribution"): a dispatch on what the vmstate means. Returns the source
 * chosen. */
static __always_inline __u8 attribute(struct ctx *c, const struct lmt_vm *vm,
				      __u64 ptr, struct lmt_ev *e,
				      const int kst, struct gq *q)
{
	const struct lj_layout *lay = &vm->lay;
	__u8 kind, *wide = &c->pc->wide[e->kind & 3];
	__s32 vmstate;

	/* When this kind of event needed no frame last time on this CPU
	 * (frees in the GC, code in traces), vmstate comes first, alone,
	 * through the cheaper string read (rd_vmstate). */
	if (!*wide) {
		if (rd_vmstate(c, &vmstate, vm->g + lay->g_vmstate))
			return charge_unread(e);
		kind = vmst_of(vmstate, lay->nvmst, lay->vmst);
		if (vmstate >= 1 || kind == LMT_VMST_INTERNAL ||
		    kind == LMT_VMST_EXIT)
			goto narrow;
		*wide = 1;
	}
	/* vmstate, cur_L and, for the main lua_State, its fields in one
	 * read (lmt_gwin_fits); then what the frame needs of them. */
	gq_init(q, vm, ptr);
	if (gread(c, q, kst))
		return charge_unread(e);
	vmstate = q->vmstate;
	kind = vmst_of(vmstate, lay->nvmst, lay->vmst);
	if (vmstate >= 1 || kind == LMT_VMST_INTERNAL || kind == LMT_VMST_EXIT) {
		*wide = 0;
		goto narrow;
	}
	/* The recorder runs in lj_vm_cpcall's frame, which saves L as its
	 * PC: its own allocations are the VM's; the rest is the
	 * interpreter's. The in-VM profiler charges the whole state to the
	 * VM (--jit=trace). */
	if (kind == LMT_VMST_RECORD) {
		if (jit_trace || !(q->got & GQ_PC) || q->spc == q->L)
			return charge_internal(e);
		kind = LMT_VMST_INTERP;
	}
	return charge_from(c, vmstate, kind == LMT_VMST_INTERP ? APART_INTERP : 0, vm, q, e, kst);
	/* States that need no frame. */
narrow:
	if (vmstate >= 1 && !charge_memo(c, vmstate, e))
		return LMT_SRC_TRACE;
	if (vmstate >= 1 || kind == LMT_VMST_EXIT)
		return charge_from(c, vmstate, vmstate < 1 ? APART_EXIT : 0, vm, NULL, e, kst);
	trace_made(vmstate, lay);
	return charge_internal(e);
}

#endif
