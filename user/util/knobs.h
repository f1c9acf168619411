/* The environment's switches for tests, benchmarks and debugging, read
 * once at start (knobs_read, from main) into one struct that nothing
 * writes after. A switch is on at "1" alone; a level is a digit from "1"
 * to its maximum, anything else 0. None is needed in production: each
 * forces a path a kernel or a test would otherwise not take. */
#ifndef LMT_KNOBS_H
#define LMT_KNOBS_H

#include <stdint.h>

struct knobs {
	/* The BPF object (probes/object.c) */
	uint8_t walk_per_run;   /* LMT_WALK_PER_RUN: page-table walks per run */
	uint8_t no_direct;      /* LMT_NO_DIRECT: no reads through page tables */
	uint8_t no_shared;      /* LMT_NO_SHARED: no shared session links */
	uint8_t test_await;     /* LMT_TEST_AWAIT (0-2): forced awaits */
	uint8_t no_predict;     /* LMT_NO_PREDICT: no address told at entry */
	uint8_t test_predict;   /* LMT_TEST_PREDICT (0-2): forced misses */
	/* Kernel features taken as missing (probes/kfeat.c) */
	uint8_t no_uprobe_multi; /* LMT_NO_UPROBE_MULTI */
	uint8_t no_session;      /* LMT_NO_SESSION */
	uint8_t compat_reader;   /* LMT_COMPAT_READER */
	uint8_t no_signal_task;  /* LMT_NO_SIGNAL_TASK */
	/* Stops (session/guard.c, session/stops.c) */
	unsigned test_deadline_ms; /* LMT_TEST_DEADLINE: a stop's deadline */
	unsigned test_hold_ms;     /* LMT_TEST_HOLD: stops held this longer */
	/* LMT_TEST_STOP_AT=NAME: the tracer stops itself once, right after it
	 * opened a mapping of file NAME (target/tfile.c) */
	const char *test_stop_at;
	/* Heap snapshots (heap/capture.c) */
	uint8_t no_ptscan;      /* LMT_NO_PTSCAN: pagemap's soft-dirty bits
				 * alone, not the pages' own entries */
	/* LMT_TEST_INJ_DIE=N (1-5): the tracer kills itself at point N of a
	 * copy-on-write copy (target/inject.h's inj_test_point); _STALL=N:
	 * it waits there for good instead (the guardian's deadline) */
	uint8_t test_inj_die, test_inj_stall;
	/* Debugging */
	uint8_t libbpf_debug;   /* LMT_LIBBPF_DEBUG (set at all): libbpf's log */
	uint8_t debug_stats;    /* LMT_DEBUG_STATS (set at all): BPF's counters */
	/* Where the kernel's filesystems are (session/run.c's checks) */
	const char *sysfs;      /* LMT_SYSFS, default /sys */
	const char *procfs;     /* LMT_PROCFS, default /proc */
};

extern struct knobs knobs;

void knobs_read(void);

#endif
