/* The snapshot file (user/heap/snapfile.c): what is written is read back
 * the same; a file cut anywhere, or with any byte changed, is refused with
 * a reason or read within the caps, and then analysed without a fault
 * (ASan/UBSan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"

#include "check.h"

uint64_t hstop_now(void)
{
	return 0;
}

static const struct lj_variant *V;

static uint64_t tv(uint64_t addr, unsigned gct)
{
	return ((uint64_t)~(uint64_t)gct << 47) | addr;
}

/* A small heap: a main thread, its env, a registry holding a string and
 * a table whose metatable is weak-keyed. */
static void build(struct heap *h)
{
	uint8_t b[512];
	uint64_t v;

	memset(h, 0, sizeof(*h));
	h->var = V;
	h->L = 0x10000;
	h->g = h->L + V->lay.gg_g;
	h->gglen = V->h.gg_size;
	h->gg = calloc(1, h->gglen);
	v = tv(0x30000, V->h.ttab);
	memcpy(h->gg + V->lay.gg_g + V->u.g_registrytv, &v, 8);
	h->gc_total = 12345;
	h->pause_ns = 7000000;

	memset(b, 0, sizeof(b));
	b[9] = (uint8_t)V->lay.tthread;
	v = 0x20000;
	memcpy(b + V->h.L_env, &v, 8);
	heap_add(h, 0x10000, b[9], b, V->sizeof_L);
	memset(b, 0, sizeof(b));
	b[9] = (uint8_t)V->h.ttab;
	heap_add(h, 0x20000, b[9], b, V->h.tab_sizeof);
	/* the registry: asize 2, [0] = "k", [1] = the weak table */
	memset(b, 0, sizeof(b));
	b[9] = (uint8_t)V->h.ttab;
	memcpy(b + V->h.tab_asize, &(uint32_t){ 2 }, 4);
	v = tv(0x40000, V->h.tstr);
	memcpy(b + V->h.tab_sizeof, &v, 8);
	v = tv(0x50000, V->h.ttab);
	memcpy(b + V->h.tab_sizeof + 8, &v, 8);
	heap_add(h, 0x30000, b[9], b, V->h.tab_sizeof + 16);
	memset(b, 0, sizeof(b));
	b[9] = (uint8_t)V->h.tstr;
	memcpy(b + V->lay.str_len, &(uint32_t){ 1 }, 4);
	b[V->h.str_sizeof] = 'k';
	heap_add(h, 0x40000, b[9], b, V->h.str_sizeof + 1);
	memset(b, 0, sizeof(b));
	b[9] = (uint8_t)V->h.ttab;
	heap_add(h, 0x50000, b[9], b, V->h.tab_sizeof);
	heap_sizes(h);
}

static int analyse(struct heap *hs, size_t n)
{
	FILE *null = fopen("/dev/null", "w");
	struct hview view = { .top = 5 };

	if (!null)
		return -1;
	for (size_t i = 0; i < n; i++) {
		heap_mark(&hs[i]);
		heap_dom(&hs[i]);
		heap_view_text(&hs[i], &view, null);
	}
	fclose(null);
	return 0;
}

/* Loads buf[0, len): 1 if it was read (then analysed and freed), 0 if
 * refused with a reason, -1 if refused without one. */
static int try_load(char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "rb");
	struct heap *back;
	char why[256] = "";
	size_t n;
	int r;

	if (!f)
		return -1;
	r = heap_load(f, &back, &n, why, sizeof(why)) == 0;
	fclose(f);
	if (r) {
		analyse(back, n);
		for (size_t i = 0; i < n; i++)
			heap_free(&back[i]);
		free(back);
	}
	return r ? 1 : why[0] ? 0 : -1;
}

int main(void)
{
	struct heap h, *back;
	size_t len, n, refused = 0, loaded = 0, retyped = 0;
	char *buf = NULL, why[256];
	FILE *f;

	V = &lj_variants[0];
	build(&h);
	f = open_memstream(&buf, &len);
	CHECK("written", f && heap_save(f, &h, 1) == 0);
	fclose(f);

	f = fmemopen(buf, len, "rb");
	CHECK("read back", heap_load(f, &back, &n, why, sizeof(why)) == 0 && n == 1);
	fclose(f);
	CHECK("the same objects, sizes computed again",
	      back[0].n == h.n && back[0].o[2].size == h.o[2].size &&
	      back[0].o[3].addr == 0x40000 && back[0].gc_total == 12345 &&
	      back[0].pause_ns == 7000000 && back[0].var == V);
	CHECK("analysed the same: 5 reached", analyse(back, n) == 0 && back[0].reached == 5);
	heap_free(&back[0]);
	free(back);

	/* cut at every length: refused, with a reason */
	for (size_t k = 1; k < len; k++)
		refused += try_load(buf, k) == 0;
	CHECK("every cut file refused with a reason", refused == len - 1);

	/* every byte changed (to 0xff and to 0x00): refused or read; read ones
	 * analysed without a fault */
	refused = 0;
	for (size_t k = 0; k < len; k++) {
		for (int val = 0; val < 2; val++) {
			char save = buf[k];
			int r;

			buf[k] = val ? (char)0xff : 0;
			r = try_load(buf, len);
			loaded += r == 1;
			refused += r == 0;
			buf[k] = save;
		}
	}
	CHECK("changed files: each refused with a reason, or read and analysed",
	      refused + loaded == 2 * len);

	/* every byte that could be a type tag made each type in turn: an
	 * object read as another type (its bytes shorter than that type's
	 * header) is analysed without a fault */
	for (size_t k = 0; k < len; k++) {
		char save = buf[k];

		if (save < 4 || save > 12)
			continue;
		for (char t = 4; t <= 12; t++) {
			buf[k] = t;
			retyped += try_load(buf, len) == 1;
		}
		buf[k] = save;
	}
	CHECK("objects read as every other type, analysed", retyped >= 5 * 8);
	CHECK("a changed count or length is refused", refused > 0);
	free(buf);
	heap_free(&h);
	return fails != 0;
}
