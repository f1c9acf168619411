/* The copy of a heap: objects, their bytes, the index by address. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "target/ljref.h"

const char *const heap_other_name[HOTHER_N] = {
	"GG_State less the main lua_State",
	"string hash table",
	"temporary buffer (g->tmpbuf)",
	"JIT arrays (traces, IR, snapshots)",
	"FFI C type state",
	"lightuserdata segments",
};

const char *heap_type_name(unsigned gct)
{
	static const char *const n[] = { "?", "?", "?", "?", "string", "upvalue",
					 "thread", "prototype", "function", "trace",
					 "cdata", "table", "userdata" };
	return gct < sizeof(n) / sizeof(n[0]) ? n[gct] : "?";
}

/* -- Reading the copy ------------------------------------------------------ */

static uint64_t rd(const uint8_t *b, size_t len, uint64_t off, unsigned w)
{
	uint64_t v = 0;

	if (off > len || len - off < w)
		return 0;
	memcpy(&v, b + off, w);
	return v;
}

uint64_t heap_u64(const struct heap *h, const struct hobj *o, uint64_t off)
{
	return rd(heap_raw(h, o), o->rawlen, off, 8);
}

uint32_t heap_u32(const struct heap *h, const struct hobj *o, uint64_t off)
{
	return (uint32_t)rd(heap_raw(h, o), o->rawlen, off, 4);
}

uint16_t heap_u16(const struct heap *h, const struct hobj *o, uint64_t off)
{
	return (uint16_t)rd(heap_raw(h, o), o->rawlen, off, 2);
}

uint8_t heap_u8(const struct heap *h, const struct hobj *o, uint64_t off)
{
	return (uint8_t)rd(heap_raw(h, o), o->rawlen, off, 1);
}

uint64_t heap_g64(const struct heap *h, unsigned off)
{
	return rd(h->gg, h->gglen, (uint64_t)h->var->lay.gg_g + off, 8);
}

uint32_t heap_g32(const struct heap *h, unsigned off)
{
	return (uint32_t)rd(h->gg, h->gglen, (uint64_t)h->var->lay.gg_g + off, 4);
}

uint64_t heap_ref(const struct heap *h, const struct hobj *o, uint64_t off)
{
	return rd(heap_raw(h, o), o->rawlen, off, lj_refsz(h->var));
}

uint64_t heap_gref(const struct heap *h, unsigned off)
{
	return rd(h->gg, h->gglen, (uint64_t)h->var->lay.gg_g + off, lj_refsz(h->var));
}

uint64_t heap_tv_gc(const struct heap *h, uint64_t tv)
{
	uint32_t it = (uint32_t)lj_itype(h->var, tv);

	/* tvisgcv: LJ_TSTR (~4) to LJ_TUDATA (~12) */
	return (uint32_t)(it - 0xfffffffcu) > 0xfffffff6u ? lj_tv_gc(h->var, tv) : 0;
}

const uint8_t *heap_stack(const struct heap *h, const struct hobj *th, uint64_t *nslot,
			  const uint8_t **frames, uint64_t *nframe)
{
	const struct lj_variant *v = h->var;
	uint64_t st = heap_ref(h, th, v->lay.L_stack), top = heap_u64(h, th, v->h.L_top);
	uint64_t n = top >= st ? (top - st) / 8 : 0;
	uint64_t have = th->rawlen > v->sizeof_L ? th->rawlen - v->sizeof_L : 0;

	if (n > LMT_HEAP_STACK_MAX)
		n = LMT_HEAP_STACK_MAX;
	*nslot = n < have / 8 ? n : have / 8;
	*frames = heap_raw(h, th) + v->sizeof_L + *nslot * 8;
	*nframe = *nslot == n ? (have - n * 8) / 4 : 0;
	return heap_raw(h, th) + v->sizeof_L;
}

long heap_find(const struct heap *h, uint64_t addr)
{
	void *v = addr ? u64map_get(&h->at, addr) : NULL;

	return v ? (long)((uintptr_t)v - 1) : -1;
}

