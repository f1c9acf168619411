/* One system call made by a thread of the target (see target/inject.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target/inject.h"
#include "target/proc.h"
#include "util/clock.h"
#include "util/knobs.h"

#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif

/* The vDSO's bytes looked at for a `syscall` instruction, at most. */
#define INJ_VDSO_MAX (64u << 10)
/* Stops of the thread one call may take (the attach's SIGSTOP, entry,
 * the clone event, exit): past it the call is given up. */
#define INJ_STOPS_MAX 16
/* How long a stop of a thread stopped whole is waited for, or a child's
 * first, in ms (the call itself is waited for to its end). */
#define INJ_WAIT_MS 2000

#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif

void inj_test_point(int at)
{
	if (knobs.test_inj_die == at)
		raise(SIGKILL);
	while (knobs.test_inj_stall == at)
		pause();
}

#if defined(__x86_64__)

int inj_supported(void)
{
	return 1;
}

struct inj_rec *inj_rec_new(void)
{
	void *p = mmap(NULL, sizeof(struct inj_rec), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void set_phase(struct inj_rec *r, uint32_t p)
{
	__atomic_store_n(&r->phase, p, __ATOMIC_SEQ_CST);
}

/* waitpid for tid (any kind of thread): 0 with its status, or -1
 * (errno; ETIMEDOUT past ms, if ms). Unbounded (ms 0) only where the
 * thread is making our call, which the kernel ends. */
static int wait_tid(pid_t tid, int *st, unsigned ms)
{
	uint64_t until = boot_ns() + (uint64_t)ms * 1000000;

	for (;;) {
		pid_t r = waitpid(tid, st, __WALL | (ms ? WNOHANG : 0));

		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (r == 0) {
			if (boot_ns() > until) {
				errno = ETIMEDOUT;
				return -1;
			}
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
		}
	}
}

/* Where a thread in a ptrace stop is: INJ_OP_ENTRY or _EXIT of a
 * system call, else INJ_OP_NONE (a signal's or an event's stop). */
enum { INJ_OP_NONE, INJ_OP_ENTRY, INJ_OP_EXIT };
static int sc_op(pid_t tid)
{
	struct {
		uint8_t op, pad[3];
		uint32_t arch;
		uint64_t ip, sp, u[7];
	} si;

	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) < 0)
		return INJ_OP_NONE;
	return si.op == 1 ? INJ_OP_ENTRY : si.op == 2 ? INJ_OP_EXIT : INJ_OP_NONE;
}

/* The fork's child, from a clone event of tid: recorded (the PID first:
 * what the guardian reads). */
static void take_child(struct inj_rec *rec, pid_t tid)
{
	unsigned long c = 0;
	int fd;

	if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &c) || !c || c > INT32_MAX)
		return;
	rec->child_start = 0;
	__atomic_store_n(&rec->child, (pid_t)c, __ATOMIC_SEQ_CST);
	fd = (int)syscall(SYS_pidfd_open, (pid_t)c, 0);
	rec->child_start = fd >= 0 ? proc_start((pid_t)c, fd) : 0;
	if (fd >= 0)
		close(fd);
}

/* The child's first stop, its SIGSTOP's delivery, seen but not taken
 * (waited with WNOWAIT): from it the child is killed with us
 * (PTRACE_O_EXITKILL, its own); until then it would stop on that
 * SIGSTOP. 0, or -ESRCH (no stop in INJ_WAIT_MS). */
static int child_exitkill(pid_t child)
{
	siginfo_t si;
	uint64_t until = boot_ns() + (uint64_t)INJ_WAIT_MS * 1000000;
	int r;

	memset(&si, 0, sizeof(si));
	while ((r = waitid(P_PID, (id_t)child, &si, WSTOPPED | __WALL | WNOWAIT | WNOHANG)) == 0 &&
	       !si.si_pid && boot_ns() < until)
		nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	if (r || !si.si_pid ||
	    ptrace(PTRACE_SETOPTIONS, child, 0, (void *)(long)PTRACE_O_EXITKILL))
		return -ESRCH;
	return 0;
}

