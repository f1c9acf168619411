/* The streams a trace writes (streams/out.c): a memprof stream per VM
 * with -o DIR, one for the process otherwise (several VMs merged:
 * streams/merge.h), each with its sidecar and, with --stacks, its stacks
 * companion. */
#ifndef LMT_OUT_H
#define LMT_OUT_H

#include <limits.h>
#include <stdint.h>

#include "format/memprof_write.h"
#include "format/stacks.h"
#include "report/report.h"
#include "streams/merge.h"
#include "util/u64set.h"

struct tr;
struct tproc;
struct tvm;
struct lmt_stats;


/* A stream and its sidecar. */
struct tout {
	char path[PATH_MAX];
	char info[PATH_MAX + 8]; /* the sidecar, "" if none (a device) */
	int fd;
	int info_made;
	int finished;      /* the epilogue is written */
	int failed;        /* incomplete: an error, or written in part */
	const char *end;   /* why it ended */
	double wall0, t0;  /* when it began: epoch, monotonic */
	double duty0;      /* --duty: seconds recorded before it began */
	double secs;       /* how long it ran, once finished */
	struct tproc *p;   /* its process */
	int vm;            /* its VM's number, -1 if several share it */
	unsigned nvms;     /* VMs written to it */
	uint64_t n[4], bytes_alloc, bytes_free; /* events and bytes by kind */
	struct report *rep; /* the summary's top sites */
	int tally;          /* events go into rep: a live view, or top sites
			     * the summary will print (output.c) */
	struct mpw w;
	/* --stacks: the companion FILE.stacks and its numbering */
	struct skw *sk;
	int skfd;
	char skpath[PATH_MAX + 8];
	struct u64map skframes, skstacks; /* hash -> number */
	struct u64map skheld; /* several VMs: hash -> held stack (callstacks.c) */
	void **skheld_v;
	uint32_t nskheld, skheld_cap;
	uint32_t nskf, nsks; /* numbers given (without a companion) */
	int stk;             /* stacks recorded: the companion, the live report */
	/* Several VMs: their records merged in the process's order
	 * (merge.h), each under the key and source out_at set. */
	struct merge *mg;
	const void *at_src;
	uint64_t at_key;
	unsigned merge_oom;
};

/* The -o target can be made: checked, nothing created. */
int check_output(struct tr *t);
/* The stream of VM v (made now with -o DIR; the one stream otherwise):
 * NULL having said why. */
struct tout *out_for(struct tr *t, struct tvm *v);
/* -o FILE: the one stream (p: the process whose symbols lead it). */
int out_one(struct tr *t, struct tproc *p);
void out_sym(struct tout *o, const struct mp_sym *s);
/* What out_sym and out_event write next comes from VM src (NULL: the
 * process) under key (merge.h; 0: in order as it comes). */
void out_at(struct tout *o, const void *src, uint64_t key);
/* The stream has a second VM: merge from now on. -1 out of memory. */
int out_merge(struct tout *o);
/* A process's C symbols into each of its streams (struct syms' emit). */
void proc_sym(void *ctx, const struct mp_sym *s);
/* An event, and its stack's number in the companion (0: none). */
void out_event(struct tout *o, const struct mp_event *e, uint32_t sid);
/* Events may go straight to the stream (out_lone_event): one VM's, no
 * stacks, not finished. */
static inline int out_lone(const struct tout *o)
{
	return !o->mg && !o->sk && !o->stk && !o->finished;
}
/* An event counted, by kind and bytes. */
static inline void out_count(struct tout *o, const struct mp_event *e)
{
	o->n[e->kind & 3]++;
	if (e->kind & MP_ALLOC)
		o->bytes_alloc += e->nsize;
	if (e->kind & MP_FREE)
		o->bytes_free += e->osize;
}
/* An event without a stack written, tallied (top sites) and counted. */
static inline void out_lone_event(struct tout *o, const struct mp_event *e)
{
	if (o->fd >= 0)
		mpw_event(&o->w, e);
	if (o->tally)
		report_event(o->rep, e);
	out_count(o, e);
}
/* Ends a stream: its epilogue and final sidecar. */
void out_finish(struct tr *t, struct tout *o, const char *end);
/* Its sidecar, now (done: final). */
void out_info(struct tr *t, struct tout *o, const struct lmt_stats *st, int done);

#endif
