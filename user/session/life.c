/* The life of traced processes and their VMs: the one owner (life.h).
 * Here a process is made (proc_new), listed (proc_link), attached with
 * its VMs (proc_attach, add_vm), followed into a fork (on_fork), a new VM
 * (on_newvm), an exec (on_exec), and ended (proc_end); each room's state
 * of a VM is freed through that room (vm_state_free). The rooms below
 * report what BPF told them through capture's callbacks (struct
 * capture_ops) and never call here. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session/session.h"
#include "session/life.h"
#include "capture/ring.h"
#include "probes/alloc.h"
#include "probes/hooks.h"
#include "probes/object.h"
#include "streams/out.h"
#include "convert/callstacks.h"
#include "convert/jit.h"
#include "target/proc.h"
#include "target/tfile.h"
#include "session/duty.h"
#include "session/summary.h"

/* -- Registry -------------------------------------------------------------- */



void proc_link(struct tr *t, struct tproc *p)
{
	int err;

	p->next = t->procs;
	t->procs = p;
	u64map_put(&t->pmap, proc_key((uint32_t)p->pid), p, &err);
	t->nprocs++;
	if (!p->ignored)
		t->nlive++;
}

/* -- Tracers of one process ------------------------------------------------ */

#define LOCKDIR "/run/luamemtrace"

/* A file per process (PID and start time), locked shared by each tracer
 * of it: one that cannot take it exclusively is not alone. */
static void proc_lock(struct tr *t, struct tproc *p)
{
	char path[96];

	(void)t;
	if (mkdir(LOCKDIR, 0700) && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), LOCKDIR "/%d.%" PRIu64, (int)p->pid, p->start);
	p->lockfd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (p->lockfd < 0)
		return;
	if (flock(p->lockfd, LOCK_EX | LOCK_NB))
		p->others = errno == EWOULDBLOCK;
	flock(p->lockfd, LOCK_SH);
}

static void proc_unlock(struct tproc *p)
{
	char path[96];
	int fd;

	if (p->lockfd < 0)
		return;
	close(p->lockfd);
	p->lockfd = -1;
	/* The last tracer of it removes the file. */
	snprintf(path, sizeof(path), LOCKDIR "/%d.%" PRIu64, (int)p->pid, p->start);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB))
		unlink(path);
	if (fd >= 0)
		close(fd);
}

/* -- Streams --------------------------------------------------------------- */

/* A process's C symbols into each of its streams (struct syms' emit). */
static void proc_sym(void *ctx, const struct mp_sym *s)
{
	struct tproc *p = ctx;

	out_owner_sym(&p->t->st, p, s);
}

/* What a stream says of process p. */
static void proc_who(const struct tproc *p, struct out_who *w)
{
	w->pid = p->pid;
	w->parent = p->parent;
	w->nspid = proc_nspid(p->pid);
	snprintf(w->comm, sizeof(w->comm), "%s", p->comm);
	snprintf(w->exe, sizeof(w->exe), "%s", p->exe);
}

/* The stream of p's VM numbered num (streams/out.h: out_for), begun: its
 * first sidecar, p's C symbols, the events' prologue. NULL, said. */
static struct tout *stream_for(struct tr *t, struct tproc *p, unsigned num)
{
	struct out_who w;
	struct tout *o;
	int fresh;

	proc_who(p, &w);
	o = out_for(&t->st, p, &w, p->sname, num, duty_sampled(t), &fresh);
	if (!o)
		return NULL;
	if (t->st.dir && o->fd < 0 && !t->o->floor)
		t->lost_vm++; /* said: its stream cannot be made */
	if (o->fd >= 0 && !o->begun)
		out_info(t, o, NULL, 0);
	if (fresh)
		syms_replay(&p->cv.syms, out_sym_now, o);
	out_begin(o);
	return o;
}

/* -o FILE: the one stream, begun before any probe can fire (p: -p's
 * process, whose symbols lead it). 0, or -1 said. */
int stream_one(struct tr *t, struct tproc *p)
{
	struct out_who w = { 0 };

	if (p)
		proc_who(p, &w);
	if (out_one(&t->st, p, &w, duty_sampled(t)))
		return -1;
	if (t->st.one->fd >= 0)
		out_info(t, t->st.one, NULL, 0);
	out_begin(t->st.one);
	return 0;
}

