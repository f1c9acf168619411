/* Traces: a machine code offset or an exit number to a Lua line, through
 * the trace's snapshots (see convert/jit.h).
 *
 * LuaJIT's own lj_trace_unwind maps an address to the rightmost snapshot
 * whose mcofs is not above it; the snapshot's PC (under FR2 the map word
 * after its entries, PC << 8 | base slot) is the bytecode the trace
 * resumes at there. Its prototype is found by the PC: the trace's starting
 * prototype, or by walking back over the bytecode to its header
 * instruction (FUNCF and kin occur at a prototype's bc[0] and nowhere
 * else). A trace keeps the prototypes it runs alive, so what a trace
 * resolved stays true while the trace lives.
 *
 * Snapshots sit where the trace's state changes, not at every bytecode: a
 * statement's allocation often runs in the stretch that begins at the
 * statement before. So a stretch is walked, from its snapshot's PC, over
 * straight-line bytecode (following JMP, into the functions the trace
 * inlined there: the Lua functions its IR guards on, as KGC constants, in
 * order; a tail call's callee too) up to the next snapshot's PC, a branch,
 * a loop or a return out of the stretch's function. If the walk meets exactly one bytecode that
 * allocates (TNEW, TDUP, CAT, FNEW, KCDATA, a call that was not inlined:
 * a builtin, charged to its caller's line as the interpreter's are), or
 * else exactly one table store (which may grow the table), the stretch's
 * allocations are charged to its line. A stretch with several (up to
 * MAX_SITES) runs their calls in order: the k-th distinct call site
 * (machine code offset) its new blocks come from is charged to the k-th.
 * Not exact when an earlier site allocates later than a later one (a CAT
 * whose string is already interned makes none), or a builtin allocates
 * from several call sites; with more sites than bytecodes, and otherwise,
 * the snapshot's line.
 *
 * Sunk allocations (lj_opt_sink) are made where the object escapes: at an
 * exit, restored by lj_snap_restore (vmstate EXIT), or at the start of a
 * side trace, replayed from its parent's exit (lj_snap_replay), before
 * the side trace's first snapshot. Either way the snapshot names the
 * stack slot the object lives in; the bytecode that created it is the
 * TNEW or TDUP into that slot found walking back from the snapshot's PC,
 * and its line is charged when all the objects restored there agree. A
 * side trace's replayed objects share their machine code stretch with its
 * first snapshot's: its new blocks there are charged to them when that
 * stretch's own bytecode allocates nothing (what it stores to grows by
 * reallocation, charged to the store). Not exact: a store there that
 * makes a table's hash part (a new block) counts as a replayed object. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/conv.h"
#include "streams/out.h"
#include "convert/cnames.h"
#include "convert/jit.h"

#include "target/layout.h"
#include "convert/lines.h"
#include "convert/luanames.h"
#include "target/proc.h"
#include "target/caps.h"

#define MAX_SITES 8

/* A snapshot: where it starts in machine code and IR, the PC it resumes
 * at, and once resolved, the prototype and line its stretch is charged
 * to. */
struct tsnap {
	uint32_t mcofs;
	uint32_t ref;
	uint32_t resolved; /* 0 not yet, 1 done, 2 failed */
	uint32_t xresolved; /* the same for exits through it */
	uint64_t pc;
	uint64_t pt, xpt;
	int64_t line, xline;
	uint32_t nalloc; /* allocating bytecodes its walk met */
	uint32_t stop;   /* where its stretch ends: a snapshot's index + 1,
			  * 0 none (stretch_ends) */
	uint64_t spt;    /* as a stretch's end: its PC's prototype */
	/* Several, in order (see the head of this file): their prototypes
	 * and lines, and the call sites seen, ascending. */
	uint32_t nb, nsite;
	uint64_t b_pt[MAX_SITES];
	int64_t b_line[MAX_SITES];
	uint32_t site[MAX_SITES];
	/* Stacks: the inlined calls the walk went through to what it charges
	 * (MAX_SITES: the one bytecode, else the k-th), NULL if none; the
	 * snapshot's frame slots and its innermost frame's base slot; told
	 * while the process is stopped (snap_frames): its innermost frame
	 * (if has_top), the frames below it, whole if down to slot 0. */
	struct chain *ch[MAX_SITES + 1];
	struct sfr *fr;
	uint32_t nfr, baseslot;
	struct sk_frame top, *below;
	uint32_t nbelow;
	uint8_t has_top, whole;
};

/* Calls from the snapshot's innermost frame into inlined functions: the
 * caller at each depth and the position of its CALL (its line, once
 * kept); tailed: a tail call replaced the innermost frame itself. */
#define MAX_DEPTH 8

struct chain {
	uint32_t n, tailed;
	uint64_t pt[MAX_DEPTH];
	uint32_t pos[MAX_DEPTH];
	int64_t line[MAX_DEPTH];
};

/* A snapshot's frame slot: its constant, under FR2 a frame link or PC
 * (SNAP_FRAME, SNAP_CONT) or the GCfunc in the slot below a frame link. */
struct sfr {
	uint32_t slot;
	uint64_t v;
};

/* Where sunk objects were created (see the head of this file). */
struct origin {
	uint32_t state; /* 0 none, 1 one line, 2 several or unknown */
	uint64_t pt;
	int64_t line;
};

/* A prototype a trace runs: its bytecode and line table. */
struct tproto {
	struct pline *lines;
	uint32_t sizebc;
	uint32_t *bc;
};

