/* VM discovery. lua_newstate() allocates the main lua_State and its
 * global_State together (GG_State), and each points at the other:
 * L->glref == g == L + sizeof(lua_State) and g->mainthref == L. That pair
 * of self-references, plus type tags and a sane vmstate, identifies a VM
 * and its layout variant in raw memory. References are read at the
 * variant's width (target/ljref.h): 64 bits with GC64, else 32.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/caps.h"
#include "target/ljref.h"
#include "target/vmscan.h"

#define CHUNK (1u << 20)

static uint64_t rd64(const uint8_t *b, unsigned off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return v;
}

static int is_exec(const struct pmaps *m, uint64_t addr)
{
	const struct pmap *p = pmaps_find(m, addr);
	return p && p->perms[2] == 'x';
}

/* Checks variant v at L. 0 if it holds; else writes why. */
static int validate(pid_t pid, const struct pmaps *m,
		    const struct lj_variant *v, uint64_t L, struct vminfo *out,
		    char *why, size_t whylen)
{
	const struct lj_layout *lay = &v->lay;
	uint8_t gg[512];
	uint64_t g = L + lay->gg_g, mainth, curL, curg;
	uint8_t gct;
	int32_t vmstate;
	uint32_t st;

	if (proc_read(pid, L, gg, sizeof(gg))) {
		snprintf(why, whylen, "unreadable memory at 0x%llx",
			 (unsigned long long)L);
		return -1;
	}
	if (gg[lay->L_gct] != lay->tthread) {
		snprintf(why, whylen, "lua_State type tag 0x%02x at 0x%llx",
			 gg[lay->L_gct], (unsigned long long)L);
		return -1;
	}
	if (lj_ref_at(v, gg, lay->L_glref) != g) {
		snprintf(why, whylen, "L->glref 0x%llx, expected 0x%llx",
			 (unsigned long long)lj_ref_at(v, gg, lay->L_glref),
			 (unsigned long long)g);
		return -1;
	}
	mainth = lj_ref_at(v, gg, lay->gg_g + lay->g_mainthref);
	if (mainth != L) {
		snprintf(why, whylen, "g->mainthref 0x%llx, expected 0x%llx",
			 (unsigned long long)mainth, (unsigned long long)L);
		return -1;
	}
	memcpy(&vmstate, gg + lay->gg_g + lay->g_vmstate, 4);
	st = ~(uint32_t)vmstate;
	/* 0: a fresh VM (GG_State is zeroed) that has not switched state yet. */
	if (vmstate < 0 && st >= lay->nvmst) {
		snprintf(why, whylen, "vmstate %d out of range", vmstate);
		return -1;
	}
	out->allocf = rd64(gg, lay->gg_g + lay->g_allocf);
	out->allocd = rd64(gg, lay->gg_g + lay->g_allocd);
	if (!is_exec(m, out->allocf)) {
		snprintf(why, whylen, "allocf 0x%llx is not in executable memory",
			 (unsigned long long)out->allocf);
		return -1;
	}
	curL = lj_ref_at(v, gg, lay->gg_g + lay->g_cur_L);
	if (proc_read(pid, curL + lay->L_gct, &gct, 1) ||
	    lj_read_ref(pid, v, curL + lay->L_glref, &curg) ||
	    gct != lay->tthread || curg != g) {
		snprintf(why, whylen, "g->cur_L 0x%llx is not a thread of this VM",
			 (unsigned long long)curL);
		return -1;
	}
	out->L = L;
	out->g = g;
	out->vmstate = vmstate;
	out->var = v;
	return 0;
}

/* -- Shapes, for an unknown build's line ----------------------------------- */

/* A main lua_State of any size in [SHAPE_LMIN, SHAPE_LMAX) as either
 * reference width lays it out (lj_obj.h): a thread's type tag (gct,
 * ~LJ_TTHREAD) and glref pointing just past it, at its global_State,
 * which points back at it (mainthref) in its first SHAPE_GWIN bytes.
 * GC64: gct at 9, glref 64 bits at 16; else gct at 5, glref 32 bits at 8,
 * every GC object below 4 GiB. A chance match is rare: only one width
 * seen and not the other tells it. b holds len bytes from L. */
