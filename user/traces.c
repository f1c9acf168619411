/* Traces: a machine code offset or an exit number to a Lua line, through
 * the trace's snapshots (see traces.h). LuaJIT's own lj_trace_unwind maps
 * an address to the rightmost snapshot whose mcofs is not above it; the
 * snapshot's PC (under FR2 the map word after its entries, PC << 8 | base
 * slot) is the bytecode the trace resumes at there. Its prototype is found
 * by the PC: the trace's starting prototype, or, for a function the trace
 * inlined, by walking back over the bytecode to its header instruction
 * (FUNCF and kin occur at a prototype's bc[0] and nowhere else). A trace
 * keeps the prototypes it runs alive, so what a trace resolved stays true
 * while the trace lives. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "traces.h"

#include "layout.h"
#include "lines.h"
#include "proc.h"

/* A snapshot: where it starts in machine code, the PC it resumes at, and
 * once resolved, its prototype and line. */
struct tsnap {
	uint32_t mcofs;
	uint32_t resolved; /* 0 not yet, 1 done, 2 failed */
	uint64_t pc;
	uint64_t pt;
	int64_t line;
};

struct ttrace {
	uint64_t T, startpt;
	uint32_t nsnap;
	struct u64set named; /* prototypes whose symbol it wrote */
	struct tsnap s[];
};

#define MAX_SNAPS 65536

static void ttrace_free(void *p)
{
	struct ttrace *tr = p;

	if (tr)
		u64set_free(&tr->named);
	free(tr);
}

void traces_add(struct tvm *v, const struct lmt_trace *r)
{
	const struct lj_ulayout *u = &v->var->u;
	const pid_t pid = v->p->pid;
	uint16_t nsnap = 0;
	uint64_t snap = 0, snapmap = 0;
	uint32_t nsnapmap = 0;
	struct ttrace *tr;
	uint8_t *sb = NULL;
	uint32_t *map = NULL;
	int err;

	ttrace_free(u64map_del(&v->traces, r->traceno | 1ULL << 32));
	if (proc_read(pid, r->T + u->T_nsnap, &nsnap, 2) ||
	    proc_read(pid, r->T + u->T_nsnapmap, &nsnapmap, 4) ||
	    proc_read(pid, r->T + u->T_snap, &snap, 8) ||
	    proc_read(pid, r->T + u->T_snapmap, &snapmap, 8) || !nsnap ||
	    nsnapmap > 16 * MAX_SNAPS)
		goto fail;
	tr = calloc(1, sizeof(*tr) + nsnap * sizeof(tr->s[0]));
	sb = malloc((size_t)nsnap * u->snap_size);
	map = malloc((size_t)nsnapmap * 4 + 8);
	if (!tr || !sb || !map ||
	    proc_read(pid, snap, sb, (size_t)nsnap * u->snap_size) ||
	    proc_read(pid, snapmap, map, (size_t)nsnapmap * 4)) {
		free(tr);
		goto fail;
	}
	tr->T = r->T;
	tr->startpt = r->proto;
	tr->nsnap = nsnap;
	for (uint32_t i = 0; i < nsnap; i++) {
		const uint8_t *e = sb + (size_t)i * u->snap_size;
		uint32_t mapofs;
		uint16_t mcofs;
		uint8_t nent;
		uint64_t pcbase;

		memcpy(&mapofs, e + u->snap_mapofs, 4);
		memcpy(&mcofs, e + u->snap_mcofs, 2);
		nent = e[u->snap_nent];
		tr->s[i].mcofs = mcofs;
		if ((uint64_t)mapofs + nent + 2 > nsnapmap) {
			tr->s[i].resolved = 2;
			continue;
		}
		memcpy(&pcbase, map + mapofs + nent, 8);
		tr->s[i].pc = pcbase >> 8; /* FR2: PC << 8 | base slot */
	}
	u64map_put(&v->traces, r->traceno | 1ULL << 32, tr, &err);
	if (err)
		ttrace_free(tr);
	free(sb);
	free(map);
	return;
fail:
	free(sb);
	free(map);
	v->p->traces_unread++;
}

