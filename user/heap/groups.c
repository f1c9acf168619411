/* Groups of the text report besides those of view_text.c: cdata by C
 * type (named from the FFI's C type table the copy holds, as
 * lj_ctype_repr would write it, bounded), and the largest tables with
 * their array and hash sizes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "target/ljref.h"

/* -- C type names ------------------------------------------------------------ */

/* lj_ctype.h's kinds and flags */
enum { CT_NUM, CT_STRUCT, CT_PTR, CT_ARRAY, CT_VOID, CT_ENUM, CT_FUNC, CT_TYPEDEF, CT_ATTRIB };
#define CTF_BOOL 0x08000000u
#define CTF_FP 0x04000000u
#define CTF_UNSIGNED 0x00800000u
#define CTF_UNION 0x00800000u
#define CTF_VLA 0x00100000u

/* The C type id's entry: 0 with info, size and name's address, or -1. */
static int ctype_at(const struct heap *h, uint32_t id, uint32_t *info, uint32_t *size,
		    uint64_t *name)
{
	const struct lj_hlayout *hl = &h->var->h;
	const uint8_t *ct;

	if (!h->ctypes || id >= h->nctypes || hl->ct_name + lj_refsz(h->var) > hl->ct_sizeof)
		return -1;
	ct = h->ctypes + (size_t)id * hl->ct_sizeof;
	memcpy(info, ct + hl->ct_info, 4);
	memcpy(size, ct + hl->ct_size, 4);
	*name = lj_ref_at(h->var, ct, hl->ct_name);
	return 0;
}

/* The type's own name (a struct's tag, an enum's): its length, 0 if none
 * (or not a copied string). */
static uint32_t ctype_own(const struct heap *h, uint64_t name, const char **s)
{
	long i = name ? heap_find(h, name) : -1;
	uint32_t n;
	int cut;

	if (i < 0 || h->o[i].gct != h->var->h.tstr)
		return 0;
	*s = heap_str(h, &h->o[i], &n, &cut);
	return cut ? 0 : n;
}

/* Writes type id's name at b[*n] (cut to len): depth steps of pointers
 * and arrays at most (LMT_HEAP_CTYPE_DEPTH). */
static void ctype_put(const struct heap *h, uint32_t id, char *b, size_t len, size_t *n,
		      unsigned depth)
{
	const struct lj_hlayout *hl = &h->var->h;
	uint32_t info, size, kind, cid;
	uint64_t name;
	const char *s = NULL;
	uint32_t sl;
	int k;

	for (unsigned step = 0;; step++) { /* through attributes and typedefs */
		if (step >= LMT_HEAP_CTYPE_DEPTH || ctype_at(h, id, &info, &size, &name)) {
			k = snprintf(b + *n, len - *n, "ctype #%u", id);
			goto out;
		}
		kind = info >> hl->ct_shift;
		if (kind != CT_ATTRIB)
			break;
		id = info & hl->ct_cidmask;
	}
	cid = info & hl->ct_cidmask;
	sl = ctype_own(h, name, &s);
	switch (kind) {
	case CT_NUM:
		if (info & CTF_BOOL)
			k = snprintf(b + *n, len - *n, "bool");
		else if (info & CTF_FP)
			k = snprintf(b + *n, len - *n, size == 4 ? "float" : "double");
		else
			k = snprintf(b + *n, len - *n, "%sint%u_t", info & CTF_UNSIGNED ? "u" : "",
				     size * 8);
		break;
	case CT_VOID:
		k = snprintf(b + *n, len - *n, "void");
		break;
	case CT_STRUCT:
	case CT_ENUM: {
		const char *tag = kind == CT_ENUM ? "enum" : info & CTF_UNION ? "union" : "struct";

		if (sl)
			k = snprintf(b + *n, len - *n, "%s %.*s%s", tag, (int)sl, s,
				     info & CTF_VLA ? " (variable)" : "");
		else
			k = snprintf(b + *n, len - *n, "%s #%u", tag, id);
		break;
	}
	case CT_PTR:
	case CT_ARRAY:
		if (depth + 1 >= LMT_HEAP_CTYPE_DEPTH) {
			k = snprintf(b + *n, len - *n, "ctype #%u", id);
			break;
		}
		ctype_put(h, cid, b, len, n, depth + 1);
		if (kind == CT_PTR)
			k = snprintf(b + *n, len - *n, " *");
		else if (info & CTF_VLA)
			k = snprintf(b + *n, len - *n, "[?]");
		else
			k = snprintf(b + *n, len - *n, "[%u bytes]", size);
		break;
	case CT_FUNC:
		k = sl ? snprintf(b + *n, len - *n, "function %.*s", (int)sl, s)
		       : snprintf(b + *n, len - *n, "function #%u", id);
		break;
	default:
		k = snprintf(b + *n, len - *n, "ctype #%u", id);
	}
out:
	if (k > 0)
		*n = *n + (size_t)k < len ? *n + (size_t)k : len - 1;
}

