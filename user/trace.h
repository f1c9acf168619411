/* A trace's state, shared by its stages: trace.c (its life), select.c,
 * attach.c, consume.c, output.c, spawn.c and summary.c. Not an API:
 * tracer.h is.
 *
 * A trace follows processes (struct tproc): those named by -p, every
 * LuaJIT process with --all, the command, and with -o DIR the children
 * they fork. Each has VMs (struct tvm), and each VM writes a stream
 * (struct tout): its own with -o DIR, the one -o FILE otherwise.
 */
#ifndef LMT_TRACE_H
#define LMT_TRACE_H

#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "luamemtrace.skel.h"
#include "memprof_write.h"
#include "report.h"
#include "stacks.h"
#include "probe.h"
#include "proc.h"
#include "symbols.h"
#include "tfile.h"
#include "tracer.h"
#include "u64set.h"
#include "vm.h"
#include "layout.h"
#include "info.h"
#include "kfeat.h"
#include "merge.h"
#include "readcaps.h"

/* A set of probe links. */
struct links {
	struct bpf_link **v;
	unsigned n, cap;
	/* descriptors of the files its probes name as /proc/self/fd/N
	 * (tfile.h), open as long as they are: the name tells the file */
	int *fds;
	unsigned nfd;
};

/* A probed allocator: its probes, kept apart from the process's other
 * links so that --duty can take them off and put them back (path: the
 * file they are in); return probes apart, to go after the entries. */
/* One session link for the traced processes that share an allocator's
 * file, where no other process maps it (attach.c: alloc_probes_on): a
 * link by PID would have each process's probe hijack the others'
 * returns. Its file (device, inode), its offsets, the link as fd + 1. */
struct shl {
	uint64_t dev, ino, off[2];
	unsigned n;    /* offsets */
	int mfd;
	unsigned refs; /* allocators on it */
};
#define LMT_SHL_MAX 16

struct allocf {
	uint64_t addr;
	struct probe_plan plan;
	/* its file, held open from the mapping maps named (tfile.h): read
	 * and probed through f.path, whatever the process maps since */
	struct tfile f;
	struct links links, rets;
	/* --duty where the kernel has uprobe_multi links, and sessions
	 * (attach.c): the entries' link and the return's, as fd + 1 (0:
	 * none); or the link it shares with other processes */
	int mfd[2];
	struct shl *sh;
	uint64_t dev, ino; /* its file, as the process's maps name it */
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

/* A VM of a traced process. */
struct tvm {
	struct tproc *p;
	uint32_t id;   /* BPF's number (struct lmt_vm), unique in the process */
	unsigned num;  /* the user's number: vmN, in order of discovery */
	uint64_t L, g, ud;
	struct tout *out;
	struct u64map lines; /* prototype -> struct pline */
	struct u64map pnames; /* prototype -> its chunk name (malloc'd, up to
			       * LMT_NAME_MAX), for an announcement whose
			       * name BPF could not read */
	struct u64map traces; /* trace number | 1 << 32 -> its snapshots
			       * (user/traces.c) */
	struct tlmemo *tlm;   /* traces_line's answers, and their */
	uint32_t tlgen;       /* generation (user/traces.c) */
	const struct lj_variant *var;
	struct u64map cnames; /* C function -> the name Lua gives it */
	struct u64set cnamed; /* C functions the stream has by that name */
	struct u64set cmissed; /* ones cnames did not name when last read */
	double cnames_at;     /* when cnames was read */
	struct u64map stacks; /* --stacks: BPF's stack id -> its frames */
	int closed;
	/* batches merge_round took from its slot, not yet converted, in
	 * order (consume.c: take_add) */
	struct take *takes;
	unsigned ntakes, takes_cap;
};

/* A batch taken from a slot: its events, unpacked, and its last one's
 * number. */
struct take {
	struct lmt_ev *ev;
	unsigned n;
	uint64_t max;
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
	struct syms syms;    /* its C symbols, for every stream of it */
	struct allocf af[16];
	unsigned naf;
	struct links links;  /* its probes */
	struct u64set hooked; /* files whose hooks it has (dev ^ inode) */
	struct tvm **vms;
	unsigned nvm, nvm_cap;
	unsigned next_num;   /* the next vmN */
	int lockfd;          /* its lock (select.c), -1 if none */
	int others;          /* another luamemtrace traces it too */
	int ran_held;        /* ran while stopped for us: said once */
	int ignored;         /* --all: left out by --exe; watched for its end */
	int nowait;          /* a child attached before it ran: its stop
			      * needs no wait */
	int attached;        /* probed and registered */
	int ended;           /* exited, executed or left: streams ended */
	int exited;          /* its pidfd said so this round (reap) */
	const char *end;
	uint64_t protos, traces, names_cut, nolines;
	uint64_t stk_unknown; /* events whose stack could not be told */
	/* Over a cap of readcaps.h (the target is not trusted): traces cut
	 * or refused, traces evicted for the process's budget, their bytes
	 * kept; package.loaded's walks, nodes read and walks cut; chunk
	 * names cut; VMs refused over LMT_VMS_MAX (found or made), and
	 * candidates the memory scan left unchecked past it; traces not
	 * resolved over the process's budget of reads (LMT_PROC_READS_MAX),
	 * and the reads made */
	uint64_t tr_cut, tr_evicted, tr_bytes, tr_budget, tr_reads;
	uint64_t nm_walks, nm_nodes, nm_cut, names_long, vms_over, vms_unchecked;
	const struct lj_variant *var; /* its VMs' layout */
	struct tproc *next;
};

/* --duty's windows (duty.c). */
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
	int *dfd;
	unsigned ndfd, capfd;
	pthread_t th;
	int closer;     /* th runs */
	int busy;       /* until the last link is gone (atomic) */
	double ab_next;  /* --ab=MS: the next switch */
};

