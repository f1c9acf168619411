/* The environment's switches (util/knobs.h). */
#include <stdlib.h>

#include "util/knobs.h"

struct knobs knobs;

/* n's level: 1 to max for "1" to max (a digit), else 0. */
static uint8_t level(const char *n, char max)
{
	const char *v = getenv(n);

	return v && v[0] >= '1' && v[0] <= max && !v[1] ? (uint8_t)(v[0] - '0') : 0;
}

/* n's milliseconds: a positive number, else 0. */
static unsigned ms(const char *n)
{
	const char *v = getenv(n);
	long x = v ? atol(v) : 0;

	return x > 0 && x < 3600000 ? (unsigned)x : 0;
}

void knobs_read(void)
{
	const char *v;

	knobs.walk_per_run = level("LMT_WALK_PER_RUN", '1');
	knobs.no_direct = level("LMT_NO_DIRECT", '1');
	knobs.no_shared = level("LMT_NO_SHARED", '1');
	knobs.test_await = level("LMT_TEST_AWAIT", '2');
	knobs.no_predict = level("LMT_NO_PREDICT", '1');
	knobs.test_predict = level("LMT_TEST_PREDICT", '2');
	knobs.no_uprobe_multi = level("LMT_NO_UPROBE_MULTI", '1');
	knobs.no_session = level("LMT_NO_SESSION", '1');
	knobs.compat_reader = level("LMT_COMPAT_READER", '1');
	knobs.no_signal_task = level("LMT_NO_SIGNAL_TASK", '1');
	knobs.no_ptscan = level("LMT_NO_PTSCAN", '1');
	knobs.test_inj_die = level("LMT_TEST_INJ_DIE", '5');
	knobs.test_inj_stall = level("LMT_TEST_INJ_STALL", '5');
	knobs.test_deadline_ms = ms("LMT_TEST_DEADLINE");
	knobs.test_hold_ms = ms("LMT_TEST_HOLD");
	knobs.test_stop_at = getenv("LMT_TEST_STOP_AT");
	knobs.libbpf_debug = getenv("LMT_LIBBPF_DEBUG") != NULL;
	knobs.debug_stats = getenv("LMT_DEBUG_STATS") != NULL;
	knobs.sysfs = (v = getenv("LMT_SYSFS")) ? v : "/sys";
	knobs.procfs = (v = getenv("LMT_PROCFS")) ? v : "/proc";
}