/* -- Processes ------------------------------------------------------------- */

struct tproc *proc_new(struct tr *t, pid_t pid, int quiet)
{
	struct tproc *p = calloc(1, sizeof(*p));
	ssize_t n;
	int fd;

	if (!p) {
		err1("out of memory");
		return NULL;
	}
	p->t = t;
	p->pid = pid;
	p->cv.pid = pid;
	p->probes.pid = pid;
	p->lockfd = -1;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0) {
		if (!quiet)
			err1(errno == ESRCH ? "no such process: %d" :
			     "cannot open process %d", (int)pid);
		free(p);
		return NULL;
	}
	/* Its memory by descriptor from now on (target/proc.h). */
	if (proc_bind(pid, p->pidfd)) {
		if (!quiet)
			err1("cannot open process %d's memory", (int)pid);
		close(p->pidfd);
		free(p);
		return NULL;
	}
	p->start = proc_start(pid, p->pidfd);
	/* by its bound /proc directory (target/proc.h: proc_dir) */
	if ((fd = proc_openat(pid, "comm", O_RDONLY)) >= 0) {
		n = read(fd, p->comm, sizeof(p->comm) - 1);
		close(fd);
		p->comm[n > 0 ? n : 0] = 0;
		p->comm[strcspn(p->comm, "\n")] = 0;
	}
	if (proc_readlinkat(pid, "exe", p->exe, sizeof(p->exe)) < 0)
		p->exe[0] = 0;
	syms_init(&p->cv.syms, pid, proc_sym, p);
	return p;
}

void proc_drop(struct tr *t, struct tproc *p)
{
	(void)t;
	proc_unlock(p);
	proc_unbind(p->pid, p->pidfd);
	if (p->pidfd >= 0)
		close(p->pidfd);
	proc_links_free(&p->probes, 0);
	for (unsigned i = 0; i < p->probes.naf; i++)
		tfile_close(&p->probes.af[i].f);
	u64set_free(&p->probes.hooked);
	syms_free(&p->cv.syms);
	free(p->vms);
	free(p);
}

void proc_ignore(struct tr *t, struct tproc *p)
{
	p->ignored = 1;
	bpf_ignore(&t->probes, (uint32_t)p->pid);
	proc_link(t, p);
}

/* Says so once tracing: with a second tracer, each stream is whole. */
static void announce(struct tr *t, struct tproc *p)
{
	if (p->others && !t->o->quiet)
		err1("PID %d is traced by another luamemtrace too: each writes "
		     "its whole streams (and the process pays both)", (int)p->pid);
}

/* A process joins the trace: locked, listed, its C symbols read. */
static void proc_begin(struct tr *t, struct tproc *p)
{
	proc_lock(t, p);
	if (!u64map_get(&t->pmap, proc_key((uint32_t)p->pid)))
		proc_link(t, p);
	p->attached = 1;
	syms_scan(&p->cv.syms);
}

/* ... and once its VMs are in: the hooks of its objects. */
static int proc_ready(struct tr *t, struct tproc *p)
{
	struct pmaps m;

	if (!pmaps_load(p->pid, &m)) {
		proc_hooks(&t->probes, &p->probes, &m);
		pmaps_free(&m);
	}
	announce(t, p);
	return 0;
}

int proc_attach(struct tr *t, struct tproc *p, const struct vminfo *vms, size_t n)
{
	proc_begin(t, p);
	for (size_t i = 0; i < n; i++)
		if (add_vm(t, p, &vms[i]))
			return -1;
	return proc_ready(t, p);
}

/* A child BPF registered (a fork): its streams and probes. 0, or -1. */
static int proc_attach_child(struct tr *t, struct tproc *parent, struct tproc *c)
{
	c->parent = parent->pid;
	c->var = parent->var;
	proc_begin(t, c);
	/* The parent's VMs, as BPF copied them: same ids and numbers. */
	for (unsigned i = 0; i < parent->nvm; i++) {
		const struct tvm *pv = parent->vms[i];
		if (!pv->cap.closed &&
		    !vm_known(t, c, pv->id, pv->L, pv->cv.g, pv->ud, pv->num))
			return -1;
	}
	/* Its allocators: the parent's files, at its addresses. */
	for (unsigned i = 0; i < parent->probes.naf; i++)
		if (attach_allocf(&t->probes, &c->probes, parent->probes.af[i].addr))
			return -1;
	return proc_ready(t, c);
}

