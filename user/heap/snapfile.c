/* The snapshot file (.lmh): the copies of a process's VMs, written by
 * heap_save and read back by heap_load, so that a snapshot taken on one
 * host is reported later, elsewhere. It holds the copy only (what
 * copy.c read); everything else is computed again from it.
 *
 * Layout (little-endian, as the host that wrote it: x86-64):
 *   "LMHEAP\0\0", u32 version (2), u32 VMs, u32 the process's ID (version 1
 *     has none: read as 0, unknown)
 *   per VM: u8 namelen, the layout variant's name (target/layout.c, chosen by name
 *     on read: the offsets that give the bytes their meaning),
 *     u64 L, g, gc_total, pause_ns, finalizer, u32 stopped_before,
 *     u64 other[HOTHER_N], u64 counts (struct hcounts, 9 of them),
 *     u32 gglen + bytes, u32 ntraces + u64 each, u32 nctypes + bytes,
 *     u64 objects; per object: u64 addr, u8 gct, u8 flags, u32 rawlen, bytes
 *
 * Read as untrusted input: every count and length is checked against the
 * caps a copy has (heap.h) and against the variant; a short or bad file is
 * one line of error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "target/caps.h"

#define LMH_MAGIC "LMHEAP\0\0"
#define LMH_VERSION 2
#define NCOUNTS 9

/* -- Writing ---------------------------------------------------------------- */

static void w(FILE *f, const void *p, size_t n, int *err)
{
	if (!*err && n && fwrite(p, 1, n, f) != n)
		*err = errno ? errno : EIO;
}

static void w64(FILE *f, uint64_t v, int *err)
{
	w(f, &v, 8, err);
}

static void w32(FILE *f, uint32_t v, int *err)
{
	w(f, &v, 4, err);
}

int heap_save(FILE *f, struct heap *hs, size_t n)
{
	uint32_t nv = 0, ver = LMH_VERSION;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		nv += hs[i].var != NULL;
	w(f, LMH_MAGIC, 8, &err);
	w32(f, ver, &err);
	w32(f, nv, &err);
	w32(f, n ? hs[0].pid : 0, &err);
	for (size_t i = 0; i < n; i++) {
		const struct heap *h = &hs[i];
		const uint64_t *c = &h->c.over_objs;
		uint8_t nl;

		if (!h->var)
			continue;
		nl = (uint8_t)strlen(h->var->name);
		w(f, &nl, 1, &err);
		w(f, h->var->name, nl, &err);
		w64(f, h->L, &err);
		w64(f, h->g, &err);
		w64(f, h->gc_total, &err);
		w64(f, h->pause_ns, &err);
		w64(f, h->finalizer, &err);
		w32(f, (uint32_t)h->stopped_before, &err);
		for (unsigned k = 0; k < HOTHER_N; k++)
			w64(f, h->other[k], &err);
		for (unsigned k = 0; k < NCOUNTS; k++)
			w64(f, c[k], &err);
		w32(f, (uint32_t)h->gglen, &err);
		w(f, h->gg, h->gglen, &err);
		w32(f, h->ntraces, &err);
		w(f, h->traces, (size_t)h->ntraces * 8, &err);
		w32(f, h->nctypes, &err);
		w(f, h->ctypes, (size_t)h->nctypes * h->var->h.ct_sizeof, &err);
		w64(f, h->n, &err);
		for (size_t k = 0; k < h->n; k++) {
			const struct hobj *o = &h->o[k];
			uint8_t tf[2] = { o->gct, (uint8_t)(o->flags & (HOBJ_MMUDATA | HOBJ_SHORT | HOBJ_MAIN)) };

			w64(f, o->addr, &err);
			w(f, tf, 2, &err);
			w32(f, o->rawlen, &err);
			w(f, heap_raw(h, o), o->rawlen, &err);
		}
	}
	if (!err && fflush(f))
		err = errno ? errno : EIO;
	return -err;
}

/* -- Reading ---------------------------------------------------------------- */

struct rd {
	FILE *f;
	const char *bad; /* the first problem, said */
};

static int r(struct rd *d, void *p, size_t n, const char *what)
{
	if (d->bad)
		return -1;
	if (n && fread(p, 1, n, d->f) != n) {
		d->bad = what;
		return -1;
	}
	return 0;
}

static uint64_t r64(struct rd *d, const char *what)
{
	uint64_t v = 0;

	r(d, &v, 8, what);
	return v;
}

static uint32_t r32(struct rd *d, const char *what)
{
	uint32_t v = 0;

	r(d, &v, 4, what);
	return v;
}

/* A VM's objects: their count, then each one's address, type, flags,
 * length and bytes (into h's arena, bounded by the copy's caps): 0, or
 * -1 with d->bad said if the file is at fault. */
