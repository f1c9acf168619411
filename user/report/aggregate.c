/* Memprof report: aggregation compatible with tarantool/luajit
 * tools/memprof.lua (memprof/{parse,process,humanize}.lua, utils/symtab.lua).
 *
 * Model of the reference parser, which this file follows step by step:
 * - Symbol state (protos, traces, C symbols) is updated in stream order
 *   and every event is named with the state at that moment.
 * - Events are grouped per kind by the raw location (addr, line, traceno);
 *   a group keeps the name of its first event.
 * - A block map addr -> {size, owner location, owner name} links a
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
 * by util/esc.h's rule (C0, DEL, C1 controls and ill-formed UTF-8; printable
 * text, backslashes included, unchanged so it matches the parser byte for
 * byte), so every output built from them is escaped: the report, folded
 * stacks, the summary's top sites. Chunk names with '\n' are aliased
 * (function_alias_K) as the parser does; their ALIASES text is escaped line
 * by line by the same rule, keeping TABs (source indentation).
 *
 * Memory: hash tables with open addressing, sized by live blocks, symbols,
 * locations and names; nothing grows with the number of events.
 *
 * Two stages: naming and counting (symbol state, groups) and the block map
 * (live blocks, owner links) share no state but the group index an event
 * maps to, so report_events hands the live stage to a second thread on
 * machines with more than one CPU; report_sync waits for it before any
 * output.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


#include "aggregate.h"
#include "live.h"
#include "util/numfmt.h"
#include "util/hash.h"

void report_scale(struct report *rp, double k)
{
	rp->scale = k > 1 ? k : 0;
}

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


void report_free(struct report *rp)
{
	if (!rp)
		return;
	pipe_stop(rp);
	free(rp->gown);
	free(rp->sp.arena);
	free(rp->sp.s);
	free(rp->sp.tab);
	kvmap_free(&rp->lfunc);
	kvmap_free(&rp->lfirst);
	kvmap_free(&rp->pfr);
	free(rp->pfv);
	kvmap_free(&rp->watch);
	kvmap_free(&rp->disp);
	kvmap_free(&rp->traces);
	kvmap_free(&rp->cfunc);
	free(rp->alias);
	free(rp->trace);
	free(rp->caddr);
	free(rp->loc);
	free(rp->ltab);
	free(rp->grp);
	big_free(rp->otab, rp->otab ? rp->omask + 1 : 0, sizeof(*rp->otab));
	big_free(rp->blk, rp->blk ? rp->bmask + 1 : 0, sizeof(*rp->blk));
	free(rp->sb.p);
	free(rp->frname);
	free(rp->stkey);
	acc_free(&rp->fold);
	free(rp->bmax);
	free(rp->bend);
	kvmap_free(&rp->tidx);
	free(rp->tcv);
	acc_free(&rp->peak);
	free(rp);
}

void report_peak(struct report *rp, uint64_t *n, uint32_t *peak, uint64_t *bytes)
{
	report_sync(rp);
	*n = rp->nev;
	*peak = rp->held_at;
	*bytes = rp->held_max;
}

int report_temporal(struct report *rp, uint32_t nb, uint64_t n, uint32_t peak)
{
	if (!nb || nb > 1024 || rp->nev || !(rp->bmax = calloc(nb, sizeof(*rp->bmax))) ||
	    !(rp->bend = calloc(nb, sizeof(*rp->bend))))
		return -1;
	for (uint32_t b = 0; b < nb; b++)
		rp->bmax[b] = UINT64_MAX; /* no event in it yet */
	rp->nb = nb;
	rp->tn = n;
	rp->peak_seq = peak;
	return 0;
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
	if ((d = kvmap_get(&rp->disp, raw))) {
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
		if ((dispid = intern_sb(rp)) == NONE || !kvmap_put(&rp->disp, raw, dispid, &isnew))
			goto oom;
	}
	if (!(v = kvmap_put(&rp->lfunc, s->addr, dispid, &isnew)) ||
	    !kvmap_put(&rp->lfirst, s->addr, s->line, &isnew))
		goto oom;
	if (isnew || *v != dispid) {
		*v = dispid;
		/* Protos loaded while profiling are new addresses no name
		 * depends on yet: no need to rename every location. */
		if (kvmap_get(&rp->watch, s->addr))
			rp->gen++;
	}
	return;
