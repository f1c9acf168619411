/* Traces: a machine code offset or an exit number to a Lua line, through
 * the trace's snapshots (see convert/jit.h).
 *
 * LuaJIT's own lj_trace_unwind maps an address to the rightmost snapshot
 * whose mcofs is not above it; the snapshot's PC (after its entries in
 * the map: under FR2 a word PC << 8 | base slot, else a 32-bit PC) is the
 * bytecode the trace resumes at there. Its prototype is found by the PC: the trace's starting
 * prototype, or by walking back over the bytecode to its header
 * instruction (FUNCF and kin occur at a prototype's bc[0] and nowhere
 * else). A trace keeps the prototypes it runs alive, so what a trace
 * resolved stays true while the trace lives.
 *
 * This file holds the entry points (convert/jit.h) and calls the rest
 * (convert/jit_int.h): a stretch's walk, with how its lines are charged
 * and sunk allocations are told, is jit_walk.c's. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/jit.h"
#include "convert/jit_int.h"
#include "target/proc.h"

/* -- traces_line's memo ------------------------------------------------------ */

/* traces_line's answers, by trace, offset (or exit's snapshot), kind and
 * exit: a hot trace's few sites come again and again, and each answer
 * from the snapshots costs a map lookup, a binary search and a miss in a
 * snapshot of ~400 bytes. An answer stands while the VM's traces stand:
 * a trace added or replaced, or a site first seen in a snapshot (which
 * can renumber its others, site_line), changes v->tlgen. */
#define TL_BITS 9

struct tlmemo {
	uint64_t key; /* 0: empty */
	uint64_t loc, line;
	uint32_t ofs, gen, snap;
	int32_t chain;
	uint8_t src, by_call;
};

static void tl_changed(struct conv_vm *v)
{
	if (!++v->tlgen && v->tlm) /* wrapped: an old answer could match */
		memset(v->tlm, 0, sizeof(*v->tlm) << TL_BITS);
}

static struct tlmemo *tl_slot(struct conv_vm *v, uint64_t key, uint32_t ofs)
{
	if (!v->tlm && !(v->tlm = calloc(1u << TL_BITS, sizeof(*v->tlm))))
		return NULL;
	return &v->tlm[((key ^ (uint64_t)ofs << 40) * LMT_HASH_K) >> (64 - TL_BITS)];
}

/* Trace tr of VM v gone: its bytes off its process's budget. */
static void trace_drop(struct conv_vm *v, struct ttrace *tr)
{
	if (tr)
		v->p->tr_bytes -= tr->bytes < v->p->tr_bytes ? tr->bytes : v->p->tr_bytes;
	jit_trace_free(tr);
}

/* Trace tr's snapshots from their copies: sb (tr->nsnap of the layout's
 * SnapShot), map (its snapshot map, nsnapmap entries); a snapshot whose
 * entries lie past the map is left unresolved (tr->over). */
static void snaps_read(struct conv_vm *v, struct ttrace *tr, const uint8_t *sb,
		       const uint32_t *map, uint32_t nsnapmap)
{
	const struct lj_ulayout *u = &v->var->u;

	for (uint32_t i = 0; i < tr->nsnap; i++) {
		const uint8_t *e = sb + (size_t)i * u->snap_size;
		uint32_t mapofs;
		uint16_t mcofs, ref;
		uint8_t nent;
		uint32_t rawbase;

		memcpy(&mapofs, e + u->snap_mapofs, 4);
		memcpy(&mcofs, e + u->snap_mcofs, 2);
		memcpy(&ref, e + u->snap_ref, 2);
		nent = e[u->snap_nent];
		tr->s[i].mcofs = u->snap_nomcofs ? 0 : mcofs;
		tr->s[i].ref = ref;
		if ((uint64_t)mapofs + nent > nsnapmap ||
		    jit_snap_read(v, tr, &tr->s[i], map + mapofs, nent,
				  map + mapofs + nent, nsnapmap - mapofs - nent,
				  &rawbase)) {
			tr->s[i].resolved = tr->s[i].xresolved = 2;
			tr->over = 1;
			continue;
		}
		/* tr->protos is filled on the way: tr is not shared yet. */
		jit_sunk_origins(v, tr, i, map + mapofs, nent, rawbase);
	}
}

