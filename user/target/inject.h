/* One system call made by a thread of the target (ptrace), for the heap's
 * copy-on-write copy (heap/cow.c): a fork, then the wait that reaps its
 * child. x86-64 only (inj_supported).
 *
 * The contract, whatever happens:
 * - Only inside a stop of the whole process (heap/stop.c, under the
 *   guardian): the thread is attached with PTRACE_ATTACH, so no other
 *   thread runs, and the one we use runs nothing but our call.
 * - Its registers and signal mask are saved, every signal blocked, the
 *   call made from a `syscall` instruction of its vDSO, and both put back
 *   exactly before it is detached: a call it was blocked in is restarted
 *   or fails as it would have without us (the kernel's own restart, at
 *   its next return to user space, which the detach forces).
 * - The record (struct inj_rec, in memory shared with the guardian) says
 *   at each instant what the thread holds of ours and which child the
 *   fork made. If we die, the guardian, before it continues the target,
 *   puts the thread's own registers back, kills the child and reaps it
 *   (inj_recover). Past the guardian's deadline with the thread holding
 *   ours, the guardian kills us first (session/guard.c).
 * - A child made by an injected fork never runs a single instruction: it
 *   is born traced by us with SIGSTOP pending (PTRACE_ATTACH, not SEIZE),
 *   we never resume it, and if we die it stops on that SIGSTOP. It is
 *   made with no exit signal, so its parent gets no SIGCHLD and its usual
 *   waits (without __WALL) never see it; the injected wait4 reaps it.
 */
#ifndef LMT_INJECT_H
#define LMT_INJECT_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

enum { INJ_IDLE, INJ_SET };

/* What the thread holds of ours: written by the tracer, read by the
 * guardian once the tracer is gone. */
struct inj_rec {
	uint32_t phase;           /* INJ_SET: the thread may hold our registers */
	pid_t tgid, tid;          /* the target, the thread we use */
	uint64_t start;           /* the target's start (proc_start's ticks) */
	uint64_t sysaddr;         /* the `syscall` instruction used */
	uint64_t mask;            /* the thread's own signal mask */
	struct user_regs_struct regs; /* its own registers */
	pid_t child;              /* the fork's child (our PID namespace), until
				   * reaped; 0 if none */
	pid_t child_ns;           /* its PID in the target's namespace */
	uint64_t child_start;     /* its start (ticks) */
	uint32_t others_stop;     /* the target was stopped by someone else:
				   * the guardian neither stops nor continues it */
};

/* A thread attached for calls. */
struct inj {
	struct inj_rec *rec;
	pid_t tid;
	int attached;
	int resig;  /* a signal someone sent it, met in our call: delivered
		     * at the detach */
};

/* The instants a test may end or stall the tracer at (LMT_TEST_INJ_DIE,
 * LMT_TEST_INJ_STALL, util/knobs.h): the thread holds our registers,
 * its call not made (1); the fork made, its child recorded (2); the call
 * returned, its registers not yet put back (3); the copy being read, the
 * target running (4); the child killed, not yet reaped (5). */
enum { INJ_AT_SET = 1, INJ_AT_CLONED, INJ_AT_RETURNED, INJ_AT_COPY, INJ_AT_KILLED };
void inj_test_point(int at);

/* Can calls be injected on this machine (x86-64)? */
int inj_supported(void);
/* A record in memory shared with processes forked after (the guardian),
 * zeroed; NULL if none could be mapped. */
struct inj_rec *inj_rec_new(void);

/* Attaches thread tid of process tgid (stopped whole, by us): waits for
 * its stop, saves its registers and mask in rec (rec->tgid..). 0, or
 * -errno (EPERM: traced by someone else; ESRCH: gone). */
int inj_attach(struct inj *j, struct inj_rec *rec, pid_t tgid, pid_t tid, uint64_t start);
/* Makes system call nr with args a[0..5] in the thread and puts its own
 * registers and mask back: 0 with *ret the call's return value (a
 * negative errno on failure), or -errno if it could not be made (the
 * thread's own state put back). A clone's child is recorded (rec->child,
 * traced by us, stopped before its first instruction). */
int inj_call(struct inj *j, long nr, const uint64_t a[6], int64_t *ret);
/* Detaches the thread (it stays stopped with its process). */
void inj_detach(struct inj *j);

/* The fork's child: killed, and waited for as its tracer (it is then its
 * parent's to reap: a zombie until the injected wait4). 0 or -errno. */
int inj_child_kill(struct inj_rec *rec);

/* The guardian's part, once the tracer is gone (or killed), with the
 * target still stopped by the tracer's stop: the thread's own registers
 * and mask put back if it may hold ours (a child the fork made though
 * not yet recorded found from its return value), the child killed and
 * reaped (a wait4 injected). Bounded; says nothing (the guardian has no
 * terminal). */
void inj_recover(struct inj_rec *rec);

#endif
