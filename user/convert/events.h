/* Events and symbols of a VM as its stream has them (convert/events.c):
 * what capture hands over, record by record, in the order the VM sent
 * them. ev_where is here, inline, for capture's loop over a lone stream's
 * batch (capture/ring.c: lone_batch). */
#ifndef LMT_EVENTS_H
#define LMT_EVENTS_H

#include "convert/conv.h"
#include "convert/jit.h"
#include "convert/lines.h"

/* A prototype's record (sz bytes, its line table included): its symbol,
 * and its line table kept for the positions of its events. */
void ev_proto(struct conv_vm *v, const struct lmt_proto *p, size_t sz);
/* A trace's record: its symbol, and its snapshots kept (convert/jit.h). */
void ev_trace(struct conv_vm *v, const struct lmt_trace *r);
/* An event of VM v into its stream, with the symbols it needs first and
 * its stack's (--stacks). */
void ev_out(struct conv_vm *v, const struct lmt_ev *r);

/* A position (LMT_EV_POS) to a line through the prototype's table. */
static inline void pos_line(struct conv_vm *v, struct mp_event *m)
{
	const struct pline *l = u64map_get(&v->lines, m->loc);
	int64_t line = l ? pline_line(l, m->line) : 0;

	if (!l)
		v->p->nolines++;
	if (line < 0) {
		m->src = MP_SRC_INTERNAL;
		m->loc = 0;
		line = 0;
	}
	m->line = (uint64_t)line;
}

/* Event r as the stream has it, before ev_where. Field by field: a
 * compound literal's zeroing is a rep stos, whose start cost as much as
 * the rest of a lone stream's event. */
static inline void ev_event(struct mp_event *m, const struct lmt_ev *r)
{
	m->kind = r->kind;
	m->src = r->src;
	m->loc = r->loc;
	m->line = r->line;
	m->oaddr = r->oaddr;
	m->osize = r->osize;
	m->naddr = r->naddr;
	m->nsize = r->nsize;
}

/* Event m's place in the source (src and flags as it came: LMT_EV_*): a
 * position to its line; compiled code to its line through the trace's
 * snapshots, where in *at (chain -2: not in a trace); an exit that cannot
 * be told is the VM's, as in-VM. */
static inline void ev_where(struct conv_vm *v, struct mp_event *m, uint8_t src, uint8_t flags,
			    struct tloc *at)
{
	if (flags & LMT_EV_POS)
		pos_line(v, m);
	at->chain = -2;
	if (src == LMT_SRC_TRACE && (flags & (LMT_EV_MCOFS | LMT_EV_EXIT)) &&
	    traces_line(v, m, flags, at)) {
		if (flags & LMT_EV_EXIT)
			*m = (struct mp_event){ .kind = m->kind, .src = MP_SRC_INTERNAL,
						.oaddr = m->oaddr, .osize = m->osize,
						.naddr = m->naddr, .nsize = m->nsize };
		else
			m->line = 0;
	}
}

#endif