struct tr {
	const struct topts *o;
	struct kfeat kf;  /* what the kernel offers (kfeat.c) */
	struct duty duty; /* --duty (duty.c) */
	int multi;        /* --duty: allocator probes as uprobe_multi links */
	int multi_refused; /* the programs did not load for them */
	int sess;         /* allocator probes as one session link each
			   * (kernel 6.13+): a return is probed only where
			   * its entry asks (bpf/lja.h) */
	int sess_refused; /* the programs did not load for it */
	/* session links shared by processes (struct shl); while the first
	 * processes attach, their allocators wait (defer) to be grouped */
	struct shl shl[LMT_SHL_MAX];
	int defer, no_shared;
	struct u64set foreign; /* untraced processes said to hit a shared link */
#define LMT_FOREIGN_MAX 64
	struct { uint32_t tgid; double at; char comm[20]; } fseen[LMT_FOREIGN_MAX]; /* first seen */
	uint64_t direct_po; /* reads through the page tables: the direct
			     * map's base (bpf/direct.h); 0: off */
	/* what is traced */
	struct tproc *procs;  /* every process seen, ended ones included */
	struct u64map pmap;   /* tgid -> live struct tproc */
	struct u64map vmap;   /* tgid << 32 | VM id -> struct tvm */
	unsigned nprocs, nlive;
	struct tproc **sel;   /* -p's processes until attached */
	pid_t cmd_pid;        /* -- COMMAND's process */
	pid_t guardian;
	char cmd_exe[PATH_MAX];
	/* attach */
	struct luamemtrace_bpf *skel;
	struct bpf_program *enter; /* alloc_enter or alloc_enter_compat */
	struct links links;   /* the trace's own: exec, fork, --all's hooks */
	struct u64set watched; /* --all: LuaJIT files watched (dev ^ inode) */
	const struct lj_variant *var;
	int lost_vm;          /* VMs or processes we could not attach to */
	int ran_held;         /* processes that ran while stopped for us */
	unsigned expired;     /* processes the guardian continued: we stalled */
	int peers_warned;     /* other tracers' stops could not be seen */
	int warned;           /* the probe plan's warning, said once */
	struct lmt_slot *slots; /* the slots map, mmapped */
	size_t slots_len;
	void *rb_pos;           /* the ring's position pages, mmapped */
	size_t rb_pos_len;
	int stops_fd;         /* the stops map (bpf/stop.h) */
	/* consume */
	struct ring_buffer *rb;
	uint64_t bad_recs;    /* batched records that cannot be: not written */
	/* allocations awaiting their return, by their thread's mark
	 * (consume.c: awaits); those whose return never came, and those
	 * in flight when their process or the trace ended */
	struct u64map awaits;
	uint64_t aw_missed, aw_left;
	unsigned closed;      /* VMs that ran lua_close while traced */
	unsigned forks_skipped; /* -o FILE: children not followed */
	int in_cb;            /* inside a ring buffer callback: no drain() */
	int takes;            /* a VM has a take (consume.c) */
	double settling;      /* waiting since then for stopped processes */
	int unbatch_req;      /* unbatch() once out of it */
	struct u64set rescan; /* tgids whose objects changed: syms_scan() */
	/* spawn */
	int gate;             /* -- COMMAND waits for a byte here */
	int child_started, child_done, child_status;
	/* output */
	int dir;              /* -o is a directory: a stream per VM */
	struct tout *one;     /* -o FILE: the stream */
	struct tout **outs;
	unsigned nouts, outs_cap;
	struct u64set names;  /* -o DIR: names given (hashes) */
	double t0, deadline;  /* monotonic: tracing began, -d ends it */
	const char *end;      /* why tracing ended */
	int failed;           /* tracing failed: every stream incomplete */
	int stopping;         /* tracing has stopped: nothing new is attached */
	double cpu0;          /* our CPU time (ns) when tracing began */
};

