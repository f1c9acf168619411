/* Stacks (--stacks): the Lua call stack of an event's coroutine, as
 * lj_debug_frame walks it, interned by a hash of its frames.
 *
 * The allocator's entry program attributes the event, then hands it and
 * what attribution found of the frame (struct stk) to stack_send, a
 * global function: the verifier walks it once, not once per path of the
 * entry program. The walk runs over a
 * copy of the coroutine's stack, read LMT_STKWIN bytes at a time from the
 * top frame down: a frame's function slot and its link lie beside its
 * base, so one read covers many frames. A Lua frame's caller sits A slots
 * (of the CALL before its return PC) below: A comes from a cache by PC
 * (struct acc), read from the bytecode once. A frame is its PC if it is a
 * Lua frame (which names its prototype while that lives; pcgen is in the
 * hash), else its C function or builtin (through the GCfunc cache,
 * fn_get).
 *
 * A stack seen for the first time (or evicted from stkseen) goes to user
 * space as an lmt_stack record before the event that names it; the
 * prototypes of its Lua frames are announced on the way, so their frees
 * are seen like any other. Inside a trace the walk starts at the trace's
 * base frame (g->jit_base) and leaves that frame to user space, which
 * knows its PC and the frames the trace inlined from the snapshot. */
#ifndef LMT_BPF_STACK_H
#define LMT_BPF_STACK_H

#define LMT_STKWIN 4096 /* bytes of Lua stack read at once */

/* What the entry program leaves for stack_send, and the walk's state. */
struct stk {
	/* in */
	struct lmt_ev ev;
	__u64 ud;
	__u64 L, base, stack, pc; /* the frame, if attribution found it */
	__u32 reads, direct;
	__u8 have; /* L, base, stack are set */
	__u8 pad[7];
	/* the walk */
	__u64 f, bot, lo, wlo, whi, cur, h;
	__u32 n;
	__u8 skip, trunc, err, top;
	__u8 intrace; /* the event is a trace's: skip its base frame */
	__u8 newfn;   /* a C function or builtin the process showed first */
	__u64 fns[LMT_STK_MAX]; /* GCfunc per frame */
	__u64 win[LMT_STKWIN / 8];
	struct lmt_stack rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stk);
} stks SEC(".maps");

/* A CALL's A by its return PC (a Lua frame's link): bytecode does not
 * change while its prototype lives; a freed prototype bumps pcgen, which
 * salts the check word. */
#define ACC_BITS 12
#define ACC_SALT 0x6163616368652121ULL

struct acc {
	__u64 pc;
	__u64 meta; /* tgid | VM id << 32 */
	__u64 a;
	__u64 chk;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << ACC_BITS);
	__type(key, __u32);
	__type(value, struct acc);
} accache SEC(".maps");

/* C functions and builtins a process's stacks have shown (tgid, GCfunc.f):
 * the first sight stops the process, so that user space names it from the
 * process's tables before it can exit (user/convert/luanames.c). Bounded: an
 * entry evicted is a stop again, never a name lost. */
struct fnseen_key {
	__u32 tgid;
	__u32 pad;
	__u64 f;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fnseen_key);
	__type(value, __u8);
} fnseen SEC(".maps");

/* Stacks user space has: id and VM. */
#define SEEN_BITS 13
#define SEEN_SALT 0x737461636b732121ULL

struct seen {
	__u64 id;
	__u64 meta;
	__u64 chk;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << SEEN_BITS);
	__type(key, __u32);
	__type(value, struct seen);
} stkseen SEC(".maps");

static __always_inline struct stk *stk_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stks, &zero);
}

/* What a walk step sees (bpf_loop's context). */
struct stkw {
	struct ctx *c;
	const struct lmt_vm *vm;
	struct stk *s;
};

static __always_inline __u64 meta_of(struct ctx *c, const struct lmt_vm *vm)
{
	return c->tgid | (__u64)vm->id << 32;
}

/* The word at target address a of the copy. */
static __always_inline __u64 stk_word(const struct stk *s, __u64 a)
{
	__u64 i = (a - s->wlo) >> 3;

	BOUND(i, 0x1ff); /* LMT_STKWIN / 8 - 1 */
	return s->win[i];
}

/* A of the CALL before return PC pc. */
static __always_inline int call_a(struct ctx *c, const struct lmt_vm *vm,
				  __u64 pc, __u64 *a)
{
	__u32 k = dm_slot(dm_hash(pc >> 2, (__u64)c->tgid << 40), ACC_BITS);
	struct acc *e = bpf_map_lookup_elem(&accache, &k);
	__u64 w[3], salt = ACC_SALT ^ pcgen * LMT_HASH_K;
	__u32 ins;

	if (!e)
		return -1;
	if (dm_get(e, w, 3, salt) && w[0] == pc && w[1] == meta_of(c, vm)) {
		*a = w[2];
		return 0;
	}
	if (rd(c, &ins, 4, pc - 4))
		return -1;
	*a = bc_a(ins);
	w[0] = pc;
	w[1] = meta_of(c, vm);
	w[2] = *a;
	dm_put(e, w, 3, salt);
	return 0;
}

