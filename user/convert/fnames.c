/* Function names from the caller's bytecode (convert/fnames.h), as LuaJIT's
 * lj_debug_funcname, lj_debug_slotname, debug_varname and lj_debug_uvname
 * (lj_debug.c) read them, from the target's memory. Bounded: the position
 * must be inside the prototype's sizebc (at most LMT_PROTO_BC_MAX), a
 * constant's index inside its sizekgc and an upvalue's inside its sizeuv;
 * the names of upvalues and locals are read from inside the prototype
 * (GCproto.sizept), at most LMT_FNAME_INFO_MAX bytes; a walk back from a
 * call reads at most LMT_FNAME_WALK_MAX instructions; a name is cut to
 * LMT_FNAME_ID_MAX bytes (target/caps.h). What cannot be read is no
 * name, counted (conv_proc's fn_unread, fn_cut). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/conv.h"
#include "convert/fnames.h"
#include "convert/lines.h"
#include "util/hash.h"
#include "streams/stknum.h"
#include "target/caps.h"
#include "target/ljdebug.h"
#include "target/ljref.h"
#include "target/proc.h"

#define WIN 64 /* instructions read at once, walking back */

/* A prototype's names by call site (pos + 1, or LINEKEY | line), and
 * the names its calls gave where the interpreter showed them, by line and
 * callee (fname_learn). */
struct pfn {
	struct u64map at;
	struct u64map learnt;
};
#define LINEKEY (1ULL << 62)

/* A name a call at a line gave a callee; conflict: two calls there gave
 * that callee different names. */
struct learnt {
	uint64_t line, callee;
	int conflict;
	char name[LMT_FRAME_NAME]; /* "": none */
};

static uint64_t learnt_key(uint64_t line, uint64_t callee)
{
	return hash_mix(hash_mix(0x6c6561726e74ULL, line), callee) | 1;
}

/* "No name", cached. */
static char none[1];

/* A prototype being read. */
struct rd {
	struct conv_vm *v;
	const struct lj_vmdef *d;
	uint64_t pt, bc0, k, uvinfo, varinfo, end;
	uint32_t sizebc, sizekgc, sizeuv;
	uint32_t win[WIN], wlo, wn;
	uint8_t *vi;     /* varinfo, read once (vilen bytes) */
	size_t vilen;
	int vi_state;    /* 0 not read, 1 read, -1 none */
	int cut;         /* a name was cut */
	uint32_t walked; /* instructions walked back (LMT_FNAME_WALK_MAX) */
};

static int rd_mem(const struct rd *r, uint64_t at, void *buf, size_t len)
{
	return proc_read(r->v->p->pid, at, buf, len);
}

/* Prototype pt's header: 0, or -1 (not a prototype, or unreadable). */
static int rd_init(struct rd *r, struct conv_vm *v, uint64_t pt)
{
	const struct lj_variant *var = v->var;
	uint8_t h[256], gct, sizeuv;
	uint32_t sizept;

	memset(r, 0, sizeof(*r));
	r->v = v;
	r->d = var->vmdef;
	r->pt = pt;
	if (!r->d || var->lay.pt_size > sizeof(h) || !var->h.pt_varinfo ||
	    var->h.pt_varinfo + lj_refsz(var) > var->lay.pt_size ||
	    rd_mem(r, pt, h, var->lay.pt_size))
		return -1;
	memcpy(&gct, h + var->u.pt_gct, 1);
	memcpy(&r->sizebc, h + var->lay.pt_sizebc, 4);
	memcpy(&r->sizekgc, h + var->h.pt_sizekgc, 4);
	memcpy(&sizeuv, h + var->h.pt_sizeuv, 1);
	memcpy(&sizept, h + var->h.pt_sizept, 4);
	r->k = lj_ref_at(var, h, var->h.pt_k); /* MRefs: 4 bytes without GC64 */
	r->uvinfo = lj_ref_at(var, h, var->h.pt_uvinfo);
	r->varinfo = lj_ref_at(var, h, var->h.pt_varinfo);
	r->sizeuv = sizeuv;
	r->bc0 = pt + var->lay.pt_size;
	r->end = pt + sizept;
	if (gct != var->u.tproto || !r->sizebc || r->sizebc > LMT_PROTO_BC_MAX ||
	    sizept < var->lay.pt_size + 4ULL * r->sizebc)
		return -1;
	return 0;
}

/* Instruction i (< sizebc): 0, or -1. Reads WIN at a time, walking back. */
static int rd_ins(struct rd *r, uint32_t i, uint32_t *ins)
{
	if (i >= r->sizebc)
		return -1;
	if (i < r->wlo || i >= r->wlo + r->wn) {
		const uint32_t lo = i >= WIN - 1 ? i - (WIN - 1) : 0;
		const uint32_t n = r->sizebc - lo < WIN ? r->sizebc - lo : WIN;

		r->wn = 0;
		if (rd_mem(r, r->bc0 + 4ULL * lo, r->win, 4ULL * n))
			return -1;
		r->wlo = lo;
		r->wn = n;
	}
	*ins = r->win[i - r->wlo];
	return 0;
}

