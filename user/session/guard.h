/* The guardian: a process that outlives the tracer to continue what it
 * left stopped. BPF stops a process (SIGSTOP) while user space probes a
 * new allocator or reads a new object, and records the stop in a map
 * until the tracer has sent SIGCONT (bpf/stop.h, lmt_stops). If the
 * tracer dies at any instant, even by SIGKILL, the guardian, which holds
 * that map, waits until every thread of the tracer is gone (so are its
 * probes), then continues every process the map still names.
 *
 * Other tracers stop the processes they trace the same way, and a SIGCONT
 * ends every stop at once: a process is continued only when no tracer's
 * map holds a stop of it (struct lmt_hold says how).
 *
 * No process is held hostage by a tracer that stalls (stopped, or busy
 * with one hostile process): while the tracer lives, the guardian
 * continues every stop held past LMT_HOLD_MAX_MS (it marks it
 * LMT_STOP_EXPIRED; the tracer says so and removes it). A SIGCONT goes
 * through a pidfd, to the process the stop was made for (its start
 * time), never to another given its PID.
 */
#ifndef LMT_GUARD_H
#define LMT_GUARD_H

#include <stdint.h>
#include <sys/types.h>

/* -- Caps ------------------------------------------------------------------ */

/* Longest a stop is held, in ms: past it the guardian continues the
 * process whatever the tracer is doing. Stops last a few ms (probing an
 * allocator, reading a trace); 2 s is far above that on a loaded host,
 * and short enough that a stalled tracer costs a tenant no more than a
 * brief pause. LMT_TEST_HOLD (tests) lengthens it by as much;
 * LMT_TEST_DEADLINE=MS (tests) replaces it. */
#define LMT_HOLD_MAX_MS 2000
/* A stop whose process is making a call the tracer injected (a fork,
 * target/inject.h) is held this many deadlines at most before it is
 * continued anyway (a fork of a large process takes long; one that never
 * ends holds no one hostage). */
#define LMT_HOLD_CALL_TIMES 10
/* How often the guardian looks at the stops' ages, in ms. */
#define LMT_HOLD_TICK_MS 100

/* Starts the guardian over the stops map (a BPF map fd, struct lmt_stop keys).
 * Call before any probe is attached: the guardian keeps no descriptor but
 * the map and our pidfd. inj, if not NULL, is the record of our calls
 * injected into a target (target/inject.h, shared memory): once we are
 * gone the guardian puts back what it says the target holds of ours
 * (inj_recover, under a stop of its own) before it continues anything;
 * a stop held past its deadline while the target holds our registers
 * ends us first. Its PID, or -1 with errno. */
struct inj_rec;
pid_t guard_start(int stops_fd, struct inj_rec *inj);
/* Writes the record that makes the guardian's map a peer's to other
 * tracers (only such maps are: session/guard.c, Stops of other tracers). Call
 * before any stop can be made. 0, or -1 (errno). */
int guard_record(pid_t guardian, int stops_fd);

#include "luamemtrace.h"

/* A stop of the map: its key and its value. */
struct held {
	struct lmt_stop k;
	struct lmt_hold h;
};

/* Is v[i] the first stop of its process in v? */
static inline int held_first(const struct held *v, size_t i)
{
	size_t j;

	for (j = 0; j < i && v[j].k.tgid != v[i].k.tgid; j++)
		;
	return j == i;
}

/* The stops in the map now, in a malloc'd array (*v, free it; their
 * values zeroed: guard_release reads them): their count, 0 if none or out
 * of memory. */
size_t guard_stops(int stops_fd, struct held **v);
/* Releases v's stops and removes their entries: each process of v is
 * continued once, however many stops it has there, unless a stop of it is
 * still held, in this map (made since v was read; released on a later
 * call) or in another tracer's (that one continues it). A stop made after
 * the SIGCONT is a new entry: it stays, and no later SIGCONT of this call
 * can cancel it. Each v[i].h becomes the stop's value as it was marked
 * released. 0, or -1 (errno) if other tracers' maps could not all be
 * looked at (the processes are continued as if they held none). */
int guard_release(int stops_fd, struct held *v, size_t n);

/* The stops the guardian continued for being held too long (state
 * LMT_STOP_EXPIRED), in a malloc'd array (*v, free it; their values
 * read), their entries removed: their count, 0 if none or out of memory.
 * guard_stops leaves them out. */
size_t guard_expired(int stops_fd, struct held **v);

/* The boot-time offset of our time namespace, in ns: a start time of
 * /proc/PID/stat, in ns, less it is struct lmt_hold's start. */
int64_t guard_boot_offset(void);

/* Continues the process stop s was made for, through a pidfd, if it is
 * still that process (its start time); 0, or -1 if it is gone. */
int guard_cont(const struct held *s);

#endif