/* Brings tid, stopped (status *st), to where its own registers can be
 * put back exactly: not inside a system call (a stop of a signal, at
 * its return to user space) or at a call's exit. A call at its entry is
 * skipped (given up: not made); one inside the kernel is let run to its
 * exit; a clone's child is recorded. *rax: the last call's return at its exit,
 * if its number was nr (else untouched). 0, or -ESRCH (gone), -EIO. */
static int settle(struct inj_rec *rec, pid_t tid, int st, long nr, int64_t *rax)
{
	for (int k = 0; k < INJ_STOPS_MAX; k++) {
		struct user_regs_struct r;
		int op = sc_op(tid);

		if ((st >> 16) == PTRACE_EVENT_CLONE)
			take_child(rec, tid);
		else if (op == INJ_OP_EXIT || op == INJ_OP_NONE) {
			if (!ptrace(PTRACE_GETREGS, tid, 0, &r) && (long)r.orig_rax == nr &&
			    (op == INJ_OP_EXIT || r.rip == rec->sysaddr + 2))
				*rax = (int64_t)r.rax;
			return 0;
		} else if (!ptrace(PTRACE_GETREGS, tid, 0, &r)) {
			r.orig_rax = (uint64_t)-1; /* at its entry: not made */
			ptrace(PTRACE_SETREGS, tid, 0, &r);
		}
		if (ptrace(PTRACE_SYSCALL, tid, 0, 0) || wait_tid(tid, &st, 0))
			return -ESRCH;
		if (!WIFSTOPPED(st))
			return -ESRCH;
	}
	return -EIO;
}

/* -- The instruction --------------------------------------------------------- */

/* A `syscall` (0f 05) in the target's vDSO: its address, or 0. The vDSO
 * is the kernel's: no file of the target's, and read while it is
 * stopped, so the bytes are those executed. */
static uint64_t vdso_syscall(pid_t tgid)
{
	struct pmaps m = { 0 };
	uint64_t at = 0;

	if (pmaps_load(tgid, &m))
		return 0;
	for (size_t i = 0; i < m.n && !at; i++) {
		const struct pmap *p = &m.v[i];
		size_t len = p->hi - p->lo;
		uint8_t *b;

		if (strcmp(p->path, "[vdso]") || p->perms[2] != 'x' || !len)
			continue;
		if (len > INJ_VDSO_MAX)
			len = INJ_VDSO_MAX;
		if (!(b = malloc(len)))
			break;
		if (!proc_read(tgid, p->lo, b, len))
			for (size_t k = 0; k + 1 < len; k++)
				if (b[k] == 0x0f && b[k + 1] == 0x05) {
					at = p->lo + k;
					break;
				}
		free(b);
	}
	pmaps_free(&m);
	return at;
}

/* -- A thread ---------------------------------------------------------------- */

/* The rseq critical section the thread was stopped in, if any: its
 * saved registers then resume at the section's abort handler, as the
 * kernel would have made them at its next return to user space (it was
 * preempted); our call's return elsewhere would only clear the section. */
static void rseq_abort(pid_t tgid, pid_t tid, struct user_regs_struct *r)
{
	struct {
		uint64_t abi;
		uint32_t size, sig, flags, pad;
	} cf;
	struct {
		uint32_t version, flags;
		uint64_t start, post, abort;
	} cs;
	uint64_t csp;
	uint32_t sig;

	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *)sizeof(cf), &cf) <
		    (long)sizeof(cf) || !cf.abi ||
	    proc_read(tgid, cf.abi + 8, &csp, 8) || !csp ||
	    proc_read(tgid, csp, &cs, sizeof(cs)))
		return;
	/* as the kernel's rseq_ip_fixup checks it: else left as it is */
	if (cs.version || r->rip - cs.start >= cs.post || cs.abort - cs.start < cs.post ||
	    cs.abort < 4 || proc_read(tgid, cs.abort - 4, &sig, 4) ||
	    sig != cf.sig)
		return;
	r->rip = cs.abort;
}

/* The stopped thread's own registers and mask (its rseq section's abort
 * applied) and a `syscall` of its vDSO (looked up at each attach: an exec
 * since maps another), into rec once all are had. 0 or -errno. */
