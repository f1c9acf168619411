/* The report's insides, shared by its files: the tables it is built on
 * (tables.c), naming and grouping (aggregate.c), the block map and its
 * thread (heap.c), and the outputs (text.c, folded.c); cli.c is
 * `luamemtrace report`. See aggregate.c for the model it follows. Not an
 * API: report.h is. */
#ifndef LMT_REPORT_INT_H
#define LMT_REPORT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

#define NONE UINT32_MAX

/* An allocation figure as reported: report_scale's estimate. */
static inline uint64_t scaled(const struct report *rp, uint64_t v);

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

struct kv {
	uint64_t k, v;
};

struct kvmap {
	struct kv *slot;
	uint32_t mask, n; /* mask + 1 slots */
	int has0;
	uint64_t v0;
};

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

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

/* Per-name accumulator (HEAP SUMMARY, folded). */
struct acc {
	uint32_t name;
	uint64_t a, b, c; /* meaning depends on the user */
};

struct accset {
	struct kvmap idx; /* name + 1 -> index */
	struct acc *v;
	uint32_t n, cap;
	int oom;
};

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

/* A group's owner links, kept by the live stage apart from struct group
 * (which the naming stage grows and writes concurrently). */
struct gown {
	uint32_t nowners;
	/* Owner hit last (location, otab slot, otab epoch): checked without
	 * touching otab, whose lines are cold for a group like INTERNAL
	 * frees that hits many owners. */
	uint32_t last_loc, last_own, last_epoch;
};

/* What the live stage needs of an event; g is never NONE. */
struct lev {
	uint64_t oaddr, naddr, nsize;
	uint32_t g, li, name;
	uint32_t key; /* its folded stack's name (stacks.c), or name */
	uint32_t seq; /* its number in the stream, from 0 */
	uint8_t kind;
};

/* The live stage's thread: batches [tail, head) are filled and waiting,
 * buf[head % NHB] is the one being filled. */
enum { HB = 8192, NHB = 4 };
struct lpipe {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct lev *buf[NHB];
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
struct block {
	uint64_t addr, size;
	uint32_t loc1, name;
	uint32_t key; /* the allocating event's (struct lev) */
	uint32_t born; /* the bucket it was allocated in (report_temporal) */
};

/* Blocks by (key, bucket allocated, bucket freed: nb if never): bytes and
 * count (report_temporal). */
struct tcell {
	uint32_t key, born, dead;
	uint64_t bytes, n;
};

struct trace {
	uint64_t proto, line;
};

/* A Lua frame as pprof wants it (pprof.c): its function (chunk:firstline,
 * in file) and line. */
struct pframe {
	uint32_t fn, file;
	uint64_t start, line;
};

struct report {
	struct strpool sp;
	double scale; /* report_scale: > 1, a --duty sample's estimates */
	uint32_t s_internal;
	int oom;

	/* Symbol state. gen changes whenever a cached name could change. */
	uint32_t gen;
	struct kvmap watch;  /* proto addresses some cached name was made from */
	struct kvmap lfunc;  /* proto addr -> display id (chunk or alias) */
	struct kvmap lfirst; /* proto addr -> its first line */
	struct kvmap disp;   /* raw chunk id -> display id */
	uint32_t *alias;      /* raw chunk ids, in order of first appearance */
	uint32_t nalias, alias_cap;
	struct kvmap traces; /* traceno -> index into trace[] */
	struct trace *trace;
	uint32_t ntrace, trace_cap;
	struct kvmap cfunc;  /* addr -> escaped name id */
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
	struct lpipe *pipe;
	int pipe_tried, blk_oom;
	int no_heap; /* report_no_heap: groups and counts only */
	struct gown *gown;
	uint32_t gown_cap;
	struct oslot *otab;
	uint64_t omask, on;
	uint32_t oepoch; /* bumped when otab is rehashed */

	/* Live blocks. */
	struct block *blk;
	uint64_t bmask, nblk;

	struct sbuf sb;

	/* Stacks, from the stream's companion (stacks.c). */
	int has_stacks;
	uint32_t *frname;  /* frame number - 1 -> its name */
	uint32_t nfr, fr_cap;
	uint32_t *stkey;   /* stack number - 1 -> its folded name, root first */
	uint32_t nstk, stk_cap;
	uint64_t stk_cut;   /* stacks whose key was cut (read_caps.h) */
	uint64_t stk_bytes; /* bytes of the distinct stack keys */
	struct accset fold; /* folded name -> a: bytes allocated, b: events */

