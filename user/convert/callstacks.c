/* Call stacks (--stacks): BPF's stack records resolved to frames, an
 * event's stack composed (inside a trace: the frames its snapshot holds,
 * then BPF's below the trace's base frame), cut to the depth asked, and
 * written to its stream's companion (format/stacks.h), frames and stacks
 * numbered once per stream. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/conv.h"
#include "streams/out.h"
#include "convert/cnames.h"

#include "convert/callstacks.h"
#include "streams/stknum.h"
#include "util/hash.h"
#include "convert/lines.h"
#include "convert/luanames.h"
#include "target/proc.h"
#include "report/report.h"
#include "format/stacks.h"
#include "convert/jit.h"
#include "convert/fnames.h"

/* BPF's stack record, resolved once; inside a trace, the PC of the
 * trace's base frame's caller (its name, fnames.h), if a Lua frame. */
struct cdef {
	uint32_t n;
	uint8_t truncated, intrace;
	uint64_t cpt, cpc;
	struct cframe f[];
};

static void named(struct cframe *f, const char *name)
{
	f->src = SK_NAMED;
	snprintf(f->name, sizeof(f->name), "%s", name);
}

/* A Lua frame's function name (fnames.h), if it has one. */
static void lua_named(struct cframe *f, const char *name)
{
	if (name)
		snprintf(f->name, sizeof(f->name), "%s", name);
}

/* A builtin (fast function) ffid: the name Lua code gives it, else the
 * build's own (jit/vmdef.lua: string.gmatch_aux), unless the names Lua
 * code gives contradict the build's (target/vmdef.h), else builtin#N. */
static void builtin(struct conv_vm *v, struct cframe *f, unsigned ffid)
{
	const char *n = lua_name(v, LUANAMES_FF(ffid));
	char buf[32];

	if (!n && v->var && v->var->vmdef) {
		if (v->ff_checked != v->cnames.n) {
			v->ff_checked = v->cnames.n;
			v->ff_bad = luanames_ffbad(&v->cnames, v->var->vmdef);
		}
		if (!v->ff_bad)
			n = vmdef_ffname(v->var->vmdef, ffid);
	}
	if (!n) {
		snprintf(buf, sizeof(buf), "builtin#%u", ffid);
		n = buf;
	}
	named(f, n);
}

static void cfunc(struct conv_vm *v, struct cframe *f, uint64_t addr)
{
	*f = (struct cframe){ .src = MP_SRC_CFUNC, .addr = addr };
	syms_cfunc(&v->p->syms, addr);
	cfunc_name(v, addr);
}

/* A frame BPF sent (struct lmt_sframe). */
static void resolve(struct conv_vm *v, const struct lmt_sframe *s, struct cframe *f)
{
	const uint64_t val = LMT_FR_VAL(s->b);

	memset(f, 0, sizeof(*f));
	switch (LMT_FR_KIND(s->b)) {
	case LMT_FR_LUA: {
		const struct pline *l = u64map_get(&v->lines, val);
		const uint64_t bc = val + v->var->lay.pt_size;
		int64_t line = -1;

		if (l && s->a >= bc + 4 && !((s->a - bc) & 3))
			line = pline_line(l, (s->a - bc) / 4 - 1);
		if (!l)
			v->p->nolines++;
		*f = (struct cframe){ .src = MP_SRC_LFUNC, .addr = val,
				      .line = line < 0 ? 0 : (uint64_t)line };
		break;
	}
	case LMT_FR_LINE:
		*f = (struct cframe){ .src = MP_SRC_LFUNC, .addr = val, .line = s->a };
		break;
	case LMT_FR_C:
		cfunc(v, f, s->a);
		break;
	case LMT_FR_FF:
		builtin(v, f, (unsigned)(val & 0xff));
		break;
	default:
		named(f, "?");
		break;
	}
}

static void cdef_free(void *p)
{
	free(p);
}