static int save_state(struct inj_rec *rec, pid_t tgid, pid_t tid)
{
	struct user_regs_struct r;
	uint64_t mask, at;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) ||
	    ptrace(PTRACE_GETSIGMASK, tid, (void *)8L, &mask))
		return -errno;
	if (!(at = vdso_syscall(tgid)))
		return -ENOEXEC;
	rseq_abort(tgid, tid, &r);
	rec->regs = r;
	rec->mask = mask;
	rec->sysaddr = at;
	rec->tgid = tgid;
	rec->tid = tid;
	return 0;
}

int inj_attach(struct inj *j, struct inj_rec *rec, pid_t tgid, pid_t tid, uint64_t start)
{
	int st, e;

	memset(j, 0, sizeof(*j));
	j->rec = rec;
	j->tid = tid;
	if (ptrace(PTRACE_ATTACH, tid, 0, 0))
		return -errno;
	j->attached = 1;
	/* stopped whole by us: the attach's stop comes at once */
	if (wait_tid(tid, &st, INJ_WAIT_MS) || !WIFSTOPPED(st)) {
		e = errno == ETIMEDOUT ? -ETIMEDOUT : -ESRCH;
		if (e == -ESRCH)
			j->attached = 0; /* gone */
		else
			inj_detach(j);
		return e;
	}
	if (ptrace(PTRACE_SETOPTIONS, tid, 0,
		   (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD)))
		e = -errno;
	else
		e = save_state(rec, tgid, tid);
	if (e) {
		inj_detach(j);
		return e;
	}
	rec->start = start;
	return 0;
}

/* The thread's own registers and mask, back. 0 or -errno. */
static int put_back(pid_t tid, struct inj_rec *r)
{
	if (ptrace(PTRACE_SETREGS, tid, 0, &r->regs) ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)8L, &r->mask))
		return -errno;
	set_phase(r, INJ_IDLE);
	return 0;
}

int inj_call(struct inj *j, long nr, const uint64_t a[6], int64_t *ret)
{
	struct inj_rec *rec = j->rec;
	struct user_regs_struct r = rec->regs;
	/* every signal blocked but those the kernel forces (a fault, a
	 * SIGSYS of syscall user dispatch): a forced signal that is blocked
	 * resets its handler; not blocked, its stop is ours to drop */
	uint64_t mask = ~0ULL & ~((1ULL << (SIGSYS - 1)) | (1ULL << (SIGSEGV - 1)) |
				  (1ULL << (SIGBUS - 1)) | (1ULL << (SIGILL - 1)) |
				  (1ULL << (SIGTRAP - 1)) | (1ULL << (SIGFPE - 1)));
	int64_t got = INT64_MIN;
	int err = -EIO, e, st = 0;

	if (!j->attached)
		return -ESRCH;
	if (nr == SYS_wait4 && (int64_t)a[0] <= 0)
		return -EINVAL; /* one child, named: never "any" */
	r.rip = rec->sysaddr;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1; /* no call of its own to restart meanwhile */
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	/* A child that ever ran (made untraced: its tracer gone while the
	 * kernel copied the memory) faults at its first use of the stack,
	 * not running the target's code on. */
	if (nr == SYS_clone) {
		r.rsp = r.rbp = 8;
		rec->child_ns = 0;
	}
	set_phase(rec, INJ_SET);
	if (ptrace(PTRACE_SETSIGMASK, j->tid, (void *)8L, &mask) ||
	    ptrace(PTRACE_SETREGS, j->tid, 0, &r)) {
		err = -errno;
		goto back;
	}
	if (nr == SYS_clone)
		inj_test_point(INJ_AT_SET);
	for (int k = 0; k < INJ_STOPS_MAX; k++) {
		int sig, ev;

		if (ptrace(PTRACE_SYSCALL, j->tid, 0, 0) || wait_tid(j->tid, &st, 0)) {
			err = -errno;
			break;
		}
		if (!WIFSTOPPED(st)) { /* killed: nothing of ours is left */
			set_phase(rec, INJ_IDLE);
			j->attached = 0;
			return -ESRCH;
		}
		sig = WSTOPSIG(st);
		ev = st >> 16;
		if (ev == PTRACE_EVENT_CLONE) {
			take_child(rec, j->tid);
			/* at once, the parent held here: the child killed
			 * with us from its first stop (a child detached
			 * before would stop on its SIGSTOP, and its parent
			 * hear of it) */
			if (rec->child && !child_exitkill(rec->child))
				inj_test_point(INJ_AT_CLONED);
		} else if (sig == (SIGTRAP | 0x80)) {
			if (sc_op(j->tid) != INJ_OP_EXIT)
				continue;
			if (ptrace(PTRACE_GETREGS, j->tid, 0, &r)) {
				err = -errno;
				break;
			}
			got = (int64_t)r.rax;
			err = 0;
			if (nr == SYS_clone)
				inj_test_point(INJ_AT_RETURNED);
			break;
		} else if (sig != SIGSTOP) {
			siginfo_t si;

			/* a fault of the instruction, or syscall user
			 * dispatch's SIGSYS: not delivered, the call given up;
			 * one someone sent is delivered at the detach, its
			 * own registers back */
			if (!ptrace(PTRACE_GETSIGINFO, j->tid, 0, &si) && si.si_code <= 0)
				j->resig = sig;
			err = -EFAULT;
			break;
		} /* the attach's SIGSTOP, or a group-stop: not delivered */
	}
	/* given up inside the call (its entry, an event): to its exit first,
	 * so that what is put back is not overwritten */
	if (err && err != -ESRCH && settle(rec, j->tid, st, nr, &got) == -ESRCH) {
		set_phase(rec, INJ_IDLE);
		j->attached = 0;
		return -ESRCH;
	}
	if (got != INT64_MIN)
		*ret = got;
	/* a fork made, even in a call given up: its child is to be reaped */
	if (nr == SYS_clone && got > 0 && got <= INT32_MAX)
		rec->child_ns = (pid_t)got;
back:
	if ((e = put_back(j->tid, rec)) && !err)
		err = e;
	if (rec->child && nr == SYS_clone && child_exitkill(rec->child))
		err = err ? err : -ESRCH;
	return err;
}

