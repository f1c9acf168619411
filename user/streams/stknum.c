/* A stream's stacks, numbered once per stream (streams/stknum.h). */
#include <stdlib.h>
#include <string.h>

#include "luamemtrace.h"
#include "streams/stknum.h"
#include "util/hash.h"

/* A held stack: its frames, by content. */
struct hstack {
	uint32_t n;
	uint8_t flags;
	struct cframe f[];
};

/* -- A stream's numbering ------------------------------------------------ */


/* A frame by what names it: kind, address, line, a builtin's name or a
 * Lua function's (the name its caller gives it). */
static uint64_t frame_hash(const struct cframe *f)
{
	uint64_t h = hash_mix(hash_mix(hash_mix(0x6672616d65ULL, f->src), f->addr), f->line);

	if (f->src == SK_NAMED || f->src == MP_SRC_LFUNC)
		for (const char *c = f->name; *c; c++)
			h = hash_mix(h, (unsigned char)*c);
	return h;
}

static uint32_t frame_id(struct stknum *o, const struct cframe *f)
{
	const uint64_t h = frame_hash(f) | 1; /* u64map: no key 0 */
	struct sk_frame sf = { .src = f->src, .addr = f->addr, .line = f->line };
	uint32_t id;
	int err;

	if (f->src == SK_NAMED || (f->src == MP_SRC_LFUNC && f->name[0])) {
		sf.name = f->name;
		sf.name_len = strlen(f->name);
	}
	if ((id = (uint32_t)(uintptr_t)u64map_get(&o->frames, h)))
		return id;
	id = o->sk ? skw_frame(o->sk, &sf) : ++o->nf;
	u64map_put(&o->frames, h, (void *)(uintptr_t)id, &err);
	/* the live report (summary, top); a failure marks it incomplete */
	report_frame(o->rep, id, &sf);
	return id;
}

static uint32_t stack_id(struct stknum *o, const struct cframe *fr, uint32_t n,
			 unsigned flags)
{
	uint32_t ids[LMT_STK_MAX], id;
	uint64_t h = hash_mix(0x737461636bULL, flags);
	int err;

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = frame_id(o, &fr[i]);
		h = hash_mix(h, ids[i]);
	}
	h = hash_mix(h, n) | 1;
	if ((id = (uint32_t)(uintptr_t)u64map_get(&o->stacks, h)))
		return id;
	id = o->sk ? skw_stack(o->sk, ids, n, flags) : ++o->ns;
	u64map_put(&o->stacks, h, (void *)(uintptr_t)id, &err);
	report_stack(o->rep, id, ids, n, flags);
	return id;
}

/* -- Held stacks (a stream of several VMs) -------------------------------- */

/* While a stream's records wait for their turn (streams/merge.h), an event's stack
 * is kept by content, not numbered: its frames are numbered, written and
 * named (by the live report, and by report from the companion) as the
 * event is written, in step with the stream's symbols. The number of a
 * held stack has STK_HELD set; stknum_number gives the real one. */
#define STK_HELD 0x80000000u

static uint32_t stack_held(struct stknum *o, const struct cframe *fr, uint32_t n,
			   unsigned flags)
{
	uint64_t h = hash_mix(0x68656c64ULL, flags);
	struct hstack *d, **nv;
	uint32_t id;
	int err;

	for (uint32_t i = 0; i < n; i++)
		h = hash_mix(h, frame_hash(&fr[i]));
	h = hash_mix(h, n) | 1;
	if ((id = (uint32_t)(uintptr_t)u64map_get(&o->held, h)))
		return id | STK_HELD;
	if (o->nheld >= STK_HELD - 1 || !(d = malloc(sizeof(*d) + n * sizeof(d->f[0]))))
		return 0;
	if (o->nheld == o->held_cap) {
		const uint32_t cap = o->held_cap ? 2 * o->held_cap : 64;
		if (!(nv = realloc(o->held_v, cap * sizeof(*nv)))) {
			free(d);
			return 0;
		}
		o->held_v = (void **)nv;
		o->held_cap = cap;
	}
	d->n = n;
	d->flags = (uint8_t)flags;
	memcpy(d->f, fr, n * sizeof(d->f[0]));
	id = o->nheld + 1;
	u64map_put(&o->held, h, (void *)(uintptr_t)id, &err);
	if (err) {
		free(d);
		return 0;
	}
	o->held_v[o->nheld++] = d;
	return id | STK_HELD;
}

uint32_t stknum_number(struct stknum *o, uint32_t sid)
{
	const struct hstack *d;

	if (!(sid & STK_HELD))
		return sid;
	sid &= ~STK_HELD;
	if (!sid || sid > o->nheld)
		return 0;
	d = o->held_v[sid - 1];
	return stack_id(o, d->f, d->n, d->flags);
}

void stknum_free_held(struct stknum *o)
{
	for (uint32_t i = 0; i < o->nheld; i++)
		free(o->held_v[i]);
	free(o->held_v);
	o->held_v = NULL;
	o->nheld = o->held_cap = 0;
	u64map_free(&o->held, NULL);
}

uint32_t stknum_stack(struct stknum *o, int hold, const struct cframe *fr, uint32_t n,
		      unsigned flags)
{
	return hold ? stack_held(o, fr, n, flags) : stack_id(o, fr, n, flags);
}

void stknum_free(struct stknum *o)
{
	stknum_free_held(o);
	u64map_free(&o->frames, NULL);
	u64map_free(&o->stacks, NULL);
}