struct ttrace {
	uint64_t T, startpt;
	uint32_t nsnap;
	/* Its budgets (target/caps.h): target reads made, bytes kept; over:
	 * one was hit, what was left unread is not resolved */
	uint32_t reads;
	uint64_t bytes;
	int over;
	int budget; /* its process's budget of reads was hit (over too) */
	uint32_t nk, nins; /* IR refs [nk, nins), biased */
	uint64_t *ir;      /* IR, from nk */
	struct u64map protos; /* prototype -> struct tproto */
	struct origin replay; /* allocations before the first snapshot */
	struct origin *xsunk; /* per snapshot: objects its exits restore */
	struct tsnap s[];
};

#define SNAP_FRAME 0x010000 /* lj_jit.h: a frame's slot */
#define SNAP_CONT 0x020000  /* a continuation's */
#define REF_BIAS 0x8000     /* constants lie below it */
#define MAX_BC LMT_PROTO_BC_MAX
#define WALK_MAX LMT_WALK_STEPS

/* A read of the target for trace tr, within its read budget and its
 * process's (the trace counted once if that one stops it). */
static int rd(struct conv_vm *v, struct ttrace *tr, uint64_t addr, void *buf, size_t len)
{
	if (v->p->tr_reads >= LMT_PROC_READS_MAX) {
		v->p->tr_budget += !tr->budget;
		tr->budget = tr->over = 1;
		return -1;
	}
	if (tr->reads >= LMT_TRACE_READS_MAX) {
		tr->over = 1;
		return -1;
	}
	tr->reads++;
	v->p->tr_reads++;
	return proc_read(v->p->pid, addr, buf, len);
}

/* n more bytes kept for trace tr: 0, or -1 over its budget. */
static int keep(struct ttrace *tr, size_t n)
{
	if (tr->bytes + n > LMT_TRACE_BYTES_MAX) {
		tr->over = 1;
		return -1;
	}
	tr->bytes += n;
	return 0;
}

static void tproto_free(void *p)
{
	struct tproto *tp = p;

	if (tp) {
		free(tp->lines);
		free(tp->bc);
	}
	free(tp);
}

static void ttrace_free(void *p)
{
	struct ttrace *tr = p;

	for (uint32_t i = 0; tr && i < tr->nsnap; i++) {
		for (int k = 0; k <= MAX_SITES; k++)
			free(tr->s[i].ch[k]);
		free(tr->s[i].fr);
		free(tr->s[i].below);
	}
	if (tr) {
		u64map_free(&tr->protos, tproto_free);
		free(tr->ir);
		free(tr->xsunk);
	}
	free(tr);
}

static int resolve(struct conv_vm *v, struct ttrace *tr, uint32_t i);
static int resolve_exit(struct conv_vm *v, struct ttrace *tr, uint32_t i);
static void snap_frames(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn);
static void sunk_origins(struct conv_vm *v, struct ttrace *tr, uint32_t i,
			 const uint32_t *ent, uint32_t nent, uint32_t baseslot);

/* The trace's IR [nk, nins): read for the functions it inlined. */
static void read_ir(struct conv_vm *v, struct ttrace *tr, uint64_t T)
{
	const struct lj_ulayout *u = &v->var->u;
	uint64_t ir = 0;
	uint32_t nk = 0, nins = 0;

	/* Constants below REF_BIAS, instructions above it. */
	if (rd(v, tr, T + u->T_ir, &ir, 8) || rd(v, tr, T + u->T_nk, &nk, 4) ||
	    rd(v, tr, T + u->T_nins, &nins, 4) || !ir)
		return;
	if (nk > u->ref_bias || nins <= u->ref_bias || nins - nk > LMT_TRACE_IR_MAX) {
		tr->over = 1;
		return;
	}
	if (keep(tr, (size_t)(nins - nk) * 8))
		return;
	tr->ir = malloc((size_t)(nins - nk) * 8);
	if (!tr->ir || rd(v, tr, ir + (uint64_t)nk * 8, tr->ir,
			  (size_t)(nins - nk) * 8)) {
		free(tr->ir);
		tr->ir = NULL;
		return;
	}
	tr->nk = nk;
	tr->nins = nins;
}

/* Entry k of ent is a frame's: a link, or the function below one (FR2
 * flags the link only). Entries are in slot order. */
static int frame_entry(const uint32_t *ent, uint32_t nent, uint32_t k)
{
	return (ent[k] & (SNAP_FRAME | SNAP_CONT)) ||
	       (k + 1 < nent && (ent[k + 1] & SNAP_FRAME) &&
		ent[k + 1] >> 24 == (ent[k] >> 24) + 1);
}

/* The constant of snapshot sn's frame slot slot, in *v. */
static int fr_get(const struct tsnap *sn, uint32_t slot, uint64_t *v)
{
	for (uint32_t k = 0; k < sn->nfr; k++)
		if (sn->fr[k].slot == slot) {
			*v = sn->fr[k].v;
			return 0;
		}
	return -1;
}

/* The frame slots of snapshot sn's entries ent, for stacks. */
static void frame_slots(struct ttrace *tr, struct tsnap *sn, const uint32_t *ent,
			uint32_t nent)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < nent; k++)
		n += frame_entry(ent, nent, k);
	if (!n || !tr->ir || keep(tr, n * sizeof(*sn->fr)) ||
	    !(sn->fr = calloc(n, sizeof(*sn->fr))))
		return;
	for (uint32_t k = 0; k < nent; k++) {
		const uint32_t ref = ent[k] & 0xffff;

		/* 64-bit constants keep their value in the next IR slot. */
		if (!frame_entry(ent, nent, k) || ref < tr->nk ||
		    ref + 1 >= tr->nins || ref >= REF_BIAS)
			continue;
		sn->fr[sn->nfr++] = (struct sfr){ .slot = ent[k] >> 24,
						  .v = tr->ir[ref + 1 - tr->nk] };
	}
}

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
	uint8_t src;
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
	ttrace_free(tr);
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