/* -- VMs ------------------------------------------------------------------- */

/* A VM of p as user space knows it, and its stream. */
static struct tvm *vm_new(struct tr *t, struct tproc *p, uint32_t id,
			  uint64_t L, uint64_t g, uint64_t ud, unsigned num)
{
	struct tvm *v, **nv;
	int err;

	if (vms_full(p) || !(v = calloc(1, sizeof(*v))))
		return NULL;
	if (p->nvm == p->nvm_cap) {
		unsigned cap = p->nvm_cap ? 2 * p->nvm_cap : 4;
		nv = realloc(p->vms, cap * sizeof(*nv));
		if (!nv) {
			free(v);
			return NULL;
		}
		p->vms = nv;
		p->nvm_cap = cap;
	}
	*v = (struct tvm){ .p = p, .id = id, .num = num, .L = L, .cv.g = g, .ud = ud,
			   .cv.var = p->var, .cv.depth = t->o->stacks,
			   .cv.by_trace = t->o->jit_trace,
			   .cap.tgid = (uint32_t)p->pid, .cap.id = id };
	v->cap.cv = &v->cv;
	if (num >= p->next_num)
		p->next_num = num + 1;
	v->cv.out = stream_for(t, p, num);
	if (!v->cv.out) {
		free(v);
		return NULL;
	}
	u64map_put(&t->vmap, vm_key((uint32_t)p->pid, id), v, &err);
	if (err) {
		free(v);
		return NULL;
	}
	p->vms[p->nvm++] = v;
	conv_vm_link(&p->cv, &v->cv);
	return v;
}

/* A VM over p's cap: counted, said once. */
static void vm_over(struct tproc *p)
{
	if (!p->vms_over++)
		err1("warning: PID %d: more than %d VMs: the ones it makes from now on "
		     "are not traced (counted)", (int)p->pid, LMT_VMS_MAX);
}

void vm_refuse(struct tr *t, struct tproc *p, uint32_t id, uint64_t L, uint64_t ud)
{
	vm_over(p);
	vm_unregister(&t->probes, (uint32_t)p->pid, id, L, ud);
}

/* A VM BPF registered itself (a second VM, a forked child's). */
struct tvm *vm_known(struct tr *t, struct tproc *p, uint32_t id, uint64_t L,
		     uint64_t g, uint64_t ud, unsigned num)
{
	struct tvm *v = vm_get(t, (uint32_t)p->pid, id);

	return v ? v : vm_new(t, p, id, L, g, ud, num);
}

int add_vm(struct tr *t, struct tproc *p, const struct vminfo *v)
{
	uint64_t g;
	struct tvm *tv;

	if (vm_registered(&t->probes, (uint32_t)p->pid, v->allocd, &g)) {
		/* Known, or another VM with the same ud: then their events
		 * cannot be told apart, share a stream, and must not be
		 * batched. */
		if (g != v->g) {
			if (!t->probes.skel->bss->nobatch)
				unbatch_request(&t->cap);
			if (!t->o->quiet)
				err1("warning: PID %d: VMs 0x%" PRIx64 " and 0x%" PRIx64
				     " share an allocator's ud: their events share "
				     "one stream", (int)p->pid, g, v->g);
		}
		return 0;
	}
	if (vms_full(p)) {
		vm_over(p);
		return 0;
	}
	p->var = v->var;
	tv = vm_new(t, p, p->next_num, v->L, v->g, v->allocd, p->next_num);
	if (!tv || vm_register(&t->probes, &p->probes, p->nvm, v, tv->id))
		return -1;
	if (t->o->verbose)
		fprintf(stderr, "luamemtrace: PID %d VM %u: L 0x%" PRIx64 " g 0x%"
			PRIx64 " (%s), allocator 0x%" PRIx64 " ud 0x%" PRIx64 "\n",
			(int)p->pid, tv->num, v->L, v->g, v->var->name, v->allocf,
			v->allocd);
	t->var = v->var;
	/* The process is stopped or attached: what it maps now is readable
	 * now, while the consumer may only get to its events after it exits. */
	syms_scan(&p->cv.syms);
	return 0;
}