/* Frees one trace of process p other than keep (its VMs' traces in
 * table order): 0, or -1 if there is none. */
static int evict_one(struct conv_proc *p, const struct ttrace *keep)
{
	for (struct conv_vm *v = p->vms; v; v = v->next) {
		for (size_t j = 0; j < v->traces.cap; j++) {
			struct ttrace *tr = v->traces.v[j];

			if (!tr || tr == keep)
				continue;
			u64map_del(&v->traces, v->traces.k[j]);
			tl_changed(v);
			trace_drop(v, tr);
			return 0;
		}
	}
	return -1;
}

void traces_add(struct conv_vm *v, const struct lmt_trace *r)
{
	const struct lj_ulayout *u = &v->var->u;
	const pid_t pid = v->p->pid;
	uint16_t nsnap = 0;
	uint64_t snap = 0, snapmap = 0;
	uint32_t nsnapmap = 0;
	struct ttrace *tr = NULL;
	uint8_t *sb = NULL;
	uint32_t *map = NULL;
	size_t size;
	int err;

	tl_changed(v); /* the answers of a trace replaced are wrong */
	if (r->traceno - 1 >= LMT_TRACENO_MAX) {
		v->p->tr_cut++;
		return;
	}
	trace_drop(v, u64map_del(&v->traces, r->traceno | 1ULL << 32));
	/* Over its process's budget: not read at all. */
	if (v->p->tr_reads >= LMT_PROC_READS_MAX) {
		v->p->tr_budget++;
		return;
	}
	/* Its header: a count over a cap is a trace no LuaJIT makes. */
	v->p->tr_reads += 6;
	if (proc_read(pid, r->T + u->T_nsnap, &nsnap, 2) ||
	    proc_read(pid, r->T + u->T_nsnapmap, &nsnapmap, 4) ||
	    proc_read(pid, r->T + u->T_snap, &snap, 8) ||
	    proc_read(pid, r->T + u->T_snapmap, &snapmap, 8) || !nsnap)
		return;
	if (nsnap > LMT_TRACE_SNAPS_MAX || nsnapmap > LMT_TRACE_SNAPMAP_MAX) {
		v->p->tr_cut++;
		return;
	}
	size = sizeof(*tr) + nsnap * sizeof(tr->s[0]);
	tr = calloc(1, size);
	sb = malloc((size_t)nsnap * u->snap_size);
	map = malloc((size_t)nsnapmap * 4 + 8);
	if (!tr || !sb || !map ||
	    proc_read(pid, snap, sb, (size_t)nsnap * u->snap_size) ||
	    proc_read(pid, snapmap, map, (size_t)nsnapmap * 4))
		goto fail;
	tr->T = r->T;
	tr->startpt = r->proto;
	tr->nsnap = nsnap;
	tr->bytes = size + nsnap * sizeof(*tr->xsunk);
	tr->xsunk = calloc(nsnap, sizeof(*tr->xsunk));
	if (!tr->xsunk)
		goto fail;
	jit_read_ir(v, tr, r->T);
	if (!u->snap_nomcofs) /* else no stretch is told by its offsets */
		jit_read_mcode(v, tr, r->mcode, r->szmcode);
	snaps_read(v, tr, sb, map, nsnapmap);
	free(sb);
	free(map);
	/* Every stretch now, while BPF holds the process (lmt_trace.stopped):
	 * a short program may be gone when its events are read. */
	jit_stretch_ends(v, tr);
	for (uint32_t i = 0; i < tr->nsnap; i++) {
		jit_resolve(v, tr, i);
		jit_resolve_exit(v, tr, i);
		jit_snap_frames(v, tr, &tr->s[i]);
	}
	u64map_put(&v->traces, r->traceno | 1ULL << 32, tr, &err);
	if (err) {
		jit_trace_free(tr);
		return;
	}
	v->p->tr_cut += tr->over && !tr->budget;
	/* The process's budget: its other traces go, oldest table slot first. */
	v->p->tr_bytes += tr->bytes;
	while (v->p->tr_bytes > LMT_PROC_TRACE_BYTES_MAX && !evict_one(v->p, tr))
		v->p->tr_evicted++;
	return;
fail:
	jit_trace_free(tr);
	free(sb);
	free(map);
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

/* -- A stretch's sites by its calls ----------------------------------------- */

/* The first call of trace tr (by offset) returning at ofs or after:
 * its index, tr->ncalls if none. */
static uint32_t calls_from(struct ttrace *tr, uint32_t ofs)
{
	uint32_t lo = 0, hi;

	jit_calls(tr);
	hi = tr->ncalls;
	while (lo < hi) {
		uint32_t mid = (lo + hi) >> 1;

		if (tr->calls[mid].ret < ofs)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The call of trace tr that returns at offset ofs, or NULL. */
static const struct tcall *call_at(struct ttrace *tr, uint32_t ofs)
{
	const uint32_t k = calls_from(tr, ofs);

	return k < tr->ncalls && tr->calls[k].ret == ofs ? &tr->calls[k] : NULL;
}

/* A new block made below compiled code's call at ofs: what it calls
 * allocates (lj_tab_dup, lj_buf_tostr, lj_tab_newkey...). One first seen
 * so changes the answers given: a stretch has one more allocating call. */
static void learn(struct conv_vm *v, struct ttrace *tr, uint32_t ofs)
{
	const struct tcall *c = call_at(tr, ofs);

	if (c && c->to && v->alloc_to.n < LMT_ALLOC_CALLEES_MAX &&
	    u64set_add(&v->alloc_to, c->to) == 1)
		tl_changed(v);
}

/* The site of snapshot i's call at ofs, told by its stretch's calls to
 * what allocates (seen so anywhere in the VM's compiled code), in the
 * machine code's order, which is the IR's and so the bytecode's: when
 * they are as many as its allocating bytecodes, the k-th call is the k-th
 * bytecode's, whether the calls before it allocated this time or not (a
 * CAT whose string is interned, a store that did not grow its table).
 * -1: not told so (the rank among the sites seen tells it, site_line). */
static int call_site(const struct conv_vm *v, struct ttrace *tr, uint32_t i,
		     uint32_t ofs)
{
	const struct tsnap *sn = &tr->s[i];
	const uint32_t lo = sn->mcofs, hi = i + 1 < tr->nsnap ? tr->s[i + 1].mcofs : tr->szmcode;
	uint32_t n = 0;
	int k = -1;

	if (sn->nb < 2)
		return -1;
	for (uint32_t j = calls_from(tr, lo); j < tr->ncalls && tr->calls[j].ret < hi; j++) {
		const struct tcall *c = &tr->calls[j];

		if (!c->to || !u64set_has(&v->alloc_to, c->to))
			continue;
		if (c->ret == ofs)
			k = (int)n;
		n++;
	}
	return n == sn->nb ? k : -1;
}

/* Snapshot sn's k-th site charged with event m. */
static int site_k(struct tsnap *sn, uint32_t k, struct mp_event *m, struct tloc *at)
{
	m->src = MP_SRC_LFUNC;
	m->loc = sn->b_pt[k];
	m->line = (uint64_t)sn->b_line[k];
	at->chain = (int)k;
	return 0;
}

/* -- Events ---------------------------------------------------------------- */

/* A new block from call site ofs of a stretch with several allocating
 * bytecodes: the bytecode of its rank among the sites seen. */
static int site_line(struct tsnap *sn, uint32_t ofs, struct mp_event *m,
		     struct tloc *at)
{
	uint32_t k = 0;

	while (k < sn->nsite && sn->site[k] < ofs)
		k++;
	if (k == sn->nsite || sn->site[k] != ofs) {
		if (sn->nsite == sn->nb)
			return -1; /* more sites than bytecodes */
		memmove(&sn->site[k + 1], &sn->site[k],
			(sn->nsite - k) * sizeof(sn->site[0]));
		sn->site[k] = ofs;
		sn->nsite++;
	}
	return site_k(sn, k, m, at);
}

static int origin_line(const struct origin *o, struct mp_event *m)
{
	m->src = MP_SRC_LFUNC;
	m->loc = o->pt;
	m->line = (uint64_t)o->line;
	return 0;
}

static int line_of(struct conv_vm *v, struct mp_event *m, uint8_t flags, struct tloc *at)
{
	struct ttrace *tr = u64map_get(&v->traces, m->loc | 1ULL << 32);
	struct tsnap *sn;
	uint32_t i;
	int k;

	if (!tr)
		return -1;
	*at = (struct tloc){ .trace = (uint32_t)m->loc, .chain = -1 };
	if (flags & LMT_EV_EXIT) {
		i = (uint32_t)m->line;
		if (i >= tr->nsnap)
			return -1;
		at->snap = i;
		if (tr->xsunk[i].state == 1)
			return origin_line(&tr->xsunk[i], m);
		if (jit_resolve_exit(v, tr, i))
			return -1;
		m->src = MP_SRC_LFUNC;
		m->loc = tr->s[i].xpt;
		m->line = (uint64_t)tr->s[i].xline;
		return 0;
	}
	/* Without mcofs, only a trace of one snapshot tells its stretch. */
	if (v->var->u.snap_nomcofs && tr->nsnap > 1) {
		v->p->tr_nomcofs++;
		return -1;
	}
	i = snap_of(tr, (uint32_t)m->line);
	at->snap = i;
	if (m->kind == MP_ALLOC)
		learn(v, tr, (uint32_t)m->line);
	if (i < tr->nsnap && (m->kind == MP_ALLOC || m->kind == MP_REALLOC) &&
	    !jit_resolve(v, tr, i) && (k = call_site(v, tr, i, (uint32_t)m->line)) >= 0) {
		at->by_call = 1;
		return site_k(&tr->s[i], (uint32_t)k, m, at);
	}
	if (i < tr->nsnap && m->kind == MP_ALLOC && !jit_resolve(v, tr, i) &&
	    tr->s[i].nb) {
		const uint32_t nsite = tr->s[i].nsite;

		if (!site_line(&tr->s[i], (uint32_t)m->line, m, at)) {
			if (tr->s[i].nsite != nsite)
				tl_changed(v); /* the snapshot's sites renumbered */
			return 0;
		}
	}
	/* A reallocation where the stretch's one store grows its table */
	if (i < tr->nsnap && m->kind == MP_REALLOC && !jit_resolve(v, tr, i) &&
	    tr->s[i].rsite && tr->s[i].nb)
		return site_k(&tr->s[i], tr->s[i].rsite - 1, m, at);
	/* A side trace's first stretch: replayed objects come first, and
	 * when its own bytecode allocates nothing, what it makes anew are
	 * they (a table it stores to grows by reallocation). */
	if (i == 0 && tr->replay.state == 1 && m->kind == MP_ALLOC &&
	    !jit_resolve(v, tr, 0) && !tr->s[0].nalloc)
		return origin_line(&tr->replay, m);
	if (i >= tr->nsnap || jit_resolve(v, tr, i))
		return -1;
	sn = &tr->s[i];
	m->src = MP_SRC_LFUNC;
	m->loc = sn->pt;
	m->line = (uint64_t)sn->line;
	at->chain = MAX_SITES;
	return 0;
}

int traces_line(struct conv_vm *v, struct mp_event *m, uint8_t flags, struct tloc *at)
{
	const uint64_t key = (uint32_t)m->loc | (uint64_t)(m->kind & 3) << 32 |
			     (uint64_t)!!(flags & LMT_EV_EXIT) << 34 | 1ULL << 35;
	const uint32_t ofs = (uint32_t)m->line;
	struct tlmemo *e = tl_slot(v, key, ofs);
	struct tloc here;

	if (e && e->key == key && e->ofs == ofs && e->gen == v->tlgen) {
		m->src = e->src;
		m->loc = e->loc;
		m->line = e->line;
		if (at)
			*at = (struct tloc){ .trace = (uint32_t)key, .snap = e->snap,
					     .chain = e->chain, .by_call = e->by_call };
		return 0;
	}
	if (!at)
		at = &here;
	if (line_of(v, m, flags, at))
		return -1;
	if (e)
		*e = (struct tlmemo){ .key = key, .loc = m->loc, .line = m->line,
				      .ofs = ofs, .gen = v->tlgen, .snap = at->snap,
				      .chain = at->chain, .src = m->src,
				      .by_call = (uint8_t)at->by_call };
	return 0;
}

/* -- Stacks ------------------------------------------------------------ */

unsigned traces_frames(struct conv_vm *v, const struct tloc *at, const struct mp_event *m,
		       struct sk_frame *out, unsigned max, int *whole)
{
	struct ttrace *tr = u64map_get(&v->traces, (uint64_t)at->trace | 1ULL << 32);
	const struct chain *ch;
	const struct tsnap *sn;
	unsigned n = 0;

	*whole = 0;
	if (!tr || at->snap >= tr->nsnap || !max || m->src != MP_SRC_LFUNC)
		return 0;
	sn = &tr->s[at->snap];
	ch = at->chain >= 0 ? sn->ch[at->chain] : NULL;
	/* A builtin compiled in, what the event is charged to, then the
	 * inlined calls to it; in a stretch of several sites, only where
	 * its calls told the site (by rank, the site may be another's: a
	 * builtin's frame would be a lie) */
	if (ch && ch->bfn && (at->chain == MAX_SITES || at->by_call)) {
		out[n++] = ch->leaf;
		if (n == max)
			return n;
	}
	out[n++] = (struct sk_frame){ .src = MP_SRC_LFUNC, .addr = m->loc, .line = m->line };
	for (uint32_t j = ch ? ch->n : 0; j-- > 0;) {
		if (ch->line[j] < 0 || n == max)
			return n;
		out[n++] = (struct sk_frame){ .src = MP_SRC_LFUNC, .addr = ch->pt[j],
					      .line = (uint64_t)ch->line[j] };
	}
	/* The snapshot's innermost frame, unless the event is in it, in a
	 * call from it (the chain) or in its tail call's callee. */
	if (!sn->has_top)
		return n;
	/* returned below the trace's base frame into its caller: the first
	 * of the frames below the trace (BPF's), the event's last frame */
	if (ch && ch->popped == sn->nbelow + 1 && sn->whole) {
		*whole = 1;
		return n - 1;
	}
	if (!ch && sn->top.addr != m->loc) {
		if (n == max)
			return n;
		out[n++] = sn->top;
	}
	/* returned out of the innermost frame and popped - 1 below it: the
	 * event's frame is below[popped - 1] */
	if (ch && ch->popped > sn->nbelow)
		return n;
	for (uint32_t i = ch ? ch->popped : 0; i < sn->nbelow; i++) {
		if (n == max)
			return n;
		out[n++] = sn->below[i];
	}
	*whole = sn->whole;
	return n;
}

void traces_free(struct conv_vm *v)
{
	for (size_t j = 0; j < v->traces.cap; j++)
		if (v->traces.v[j])
			trace_drop(v, v->traces.v[j]);
	u64map_free(&v->traces, NULL);
	u64set_free(&v->alloc_to);
	free(v->tlm);
	v->tlm = NULL;
}


