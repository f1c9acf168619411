/* Memprof report: aggregation and output compatible with tarantool/luajit
 * tools/memprof.lua (memprof/{parse,process,humanize}.lua, utils/symtab.lua).
 *
 * Model of the reference parser, which this file follows step by step:
 * - Symbol state (protos, traces, C symbols) is updated in stream order
 *   and every event is named with the state at that moment.
 * - Events are grouped per kind by the raw location (addr, line, traceno);
 *   a group keeps the name of its first event.
 * - A heap map addr -> {size, owner location, owner name} links a
 *   realloc/free to the block's previous owner ("Overrides").
 * - HEAP SUMMARY merges by name text, with the parser's accounting quirk
 *   (a realloc's new size is credited to the old owner).
 *
 * Where the parser's output order is unspecified (Lua hash order and an
 * unstable sort), we use a fixed rule:
 * - groups: events desc, then bytes allocated desc, then name bytewise,
 *   then bytes freed desc, then raw location (addr, line, traceno) asc;
 * - HEAP SUMMARY: bytes desc, then name bytewise.
 *
 * Numbers: the parser holds ulebs and sums in Lua doubles and prints with
 * LuaJIT's %d / %#x; lua_d() and lua_hex() reproduce that, so values up to
 * 2^53 print exactly and larger ones print as the parser prints them.
 *
 * Escaping: chunk and C names are escaped once, when their symbol is read,
 * by esc.h's rule (C0, DEL, C1 controls and ill-formed UTF-8; printable
 * text, backslashes included, unchanged so it matches the parser byte for
 * byte), so every output built from them is escaped: the report, folded
 * stacks, the summary's top sites. Chunk names with '\n' are aliased
 * (function_alias_K) as the parser does; their ALIASES text is escaped line
 * by line by the same rule, keeping TABs (source indentation).
 *
 * Memory: hash tables with open addressing, sized by live blocks, symbols,
 * locations and names; nothing grows with the number of events.
 *
 * Two stages: naming and counting (symbol state, groups) and the heap map
 * (live blocks, owner links) share no state but the group index an event
 * maps to, so report_events hands the heap stage to a second thread on
 * machines with more than one CPU; report_sync waits for it before any
 * output.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "esc.h"
#include "info.h"
#include "memprof_read.h"
#include "report.h"

#define NONE UINT32_MAX

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

/* Doubles the capacity of *p (elements of sz bytes) to hold need. */
static int grow(void *pp, uint32_t *cap, size_t need, size_t sz)
{
	void **p = pp;
	size_t c = *cap ? *cap : 16;
	void *q;
	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (c > UINT32_MAX / 2)
		return -1;
	q = realloc(*p, c * sz);
	if (!q)
		return -1;
	*p = q;
	*cap = (uint32_t)c;
	return 0;
}

/* Zeroed memory for the big tables (heap map, owner table). Their probes
 * are random, so with 4 KiB pages nearly every one is also a TLB miss;
 * huge pages halve the cost of a profile with a large live heap. */
#define BIG_MIN (2u << 20)

static void *big_calloc(size_t n, size_t sz)
{
	const size_t len = n * sz;
	void *p;
	if (len < BIG_MIN)
		return calloc(n, sz);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE); /* a hint: fine if refused */
	return p;
}

static void big_free(void *p, size_t n, size_t sz)
{
	if (!p)
		return;
	if (n * sz < BIG_MIN)
		free(p);
	else
		munmap(p, n * sz);
}

/* ---- u64 -> u64 map: linear probing, key 0 kept aside, no deletion ---- */

struct kv {
	uint64_t k, v;
};

struct u64map {
	struct kv *slot;
	uint32_t mask, n; /* mask + 1 slots */
	int has0;
	uint64_t v0;
};

static uint64_t *u64map_get(const struct u64map *m, uint64_t k)
{
	uint32_t i;
	if (!k)
		return m->has0 ? (uint64_t *)&m->v0 : NULL;
	if (!m->slot)
		return NULL;
	for (i = (uint32_t)mix64(k) & m->mask; m->slot[i].k; i = (i + 1) & m->mask)
		if (m->slot[i].k == k)
			return &m->slot[i].v;
	return NULL;
}

static int u64map_resize(struct u64map *m, uint32_t nslots)
{
	struct kv *s = calloc(nslots, sizeof(*s));
	if (!s)
		return -1;
	for (uint32_t j = 0; m->slot && j <= m->mask; j++) {
		uint32_t i;
		if (!m->slot[j].k)
			continue;
		for (i = (uint32_t)mix64(m->slot[j].k) & (nslots - 1); s[i].k; i = (i + 1) & (nslots - 1))
			;
		s[i] = m->slot[j];
	}
	free(m->slot);
	m->slot = s;
	m->mask = nslots - 1;
	return 0;
}

/* Returns the value slot, inserting v0 if k is new; NULL on OOM. */
static uint64_t *u64map_put(struct u64map *m, uint64_t k, uint64_t v, int *isnew)
{
	uint32_t i;
	*isnew = 0;
	if (!k) {
		if (!m->has0) {
			m->has0 = 1;
			m->v0 = v;
			*isnew = 1;
		}
		return &m->v0;
	}
	if (!m->slot || (m->n + 1) * 4 > (m->mask + 1) * 3) {
		if (m->mask >= (1u << 30) || u64map_resize(m, m->slot ? (m->mask + 1) * 2 : 64))
			return NULL;
	}
	for (i = (uint32_t)mix64(k) & m->mask; m->slot[i].k; i = (i + 1) & m->mask)
		if (m->slot[i].k == k)
			return &m->slot[i].v;
	m->slot[i].k = k;
	m->slot[i].v = v;
	m->n++;
	*isnew = 1;
	return &m->slot[i].v;
}

static void u64map_free(struct u64map *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* ---- Interned byte strings: names are compared and merged by id ---- */

struct str {
	size_t off;
	uint32_t len, hash;
};

struct strpool {
	char *arena;
	size_t alen, acap;
	struct str *s;
	uint32_t n, cap;
	uint32_t *tab; /* id + 1, 0 = empty */
	uint32_t mask;
};

static uint32_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = mix64(h ^ w);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = mix64(h ^ w ^ 0x100);
	}
	return (uint32_t)(h ^ (h >> 32));
}

static inline const char *str_ptr(const struct strpool *sp, uint32_t id)
{
	return sp->arena + sp->s[id].off;
}