void heap_ctype_name(const struct heap *h, uint32_t id, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	buf[0] = 0;
	ctype_put(h, id, buf, len, &n, 0);
}

/* -- cdata by C type ------------------------------------------------------------ */

struct cgrp {
	uint32_t id;
	uint64_t n, bytes;
};

static int by_cbytes(const void *a, const void *b)
{
	const struct cgrp *x = a, *y = b;

	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : (x->id > y->id) - (x->id < y->id);
}

static void cdata_groups(const struct heap *h, const struct hview *v, FILE *f)
{
	const struct lj_hlayout *hl = &h->var->h;
	struct cgrp *g = calloc(LMT_HEAP_CTYPES_MAX, sizeof(*g));
	size_t ng = 0;
	char name[256];

	if (!g)
		return;
	for (size_t i = 0; i < h->n; i++) {
		const struct hobj *o = &h->o[i];
		uint16_t id;

		if (o->gct != hl->tcdata || !(o->flags & HOBJ_REACHED))
			continue;
		id = heap_u16(h, o, hl->cd_ctypeid); /* < LMT_HEAP_CTYPES_MAX */
		g[id].id = id;
		g[id].n++;
		g[id].bytes += o->size;
	}
	for (size_t k = 0; k < LMT_HEAP_CTYPES_MAX; k++)
		if (g[k].n)
			g[ng++] = g[k];
	qsort(g, ng, sizeof(*g), by_cbytes);
	fprintf(f, "\ncdata by C type\n%10s %12s  %s\n", "objects", "bytes", "C type");
	for (size_t k = 0; k < ng && k < (size_t)v->top; k++) {
		heap_ctype_name(h, g[k].id, name, sizeof(name));
		fprintf(f, "%10" PRIu64 " %12" PRIu64 "  %s\n", g[k].n, g[k].bytes, name);
	}
	free(g);
}

/* -- Largest tables ---------------------------------------------------------------- */

static const struct heap *sort_h;

static int by_size(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint64_t x = sort_h->o[i].size, y = sort_h->o[j].size;

	return x < y ? 1 : x > y ? -1 : (i > j) - (i < j);
}

static void largest_tables(const struct heap *h, const struct hview *v, FILE *f)
{
	const struct lj_variant *var = h->var;
	uint32_t *ix = malloc((h->reached ? h->reached : 1) * sizeof(*ix));
	size_t m = 0;
	char path[1024];

	if (!ix)
		return;
	for (size_t i = 0; i < h->n && m < h->reached; i++)
		if (h->o[i].gct == var->h.ttab && (h->o[i].flags & HOBJ_REACHED))
			ix[m++] = (uint32_t)i;
	sort_h = h;
	qsort(ix, m, sizeof(*ix), by_size);
	fprintf(f, "\nlargest tables\n%12s %10s %10s  %s\n", "bytes", "array", "hash", "path");
	for (size_t k = 0; k < m && k < (size_t)v->top; k++) {
		const struct hobj *o = &h->o[ix[k]];
		uint32_t hmask = heap_u32(h, o, var->u.tab_hmask);

		heap_path(h, ix[k], path, sizeof(path));
		fprintf(f, "%12" PRIu64 " %10" PRIu32 " %10" PRIu64 "  %s\n", o->size,
			heap_u32(h, o, var->h.tab_asize), hmask ? (uint64_t)hmask + 1 : 0, path);
	}
	free(ix);
}

void heap_view_groups(struct heap *h, const struct hview *v, FILE *f)
{
	cdata_groups(h, v, f);
	largest_tables(h, v, f);
}
