/* A trace's state, shared by its stages: trace.c (its life), attach.c,
 * consume.c, spawn.c and summary.c. Not an API: tracer.h is. */
#ifndef LMT_TRACE_H
#define LMT_TRACE_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "luamemtrace.skel.h"
#include "probe.h"
#include "proc.h"
#include "symbols.h"
#include "tracer.h"
#include "u64set.h"
#include "vm.h"

#define MAX_ALLOCF 16
#define MAX_LINKS 64

struct allocf {
	uint64_t addr;
	struct probe_plan plan;
};

struct tr {
	const struct topts *o;
	pid_t pid;
	int pidfd;         /* -p: readable once the target has exited */
	char exe[PATH_MAX]; /* the target's executable */
	struct pmaps maps; /* -p: its mappings when tracing began */
	struct vmscan scan; /* -p: its VMs */
	/* attach */
	struct luamemtrace_bpf *skel;
	struct bpf_program *enter; /* alloc_enter or alloc_enter_compat */
	struct allocf af[MAX_ALLOCF];
	unsigned naf;
	struct bpf_link *links[MAX_LINKS];
	unsigned nlinks;
	const struct lj_variant *var;
	unsigned nvm;
	int lost_vm;       /* VMs we could not attach to */
	struct lmt_slot *slots; /* the slots map, mmapped */
	size_t slots_len;
	int stops_fd;      /* the stops map (bpf/newvm.h) */
	/* consume */
	struct ring_buffer *rb;
	struct mpw *w;     /* NULL: --floor writes nothing */
	struct report *rep;
	struct syms syms;
	struct u64map lines; /* prototype -> struct pline */
	uint64_t n[4], bytes_alloc, bytes_free; /* events and bytes by kind */
	uint64_t protos, traces, names_cut, nolines;
	uint64_t bad_recs; /* batched records that cannot be: not written */
	unsigned closed;   /* VMs that ran lua_close while traced */
	int in_cb;         /* inside a ring buffer callback: no drain() */
	int unbatch_req;   /* unbatch() once out of it */
	int rescan;        /* the process's objects changed: syms_scan() */
	/* spawn */
	int gate;          /* -- COMMAND waits for a byte here */
	int child_started, child_done, child_status;
	/* output */
	int fd;
	struct mpw *wbuf;  /* the writer (t->w unless --floor) */
	char info[PATH_MAX]; /* the sidecar's path, "" if none */
	double t0, deadline; /* monotonic: tracing began, -d ends it */
	/* the end, and the sidecar */
	const char *end;   /* why tracing ended */
	int failed;        /* tracing or the stream failed: incomplete */
	int stopping;      /* tracing has stopped: no new VM is attached */
	int finished;      /* the stream has its epilogue */
	const char *info_path; /* the sidecar, beside a regular file */
	int info_made;
	double wall0;      /* when tracing began, seconds since the epoch */
	double cpu0;       /* our CPU time (ns) when tracing began */
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

/* -- attach.c ------------------------------------------------------------- */

int link_add(struct tr *t, struct bpf_link *l);
void detach_all(struct tr *t);
/* Does the kernel have task works (6.18+)? Then alloc_enter's reads can
 * land on its stack (struct gq in bpf/read.h). */
int kernel_keeps_callbacks_on_stack(void);
int open_load(struct tr *t, int kst);
int add_vm(struct tr *t, const struct vminfo *v);
void newstate_probes_maps(struct tr *t, const struct pmaps *m);
int cmd_probes(struct tr *t, const char *exe);

/* -- consume.c ------------------------------------------------------------ */

void emit_sym(void *ctx, const struct mp_sym *s);
int on_rec(void *ctx, void *data, size_t sz);
void drain(struct tr *t);
void unbatch(struct tr *t);
void slots_left(struct tr *t);
void settle_stops(struct tr *t);

/* -- spawn.c -------------------------------------------------------------- */

int resolve_cmd(const char *name, char *out);
pid_t start_child(char **cmd, int *gate);
/* Passes on to -- COMMAND a signal sent to us alone (forward_sig). */
void forward_signal(struct tr *t);
void wait_child(struct tr *t);
int child_rc(const struct tr *t);

/* -- summary.c ------------------------------------------------------------ */

void sum_stats(struct tr *t, struct lmt_stats *s);
void summary(struct tr *t, const struct lmt_stats *s, double secs,
	     uint64_t out_bytes);
void write_info(struct tr *t, const struct lmt_stats *st, int done, double secs);
/* Anything lost: the exit status's rule and the sidecar's are one. */
int trace_lossy(const struct tr *t, const struct lmt_stats *st);

#endif
