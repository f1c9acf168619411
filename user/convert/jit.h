/* Traces of a VM, as user space needs them to charge what compiled code
 * allocates to a Lua line: each trace's snapshots (machine code offset,
 * PC), read from the target once, when BPF first names the trace; the
 * prototype and line of a snapshot's PC, found on first use. */
#ifndef LMT_TRACES_H
#define LMT_TRACES_H

#include <stdint.h>

#include "luamemtrace.h"
#include "format/memprof.h"
#include "format/stacks.h"

struct conv_vm;
struct tout;

/* A new trace (its record): its snapshots read now. A trace number reused
 * replaces the old one. */
void traces_add(struct conv_vm *v, const struct lmt_trace *r);
/* Where in a trace an event was charged (for its stack): the snapshot,
 * and which of its walks' inlined call paths led there (-1: none). */
struct tloc {
	uint32_t trace, snap;
	int chain;
	int by_call; /* its site told by the stretch's calls (call_site) */
};

/* An event of compiled code (LMT_EV_MCOFS, LMT_EV_EXIT): to the Lua line
 * it belongs to, the prototype's symbol written first if the stream has
 * not had it from this trace; where, in *at (if not NULL). 0, or -1: left
 * at trace granularity. */
int traces_line(struct conv_vm *v, struct mp_event *m, uint8_t flags, struct tloc *at);
/* The stack of an event charged by traces_line (m as it left it, at):
 * the event's frame, the calls the trace inlined to it (from the
 * snapshot and the walk), down to the trace's base frame, at most max,
 * innermost first; *whole if it got there. A builtin's frame comes as
 * src 0 with its ffid in addr. Told from what traces_add read while the
 * process was stopped: no read of the target here. The count. */
unsigned traces_frames(struct conv_vm *v, const struct tloc *at, const struct mp_event *m,
		       struct sk_frame *out, unsigned max, int *whole);
void traces_free(struct conv_vm *v);

#endif