#define SHAPE_LMIN 48
#define SHAPE_LMAX 256
#define SHAPE_GWIN 256
#define SHAPE_GCT 6

static int shape64(const uint8_t *b, size_t len, uint64_t L)
{
	uint64_t d = len >= 24 ? rd64(b, 16) - L : 0;

	if (b[9] != SHAPE_GCT || d - SHAPE_LMIN >= SHAPE_LMAX - SHAPE_LMIN ||
	    d + SHAPE_GWIN > len)
		return 0;
	for (unsigned o = 0; o < SHAPE_GWIN; o += 8)
		if (rd64(b, (unsigned)d + o) == L)
			return 1;
	return 0;
}

static int shape32(const uint8_t *b, size_t len, uint64_t L)
{
	uint32_t gl = 0, w;
	uint64_t d;

	if (len >= 12)
		memcpy(&gl, b + 8, 4);
	d = (uint32_t)(gl - (uint32_t)L);
	if (L >= (1ULL << 32) || b[5] != SHAPE_GCT ||
	    d - SHAPE_LMIN >= SHAPE_LMAX - SHAPE_LMIN || d + SHAPE_GWIN > len)
		return 0;
	for (unsigned o = 0; o < SHAPE_GWIN; o += 4) {
		memcpy(&w, b + d + o, 4);
		if (w == (uint32_t)L)
			return 1;
	}
	return 0;
}

void vm_shape_at(pid_t pid, uint64_t L, size_t *n64, size_t *n32)
{
	uint8_t b[SHAPE_LMAX + SHAPE_GWIN];

	if (proc_read(pid, L, b, sizeof(b)))
		return;
	*n64 += shape64(b, sizeof(b), L);
	*n32 += shape32(b, sizeof(b), L);
}

const char *vm_refs_seen(size_t n64, size_t n32)
{
	if (n32 && !n64)
		return "32-bit references (GC64 off)";
	if (n64 && !n32)
		return "64-bit references (GC64)";
	return "reference width not told";
}

/* -- Variants -------------------------------------------------------------- */

static int want(const struct lj_variant *v, const char *variant)
{
	return !variant || !strcmp(v->name, variant);
}

/* A VM found, unless known (a set: the scan stays linear); at most
 * LMT_VMS_MAX (target/caps.h). */
static int push(struct vmscan *s, const struct vminfo *vi)
{
	struct vminfo *nv;
	int r = u64set_add(&s->seen, vi->L);

	if (r <= 0)
		return r < 0 ? -ENOMEM : 0;
	if (!s->n && !(s->v = malloc(LMT_VMS_MAX * sizeof(*nv))))
		return -ENOMEM;
	s->v[s->n++] = *vi;
	return 0;
}

static int scannable(const struct pmap *p)
{
	if (strcmp(p->perms, "rw-p"))
		return 0;
	return strcmp(p->path, "[vvar]") && strcmp(p->path, "[vsyscall]") &&
	       strcmp(p->path, "[stack]") && strncmp(p->path, "[vvar", 5);
}

/* The idea of the variants of reference width gc64 of a main lua_State
 * whose L->glref is at word address at and holds w (read at that width):
 * pushed if it validates. */
static int consider(pid_t pid, const struct pmaps *m, const char *variant,
		    struct vmscan *s, uint64_t at, uint64_t w, int gc64)
{
	for (unsigned k = 0; k < lj_nvariants; k++) {
		const struct lj_variant *v = &lj_variants[k];
		const struct lj_layout *lay = &v->lay;
		struct vminfo vi;
		char why[160];

		/* w would be L->glref == L + gg_g. */
		if (lay->gc64 != gc64 || w != at - lay->L_glref + lay->gg_g ||
		    !want(v, variant))
			continue;
		s->candidates++;
		/* Past the cap: counted, not read. */
		if (s->n >= LMT_VMS_MAX) {
			s->over++;
			continue;
		}
		if (validate(pid, m, v, at - lay->L_glref, &vi, why, sizeof(why))) {
			if (!s->first_reject[0])
				snprintf(s->first_reject, sizeof(s->first_reject),
					 "%.60s: %.160s", v->name, why);
			continue;
		}
		int err = push(s, &vi);
		if (err)
			return err;
	}
	return 0;
}