static __always_inline void stk_mix(struct stk *s, __u64 a, __u64 b)
{
	__u64 h = (s->h ^ a) * LMT_HASH_K;

	h ^= h >> 29;
	h = (h ^ b) * LMT_HASH_K;
	s->h = h ^ (h >> 32);
}

/* One frame: the one whose link slot is s->f, its PC s->cur if it is a
 * Lua frame below the top. 1 ends the walk. */
static long stk_step(__u32 i, void *arg)
{
	struct stkw *w = arg;
	struct ctx *c = w->c;
	const struct lmt_vm *vm = w->vm;
	struct stk *s = w->s;
	__u64 f = s->f, link, func, fn, a = 0, b, pcf = 0;
	__u32 n = s->n;
	__u8 ffid = 0;

	if (f <= s->bot)
		return 1;
	if (n >= stack_depth || n >= LMT_STK_MAX) {
		s->trunc = 1;
		return 1;
	}
	/* The copy covers the link, the function and a continuation's PC:
	 * a header down from the link (frame_contpc). */
	if (frame_contpc(f, vm->lay.gc64) < s->wlo || f + TV_SIZE > s->whi) {
		__u64 hi = f + TV_SIZE, lo = hi > s->lo + LMT_STKWIN ?
					     hi - LMT_STKWIN : s->lo;
		__u64 sz = hi - lo;

		BOUND(sz, 0x1fff);
		if (sz > LMT_STKWIN || lo > frame_contpc(f, vm->lay.gc64) ||
		    rd(c, s->win, (__u32)sz, lo)) {
			s->err = 1;
			return 1;
		}
		s->wlo = lo;
		s->whi = hi;
	}
	link = frame_link(stk_word(s, f), vm->lay.gc64);
	func = stk_word(s, frame_func(f, vm->lay.gc64));
	/* A vararg function's pseudo-frame: the function again, below. */
	if (frame_typep(link) == FRAME_VARG) {
		s->f = frame_prevd(f, link);
		return 0;
	}
	fn = frame_gc(vm->lay.gc64, func, vm->lay.tfunc);
	if (fn == s->L)
		fn = 0; /* a dummy frame: its thread, untyped without FR2 */
	if (fn && s->skip) {
		s->skip = 0; /* a trace's base frame: user space has it */
	} else if (fn) {
		if (s->top || !s->cur) {
			/* the GCfunc cache (bpf/attribute.h): the top frame's
			 * is there from attribution */
			struct fninfo fi;

			if (fn_get(c, vm, fn, c->pc->fw, &fi)) {
				ffid = 0xff;
			} else {
				pcf = fi.pcf;
				ffid = fi.ffid;
			}
		}
		if (ffid == FF_LUA && s->cur) {
			a = s->cur;
			b = (__u64)LMT_FR_LUA << 56;
		} else if (ffid == FF_C) {
			a = pcf;
			b = (__u64)LMT_FR_C << 56;
		} else if (ffid != FF_LUA && ffid != 0xff) {
			a = pcf;
			b = (__u64)LMT_FR_FF << 56 | ffid;
		} else {
			a = fn;
			b = (__u64)LMT_FR_FN << 56;
		}
		s->rec.f[n & (LMT_STK_MAX - 1)].a = a;
		s->rec.f[n & (LMT_STK_MAX - 1)].b = b;
		s->fns[n & (LMT_STK_MAX - 1)] = fn;
		stk_mix(s, a, b);
		s->n = n + 1;
	}
	/* else a dummy frame (the thread in the function slot) */
	s->top = 0;
	if (frame_islua(link)) {
		__u64 ca;
		if (call_a(c, vm, link, &ca)) {
			s->err = 1;
			return 1;
		}
		s->cur = link;
		s->f = frame_prevl(f, (__u32)(ca << 8), vm->lay.gc64);
	} else {
		s->cur = frame_iscont(link) ?
			frame_link(stk_word(s, frame_contpc(f, vm->lay.gc64)), vm->lay.gc64) : 0;
		s->f = frame_prevd(f, link);
	}
	return 0;
}

/* A frame of a stack seen first: a Lua frame's prototype, announced (its
 * line when BPF keeps its lines). */
