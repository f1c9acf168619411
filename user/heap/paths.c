/* Objects named by their path from the roots, as a Lua programmer writes
 * it: the edges of mark.c's breadth-first tree (a shortest path), each
 * step named by its kind (edges.c), some folded into a Lua name:
 * registry._LOADED is package.loaded, a global is its name, an upvalue or
 * a stack slot starts over from its function or thread. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "heap/heap.h"
#include "target/ljdebug.h"
#include "target/ljref.h"

struct out {
	char *b;
	size_t len, n;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (o->n + 1 >= o->len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(o->b + o->n, o->len - o->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n = o->n + (size_t)k < o->len ? o->n + (size_t)k : o->len - 1;
}

/* A string's bytes, escaped as Lua would read them, cut at max. */
static void put_str(struct out *o, const char *s, uint32_t len, int cut, unsigned max)
{
	for (uint32_t i = 0; i < len && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			put(o, "\\%c", c);
		else if (c < 32 || c > 126)
			put(o, "\\%u", c);
		else
			put(o, "%c", c);
	}
	if (cut || len > max)
		put(o, "...");
}

static int is_ident(const char *s, uint32_t len)
{
	static const char *const kw[] = { "and", "break", "do", "else", "elseif", "end",
		"false", "for", "function", "goto", "if", "in", "local", "nil", "not", "or",
		"repeat", "return", "then", "true", "until", "while" };

	if (!len || len > 64 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
		if (strlen(kw[k]) == len && !memcmp(kw[k], s, len))
			return 0;
	return 1;
}

static long str_obj(const struct heap *h, uint64_t tv)
{
	uint32_t it = (uint32_t)lj_itype(h->var, tv);
	long i;

	if (it != ~h->var->h.tstr)
		return -1;
	i = heap_find(h, lj_tv_gc(h->var, tv));
	return i >= 0 && h->o[i].gct == h->var->h.tstr ? i : -1;
}

/* A table key (a raw TValue) as an index step: .name, ["s"], [12]. */
static void put_key(struct out *o, const struct heap *h, uint64_t key, int bare)
{
	uint32_t it = (uint32_t)lj_itype(h->var, key), len;
	long si = str_obj(h, key);
	int cut;

	if (si >= 0) {
		const char *s = heap_str(h, &h->o[si], &len, &cut);

		if (!cut && is_ident(s, len)) {
			put(o, bare ? "%.*s" : ".%.*s", (int)len, s);
		} else {
			put(o, bare ? "_G[\"" : "[\"");
			put_str(o, s, len, cut, 40);
			put(o, "\"]");
		}
		return;
	}
	if (bare)
		put(o, "_G");
	if (it < 0xfffffff2u) { /* a number (LJ_TNUMX and below) */
		double d;

		memcpy(&d, &key, 8);
		if (d == (double)(int64_t)d && d > -1e15 && d < 1e15)
			put(o, "[%" PRId64 "]", (int64_t)d);
		else
			put(o, "[%.17g]", d);
	} else if (it == ~2u || it == ~1u) {
		put(o, "[%s]", it == ~2u ? "true" : "false");
	} else if (it == ~3u) {
		put(o, "[lightuserdata 0x%" PRIx64 "]", lj_tv_gc(h->var, key));
	} else {
		put(o, "[%s 0x%" PRIx64 "]", heap_type_name(~it), lj_tv_gc(h->var, key));
	}
}

/* The prototype of a Lua function object, or the object if a prototype. */
static long proto_of(const struct heap *h, uint32_t i)
{
	const struct lj_variant *v = h->var;
	const struct hobj *o = &h->o[i];
	long p;

	if (o->gct == v->h.tproto)
		return i;
	if (o->gct != v->lay.tfunc || heap_u8(h, o, v->lay.fn_ffid))
		return -1;
	p = heap_find(h, heap_ref(h, o, v->lay.fn_pc) - v->lay.pt_size);
	return p >= 0 && h->o[p].gct == v->h.tproto ? p : -1;
}

void heap_where(const struct heap *h, uint32_t i, char *buf, size_t len)
{
	const struct lj_variant *v = h->var;
	struct out o = { buf, len, 0 };
	long p = i < h->n ? proto_of(h, i) : -1, c;
	uint32_t n, line;
	int cut;

	buf[0] = 0;
	if (p < 0) {
		put(&o, "?");
		return;
	}
	c = heap_find(h, heap_ref(h, &h->o[p], v->lay.pt_chunkname));
	line = heap_u32(h, &h->o[p], v->lay.pt_firstline);
	if (c >= 0 && h->o[c].gct == v->h.tstr) {
		const char *s = heap_str(h, &h->o[c], &n, &cut);

		if (line == UINT32_MAX) { /* a library function LuaJIT writes in Lua */
			put(&o, "built-in ");
			put_str(&o, s, n, cut, 60);
			return;
		}
		if (n && (s[0] == '@' || s[0] == '=')) {
			put_str(&o, s + 1, n - 1, cut, 200);
		} else {
			put(&o, "[string \"");
			put_str(&o, s, n, cut, 40);
			put(&o, "\"]");
		}
	} else {
		put(&o, "?");
	}
	put(&o, ":%u", line);
}

/* Upvalue k's name of function i's prototype ("?" if unknown). */
static void put_uvname(struct out *o, const struct heap *h, uint32_t i, uint64_t k)
{
	const struct lj_hlayout *hl = &h->var->h;
	long p = proto_of(h, i);
	const struct hobj *pt;
	uint64_t at, end;

	if (p < 0 || (h->o[p].flags & HOBJ_SHORT) || k >= heap_u8(h, &h->o[p], hl->pt_sizeuv)) {
		put(o, "#%" PRIu64, k + 1);
		return;
	}
	pt = &h->o[p];
	at = h->var->lay.pt_size + (uint64_t)heap_u32(h, pt, hl->pt_sizekgc) * lj_refsz(h->var);
	end = pt->rawlen;
	for (uint64_t j = 0; j < k && at < end; at++) /* past k names */
		if (!heap_raw(h, pt)[at])
			j++;
	if (at >= end) {
		put(o, "#%" PRIu64, k + 1);
		return;
	}
	{
		const char *s = (const char *)heap_raw(h, pt) + at;
		uint64_t n = 0;

		while (at + n < end && s[n])
			n++;
		put_str(o, s, (uint32_t)n, at + n >= end, 60);
	}
}

/* A coroutine's body: its first Lua function from the stack's bottom
 * (the object's index), or -1 (the main thread, or none). */
static long thread_body(const struct heap *h, uint32_t i)
{
	const struct lj_variant *v = h->var;
	const struct hobj *th = &h->o[i];
	const uint8_t *s, *fr;
	uint64_t n, nf, low = UINT64_MAX;
	uint32_t f32;

	if (th->flags & HOBJ_MAIN)
		return -1;
	s = heap_stack(h, th, &n, &fr, &nf);
	if (nf && !v->lay.gc64) { /* the lowest frame (the last): its function untyped */
		memcpy(&f32, fr + (nf - 1) * 4, 4);
		low = f32;
	}
	for (uint64_t k = 0; k < n; k++) {
		uint64_t tv;
		long f;

		memcpy(&tv, s + k * 8, 8);
		if (k != low && lj_itype(v, tv) != ~(int32_t)v->lay.tfunc)
			continue;
		f = heap_find(h, lj_tv_gc(v, tv));
		if (f >= 0 && proto_of(h, (uint32_t)f) >= 0)
			return f;
	}
	return -1;
}

/* A thread as a Lua programmer knows it: the main thread, or a coroutine
 * by its body f (thread_body). */
static void put_thread(struct out *o, const struct heap *h, uint32_t i, long f)
{
	char w[256];

	if (h->o[i].flags & HOBJ_MAIN) {
		put(o, "main thread");
	} else if (f >= 0) {
		heap_where(h, (uint32_t)f, w, sizeof(w));
		put(o, "coroutine at %s", w);
	} else {
		put(o, "coroutine 0x%" PRIx64, h->o[i].addr);
	}
}

/* The local that stack slot k of thread th is, as lj_debug.c's
 * debug_varname names it: the frame whose registers hold k (heap_stack's
 * frames: above its link, below the next frame's function), its Lua
 * function's prototype, and its PC, the link of the frame above it (a Lua
 * call's return PC, or a continuation's PC to resume the frame at: a
 * metamethod's call, or a trace stitched around a C function's; inside the
 * prototype's bytecode; the top frame's PC is not kept: its slots keep
 * their number). Names the local into o and
 * returns the frame's function (its index); -1: none named. */
static long put_local(struct out *o, const struct heap *h, uint32_t th, uint64_t k)
{
	const struct lj_variant *v = h->var;
	const uint64_t fr2 = v->lay.gc64;
	const uint8_t *s, *fr, *name = NULL;
	uint64_t n, nf;

	s = heap_stack(h, &h->o[th], &n, &fr, &nf);
	for (uint64_t j = 1; j < nf; j++) {
		uint32_t f, above;
		uint64_t tv, pc, bc0, pos, uvi, vi, off;
		int64_t link;
		const struct hobj *pt;
		size_t avail = 0;
		long fi, p;
		int r;

		memcpy(&f, fr + j * 4, 4);
		memcpy(&above, fr + (j - 1) * 4, 4);
		if (f >= k)
			continue; /* top first: the frame below */
		if (above >= n || f < fr2 || k + fr2 >= above)
			return -1; /* the frame above's function, or a link */
		memcpy(&tv, s + (uint64_t)above * 8, 8);
		link = lj_frame_link(v, tv);
		if ((link & LJ_FRAME_TYPEP) == LJ_FRAME_CONT) { /* frame_contpc, below its function */
			if (above < 2 + 2 * fr2 || k + 1 + 2 * fr2 >= above)
				return -1; /* a slot of the continuation's own */
			memcpy(&tv, s + (uint64_t)(above - 1 - fr2) * 8, 8);
			link = lj_frame_link(v, tv);
		} else if (link & LJ_FRAME_TYPE) {
			return -1; /* a C call, a pcall's, varargs: no PC kept */
		}
		memcpy(&tv, s + (uint64_t)(f - fr2) * 8, 8);
		fi = heap_find(h, fr2 ? heap_tv_gc(h, tv) : lj_ref(v, tv));
		p = fi >= 0 ? proto_of(h, (uint32_t)fi) : -1;
		if (p < 0 || (h->o[p].flags & HOBJ_SHORT))
			return -1;
		pt = &h->o[p];
		pc = lj_frame_pc(v, link);
		bc0 = pt->addr + v->lay.pt_size;
		if (pc <= bc0 || (pc - bc0) % 4)
			return -1;
		pos = (pc - bc0) / 4 - 1;
		uvi = heap_ref(h, pt, v->h.pt_uvinfo);
		vi = heap_ref(h, pt, v->h.pt_varinfo);
		off = v->lay.pt_size + (uint64_t)heap_u32(h, pt, v->h.pt_sizekgc) * lj_refsz(v);
		if (pos >= heap_u32(h, pt, v->lay.pt_sizebc) || !uvi || vi < uvi ||
		    vi - uvi >= pt->rawlen || off + (vi - uvi) >= pt->rawlen)
			return -1;
		off += vi - uvi;
		r = lj_varname(heap_raw(h, pt) + off, pt->rawlen - off, (uint32_t)pos,
			       (uint32_t)(k - f - 1), &name, &avail);
		if (r < 0)
			return -1;
		put(o, "local ");
		if (r > 0) {
			put(o, "%s", lj_varname_special((uint32_t)r));
		} else {
			const uint8_t *z = memchr(name, 0, avail);

			put_str(o, (const char *)name, (uint32_t)(z ? (size_t)(z - name) : avail),
				!z, 60);
		}
		return fi;
	}
	return -1;
}

static int is_main_env(const struct heap *h, uint32_t t)
{
	long m = heap_find(h, h->L);

	return m >= 0 && h->o[t].addr == heap_ref(h, &h->o[m], h->var->h.L_env);
}

static void put_root(struct out *o, const struct heap *h, const struct hedge *e)
{
	const struct lj_hlayout *hl = &h->var->h;
	static const char *const base[] = { "nil", "false", "true", "lightuserdata",
		"strings", "upvalues", "threads", "prototypes", "functions", "traces",
		"cdata", "tables", "userdata", "numbers" };

	switch (e->a) {
	case HROOT_MAINTH: put(o, "[main thread]"); break;
	case HROOT_MAINENV: put(o, "_G"); break;
	case HROOT_REGISTRY: put(o, "registry"); break;
	case HROOT_CURL: put(o, "[running thread]"); break;
	case HROOT_MMUDATA: put(o, "[awaiting __gc]"); break;
	default:
		if (e->b < hl->gcroot_basemt)
			put(o, "[metamethod name]");
		else if (e->b - hl->gcroot_basemt < sizeof(base) / sizeof(base[0]))
			put(o, "[metatable of %s]", base[e->b - hl->gcroot_basemt]);
		else
			put(o, "[default %s file]",
			    e->b == hl->gcroot_basemt + 14 ? "input" : "output");
	}
}

/* Does step e start a path over (its own name, not its parent's)? */
static int restarts(const struct heap *h, const struct hedge *e)
{
	return (e->kind == HE_UPVAL && proto_of(h, e->from) >= 0) || e->kind == HE_STACK ||
	       (e->kind == HE_HVAL && is_main_env(h, e->from) && str_obj(h, e->b) >= 0);
}

/* Step k of the chain[0..n) (the object's own step first, the root's
 * last) as the path says it; start is the step the path starts over at
 * (restarts()). */
static void put_step(struct out *o, const struct heap *h, const struct hedge *const *chain,
		     int n, int k, int start)
{
	const struct hedge *e = chain[k];
	char w[256];

	switch (e->kind) {
	case HE_ROOT:
		put_root(o, h, e);
		break;
	case HE_ARRAY:
		put(o, "[%" PRIu64 "]", e->a);
		break;
	case HE_HVAL: {
		long s = str_obj(h, e->b);
		uint32_t l;
		int c;

		if (k == start && k != n - 1) { /* a global: restarts() */
			put_key(o, h, e->b, 1);
			break;
		}
		/* registry._LOADED: package.loaded */
		if (s >= 0 && k == n - 2 && chain[n - 1]->a == HROOT_REGISTRY) {
			const char *t = heap_str(h, &h->o[s], &l, &c);

			if (l == 7 && !memcmp(t, "_LOADED", 7)) {
				o->n = 0;
				put(o, "package.loaded");
				break;
			}
		}
		put_key(o, h, e->b, 0);
		break;
	}
	case HE_HKEY:
		put(o, "<key>");
		break;
	case HE_MT:
		put(o, "[metatable]");
		break;
	case HE_ENV:
		put(o, "[env]");
		break;
	case HE_UPVAL:
		if (k != start) { /* a C function's */
			put(o, "[upvalue %" PRIu64 "]", e->a + 1);
			break;
		}
		o->n = 0;
		put(o, "upvalue ");
		put_uvname(o, h, e->from, e->a);
		heap_where(h, e->from, w, sizeof(w));
		put(o, " of function %s", w);
		break;
	case HE_STACK: {
		const long body = thread_body(h, e->from);
		long fn;

		o->n = 0;
		fn = put_local(o, h, e->from, e->a);
		if (fn < 0) {
			o->n = 0;
			put(o, "stack slot %" PRIu64, e->a);
		} else if (fn != body) {
			heap_where(h, (uint32_t)fn, w, sizeof(w));
			put(o, " of function %s", w);
		}
		put(o, fn < 0 ? " of " : " in ");
		put_thread(o, h, e->from, body);
		break;
	}
	case HE_PROTO:
		put(o, "[prototype]");
		break;
	case HE_KGC:
		put(o, "[constant]");
		break;
	case HE_CHUNK:
		put(o, "[chunk name]");
		break;
	case HE_PTRACE:
	case HE_TRACE:
		put(o, "[trace]");
		break;
	default: /* HE_UVVAL: the upvalue's own value, named above */
		break;
	}
}

void heap_path(const struct heap *h, uint32_t i, char *buf, size_t len)
{
	const struct hedge *chain[LMT_HEAP_PATH_STEPS];
	struct out o = { buf, len, 0 };
	uint32_t at = i;
	int n = 0, start, cut = 0;

	buf[0] = 0;
	if (!h->par || i >= h->n || !(h->o[i].flags & HOBJ_REACHED)) {
		put(&o, "(unreachable)");
		return;
	}
	/* up to the roots: each step's from is nearer (breadth first) */
	while (n < LMT_HEAP_PATH_STEPS) {
		const struct hedge *e = &h->par[at];

		chain[n++] = e;
		if (e->kind == HE_ROOT)
			break;
		at = e->from;
	}
	if (chain[n - 1]->kind != HE_ROOT)
		cut = 1;
	/* from the step nearest the object that starts over: an upvalue of
	 * a Lua function, a stack slot, a global */
	start = n - 1;
	for (int k = 0; k < n - 1; k++)
		if (restarts(h, chain[k])) {
			start = k;
			break;
		}
	if (start == n - 1 && cut)
		put(&o, "...");
	for (int k = start; k >= 0; k--)
		put_step(&o, h, chain, n, k, start);
}