/* -- trace.c --------------------------------------------------------------- */

extern volatile sig_atomic_t stop_req;
/* A signal to pass on to -- COMMAND: sent to us alone (SI_USER), not by
 * the terminal to the whole foreground group, the command included. */
extern volatile sig_atomic_t forward_sig;

/* One line on stderr, escaped (esc.h): paths and names in it may come
 * from the target. */
__attribute__((format(printf, 1, 2))) void err1(const char *fmt, ...);
double now(void);
double wall_now(void);
double cpu_ns(void);

/* -- select.c -------------------------------------------------------------- */

/* A new process to trace, not attached yet: NULL having said why (quiet:
 * say nothing, for --all's candidates). */
struct tproc *proc_new(struct tr *t, pid_t pid, int quiet);
/* Forgets a process that was never attached. */
void proc_drop(struct tr *t, struct tproc *p);
/* Does the process pass --exe? */
int proc_wanted(const struct tr *t, const struct tproc *p);
/* Does the file open at fd (an executable mapping) hold LuaJIT? */
int is_luajit(int fd);
/* --all: every process running now that maps LuaJIT, attached; the
 * LuaJIT files found are watched for new VMs. 0, or -1 having said why. */
int select_all(struct tr *t);
/* Its running VMs: 0, or -1 having said why not (quiet: for --all). */
int proc_find_vms(struct tr *t, struct tproc *p, struct vmscan *scan, int quiet);
/* The lock that tells tracers of one process about each other. */
void proc_lock(struct tr *t, struct tproc *p);
void proc_unlock(struct tproc *p);

/* -- duty.c: --duty ------------------------------------------------------ */

/* Before the loop: the first window's place. */
void duty_start(struct tr *t);
/* Each turn of the loop: opens or closes a window when due. */
void duty_turn(struct tr *t);
/* A poll's timeout (ms), cut so the next change is on time. */
int duty_wait_ms(const struct tr *t, int ms);
/* Tracing ends: an open window is closed (finish destroys its probes),
 * a closing one waited for. */
void duty_end(struct tr *t);
/* Seconds the allocator was probed so far. */
double duty_sampled(const struct tr *t);

/* -- attach.c ------------------------------------------------------------- */

int link_add(struct links *ls, struct bpf_link *l);
void links_free(struct links *ls);
/* The same, on a thread of its own (an ended process's probes); links_join
 * waits until all are gone. */
void links_free_later(struct links *ls);
/* Every traced process's allocator probes on that have none (--duty's
 * windows, and the first processes once all are attached), shared links
 * first (struct shl); strict: a failure said, and -1. Or their links
 * moved to out (uprobe_multi links' fds to t->duty.dfd), each
 * allocator's entries before its returns. */
int alloc_probes_on(struct tr *t, int strict);
/* Says a process not traced that hit a shared link (struct shl). */
void foreign_check(struct tr *t);
void alloc_probes_take(struct tr *t, struct links *out);
/* A process's links, its allocators' too (later: on the reaper thread). */
void proc_links_free(struct tproc *p, int later);
void links_join(void);
/* f's descriptor kept open with ls's links (closed by links_free); f is
 * left without it. */
void links_hold(struct links *ls, struct tfile *f);
/* Does the kernel have task works (6.18+)? Then alloc_enter's reads can
 * land on its stack (struct gq in bpf/read.h). */
