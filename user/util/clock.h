/* Clocks, in seconds as doubles (cpu_ns: nanoseconds): now() monotonic,
 * for every interval; wall_now() the epoch, for what a stream says of
 * when; cpu_ns() the tracer's own CPU time (user + system). */
#ifndef LMT_CLOCK_H
#define LMT_CLOCK_H

#include <stdint.h>

double now(void);
double wall_now(void);
double cpu_ns(void);
/* CLOCK_BOOTTIME in ns: the clock of a stop's times (BPF's
 * bpf_ktime_get_boot_ns), for the guardian and the heap's stop. */
uint64_t boot_ns(void);

#endif
