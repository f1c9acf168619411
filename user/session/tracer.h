/* The life of a tracing session: attach, consume, stop, summarise. */
#ifndef LMT_TRACER_H
#define LMT_TRACER_H

#include <sys/types.h>

#include "format/exitcode.h"
#include "probes/probes.h" /* enum probe_mode */

#define LMT_VERSION "0.2.0"


struct tr;

struct topts {
	pid_t *pids;       /* -p PID[,PID...] */
	unsigned npids;
	int all;           /* --all: every LuaJIT process, also later ones */
	const char **exes; /* --exe: only these (--all) */
	unsigned nexes;
	char **cmd;        /* -- CMD..., or NULL */
	const char *user;  /* -u USER: CMD runs as USER (NULL: as we do, root) */
	uid_t uid;         /* its IDs (-u) */
	gid_t gid;
	const char *out;
	double duration;   /* seconds, 0 = until stopped */
	const char *variant; /* force one layout variant */
	unsigned long rb_bytes;
	enum probe_mode probes;
	int floor;   /* attach empty programs (benchmark floor), write no events */
	int floor_entry; /* --floor=entry: at the allocator's entry only */
	int floor_events; /* --floor=events: every event sent, none attributed
			   * (benchmark: the event path's own cost) */
	int ab;      /* benchmark: LMT_AB_MARK allocations switch to the floor
		      * and back */
	double ab_ms; /* --ab=MS: the switch by time instead, every MS ms,
		       * each switch said on stderr with the wall clock */
	int ab_without; /* --ab-without: LMT_AB_W_*, the parts the floor's
			 * windows trace without (0: the floor) */
	char ab_name[40]; /* how a switch names those windows: "floor", or
			   * "without-" and the parts */
	int verbose;
	int quiet;   /* no summary */
	int top;     /* allocation sites in the summary */
	int force;   /* -f: replace an existing output file */
	unsigned stacks; /* --stacks: frames per stack at most; 0: none */
	int jit_trace; /* --jit=trace: compiled code charged to its trace, as
			* the in-VM profiler does */
	int strict;  /* -- COMMAND: loss is exit 3, a tracer error exit 1,
		      * rather than the command's status */
	int no_loss; /* --no-loss: a full ring pauses its producer */
	double duty; /* --duty: percent of the time the allocator is probed */
	/* luamemtrace top: called every turn of the tracer's loop, once
	 * attached (its live view; it may set stop_req) */
	void (*live)(struct tr *t);
	/* --heap-at-end: called as tracing ends, its probes still there
	 * (heap/atend.c: each process's heap copied beside its streams) */
	void (*at_end)(struct tr *t);
};

int trace_run(const struct topts *o);

/* --check: what the kernel offers and which path each feature takes
 * (probes/kfeat.h), then whether the BPF object loads; 0 if it does. */
int trace_check(const struct topts *o);
/* `luamemtrace top ...`; argv[0] is "top". */
int top_main(int argc, char **argv);

#endif