static void stretch_ends(struct conv_vm *v, struct ttrace *tr);

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
	read_ir(v, tr, r->T);
	for (uint32_t i = 0; i < nsnap; i++) {
		const uint8_t *e = sb + (size_t)i * u->snap_size;
		uint32_t mapofs;
		uint16_t mcofs, ref;
		uint8_t nent;
		uint64_t pcbase;

		memcpy(&mapofs, e + u->snap_mapofs, 4);
		memcpy(&mcofs, e + u->snap_mcofs, 2);
		memcpy(&ref, e + u->snap_ref, 2);
		nent = e[u->snap_nent];
		tr->s[i].mcofs = mcofs;
		tr->s[i].ref = ref;
		if ((uint64_t)mapofs + nent + 2 > nsnapmap) {
			tr->s[i].resolved = tr->s[i].xresolved = 2;
			tr->over = 1;
			continue;
		}
		memcpy(&pcbase, map + mapofs + nent, 8);
		tr->s[i].pc = pcbase >> 8; /* FR2: PC << 8 | base slot - 2 */
		tr->s[i].baseslot = (uint32_t)(pcbase & 0xff) + 2;
		frame_slots(tr, &tr->s[i], map + mapofs, nent);
		/* tr->protos is filled on the way: tr is not shared yet. */
		sunk_origins(v, tr, i, map + mapofs, nent,
			     (uint32_t)(pcbase & 0xff) + 2);
	}
	free(sb);
	free(map);
	/* Every stretch now, while BPF holds the process (lmt_trace.stopped):
	 * a short program may be gone when its events are read. */
	stretch_ends(v, tr);
	for (uint32_t i = 0; i < tr->nsnap; i++) {
		resolve(v, tr, i);
		resolve_exit(v, tr, i);
		snap_frames(v, tr, &tr->s[i]);
	}
	u64map_put(&v->traces, r->traceno | 1ULL << 32, tr, &err);
	if (err) {
		ttrace_free(tr);
		return;
	}
	v->p->tr_cut += tr->over && !tr->budget;
	/* The process's budget: its other traces go, oldest table slot first. */
	v->p->tr_bytes += tr->bytes;
	while (v->p->tr_bytes > LMT_PROC_TRACE_BYTES_MAX && !evict_one(v->p, tr))
		v->p->tr_evicted++;
	return;
fail:
	ttrace_free(tr);
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

/* -- Prototypes ------------------------------------------------------------ */

/* Prototype pt of trace tr: its bytecode and lines, read once; its
 * symbol written to the stream the first time. NULL if unreadable. */
static struct tproto *proto_get(struct conv_vm *v, struct ttrace *tr, uint64_t pt)
{
	const struct lj_layout *l = &v->var->lay;
	struct tproto *tp = u64map_get(&tr->protos, pt);
	uint8_t w[LMT_PTWIN];
	uint32_t sizebc, numline, len = 0, width, n;
	int32_t first;
	uint64_t str, li;
	char name[LMT_CHUNKNAME_MAX];
	int err;

	if (tp)
		return tp;
	if (rd(v, tr, pt, w, sizeof(w)))
		return NULL;
	memcpy(&sizebc, w + l->pt_sizebc, 4);
	memcpy(&numline, w + l->pt_numline, 4);
	memcpy(&first, w + l->pt_firstline, 4);
	memcpy(&str, w + l->pt_chunkname, 8);
	memcpy(&li, w + l->pt_lineinfo, 8);
	if (!sizebc || sizebc > MAX_BC)
		return NULL;
	width = numline < 256 ? 1 : numline < 65536 ? 2 : 4;
	n = sizebc > 1 ? (sizebc - 1) * width : 0;
	if (keep(tr, sizeof(*tp) + sizeof(*tp->lines) + n + (size_t)sizebc * 4))
		return NULL;
	tp = calloc(1, sizeof(*tp));
	if (!tp || !(tp->lines = malloc(sizeof(*tp->lines) + n)) ||
	    !(tp->bc = malloc((size_t)sizebc * 4)) ||
	    rd(v, tr, pt + l->pt_size, tp->bc, (size_t)sizebc * 4)) {
		tproto_free(tp);
		return NULL;
	}
	tp->sizebc = sizebc;
	*tp->lines = (struct pline){ .firstline = first, .sizebc = sizebc,
				     .numline = numline, .width = (uint8_t)width };
	if (li && n && !rd(v, tr, li, tp->lines->li, n))
		tp->lines->len = n;
	/* Its chunk name, cut to LMT_CHUNKNAME_MAX (target/caps.h). */
	if (!str || rd(v, tr, str + l->str_len, &len, 4))
		len = 0;
	if (len > LMT_CHUNKNAME_MAX) {
		v->p->names_long++;
		len = rd(v, tr, str + l->str_size, name, LMT_CHUNKNAME_MAX - 3) ?
			      0 : LMT_CHUNKNAME_MAX;
		memcpy(name + LMT_CHUNKNAME_MAX - 3, "...", 3);
	} else if (len && rd(v, tr, str + l->str_size, name, len)) {
		len = 0;
	}
	out_sym(v->out, &(struct mp_sym){ .kind = MP_SYM_LFUNC, .addr = pt,
					  .line = (uint64_t)(int64_t)first,
					  .name = name, .name_len = len });
	u64map_put(&tr->protos, pt, tp, &err);
	if (err) {
		tproto_free(tp);
		return NULL;
	}
	return tp;
}

