/* The references the collector follows, exactly as lj_gc.c marks them:
 * gc_mark_start and atomic's roots, gc_mark (udata, upvalues),
 * gc_traverse_tab (weak keys and values left out), _func, _proto,
 * _thread (its stack up to top, then its env), _trace. */
#include <string.h>

#include "heap/heap.h"
#include "target/ljref.h"

#define LJ_GC_WEAKKEY 8
#define LJ_GC_WEAKVAL 16

struct emit {
	struct heap *h;
	hedge_fn fn;
	void *ctx;
	struct hedge e;
};

/* Gives the reference to addr (0: none) if an object has it. */
static int to(struct emit *m, uint64_t addr, uint8_t kind, uint64_t a, uint64_t b)
{
	long j;

	if (!addr)
		return 0;
	if ((j = heap_find(m->h, addr)) < 0) {
		/* g->strempty is part of g, not an object */
		if (addr != m->h->g + m->h->var->h.g_strempty)
			m->h->c.dangling++;
		return 0;
	}
	m->e.to = (uint32_t)j;
	m->e.kind = kind;
	m->e.a = a;
	m->e.b = b;
	return m->fn(m->ctx, &m->e);
}

/* A metatable's __mode: its hash part looked at once (h->wk keeps it). */
static int mode_of(const struct heap *h, long mi)
{
	const struct lj_variant *v = h->var;
	const struct hobj *mt = &h->o[mi];
	uint64_t nn = heap_u32(h, mt, v->u.tab_hmask), off;
	int weak = 0;

	if (h->wk && (h->wk[mi] & 0x80))
		return h->wk[mi] & 0x7f;
	nn = nn ? nn + 1 : 0;
	off = v->h.tab_sizeof + (uint64_t)heap_u32(h, mt, v->h.tab_asize) * 8;
	for (uint64_t k = 0; k < nn; k++) {
		uint64_t at = off + k * v->u.node_size;
		uint64_t key = heap_u64(h, mt, at + v->u.node_key);
		uint64_t val = heap_u64(h, mt, at + v->u.node_val);
		long ki = heap_find(h, heap_tv_gc(h, key)), vi = heap_find(h, heap_tv_gc(h, val));
		const char *s;
		uint32_t len;
		int cut;

		if (at + v->u.node_size > mt->rawlen)
			break; /* the nodes copied: no more */
		if (ki < 0 || vi < 0 || h->o[ki].gct != v->h.tstr || h->o[vi].gct != v->h.tstr)
			continue;
		s = heap_str(h, &h->o[ki], &len, &cut);
		if (len != 6 || cut || memcmp(s, "__mode", 6))
			continue;
		s = heap_str(h, &h->o[vi], &len, &cut);
		for (uint32_t c = 0; c < len && s[c]; c++)
			weak |= s[c] == 'k' ? LJ_GC_WEAKKEY : s[c] == 'v' ? LJ_GC_WEAKVAL : 0;
		break;
	}
	if (h->wk)
		h->wk[mi] = (uint8_t)(0x80 | weak);
	return weak;
}

int heap_weak(const struct heap *h, const struct hobj *t)
{
	const struct lj_variant *v = h->var;
	long mi = heap_find(h, heap_ref(h, t, v->h.tab_metatable));
	int weak;

	if (mi < 0 || h->o[mi].gct != v->h.ttab)
		return 0;
	weak = mode_of(h, mi);
	if (weak && t->addr == h->finalizer)
		weak = LJ_GC_WEAKKEY; /* values marked: the finalizers */
	return weak;
}

static int tab_edges(struct emit *m, const struct hobj *t)
{
	const struct lj_variant *v = m->h->var;
	struct heap *h = m->h;
	uint32_t asize = heap_u32(h, t, v->h.tab_asize), hm = heap_u32(h, t, v->u.tab_hmask);
	uint64_t nodes = v->h.tab_sizeof + (uint64_t)asize * 8;
	int weak, r;

	if ((r = to(m, heap_ref(h, t, v->h.tab_metatable), HE_MT, 0, 0)))
		return r;
	weak = heap_weak(h, t);
	if (weak == (LJ_GC_WEAKKEY | LJ_GC_WEAKVAL))
		return 0;
	if (!(weak & LJ_GC_WEAKVAL))
		for (uint32_t i = 0; i < asize; i++) {
			uint64_t at = v->h.tab_sizeof + (uint64_t)i * 8;

			if (at + 8 > t->rawlen)
				break;
			if ((r = to(m, heap_tv_gc(h, heap_u64(h, t, at)), HE_ARRAY, i, 0)))
				return r;
		}
	for (uint64_t k = 0; hm && k <= hm; k++) {
		uint64_t at = nodes + k * v->u.node_size, key, val;

		if (at + v->u.node_size > t->rawlen)
			break;
		key = heap_u64(h, t, at + v->u.node_key);
		val = heap_u64(h, t, at + v->u.node_val);
		if (lj_tvisnil(v, val))
			continue;
		if (!(weak & LJ_GC_WEAKKEY) && (r = to(m, heap_tv_gc(h, key), HE_HKEY, k, val)))
			return r;
		if (!(weak & LJ_GC_WEAKVAL) && (r = to(m, heap_tv_gc(h, val), HE_HVAL, k, key)))
			return r;
	}
	return 0;
}

