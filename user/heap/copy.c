/* Copying a VM's objects out of the stopped target, or out of the image
 * of a stop (heap.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "heap/heap.h"
#include "target/ljref.h"
#include "target/proc.h"
#include "target/caps.h"

/* The copy's reads of the target, through a block cache (pages.c): the
 * one heap_copy_in was given. */
static struct hpages *pages;

static int tread(pid_t pid, uint64_t a, void *b, size_t n)
{
	return hpages_read(pages, pid, a, b, n);
}

/* Bytes read at once from a large part (an array part, a stack). */
#define CHUNK (64u << 10)

static uint64_t b64(const uint8_t *b, unsigned off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static uint32_t b32(const uint8_t *b, unsigned off)
{
	uint32_t v;

	memcpy(&v, b + off, 4);
	return v;
}

/* Appends n bytes of the target at a to the last object: 0, or -1 if
 * they could not all be read or kept (the object marked short). */
static int append_from(pid_t pid, struct heap *h, uint64_t a, uint64_t n)
{
	static uint8_t buf[CHUNK];

	while (n) {
		size_t k = n < CHUNK ? (size_t)n : CHUNK;

		if (tread(pid, a, buf, k) || heap_append(h, buf, k)) {
			h->o[h->n - 1].flags |= HOBJ_SHORT;
			return -1;
		}
		a += k;
		n -= k;
	}
	return 0;
}

/* The bytes of an object of type gct read whole before its parts (a
 * function's up to its upvalues, read by copy_parts) into *hdr: 0, or -1
 * if gct is not a GC type. */
static int hdr_size(const struct lj_variant *v, unsigned gct, unsigned *hdr)
{
	const struct lj_hlayout *hl = &v->h;

	if (gct == hl->ttab)
		*hdr = hl->tab_sizeof;
	else if (gct == v->lay.tfunc)
		*hdr = hl->fn_upvalue;
	else if (gct == hl->tupval)
		*hdr = hl->uv_sizeof;
	else if (gct == hl->tproto)
		*hdr = v->lay.pt_size;
	else if (gct == v->lay.tthread)
		*hdr = v->sizeof_L;
	else if (gct == hl->tudata)
		*hdr = hl->ud_sizeof;
	else if (gct == hl->tcdata)
		*hdr = hl->cd_sizeof;
	else if (gct == hl->ttrace)
		*hdr = v->lay.T_size;
	else
		return -1;
	return 0;
}

/* The frames of thread i, whose n stack slots from st were just copied:
 * appends their link slots as uint32 indexes (heap.h's heap_stack), from
 * base - 1 down to slot LJ_FR2 (the thread's own first slot, or FR2's
 * two): a Lua frame's caller is 1 + LJ_FR2 + A of the call before its PC
 * (read from the target) below it, any other's its link's size
 * (lj_frame.h's frame_prevl, frame_prevd). The link is the slot's 64 bits
 * with FR2 (GC64), its high 32 without, where lj_gc.c's
 * gc_traverse_frames marks the frame's untyped function (the low 32).
 * Each step goes down: n steps at most. A link that does not, or a PC
 * not read, ends the walk: without FR2 the thread is then short (its
 * functions unmarked); with FR2 only the names of its locals are lost. */
static void copy_frames(pid_t pid, struct heap *h, long i, uint64_t st, uint64_t base,
			uint64_t n)
{
	const uint64_t fr2 = h->var->lay.gc64;
	uint64_t k = base > st && !((base - st) % 8) ? (base - st) / 8 - 1 : 0;

	if (k >= n || k < fr2) {
		if (!fr2)
			h->o[i].flags |= HOBJ_SHORT;
		return;
	}
	while (k > fr2) {
		uint32_t slot = (uint32_t)k, ins;
		uint64_t tv, d;
		int64_t link;

		memcpy(&tv, heap_raw(h, &h->o[i]) + h->var->sizeof_L + k * 8, 8);
		if (heap_append(h, &slot, 4))
			return; /* marked short */
		link = lj_frame_link(h->var, tv);
		if (!(link & LJ_FRAME_TYPE)) { /* FRAME_LUA: its link a PC */
			if (tread(pid, lj_frame_pc(h->var, link) - 4u, &ins, 4))
				break;
			d = 1 + fr2 + (ins >> 8 & 0xff); /* bc_a */
		} else {
			d = link > 0 ? ((uint64_t)link & ~7ULL) / 8 : 0; /* frame_sized */
		}
		if (!d || d > k - fr2)
			break;
		k -= d;
	}
	if (k != fr2 && !fr2)
		h->o[i].flags |= HOBJ_SHORT;
}

/* The parts of object i (type gct, at a, its header in b) that live
 * outside it, appended to the copy: a table's array and nodes, a
 * function's upvalues, a prototype's constants and upvalue names, a
 * thread's stack, a cdata's GCcdataVar, a trace's constants. Each to its
 * cap; an object cut short is flagged HOBJ_SHORT. */
static void copy_parts(pid_t pid, struct heap *h, long i, uint64_t a, unsigned gct,
		       const uint8_t *b)
{
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;

	if (gct == hl->ttab) {
		uint64_t asize = b32(b, hl->tab_asize), hmask = b32(b, v->u.tab_hmask);
		uint64_t na = asize < LMT_HEAP_TAB_SLOTS_MAX ? asize : LMT_HEAP_TAB_SLOTS_MAX;
		uint64_t nn = hmask ? hmask + 1 : 0;

		if (nn > LMT_HEAP_TAB_SLOTS_MAX)
			nn = LMT_HEAP_TAB_SLOTS_MAX;
		if (na < asize || nn < (hmask ? hmask + 1 : 0))
			h->o[i].flags |= HOBJ_SHORT;
		if (!append_from(pid, h, lj_ref_at(v, b, hl->tab_array), na * 8) && nn)
			append_from(pid, h, lj_ref_at(v, b, v->u.tab_node), nn * v->u.node_size);
	} else if (gct == v->lay.tfunc) {
		unsigned nup = b[hl->fn_nupvalues];
		uint64_t end = v->u.fn_uvptr + (uint64_t)nup * lj_refsz(v);

		if (b[v->lay.fn_ffid]) /* C: TValues from fn_upvalue */
			append_from(pid, h, a + hl->fn_upvalue, (uint64_t)nup * 8);
		else /* Lua: uvptr[] from fn_uvptr, those past the header read */
			append_from(pid, h, a + hl->fn_upvalue,
				    end > hl->fn_upvalue ? end - hl->fn_upvalue : 0);
	} else if (gct == hl->tproto) {
		uint64_t nk = b32(b, hl->pt_sizekgc), k = lj_ref_at(v, b, hl->pt_k);
		unsigned rs = lj_refsz(v);

		if (nk > LMT_HEAP_TAB_SLOTS_MAX) {
			h->o[i].flags |= HOBJ_SHORT;
			nk = 0;
		}
		if (!append_from(pid, h, k - nk * rs, nk * rs) && !(h->o[i].flags & HOBJ_SHORT)) {
			uint64_t uvi = lj_ref_at(v, b, hl->pt_uvinfo);
			uint64_t end = a + b32(b, hl->pt_sizept);
			uint8_t nm[LMT_HEAP_DEBUG_KEEP];
			ssize_t got = 0;

			/* the names, as much of them as is readable, to the
			 * prototype's end and the cap */
			if (uvi > a && uvi < end)
				got = hpages_read_some(pages, pid, uvi, nm,
						       end - uvi < sizeof(nm) ? end - uvi : sizeof(nm));
			if (got > 0)
				heap_append(h, nm, (size_t)got);
		}
	} else if (gct == v->lay.tthread) {
		uint64_t st = lj_ref_at(v, b, v->lay.L_stack), top = b64(b, hl->L_top);
		uint64_t n = top >= st ? (top - st) / 8 : 0;

		if (top < st || n > LMT_HEAP_STACK_MAX) {
			h->o[i].flags |= HOBJ_SHORT;
			n = n > LMT_HEAP_STACK_MAX ? LMT_HEAP_STACK_MAX : 0;
		}
		if (!append_from(pid, h, st, n * 8))
			copy_frames(pid, h, i, st, b64(b, v->lay.L_base), n);
	} else if (gct == hl->tcdata && (b[v->lay.L_gct - 1] & 0x80)) {
		append_from(pid, h, a - hl->cdv_sizeof, hl->cdv_sizeof); /* GCcdataVar */
	} else if (gct == hl->ttrace) {
		uint64_t nk = b32(b, v->u.T_nk), bias = v->u.ref_bias;

		if (nk > bias || bias - nk > LMT_TRACE_IR_MAX) {
			h->o[i].flags |= HOBJ_SHORT;
			nk = bias;
		}
		append_from(pid, h, b64(b, v->u.T_ir) + nk * hl->ir_sizeof,
			    (bias - nk) * hl->ir_sizeof);
	}
}

/* Copies the object at a: its index (or -1 if not copied), *next its
 * nextgc (0 if unreadable). */
static long copy_obj(pid_t pid, struct heap *h, uint64_t a, uint64_t *next)
{
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	uint8_t b[256];
	unsigned gct, hdr;
	long i;

	*next = 0;
	if (tread(pid, a, b, 16)) {
		h->c.unreadable++;
		return -1;
	}
	*next = lj_ref_at(v, b, 0); /* nextgc */
	gct = b[v->lay.L_gct];
	if (gct == hl->tstr) {
		uint32_t len;

		if (tread(pid, a, b, hl->str_sizeof)) {
			h->c.unreadable++;
			return -1;
		}
		len = b32(b, v->lay.str_len);
		if ((i = heap_add(h, a, (uint8_t)gct, b, hl->str_sizeof)) < 0)
			return -1;
		append_from(pid, h, a + hl->str_sizeof,
			    len < LMT_HEAP_STR_KEEP ? len : LMT_HEAP_STR_KEEP);
		return i;
	}
	if (hdr_size(v, gct, &hdr)) {
		h->c.bad_type++;
		return -1;
	}
	if (hdr > sizeof(b) || tread(pid, a, b, hdr)) {
		h->c.unreadable++;
		return -1;
	}
	if ((i = heap_add(h, a, (uint8_t)gct, b, hdr)) < 0)
		return -1;
	copy_parts(pid, h, i, a, gct, b);
	if (h->o[i].flags & HOBJ_SHORT)
		h->c.short_objs++;
	return i;
}

/* Does a copy made while the target runs end here (pages->running)? */
static int run_over(const struct heap *h)
{
	return (pages->running &&
		(h->c.unreadable + h->c.bad_type + h->c.list_cut > LMT_HEAP_RUN_JUNK ||
		 h->alen > pages->allow)) ||
	       (pages->frozen && pages->unv_over); /* rejected whatever follows */
}

/* Walks a list linked by nextgc from a, up to (not past) stop, or to 0;
 * a circular one (stop == its first) ends back at it. */
static void walk_list(pid_t pid, struct heap *h, uint64_t a, uint64_t stop, uint8_t flag,
		      uint64_t deadline)
{
	for (uint64_t n = 0; a; n++) {
		uint64_t next;
		long i;

		if (n >= LMT_HEAP_OBJS_MAX || heap_find(h, a) >= 0) {
			h->c.list_cut++; /* a list that loops or repeats */
			return;
		}
		if ((!(n & 1023) && boot_ns() > deadline) || run_over(h)) {
			h->c.timed_out = 1;
			return;
		}
		i = copy_obj(pid, h, a, &next);
		if (i >= 0)
			h->o[i].flags |= flag;
		if (next == stop)
			return;
		a = next;
	}
}

/* The string table's chains: GCRef anchors (the low bit of one marks
 * secondary hashing, lj_str.c). */
static void walk_strings(pid_t pid, struct heap *h, uint64_t deadline)
{
	const struct lj_variant *v = h->var;
	uint64_t tab = heap_g64(h, v->h.g_str_tab); /* GCRef *: a pointer */
	uint64_t n = (uint64_t)heap_g32(h, v->h.g_str_mask) + 1;
	unsigned rs = lj_refsz(v), per = CHUNK / 8;
	static uint8_t buf[CHUNK];

	if (!tab)
		return;
	if (n > LMT_HEAP_STRTAB_MAX) {
		h->c.list_cut++;
		n = LMT_HEAP_STRTAB_MAX;
	}
	for (uint64_t s = 0; s < n && !h->c.timed_out; s += per) {
		uint64_t k = n - s < per ? n - s : per;

		if (tread(pid, tab + s * rs, buf, k * rs)) {
			h->c.unreadable++;
			return;
		}
		for (uint64_t j = 0; j < k && !h->c.timed_out; j++)
			walk_list(pid, h, lj_ref_at(v, buf, j * rs) & ~(uint64_t)1, 0, 0, deadline);
	}
}

/* Open upvalues: not on gc.root (closing one moves it there), but on
 * g->uvhead's circular list, linked by uv->next. */
static void walk_open_upvalues(pid_t pid, struct heap *h, uint64_t deadline)
{
	const struct lj_hlayout *hl = &h->var->h;
	uint64_t head = h->g + hl->g_uvhead, a = heap_gref(h, hl->g_uvhead + hl->uv_next);

	for (uint64_t n = 0; a && a != head; n++) {
		uint64_t next;
		long i;

		if (n >= LMT_HEAP_OBJS_MAX || heap_find(h, a) >= 0) {
			h->c.list_cut++;
			return;
		}
		if ((!(n & 1023) && boot_ns() > deadline) || run_over(h)) {
			h->c.timed_out = 1;
			return;
		}
		i = copy_obj(pid, h, a, &next);
		if (i < 0 || h->o[i].gct != hl->tupval)
			return; /* counted by copy_obj, or a list that lies */
		a = heap_ref(h, &h->o[i], hl->uv_next);
	}
}

static unsigned fls32(uint32_t x)
{
	return 31u - (unsigned)__builtin_clz(x);
}

/* A pointer of g->tmpbuf at off of g: g_tmpbuf_sz bytes (an older 2.1's
 * SBuf holds MRefs). */
static uint64_t tmpbuf_ptr(const struct heap *h, unsigned off)
{
	return h->var->h.g_tmpbuf_sz == 4 ? heap_g32(h, off) : heap_g64(h, off);
}

/* The VM's accounted memory besides its objects (lj_state.c's close). */
static void copy_other(pid_t pid, struct heap *h)
{
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	unsigned J = v->lay.gg_J - v->lay.gg_g; /* J from g */
	uint64_t e = tmpbuf_ptr(h, hl->g_tmpbuf_e), b = tmpbuf_ptr(h, hl->g_tmpbuf_b);
	uint64_t cts = heap_gref(h, hl->g_ctype_state);
	uint32_t ntr = heap_g32(h, J + hl->J_sizetrace), num;
	unsigned rs = lj_refsz(v);

	h->other[HOTHER_GG] = hl->gg_size - v->sizeof_L;
	h->other[HOTHER_STRTAB] = ((uint64_t)heap_g32(h, hl->g_str_mask) + 1) * rs;
	h->other[HOTHER_TMPBUF] = e >= b ? e - b : 0;
	h->other[HOTHER_JIT] = (uint64_t)ntr * rs +
			       (uint64_t)heap_g32(h, J + hl->J_sizesnap) * v->u.snap_size +
			       (uint64_t)heap_g32(h, J + hl->J_sizesnapmap) * 4 +
			       (uint64_t)(heap_g32(h, J + hl->J_irtoplim) -
					  heap_g32(h, J + hl->J_irbotlim)) * hl->ir_sizeof;
	if (hl->g_gc_lightudseg && heap_gref(h, hl->g_gc_lightudseg)) { /* LJ_64 */
		num = h->gg[v->lay.gg_g + hl->g_gc_lightudnum];
		h->other[HOTHER_LIGHTUD] = (num ? 2u << fls32(num) : 2u) * 4;
	}
	/* J->trace[] (GCRef *): trace numbers to GCtrace addresses, widened
	 * in place from the last */
	if (ntr > LMT_TRACENO_MAX + 1)
		ntr = LMT_TRACENO_MAX + 1;
	if (ntr && (h->traces = calloc(ntr, 8)) &&
	    !tread(pid, heap_g64(h, J + v->lay.J_trace), h->traces, (size_t)ntr * rs)) {
		for (uint32_t t = ntr; t-- > 0;)
			h->traces[t] = lj_ref_at(v, h->traces, (size_t)t * rs);
		h->ntraces = ntr;
	}
	if (cts) {
		uint8_t c[1024];
		uint32_t nt;

		if (hl->cts_sizeof > sizeof(c) || tread(pid, cts, c, hl->cts_sizeof)) {
			h->c.unreadable++;
			return;
		}
		nt = b32(c, hl->cts_sizetab);
		h->finalizer = b64(c, hl->cts_finalizer);
		h->other[HOTHER_CTS] = hl->cts_sizeof + (uint64_t)nt * hl->ct_sizeof +
				       (uint64_t)b32(c, hl->cts_cb_sizeid) * 2;
		if (nt > LMT_HEAP_CTYPES_MAX)
			nt = LMT_HEAP_CTYPES_MAX;
		if ((h->ctypes = malloc((size_t)nt * hl->ct_sizeof)) &&
		    !tread(pid, b64(c, hl->cts_tab), h->ctypes, (size_t)nt * hl->ct_sizeof))
			h->nctypes = nt;
	}
}

int heap_copy(pid_t pid, const struct lj_variant *var, uint64_t L, uint64_t deadline,
	      struct heap *h)
{
	struct hpages pg = { 0 };
	int r;

	memset(h, 0, sizeof(*h));
	r = heap_copy_in(pid, var, L, deadline, &pg, h);

	hpages_free(&pg);
	return r;
}

int heap_copy_in(pid_t pid, const struct lj_variant *var, uint64_t L, uint64_t deadline,
		 struct hpages *pg, struct heap *h)
{
	const struct lj_hlayout *hl = &var->h;
	struct heap r = *h; /* its reserved room, kept */
	uint64_t mm;

	pages = pg;
	memset(h, 0, sizeof(*h));
	h->o = r.o;
	h->cap = r.cap;
	h->arena = r.arena;
	h->acap = r.acap;
	h->at = r.at;
	h->var = var;
	h->L = L;
	h->g = L + var->lay.gg_g;
	h->gglen = hl->gg_size;
	if (!(h->gg = malloc(h->gglen)))
		return -ENOMEM;
	if (tread(pid, L, h->gg, h->gglen))
		return -EIO;
	h->gc_total = heap_gref(h, hl->g_gc_total); /* GCSize: a reference's width */
	hpages_allow(pg, h->gc_total);
	copy_other(pid, h);
	walk_list(pid, h, heap_gref(h, hl->g_gc_root), 0, 0, deadline);
	if ((mm = heap_gref(h, hl->g_gc_mmudata))) {
		uint8_t w[8] = { 0 };
		uint64_t first;

		tread(pid, mm, w, lj_refsz(var)); /* the last one's next: the first */
		first = lj_ref_at(var, w, 0);
		walk_list(pid, h, first, first, HOBJ_MMUDATA, deadline);
	}
	walk_open_upvalues(pid, h, deadline);
	walk_strings(pid, h, deadline);
	{
		long m = heap_find(h, L);

		if (m >= 0)
			h->o[m].flags |= HOBJ_MAIN;
	}
	heap_sizes(h);
	return 0;
}
