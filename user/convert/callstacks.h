/* Call stacks of events (--stacks): BPF's stack records (struct
 * lmt_stack) resolved per VM, and each event's stack written to its
 * stream's companion (format/stacks.h). */
#ifndef LMT_CALLSTACKS_H
#define LMT_CALLSTACKS_H

#include <stdint.h>

#include "luamemtrace.h"
#include "format/memprof.h"

struct conv_vm;
struct tloc;

/* A stack record of VM v: its frames resolved now (their prototypes'
 * records came before it). */
void stk_def_rec(struct conv_vm *v, const struct lmt_stack *r, size_t sz);
/* The stack of event r (m: as charged; at: where in a trace, or NULL) in
 * v's stream's companion: its number there, 0 if none (a stream of
 * several VMs: a held one, streams/stknum.h). */
uint32_t stk_event(struct conv_vm *v, const struct lmt_ev *r, const struct mp_event *m,
		  const struct tloc *at);
void stk_forget_vm(struct conv_vm *v);

#endif