/* The prototype whose bytecode holds pc: the trace's start, else found
 * by walking back to the header instruction. 0 if none. */
static uint64_t proto_of(struct conv_vm *v, struct ttrace *tr, uint64_t pc)
{
	const struct lj_ulayout *u = &v->var->u;
	const uint64_t ptsz = v->var->lay.pt_size;
	uint32_t w[64], sizebc;
	uint8_t gct;

	if (tr->startpt) {
		const struct tproto *k = u64map_get(&tr->protos, tr->startpt);
		if (k && pc >= tr->startpt + ptsz &&
		    pc < tr->startpt + ptsz + 4 * (uint64_t)k->sizebc)
			return tr->startpt;
	}
	/* One the trace has read already: no read of the target. */
	for (size_t i = 0; i < tr->protos.cap; i++) {
		const struct tproto *k = tr->protos.v[i];
		const uint64_t at = tr->protos.k[i];

		if (k && pc >= at + ptsz && pc < at + ptsz + 4 * (uint64_t)k->sizebc)
			return at;
	}
	for (uint64_t end = pc + 4, n = 0; n < 4 * (uint64_t)MAX_BC; n += sizeof(w)) {
		uint64_t at = end - sizeof(w);
		if (rd(v, tr, at, w, sizeof(w)))
			return 0;
		for (int i = 63; i >= 0; i--) {
			const uint8_t op = (uint8_t)w[i];
			const uint64_t bc0 = at + 4 * (uint64_t)i, pt = bc0 - ptsz;

			if (op < u->bc_func_lo || op > u->bc_func_hi)
				continue;
			if (rd(v, tr, pt + u->pt_gct, &gct, 1) ||
			    rd(v, tr, pt + v->var->lay.pt_sizebc, &sizebc, 4) ||
			    gct != u->tproto || (pc - bc0) / 4 >= sizebc)
				return 0;
			return pt;
		}
		end = at;
	}
	return 0;
}

/* The prototype holding PC pc of trace tr, read, and pc's position in it;
 * NULL if it cannot be found or read. */
static struct tproto *at_pc(struct conv_vm *v, struct ttrace *tr, uint64_t pc,
			    uint64_t *pt, uint32_t *pos)
{
	struct tproto *tp;

	if (tr->startpt)
		proto_get(v, tr, tr->startpt); /* proto_of looks there first */
	if (!pc || !(*pt = proto_of(v, tr, pc)) || !(tp = proto_get(v, tr, *pt)))
		return NULL;
	*pos = (uint32_t)((pc - *pt - v->var->lay.pt_size) / 4);
	return tp;
}

/* -- A stretch ------------------------------------------------------------- */

/* The Lua functions trace tr inlined in IR refs [lo, hi): the GCfuncs its
 * instructions there take as KGC constants, in order, and their
 * prototypes. */
/* The prototype of Lua function fn (a GCfunc), or 0. */
static uint64_t fn_proto(struct conv_vm *v, struct ttrace *tr, uint64_t fn)
{
	const struct lj_layout *l = &v->var->lay;
	uint64_t pc;
	uint8_t ffid;

	if (rd(v, tr, fn + l->fn_ffid, &ffid, 1) || ffid != 0 /* FF_LUA */ ||
	    rd(v, tr, fn + l->fn_pc, &pc, 8))
		return 0;
	return pc - l->pt_size;
}

static unsigned inlined(struct conv_vm *v, struct ttrace *tr, uint32_t lo,
			uint32_t hi, uint64_t *pts, uint64_t *fns, unsigned max)
{
	const struct lj_ulayout *u = &v->var->u;
	unsigned n = 0;

	if (!tr->ir)
		return 0;
	if (lo < tr->nk)
		lo = tr->nk;
	if (hi > tr->nins)
		hi = tr->nins;
	for (uint32_t ref = lo; ref < hi && n < max; ref++) {
		const uint8_t *ins = (const uint8_t *)&tr->ir[ref - tr->nk];
		uint16_t ops[2];

		memcpy(&ops[0], ins + u->ir_op1, 2);
		memcpy(&ops[1], ins + u->ir_op2, 2);
		for (int k = 0; k < 2 && n < max; k++) {
			const uint32_t c = ops[k];
			uint64_t fn, pt;
			const uint8_t *kg;
			unsigned j;

			/* A function constant (IRT_FUNC; the type's low bits),
			 * its pointer in the next slot: both read. */
			if (c < tr->nk || c + 1 >= tr->nins || c + 1 >= u->ref_bias)
				continue;
			kg = (const uint8_t *)&tr->ir[c - tr->nk];
			if (kg[u->ir_o] != u->ir_kgc || (kg[u->ir_t] & 0x1f) != u->irt_func)
				continue;
			fn = tr->ir[c + 1 - tr->nk] & ((1ULL << 47) - 1);
			if (!(pt = fn_proto(v, tr, fn)))
				continue;
			for (j = 0; j < n && pts[j] != pt; j++)
				;
			if (j == n) {
				fns[n] = fn;
				pts[n++] = pt;
			}
		}
	}
	return n;
}

