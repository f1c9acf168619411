/* Probes' part of a trace (struct probes) and of a traced process (struct
 * probe_proc): the BPF object, the kernel's features, the allocator
 * probes and links, shared links, hooks. The session embeds them (struct
 * tr's and struct tproc's probes, in session/session.h), fills in the
 * options (struct probe_opts) and a process's PID, and answers the one
 * question probes/ asks of it (struct probes_ops: which processes are
 * traced); probes/ never reads the session's structs. */
#ifndef LMT_PROBES_H
#define LMT_PROBES_H

#include <sys/types.h>

#include "probes/allocf.h"
#include "probes/kfeat.h"
#include "probes/links.h"
#include "util/u64set.h"

struct luamemtrace_bpf;
struct bpf_program;
struct lmt_slot;

enum probe_mode {
	PROBES_AUTO,   /* split free/alloc paths when the allocator allows */
	PROBES_SINGLE, /* one entry+return probe at the first emulated insn */
	PROBES_ENTRY,  /* entry+return at the allocator's first instruction */
};

/* What the options ask of the probes and the object (the session fills
 * it in from its own, as streams' struct out_opts). */
struct probe_opts {
	int verbose, quiet;
	int all;               /* --all: lua_newstate and lua_close watched for
				* every process (watch_file) */
	const char **exes;     /* --exe: only these (--all) */
	unsigned nexes;
	enum probe_mode mode;  /* --probes */
	int floor, floor_entry, floor_events; /* --floor[=entry|events] */
	int ab, ab_without;    /* benchmark switches (session/tracer.h) */
	double ab_ms;
	int jit_trace;         /* --jit=trace */
	unsigned stacks;       /* --stacks: frames at most; 0: none */
	int no_loss;           /* --no-loss */
	unsigned long rb_bytes; /* the ring's size; 0: the default */
	int duty;              /* --duty: allocator probes on in windows only */
	int follow;            /* -o DIR: a stream per VM, children followed */
};

/* A traced process, for its probes. */
struct probe_proc {
	pid_t pid;
	struct allocf af[16]; /* its allocators (probes/alloc.c) */
	unsigned naf;
	struct links links;   /* its probes */
	struct u64set hooked; /* files whose hooks it has (dev ^ inode) */
};

/* Which processes the session traces (ctx: struct probes's): fn(arg, p)
 * for each of them, until fn returns non-zero: that, or 0. */
enum probes_which {
	PROBES_LIVE,     /* attached and not ended */
	PROBES_ATTACHED, /* attached, ended ones included */
	PROBES_ALL,      /* every process seen */
};
struct probes_ops {
	int (*each_proc)(void *ctx, enum probes_which which,
			 int (*fn)(void *arg, struct probe_proc *p), void *arg);
};

/* A trace, for its probes. The session sets o, ops, ctx, cmd_pid and
 * slots, and defer and duty_off as they change; probes/ keeps the rest. */
struct probes {
	struct probe_opts o;
	const struct probes_ops *ops;
	void *ctx;
	pid_t cmd_pid;        /* -- COMMAND's process (BPF: its first VM spawned) */
	struct lmt_slot *slots; /* capture's slots map, mmapped (borrowed: a
				 * VM's slot is claimed before its probes) */
	int defer;            /* the first processes' allocators wait to be
			       * grouped (shared links: alloc_probes_on) */
	int duty_off;         /* --duty: no window open, allocators wait */
	struct luamemtrace_bpf *skel; /* the loaded object (probes/object.c) */
	struct kfeat kf;      /* what the kernel offers (probes/kfeat.c) */
	struct bpf_program *enter; /* the allocator's entry program loaded */
	uint64_t direct_po;   /* reads through the page tables: the direct
			       * map's base (bpf/direct.h); 0: off */
	int multi;            /* --duty: allocator probes as uprobe_multi links */
	int multi_refused;    /* the programs did not load for them */
	int sess;             /* allocator probes as one session link each
			       * (kernel 6.13+): a return is probed only where
			       * its entry asks (bpf/lja.h) */
	int sess_refused;     /* the programs did not load for it */
	/* session links shared by processes (struct shl) */
	struct shl shl[LMT_SHL_MAX];
	int no_shared;        /* LMT_NO_SHARED */
	int warned;           /* the probe plan's warning, said once */
	struct u64set foreign; /* untraced processes said to hit a shared link */
#define LMT_FOREIGN_MAX 64
	struct { uint32_t tgid; double at; char comm[20]; } fseen[LMT_FOREIGN_MAX]; /* first seen */
	struct links links;   /* the trace's own: exec, fork, --all's hooks */
	struct u64set watched; /* --all: LuaJIT files watched (dev ^ inode) */
};

#endif
