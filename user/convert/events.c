/* Events and symbols of a VM as the stream has them: a prototype's
 * record to its symbol (its chunk name completed from the target) and
 * line table, a trace's to its symbol and snapshots, an event's place to
 * its line (convert/events.h: ev_where), a C function to the name Lua
 * code gives it. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/conv.h"
#include "streams/out.h"
#include "convert/cnames.h"
#include "convert/events.h"
#include "convert/callstacks.h"
#include "convert/jit.h"
#include "convert/fnames.h"
#include "convert/lines.h"
#include "convert/luanames.h"
#include "target/caps.h"
#include "target/proc.h"

static void keep_lines(struct conv_vm *v, const struct lmt_proto *p, size_t sz)
{
	struct pline *l;
	int err;

	free(u64map_del(&v->lines, p->addr));
	if (!p->li_width || p->li_len > LMT_LI_MAX ||
	    sz < offsetof(struct lmt_proto, lineinfo) + p->li_len)
		return;
	l = malloc(sizeof(*l) + p->li_len);
	if (!l)
		return;
	l->firstline = p->firstline;
	l->sizebc = p->sizebc;
	l->numline = p->numline;
	l->width = p->li_width;
	l->len = p->li_len;
	memcpy(l->li, p->lineinfo, p->li_len);
	u64map_put(&v->lines, p->addr, l, &err);
	if (err)
		free(l);
}

/* The prototype's chunk name into s: what BPF copied, completed from the
 * target if longer (load(string) without a name: the whole source; if
 * the string is gone, the prefix is what we have). If BPF could read none
 * of it (a page it could not touch), the name an earlier record gave the
 * prototype. *full: to free. */
static void proto_name(struct conv_vm *v, const struct lmt_proto *p, struct mp_sym *s, char **full)
{
	const uint32_t n = p->copied <= LMT_NAME_MAX ? p->copied : LMT_NAME_MAX;
	const char *known = u64map_get(&v->pnames, p->addr);
	char *c;
	int err = 0;

	s->name = p->name;
	s->name_len = n;
	if (!n && known) {
		s->name = known;
		s->name_len = strlen(known);
		return;
	}
	if (n && !memchr(p->name, 0, n) && (c = strndup(p->name, n))) {
		free(u64map_put(&v->pnames, p->addr, c, &err));
		if (err)
			free(c);
	}
	/* Cut to LMT_CHUNKNAME_MAX, ending in "..." (target/caps.h). */
	if (p->len > n && (*full = malloc(LMT_CHUNKNAME_MAX))) {
		const uint32_t len = p->len > LMT_CHUNKNAME_MAX ? LMT_CHUNKNAME_MAX - 3 : p->len;

		if (!proc_read((pid_t)p->tgid, p->str, *full, len) &&
		    !memcmp(*full, p->name, n)) {
			s->name = *full;
			s->name_len = len;
			if (len < p->len) {
				memcpy(*full + len, "...", 3);
				s->name_len = LMT_CHUNKNAME_MAX;
				v->p->names_long++;
			}
		} else {
			v->p->names_cut++;
		}
	} else if (p->len > n) {
		v->p->names_cut++;
	}
}

void ev_proto(struct conv_vm *v, const struct lmt_proto *p, size_t sz)
{
	struct mp_sym s = { .kind = MP_SYM_LFUNC, .addr = p->addr };
	char *full = NULL;

	proto_name(v, p, &s, &full);
	/* Built-ins in bytecode have firstline -1: sign-extend, as LuaJIT. */
	s.line = (uint64_t)(int64_t)p->firstline;
	out_at(v->out, v, p->seq);
	out_sym(v->out, &s);
	out_at(v->out, NULL, 0);
	keep_lines(v, p, sz);
	fnames_forget(v, p->addr); /* a prototype new at that address */
	free(full);
	v->p->protos++;
}

void ev_trace(struct conv_vm *v, const struct lmt_trace *r)
{
	struct mp_sym s = { .kind = MP_SYM_TRACE, .addr = r->traceno,
			    .proto = r->proto, .line = r->line };

	out_at(v->out, v, r->seq);
	out_sym(v->out, &s);
	if (!v->by_trace) /* its process runs on: a read could see it freed */
		traces_add(v, r);
	out_at(v->out, NULL, 0);
	v->p->traces++;
}

void ev_out(struct conv_vm *v, const struct lmt_ev *r)
{
	struct mp_event m;
	struct tloc at;

	/* It, and the symbols it needs first, in its number's turn. */
	out_at(v->out, v, r->seq);
	ev_event(&m, r);
	ev_where(v, &m, r->src, r->flags, &at);
	if (m.src == MP_SRC_CFUNC) {
		syms_cfunc(&v->p->syms, m.loc);
		cfunc_name(v, m.loc);
	}
	out_event(v->out, &m, r->stk ? stk_event(v, r, &m, at.chain == -2 ? NULL : &at) : 0);
}