	/* Over time. Always: events seen, bytes held now (the block map's),
	 * their maximum and the event after which it was first reached.
	 * With report_temporal (nb buckets of a tn-event stream): each
	 * bucket's largest and last held bytes, the blocks by tcell, and what
	 * was live by key after event peak_seq. */
	uint32_t nev;
	uint64_t held, held_max;
	uint32_t held_at;
	uint32_t nb, peak_seq;
	uint64_t tn;
	int peak_done, tdone;
	uint64_t *bmax, *bend;
	struct kvmap tidx; /* (key, born, dead) -> index in tcv */
	struct tcell *tcv;
	uint32_t ntc, tc_cap;
	struct accset peak;

	/* --folded of several streams: this one's root frame. */
	const char *label;

	/* Lua frames by name, for pprof (pprof.c). */
	struct kvmap pfr;   /* frame name -> index in pfv */
	struct pframe *pfv;
	uint32_t npf, pf_cap;
};

static inline uint64_t scaled(const struct report *rp, uint64_t v)
{
	/* rp->scale is at most INFO_SCALE_MAX, v any count: saturates, as a
	 * double at or past 2^64 has no uint64_t. */
	const double x = (double)v * rp->scale + 0.5;

	if (!(rp->scale > 1))
		return v;
	return x < 18446744073709551616.0 ? (uint64_t)x : UINT64_MAX;
}

/* -- tables.c -- */

int grow(void *pp, uint32_t *cap, size_t need, size_t sz);
void *big_calloc(size_t n, size_t sz);
void big_free(void *p, size_t n, size_t sz);
uint64_t *kvmap_get(const struct kvmap *m, uint64_t k);
uint64_t *kvmap_put(struct kvmap *m, uint64_t k, uint64_t v, int *isnew);
void kvmap_free(struct kvmap *m);
const char *str_ptr(const struct strpool *sp, uint32_t id);
int str_cmp(const struct strpool *sp, uint32_t a, uint32_t b);
uint32_t intern(struct strpool *sp, const char *p, size_t n);
void sb_put(struct sbuf *b, const char *s, size_t n);
void sb_puts(struct sbuf *b, const char *s);
/* Target-controlled text, escaped (esc.h). */
void sb_escaped(struct sbuf *b, const char *s, size_t n, int flags);
int lua_d(char *out, uint64_t v);
int lua_hex(char *out, uint64_t v);
int fmt_bytes(char *out, uint64_t v, int human);

/* -- live.c -- */

uint32_t nowners(const struct report *rp, uint32_t g);
void live_event(struct report *rp, const struct lev *e);
/* report_temporal: the blocks live at the end join the cells (freed in
 * bucket nb), once. 0, or -1 out of memory. */
int temporal_end(struct report *rp);
void live_batch(struct report *rp, const struct lev *e, size_t n);
struct lpipe *pipe_start(struct report *rp);
void pipe_push(struct lpipe *hp);
void report_sync(struct report *rp);
void pipe_stop(struct report *rp);

/* -- text.c -- */

struct acc *acc_of(struct accset *s, uint32_t name);
void acc_free(struct accset *s);

/* -- aggregate.c -- */

/* Location (addr, line, trace) as the report names it now. */
uint32_t name_of(struct report *rp, uint64_t addr, uint64_t line, uint64_t trace);

/* -- folded.c -- */

int folded(struct report *rp, FILE *out, enum report_weight w);
/* Live blocks by key (struct block): a bytes, b blocks. */
void live_by_key(struct report *rp, struct accset *s);
/* What each key allocated (ALLOC and REALLOC): a bytes, b events; by
 * folded stack if stacks and the report has them, else by location. */
void alloc_by_key(struct report *rp, int stacks, struct accset *s);
/* HEAP SUMMARY BY STACK: live blocks by their allocating stack. */
int leak_by_stack(struct report *rp, FILE *out, int human);

/* -- flame.c -- */

/* The flame graph page (REPORT_FLAMEGRAPH), titled title; of several
 * reports: flame_new, flame_add each (label: its root frame), flame_write. */
int flamegraph(struct report *rp, FILE *out, const char *title);
struct fl *flame_new(void);
int flame_add(struct fl *f, struct report *rp, const char *label);
int flame_write(struct fl *f, FILE *out, const char *title);
void flame_free(struct fl *f);

/* -- pprof.c -- */

/* Frame name is a Lua line: prototype addr (if the stream named it), line.
 * 0, or -1 out of memory. */
int pframe_add(struct report *rp, uint32_t name, uint64_t addr, uint64_t line);
/* The gzipped pprof profile (REPORT_PPROF); of several reports:
 * pprof_new, pprof_add each (label: its "process" label), pprof_write. */
int pprof(struct report *rp, FILE *out);
struct pp *pprof_new(void);
int pprof_add(struct pp *p, struct report *rp, const char *label);
int pprof_write(struct pp *p, FILE *out);
void pprof_free(struct pp *p);

#endif
