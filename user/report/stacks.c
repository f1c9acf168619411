/* Stacks from a stream's companion (stacks.h): each frame named when it
 * is defined, as the report names an event's location at that point of
 * the stream (LFUNC "@chunk:line", C functions, traces, INTERNAL), a
 * builtin by its name (escaped); each stack as one folded name, root
 * first, frames joined by ';' (';' in a name becomes ','), a truncated one
 * under a "[truncated]" root. Events are keyed by that name (ev_key), so
 * --folded and HEAP SUMMARY BY STACK merge stacks that read the same. */
#include <string.h>

#include "util/esc.h"
#include "format/caps.h"
#include "aggregate.h"

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
		if (name != NONE && f->name_len) {
			/* "@chunk:line function 'render'" */
			const uint32_t base = name;

			rp->sb.len = 0;
			sb_put(&rp->sb, str_ptr(&rp->sp, base), rp->sp.s[base].len);
			sb_puts(&rp->sb, " ");
			sb_escaped(&rp->sb, f->name, f->name_len, 0);
			name = rp->sb.oom ? NONE : intern(&rp->sp, rp->sb.p ? rp->sb.p : "",
							  rp->sb.len);
		}
		if (name != NONE &&
		    pframe_add(rp, name, f->addr, f->line, f->name, f->name_len))
			return -1;
		break;
	case MP_SRC_CFUNC:
		name = cframe_name(rp, f->addr);
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

/* Bytes of name p[0..len) that a key of room bytes keeps: all, or cut
 * before a UTF-8 continuation byte. */
static uint32_t name_fit(const char *p, uint32_t len, size_t room)
{
	if (len <= room)
		return len;
	while (room && ((unsigned char)p[room] & 0xc0) == 0x80)
		room--;
	return (uint32_t)room;
}

/* Stack id's folded name, root first. At most REPORT_KEY_MAX_FRAMES
 * frames and REPORT_KEY_MAX_BYTES bytes (format/caps.h): the innermost
 * frames that fit are kept, the key then starts with "[cut]" and the
 * stack is counted (stk_cut). -1 out of memory or a bad number, -2 the
 * stream's keys over REPORT_KEYS_MAX_BYTES. */
static int stack_def(struct report *rp, uint32_t id, const uint32_t *frames, uint32_t n,
		     unsigned flags)
{
	static const char cut_root[] = "[cut];";
	size_t room = REPORT_KEY_MAX_BYTES - (sizeof(cut_root) - 1), used = 0;
	uint32_t key, keep = 0, last = 0, before;

	if (id != rp->nstk + 1 ||
	    grow(&rp->stkey, &rp->stk_cap, (size_t)rp->nstk + 1, sizeof(*rp->stkey)))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (!frames[i] || frames[i] > rp->nfr)
			return -1;
	/* What fits, from the innermost frame out; last: bytes of the
	 * outermost kept one (all of it unless it alone is over). */
	for (; keep < n && keep < REPORT_KEY_MAX_FRAMES && used < room; keep++) {
		const uint32_t nm = rp->frname[frames[keep] - 1];
		const uint32_t fit = name_fit(str_ptr(&rp->sp, nm), rp->sp.s[nm].len,
					      room - used);

		if (fit < rp->sp.s[nm].len && keep)
			break; /* an outer frame does not fit whole: it goes */
		last = fit;
		used += fit + 1;
	}
	rp->sb.len = 0;
	if (keep < n || (keep && last < rp->sp.s[rp->frname[frames[keep - 1] - 1]].len)) {
		sb_puts(&rp->sb, keep ? cut_root : "[cut]");
		rp->stk_cut++;
	} else if (flags & SK_TRUNCATED) {
		sb_puts(&rp->sb, n ? "[truncated];" : "[truncated]");
	}
	for (uint32_t i = keep; i-- > 0;) {
		const uint32_t nm = rp->frname[frames[i] - 1];
		const char *p = str_ptr(&rp->sp, nm);
		const uint32_t len = i == keep - 1 ? last : rp->sp.s[nm].len;

		for (uint32_t k = 0; k < len; k++)
			sb_put(&rp->sb, p[k] == ';' ? "," : &p[k], 1);
		if (i)
			sb_put(&rp->sb, ";", 1);
	}
	if (rp->sb.oom)
		return -1;
	before = rp->sp.n;
	if ((key = intern(&rp->sp, rp->sb.p ? rp->sb.p : "", rp->sb.len)) == NONE)
		return -1;
	if (rp->sp.n > before && (rp->stk_bytes += rp->sb.len) > REPORT_KEYS_MAX_BYTES)
		return -2;
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
	const int rc = stack_def(rp, id, frames, n, flags);

	if (rc)
		rp->oom = 1;
	return rc;
}

uint64_t report_stacks_cut(const struct report *rp)
{
	return rp->stk_cut;
}