static long stk_def(__u32 i, void *arg)
{
	struct stkw *w = arg;
	struct ctx *c = w->c;
	const struct lmt_vm *vm = w->vm;
	struct stk *s = w->s;
	struct lmt_sframe *fr = &s->rec.f[i & (LMT_STK_MAX - 1)];
	struct fninfo fi;
	__s64 line;
	__u64 pt;

	if (i >= s->n)
		return 1;
	if (LMT_FR_KIND(fr->b) == LMT_FR_C || LMT_FR_KIND(fr->b) == LMT_FR_FF) {
		struct fnseen_key k = { .tgid = c->tgid, .f = fr->a };
		__u8 one = 1;

		if (!bpf_map_lookup_elem(&fnseen, &k) &&
		    !bpf_map_update_elem(&fnseen, &k, &one, BPF_NOEXIST))
			s->newfn = 1;
		return 0;
	}
	if (LMT_FR_KIND(fr->b) != LMT_FR_LUA)
		return 0;
	if (fn_get(c, vm, s->fns[i & (LMT_STK_MAX - 1)], c->pc->w, &fi) ||
	    fi.ffid != FF_LUA || !fi.flags) {
		fr->a = s->fns[i & (LMT_STK_MAX - 1)];
		fr->b = (__u64)LMT_FR_FN << 56;
		return 0;
	}
	pt = fi.pcf - vm->lay.pt_size;
	if (fi.flags & FN_BPF_LINES) {
		line = proto_line(c, vm, pt, fr->a);
		fr->a = line < 0 ? 0 : (__u64)line;
		fr->b = (__u64)LMT_FR_LINE << 56 | pt;
	} else {
		fr->b = (__u64)LMT_FR_LUA << 56 | pt;
	}
	return 0;
}

/* The stack of the event in s: its id, 0 if none. */
static __always_inline __u64 stack_of(struct ctx *c, const struct lmt_vm *vm,
				      struct stk *s)
{
	const struct lj_layout *lay = &vm->lay;
	struct stkw w = { .c = c, .vm = vm, .s = s };
	__u64 base, stack, id, meta = meta_of(c, vm), sw[2];
	struct seen *e;
	__u32 k, sz;

	s->intrace = s->skip = s->ev.src == LMT_SRC_TRACE;
	if (s->have && !s->intrace) {
		base = s->base;
		stack = s->stack;
	} else {
		__u64 g2[2];
		/* cur_L and jit_base sit together, a reference apart
		 * (user/target/layout.c) */
		if (lay->g_jit_base != lay->g_cur_L + lmt_refsz(lay) ||
		    rd(c, g2, 16, vm->g + lay->g_cur_L))
			return 0;
		s->L = gcref(lay, g2[0]);
		base = gcref(lay, lay->gc64 ? g2[1] : g2[0] >> 32);
		/* An exit (sunk objects restored) has cleared jit_base and
		 * left the trace's base in L->base until the restore ends. */
		if (!s->L || (!base && rd(c, &base, 8, s->L + lay->L_base)) ||
		    !base || rd(c, &stack, 8, s->L + lay->L_stack))
			return 0;
		stack = gcref(lay, stack);
		s->pc = 0;
	}
	s->f = frame_of_base(base);
	s->lo = stack;
	s->bot = frame_bot(stack, lay->gc64);
	s->wlo = s->whi = 0;
	s->cur = s->pc && s->pc != s->L && !(s->pc & 3) ? s->pc : 0;
	s->top = 1;
	s->n = 0;
	s->trunc = s->err = 0;
	s->h = meta ^ pcgen * LMT_HASH_K ^ (__u64)s->intrace << 63;
	bpf_loop(LMT_STK_MAX + 32, stk_step, &w, 0);
	if (s->err && !s->n)
		return 0;
	stk_mix(s, s->n | (__u64)s->trunc << 32, s->intrace);
	id = s->h | 1;
	k = dm_slot(dm_hash(id, 0), SEEN_BITS);
	e = bpf_map_lookup_elem(&stkseen, &k);
	if (!e)
		return 0;
	if (dm_get(e, sw, 2, SEEN_SALT) && sw[0] == id && sw[1] == meta)
		return id;
	/* First sight: its prototypes, then the record; a process showing a
	 * C function or builtin first waits for user space to name it. */
	s->newfn = 0;
	bpf_loop(LMT_STK_MAX, stk_def, &w, 0);
	if (s->newfn)
		s->rec.stopped = stop_process(c->tgid, 0);
	s->rec.rec = LMT_REC_STACK;
	s->rec.truncated = s->trunc || s->err;
	s->rec.n = (__u16)s->n;
	s->rec.tgid = c->tgid;
	s->rec.vm = vm->id;
	s->rec.intrace = s->intrace;
	s->rec.id = id;
	s->rec.seq = seq_next(); /* before its record is in the ring, as a prototype's */
	sz = s->n;
	BOUND(sz, 0x1ff);
	if (sz > LMT_STK_MAX)
		return 0;
	sz = offsetof(struct lmt_stack, f) + sz * sizeof(struct lmt_sframe);
	if (bpf_ringbuf_output(&rb, &s->rec, sz,
			       s->rec.stopped ? BPF_RB_FORCE_WAKEUP : wake_flags(c, sz)))
		return 0;
	c->st->stacks++;
	{
		/* its names are read while the process lives (close_enter) */
		struct lmt_proc *pr = bpf_map_lookup_elem(&procs, &c->tgid);

		if (pr)
			pr->unnamed = 1;
	}
	sw[0] = id;
	sw[1] = meta;
	dm_put(e, sw, 2, SEEN_SALT);
	return id;
}

#endif