static int str_cmp(const struct strpool *sp, uint32_t a, uint32_t b)
{
	const uint32_t la = sp->s[a].len, lb = sp->s[b].len;
	int c;
	if (a == b)
		return 0;
	c = memcmp(str_ptr(sp, a), str_ptr(sp, b), la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

static uint32_t intern(struct strpool *sp, const char *p, size_t n)
{
	const uint32_t h = hash_bytes(p, n);
	uint32_t i;
	if (n > UINT32_MAX - 1)
		return NONE;
	if (!sp->tab || (sp->n + 1) * 2 > sp->mask + 1) {
		uint32_t ns = sp->tab ? (sp->mask + 1) * 2 : 256;
		uint32_t *t;
		if (ns > (1u << 30) || !(t = calloc(ns, sizeof(*t))))
			return NONE;
		for (uint32_t id = 0; id < sp->n; id++) {
			for (i = sp->s[id].hash & (ns - 1); t[i]; i = (i + 1) & (ns - 1))
				;
			t[i] = id + 1;
		}
		free(sp->tab);
		sp->tab = t;
		sp->mask = ns - 1;
	}
	for (i = h & sp->mask; sp->tab[i]; i = (i + 1) & sp->mask) {
		const struct str *s = &sp->s[sp->tab[i] - 1];
		if (s->hash == h && s->len == n && !memcmp(sp->arena + s->off, p, n))
			return sp->tab[i] - 1;
	}
	if (grow(&sp->s, &sp->cap, (size_t)sp->n + 1, sizeof(*sp->s)))
		return NONE;
	if (sp->alen + n > sp->acap) {
		size_t c = sp->acap ? sp->acap : 4096;
		char *a;
		while (c < sp->alen + n)
			c *= 2;
		if (!(a = realloc(sp->arena, c)))
			return NONE;
		sp->arena = a;
		sp->acap = c;
	}
	memcpy(sp->arena + sp->alen, p, n);
	sp->s[sp->n] = (struct str){ .off = sp->alen, .len = (uint32_t)n, .hash = h };
	sp->alen += n;
	sp->tab[i] = ++sp->n;
	return sp->n - 1;
}

/* ---- Scratch text buffer ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (!n) /* b->p may still be NULL: memcpy(NULL, s, 0) is UB */
		return;
	if (b->len + n > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		char *q;
		while (c < b->len + n)
			c *= 2;
		if (!(q = realloc(b->p, c))) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = c;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void sb_puts(struct sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_put_cb(void *b, const char *s, size_t n) { sb_put(b, s, n); }

/* Target-controlled text, escaped (esc.h). */
static void sb_escaped(struct sbuf *b, const char *s, size_t n, int flags)
{
	esc_text(sb_put_cb, b, s, n, flags);
}

/* LuaJIT's string.format("%d", x) where x = tonumber(uint64 v). */
static int lua_d(char *out, uint64_t v)
{
	const double d = (double)v;
	if (d >= 9223372036854775808.0) /* (int64_t)d saturates on x86-64 */
		return sprintf(out, "%" PRId64, INT64_MIN);
	return sprintf(out, "%" PRId64, (int64_t)d);
}

/* LuaJIT's string.format("%#x", x): no "0x" for zero. */
static int lua_hex(char *out, uint64_t v)
{
	const double d = (double)v;
	const int64_t k = d >= 9223372036854775808.0 ? (int64_t)(d - 18446744073709551616.0)
						      : (int64_t)d;
	return k ? sprintf(out, "%#" PRIx64, (uint64_t)k) : sprintf(out, "0");
}

/* humanize.lua format_bytes(). Dividing by 1024 is exact in doubles, so
 * this is done in integers: unit m while v >= 1024^(m+1), "%d" if the
 * quotient is whole, else "%.2f" rounded half up on the exact value, which
 * is what LuaJIT's own formatter does (glibc would round half to even:
 * 68736B is 67.13KiB for LuaJIT, 67.12KiB for printf). */
static int fmt_bytes(char *out, uint64_t v, int human)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB" };
	int m = 0, n;
	uint64_t d = 1;
	unsigned __int128 q;
	if (!human) {
		n = lua_d(out, v);
		out[n++] = 'B';
		out[n] = 0;
		return n;
	}
	while (m < 3 && v / d >= 1024) {
		d *= 1024;
		m++;
	}
	if (v % d == 0)
		return sprintf(out, "%" PRIu64 "%s", v / d, unit[m]);
	q = ((unsigned __int128)v * 100 + d / 2) / d;
	return sprintf(out, "%" PRIu64 ".%02u%s", (uint64_t)(q / 100), (unsigned)(q % 100), unit[m]);
}

/* ---- The aggregator ---- */

struct loc {
	uint64_t addr, line, trace; /* the parser's group key */
	uint32_t hash;
	uint32_t gen, name; /* name under symbol generation gen */
	uint32_t grp[3];    /* per kind - 1; NONE if absent */
};

struct group {
	uint32_t loc, name; /* name of the first event */
	uint8_t kind;
	uint64_t num, alloc, free;
};

/* A group's owner links, kept by the heap stage apart from struct group
 * (which the naming stage grows and writes concurrently). */
struct gown {
	uint32_t nowners;
	/* Owner hit last (location, otab slot, otab epoch): checked without
	 * touching otab, whose lines are cold for a group like INTERNAL
	 * frees that hits many owners. */
	uint32_t last_loc, last_own, last_epoch;
};

/* What the heap stage needs of an event; g is never NONE. */
struct hev {
	uint64_t oaddr, naddr, nsize;
	uint32_t g, li, name;
	uint8_t kind;
};

/* The heap stage's thread: batches [tail, head) are filled and waiting,
 * buf[head % NHB] is the one being filled. */
enum { HB = 8192, NHB = 4 };
struct hpipe {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hev *buf[NHB];
	size_t n[NHB], fill;
	unsigned head, tail;
	int quit;
};

/* A previous owner of blocks hit by a group's realloc/free events, stored
 * in one open-addressing table keyed by (group, owner location): one cache
 * miss per lookup, and no per-group lists to maintain. */
struct oslot {
	uint32_t g1; /* group + 1, 0 = empty */
	uint32_t loc, name;
	uint64_t allocated, freed, count;
};

/* A live block: loc1 = owner loc + 1, 0 = empty slot. */
struct hslot {
	uint64_t addr, size;
	uint32_t loc1, name;
};

struct trace {
	uint64_t proto, line;
};

struct report {
	struct strpool sp;
	uint32_t s_internal;
	int oom;

	/* Symbol state. gen changes whenever a cached name could change. */
	uint32_t gen;
	struct u64map watch;  /* proto addresses some cached name was made from */
	struct u64map lfunc;  /* proto addr -> display id (chunk or alias) */
	struct u64map disp;   /* raw chunk id -> display id */
	uint32_t *alias;      /* raw chunk ids, in order of first appearance */
	uint32_t nalias, alias_cap;
	struct u64map traces; /* traceno -> index into trace[] */
	struct trace *trace;
	uint32_t ntrace, trace_cap;
	struct u64map cfunc;  /* addr -> escaped name id */
	uint64_t *caddr;      /* C symbol addresses: sorted main part, then a
			       * sorted pending part of O(sqrt) size */
	uint32_t ncaddr, nsorted, caddr_cap;

	/* Locations and groups. */
	struct loc *loc;
	uint32_t nloc, loc_cap;
	uint32_t *ltab, lmask; /* loc index + 1 */
	uint32_t last_loc;
	struct group *grp;
	uint32_t ngrp, grp_cap;

	/* Heap stage: only it touches these until report_sync. */
	struct hpipe *pipe;
	int pipe_tried, hoom;
	struct gown *gown;
	uint32_t gown_cap;
	struct oslot *otab;
	uint64_t omask, on;
	uint32_t oepoch; /* bumped when otab is rehashed */

	/* Live blocks. */
	struct hslot *heap;
	uint64_t hmask, hn;

	struct sbuf sb;
};

struct report *report_new(void)
{
	struct report *rp = calloc(1, sizeof(*rp));
	if (!rp)
		return NULL;
	rp->gen = 1;
	rp->last_loc = NONE;
	rp->s_internal = intern(&rp->sp, "INTERNAL", 8);
	if (rp->s_internal == NONE) {
		report_free(rp);
		return NULL;
	}
	return rp;
}

static void pipe_stop(struct report *rp);

void report_free(struct report *rp)
{
	if (!rp)
		return;
	pipe_stop(rp);
	free(rp->gown);
	free(rp->sp.arena);
	free(rp->sp.s);
	free(rp->sp.tab);
	u64map_free(&rp->lfunc);
	u64map_free(&rp->watch);
	u64map_free(&rp->disp);
	u64map_free(&rp->traces);
	u64map_free(&rp->cfunc);
	free(rp->alias);
	free(rp->trace);
	free(rp->caddr);
	free(rp->loc);
	free(rp->ltab);
	free(rp->grp);
	big_free(rp->otab, rp->otab ? rp->omask + 1 : 0, sizeof(*rp->otab));
	big_free(rp->heap, rp->heap ? rp->hmask + 1 : 0, sizeof(*rp->heap));
	free(rp->sb.p);
	free(rp);
}

static uint32_t intern_sb(struct report *rp)
{
	uint32_t id;
	if (rp->sb.oom)
		return NONE;
	id = intern(&rp->sp, rp->sb.p ? rp->sb.p : "", rp->sb.len);
	return id;
}

/* symtab.lua parse_sym_lfunc: alias chunks with '\n', then replace. */
static void sym_lfunc(struct report *rp, const struct mp_sym *s)
{
	uint32_t raw = intern(&rp->sp, s->name, s->name_len), dispid;
	uint64_t *d, *v;
	int isnew;
	if (raw == NONE)
		goto oom;
	if ((d = u64map_get(&rp->disp, raw))) {
		dispid = (uint32_t)*d;
	} else {
		rp->sb.len = 0;
		if (s->name_len && memchr(s->name, '\n', s->name_len)) {
			char tmp[32];
			if (grow(&rp->alias, &rp->alias_cap, (size_t)rp->nalias + 1, sizeof(*rp->alias)))
				goto oom;
			rp->alias[rp->nalias++] = raw;
			snprintf(tmp, sizeof(tmp), "function_alias_%u", rp->nalias);
			sb_puts(&rp->sb, tmp);
		} else {
			sb_escaped(&rp->sb, s->name, s->name_len, 0);
		}
		if ((dispid = intern_sb(rp)) == NONE || !u64map_put(&rp->disp, raw, dispid, &isnew))
			goto oom;
	}
	if (!(v = u64map_put(&rp->lfunc, s->addr, dispid, &isnew)))
		goto oom;
	if (isnew || *v != dispid) {
		*v = dispid;
		/* Protos loaded while profiling are new addresses no name
		 * depends on yet: no need to rename every location. */
		if (u64map_get(&rp->watch, s->addr))
			rp->gen++;
	}
	return;
oom:
	rp->oom = 1;
}

static void sym_trace(struct report *rp, const struct mp_sym *s)
{
	uint64_t *v = u64map_get(&rp->traces, s->addr);
	int isnew;
	if (v) {
		struct trace *t = &rp->trace[*v];
		if (t->proto == s->proto && t->line == s->line)
			return;
		*t = (struct trace){ .proto = s->proto, .line = s->line };
		rp->gen++;
		return;
	}
	if (grow(&rp->trace, &rp->trace_cap, (size_t)rp->ntrace + 1, sizeof(*rp->trace)) ||
	    !u64map_put(&rp->traces, s->addr, rp->ntrace, &isnew)) {
		rp->oom = 1;
		return;
	}
	rp->trace[rp->ntrace++] = (struct trace){ .proto = s->proto, .line = s->line };
	rp->gen++;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Index of the first element > v in a[lo, hi). */
static uint32_t upper_bound(const uint64_t *a, uint32_t lo, uint32_t hi, uint64_t v)
{
	while (lo < hi) {
		const uint32_t mid = lo + (hi - lo) / 2;
		if (a[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Merges the pending part into the main part, from the back. */
static void cfunc_merge(struct report *rp)
{
	uint64_t *a = rp->caddr;
	const uint32_t np = rp->ncaddr - rp->nsorted;
	uint64_t *tmp = malloc((size_t)np * sizeof(*tmp));
	uint32_t x = rp->nsorted, y = np, k = rp->ncaddr;
	if (!tmp) {
		qsort(a, rp->ncaddr, sizeof(*a), cmp_u64);
	} else {
		memcpy(tmp, a + rp->nsorted, (size_t)np * sizeof(*tmp));
		while (y) {
			if (x && a[x - 1] > tmp[y - 1])
				a[--k] = a[--x];
			else
				a[--k] = tmp[--y];
		}
		free(tmp);
	}
	rp->nsorted = rp->ncaddr;
}

/* A new C symbol address goes into the sorted pending part, which is
 * merged once it outgrows sqrt of the main part: symbols interleaved
 * with lookups cost O(sqrt n) each, never a re-sort per lookup. */
static void cfunc_add(struct report *rp, uint64_t addr)
{
	uint64_t *a = rp->caddr;
	const uint32_t pos = upper_bound(a, rp->nsorted, rp->ncaddr, addr);
	uint32_t np;
	memmove(a + pos + 1, a + pos, (size_t)(rp->ncaddr - pos) * sizeof(*a));
	a[pos] = addr;
	np = ++rp->ncaddr - rp->nsorted;
	if (np > 64 && (uint64_t)np * np > rp->nsorted)
		cfunc_merge(rp);
}

/* Greatest C symbol address <= addr (avl.floor); 0 if none. */
static int cfunc_floor(struct report *rp, uint64_t addr, uint64_t *key)
{
	const uint64_t *a = rp->caddr;
	const uint32_t i = upper_bound(a, 0, rp->nsorted, addr);
	const uint32_t j = upper_bound(a, rp->nsorted, rp->ncaddr, addr);
	if (j > rp->nsorted && (!i || a[j - 1] > a[i - 1]))
		*key = a[j - 1];
	else if (i)
		*key = a[i - 1];
	else
		return 0;
	return 1;
}

/* A later record at the same address replaces the name (avl.insert). The
 * reference writer re-dumps every C symbol before each CFUNC event, so a
 * repeat must be cheap and must not invalidate cached names. */
static void sym_cfunc(struct report *rp, const struct mp_sym *s)
{
	uint32_t id;
	uint64_t *v;
	int isnew;
	rp->sb.len = 0;
	sb_escaped(&rp->sb, s->name, s->name_len, 0);
	if ((id = intern_sb(rp)) == NONE || !(v = u64map_put(&rp->cfunc, s->addr, id, &isnew)))
		goto oom;
	if (!isnew) {
		if (*v != id) {
			*v = id;
			rp->gen++;
		}
		return;
	}
	if (grow(&rp->caddr, &rp->caddr_cap, (size_t)rp->ncaddr + 1, sizeof(*rp->caddr)))
		goto oom;
	cfunc_add(rp, s->addr);
	rp->gen++;
	return;
oom:
	rp->oom = 1;
}

void report_sym(struct report *rp, const struct mp_sym *s)
{
	switch (s->kind) {
	case MP_SYM_LFUNC:
		sym_lfunc(rp, s);
		break;
	case MP_SYM_CFUNC:
		sym_cfunc(rp, s);
		break;
	case MP_SYM_TRACE:
		sym_trace(rp, s);
		break;
	default:
		break;
	}
}

/* symtab.lua demangle() for a non-trace location. */
static void name_base(struct report *rp, uint64_t addr, uint64_t line)
{
	char num[32];
	uint64_t *v, key;
	if (!addr) {
		sb_puts(&rp->sb, "INTERNAL");
	} else if ((v = u64map_get(&rp->lfunc, addr))) {
		const uint32_t id = (uint32_t)*v;
		sb_put(&rp->sb, str_ptr(&rp->sp, id), rp->sp.s[id].len);
		num[0] = ':';
		sb_put(&rp->sb, num, 1 + (size_t)lua_d(num + 1, line));
	} else if (cfunc_floor(rp, addr, &key)) {
		const uint32_t id = (uint32_t)*u64map_get(&rp->cfunc, key);
		sb_put(&rp->sb, str_ptr(&rp->sp, id), rp->sp.s[id].len);
		num[0] = ':';
		sb_put(&rp->sb, num, 1 + (size_t)lua_hex(num + 1, key));
	} else {
		sb_puts(&rp->sb, "CFUNC ");
		sb_put(&rp->sb, num, (size_t)lua_hex(num, addr));
	}
}

static uint32_t loc_name(struct report *rp, struct loc *l)
{
	char num[32];
	uint64_t *v;
	int isnew;
	if (l->gen == rp->gen)
		return l->name;
	rp->sb.len = 0;
	if (l->trace) {
		sb_puts(&rp->sb, "TRACE [");
		sb_put(&rp->sb, num, (size_t)lua_d(num, l->trace));
		sb_puts(&rp->sb, "]");
		if ((v = u64map_get(&rp->traces, l->trace))) {
			const struct trace *t = &rp->trace[*v];
			sb_puts(&rp->sb, " started at ");
			name_base(rp, t->proto, t->line);
			if (!u64map_put(&rp->watch, t->proto, 1, &isnew))
				return NONE;
		}
	} else {
		name_base(rp, l->addr, l->line);
		if (!u64map_put(&rp->watch, l->addr, 1, &isnew))
			return NONE;
	}
	l->name = intern_sb(rp);
	l->gen = l->name == NONE ? 0 : rp->gen;
	return l->name;
}

static uint32_t loc_get(struct report *rp, uint64_t addr, uint64_t line, uint64_t trace)
{
	uint32_t h, i;
	struct loc *l;
	if (rp->last_loc != NONE) {
		l = &rp->loc[rp->last_loc];
		if (l->addr == addr && l->line == line && l->trace == trace)
			return rp->last_loc;
	}
	h = (uint32_t)mix64(addr * 0x9e3779b97f4a7c15ull ^ mix64(line + (trace << 32) + trace));
	if (!rp->ltab || (rp->nloc + 1) * 2 > rp->lmask + 1) {
		uint32_t ns = rp->ltab ? (rp->lmask + 1) * 2 : 256, *t;
		if (ns > (1u << 30) || !(t = calloc(ns, sizeof(*t))))
			return NONE;
		for (uint32_t k = 0; k < rp->nloc; k++) {
			for (i = rp->loc[k].hash & (ns - 1); t[i]; i = (i + 1) & (ns - 1))
				;
			t[i] = k + 1;
		}
		free(rp->ltab);
		rp->ltab = t;
		rp->lmask = ns - 1;
	}
	for (i = h & rp->lmask; rp->ltab[i]; i = (i + 1) & rp->lmask) {
		l = &rp->loc[rp->ltab[i] - 1];
		if (l->hash == h && l->addr == addr && l->line == line && l->trace == trace)
			return rp->last_loc = rp->ltab[i] - 1;
	}
	if (grow(&rp->loc, &rp->loc_cap, (size_t)rp->nloc + 1, sizeof(*rp->loc)))
		return NONE;
	rp->loc[rp->nloc] = (struct loc){ .addr = addr, .line = line, .trace = trace, .hash = h,
					  .grp = { NONE, NONE, NONE } };
	rp->ltab[i] = ++rp->nloc;
	return rp->last_loc = rp->nloc - 1;
}

/* ---- Heap map: addr -> live block; linear probing, backward-shift delete ---- */

static inline uint64_t heap_home(const struct report *rp, uint64_t addr)
{
	return mix64(addr) & rp->hmask;
}

static struct hslot *heap_find(struct report *rp, uint64_t addr)
{
	if (!rp->heap)
		return NULL;
	for (uint64_t i = heap_home(rp, addr);; i = (i + 1) & rp->hmask) {
		struct hslot *s = &rp->heap[i];
		if (!s->loc1)
			return NULL;
		if (s->addr == addr)
			return s;
	}
}

static void heap_del(struct report *rp, struct hslot *s)
{
	uint64_t i = (uint64_t)(s - rp->heap), j = i;
	for (;;) {
		uint64_t home;
		j = (j + 1) & rp->hmask;
		if (!rp->heap[j].loc1)
			break;
		home = heap_home(rp, rp->heap[j].addr);
		/* Move j back into the hole if the hole lies on j's probe path. */
		if (((j - home) & rp->hmask) >= ((j - i) & rp->hmask)) {
			rp->heap[i] = rp->heap[j];
			i = j;
		}
	}
	rp->heap[i].loc1 = 0;
	rp->hn--;
}

static int heap_put(struct report *rp, uint64_t addr, uint64_t size, uint32_t loc, uint32_t name)
{
	uint64_t i;
	if (!rp->heap || (rp->hn + 1) * 8 > (rp->hmask + 1) * 5) {
		const uint64_t ns = rp->heap ? (rp->hmask + 1) * 2 : 1024;
		struct hslot *t = big_calloc(ns, sizeof(*t)), *old = rp->heap;
		const uint64_t omask = rp->hmask;
		if (!t)
			return -1;
		rp->heap = t;
		rp->hmask = ns - 1;
		for (uint64_t k = 0; old && k <= omask; k++) {
			if (!old[k].loc1)
				continue;
			for (i = heap_home(rp, old[k].addr); t[i].loc1; i = (i + 1) & rp->hmask)
				;
			t[i] = old[k];
		}
		big_free(old, old ? omask + 1 : 0, sizeof(*t));
	}
	for (i = heap_home(rp, addr); rp->heap[i].loc1; i = (i + 1) & rp->hmask) {
		if (rp->heap[i].addr == addr)
			break;
	}
	if (!rp->heap[i].loc1)
		rp->hn++;
	rp->heap[i] = (struct hslot){ .addr = addr, .size = size, .loc1 = loc + 1, .name = name };
	return 0;
}

static inline uint64_t own_home(const struct report *rp, uint32_t g, uint32_t loc)
{
	return mix64(((uint64_t)g << 32) | loc) & rp->omask;
}

static int own_grow(struct report *rp)
{
	const uint64_t ns = rp->otab ? (rp->omask + 1) * 2 : 1024;
	struct oslot *t = big_calloc(ns, sizeof(*t)), *old = rp->otab;
	const uint64_t omask = rp->omask;
	if (!t)
		return -1;
	rp->otab = t;
	rp->omask = ns - 1;
	rp->oepoch++;
	for (uint64_t k = 0; old && k <= omask; k++) {
		uint64_t i;
		if (!old[k].g1)
			continue;
		for (i = own_home(rp, old[k].g1 - 1, old[k].loc); t[i].g1; i = (i + 1) & rp->omask)
			;
		t[i] = old[k];
	}
	big_free(old, old ? omask + 1 : 0, sizeof(*t));
	return 0;
}

/* parse.lua link_to_previous(). */
static struct gown *gown_of(struct report *rp, uint32_t g)
{
	const uint32_t old = rp->gown_cap;
	if (g < old)
		return &rp->gown[g];
	if (grow(&rp->gown, &rp->gown_cap, (size_t)g + 1, sizeof(*rp->gown)))
		return NULL;
	for (uint32_t k = old; k < rp->gown_cap; k++)
		rp->gown[k] = (struct gown){ .last_loc = NONE };
	return &rp->gown[g];
}

static uint32_t nowners(const struct report *rp, uint32_t g)
{
	return g < rp->gown_cap ? rp->gown[g].nowners : 0;
}

static void link_owner(struct report *rp, uint32_t g, const struct hslot *blk, uint64_t nsize)
{
	const uint32_t oloc = blk->loc1 - 1;
	struct gown *gp = gown_of(rp, g);
	struct oslot *o;
	uint64_t i;
	if (!gp) {
		rp->hoom = 1;
		return;
	}
	/* Blocks mostly die where they were made: try the last owner first. */
	if (gp->last_loc == oloc && gp->last_epoch == rp->oepoch) {
		o = &rp->otab[gp->last_own];
		goto hit;
	}
	if ((!rp->otab || (rp->on + 1) * 4 > (rp->omask + 1) * 3) && own_grow(rp)) {
		rp->hoom = 1;
		return;
	}
	for (i = own_home(rp, g, oloc); rp->otab[i].g1; i = (i + 1) & rp->omask)
		if (rp->otab[i].g1 == g + 1 && rp->otab[i].loc == oloc)
			break;
	o = &rp->otab[i];
	if (!o->g1) {
		*o = (struct oslot){ .g1 = g + 1, .loc = oloc, .name = blk->name };
		rp->on++;
		gp->nowners++;
	}
	gp->last_loc = oloc;
	gp->last_own = (uint32_t)i;
	gp->last_epoch = rp->oepoch;
hit:
	o->allocated += nsize;
	o->freed += blk->size;
	o->count++;
}

/* Naming, grouping and the group's counters: needs only symbol state.
 * Returns the event's group and sets *li, *name; NONE: skip the event. */
static uint32_t ev_group(struct report *rp, const struct mp_event *e, uint32_t *li,
			 uint32_t *name)
{
	uint64_t addr = 0, line = 0, trace = 0;
	struct loc *l;
	struct group *gp;
	uint32_t g;

	if (e->kind < MP_ALLOC || e->kind > MP_REALLOC)
		return NONE;
	switch (e->src) {
	case MP_SRC_INTERNAL:
		break;
	case MP_SRC_LFUNC:
		addr = e->loc;
		line = e->line;
		break;
	case MP_SRC_CFUNC:
		addr = e->loc;
		break;
	case MP_SRC_TRACE:
		trace = e->loc;
		break;
	default:
		return NONE;
	}
	if ((*li = loc_get(rp, addr, line, trace)) == NONE)
		goto oom;
	l = &rp->loc[*li];
	if ((*name = loc_name(rp, l)) == NONE)
		goto oom;
	g = l->grp[e->kind - 1];
	if (g == NONE) {
		if (grow(&rp->grp, &rp->grp_cap, (size_t)rp->ngrp + 1, sizeof(*rp->grp)))
			goto oom;
		g = l->grp[e->kind - 1] = rp->ngrp++;
		rp->grp[g] = (struct group){ .loc = *li, .name = *name, .kind = e->kind };
	}
	gp = &rp->grp[g];
	gp->num++;
	if (e->kind & MP_ALLOC)
		gp->alloc += e->nsize;
	if (e->kind & MP_FREE)
		gp->free += e->osize;
	return g;
oom:
	rp->oom = 1;
	return NONE;
}

/* The heap map and owner links: parse_alloc/realloc/free in parse.lua. */
static void ev_heap(struct report *rp, const struct hev *e)
{
	struct hslot *blk;
	if (e->kind & MP_FREE && (blk = heap_find(rp, e->oaddr))) {
		link_owner(rp, e->g, blk, e->kind == MP_REALLOC ? e->nsize : 0);
		if (e->kind == MP_REALLOC && e->naddr == e->oaddr) {
			/* In place: one probe, not three. */
			*blk = (struct hslot){ .addr = e->naddr, .size = e->nsize,
					       .loc1 = e->li + 1, .name = e->name };
			return;
		}
		heap_del(rp, blk);
	}
	if (e->kind & MP_ALLOC && heap_put(rp, e->naddr, e->nsize, e->li, e->name))
		rp->hoom = 1;
}

static inline void heap_prefetch(const struct report *rp, uint64_t addr)
{
	/* A probe run often crosses into the next line. */
	const char *p = (const char *)&rp->heap[heap_home(rp, addr)];
	__builtin_prefetch(p);
	__builtin_prefetch(p + 64);
}

/* On big profiles the heap map outgrows the caches: prefetch a chunk's
 * slots, then do its heap work in order. */
static void heap_batch(struct report *rp, const struct hev *e, size_t n)
{
	enum { CHUNK = 64 };
	while (n) {
		const size_t k = n < CHUNK ? n : CHUNK;
		for (size_t i = 0; rp->heap && i < k; i++) {
			if (e[i].kind & MP_FREE)
				heap_prefetch(rp, e[i].oaddr);
			if (e[i].kind & MP_ALLOC && e[i].naddr != e[i].oaddr)
				heap_prefetch(rp, e[i].naddr);
		}
		for (size_t i = 0; i < k; i++)
			ev_heap(rp, &e[i]);
		e += k;
		n -= k;
	}
}

static void *pipe_main(void *arg)
{
	struct report *rp = arg;
	struct hpipe *hp = rp->pipe;
	pthread_mutex_lock(&hp->mu);
	for (;;) {
		unsigned t;
		while (hp->tail == hp->head && !hp->quit)
			pthread_cond_wait(&hp->cv, &hp->mu);
		if (hp->tail == hp->head)
			break;
		t = hp->tail % NHB;
		pthread_mutex_unlock(&hp->mu);
		heap_batch(rp, hp->buf[t], hp->n[t]);
		pthread_mutex_lock(&hp->mu);
		hp->tail++;
		pthread_cond_broadcast(&hp->cv);
	}
	pthread_mutex_unlock(&hp->mu);
	return NULL;
}

/* Starts the heap thread; NULL (work stays inline) on one CPU or failure. */
static struct hpipe *pipe_start(struct report *rp)
{
	struct hpipe *hp;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !(hp = calloc(1, sizeof(*hp))))
		return NULL;
	for (int i = 0; i < NHB; i++) {
		if (!(hp->buf[i] = malloc(HB * sizeof(struct hev))))
			goto fail;
	}
	pthread_mutex_init(&hp->mu, NULL);
	pthread_cond_init(&hp->cv, NULL);
	rp->pipe = hp;
	if (!pthread_create(&hp->th, NULL, pipe_main, rp))
		return hp;
	rp->pipe = NULL;
	pthread_cond_destroy(&hp->cv);
	pthread_mutex_destroy(&hp->mu);
fail:
	for (int i = 0; i < NHB; i++)
		free(hp->buf[i]);
	free(hp);
	return NULL;
}

/* Hands the batch being filled to the heap thread; waits for a free one. */
static void pipe_push(struct hpipe *hp)
{
	pthread_mutex_lock(&hp->mu);
	hp->n[hp->head % NHB] = hp->fill;
	hp->head++;
	hp->fill = 0;
	pthread_cond_broadcast(&hp->cv);
	while (hp->head - hp->tail >= NHB)
		pthread_cond_wait(&hp->cv, &hp->mu);
	pthread_mutex_unlock(&hp->mu);
}

/* Waits until the heap stage has caught up with every event given. */
static void report_sync(struct report *rp)
{
	struct hpipe *hp = rp->pipe;
	if (!hp)
		return;
	if (hp->fill)
		pipe_push(hp);
	pthread_mutex_lock(&hp->mu);
	while (hp->tail != hp->head)
		pthread_cond_wait(&hp->cv, &hp->mu);
	pthread_mutex_unlock(&hp->mu);
}

static void pipe_stop(struct report *rp)
{
	struct hpipe *hp = rp->pipe;
	if (!hp)
		return;
	report_sync(rp);
	pthread_mutex_lock(&hp->mu);
	hp->quit = 1;
	pthread_cond_broadcast(&hp->cv);
	pthread_mutex_unlock(&hp->mu);
	pthread_join(hp->th, NULL);
	pthread_cond_destroy(&hp->cv);
	pthread_mutex_destroy(&hp->mu);
	for (int i = 0; i < NHB; i++)
		free(hp->buf[i]);
	free(hp);
	rp->pipe = NULL;
}

void report_event(struct report *rp, const struct mp_event *e)
{
	struct hev h = { .oaddr = e->oaddr, .naddr = e->naddr, .nsize = e->nsize,
			 .kind = e->kind };
	report_sync(rp);
	if ((h.g = ev_group(rp, e, &h.li, &h.name)) != NONE)
		ev_heap(rp, &h);
}

void report_events(struct report *rp, const struct mp_event *ev, size_t n)
{
	struct hev local[64], *buf = local;
	size_t fill = 0, cap = 64;
	struct hpipe *hp = rp->pipe;
	if (!hp && !rp->pipe_tried) {
		rp->pipe_tried = 1;
		hp = pipe_start(rp);
	}
	if (hp) {
		buf = hp->buf[hp->head % NHB];
		fill = hp->fill;
		cap = HB;
	}
	for (size_t i = 0; i < n; i++) {
		struct hev *h = &buf[fill];
		if ((h->g = ev_group(rp, &ev[i], &h->li, &h->name)) == NONE)
			continue;
		h->oaddr = ev[i].oaddr;
		h->naddr = ev[i].naddr;
		h->nsize = ev[i].nsize;
		h->kind = ev[i].kind;
		if (++fill < cap)
			continue;
		if (hp) {
			hp->fill = fill;
			pipe_push(hp);
			buf = hp->buf[hp->head % NHB];
		} else {
			heap_batch(rp, buf, fill);
		}
		fill = 0;
	}
	if (hp)
		hp->fill = fill;
	else
		heap_batch(rp, buf, fill);
}

/* ---- Output ---- */

static int cmp_group(const void *a, const void *b, void *ctx)
{
	const struct report *rp = ctx;
	const struct group *x = &rp->grp[*(const uint32_t *)a];
	const struct group *y = &rp->grp[*(const uint32_t *)b];
	const struct loc *lx = &rp->loc[x->loc], *ly = &rp->loc[y->loc];
	int c;
	if (x->num != y->num)
		return x->num > y->num ? -1 : 1;
	if (x->alloc != y->alloc)
		return x->alloc > y->alloc ? -1 : 1;
	if ((c = str_cmp(&rp->sp, x->name, y->name)))
		return c;
	if (x->free != y->free)
		return x->free > y->free ? -1 : 1;
	if (lx->addr != ly->addr)
		return lx->addr < ly->addr ? -1 : 1;
	if (lx->line != ly->line)
		return lx->line < ly->line ? -1 : 1;
	return (lx->trace > ly->trace) - (lx->trace < ly->trace);
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct report *rp = ctx;
	return str_cmp(&rp->sp, *(const uint32_t *)a, *(const uint32_t *)b);
}

static void put_name(FILE *out, const struct report *rp, uint32_t id)
{
	fwrite(str_ptr(&rp->sp, id), 1, rp->sp.s[id].len, out);
}

/* humanize.lua render() for one event kind: its first max groups, each
 * line after indent. */
static int render(struct report *rp, FILE *out, uint8_t kind, int human, const char *indent,
		  uint32_t max)
{
	uint32_t *ids = malloc(((size_t)rp->ngrp + 1) * sizeof(*ids)), n = 0, *names = NULL;
	uint64_t *start = calloc((size_t)rp->ngrp + 2, sizeof(*start));
	uint32_t *oname = malloc((rp->on + 1) * sizeof(*oname));
	if (!ids || !start || !oname) {
		free(ids);
		free(start);
		free(oname);
		return -1;
	}
	for (uint32_t g = 0; g < rp->ngrp; g++) {
		if (rp->grp[g].kind == kind)
			ids[n++] = g;
		start[g + 1] = start[g] + nowners(rp, g);
	}
	/* Owner names bucketed by group (counting sort over the table). */
	for (uint64_t k = 0; rp->otab && k <= rp->omask; k++)
		if (rp->otab[k].g1)
			oname[start[rp->otab[k].g1 - 1]++] = rp->otab[k].name;
	for (uint32_t g = rp->ngrp; g > 0; g--)
		start[g] = start[g - 1];
	start[0] = 0;
	qsort_r(ids, n, sizeof(*ids), cmp_group, rp);
	for (uint32_t i = 0; i < n && i < max; i++) {
		const struct group *gp = &rp->grp[ids[i]];
		char num[32], a[40], f[40];
		const uint32_t nn = nowners(rp, ids[i]);
		lua_d(num, gp->num);
		fmt_bytes(a, gp->alloc, human);
		fmt_bytes(f, gp->free, human);
		fputs(indent, out);
		put_name(out, rp, gp->name);
		fprintf(out, ": %s events\t+%s\t-%s\n", num, a, f);
		if (!nn)
			continue;
		names = oname + start[ids[i]];
		qsort_r(names, nn, sizeof(*names), cmp_name, rp);
		fprintf(out, "%s\tOverrides:\n", indent);
		for (uint32_t k = 0; k < nn; k++) {
			fprintf(out, "%s\t\t", indent);
			put_name(out, rp, names[k]);
			fputc('\n', out);
		}
		fputc('\n', out);
	}
	free(oname);
	free(start);
	free(ids);
	return 0;
}

/* Per-name accumulator (HEAP SUMMARY, folded). */
struct acc {
	uint32_t name;
	uint64_t a, b, c; /* meaning depends on the user */
};

struct accset {
	struct u64map idx; /* name + 1 -> index */
	struct acc *v;
	uint32_t n, cap;
	int oom;
};

static struct acc *acc_of(struct accset *s, uint32_t name)
{
	int isnew;
	uint64_t *i;
	/* Room first, so the index never points past the array. */
	if (grow(&s->v, &s->cap, (size_t)s->n + 1, sizeof(*s->v)) ||
	    !(i = u64map_put(&s->idx, (uint64_t)name + 1, s->n, &isnew))) {
		s->oom = 1;
		return NULL;
	}
	if (isnew)
		s->v[s->n++] = (struct acc){ .name = name };
	return &s->v[*i];
}

static void acc_free(struct accset *s)
{
	u64map_free(&s->idx);
	free(s->v);
}

/* process.lua form_heap_delta(): a = dbytes (as int64), b = nalloc, c = nfree. */
static int heap_delta(struct report *rp, struct accset *s)
{
	struct acc *x;
	for (uint32_t g = 0; g < rp->ngrp; g++) {
		const struct group *gp = &rp->grp[g];
		if (gp->kind == MP_ALLOC && gp->alloc > 0 && (x = acc_of(s, gp->name))) {
			x->a += gp->alloc;
			x->b += gp->num;
		}
	}
	/* Owners of REALLOC and FREE groups (ALLOC groups have none). */
	for (uint64_t k = 0; rp->otab && k <= rp->omask; k++) {
		const struct oslot *ow = &rp->otab[k];
		if (ow->g1) {
			if (!(x = acc_of(s, ow->name)))
				break;
			if (ow->allocated > 0) {
				x->a += ow->allocated;
				x->b += ow->count;
			}
			if (ow->freed > 0) {
				x->a -= ow->freed;
				x->c += ow->count;
			}
		}
	}
	return s->oom ? -1 : 0;
}

static int cmp_acc_a(const void *pa, const void *pb, void *ctx)
{
	const struct report *rp = ctx;
	const struct acc *x = pa, *y = pb;
	const int64_t a = (int64_t)x->a, b = (int64_t)y->a;
	if (a != b)
		return a > b ? -1 : 1;
	return str_cmp(&rp->sp, x->name, y->name);
}

/* humanize.lua leak_info(). */
static int leak_info(struct report *rp, FILE *out, int human)
{
	struct accset s = { 0 };
	int rc = heap_delta(rp, &s);
	if (s.n)
		qsort_r(s.v, s.n, sizeof(*s.v), cmp_acc_a, rp);
	fputs("HEAP SUMMARY:\n", out);
	for (uint32_t i = 0; i < s.n; i++) {
		const struct acc *x = &s.v[i];
		char b[40], na[32], nf[32];
		if ((int64_t)x->a <= 0)
			break;
		fmt_bytes(b, x->a, human);
		lua_d(na, x->b);
		lua_d(nf, x->c);
		put_name(out, rp, x->name);
		fprintf(out, " holds %s: %s allocs, %s frees\n", b, na, nf);
	}
	fputc('\n', out);
	acc_free(&s);
	return rc;
}

/* humanize.lua aliases(): lines split on '\n', empty ones skipped. */
static void aliases(struct report *rp, FILE *out)
{
	if (!rp->nalias)
		return;
	fputs("ALIASES:\n", out);
	for (uint32_t k = 0; k < rp->nalias; k++) {
		const uint32_t id = rp->alias[k];
		const char *p = str_ptr(&rp->sp, id), *end = p + rp->sp.s[id].len;
		unsigned lineno = 1;
		fprintf(out, "function_alias_%u:\n", k + 1);
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *e = nl ? nl : end;
			if (e > p) {
				rp->sb.len = 0;
				sb_escaped(&rp->sb, p, (size_t)(e - p), ESC_TAB);
				fprintf(out, "%u\t| ", lineno++);
				if (!rp->sb.oom)
					fwrite(rp->sb.p, 1, rp->sb.len, out);
				fputc('\n', out);
			}
			p = e + 1;
		}
		fputs("\n\n", out);
	}
}

/* One folded-stack line. Today a stack is one frame (the event's
 * location); a full stack is a list of frames, outermost first. ';' is
 * the frame separator, so it is replaced in names; flamegraph.pl takes the
 * weight after the last space, so spaces in names are fine. */
static void folded_line(FILE *out, const struct report *rp, const uint32_t *frames, size_t n,
			uint64_t w)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = str_ptr(&rp->sp, frames[i]);
		const uint32_t len = rp->sp.s[frames[i]].len;
		if (i)
			fputc(';', out);
		for (uint32_t k = 0; k < len; k++)
			fputc(p[k] == ';' ? ',' : p[k], out);
	}
	fprintf(out, " %" PRIu64 "\n", w);
}

static int cmp_acc_name(const void *pa, const void *pb, void *ctx)
{
	const struct report *rp = ctx;
	const struct acc *x = pa, *y = pb;
	return str_cmp(&rp->sp, x->name, y->name);
}

static int folded(struct report *rp, FILE *out, enum report_weight w)
{
	struct accset s = { 0 };
	struct acc *x;
	int rc;
	if (w == REPORT_W_LIVE) {
		for (uint64_t i = 0; rp->heap && i <= rp->hmask; i++)
			if (rp->heap[i].loc1 && (x = acc_of(&s, rp->heap[i].name)))
				x->a += rp->heap[i].size;
	} else {
		for (uint32_t g = 0; g < rp->ngrp; g++) {
			const struct group *gp = &rp->grp[g];
			if (gp->kind == MP_FREE || !(x = acc_of(&s, gp->name)))
				continue;
			x->a += w == REPORT_W_EVENTS ? gp->num : gp->alloc;
		}
	}
	if (s.n)
		qsort_r(s.v, s.n, sizeof(*s.v), cmp_acc_name, rp);
	for (uint32_t i = 0; i < s.n; i++)
		if (s.v[i].a)
			folded_line(out, rp, &s.v[i].name, 1, s.v[i].a);
	rc = s.oom ? -1 : 0;
	acc_free(&s);
	return rc;
}

int report_print(struct report *rp, FILE *out, const struct report_opts *o)
{
	static const struct report_opts defaults = { 0 };
	int rc = 0;
	report_sync(rp);
	if (!o)
		o = &defaults;
	if (o->format == REPORT_FOLDED) {
		rc = folded(rp, out, o->weight);
	} else {
		if (o->format != REPORT_LEAK_ONLY) {
			static const char *const title[] = { "ALLOCATIONS", "REALLOCATIONS",
							     "DEALLOCATIONS" };
			static const uint8_t kinds[] = { MP_ALLOC, MP_REALLOC, MP_FREE };
			for (int k = 0; k < 3; k++) {
				fprintf(out, "%s\n", title[k]);
				rc |= render(rp, out, kinds[k], o->human, "", UINT32_MAX);
				fputc('\n', out);
			}
		}
		rc |= leak_info(rp, out, o->human);
		aliases(rp, out);
	}
	if (rp->oom || rp->hoom || ferror(out))
		rc = -1;
	return rc ? -1 : 0;
}

/* The first n lines of ALLOCATIONS (ALLOC groups have no Overrides, so a
 * line per group), as `report` prints them: a summary that adds kinds or
 * merges names would match no line of it. */
void report_print_top(struct report *rp, FILE *out, int n, int human)
{
	report_sync(rp);
	fprintf(out, "  top allocation sites (first lines of ALLOCATIONS in "
		     "'luamemtrace report%s'):\n", human ? " --human-readable" : "");
	render(rp, out, MP_ALLOC, human, "  ", n > 0 ? (uint32_t)n : 0);
}

/* ---- luamemtrace report ---- */

static const char usage_text[] =
	"usage: luamemtrace report [--leak-only] [--human-readable]\n"
	"                          [--folded [--weight=bytes|events|live]] FILE\n"
	"\n"
	"Prints the report of a memprof stream (FILE, or - for stdin) like\n"
	"luajit-parse-memprof does.\n"
	"\n"
	"  --leak-only        only HEAP SUMMARY (and ALIASES)\n"
	"  --human-readable   KiB/MiB/GiB instead of bytes\n"
	"  --folded           folded stacks for flamegraph.pl / speedscope\n"
	"  --weight=W         folded weight: bytes allocated (default), allocating\n"
	"                     events, or live bytes at the end of the stream\n"
	"\n"
	"Exit status: 0 ok, 1 unreadable or malformed stream, 2 usage error,\n"
	"3 report printed from an incomplete stream: truncated, or its FILE.info\n"
	"says events were lost or the trace never ended.\n";

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("luamemtrace report: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try 'luamemtrace report --help')\n", stderr);
	return 2;
}

/* What the stream's sidecar says (info.h): 1 if the stream is known to be
 * incomplete, said on stderr. */
static int sidecar_warns(const char *path)
{
	struct info in;
	const int r = info_load(path, &in);

	if (r < 0)
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" is unreadable or not a luamemtrace sidecar: ignored\n", path);
	if (r <= 0)
		return 0;
	if (info_lossy(&in)) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX ": %" PRIu64
			" events, %" PRIu64 " symbol records and %" PRIu64
			" new VMs or dlopens were lost while tracing: the report is "
			"incomplete\n", path, in.lost, in.lost_sym, in.lost_vm);
		return 1;
	}
	if (!strcmp(in.state, "running")) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" says tracing never ended (the tracer died?): the stream may "
			"be incomplete\n", path);
		return 1;
	}
	return 0;
}

