/* The life of traced processes and their VMs (session/life.c), its one
 * owner. Lookups are in session.h (proc_of, vm_get); everything that adds
 * to the registry, changes a process's state or ends it is here. */
#ifndef LMT_LIFE_H
#define LMT_LIFE_H

#include "session/session.h"
#include "capture/ring.h"

/* What capture reports up (struct capture_ops; session/run.c wires them):
 * a VM BPF registered whose first record is read; a traced process forked
 * (-o DIR: the stopped child gets its streams and probes before it runs);
 * one executed a new program (its tracing ends there). */
struct tvm *life_vm_new(struct tr *t, struct tproc *p, uint32_t id);
void life_fork(struct tr *t, const struct lmt_fork *f);
void life_exec(struct tr *t, uint32_t tgid);

/* A new process to trace, not attached yet: NULL having said why (quiet:
 * say nothing, for --all's candidates). Its pidfd taken first, its memory
 * bound to it (target/proc.h). */
struct tproc *proc_new(struct tr *t, pid_t pid, int quiet);
/* Forgets a process that was never attached. */
void proc_drop(struct tr *t, struct tproc *p);
/* Into the trace's list of processes and the registry. */
void proc_link(struct tr *t, struct tproc *p);
/* --all: a process left out by --exe; BPF ignores it until it ends. */
void proc_ignore(struct tr *t, struct tproc *p);
/* Attaches a process with its VMs vms: 0, or -1 if it is not traced. */
int proc_attach(struct tr *t, struct tproc *p, const struct vminfo *vms,
		size_t n);
/* Registers VM v of process p and probes its allocator: 0, or -1 having
 * said why. */
int add_vm(struct tr *t, struct tproc *p, const struct vminfo *v);
/* A VM BPF registered itself: its user-space side, made if new. */
struct tvm *vm_known(struct tr *t, struct tproc *p, uint32_t id, uint64_t L,
		     uint64_t g, uint64_t ud, unsigned num);
/* What the rooms keep of VM v (line tables, names, traces, stacks,
 * takes): gone, each through its room; v itself stays. */
void vm_state_free(struct tvm *v);
/* -o FILE: the one stream, begun before any probe can fire (p: -p's
 * process, whose symbols lead it). 0, or -1 said. */
int stream_one(struct tr *t, struct tproc *p);
/* VM id of p, which BPF registered (L, ud), refused: p is full. What BPF
 * holds of it goes (its registration, its slot); counted, said once. */
void vm_refuse(struct tr *t, struct tproc *p, uint32_t id, uint64_t L, uint64_t ud);
/* The process ended (exited, executed a new program, or tracing ended):
 * what its slots hold goes into its streams, which end; its probes, what
 * BPF kept of it and each room's state of its VMs go. */
void proc_end(struct tr *t, struct tproc *p, const char *end);

#endif
