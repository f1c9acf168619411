/* A trace's state (struct tr), and the processes (struct tproc) and VMs
 * (struct tvm) it follows: the data the rooms share. session/life.c alone
 * adds to and removes from the registry; the lookups below only read it.
 * Not an API: session/tracer.h is.
 *
 * A trace follows processes: those named by -p, every LuaJIT process with
 * --all, the command, and with -o DIR the children they fork. Each has
 * VMs, and each VM writes a stream (struct tout, streams/out.h): its own
 * with -o DIR, the one -o FILE otherwise.
 *
 * Conversion's part of a process and a VM is its own (convert/conv.h,
 * embedded as cv), and so is capture's part of the trace and of a VM
 * (capture/ring.h, embedded as cap), and probes' (probes/probes.h,
 * embedded as probes).
 */
#ifndef LMT_SESSION_H
#define LMT_SESSION_H

#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "luamemtrace.skel.h"
#include "format/memprof_write.h"
#include "report/report.h"
#include "format/stacks.h"
#include "probes/allocf.h"
#include "probes/links.h"
#include "probes/placement.h"
#include "probes/probes.h"
#include "target/proc.h"
#include "convert/conv.h"
#include "capture/ring.h"
#include "target/tfile.h"
#include "session/tracer.h"
#include "util/u64set.h"
#include "target/vmscan.h"
#include "target/layout.h"
#include "format/info.h"
#include "probes/kfeat.h"
#include "streams/merge.h"
#include "target/caps.h"
#include "streams/out.h"
#include "util/clock.h"
#include "util/log.h"

/* A VM of a traced process. */
struct tvm {
	struct tproc *p;
	uint32_t id;   /* BPF's number (struct lmt_vm), unique in the process */
	unsigned num;  /* the user's number: vmN, in order of discovery */
	uint64_t L, ud;
	struct conv_vm cv;   /* conversion's part (convert/conv.h): its global_State
			      * (g), layout (var), stream (out), tables */
	struct cap_vm cap;   /* capture's part (capture/ring.h): whether it
			      * closed, its takes */
};

/* A traced process. */
struct tproc {
	struct tr *t;
	pid_t pid;
	int pidfd;           /* readable once it has exited */
	uint64_t start;      /* its start time (/proc/PID/stat), for PID reuse */
	pid_t parent;        /* the traced process it forked from, or 0 */
	char comm[16];
	char sname[48];      /* -o DIR: its streams' names, COMM.PID[-K] */
	char exe[PATH_MAX];
	struct conv_proc cv; /* conversion's part (convert/conv.h): its C
			      * symbols, what conversion counts */
	struct probe_proc probes; /* probes' part (probes/probes.h): its
				   * allocators, its probes' links, the files
				   * hooked */
	struct tvm **vms;
	unsigned nvm, nvm_cap;
	unsigned next_num;   /* the next vmN */
	int lockfd;          /* its lock (session/select.c), -1 if none */
	int others;          /* another luamemtrace traces it too */
	int ran_held;        /* ran while stopped for us: said once */
	int ignored;         /* --all: left out by --exe; watched for its end */
	int nowait;          /* a child attached before it ran: its stop
			      * needs no wait */
	int attached;        /* probed and registered */
	int ended;           /* exited, executed or left: streams ended */
	int exited;          /* its pidfd said so this round (reap) */
	const char *end;
	/* VMs refused over LMT_VMS_MAX (found or made), and candidates the
	 * memory scan left unchecked past it (target/caps.h) */
	uint64_t vms_over, vms_unchecked;
	const struct lj_variant *var; /* its VMs' layout */
	struct tproc *next;
};

/* --duty's windows (session/duty.c). */
struct duty {
	double period;  /* seconds; a window is duty% of it */
	double pstart;  /* the current period began */
	double next;    /* when the next change is due */
	double opened;  /* the open window's probes began to attach */
	double sampled; /* seconds recorded, closed windows */
	double closing; /* the closing window ended; 0: none closing */
	double last;    /* its last probe went */
	double tail;    /* the last detach took this long */
	unsigned windows;
	int on;         /* a window is open */
	/* A closing window's links, destroyed on a thread of its own (and
	 * its uprobe_multi links' fds, closed) */
	struct links dying;
	struct fdv dfd;
	pthread_t th;
	int closer;     /* th runs */
	int busy;       /* until the last link is gone (atomic) */
	double ab_next;  /* --ab=MS: the next switch */
};

struct tr {
	const struct topts *o;
	struct duty duty; /* --duty (session/duty.c) */
	/* what is traced */
	struct tproc *procs;  /* every process seen, ended ones included */
	struct u64map pmap;   /* tgid -> live struct tproc */
	struct u64map vmap;   /* tgid << 32 | VM id -> struct tvm */
	unsigned nprocs, nlive;
	struct tproc **sel;   /* -p's processes until attached */
	pid_t guardian;
	char cmd_exe[PATH_MAX];
	/* attach */
	struct probes probes; /* probes' part (probes/probes.h): the BPF
			       * object, the kernel's features, the links */
	const struct lj_variant *var;
	int lost_vm;          /* VMs or processes we could not attach to */
	int ran_held;         /* processes that ran while stopped for us */
	unsigned expired;     /* processes the guardian continued: we stalled */
	int peers_warned;     /* other tracers' stops could not be seen */
	int stops_fd;         /* the stops map (bpf/stop.h) */
	/* consume: capture's part (capture/ring.h): the ring, the slots,
	 * the awaits and takes, what it counts; its callbacks (run.c) */
	struct capture cap;
	unsigned forks_skipped; /* -o FILE: children not followed */
	double settling;      /* waiting since then for stopped processes */
	struct u64set rescan; /* tgids whose objects changed: syms_scan() */
	/* spawn */
	int gate;             /* -- COMMAND waits for a byte here */
	int child_started, child_done, child_status;
	/* output */
	struct streams st;
	double t0, deadline;  /* monotonic: tracing began, -d ends it */
	const char *end;      /* why tracing ended */
	int failed;           /* tracing failed: every stream incomplete */
	int stopping;         /* tracing has stopped: nothing new is attached */
	double cpu0;          /* our CPU time (ns) when tracing began */
};

/* -- The registry (session/life.c owns it) ------------------------------- */

/* A live traced process by its tgid, and a VM of one by BPF's number:
 * lookups only; session/life.c alone adds and removes. */
static inline struct tproc *proc_of(struct tr *t, uint32_t tgid)
{
	return u64map_get(&t->pmap, proc_key(tgid));
}

static inline uint64_t vm_key(uint32_t tgid, uint32_t id)
{
	return (uint64_t)tgid << 32 | id;
}

static inline struct tvm *vm_get(struct tr *t, uint32_t tgid, uint32_t id)
{
	return u64map_get(&t->vmap, vm_key(tgid, id));
}

/* Has p all the VMs it may have (LMT_VMS_MAX, closed ones included: each
 * has a stream)? */
static inline int vms_full(const struct tproc *p)
{
	return p->nvm >= LMT_VMS_MAX;
}

#include "session/signals.h"

#endif