/* len bytes of a name at p (NUL-terminated inside avail bytes), into
 * buf, cut to LMT_FNAME_ID_MAX. */
static void name_copy(struct rd *r, const uint8_t *p, size_t avail, char *buf)
{
	const uint8_t *z = memchr(p, 0, avail);
	size_t n = z ? (size_t)(z - p) : avail;

	if (n > LMT_FNAME_ID_MAX || !z) {
		n = LMT_FNAME_ID_MAX - 3 < n ? LMT_FNAME_ID_MAX - 3 : n;
		memcpy(buf, p, n);
		memcpy(buf + n, "...", 4);
		r->cut = 1;
		return;
	}
	memcpy(buf, p, n);
	buf[n] = 0;
}

/* -- lj_debug.c, over the target's memory ---------------------------------- */

/* debug_varname: the local in slot at pos, into buf. 0, or -1 none. */
static int varname(struct rd *r, uint32_t pos, uint32_t slot, char *buf)
{
	const uint8_t *name = NULL;
	size_t avail = 0;
	int k;

	if (!r->vi_state) {
		r->vi_state = -1;
		if (r->varinfo > r->pt && r->varinfo < r->end) {
			r->vilen = r->end - r->varinfo;
			if (r->vilen > LMT_FNAME_INFO_MAX)
				r->vilen = LMT_FNAME_INFO_MAX;
			if ((r->vi = malloc(r->vilen)) && !rd_mem(r, r->varinfo, r->vi, r->vilen))
				r->vi_state = 1;
		}
	}
	if (r->vi_state < 0)
		return -1;
	k = lj_varname(r->vi, r->vilen, pos, slot, &name, &avail);
	if (k > 0)
		snprintf(buf, LMT_FNAME_ID_MAX + 1, "%s", lj_varname_special((uint32_t)k));
	else if (!k)
		name_copy(r, name, avail, buf);
	return k < 0 ? -1 : 0;
}

/* proto_kgc(pt, ~idx): a string constant, into buf. 0, or -1. */
static int kgc_str(struct rd *r, uint32_t idx, char *buf)
{
	const struct lj_variant *var = r->v->var;
	const unsigned rs = lj_refsz(var);
	uint8_t s[LMT_FNAME_ID_MAX + 1];
	uint64_t gcr = 0, str;
	uint32_t len, n;
	uint8_t gct;

	if (idx >= r->sizekgc || !r->k ||
	    rd_mem(r, r->k - rs * ((uint64_t)idx + 1), &gcr, rs) || !(str = gcr & LJ_GCVMASK) ||
	    rd_mem(r, str + var->u.pt_gct, &gct, 1) || gct != var->h.tstr ||
	    rd_mem(r, str + var->lay.str_len, &len, 4))
		return -1;
	n = len > LMT_FNAME_ID_MAX ? LMT_FNAME_ID_MAX + 1 : len;
	if (n && rd_mem(r, str + var->lay.str_size, s, n))
		return -1;
	if (n <= LMT_FNAME_ID_MAX)
		s[n++] = 0;
	name_copy(r, s, n, buf);
	return 0;
}

/* lj_debug_uvname: upvalue idx's name, into buf. 0, or -1. */
static int uvname(struct rd *r, uint32_t idx, char *buf)
{
	uint8_t *u;
	const uint8_t *p, *end;
	size_t len;
	int rc = -1;

	if (idx >= r->sizeuv)
		return -1;
	if (!r->uvinfo) {
		*buf = 0; /* stripped: LuaJIT's "" */
		return 0;
	}
	if (r->uvinfo <= r->pt || r->uvinfo >= r->end)
		return -1;
	len = r->end - r->uvinfo;
	if (len > LMT_FNAME_INFO_MAX)
		len = LMT_FNAME_INFO_MAX;
	if (!(u = malloc(len)) || rd_mem(r, r->uvinfo, u, len)) {
		free(u);
		return -1;
	}
	p = u;
	end = u + len;
	while (idx && p < end)
		if (!*p++)
			idx--;
	if (p < end) {
		name_copy(r, p, (size_t)(end - p), buf);
		rc = 0;
	}
	free(u);
	return rc;
}

#define OP(i) ((i) & 0xff)
#define RA(i) ((i) >> 8 & 0xff)
#define RB(i) ((i) >> 24)
#define RC(i) ((i) >> 16 & 0xff)
#define RD(i) ((i) >> 16)