void vm_state_free(struct tvm *v)
{
	u64map_free(&v->cv.lines, free);
	u64map_free(&v->cv.pnames, free);
	traces_free(&v->cv);
	stk_forget_vm(&v->cv);
	takes_free(&v->cap);
	u64map_free(&v->cv.cnames, free);
	u64set_free(&v->cv.cnamed);
	u64set_free(&v->cv.cmissed);
}

/* -- What BPF tells: a new VM, a fork, an exec ------------------------------ */

/* A VM BPF registered itself (a second VM, a forked child's) whose first
 * record capture reads before its LMT_REC_NEWVM (it cannot: that goes
 * first): made from what BPF numbered it. */
struct tvm *life_vm_new(struct tr *t, struct tproc *p, uint32_t id)
{
	if (vms_full(p))
		return NULL;
	return vm_known(t, p, id, 0, 0, 0, p->next_num);
}

/* A traced process forked (-o DIR): the child, stopped, gets its streams
 * and probes before it runs. */
void life_fork(struct tr *t, const struct lmt_fork *f)
{
	struct tproc *parent = proc_of(t, f->ptgid), *c;

	if (!t->st.dir || t->probes.skel->rodata->fork_stop == LMT_FORK_STOP_NONE) {
		t->forks_skipped++;
		return;
	}
	if (!f->stopped || t->stopping || !parent) {
		forget_proc(&t->probes, f->tgid);
		return;
	}
	c = proc_new(t, (pid_t)f->tgid, 1);
	if (!c) {
		forget_proc(&t->probes, f->tgid);
		return;
	}
	if (proc_attach_child(t, parent, c)) {
		err1("warning: PID %d, a child of PID %d, not traced",
		     (int)f->tgid, (int)f->ptgid);
		t->lost_vm++;
		proc_end(t, c, "error");
		return;
	}
	/* It has not run: nothing of it to wait for before it continues;
	 * unless it stops itself (bpf/stop.h: stop_born), which it must have
	 * done before its stop is released. */
	c->nowait = t->probes.skel->rodata->fork_stop == LMT_FORK_STOP_TASK;
	if (!t->o->quiet)
		err1("tracing PID %d (%s), a child of PID %d", (int)c->pid, c->comm,
		     (int)f->ptgid);
}

void life_exec(struct tr *t, uint32_t tgid)
{
	struct tproc *p = proc_of(t, tgid);

	if (!p)
		return;
	if (!p->ignored && !t->o->quiet && !t->o->all)
		err1("PID %d executed a new program: tracing ended there",
		     (int)p->pid);
	proc_end(t, p, "exec");
}

/* -- Ends ------------------------------------------------------------------ */

/* The process ended (exited, or executed a new program): what its slots
 * hold goes into its streams, which end; what BPF kept of it goes. */
void proc_end(struct tr *t, struct tproc *p, const char *end)
{
	if (p->ended)
		return;
	p->ended = 1;
	p->end = end;
	slots_left(&t->cap, (uint32_t)p->pid, 1);
	if (t->st.dir)
		for (unsigned i = 0; i < t->st.nouts; i++)
			if (t->st.outs[i]->owner == p)
				stream_end(t, t->st.outs[i], end);
	proc_links_free(&p->probes, 1);
	forget_proc(&t->probes, (uint32_t)p->pid);
	u64map_del(&t->pmap, proc_key((uint32_t)p->pid));
	for (unsigned i = 0; i < p->nvm; i++) {
		u64map_del(&t->vmap, vm_key((uint32_t)p->pid, p->vms[i]->id));
		vm_state_free(p->vms[i]);
	}
	if (!p->ignored && t->nlive)
		t->nlive--;
	proc_unlock(p);
	proc_unbind(p->pid, p->pidfd);
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
}