static int load_objects(struct rd *d, struct heap *h)
{
	uint64_t nobj;

	nobj = r64(d, "truncated");
	if (d->bad)
		return -1;
	if (nobj > LMT_HEAP_OBJS_MAX) {
		d->bad = "more objects than a copy holds (LMT_HEAP_OBJS_MAX)";
		return -1;
	}
	for (uint64_t k = 0; k < nobj; k++) {
		uint64_t addr = r64(d, "truncated (an object)");
		uint8_t tf[2];
		uint32_t len;
		long i;

		if (r(d, tf, 2, "truncated (an object)"))
			return -1;
		len = r32(d, "truncated (an object)");
		if (d->bad)
			return -1;
		if (!addr || heap_find(h, addr) >= 0) {
			d->bad = "an object at address 0, or twice";
			return -1;
		}
		if (len > LMT_HEAP_COPY_MAX - h->alen) {
			d->bad = "more bytes than a copy holds (LMT_HEAP_COPY_MAX)";
			return -1;
		}
		if ((i = heap_add(h, addr, tf[0], NULL, 0)) < 0)
			return -1;
		h->o[i].flags = tf[1] & (HOBJ_MMUDATA | HOBJ_SHORT | HOBJ_MAIN);
		/* the bytes through the arena, in pieces: never more than read */
		while (len) {
			uint8_t buf[65536];
			uint32_t k2 = len < sizeof(buf) ? len : (uint32_t)sizeof(buf);

			if (r(d, buf, k2, "truncated (an object's bytes)") || heap_append(h, buf, k2))
				return -1;
			len -= k2;
		}
	}
	return 0;
}

/* One VM's copy from d into h: its variant, roots and counts, GG_State,
 * traces, C types and objects. 0, or -1 (d->bad says why if the file
 * is at fault). */
static int load_one(struct rd *d, struct heap *h)
{
	char name[256];
	uint8_t nl = 0;
	uint64_t *c = &h->c.over_objs;
	uint32_t n;

	memset(h, 0, sizeof(*h));
	if (r(d, &nl, 1, "truncated (a VM's header)") || r(d, name, nl, "truncated (a variant's name)"))
		return -1;
	name[nl] = 0;
	for (unsigned k = 0; k < lj_nvariants; k++)
		if (!strcmp(lj_variants[k].name, name))
			h->var = &lj_variants[k];
	if (!h->var) {
		d->bad = "a LuaJIT layout variant this luamemtrace does not know";
		return -1;
	}
	h->L = r64(d, "truncated");
	h->g = r64(d, "truncated");
	h->gc_total = r64(d, "truncated");
	h->pause_ns = r64(d, "truncated");
	h->finalizer = r64(d, "truncated");
	h->stopped_before = r32(d, "truncated") != 0;
	for (unsigned k = 0; k < HOTHER_N; k++)
		h->other[k] = r64(d, "truncated");
	for (unsigned k = 0; k < NCOUNTS; k++)
		c[k] = r64(d, "truncated");
	n = r32(d, "truncated");
	if (d->bad)
		return -1;
	if (n != h->var->h.gg_size) {
		d->bad = "a GG_State copy of the wrong size for its variant";
		return -1;
	}
	h->gglen = n;
	if (!(h->gg = malloc(n)) || r(d, h->gg, n, "truncated (GG_State)"))
		return -1;
	n = r32(d, "truncated");
	if (n > LMT_TRACENO_MAX + 1) {
		d->bad = "more traces than LuaJIT numbers";
		return -1;
	}
	h->ntraces = n;
	if (n && (!(h->traces = malloc((size_t)n * 8)) ||
		  r(d, h->traces, (size_t)n * 8, "truncated (traces)")))
		return -1;
	n = r32(d, "truncated");
	if (n > LMT_HEAP_CTYPES_MAX) {
		d->bad = "more C types than the FFI has";
		return -1;
	}
	h->nctypes = n;
	if (n && (!(h->ctypes = malloc((size_t)n * h->var->h.ct_sizeof)) ||
		  r(d, h->ctypes, (size_t)n * h->var->h.ct_sizeof, "truncated (C types)")))
		return -1;
	if (load_objects(d, h))
		return -1;
	heap_sizes(h);
	return 0;
}

int heap_load(FILE *f, struct heap **out, size_t *nout, char *why, size_t whylen)
{
	struct rd d = { .f = f };
	char magic[8];
	uint32_t ver, nv, pid = 0;
	struct heap *hs;

	*out = NULL;
	*nout = 0;
	if (r(&d, magic, 8, "not a heap snapshot (too short)") || memcmp(magic, LMH_MAGIC, 8)) {
		snprintf(why, whylen, "not a heap snapshot (luamemtrace heap -o)");
		return -1;
	}
	ver = r32(&d, "truncated");
	if (!d.bad && ver != LMH_VERSION && ver != 1) {
		snprintf(why, whylen, "snapshot version %u (this luamemtrace reads 1 to %u)", ver,
			 LMH_VERSION);
		return -1;
	}
	nv = r32(&d, "truncated");
	if (!d.bad && (nv == 0 || nv > LMT_VMS_MAX))
		d.bad = "a count of VMs out of range";
	if (ver >= 2)
		pid = r32(&d, "truncated");
	if (d.bad || !(hs = calloc(nv, sizeof(*hs)))) {
		snprintf(why, whylen, "%s", d.bad ? d.bad : "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < nv; i++) {
		if (load_one(&d, &hs[i])) {
			snprintf(why, whylen, "%s", d.bad ? d.bad : "out of memory");
			for (uint32_t k = 0; k <= i; k++)
				heap_free(&hs[k]);
			free(hs);
			return -1;
		}
	}
	if (fgetc(f) != EOF) {
		snprintf(why, whylen, "bytes after the last VM");
		for (uint32_t k = 0; k < nv; k++)
			heap_free(&hs[k]);
		free(hs);
		return -1;
	}
	for (uint32_t k = 0; k < nv; k++)
		hs[k].pid = pid;
	*out = hs;
	*nout = nv;
	return 0;
}
