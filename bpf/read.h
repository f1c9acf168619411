/* Reads of target memory: what they cost depends on where they land
 * (docs/costs.md), so every read goes through here, counted in ctx. */
#ifndef LMT_BPF_READ_H
#define LMT_BPF_READ_H

/* Masks v in a way clang cannot fold away, so that the verifier sees the
 * bound at the helper call. */
#define BOUND(v, mask) asm volatile("%0 &= " #mask : "+r"(v))

/* Window reads: a fixed-size read of a structure's head, then fields at
 * per-variant offsets, masked so the verifier sees them in bounds. */
#define WIN LMT_WIN
#define F8(b, o) (*(__u8 *)((char *)(b) + ((o) & (WIN - 1))))
#define F32(b, o) (*(__u32 *)((char *)(b) + ((o) & (WIN - 4))))
#define F64(b, o) (*(__u64 *)((char *)(b) + ((o) & (WIN - 8))))

/* The GCRef/MRef at offset o of window b: 8 bytes (GC64) or 4, at an
 * offset aligned to its width (bpf/lj.h). */
static __always_inline __u64 win_ref(__u8 gc64, const void *b, __u32 o)
{
	return gc64 ? F64(b, o) : (__u64)F32(b, o);
}

/* Where a read lands decides what it costs. The kernel checks the
 * destination of every read from user memory (hardened usercopy), and one
 * on the kernel stack passes at once. A map value, or the JIT's private
 * stack (which a program or subprogram with 64 bytes of stack or more
 * gets), does not, and costs more (docs/costs.md). So reads
 * of up to RDK_MAX bytes go through rdk, a subprogram whose frame stays
 * under 64 bytes and so runs on the kernel stack: it reads into its own
 * frame and copies out. */
#define RDK_MAX 48

static __noinline long rdk(void *dst, __u32 sz, __u64 src)
{
	__u64 b[RDK_MAX / 8];
	long r;

	if (sz > RDK_MAX)
		return -1;
	r = bpf_probe_read_user(b, sz, (const void *)src);
	if (r)
		return r;
	if (sz == 1)
		*(__u8 *)dst = (__u8)b[0];
	else if (sz == 2)
		*(__u16 *)dst = (__u16)b[0];
	else if (sz == 4)
		*(__u32 *)dst = (__u32)b[0];
	else
		for (int i = 0; i < RDK_MAX / 8; i++)
			if (i * 8 < sz)
				((__u64 *)dst)[i] = b[i];
	return 0;
}

/* The string helper's word, the same way (see rds). */
static __noinline long rdks(__u64 *dst, __u64 src)
{
	__u64 b = 0;
	long n = bpf_probe_read_user_str(&b, 8, (const void *)src);

	*dst = b;
	return n;
}

/* A read of a constant size up to RDK_MAX (1, 2, 4 or a multiple of 8)
 * goes through rdk; a larger or variable one lands where dst is. */
static __always_inline int rd(struct ctx *c, void *dst, __u32 sz, __u64 src)
{
	long r;

	c->reads++;
	if (__builtin_constant_p(sz) && sz <= RDK_MAX)
		r = rdk(dst, sz, src);
	else
		r = bpf_probe_read_user(dst, sz, (const void *)src);
	if (r) {
		if (c->st)
			c->st->read_errs++;
		return -1;
	}
	return 0;
}

/* rd on an event's common path: directly where it can (bpf/direct.h).
 * Only there: each direct read is a few loads more of code, and the
 * verifier's limits bound how many. */
static __always_inline int rdd(struct ctx *c, void *dst, __u32 sz, __u64 src)
{
	return dr_read(c, dst, sz, src) ? rd(c, dst, sz, src) : 0;
}

/* A word read through the string helper: as a program's first read it
 * costs less (docs/costs.md). It stops at a zero byte and zeroes the bytes
 * after it, so the word is whole only where the caller knows the bytes it
 * did not copy. */
static __always_inline long rds(struct ctx *c, __u64 *dst, __u64 src)
{
	long n;

	c->reads++;
	n = rdks(dst, src);
	if (n < 0 && c->st)
		c->st->read_errs++;
	return n;
}

/* g->vmstate: directly, else through the string helper when that gives
 * it whole. */
static __always_inline int rd_vmstate(struct ctx *c, __s32 *vs, __u64 src)
{
	__u64 b;
	long n;

	if (!dr_read(c, vs, 4, src))
		return 0;
	n = rds(c, &b, src);

	if (n < 0)
		return -1;
	if (lmt_vmstate_whole(n)) {
		*vs = (__s32)b;
		return 0;
	}
	return rd(c, vs, 4, src);
}