/* An open upvalue's value: the slot of the thread whose stack holds it. */
static uint64_t open_value(struct heap *h, uint64_t slot)
{
	const struct lj_variant *v = h->var;

	for (size_t k = 0; k < h->nthr; k++) {
		const struct hobj *th = &h->o[h->thr[k]];
		uint64_t st;

		st = heap_ref(h, th, v->lay.L_stack);
		if (slot >= st && (slot - st) % 8 == 0 &&
		    v->sizeof_L + (slot - st) + 8 <= th->rawlen)
			return heap_u64(h, th, v->sizeof_L + (slot - st));
	}
	return 0;
}

static int trace_of(struct emit *m, unsigned no, uint8_t kind, uint64_t a)
{
	return no && no < m->h->ntraces ? to(m, m->h->traces[no], kind, a, 0) : 0;
}

/* A function's: its environment, then a Lua function's prototype and
 * upvalue objects, or a C function's upvalue values. */
static int fn_edges(struct emit *m, const struct hobj *o)
{
	struct heap *h = m->h;
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	unsigned n = heap_u8(h, o, hl->fn_nupvalues);
	int r;

	if ((r = to(m, heap_ref(h, o, hl->fn_env), HE_ENV, 0, 0)))
		return r;
	if (!heap_u8(h, o, v->lay.fn_ffid)) {
		if ((r = to(m, heap_ref(h, o, v->lay.fn_pc) - v->lay.pt_size, HE_PROTO, 0, 0)))
			return r;
		for (unsigned k = 0; k < n && !r; k++)
			r = to(m, heap_ref(h, o, v->u.fn_uvptr + (uint64_t)lj_refsz(v) * k), HE_UPVAL,
			       k, 0);
	} else {
		for (unsigned k = 0; k < n && !r; k++)
			r = to(m, heap_tv_gc(h, heap_u64(h, o, hl->fn_upvalue + 8 * k)), HE_UPVAL, k, 0);
	}
	return r;
}

/* A prototype's: its chunk name, its GC constants (those copied), its
 * trace. */
static int proto_edges(struct emit *m, const struct hobj *o)
{
	struct heap *h = m->h;
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	uint32_t nk = heap_u32(h, o, hl->pt_sizekgc);
	int r;

	if ((r = to(m, heap_ref(h, o, v->lay.pt_chunkname), HE_CHUNK, 0, 0)))
		return r;
	for (uint32_t k = 0; k < nk && !r; k++) {
		uint64_t at = v->lay.pt_size + (uint64_t)k * lj_refsz(v);

		if (at + lj_refsz(v) > o->rawlen)
			break;
		r = to(m, heap_ref(h, o, at), HE_KGC, nk - k, 0); /* kgc[-(nk-k)] */
	}
	return r ? r : trace_of(m, heap_u16(h, o, hl->pt_trace), HE_PTRACE, 0);
}

/* A trace's: its GC constants (IR_KGC, those copied), the traces it
 * links to, its start prototype. A trace without a number: none. */
static int trace_edges(struct emit *m, const struct hobj *o)
{
	struct heap *h = m->h;
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	uint32_t nk = heap_u32(h, o, v->u.T_nk);
	/* IR_KGC's reference: GC64, the next slot; else the instruction's
	 * op1 and op2 (ir_kgc) */
	unsigned kgc = v->lay.gc64 ? hl->ir_sizeof : 0;
	int r = 0;

	if (!heap_u16(h, o, hl->T_traceno))
		return 0;
	for (uint32_t ref = nk; ref < hl->ref_true && !r; ref++) {
		uint64_t at = v->lay.T_size + (uint64_t)(ref - nk) * hl->ir_sizeof;
		uint8_t t = heap_u8(h, o, at + v->u.ir_t), op = heap_u8(h, o, at + v->u.ir_o);

		if (at + hl->ir_sizeof > o->rawlen)
			break;
		if (op == v->u.ir_kgc)
			r = to(m, heap_ref(h, o, at + kgc), HE_TRACE, ref, 0);
		if (((1u << (t & 0x1f)) & hl->irt_is64) && op != hl->ir_knull)
			ref++;
	}
	if (!r)
		r = trace_of(m, heap_u16(h, o, hl->T_link), HE_TRACE, 0);
	if (!r)
		r = trace_of(m, heap_u16(h, o, hl->T_nextroot), HE_TRACE, 0);
	if (!r)
		r = trace_of(m, heap_u16(h, o, hl->T_nextside), HE_TRACE, 0);
	return r ? r : to(m, heap_ref(h, o, v->lay.T_startpt), HE_TRACE, 0, 0);
}