struct walk {
	struct conv_vm *v;
	struct ttrace *tr;
	const struct tsnap *stop; /* the next snapshot: the stretch ends there */
	uint64_t stop_pt; /* its prototype and PC */
	uint64_t stop_pc;
	const uint64_t *callees; /* inlined functions, in order */
	const uint64_t *callee_fns; /* and their GCfuncs */
	unsigned ncallees, next;
	unsigned steps;
	unsigned nalloc, nstore; /* bytecodes that allocate / store */
	uint64_t alloc_pt, store_pt;
	uint32_t alloc_pos, store_pos;
	unsigned builtins;       /* calls among the allocating */
	uint64_t pts[MAX_SITES]; /* the allocating, in order */
	uint32_t poss[MAX_SITES];
	struct chain path;       /* the inlined calls walked into now */
	struct chain chs[MAX_SITES + 1]; /* at each allocating (MAX_SITES:
					  * the last) */
	struct chain store_ch;
};

static void walk_alloc(struct walk *w, uint64_t pt, uint32_t pos)
{
	if (w->nalloc < MAX_SITES) {
		w->pts[w->nalloc] = pt;
		w->poss[w->nalloc] = pos;
		w->chs[w->nalloc] = w->path;
	}
	w->nalloc++;
	w->alloc_pt = pt;
	w->alloc_pos = pos;
	w->chs[MAX_SITES] = w->path;
}

/* The Lua function a CALL at pos of GCfunc fn calls, if its slot was
 * loaded from one of fn's upvalues (UGET): a constant the trace need not
 * guard on. Its prototype, or 0; its GCfunc in *cfn. */
static uint64_t uget_callee(struct walk *w, const struct tproto *tp,
			    uint32_t pos, uint64_t fn, uint64_t *cfn)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const uint32_t a = tp->bc[pos] >> 8 & 0xff;
	uint64_t uv, tvp, tv;

	if (!fn)
		return 0;
	for (uint32_t p = pos; p-- > 1 && pos - p <= 16;) {
		const uint32_t ins = tp->bc[p];

		if ((ins >> 8 & 0xff) != a)
			continue;
		if ((ins & 0xff) != u->bc_uget ||
		    rd(w->v, w->tr, fn + u->fn_uvptr + 8 * (ins >> 16), &uv, 8) ||
		    rd(w->v, w->tr, uv + u->uv_v, &tvp, 8) ||
		    rd(w->v, w->tr, tvp, &tv, 8) ||
		    (int32_t)((int64_t)tv >> 47) != u->itype_func)
			return 0;
		*cfn = tv & ((1ULL << 47) - 1);
		return fn_proto(w->v, w->tr, *cfn);
	}
	return 0;
}

/* The Lua function the stretch's next snapshot has framed at slot (a call
 * still running where the stretch ends): its prototype, or 0; its GCfunc
 * in *cfn when the snapshot keeps it. */
static uint64_t stop_callee(struct walk *w, uint32_t slot, uint64_t *cfn)
{
	uint64_t link;

	if (!w->stop || fr_get(w->stop, slot + 1, &link) || (link & 3) != 0)
		return 0;
	if (!fr_get(w->stop, slot, cfn))
		return fn_proto(w->v, w->tr, *cfn & ((1ULL << 47) - 1));
	*cfn = 0;
	return w->stop->baseslot == slot + 2 ? w->stop_pt : 0;
}

/* Walks prototype pt (of GCfunc fn, if known) from position pos (see the
 * head of this file). depth: inside an inlined function, which returns to
 * its caller; base: its frame's first slot, in the snapshot's numbering. */
static void walk(struct walk *w, uint64_t pt, uint64_t fn, uint32_t pos,
		 int depth, uint32_t base)
{
	const struct lj_ulayout *u = &w->v->var->u;
	const uint64_t ptsz = w->v->var->lay.pt_size;
	struct tproto *tp = proto_get(w->v, w->tr, pt);

	while (tp && pos < tp->sizebc && w->steps++ < WALK_MAX) {
		const uint32_t ins = tp->bc[pos];
		const unsigned op = ins & 0xff;

		if (pt == w->stop_pt && pt + ptsz + 4 * (uint64_t)pos == w->stop_pc) {
			w->steps = WALK_MAX; /* the stretch ends here */
			return;
		}
		if (op <= u->bc_cond_hi)
			return; /* a branch: which way the trace went is not known */
		if (op == u->bc_tnew || op == u->bc_tdup || op == u->bc_cat ||
		    op == u->bc_fnew || op == u->bc_kcdata) {
			walk_alloc(w, pt, pos);
		} else if (op == u->bc_tsetv || op == u->bc_tsets ||
			   op == u->bc_tsetb || op == u->bc_tsetm) {
			w->nstore++;
			w->store_pt = pt;
			w->store_pos = pos;
			w->store_ch = w->path;
		} else if (op == u->bc_call || op == u->bc_callm || op == u->bc_callt ||
			   op == u->bc_callmt) {
			/* An inlined Lua function: one read from an upvalue,
			 * else the next the IR guards on (not this one) unless
			 * the next snapshot has another framed in its slot.
			 * A tail call's callee takes its caller's place, in the
			 * stack too, and its return is its caller's. */
			const int tail = op == u->bc_callt || op == u->bc_callmt;
			const uint32_t slot = tail ? base - 2 : base + (ins >> 8 & 0xff);
			uint64_t callee = 0, cfn = 0, sfn = 0, scallee;
			unsigned nx = w->next;

			if ((callee = uget_callee(w, tp, pos, fn, &cfn)) &&
			    w->next < w->ncallees && w->callees[w->next] == callee)
				w->next++;
			while (nx < w->ncallees && w->callees[nx] == pt)
				nx++;
			scallee = callee ? 0 : stop_callee(w, slot, &sfn);
			if (!callee && scallee == pt && nx > w->next) {
				callee = pt; /* recursion */
				cfn = sfn;
				w->next++;
			} else if (!callee && scallee &&
				   (nx >= w->ncallees || w->callees[nx] == scallee)) {
				callee = scallee;
				cfn = sfn;
				w->next = nx + (nx < w->ncallees);
			} else if (!callee && nx < w->ncallees) {
				callee = w->callees[nx];
				cfn = w->callee_fns[nx];
				w->next = nx + 1;
			}
			if (callee && tail) {
				w->path.tailed |= !depth;
				walk(w, callee, cfn, 1, depth, base);
				if (!depth)
					w->steps = WALK_MAX;
				return;
			} else if (callee && depth < MAX_DEPTH) {
				w->path.pt[depth] = pt;
				w->path.pos[depth] = pos;
				w->path.n = (uint32_t)depth + 1;
				walk(w, callee, cfn, 1, depth + 1, slot + 2);
				w->path.n = (uint32_t)depth;
				if (w->steps >= WALK_MAX)
					return;
			} else if (tail) {
				return; /* a builtin's tail call: not known */
			} else {
				/* a builtin: charged to the call */
				walk_alloc(w, pt, pos);
				w->builtins++;
			}
		} else if (op == u->bc_ret || op == u->bc_ret0 || op == u->bc_ret1 ||
			   op == u->bc_retm) {
			if (!depth)
				w->steps = WALK_MAX; /* out of the stretch's function */
			return;
		} else if (op == u->bc_jmp) {
			pos = pos + 1 + (ins >> 16) - 0x8000;
			continue;
		} else if ((op >= u->bc_iterc && op <= u->bc_isnext) ||
			   (op >= u->bc_fori && op <= u->bc_jloop) || op > u->bc_jmp) {
			return; /* iterators, loops, headers */
		}
		pos++;
	}
}