void inj_detach(struct inj *j)
{
	if (j->attached)
		ptrace(PTRACE_DETACH, j->tid, 0, (void *)(long)j->resig);
	j->attached = 0;
	j->resig = 0;
}

/* -- The child ------------------------------------------------------------- */

/* pid's process, if it started at start: a pidfd, or -1. */
static int same(pid_t pid, uint64_t start)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd >= 0 && (!start || proc_start(pid, fd) != start)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int inj_child_kill(struct inj_rec *rec)
{
	pid_t c = rec->child;
	int st, fd;

	if (!c)
		return 0;
	/* our tracee, not reaped: the PID is its */
	if ((fd = (int)syscall(SYS_pidfd_open, c, 0)) < 0)
		return -errno;
	syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	close(fd);
	/* as its tracer, if we are (else ECHILD): then it is its parent's
	 * zombie */
	while (!wait_tid(c, &st, INJ_WAIT_MS) && WIFSTOPPED(st))
		;
	return 0;
}

/* -- The guardian's part ---------------------------------------------------- */

/* The child of thread tid whose PID in its namespace is ns: ours, or 0.
 * From the thread's children list (CONFIG_PROC_CHILDREN), at most 4096
 * bytes of it. */
static pid_t child_by_ns(pid_t tgid, pid_t tid, pid_t ns)
{
	char p[96], buf[4096], *s, *e;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)tgid, (int)tid);
	if (proc_small(p, buf, sizeof(buf)) < 0)
		return 0;
	for (s = buf; *s; s = e) {
		long c = strtol(s, &e, 10);
		pid_t in;

		if (e == s || c <= 0 || c > INT32_MAX)
			break;
		in = proc_nspid((pid_t)c);
		if ((in ? in : (pid_t)c) == ns)
			return (pid_t)c;
	}
	return 0;
}