void stk_def_rec(struct conv_vm *v, const struct lmt_stack *r, size_t sz)
{
	struct cdef *d;
	int err;

	if (!v->var || sz < offsetof(struct lmt_stack, f) || r->n > LMT_STK_MAX ||
	    sz < offsetof(struct lmt_stack, f) + (size_t)r->n * sizeof(r->f[0]) ||
	    u64map_get(&v->stacks, r->id))
		return;
	d = malloc(sizeof(*d) + (size_t)r->n * sizeof(d->f[0]));
	if (!d)
		return;
	d->n = r->n;
	d->truncated = r->truncated;
	d->intrace = (uint8_t)r->intrace;
	for (uint32_t i = 0; i < r->n; i++)
		resolve(v, &r->f[i], &d->f[i]);
	/* A Lua frame's name: its caller's, a Lua frame at a PC below it. */
	for (uint32_t i = 0; i + 1 < r->n; i++)
		if (d->f[i].src == MP_SRC_LFUNC && LMT_FR_KIND(r->f[i + 1].b) == LMT_FR_LUA) {
			const uint64_t pt = LMT_FR_VAL(r->f[i + 1].b);
			const char *n = fname_at(v, pt, r->f[i + 1].a);

			lua_named(&d->f[i], n);
			/* for the frames a trace inlines, known by line */
			fname_learn(v, pt, d->f[i + 1].line, d->f[i].addr, n);
		}
	d->cpt = d->cpc = 0;
	if (r->n && LMT_FR_KIND(r->f[0].b) == LMT_FR_LUA) {
		d->cpt = LMT_FR_VAL(r->f[0].b);
		d->cpc = r->f[0].a;
	}
	u64map_put(&v->stacks, r->id, d, &err);
	if (err)
		free(d);
}


/* -- Events -------------------------------------------------------------- */

uint32_t stk_event(struct conv_vm *v, const struct lmt_ev *r, const struct mp_event *m,
		  const struct tloc *at)
{
	struct tout *o = v->out;
	const unsigned depth = v->depth;
	static struct cframe fr[LMT_STK_MAX];
	struct sk_frame tf[LMT_STK_MAX];
	const struct cdef *d;
	unsigned n = 0, flags = 0;

	if (!o || !o->stk || !r->stk)
		return 0;
	if (!(d = u64map_get(&v->stacks, r->stk))) {
		v->p->stk_unknown++;
		return 0;
	}
	if (d->intrace) {
		/* The trace's frames: the event's, the inlined calls to it,
		 * its base frame. Where they cannot all be told, the event's
		 * own place and a '?' for what is missing above BPF's. */
		int whole = 0;
		unsigned k = at && depth > 1 ? traces_frames(v, at, m, tf, depth - 1, &whole) : 0;

		if (!k)
			fr[n++] = (struct cframe){ .src = m->src,
						   .addr = m->src == MP_SRC_INTERNAL ? 0 : m->loc,
						   .line = m->src == MP_SRC_LFUNC ? m->line : 0 };
		for (unsigned i = 0; i < k; i++) {
			if (tf[i].src == 0)
				builtin(v, &fr[n], (unsigned)tf[i].addr);
			else if (tf[i].src == MP_SRC_CFUNC)
				cfunc(v, &fr[n], tf[i].addr);
			else
				fr[n] = (struct cframe){ .src = tf[i].src, .addr = tf[i].addr,
							 .line = tf[i].line };
			/* its name: a frame the trace inlined by its caller's
			 * line and itself (the snapshot keeps no PC here), the
			 * base frame by BPF's caller below */
			if (fr[n].src == MP_SRC_LFUNC) {
				if (i + 1 < k && tf[i + 1].src == MP_SRC_LFUNC)
					lua_named(&fr[n], fname_at_line(v, tf[i + 1].addr,
									tf[i + 1].line, tf[i].addr));
				else if (i + 1 == k && whole && d->cpt)
					lua_named(&fr[n], fname_at(v, d->cpt, d->cpc));
			}
			n++;
		}
		if (!whole && n < depth)
			named(&fr[n++], "?");
	}
	{
		const unsigned k = n;

		for (uint32_t i = 0; i < d->n && n < depth; i++)
			fr[n++] = d->f[i];
		if (d->truncated || k + d->n > depth)
			flags |= SK_TRUNCATED;
	}
	return out_stack(o, fr, n, flags);
}

void stk_forget_vm(struct conv_vm *v)
{
	u64map_free(&v->stacks, cdef_free);
	fnames_free(v);
}