/* Keeps chain c for allocating bytecode k of snapshot sn, with the lines
 * of its calls (-1 if not known). */
static void keep_chain(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn, int k,
		       const struct chain *c)
{
	struct chain *kc;

	if ((!c->n && !c->tailed) || sn->ch[k] || keep(tr, sizeof(*c)) ||
	    !(kc = sn->ch[k] = malloc(sizeof(*c))))
		return;
	*kc = *c;
	for (uint32_t j = 0; j < kc->n; j++) {
		const struct tproto *tp = proto_get(v, tr, kc->pt[j]);
		kc->line[j] = tp ? pline_line(tp->lines, kc->pos[j]) : -1;
	}
}

/* Where each snapshot's stretch ends: at the next snapshot that is not a
 * function's entry (the frame of an inlined call: its code is not apart),
 * unless one before it cannot be located. One pass from the last, each
 * snapshot's PC located once: linear in the snapshots. */
static void stretch_ends(struct conv_vm *v, struct ttrace *tr)
{
	uint32_t next = 0;

	for (uint32_t j = tr->nsnap; j-- > 1;) {
		struct tproto *sp;
		uint32_t spos;

		if (!(sp = at_pc(v, tr, tr->s[j].pc, &tr->s[j].spt, &spos)))
			next = 0;
		else if (spos < sp->sizebc && spos > 0)
			next = j + 1;
		tr->s[j - 1].stop = next;
	}
}

/* Resolves snapshot i of trace tr: the prototype and line its stretch is
 * charged to. Once: every later event of the stretch finds it done, and
 * the walk's state (kilobytes, zeroed) is set up only the first time. */
static int resolve_walk(struct conv_vm *v, struct ttrace *tr, uint32_t i);

static int resolve(struct conv_vm *v, struct ttrace *tr, uint32_t i)
{
	const uint32_t r = tr->s[i].resolved;

	return r ? (r == 1 ? 0 : -1) : resolve_walk(v, tr, i);
}

static __attribute__((noinline)) int resolve_walk(struct conv_vm *v, struct ttrace *tr,
						  uint32_t i)
{
	struct tsnap *sn = &tr->s[i];
	struct tproto *tp;
	struct walk w = { .v = v, .tr = tr };
	uint64_t callees[16], fns[16];
	uint64_t pt = 0, fn;
	uint32_t pos;
	int64_t line;

	sn->resolved = 2;
	if (!at_pc(v, tr, sn->pc, &sn->pt, &pos))
		return -1;
	if (sn->stop) {
		w.stop = &tr->s[sn->stop - 1];
		w.stop_pc = w.stop->pc;
		w.stop_pt = w.stop->spt;
	}
	w.callees = callees;
	w.callee_fns = fns;
	w.ncallees = inlined(v, tr, sn->ref, i + 1 < tr->nsnap ? tr->s[i + 1].ref :
			     tr->nins, callees, fns, 16);
	/* the stretch's own function, when the snapshot keeps it */
	if (fr_get(sn, sn->baseslot - 2, &fn))
		fn = 0;
	walk(&w, sn->pt, fn & ((1ULL << 47) - 1), pos, 0, sn->baseslot);
	sn->nalloc = w.nalloc;
	if (w.nalloc >= 2 && w.nalloc <= MAX_SITES) {
		for (uint32_t k = 0; k < w.nalloc; k++) {
			struct tproto *bp = proto_get(v, tr, w.pts[k]);
			sn->b_pt[k] = w.pts[k];
			sn->b_line[k] = bp ? pline_line(bp->lines, w.poss[k]) : -1;
			if (sn->b_line[k] < 0)
				break;
			sn->nb = k + 1;
		}
		if (sn->nb != w.nalloc)
			sn->nb = 0;
	}
	for (uint32_t k = 0; sn->nb && k < sn->nb; k++)
		keep_chain(v, tr, sn, k, &w.chs[k]);
	if (w.nalloc == 1) {
		pt = w.alloc_pt;
		pos = w.alloc_pos;
		keep_chain(v, tr, sn, MAX_SITES, &w.chs[MAX_SITES]);
	} else if (!w.nalloc && w.nstore == 1) {
		pt = w.store_pt;
		pos = w.store_pos;
		keep_chain(v, tr, sn, MAX_SITES, &w.store_ch);
	} else {
		pt = sn->pt;
	}
	tp = proto_get(v, tr, pt);
	if (!tp)
		return -1;
	/* The line of the instruction at pos. */
	line = pline_line(tp->lines, pos);
	if (line < 0)
		return -1;
	sn->pt = pt;
	sn->line = line;
	sn->resolved = 1;
	return 0;
}