int report_main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "leak-only", no_argument, NULL, 'l' },
		{ "human-readable", no_argument, NULL, 'H' },
		{ "folded", no_argument, NULL, 'f' },
		{ "weight", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_opts o = { 0 };
	int leak = 0, fold = 0, weight_set = 0, c, fd, rc, status = 0;
	const char *path;
	struct mpr *r;
	struct report *rp;
	enum { BATCH = 64 };
	struct mp_sym sym;
	struct mp_event batch[BATCH];
	size_t nbatch = 0;

	opterr = 0;
	optind = 0; /* full re-initialisation (glibc): main may have parsed before */
	while ((c = getopt_long(argc, argv, "+:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			leak = 1;
			break;
		case 'H':
			o.human = 1;
			break;
		case 'f':
			fold = 1;
			break;
		case 'w':
			weight_set = 1;
			if (!strcmp(optarg, "bytes"))
				o.weight = REPORT_W_BYTES;
			else if (!strcmp(optarg, "events"))
				o.weight = REPORT_W_EVENTS;
			else if (!strcmp(optarg, "live"))
				o.weight = REPORT_W_LIVE;
			else
				return usage_error("bad --weight '%s': want bytes, events or live", optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default: {
			const char *a = argv[optind - 1];
			if (!strncmp(a, "--", 2))
				return usage_error("unrecognized option '%s'", a);
			return usage_error("unknown option '-%c'", optopt);
		}
		}
	}
	if (argc == optind)
		return usage_error("missing FILE");
	if (argc - optind > 1)
		return usage_error("expected one FILE, got %d arguments", argc - optind);
	if (fold && (leak || o.human))
		return usage_error("--folded can't be combined with --leak-only or --human-readable");
	if (weight_set && !fold)
		return usage_error("--weight needs --folded");
	o.format = fold ? REPORT_FOLDED : leak ? REPORT_LEAK_ONLY : REPORT_STANDARD;

	path = argv[optind];
	if (!strcmp(path, "-")) {
		fd = 0;
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "luamemtrace report: %s: %s\n", path, strerror(errno));
		return 1;
	}
	r = mpr_open_fd(fd, path);
	rp = report_new();
	if (!r || !rp) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		status = 1;
		goto out;
	}
	/* Events go in batches (see report_events); a symbol record flushes
	 * the batch first, as naming depends on stream order. */
	for (;;) {
		rc = mpr_next(r, &sym, &batch[nbatch]);
		if (rc == MPR_EVENT && ++nbatch < BATCH)
			continue;
		report_events(rp, batch, nbatch);
		nbatch = 0;
		if (rc == MPR_SYM)
			report_sym(rp, &sym);
		else if (rc != MPR_EVENT)
			break;
	}
	if (rc == MPR_ERROR) {
		fprintf(stderr, "luamemtrace report: %s\n", mpr_diag(r));
		status = 1;
		goto out;
	}
	if (rc == MPR_TRUNC) {
		fprintf(stderr, "luamemtrace report: warning: %s; reporting the %" PRIu64
				" events read\n",
			mpr_diag(r), mpr_nevents(r));
		status = 3;
	}
	if (fd > 0 && sidecar_warns(path))
		status = 3;
	if (report_print(rp, stdout, &o) || fflush(stdout)) {
		fprintf(stderr, "luamemtrace report: %s\n",
			ferror(stdout) ? "error writing the report" : "out of memory");
		status = 1;
	}
out:
	report_free(rp);
	mpr_close(r);
	if (fd > 0)
		close(fd);
	return status;
}
