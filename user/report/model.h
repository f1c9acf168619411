/* The aggregate: what the stream readers feed and every output reads.
 *
 * The report's layers, each calling only those below it:
 * - cli.c: `luamemtrace report`, and report_print, which picks the output;
 * - outputs, leaves that read the aggregate and call no other output:
 *   text.c (the parser's report, the summary's top sites), folded.c,
 *   pprof.c, flame.c (the flame graph page), sites.c (top's live view);
 * - aggregation, the only writer of the aggregate: aggregate.c (symbols,
 *   names, groups; report_sym, report_event*), stacks.c (frames and
 *   stacks), live.c (live blocks, owners, held bytes over time), keys.c
 *   (the aggregate by key, for the outputs);
 * - tables.c (containers, strings); numbers as text are util/numfmt.h's,
 *   hashing util/hash.h's.
 *
 * An output may use the scratch buffer (sb) and intern names into the pool
 * (sp), which changes nothing another output reads. See aggregate.c for
 * the model it follows. Not an API: report.h is. */
#ifndef LMT_REPORT_MODEL_H
#define LMT_REPORT_MODEL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "report/report.h"
#include "tables.h"

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

/* A Lua frame as pprof wants it (pframe_add, aggregate.c): its function (chunk:firstline,
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
	uint64_t stk_cut;   /* stacks whose key was cut (format/caps.h) */
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

	/* Lua frames by name, for pprof (pframe_add). */
	struct kvmap pfr;   /* frame name -> index in pfv */
	struct pframe *pfv;
	uint32_t npf, pf_cap;
};

/* An allocation figure as reported: report_scale's estimate. */
static inline uint64_t scaled(const struct report *rp, uint64_t v)
{
	/* rp->scale is at most INFO_SCALE_MAX, v any count: saturates, as a
	 * double at or past 2^64 has no uint64_t. */
	const double x = (double)v * rp->scale + 0.5;

	if (!(rp->scale > 1))
		return v;
	return x < 18446744073709551616.0 ? (uint64_t)x : UINT64_MAX;
}

#endif
