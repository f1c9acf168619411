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

/* waitpid for tid (any kind of thread): its status, or -1 (errno). */
static int wait_tid(pid_t tid, int *st)
{
	pid_t r;

	while ((r = waitpid(tid, st, __WALL)) < 0 && errno == EINTR)
		;
	return r == tid ? 0 : -1;
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

int inj_attach(struct inj *j, struct inj_rec *rec, pid_t tgid, pid_t tid, uint64_t start)
{
	int st, e;

	memset(j, 0, sizeof(*j));
	j->rec = rec;
	j->tid = tid;
	if (ptrace(PTRACE_ATTACH, tid, 0, 0))
		return -errno;
	j->attached = 1;
	if (wait_tid(tid, &st) || !WIFSTOPPED(st)) {
		j->attached = 0; /* gone */
		return -ESRCH;
	}
	if (ptrace(PTRACE_SETOPTIONS, tid, 0,
		   (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD)) ||
	    ptrace(PTRACE_GETREGS, tid, 0, &rec->regs) ||
	    ptrace(PTRACE_GETSIGMASK, tid, (void *)8L, &rec->mask)) {
		e = -errno;
		inj_detach(j);
		return e;
	}
	rec->tgid = tgid;
	rec->tid = tid;
	rec->start = start;
	if (!rec->sysaddr && !(rec->sysaddr = vdso_syscall(tgid))) {
		inj_detach(j);
		return -ENOEXEC;
	}
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
	uint64_t all = ~0ULL;
	int err = -EIO, entered = 0, e;

	if (!j->attached)
		return -ESRCH;
	r.rip = rec->sysaddr;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1; /* no call of its own to restart meanwhile */
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	set_phase(rec, INJ_SET);
	if (ptrace(PTRACE_SETSIGMASK, j->tid, (void *)8L, &all) ||
	    ptrace(PTRACE_SETREGS, j->tid, 0, &r)) {
		err = -errno;
		goto back;
	}
	if (nr == SYS_clone)
		inj_test_point(INJ_AT_SET);
	for (int k = 0; k < INJ_STOPS_MAX; k++) {
		int st, sig, ev;

		if (ptrace(PTRACE_SYSCALL, j->tid, 0, 0) || wait_tid(j->tid, &st)) {
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
			unsigned long c = 0;

			if (!ptrace(PTRACE_GETEVENTMSG, j->tid, 0, &c) && c && c <= INT32_MAX) {
				int fd = (int)syscall(SYS_pidfd_open, (pid_t)c, 0);

				rec->child_start = fd >= 0 ? proc_start((pid_t)c, fd) : 0;
				if (fd >= 0)
					close(fd);
				__atomic_store_n(&rec->child, (pid_t)c, __ATOMIC_SEQ_CST);
				inj_test_point(INJ_AT_CLONED);
			}
		} else if (sig == (SIGTRAP | 0x80)) {
			if (!entered) {
				entered = 1;
				continue;
			}
			if (ptrace(PTRACE_GETREGS, j->tid, 0, &r)) {
				err = -errno;
				break;
			}
			*ret = (int64_t)r.rax;
			err = 0;
			if (nr == SYS_clone)
				inj_test_point(INJ_AT_RETURNED);
			break;
		} else if (sig != SIGSTOP) {
			/* a fault of the instruction (it never is, read
			 * stopped): not delivered */
			err = -EFAULT;
			break;
		} /* the attach's SIGSTOP, or a group-stop: not delivered */
	}
	if (!err && nr == SYS_clone && *ret > 0)
		rec->child_ns = (pid_t)*ret;
back:
	if ((e = put_back(j->tid, rec)) && !err)
		err = e;
	/* The child's first stop, its SIGSTOP's delivery, taken: it stays
	 * there (if we die, it stops on it). */
	if (rec->child && nr == SYS_clone) {
		int st;

		if (wait_tid(rec->child, &st) || !WIFSTOPPED(st))
			err = err ? err : -ESRCH;
	}
	return err;
}

void inj_detach(struct inj *j)
{
	if (j->attached)
		ptrace(PTRACE_DETACH, j->tid, 0, 0);
	j->attached = 0;
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
	/* as its tracer: then it is its parent's zombie */
	while (!wait_tid(c, &st) && WIFSTOPPED(st))
		;
	return 0;
}

/* -- The guardian's part ---------------------------------------------------- */

/* Field 3 of /proc/PID/stat: the state letter, 0 if unknown. */
static char state_of(pid_t pid)
{
	char p[64], st[512];
	const char *c;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (proc_small(p, st, sizeof(st)) < 0 || !(c = strrchr(st, ')')) || !c[1])
		return 0;
	return c[2];
}

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
	int st, tfd;

	if (!rec->tgid || (rec->phase != INJ_SET && !rec->child))
		return;
	if ((tfd = same(rec->tgid, rec->start)) < 0)
		return; /* the target is gone: so is its child */
	close(tfd);
	memset(&j, 0, sizeof(j));
	j.rec = rec;
	j.tid = rec->tid;
	if (ptrace(PTRACE_ATTACH, rec->tid, 0, 0))
		return;
	j.attached = 1;
	if (wait_tid(rec->tid, &st) || !WIFSTOPPED(st))
		return;
	ptrace(PTRACE_SETOPTIONS, rec->tid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD);
	if (rec->phase == INJ_SET) {
		struct user_regs_struct now;

		/* a fork made, its child not yet recorded: its return */
		if (!rec->child && !ptrace(PTRACE_GETREGS, rec->tid, 0, &now) &&
		    now.rip == rec->sysaddr + 2 && now.orig_rax == SYS_clone &&
		    (int64_t)now.rax > 0 && (int64_t)now.rax <= INT32_MAX) {
			rec->child_ns = (pid_t)now.rax;
			if ((rec->child = child_by_ns(rec->tgid, rec->tid, rec->child_ns)))
				rec->child_start = 0; /* found as its child: it */
		}
		if (put_back(rec->tid, rec)) {
			inj_detach(&j);
			return;
		}
	}
	if (rec->child) {
		int fd = rec->child_start ? same(rec->child, rec->child_start)
					  : (int)syscall(SYS_pidfd_open, rec->child, 0);

		if (fd >= 0) {
			uint64_t a[6] = { (uint64_t)rec->child_ns, 0, __WALL | WNOHANG, 0, 0, 0 };
			int64_t r = 0;

			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
			close(fd);
			for (int k = 0; k < 200 && state_of(rec->child) != 'Z'; k++)
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
			if (state_of(rec->child) == 'Z' && !inj_call(&j, SYS_wait4, a, &r))
				rec->child = 0;
		}
	}
	inj_detach(&j);
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
