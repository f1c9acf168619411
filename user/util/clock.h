/* Clocks, in seconds as doubles (cpu_ns: nanoseconds): now() monotonic,
 * for every interval; wall_now() the epoch, for what a stream says of
 * when; cpu_ns() the tracer's own CPU time (user + system). */
#ifndef LMT_CLOCK_H
#define LMT_CLOCK_H

double now(void);
double wall_now(void);
double cpu_ns(void);

#endif