/* An exit through snapshot i: the line it resumes at. */
static int resolve_exit(struct conv_vm *v, struct ttrace *tr, uint32_t i)
{
	struct tsnap *sn = &tr->s[i];
	struct tproto *tp;
	uint32_t pos;
	int64_t line;

	if (sn->xresolved)
		return sn->xresolved == 1 ? 0 : -1;
	sn->xresolved = 2;
	if (!(tp = at_pc(v, tr, sn->pc, &sn->xpt, &pos)))
		return -1;
	line = pline_line(tp->lines, pos);
	if (line < 0)
		return -1;
	sn->xline = line;
	sn->xresolved = 1;
	return 0;
}

/* -- Sunk allocations -------------------------------------------------- */

/* The TNEW or TDUP that filled register r, walking back from PC pc within
 * its loop body: its prototype and line. */
static int created_at(struct conv_vm *v, struct ttrace *tr, uint64_t pc, uint32_t r,
		      struct origin *o)
{
	const struct lj_ulayout *u = &v->var->u;
	struct tproto *tp;
	uint64_t pt;
	uint32_t pos;

	if (!(tp = at_pc(v, tr, pc, &pt, &pos)))
		return -1;
	for (uint32_t p = pos, n = 0; p-- > 1 && n < WALK_MAX; n++) {
		const uint32_t ins = tp->bc[p], op = ins & 0xff;

		if ((op == u->bc_tnew || op == u->bc_tdup) && (ins >> 8 & 0xff) == r) {
			o->pt = pt;
			o->line = pline_line(tp->lines, p);
			return o->line < 0 ? -1 : 0;
		}
		if (op >= u->bc_fori && op <= u->bc_jloop)
			return -1; /* the loop's head: made in another iteration */
	}
	return -1;
}

/* Adds the origin of one object to o: n found (state 1) or not (0). */
static void origin_add(struct origin *o, const struct origin *n)
{
	if (!n->state)
		o->state = 2;
	else if (!o->state)
		*o = (struct origin){ .state = 1, .pt = n->pt, .line = n->line };
	else if (o->pt != n->pt || o->line != n->line)
		o->state = 2;
}

/* Snapshot i's entries ent (baseslot: the slot of its innermost frame's
 * register 0): the objects an exit there restores, and for the first
 * snapshot of a side trace those replayed before it. */
static void sunk_origins(struct conv_vm *v, struct ttrace *tr, uint32_t i,
			 const uint32_t *ent, uint32_t nent, uint32_t baseslot)
{
	const struct lj_ulayout *u = &v->var->u;

	for (uint32_t k = 0; tr->ir && k < nent; k++) {
		const uint32_t ref = ent[k] & 0xffff, slot = ent[k] >> 24;
		const uint8_t *ins;
		struct origin n;
		int replayed, sunk;

		if (ref < tr->nk || ref >= tr->nins)
			continue;
		ins = (const uint8_t *)&tr->ir[ref - tr->nk];
		if (ins[u->ir_o] != u->ir_tnew && ins[u->ir_o] != u->ir_tdup &&
		    ins[u->ir_o] != u->ir_cnew && ins[u->ir_o] != u->ir_cnewi)
			continue;
		sunk = ins[u->ir_r] == u->rid_sunk;
		replayed = i == 0 && ref < tr->s[0].ref;
		if (!sunk && !replayed)
			continue;
		n.state = slot >= baseslot &&
			  !created_at(v, tr, tr->s[i].pc, slot - baseslot, &n);
		if (sunk)
			origin_add(&tr->xsunk[i], &n);
		if (replayed)
			origin_add(&tr->replay, &n);
	}
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
	m->src = MP_SRC_LFUNC;
	m->loc = sn->b_pt[k];
	m->line = (uint64_t)sn->b_line[k];
	at->chain = (int)k;
	return 0;
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
		if (resolve_exit(v, tr, i))
			return -1;
		m->src = MP_SRC_LFUNC;
		m->loc = tr->s[i].xpt;
		m->line = (uint64_t)tr->s[i].xline;
		return 0;
	}
	i = snap_of(tr, (uint32_t)m->line);
	at->snap = i;
	if (i < tr->nsnap && m->kind == MP_ALLOC && !resolve(v, tr, i) &&
	    tr->s[i].nb) {
		const uint32_t nsite = tr->s[i].nsite;

		if (!site_line(&tr->s[i], (uint32_t)m->line, m, at)) {
			if (tr->s[i].nsite != nsite)
				tl_changed(v); /* the snapshot's sites renumbered */
			return 0;
		}
	}
	/* A side trace's first stretch: replayed objects come first, and
	 * when its own bytecode allocates nothing, what it makes anew are
	 * they (a table it stores to grows by reallocation). */
	if (i == 0 && tr->replay.state == 1 && m->kind == MP_ALLOC &&
	    !resolve(v, tr, 0) && !tr->s[0].nalloc)
		return origin_line(&tr->replay, m);
	if (i >= tr->nsnap || resolve(v, tr, i))
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
					     .chain = e->chain };
		return 0;
	}
	if (!at)
		at = &here;
	if (line_of(v, m, flags, at))
		return -1;
	if (e)
		*e = (struct tlmemo){ .key = key, .loc = m->loc, .line = m->line,
				      .ofs = ofs, .gen = v->tlgen, .snap = at->snap,
				      .chain = at->chain, .src = m->src };
	return 0;
}