void inj_recover(struct inj_rec *rec)
{
	struct inj j;
	int st, tfd, held = rec->phase == INJ_SET;
	int64_t rax = INT64_MIN;

	if (!rec->tgid || (!held && !rec->child))
		return;
	if ((tfd = same(rec->tgid, rec->start)) < 0)
		return; /* the target is gone: so is its child */
	memset(&j, 0, sizeof(j));
	j.rec = rec;
	j.tid = rec->tid;
	/* the thread still one of the target's (tgkill checks both), and
	 * the target's memory read through its own descriptor */
	if (syscall(SYS_tgkill, rec->tgid, rec->tid, 0) || proc_bind(rec->tgid, tfd) ||
	    ptrace(PTRACE_ATTACH, rec->tid, 0, 0)) {
		close(tfd);
		return;
	}
	j.attached = 1;
	/* still the target's thread: the PID not given again since */
	if (syscall(SYS_pidfd_send_signal, tfd, 0, NULL, 0)) {
		inj_detach(&j);
		proc_unbind(rec->tgid, tfd);
		close(tfd);
		return;
	}
	/* A thread holding our registers may be inside our call (a fork
	 * takes long): waited for as long as the call lasts, or it would
	 * run them. */
	if (wait_tid(rec->tid, &st, held ? 0 : INJ_WAIT_MS) || !WIFSTOPPED(st)) {
		inj_detach(&j);
		proc_unbind(rec->tgid, tfd);
		close(tfd);
		return;
	}
	/* a clone still in the kernel reports its child to us */
	ptrace(PTRACE_SETOPTIONS, rec->tid, 0,
	       (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE));
	if (held) {
		if (settle(rec, rec->tid, st, SYS_clone, &rax) == -ESRCH) {
			proc_unbind(rec->tgid, tfd);
			close(tfd);
			return;
		}
		if (rax > 0 && rax <= INT32_MAX) {
			rec->child_ns = (pid_t)rax;
			/* a fork made, its child not yet recorded */
			if (!rec->child && (rec->child = child_by_ns(rec->tgid, rec->tid, (pid_t)rax)))
				rec->child_start = 0;
		}
		if (put_back(rec->tid, rec)) {
			inj_detach(&j);
			proc_unbind(rec->tgid, tfd);
			close(tfd);
			return;
		}
	} else if (save_state(rec, rec->tgid, rec->tid)) {
		/* it ran on since the tracer saved them: its registers now */
		inj_detach(&j);
		proc_unbind(rec->tgid, tfd);
		close(tfd);
		return;
	}
	if (rec->child && !rec->child_ns)
		rec->child_ns = proc_nspid(rec->child) ? proc_nspid(rec->child) : rec->child;
	if (rec->child) {
		int fd = rec->child_start ? same(rec->child, rec->child_start)
					  : (int)syscall(SYS_pidfd_open, rec->child, 0);

		if (fd >= 0) {
			uint64_t a[6] = { (uint64_t)rec->child_ns, 0, __WALL | WNOHANG, 0, 0, 0 };
			int64_t r = 0;
			int cst;

			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
			close(fd);
			/* born under our attach, it is ours to wait for first */
			while (!wait_tid(rec->child, &cst, INJ_WAIT_MS) && WIFSTOPPED(cst))
				;
			for (int k = 0; k < 200 && proc_state(rec->child, "stat") != 'Z'; k++)
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
			if (rec->child_ns > 0 && proc_state(rec->child, "stat") == 'Z' &&
			    !inj_call(&j, SYS_wait4, a, &r) && r == rec->child_ns)
				rec->child = 0;
		}
	}
	inj_detach(&j);
	proc_unbind(rec->tgid, tfd);
	close(tfd);
}

#else /* not x86-64 */

int inj_supported(void)
{
	return 0;
}

struct inj_rec *inj_rec_new(void)
{
	return NULL;
}

int inj_attach(struct inj *j, struct inj_rec *rec, pid_t tgid, pid_t tid, uint64_t start)
{
	(void)j; (void)rec; (void)tgid; (void)tid; (void)start;
	return -ENOSYS;
}

int inj_call(struct inj *j, long nr, const uint64_t a[6], int64_t *ret)
{
	(void)j; (void)nr; (void)a; (void)ret;
	return -ENOSYS;
}

void inj_detach(struct inj *j)
{
	(void)j;
}

int inj_child_kill(struct inj_rec *rec)
{
	(void)rec;
	return 0;
}

void inj_recover(struct inj_rec *rec)
{
	(void)rec;
}

#endif