int vm_scan(pid_t pid, const struct pmaps *m, const char *variant,
	    struct vmscan *s)
{
	uint8_t *buf = malloc(CHUNK);
	/* per width: [0] 32-bit references, [1] GC64 */
	uint64_t dmin[2] = { UINT64_MAX, UINT64_MAX }, dmax[2] = { 0, 0 }, dspan[2];
	int err = 0;

	memset(s, 0, sizeof(*s));
	if (!buf)
		return -ENOMEM;
	/* L->glref - &L->glref, per variant: their range, per width (a
	 * width no variant has keeps an empty one). */
	for (unsigned k = 0; k < lj_nvariants; k++) {
		const struct lj_layout *lay = &lj_variants[k].lay;
		uint64_t d = lay->gg_g - lay->L_glref;
		unsigned wd = lay->gc64 ? 1 : 0;

		dmin[wd] = d < dmin[wd] ? d : dmin[wd];
		dmax[wd] = d > dmax[wd] ? d : dmax[wd];
	}
	for (unsigned wd = 0; wd < 2; wd++)
		dspan[wd] = dmax[wd] >= dmin[wd] ? dmax[wd] - dmin[wd] : 0;
	for (size_t i = 0; i < m->n && !err; i++) {
		const struct pmap *p = &m->v[i];
		if (!scannable(p))
			continue;
		/* The process runs on while we read: mappings can shrink or
		 * go, so scan whatever part of each chunk is readable. */
		for (uint64_t a = p->lo, next; a < p->hi && !err; a = next) {
			size_t len = p->hi - a < CHUNK ? p->hi - a : CHUNK;
			ssize_t got = proc_read_some(pid, a, buf, len);
			next = got > 0 ? a + (uint64_t)got : a + 4096;
			if (got <= 0)
				continue;
			s->scanned += (uint64_t)got;
			for (size_t o = 0; o + 8 <= (size_t)got && !err; o += 8) {
				const uint64_t at = a + o, w = rd64(buf, o);
				uint64_t d = w - at;
				/* Most words are no self-reference at all. */
				if (d - dmin[1] <= dspan[1])
					err = consider(pid, m, variant, s, at, w, 1);
				/* 32 bits: L, and so the word, below 4 GiB */
				d = (uint32_t)w - at;
				if (!err && at < (1ULL << 32) && d - dmin[0] <= dspan[0])
					err = consider(pid, m, variant, s, at, (uint32_t)w, 0);
				/* The word as glref: L 16 bytes down (GC64), or 8. */
				if (o >= 16)
					s->shape64 += shape64(buf + o - 16, (size_t)got - o + 16,
							      a + o - 16);
				if (o >= 8)
					s->shape32 += shape32(buf + o - 8, (size_t)got - o + 8,
							      a + o - 8);
			}
		}
	}
	free(buf);
	return err;
}

void vm_scan_free(struct vmscan *s)
{
	free(s->v);
	u64set_free(&s->seen);
	memset(s, 0, sizeof(*s));
}

int vm_at(pid_t pid, const struct pmaps *m, const char *variant, uint64_t L,
	  struct vminfo *out, char *why, size_t whylen)
{
	char one[160];
	size_t used = 0;

	snprintf(why, whylen, "no known layout");
	for (unsigned k = 0; k < lj_nvariants; k++) {
		const struct lj_variant *v = &lj_variants[k];
		uint64_t g, mainth;

		if (!want(v, variant))
			continue;
		if (lj_read_ref(pid, v, L + v->lay.L_glref, &g) ||
		    lj_read_ref(pid, v, g + v->lay.g_mainthref, &mainth))
			continue;
		if (!validate(pid, m, v, mainth, out, one, sizeof(one)))
			return 0;
		/* Say what each variant found. */
		if (used < whylen)
			used += (size_t)snprintf(why + used, whylen - used, "%s%s: %s",
						 used ? "; " : "", v->name, one);
	}
	return -EINVAL;
}
