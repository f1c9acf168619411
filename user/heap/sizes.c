/* Objects' sizes as LuaJIT accounts them: what lj_gc.c's sweep frees
 * (lj_str_free, lj_tab_free, lj_func_free, lj_state_free, lj_udata_free,
 * lj_cdata_free, lj_trace_free, the prototype's sizept). Strings:
 * lj_str_size, the length and its NUL rounded up to 4 bytes (an older
 * 2.1's sizestring: not rounded). */
#include "heap/heap.h"
#include "target/ljref.h"

/* The FFI's size of a cdata's C type (lj_cdata_free): 0 if unknown. */
static uint64_t ctype_size(const struct heap *h, uint32_t id, int *known)
{
	const struct lj_hlayout *hl = &h->var->h;

	/* ctype_raw: through attributes to the type (CTID_MAX steps at most) */
	for (unsigned step = 0; step < LMT_HEAP_CTYPES_MAX; step++) {
		const uint8_t *ct;
		uint32_t info, size;

		if (id >= h->nctypes)
			break;
		ct = h->ctypes + (size_t)id * hl->ct_sizeof;
		__builtin_memcpy(&info, ct + hl->ct_info, 4);
		__builtin_memcpy(&size, ct + hl->ct_size, 4);
		if ((info >> hl->ct_shift) == hl->ct_attrib) {
			id = info & hl->ct_cidmask;
			continue;
		}
		*known = 1;
		return (info >> hl->ct_shift) <= hl->ct_hassize ? size : 8; /* CTSIZE_PTR */
	}
	*known = 0;
	return 0;
}

static uint64_t size_of(struct heap *h, struct hobj *o)
{
	const struct lj_variant *v = h->var;
	const struct lj_hlayout *hl = &v->h;
	unsigned g = o->gct;

	if (g == hl->tstr) {
		uint64_t len = heap_u32(h, o, v->lay.str_len);

		return hl->str_sizeof + (hl->str_round4 ? (len + 4) & ~3ull : len + 1);
	}
	if (g == hl->ttab) {
		uint64_t asize = heap_u32(h, o, hl->tab_asize), hmask = heap_u32(h, o, v->u.tab_hmask);
		int8_t colo = (int8_t)heap_u8(h, o, hl->tab_colo);
		uint64_t s = hmask ? (hmask + 1) * v->u.node_size : 0;

		if (asize && colo <= 0)
			s += asize * 8;
		return s + hl->tab_sizeof + (colo ? ((uint64_t)(uint8_t)colo & 0x7f) * 8 : 0);
	}
	if (g == v->lay.tfunc) {
		uint64_t n = heap_u8(h, o, hl->fn_nupvalues), rs = lj_refsz(v);

		/* sizeCfunc: TValues; sizeLfunc: GCRefs */
		return heap_u8(h, o, v->lay.fn_ffid) ? hl->fnc_sizeof - 8 + 8 * n
						     : hl->fnl_sizeof - rs + rs * n;
	}
	if (g == hl->tupval)
		return hl->uv_sizeof;
	if (g == hl->tproto)
		return heap_u32(h, o, hl->pt_sizept);
	if (g == v->lay.tthread) /* the main one's lua_State: GG_State's head */
		return v->sizeof_L + (uint64_t)heap_u32(h, o, hl->L_stacksize) * 8;
	if (g == hl->tudata)
		return hl->ud_sizeof + (uint64_t)heap_u32(h, o, hl->ud_len);
	if (g == hl->tcdata) {
		int known;
		uint64_t s;

		if (heap_u8(h, o, v->lay.L_gct - 1) & 0x80) /* cdataisv: GCcdataVar after */
			return (uint64_t)heap_u32(h, o, hl->cd_sizeof + hl->cdv_len) +
			       heap_u16(h, o, hl->cd_sizeof + hl->cdv_extra);
		s = ctype_size(h, heap_u16(h, o, hl->cd_ctypeid), &known);
		if (!known)
			o->flags |= HOBJ_SHORT;
		return hl->cd_sizeof + s;
	}
	if (g == hl->ttrace)
		return ((v->lay.T_size + 7) & ~7u) +
		       (uint64_t)(heap_u32(h, o, v->u.T_nins) - heap_u32(h, o, v->u.T_nk)) *
			       hl->ir_sizeof +
		       (uint64_t)heap_u16(h, o, v->u.T_nsnap) * v->u.snap_size +
		       (uint64_t)heap_u32(h, o, v->u.T_nsnapmap) * 4;
	return 0;
}

void heap_sizes(struct heap *h)
{
	for (size_t i = 0; i < h->n; i++)
		h->o[i].size = size_of(h, &h->o[i]);
}