/* The reads that find an event's frame: the GG_State window (vmstate,
 * cur_L and the main lua_State's fields), a coroutine's fields when cur_L
 * is one, and in the interpreter the PC saved in its C frame. gread_body
 * does them into b and leaves what attribution needs in q.
 *
 * Where b is decides what they cost (see rdk, docs/costs.md): least on
 * the kernel stack, more in a per-CPU map value, most on the JIT's private
 * stack, which a subprogram with 64 bytes of stack or more gets. The
 * verifier keeps every
 * subprogram that can run as an async callback on the kernel stack, so
 * gread_k, whose frame holds the window, is also made the callback of a
 * task work that is never scheduled (gread): a kernel-stack window where
 * the kernel has task works (6.18+). Elsewhere alloc_enter_compat reads
 * into the per-CPU scratch. q is all the subprogram sees (as a callback it
 * gets a map value), so the layout offsets it needs travel in it. */
struct gq {
	struct bpf_task_work tw; /* gread_k as a callback: never scheduled */
	/* in */
	__u64 gg;    /* GG_State: the main lua_State */
	__u64 ptr;   /* the block: a Lua stack being resized is the VM's */
	__u16 off;   /* the window: from gg + off (L_base) */
	__u16 n;     /* its bytes */
	__u16 vms;   /* vmstate in the window */
	__u16 curl;  /* cur_L in the window */
	__u16 stk, cf; /* L_stack, L_cframe from L_base */
	__u16 cfpc;  /* the saved PC in a C frame */
	__u8 gc64, nvmst;
	__u8 vmst[LMT_VMST_MAX];
	/* out */
	__u8 got;    /* GQ_* */
	__u8 reads, errs, pad;
	__s32 vmstate;
	__u64 L, base, stack, cfa, spc;
};

#define GQ_L 1  /* L, base, stack, cfa */
#define GQ_PC 2 /* spc: the interpreter's saved PC */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gq);
} gqs SEC(".maps");

