/* Memprof report: an aggregator fed record by record (from the reader or
 * live from the tracer) that prints what tarantool/luajit's
 * tools/memprof.lua prints, plus folded stacks and the top of ALLOCATIONS.
 *
 * Memory is bounded by live allocations + symbols + locations, never by
 * the number of events. Names are escaped by util/esc.h's rule in every output.
 */
#ifndef LMT_REPORT_H
#define LMT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "format/memprof.h"
#include "format/stacks.h"

enum report_format {
	REPORT_STANDARD = 0, /* ALLOCATIONS, REALLOCATIONS, DEALLOCATIONS, HEAP SUMMARY, ALIASES */
	REPORT_LEAK_ONLY,    /* HEAP SUMMARY, ALIASES */
	REPORT_FOLDED,       /* "frame;frame weight" lines for flamegraph.pl / speedscope */
	REPORT_PPROF,        /* gzipped pprof heap profile (go tool pprof, Pyroscope) */
	REPORT_FLAMEGRAPH,   /* a self-contained HTML flame graph page */
};

enum report_weight {
	REPORT_W_BYTES = 0, /* bytes allocated (ALLOC nsize + REALLOC nsize) */
	REPORT_W_EVENTS,    /* allocating events (ALLOC + REALLOC) */
	REPORT_W_LIVE,      /* bytes still allocated at the end, by owner */
};

struct report_opts {
	enum report_format format;
	int human;                 /* KiB/MiB/GiB like --human-readable */
	enum report_weight weight; /* REPORT_FOLDED only */
	int by_stack;              /* REPORT_LEAK_ONLY: HEAP SUMMARY BY STACK */
	const char *title;         /* REPORT_FLAMEGRAPH: the page's */
};

struct report;

struct report *report_new(void);
void report_sym(struct report *rp, const struct mp_sym *s);
/* Before any event: no heap stage (live blocks, owners, what is held),
 * only what ALLOCATIONS, REALLOCATIONS and DEALLOCATIONS count, which is
 * all report_print_top needs; the heap stage is most of the cost of an
 * event (the tracer's summary without a live view). */
void report_no_heap(struct report *rp);
void report_event(struct report *rp, const struct mp_event *e);
/* Same as report_event on each, but faster: the heap map's work runs in
 * prefetching batches, on a second thread where there is a CPU for it. */
void report_events(struct report *rp, const struct mp_event *ev, size_t n);
/* Stacks from the stream's companion (stacks.h), defined in its order:
 * frame number id, named as the report names locations now; stack number
 * id of n frames (innermost first). 0, or -1 out of memory or a bad
 * number: the report is then incomplete (report_print returns -1). */
void report_stacks_on(struct report *rp); /* before any event */
int report_frame(struct report *rp, uint32_t id, const struct sk_frame *f);
int report_stack(struct report *rp, uint32_t id, const uint32_t *frames, uint32_t n,
		 unsigned flags);
/* report_stack's -2: the stream's distinct stacks name more than
 * REPORT_KEYS_MAX_BYTES (format/caps.h); the report is then incomplete.
 * Stacks whose folded name was cut to REPORT_KEY_MAX_FRAMES frames or
 * REPORT_KEY_MAX_BYTES bytes (under a "[cut]" root): how many. */
uint64_t report_stacks_cut(const struct report *rp);
/* report_events with each event's stack number (0: none). */
void report_events_stk(struct report *rp, const struct mp_event *ev, const uint32_t *sid,
		       size_t n);
/* A --duty sample (info_scale): what was allocated (ALLOCATIONS,
 * REALLOCATIONS, DEALLOCATIONS; the allocation weights of --folded,
 * --pprof and the flame graph) is multiplied by k > 1, estimates for the
 * whole run, and the outputs say so. What is held is the sample's own:
 * blocks allocated in a window whose free no window saw. */
void report_scale(struct report *rp, double k);
/* Returns 0, or -1 if out of memory was hit while aggregating (the output
 * would be incomplete) or the stream FILE reports an error. */
int report_print(struct report *rp, FILE *out, const struct report_opts *o);
/* The summary's top sites: a heading, then the first n lines of the
 * ALLOCATIONS section exactly as report_print prints them (same groups,
 * order, text and numbers, human as --human-readable), each after two
 * spaces. */
void report_print_top(struct report *rp, FILE *out, int n, int human);
/* Over time, for the flame graph: after the stream (report_sync'd), its
 * events and the event after which the heap held the most, and that
 * most. Then, before a second report of the same stream gets its first
 * event: nb buckets (at most 1024) of its n events, and what was live
 * after event peak. 0, or -1 out of memory. */
void report_peak(struct report *rp, uint64_t *n, uint32_t *peak, uint64_t *bytes);
/* The live view's rows (luamemtrace top): by location, or (stacks) by
 * full stack, folded root first; what each allocated so far (ALLOC and
 * REALLOC: bytes, events) and holds now (bytes, blocks). A malloc'd array,
 * its length in *n; names point into rp, valid until its next record.
 * NULL: out of memory. */
struct report_site {
	const char *name;
	size_t name_len;
	uint64_t alloc, nalloc, held, nheld;
};
struct report_site *report_sites(struct report *rp, int stacks, size_t *n);
int report_temporal(struct report *rp, uint32_t nb, uint64_t n, uint32_t peak);
/* A block live at the end of the stream (luamemtrace heap --with): its
 * address and size, the location that allocated it (or reallocated it
 * last) and, with stacks, its folded stack (NULL otherwise). site_id and
 * stack_id are stable while rp gets no new record; the names too. */
struct report_block {
	uint64_t addr, size;
	uint32_t site_id, stack_id;
	const char *site, *stack;
	size_t site_len, stack_len;
};
/* The block live at addr (after the stream): 1 with *b, or 0. */
int report_block_at(struct report *rp, uint64_t addr, struct report_block *b);
/* Blocks live at the end of the stream. */
uint64_t report_nblocks(struct report *rp);
/* Reads stream path and, if there, its FILE.stacks into rp, saying on
 * stderr what made it incomplete: LMT_OK, LMT_LOSSY (truncated, or its
 * sidecar says so), or LMT_ERR (said). */
int report_read(struct report *rp, const char *path);
void report_free(struct report *rp);

/* `luamemtrace report ...`; argv[0] is "report". Exit status:
 * 0 ok, 1 unreadable/malformed stream or output error, 2 usage,
 * 3 report printed from an incomplete stream (EOF mid-record or no
 * epilogue, or its sidecar FILE.info reports loss or an unfinished trace). */
int report_main(int argc, char **argv);

#endif
