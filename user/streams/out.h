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
#include "streams/stknum.h"
#include "util/u64set.h"

#include <sys/types.h>

/* What the streams need of the options (the session fills it). */
struct out_opts {
	const char *out; /* -o: a file, a device, or a directory (DIR/) */
	int force;       /* -f: replace what is there */
	int floor;       /* --floor: write nothing */
	unsigned stacks; /* --stacks: a companion beside each stream */
	int quiet, top;  /* the summary's top sites: -q, --top */
	int live;        /* a live view (top) tallies every stream */
	int several;     /* --all or several -p: -o must be a directory */
};

/* Whose stream it is: what its sidecar, its name and the summary say. */
#define LMT_SNAME 48
struct out_who {
	pid_t pid, parent;
	pid_t nspid; /* its PID in its own PID namespace; 0: ours */
	char comm[16];
	char exe[PATH_MAX];
};

/* The trace's streams. */
struct streams {
	struct out_opts o;
	int dir;              /* -o is a directory: a stream per VM */
	struct tout *one;     /* -o FILE: the stream */
	struct tout **outs;
	unsigned nouts, outs_cap;
	struct u64set names;  /* -o DIR: names given (hashes) */
};


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
	const void *owner; /* its process (compared only), NULL: none yet */
	struct out_who who; /* its process's facts, once it has one */
	int begun;         /* its events' prologue is written (out_begin) */
	int vm;            /* its VM's number, -1 if several share it */
	unsigned nvms;     /* VMs written to it */
	uint64_t n[4], bytes_alloc, bytes_free; /* events and bytes by kind */
	struct report *rep; /* the summary's top sites */
	int tally;          /* events go into rep: a live view, or top sites
			     * the summary will print (streams/out.c) */
	struct mpw w;
	/* --stacks: the companion FILE.stacks and its numbering */
	struct skw *sk;
	int skfd;
	char skpath[PATH_MAX + 8];
	struct stknum sn;     /* its stacks' numbering (streams/stknum.h) */
	int stk;             /* stacks recorded: the companion, the live report */
	/* Several VMs: their records merged in the process's order
	 * (streams/merge.h), each under the key and source out_at set. */
	struct merge *mg;
	const void *at_src;
	uint64_t at_key;
	unsigned merge_oom;
};

/* The -o target can be made: checked, nothing created (sets dir). */
int out_check(struct streams *t);
/* The stream of a VM numbered num of process owner (who: its facts;
 * sname: its part of the names, LMT_SNAME bytes, made once): made now with
 * -o DIR (duty0: --duty's seconds recorded so far), the one stream
 * otherwise. *fresh: the owner's C symbols must be replayed into it
 * (out_sym_now). A new stream is begun by out_begin once its head (the
 * symbols) is in. NULL having said why. */
struct tout *out_for(struct streams *t, const void *owner, const struct out_who *who,
		     char *sname, unsigned num, double duty0, int *fresh);
/* -o FILE: the one stream, made before any probe can fire (owner: -p's
 * process, whose symbols lead it; NULL: the first VM's). 0, or -1 said. */
int out_one(struct streams *t, const void *owner, const struct out_who *who, double duty0);
/* The events' prologue, after the head's symbols; once. */
void out_begin(struct tout *o);
/* A symbol into stream ctx now, ahead of whatever it holds (a process's C
 * symbols: struct syms' emit). */
void out_sym_now(void *ctx, const struct mp_sym *s);
/* A C symbol of process owner into each of its streams. */
void out_owner_sym(struct streams *t, const void *owner, const struct mp_sym *s);
void out_sym(struct tout *o, const struct mp_sym *s);
/* What out_sym and out_event write next comes from VM src (NULL: the
 * process) under key (streams/merge.h; 0: in order as it comes). */
void out_at(struct tout *o, const void *src, uint64_t key);
/* The number in stream o of the stack of frames fr[0..n) (held while
 * several VMs' records wait for their turn). */
uint32_t out_stack(struct tout *o, const struct cframe *fr, uint32_t n, unsigned flags);
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
/* Ends a stream: what it holds written, its epilogue and its companion's;
 * 1 if its files are open still (the caller writes the final sidecar,
 * then out_close), 0 if there is nothing more to do. */
int out_finish(struct tout *o, const char *end);
void out_close(struct tout *o);
/* The stream's sidecar (FILE.info) made or replaced with text. */
void out_sidecar(struct streams *t, struct tout *o, const char *text);

#endif
