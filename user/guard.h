/* The guardian: a process that outlives the tracer to continue what it
 * left stopped. BPF stops a process (SIGSTOP) while user space probes a
 * new allocator or reads a new object, and records the stop in a map
 * until the tracer has sent SIGCONT (bpf/newvm.h, stops). If the
 * tracer dies at any instant, even by SIGKILL, the guardian, which holds
 * that map, waits until every thread of the tracer is gone (so are its
 * probes), then continues every process the map still names.
 */
#ifndef LMT_GUARD_H
#define LMT_GUARD_H

#include <sys/types.h>

/* Starts the guardian over the stops map (a BPF map fd, struct lmt_stop keys).
 * Call before any probe is attached: the guardian keeps no descriptor but
 * the map and our pidfd. Its PID, or -1 with errno. */
pid_t guard_start(int stops_fd);
struct lmt_stop;

/* The stops in the map now, in a malloc'd array (*v, free it): their
 * count, 0 if none or out of memory. */
size_t guard_stops(int stops_fd, struct lmt_stop **v);
/* Continues each process of v, once however many stops it has there, then
 * removes v's entries. A stop made after the SIGCONT is a new entry: it
 * stays, and no later SIGCONT of this call can cancel it. */
void guard_release(int stops_fd, const struct lmt_stop *v, size_t n);

#endif