extern int bpf_task_work_schedule_signal_impl(struct task_struct *task,
					      struct bpf_task_work *tw,
					      void *map__map,
					      bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

__u32 never; /* nobody sets it (gread) */


static __always_inline __u64 gq_u64(const __u8 *b, __u64 o)
{
	return *(const __u64 *)(b + o);
}

/* A reference at offset o of b (a multiple of its width; o bounded by
 * the caller for 8 bytes): 64 or 32 bits. */
static __always_inline __u64 gq_ref(const __u8 *b, __u64 o, __u8 gc64)
{
	if (gc64)
		return *(const __u64 *)(b + (o & ~7ULL));
	return *(const __u32 *)(b + (o & ~3ULL));
}

/* Returns -1 if the window could not be read; later reads that fail
 * leave their GQ_ bit clear. b holds LMT_GWIN bytes. */
static __always_inline long gread_body(struct gq *q, __u8 *b)
{
	__u64 n = q->n, o, L, cfa;
	__u8 kind;

	q->got = 0;
	q->reads = 1;
	q->errs = 0;
	asm volatile("" : "+r"(n)); /* the bound below on the size read */
	if (n > LMT_GWIN || n < 8)
		return -1;
	if (bpf_probe_read_user(b, n, (const void *)(q->gg + q->off))) {
		q->errs = 1;
		return -1;
	}
	o = q->vms & ~3ULL; /* aligned: lmt_gwin_fits */
	asm volatile("" : "+r"(o));
	if (o > LMT_GWIN - 4)
		return -1;
	q->vmstate = *(__s32 *)(b + o);
	/* The frame only where attribution will want it (vmst_of). */
	kind = vmst_of(q->vmstate, q->nvmst, q->vmst);
	if (kind == LMT_VMST_INTERNAL || kind == LMT_VMST_EXIT)
		return 0;
	o = q->curl & ~3ULL;
	asm volatile("" : "+r"(o));
	if (o > LMT_GWIN - 8)
		return -1;
	L = gq_ref(b, o, q->gc64);
	if (!L)
		return 0;
	/* base, stack and cframe sit within 64 bytes of base: for the main
	 * lua_State they are the window's head already. */
	if (L != q->gg) {
		q->reads++;
		if (bpf_probe_read_user(b, 64, (const void *)(L + q->off))) {
			q->errs++;
			return 0;
		}
	}
	q->L = L;
	q->base = gq_u64(b, 0);
	q->stack = gq_ref(b, q->stk & 60, q->gc64);
	cfa = gq_u64(b, q->cf & 56) & ~3ULL;
	q->cfa = cfa;
	q->got = GQ_L;
	if ((kind != LMT_VMST_INTERP && kind != LMT_VMST_RECORD) || !cfa ||
	    (q->ptr && q->ptr == q->stack))
		return 0;
	q->reads++;
	if (bpf_probe_read_user(b, 8, (const void *)(cfa + q->cfpc))) {
		q->errs++;
		return 0;
	}
	q->spc = ref_gc64(q->gc64, gq_u64(b, 0)); /* a 32-bit PC without GC64 */
	q->got |= GQ_PC;
	return 0;
}

static __noinline long gread_k(struct bpf_map *map, void *key, struct gq *q)
{
	__u8 b[LMT_GWIN];

	if (!q)
		return 0;
	return gread_body(q, b);
}

/* The 4-byte word at byte o of the page at kernel address k. */
static __always_inline __u32 kld32(__u64 k, __u64 o)
{
	return (__u32)(kld(k + (o & ~7ULL)) >> ((o & 4) * 8));
}

/* gread_body's reads, directly (bpf/direct.h): the fields alone, each
 * page walked and checked once (the window's, a coroutine's lua_State's,
 * the C frame's). -1 if any could not be read so; the caller then does
 * them all through the helper. */
static __always_inline long gread_direct_body(struct ctx *c, struct gq *q)
{
	struct lmt_percpu *t = c->pc;
	__u64 w, L, k, pgd, cfa, win = q->gg + q->off;
	__u8 kind;

	q->got = 0;
	if (!dr_po || !t)
		return -1;
	pgd = dr_pgd(c);
	k = dr_addr(t, pgd, win, q->n);
	if (!k)
		return -1;
	q->vmstate = (__s32)kld32(k, q->vms & ~3U);
	kind = vmst_of(q->vmstate, q->nvmst, q->vmst);
	if (kind == LMT_VMST_INTERNAL || kind == LMT_VMST_EXIT) {
		if (!dr_same(t))
			return -1;
		dr_count(c);
		return 0;
	}
	L = q->gc64 ? kld(k + (q->curl & ~7U)) : kld32(k, q->curl & ~3U);
	if (L && L != q->gg) {
		/* a coroutine: its base, stack and cframe within 64 bytes of
		 * its own (the main lua_State's head the window) */
		if (!dr_same(t))
			return -1;
		dr_count(c);
		k = dr_addr(t, pgd, L + q->off, 64);
		if (!k)
			return -1;
	}
	if (L) {
		q->base = kld(k);
		w = q->gc64 ? kld(k + (q->stk & 56)) : kld32(k, q->stk & 60);
		cfa = kld(k + (q->cf & 56));
	}
	if (!dr_same(t))
		return -1;
	dr_count(c);
	if (!L)
		return 0;
	q->L = L;
	q->stack = ref_gc64(q->gc64, w);
	cfa &= ~3ULL;
	q->cfa = cfa;
	q->got = GQ_L;
	if ((kind != LMT_VMST_INTERP && kind != LMT_VMST_RECORD) || !cfa ||
	    (q->ptr && q->ptr == q->stack))
		return 0;
	if (dr_read(c, &q->spc, 8, cfa + q->cfpc)) {
		q->got = 0;
		return -1;
	}
	q->spc = ref_gc64(q->gc64, q->spc);
	q->got |= GQ_PC;
	return 0;
}

static __always_inline long gread_direct(struct ctx *c, struct gq *q)
{
	__u32 reads = c->reads, direct = c->direct;

	if (!gread_direct_body(c, q))
		return 0;
	/* Counted once, by the helper's reads that follow. */
	c->reads = reads;
	c->direct = direct;
	return -1;
}

static __always_inline long gread(struct ctx *c, struct gq *q, const int kst)
{
	long r;

	if (!gread_direct(c, q))
		return 0;
	if (kst) {
		/* Never true: makes gread_k an async callback (see struct gq). */
		if (never == 0x6e657665) {
			__u32 zero = 0;
			struct gq *v = bpf_map_lookup_elem(&gqs, &zero);

			if (v)
				bpf_task_work_schedule_signal_impl(
					bpf_get_current_task_btf(), &v->tw, &gqs,
					(bpf_task_work_callback_t)gread_k, NULL);
		}
		r = gread_k(NULL, NULL, q);
	} else {
		r = gread_body(q, c->pc->gw);
	}
	c->reads += q->reads;
	if (q->errs && c->st)
		c->st->read_errs += q->errs;
	return r;
}

#endif