oom:
	rp->oom = 1;
}

static void sym_trace(struct report *rp, const struct mp_sym *s)
{
	uint64_t *v = kvmap_get(&rp->traces, s->addr);
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
	    !kvmap_put(&rp->traces, s->addr, rp->ntrace, &isnew)) {
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
	if ((id = intern_sb(rp)) == NONE || !(v = kvmap_put(&rp->cfunc, s->addr, id, &isnew)))
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
	} else if ((v = kvmap_get(&rp->lfunc, addr))) {
		const uint32_t id = (uint32_t)*v;
		sb_put(&rp->sb, str_ptr(&rp->sp, id), rp->sp.s[id].len);
		num[0] = ':';
		sb_put(&rp->sb, num, 1 + (size_t)lua_d(num + 1, line));
	} else if (cfunc_floor(rp, addr, &key)) {
		const uint32_t id = (uint32_t)*kvmap_get(&rp->cfunc, key);
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
		if ((v = kvmap_get(&rp->traces, l->trace))) {
			const struct trace *t = &rp->trace[*v];
			sb_puts(&rp->sb, " started at ");
			name_base(rp, t->proto, t->line);
			if (!kvmap_put(&rp->watch, t->proto, 1, &isnew))
				return NONE;
		}
	} else {
		name_base(rp, l->addr, l->line);
		if (!kvmap_put(&rp->watch, l->addr, 1, &isnew))
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
	h = (uint32_t)hash_u64(addr * HASH_GOLDEN ^ hash_u64(line + (trace << 32) + trace));
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

uint32_t name_of(struct report *rp, uint64_t addr, uint64_t line, uint64_t trace)
{
	const uint32_t li = loc_get(rp, addr, line, trace);

	return li == NONE ? NONE : loc_name(rp, &rp->loc[li]);
}

uint32_t cframe_name(struct report *rp, uint64_t addr)
{
	char num[32];
	uint64_t key;
	uint32_t id;

	if (!cfunc_floor(rp, addr, &key))
		return name_of(rp, addr, 0, 0);
	id = (uint32_t)*kvmap_get(&rp->cfunc, key);
	rp->sb.len = 0;
	sb_puts(&rp->sb, "[C] ");
	sb_put(&rp->sb, str_ptr(&rp->sp, id), rp->sp.s[id].len);
	if (key != addr) {
		sb_puts(&rp->sb, "+");
		sb_put(&rp->sb, num, (size_t)lua_hex(num, addr - key));
	}
	return intern_sb(rp);
}

/* -- Lua frames, for pprof -- */

int pframe_add(struct report *rp, uint32_t name, uint64_t addr, uint64_t line,
	       const char *fname, size_t fname_len)
{
	const uint64_t *chunk = kvmap_get(&rp->lfunc, addr);
	const uint64_t *first = kvmap_get(&rp->lfirst, addr);
	struct pframe *f;
	uint64_t *i;
	const char *p;
	uint32_t len;
	char num[32];
	int isnew;

	if (!chunk || kvmap_get(&rp->pfr, name))
		return 0;
	if (grow(&rp->pfv, &rp->pf_cap, (size_t)rp->npf + 1, sizeof(*rp->pfv)) ||
	    !(i = kvmap_put(&rp->pfr, name, rp->npf, &isnew)))
		return -1;
	f = &rp->pfv[rp->npf++];
	p = str_ptr(&rp->sp, (uint32_t)*chunk);
	len = rp->sp.s[*chunk].len;
	if (len && *p == '@') {
		p++;
		len--;
	}
	f->file = intern(&rp->sp, p, len);
	/* a first line of -1 (2^64 - 1 in the stream) is 0 here */
	f->start = first && *first != UINT64_MAX ? *first : 0;
	rp->sb.len = 0;
	sb_put(&rp->sb, p, len);
	num[0] = ':';
	sb_put(&rp->sb, num, 1 + (size_t)lua_d(num + 1, f->start));
	if (fname_len) {
		sb_puts(&rp->sb, " ");
		sb_escaped(&rp->sb, fname, fname_len, 0);
	}
	f->fn = rp->sb.oom ? NONE : intern(&rp->sp, rp->sb.p ? rp->sb.p : "", rp->sb.len);
	f->line = line;
	return f->file == NONE || f->fn == NONE ? -1 : 0;
}

/* The event's folded key: its stack's name, else its own (see stacks.c);
 * what it allocates is counted for --folded. */
static int ev_key(struct report *rp, const struct mp_event *e, struct lev *h,
		  uint32_t sid)
{
	struct acc *x;

	h->key = sid && sid <= rp->nstk ? rp->stkey[sid - 1] : h->name;
	if (!rp->has_stacks)
		return 0;
	if (h->key == h->name && memchr(str_ptr(&rp->sp, h->name), ';',
					rp->sp.s[h->name].len)) {
		/* A one-frame stack: no ';' in it (report/stacks.c). */
		const char *p = str_ptr(&rp->sp, h->name);
		rp->sb.len = 0;
		for (uint32_t k = 0; k < rp->sp.s[h->name].len; k++)
			sb_put(&rp->sb, p[k] == ';' ? "," : &p[k], 1);
		if ((h->key = intern_sb(rp)) == NONE) {
			rp->oom = 1;
			return -1;
		}
	}
	if (!(e->kind & MP_ALLOC))
		return 0;
	if (!(x = acc_of(&rp->fold, h->key))) {
		rp->oom = 1;
		return -1;
	}
	x->a += e->nsize;
	x->b++;
	return 0;
}

void report_no_heap(struct report *rp)
{
	rp->no_heap = 1;
	rp->pipe_tried = 1; /* and no thread for it */
}

/* The block map and owner links: parse_alloc/realloc/free in parse.lua. */
void report_event(struct report *rp, const struct mp_event *e)
{
	struct lev h = { .oaddr = e->oaddr, .naddr = e->naddr, .nsize = e->nsize,
			 .kind = e->kind, .seq = rp->nev++ };
	report_sync(rp);
	if ((h.g = ev_group(rp, e, &h.li, &h.name)) != NONE && !ev_key(rp, e, &h, 0) &&
	    !rp->no_heap)
		live_event(rp, &h);
}

void report_events(struct report *rp, const struct mp_event *ev, size_t n)
{
	report_events_stk(rp, ev, NULL, n);
}

void report_events_stk(struct report *rp, const struct mp_event *ev, const uint32_t *sid,
		       size_t n)
{
	struct lev local[64], *buf = local;
	size_t fill = 0, cap = 64;
	struct lpipe *hp = rp->pipe;
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
		struct lev *h = &buf[fill];
		h->seq = rp->nev++;
		if ((h->g = ev_group(rp, &ev[i], &h->li, &h->name)) == NONE ||
		    ev_key(rp, &ev[i], h, sid ? sid[i] : 0))
			continue;
		h->oaddr = ev[i].oaddr;
		h->naddr = ev[i].naddr;
		h->nsize = ev[i].nsize;
		h->kind = ev[i].kind;
		if (rp->no_heap || ++fill < cap)
			continue;
		if (hp) {
			hp->fill = fill;
			pipe_push(hp);
			buf = hp->buf[hp->head % NHB];
		} else {
			live_batch(rp, buf, fill);
		}
		fill = 0;
	}
	if (hp)
		hp->fill = fill;
	else
		live_batch(rp, buf, fill);
}