/* The snapshot of machine code offset ofs: lj_trace_unwind's search. */
static uint32_t snap_of(const struct ttrace *tr, uint32_t ofs)
{
	uint32_t lo = 0, hi = tr->nsnap;

	while (lo < hi) {
		uint32_t mid = (lo + hi) >> 1;
		if (ofs < tr->s[mid].mcofs)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi ? hi - 1 : 0;
}

/* Reads prototype pt: its line table, and its symbol (name, first line). */
static struct pline *read_proto(struct tvm *v, uint64_t pt, struct mp_sym *s,
				char **name)
{
	const struct lj_layout *l = &v->var->lay;
	const pid_t pid = v->p->pid;
	uint8_t w[LMT_PTWIN];
	uint32_t sizebc, numline, len = 0, width, n;
	int32_t first;
	uint64_t str, li;
	struct pline *p;

	if (proc_read(pid, pt, w, sizeof(w)))
		return NULL;
	memcpy(&sizebc, w + l->pt_sizebc, 4);
	memcpy(&numline, w + l->pt_numline, 4);
	memcpy(&first, w + l->pt_firstline, 4);
	memcpy(&str, w + l->pt_chunkname, 8);
	memcpy(&li, w + l->pt_lineinfo, 8);
	width = numline < 256 ? 1 : numline < 65536 ? 2 : 4;
	n = sizebc > 1 ? (sizebc - 1) * width : 0;
	if (sizebc > (1u << 26))
		return NULL;
	p = malloc(sizeof(*p) + n);
	if (!p)
		return NULL;
	*p = (struct pline){ .firstline = first, .sizebc = sizebc,
			     .numline = numline, .width = (uint8_t)width };
	if (li && n && !proc_read(pid, li, p->li, n))
		p->len = n;
	*name = NULL;
	if (str && !proc_read(pid, str + l->str_len, &len, 4) && len < (1u << 20) &&
	    (*name = malloc(len + 1)) && proc_read(pid, str + l->str_size, *name, len)) {
		free(*name);
		*name = NULL;
	}
	*s = (struct mp_sym){ .kind = MP_SYM_LFUNC, .addr = pt,
			      .line = (uint64_t)(int64_t)first,
			      .name = *name ? *name : "", .name_len = *name ? len : 0 };
	return p;
}

/* The prototype whose bytecode holds pc: the trace's start, else found
 * by walking back to the header instruction. 0 if none. */
static uint64_t proto_of(struct tvm *v, const struct ttrace *tr, uint64_t pc)
{
	const struct lj_ulayout *u = &v->var->u;
	const uint64_t ptsz = v->var->lay.pt_size;
	const pid_t pid = v->p->pid;
	uint32_t w[64], sizebc;
	uint8_t gct;

	if (tr->startpt) {
		const struct pline *k = u64map_get(&v->lines, tr->startpt);
		if (k && pc >= tr->startpt + ptsz &&
		    pc < tr->startpt + ptsz + 4 * (uint64_t)k->sizebc)
			return tr->startpt;
	}
	for (uint64_t end = pc + 4, n = 0; n < (1u << 20); n += sizeof(w)) {
		uint64_t at = end - sizeof(w);
		if (proc_read(pid, at, w, sizeof(w)))
			return 0;
		for (int i = 63; i >= 0; i--) {
			const uint8_t op = (uint8_t)w[i];
			const uint64_t bc0 = at + 4 * (uint64_t)i, pt = bc0 - ptsz;

			if (op < u->bc_func_lo || op > u->bc_func_hi)
				continue;
			if (proc_read(pid, pt + u->pt_gct, &gct, 1) ||
			    proc_read(pid, pt + v->var->lay.pt_sizebc, &sizebc, 4) ||
			    gct != u->tproto || (pc - bc0) / 4 >= sizebc)
				return 0;
			return pt;
		}
		end = at;
	}
	return 0;
}

/* Resolves snapshot sn of trace tr: its prototype and line. */
static int resolve(struct tvm *v, struct ttrace *tr, struct tsnap *sn)
{
	const uint64_t ptsz = v->var->lay.pt_size;
	struct pline *p;
	struct mp_sym s;
	char *name = NULL;
	int64_t line;

	if (sn->resolved)
		return sn->resolved == 1 ? 0 : -1;
	sn->resolved = 2;
	if (!sn->pc || !(sn->pt = proto_of(v, tr, sn->pc)))
		return -1;
	p = read_proto(v, sn->pt, &s, &name);
	if (!p)
		return -1;
	/* The instruction at pc: the one the trace resumes at. */
	line = pline_line(p, (sn->pc - sn->pt - ptsz) / 4);
	if (line >= 0 && u64set_add(&tr->named, sn->pt) == 1)
		out_sym(v->out, &s);
	free(p);
	free(name);
	if (line < 0)
		return -1;
	sn->line = line;
	sn->resolved = 1;
	return 0;
}

int traces_line(struct tvm *v, struct mp_event *m, uint8_t flags)
{
	struct ttrace *tr = u64map_get(&v->traces, m->loc | 1ULL << 32);
	struct tsnap *sn;
	uint32_t i;

	if (!tr)
		return -1;
	i = flags & LMT_EV_EXIT ? (uint32_t)m->line : snap_of(tr, (uint32_t)m->line);
	if (i >= tr->nsnap)
		return -1;
	sn = &tr->s[i];
	if (resolve(v, tr, sn))
		return -1;
	m->src = MP_SRC_LFUNC;
	m->loc = sn->pt;
	m->line = (uint64_t)sn->line;
	return 0;
}

void traces_free(struct tvm *v)
{
	u64map_free(&v->traces, ttrace_free);
}
