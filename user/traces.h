/* Traces of a VM, as user space needs them to charge what compiled code
 * allocates to a Lua line: each trace's snapshots (machine code offset,
 * PC), read from the target once, when BPF first names the trace; the
 * prototype and line of a snapshot's PC, found on first use. */
#ifndef LMT_TRACES_H
#define LMT_TRACES_H

#include <stdint.h>

#include "luamemtrace.h"
#include "memprof.h"

struct tvm;
struct tout;

/* A new trace (its record): its snapshots read now. A trace number reused
 * replaces the old one. */
void traces_add(struct tvm *v, const struct lmt_trace *r);
/* An event of compiled code (LMT_EV_MCOFS, LMT_EV_EXIT): to the Lua line
 * it belongs to, the prototype's symbol written first if the stream has
 * not had it from this trace. 0, or -1: left at trace granularity. */
int traces_line(struct tvm *v, struct mp_event *m, uint8_t flags);
void traces_free(struct tvm *v);

#endif