/* A thread's: its stack slots from stack + 1 + LJ_FR2 (LJ_FR2 is GC64's
 * on x86-64), then its env. Without FR2 a frame's function is marked by
 * gc_traverse_frames (after env): given here at its slot, as FR2's typed
 * function slot is, so that paths name it alike. */
static int thread_edges(struct emit *m, const struct hobj *o)
{
	struct heap *h = m->h;
	const struct lj_variant *v = h->var;
	const uint8_t *fr, *s;
	uint64_t n, nf;
	int r = 0;

	s = heap_stack(h, o, &n, &fr, &nf);
	if (v->lay.gc64)
		nf = 0; /* FR2's frames: typed functions, links of no object */
	for (uint64_t k = 1 + (uint64_t)v->lay.gc64; k < n && !r; k++) {
		uint64_t tv;
		uint32_t f = UINT32_MAX;

		memcpy(&tv, s + k * 8, 8);
		if (nf) /* the frames top first: the lowest one last */
			memcpy(&f, fr + (nf - 1) * 4, 4);
		if (f == k) {
			nf--;
			r = to(m, lj_ref(v, tv), HE_STACK, k, 0);
		} else {
			r = to(m, heap_tv_gc(h, tv), HE_STACK, k, 0);
		}
	}
	return r ? r : to(m, heap_ref(h, o, v->h.L_env), HE_ENV, 0, 0);
}

static int obj_edges(struct emit *m, uint32_t i)
{
	struct heap *h = m->h;
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	const struct hobj *o = &h->o[i];
	unsigned g = o->gct;
	int r = 0;

	if (g == hl->ttab)
		return tab_edges(m, o);
	if (g == v->lay.tfunc)
		return fn_edges(m, o);
	if (g == hl->tupval) {
		uint64_t at = heap_ref(h, o, v->u.uv_v);

		if (heap_u8(h, o, hl->uv_closed))
			return to(m, heap_tv_gc(h, heap_u64(h, o, hl->uv_tv)), HE_UVVAL, 0, 0);
		return to(m, heap_tv_gc(h, open_value(h, at)), HE_UVVAL, 1, 0);
	}
	if (g == hl->tproto)
		return proto_edges(m, o);
	if (g == v->lay.tthread)
		return thread_edges(m, o);
	if (g == hl->tudata) {
		if ((r = to(m, heap_ref(h, o, hl->ud_metatable), HE_MT, 0, 0)))
			return r;
		return to(m, heap_ref(h, o, hl->ud_env), HE_ENV, 0, 0);
	}
	if (g == hl->ttrace)
		return trace_edges(m, o);
	return 0; /* strings, cdata: no references */
}

static int root_edges(struct emit *m)
{
	struct heap *h = m->h;
	const struct lj_variant *v = h->var;
	long mt = heap_find(h, h->L);
	int r;

	/* The registry first: breadth first, its package.loaded names an
	 * object before another path of the same length does. */
	if ((r = to(m, heap_tv_gc(h, heap_g64(h, v->u.g_registrytv)), HE_ROOT, HROOT_REGISTRY, 0)))
		return r;
	if (mt >= 0 && (r = to(m, heap_ref(h, &h->o[mt], v->h.L_env), HE_ROOT, HROOT_MAINENV, 0)))
		return r;
	if ((r = to(m, h->L, HE_ROOT, HROOT_MAINTH, 0)))
		return r;
	for (unsigned k = 0; k < v->h.gcroot_max; k++)
		if ((r = to(m, heap_gref(h, v->h.g_gcroot + lj_refsz(v) * k), HE_ROOT,
			    HROOT_GCROOT, k)))
			return r;
	if ((r = to(m, heap_gref(h, v->lay.g_cur_L), HE_ROOT, HROOT_CURL, 0)))
		return r;
	for (size_t k = 0; k < h->n; k++)
		if ((h->o[k].flags & HOBJ_MMUDATA) &&
		    (r = to(m, h->o[k].addr, HE_ROOT, HROOT_MMUDATA, 0)))
			return r;
	return 0;
}

int heap_edges(struct heap *h, uint32_t i, hedge_fn fn, void *ctx)
{
	struct emit m = { .h = h, .fn = fn, .ctx = ctx };

	m.e.from = i;
	if (i == h->n)
		return root_edges(&m);
	return i < h->n ? obj_edges(&m, i) : 0;
}