/* -- Stacks ------------------------------------------------------------ */

/* A Lua frame at PC pc: its prototype and the line of the instruction at
 * pos + d (d = -1: the call before a return PC). */
static int lua_frame(struct conv_vm *v, struct ttrace *tr, uint64_t pc, int d,
		     struct sk_frame *f)
{
	struct tproto *tp;
	uint64_t pt;
	uint32_t pos;
	int64_t line;

	if (!(tp = at_pc(v, tr, pc, &pt, &pos)) || (int64_t)pos + d < 0 ||
	    (line = pline_line(tp->lines, (uint64_t)((int64_t)pos + d))) < 0)
		return -1;
	*f = (struct sk_frame){ .src = MP_SRC_LFUNC, .addr = pt, .line = (uint64_t)line };
	return 0;
}

/* A non-Lua frame's function fn (a GCfunc): a C function by its address,
 * a builtin as src 0 and its ffid. */
static int fn_frame(struct conv_vm *v, struct ttrace *tr, uint64_t fn, struct sk_frame *f)
{
	const struct lj_layout *l = &v->var->lay;
	uint8_t ffid;
	uint64_t cf;

	fn &= (1ULL << 47) - 1;
	if (rd(v, tr, fn + l->fn_ffid, &ffid, 1) || ffid == 0 /* Lua */ ||
	    rd(v, tr, fn + l->fn_f, &cf, 8))
		return -1;
	*f = ffid == 1 ? (struct sk_frame){ .src = MP_SRC_CFUNC, .addr = cf } :
			 (struct sk_frame){ .src = 0, .addr = ffid };
	/* its name too, while the process is there to read it from */
	lua_name(v, ffid == 1 ? cf : LUANAMES_FF(ffid));
	return 0;
}

/* Snapshot sn's innermost frame and the frames below it, down to the
 * trace's base frame (slot 0): each frame's function slot and link (FR2).
 * Read while the process is stopped: its events may come after its end.
 * Each frame is two slots or more below the last (its function and link):
 * a link saying less is not LuaJIT's, and ends the walk. */
static void snap_frames(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn)
{
	const unsigned cap = sn->baseslot / 2 + 1;
	struct sk_frame *out;
	uint64_t pc, link, d;
	int64_t fs;
	unsigned n = 0;

	if (sn->resolved != 1 || lua_frame(v, tr, sn->pc, 0, &sn->top))
		return;
	sn->has_top = 1;
	if (keep(tr, cap * sizeof(*out)) || !(out = calloc(cap, sizeof(*out))))
		return;
	for (fs = (int64_t)sn->baseslot - 2; fs > 0 && n < cap;) {
		if (fr_get(sn, (uint32_t)fs + 1, &link))
			break;
		if ((link & 3) == 0) { /* a Lua frame: its caller's return PC */
			const struct tproto *tp;
			uint64_t pt;
			uint32_t pos;
			int64_t line;

			if (!(tp = at_pc(v, tr, link, &pt, &pos)) || !pos ||
			    pos - 1 >= tp->sizebc ||
			    (line = pline_line(tp->lines, pos - 1)) < 0)
				break;
			/* the caller, at the line of the CALL before link */
			fs -= 2 + (tp->bc[pos - 1] >> 8 & 0xff);
			if (fs < 0)
				break;
			out[n++] = (struct sk_frame){ .src = MP_SRC_LFUNC, .addr = pt,
						      .line = (uint64_t)line };
			continue;
		}
		/* A continuation keeps the caller's PC below it. */
		if ((link & 7) == 2 && fr_get(sn, (uint32_t)fs - 1, &pc))
			break;
		if ((link & 7) != 2)
			pc = 0;
		d = (link & ~7ULL) / 8;
		if (d < 2) {
			tr->over = 1; /* a forged link */
			break;
		}
		if (d > (uint64_t)fs)
			break;
		fs -= (int64_t)d;
		if (pc ? lua_frame(v, tr, pc, -1, &out[n]) :
			 /* a builtin's (pcall) or a C function's frame */
			 fr_get(sn, (uint32_t)fs, &pc) || fn_frame(v, tr, pc, &out[n]))
			break;
		n++;
	}
	sn->whole = fs == 0;
	sn->below = out;
	sn->nbelow = n;
}

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
	/* What the event is charged to, then the inlined calls to it. */
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
	if (!ch && sn->top.addr != m->loc) {
		if (n == max)
			return n;
		out[n++] = sn->top;
	}
	for (uint32_t i = 0; i < sn->nbelow; i++) {
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
	free(v->tlm);
	v->tlm = NULL;
}