/* lj_debug_slotname: what slot holds at instruction ip, into buf: its
 * kind ("local", "global", "field", "method", "upvalue"), or NULL. */
static const char *slotname(struct rd *r, uint32_t ip, uint32_t slot, char *buf)
{
	const struct lj_vmdef *d = r->d;
	uint32_t ins, insp;

restart:
	if (!varname(r, ip, slot, buf))
		return "local";
	while (--ip > 0) {
		uint32_t op, ra;

		if (++r->walked > LMT_FNAME_WALK_MAX) {
			r->v->p->fn_unread++;
			return NULL;
		}
		if (rd_ins(r, ip, &ins))
			return NULL;
		op = OP(ins);
		ra = RA(ins);
		if (op >= d->nbc)
			return NULL;
		if (d->bc[op].a == LJ_BCA_BASE) {
			if (slot >= ra && (op != d->bc_knil || slot <= RD(ins)))
				return NULL;
		} else if (d->bc[op].a == LJ_BCA_DST && ra == slot) {
			if (op == d->bc_mov) {
				slot = RD(ins);
				goto restart;
			}
			if (op == d->bc_gget)
				return kgc_str(r, RD(ins), buf) ? NULL : "global";
			if (op == d->bc_tgets) {
				if (kgc_str(r, RC(ins), buf))
					return NULL;
				/* obj:m(): MOV of the object beside the method
				 * (ra + 1, LJ_FR2: ra + 2) */
				if (!rd_ins(r, ip - 1, &insp) && OP(insp) == d->bc_mov &&
				    RA(insp) == ra + 1 + r->v->var->lay.gc64 &&
				    RD(insp) == RB(ins))
					return "method";
				return "field";
			}
			if (op == d->bc_uget)
				return uvname(r, RD(ins), buf) ? NULL : "upvalue";
			return NULL;
		}
	}
	return NULL;
}

/* lj_debug_funcname at position pos of r's prototype, as a frame shows it
 * ("function 'render'"), into out. 0, or -1 none. */
static int funcname(struct rd *r, uint32_t pos, char *out, size_t len)
{
	const struct lj_vmdef *d = r->d;
	char id[LMT_FNAME_ID_MAX + 1];
	const char *what;
	uint32_t ins, slot;

	if (rd_ins(r, pos, &ins) || OP(ins) >= d->nbc || !d->bc[OP(ins)].mm)
		return -1;
	if (strcmp(d->bc[OP(ins)].mm, LJ_BC_CALL)) {
		snprintf(out, len, "metamethod '%s'", d->bc[OP(ins)].mm);
		return 0;
	}
	slot = RA(ins);
	if (OP(ins) == d->bc_iterc)
		slot -= 3; /* BCReg: wraps as LuaJIT's does, and names nothing */
	if (!(what = slotname(r, pos, slot, id)))
		return -1;
	/* Lua's traceback: a global is "function 'name'" */
	snprintf(out, len, "%s '%s'", strcmp(what, "global") ? what : "function", id);
	return 0;
}

/* -- The cache ------------------------------------------------------------- */

static void pfn_free(void *p)
{
	struct pfn *f = p;

	for (size_t i = 0; f && i < f->at.cap; i++)
		if (f->at.v && f->at.v[i] != none)
			free(f->at.v[i]);
	if (f) {
		u64map_free(&f->at, NULL);
		u64map_free(&f->learnt, free);
	}
	free(f);
}

/* The cached name of key in pt's entry: *hit set if there is one. */
static const char *cached(struct conv_vm *v, uint64_t pt, uint64_t key, int *hit)
{
	struct pfn *f = u64map_get(&v->fnames, pt);
	const char *n = f ? u64map_get(&f->at, key) : NULL;

	*hit = n != NULL;
	return n == none ? NULL : n;
}

/* pt's entry, made if need be; NULL out of memory. */
static struct pfn *pfn_of(struct conv_vm *v, uint64_t pt)
{
	struct pfn *f = u64map_get(&v->fnames, pt);
	int err = 0;

	if (f)
		return f;
	if (!(f = calloc(1, sizeof(*f))))
		return NULL;
	u64map_put(&v->fnames, pt, f, &err);
	if (err) {
		free(f);
		return NULL;
	}
	return f;
}

/* Keeps name (NULL: none) for key of pt; returns the kept copy. */
static const char *keep(struct conv_vm *v, uint64_t pt, uint64_t key, const char *name)
{
	struct pfn *f;
	char *c = name ? strdup(name) : none;
	int err = 0;

	if (!c || v->fnames_n >= LMT_FNAMES_MAX || !(f = pfn_of(v, pt)))
		goto out;
	u64map_put(&f->at, key, c, &err);
	if (!err) {
		v->fnames_n++;
		return name ? c : NULL;
	}
out:
	if (c != none)
		free(c);
	if (!name)
		return NULL;
	/* not kept: good until the next call */
	snprintf(v->fname_tmp, sizeof(v->fname_tmp), "%s", name);
	return v->fname_tmp;
}

