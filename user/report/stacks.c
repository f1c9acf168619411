/* Stacks from a stream's companion (stacks.h): each frame named when it
 * is defined, as the report names an event's location at that point of
 * the stream (LFUNC "@chunk:line", C functions, traces, INTERNAL), a
 * builtin by its name (escaped); each stack as one folded name, root
 * first, frames joined by ';' (';' in a name becomes ','), a truncated one
 * under a "[truncated]" root. Events are keyed by that name (ev_key), so
 * --folded and HEAP SUMMARY BY STACK merge stacks that read the same. */
#include <string.h>

#include "esc.h"
#include "report_int.h"

void report_stacks_on(struct report *rp)
{
	rp->has_stacks = 1;
}

static int frame_def(struct report *rp, uint32_t id, const struct sk_frame *f)
{
	uint32_t name;

	if (id != rp->nfr + 1 ||
	    grow(&rp->frname, &rp->fr_cap, (size_t)rp->nfr + 1, sizeof(*rp->frname)))
		return -1;
	switch (f->src) {
	case MP_SRC_LFUNC:
		name = name_of(rp, f->addr, f->line, 0);
		if (name != NONE && pframe_add(rp, name, f->addr, f->line))
			return -1;
		break;
	case MP_SRC_CFUNC:
		name = name_of(rp, f->addr, 0, 0);
		break;
	case MP_SRC_TRACE:
		name = name_of(rp, 0, 0, f->addr);
		break;
	case SK_NAMED:
		rp->sb.len = 0;
		sb_escaped(&rp->sb, f->name, f->name_len, 0);
		name = rp->sb.oom ? NONE : intern(&rp->sp, rp->sb.p ? rp->sb.p : "", rp->sb.len);
		break;
	default:
		name = rp->s_internal;
		break;
	}
	if (name == NONE)
		return -1;
	rp->frname[rp->nfr++] = name;
	return 0;
}

static int stack_def(struct report *rp, uint32_t id, const uint32_t *frames, uint32_t n,
		     unsigned flags)
{
	uint32_t key;

	if (id != rp->nstk + 1 ||
	    grow(&rp->stkey, &rp->stk_cap, (size_t)rp->nstk + 1, sizeof(*rp->stkey)))
		return -1;
	rp->sb.len = 0;
	if (flags & SK_TRUNCATED)
		sb_puts(&rp->sb, n ? "[truncated];" : "[truncated]");
	for (uint32_t i = n; i-- > 0;) {
		const uint32_t fn = frames[i];
		const char *p;
		uint32_t len;

		if (!fn || fn > rp->nfr)
			return -1;
		p = str_ptr(&rp->sp, rp->frname[fn - 1]);
		len = rp->sp.s[rp->frname[fn - 1]].len;
		for (uint32_t k = 0; k < len; k++)
			sb_put(&rp->sb, p[k] == ';' ? "," : &p[k], 1);
		if (i)
			sb_put(&rp->sb, ";", 1);
	}
	if (rp->sb.oom ||
	    (key = intern(&rp->sp, rp->sb.p ? rp->sb.p : "", rp->sb.len)) == NONE)
		return -1;
	rp->stkey[rp->nstk++] = key;
	return 0;
}

/* A stack or frame the report could not take leaves it incomplete, as out
 * of memory does: what it prints says so (report_print's -1). */
int report_frame(struct report *rp, uint32_t id, const struct sk_frame *f)
{
	if (frame_def(rp, id, f)) {
		rp->oom = 1;
		return -1;
	}
	return 0;
}

int report_stack(struct report *rp, uint32_t id, const uint32_t *frames, uint32_t n,
		 unsigned flags)
{
	if (stack_def(rp, id, frames, n, flags)) {
		rp->oom = 1;
		return -1;
	}
	return 0;
}