int open_load(struct tr *t, int kst);
/* Registers VM v of process p and probes its allocator: 0, or -1 having
 * said why. */
int add_vm(struct tr *t, struct tproc *p, const struct vminfo *v);
struct tvm *vm_get(struct tr *t, uint32_t tgid, uint32_t id);
/* What user space keeps of VM v (line tables, names, traces, stacks,
 * takes): gone; v itself stays. */
void vm_state_free(struct tvm *v);
/* A VM BPF registered itself: its user-space side, made if new. */
struct tvm *vm_known(struct tr *t, struct tproc *p, uint32_t id, uint64_t L,
		     uint64_t g, uint64_t ud, unsigned num);
/* Has p all the VMs it may have (LMT_VMS_MAX, closed ones included: each
 * has a stream)? */
static inline int vms_full(const struct tproc *p)
{
	return p->nvm >= LMT_VMS_MAX;
}
/* VM id of p, which BPF registered (L, ud), refused: p is full. What BPF
 * holds of it goes (its registration, its slot); counted, said once. */
void vm_refuse(struct tr *t, struct tproc *p, uint32_t id, uint64_t L, uint64_t ud);
/* The hooks of a process's objects (lua_newstate, lua_close, dlopen); with
 * --all only dlopen: the rest is watched for every process at once. */
void proc_hooks(struct tr *t, struct tproc *p, const struct pmaps *m);
/* --all: lua_newstate and lua_close of LuaJIT file f, for every process
 * if f is root's and writable by no one else (tfile_trusted), else for
 * process pid only (none if pid <= 0). 0, or -errno said. f's descriptor
 * stays with the probes (links_hold). */
int watch_file(struct tr *t, struct tfile *f, pid_t pid);
/* Into the trace's list of processes. */
void proc_link(struct tr *t, struct tproc *p);
/* --all: a process left out by --exe; BPF ignores it until it ends. */
void proc_ignore(struct tr *t, struct tproc *p);
/* A child BPF registered (a fork): its streams and probes. 0, or -1. */
int proc_attach_child(struct tr *t, struct tproc *parent, struct tproc *c);
int cmd_probes(struct tr *t, const char *exe);
/* What BPF holds of process tgid, removed (it has ended). */
void forget_proc(struct tr *t, uint32_t tgid);
/* Attaches a process found by BPF (a new VM with --all, a child): 0, or
 * -1 if it is not traced. */
int proc_attach(struct tr *t, struct tproc *p, const struct vminfo *vms,
		size_t n);

/* -- consume.c ------------------------------------------------------------ */

int on_rec(void *ctx, void *data, size_t sz);
void drain(struct tr *t);
/* VMs share a ud: batching ends. */
void unbatch(struct tr *t);
/* -o FILE with several VMs: what is held goes, as far as it can
 * (merge.h). */
void merge_round(struct tr *t);
/* A VM's takes (merge_round's), unread: gone. */
void takes_free(struct tvm *v);
/* What the slots of tgid (0: all) held; with release, they are freed. */
void slots_left(struct tr *t, uint32_t tgid, int release);
void settle_stops(struct tr *t, int block);
/* C function f's Lua name into v's stream, if its tables give one. */
void cfunc_name(struct tvm *v, uint64_t f);
/* The name Lua code gives C function or builtin key (luanames.h), or NULL. */
const char *lua_name(struct tvm *v, uint64_t key);

/* -- output.c ------------------------------------------------------------- */

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
/* The streams of a process that ended. */
void proc_end(struct tr *t, struct tproc *p, const char *end);

/* -- spawn.c -------------------------------------------------------------- */

int resolve_cmd(const char *name, char *out);
pid_t start_child(const struct topts *o, int *gate);
/* Passes on to -- COMMAND a signal sent to us alone (forward_sig). */
void forward_signal(struct tr *t);
void wait_child(struct tr *t);
int child_rc(const struct tr *t);

/* -- summary.c ------------------------------------------------------------ */

void sum_stats(struct tr *t, struct lmt_stats *s);
void summary(struct tr *t, const struct lmt_stats *s, double secs);
/* Anything lost: the exit status's rule and the sidecar's are one. */
int trace_lossy(const struct tr *t, const struct lmt_stats *st);
void losses(const struct tr *t, const struct lmt_stats *st, struct info *in);

#endif