const char *heap_str(const struct heap *h, const struct hobj *o, uint32_t *len, int *cut)
{
	const struct lj_hlayout *hl = &h->var->h;
	uint32_t n = heap_u32(h, o, h->var->lay.str_len);
	uint32_t kept = o->rawlen > hl->str_sizeof ? o->rawlen - hl->str_sizeof : 0;

	*cut = n > kept;
	*len = n < kept ? n : kept;
	return (const char *)heap_raw(h, o) + hl->str_sizeof;
}

/* -- Building it ----------------------------------------------------------- */

static int arena_fit(struct heap *h, size_t len)
{
	size_t nc;
	uint8_t *na;

	if (h->alen + len > LMT_HEAP_COPY_MAX)
		return -1;
	if (h->arena && h->alen + len <= h->acap)
		return 0;
	nc = h->acap ? h->acap : (64u << 10);
	while (nc < h->alen + len)
		nc *= 2;
	if (!(na = realloc(h->arena, nc)))
		return -2;
	h->arena = na;
	h->acap = nc;
	return 0;
}

long heap_add(struct heap *h, uint64_t addr, uint8_t gct, const void *raw, size_t len)
{
	struct hobj *o;
	int err = 0, r;

	if (h->n >= LMT_HEAP_OBJS_MAX) {
		h->c.over_objs++;
		return -1;
	}
	if ((r = arena_fit(h, len))) {
		h->c.over_bytes += r == -1;
		return r;
	}
	if (h->n == h->cap) {
		size_t nc = h->cap ? 2 * h->cap : 256;
		struct hobj *nv = realloc(h->o, nc * sizeof(*nv));

		if (!nv)
			return -2;
		h->o = nv;
		h->cap = nc;
	}
	u64map_put(&h->at, addr, (void *)(uintptr_t)(h->n + 1), &err);
	if (err)
		return -2;
	o = &h->o[h->n];
	memset(o, 0, sizeof(*o));
	o->addr = addr;
	o->gct = gct;
	o->raw = h->alen;
	o->rawlen = (uint32_t)len;
	if (len)
		memcpy(h->arena + h->alen, raw, len);
	h->alen += len;
	return (long)h->n++;
}

int heap_reserve(struct heap *h, size_t n, size_t bytes)
{
	if (n > LMT_HEAP_OBJS_MAX)
		n = LMT_HEAP_OBJS_MAX;
	if (bytes > LMT_HEAP_COPY_MAX)
		bytes = LMT_HEAP_COPY_MAX;
	if (n > h->cap) {
		struct hobj *nv = realloc(h->o, n * sizeof(*nv));

		if (!nv)
			return -1;
		h->o = nv;
		h->cap = n;
		memset(h->o + h->n, 0, (n - h->n) * sizeof(*nv));
	}
	if (bytes > h->acap) {
		uint8_t *na = realloc(h->arena, bytes);

		if (!na)
			return -1;
		h->arena = na;
		h->acap = bytes;
		memset(h->arena + h->alen, 0, bytes - h->alen);
	}
	return u64map_reserve(&h->at, n);
}

int heap_append(struct heap *h, const void *raw, size_t len)
{
	struct hobj *o = &h->o[h->n - 1];
	int r;

	if ((uint64_t)o->rawlen + len > UINT32_MAX || (r = arena_fit(h, len))) {
		o->flags |= HOBJ_SHORT;
		return -1;
	}
	memcpy(h->arena + h->alen, raw, len);
	h->alen += len;
	o->rawlen += (uint32_t)len;
	return 0;
}

void heap_free(struct heap *h)
{
	free(h->gg);
	free(h->o);
	free(h->arena);
	free(h->traces);
	free(h->ctypes);
	free(h->par);
	free(h->wk);
	free(h->thr);
	free(h->idom);
	free(h->retained);
	if (h->join_free)
		h->join_free(h->join);
	u64map_free(&h->at, NULL);
	memset(h, 0, sizeof(*h));
}