static void rd_done(struct rd *r)
{
	if (r->cut)
		r->v->p->fn_cut++;
	free(r->vi);
}

const char *fname_at(struct conv_vm *v, uint64_t pt, uint64_t pc)
{
	char out[LMT_FRAME_NAME];
	const char *n;
	struct rd r;
	uint64_t pos;
	int hit, ok = -1;

	if (!v->var || !v->var->vmdef)
		return NULL;
	/* the instruction before pc: the call */
	if (pc < pt + v->var->lay.pt_size + 4 || (pc - pt - v->var->lay.pt_size) & 3)
		return NULL;
	pos = (pc - pt - v->var->lay.pt_size) / 4 - 1;
	if (pos >= LMT_PROTO_BC_MAX)
		return NULL;
	n = cached(v, pt, pos + 1, &hit);
	if (hit)
		return n;
	if (rd_init(&r, v, pt))
		v->p->fn_unread++;
	else if (pos < r.sizebc)
		ok = funcname(&r, (uint32_t)pos, out, sizeof(out));
	else
		v->p->fn_unread++; /* a PC past the bytecode it claims */
	rd_done(&r);
	return keep(v, pt, pos + 1, ok ? NULL : out);
}

void fname_learn(struct conv_vm *v, uint64_t pt, uint64_t line, uint64_t callee,
		 const char *name)
{
	struct pfn *f;
	struct learnt *e;
	const uint64_t key = learnt_key(line, callee);
	int err = 0;

	if (!name)
		name = "";
	if (!(f = u64map_get(&v->fnames, pt)) || !(e = u64map_get(&f->learnt, key))) {
		if (v->fnames_n >= LMT_FNAMES_MAX || !(f = pfn_of(v, pt)) ||
		    !(e = calloc(1, sizeof(*e))))
			return;
		*e = (struct learnt){ .line = line, .callee = callee };
		snprintf(e->name, sizeof(e->name), "%s", name);
		u64map_put(&f->learnt, key, e, &err);
		if (err)
			free(e);
		else
			v->fnames_n++;
		return;
	}
	if (e->line != line || e->callee != callee || strcmp(e->name, name))
		e->conflict = 1;
}

const char *fname_at_line(struct conv_vm *v, uint64_t pt, uint64_t line, uint64_t callee)
{
	const struct pline *l = u64map_get(&v->lines, pt);
	char out[LMT_FRAME_NAME], one[LMT_FRAME_NAME] = "";
	const struct pfn *f = u64map_get(&v->fnames, pt);
	const struct learnt *e = f ? u64map_get(&f->learnt, learnt_key(line, callee)) : NULL;
	const char *n;
	struct rd r;
	int hit, calls = 0, found = 0, same = 1;

	/* What the interpreter showed of that call, if it was one call */
	if (e && e->line == line && e->callee == callee)
		return e->conflict || !*e->name ? NULL : e->name;
	if (!v->var || !v->var->vmdef || !l || line >= LINEKEY)
		return NULL;
	n = cached(v, pt, LINEKEY | line, &hit);
	if (hit)
		return n;
	if (rd_init(&r, v, pt) || r.sizebc != l->sizebc) {
		v->p->fn_unread++;
		rd_done(&r);
		return NULL;
	}
	/* The calls at that line; the instructions that may call a
	 * metamethod there only if there is no call. */
	for (int pass = 0; pass < 2 && !found; pass++)
		for (uint32_t i = 1; i < r.sizebc && same; i++) {
			uint32_t ins;
			const char *mm;

			if (pline_line(l, i) != (int64_t)line)
				continue;
			if (rd_ins(&r, i, &ins) || OP(ins) >= r.d->nbc) {
				same = 0;
				break;
			}
			mm = r.d->bc[OP(ins)].mm;
			if (!mm || (!pass) != !strcmp(mm, LJ_BC_CALL))
				continue;
			calls++;
			if (funcname(&r, i, out, sizeof(out)))
				*out = 0;
			if (!found++)
				memcpy(one, out, sizeof(one));
			else if (strcmp(one, out))
				same = 0;
		}
	rd_done(&r);
	return keep(v, pt, LINEKEY | line, calls && same && *one ? one : NULL);
}

void fnames_forget(struct conv_vm *v, uint64_t pt)
{
	struct pfn *f = u64map_del(&v->fnames, pt);
	const size_t n = f ? f->at.n + f->learnt.n : 0;

	v->fnames_n -= n < v->fnames_n ? n : v->fnames_n;
	pfn_free(f);
}

void fnames_free(struct conv_vm *v)
{
	u64map_free(&v->fnames, pfn_free);
	v->fnames_n = 0;
}
