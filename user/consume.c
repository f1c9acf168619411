/* Consume: ring buffer records into the memprof writer and the summary's
 * aggregator, in the order BPF sent them; prototypes' line tables kept to
 * turn bytecode positions into lines; the stops BPF made settled. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sched.h>
#include <fcntl.h>

#include "trace.h"

#include "guard.h"
#include "memprof_write.h"
#include "proc.h"
#include "report.h"
#include "lines.h"
#include "traces.h"
#include "luanames.h"
#include "readcaps.h"
#include "callstacks.h"

/* -- Routing ------------------------------------------------------------- */

static struct tproc *proc_of(struct tr *t, uint32_t tgid)
{
	return u64map_get(&t->pmap, (uint64_t)tgid | 1ULL << 32);
}

/* The VM a record names; a VM BPF registered whose record we have not
 * seen (it cannot be: its record goes first) is made from what it says. */
static struct tvm *vm_of(struct tr *t, uint32_t tgid, uint32_t id)
{
	struct tvm *v = vm_get(t, tgid, id);
	struct tproc *p;

	if (v || !(p = proc_of(t, tgid)) || p->ignored || vms_full(p))
		return v;
	return vm_known(t, p, id, 0, 0, 0, p->next_num);
}

static void keep_lines(struct tvm *v, const struct lmt_proto *p, size_t sz)
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
static void proto_name(struct tvm *v, const struct lmt_proto *p, struct mp_sym *s, char **full)
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
	/* Cut to LMT_CHUNKNAME_MAX, ending in "..." (readcaps.h). */
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

static void on_proto(struct tr *t, const struct lmt_proto *p, size_t sz)
{
	struct mp_sym s = { .kind = MP_SYM_LFUNC, .addr = p->addr };
	struct tvm *v = vm_of(t, p->tgid, p->vm);
	char *full = NULL;

	if (!v) {
		t->bad_recs++;
		return;
	}
	proto_name(v, p, &s, &full);
	/* Built-ins in bytecode have firstline -1: sign-extend, as LuaJIT. */
	s.line = (uint64_t)(int64_t)p->firstline;
	out_at(v->out, v, p->seq);
	out_sym(v->out, &s);
	out_at(v->out, NULL, 0);
	keep_lines(v, p, sz);
	free(full);
	v->p->protos++;
}

static void on_trace(struct tr *t, const struct lmt_trace *r)
{
	struct mp_sym s = { .kind = MP_SYM_TRACE, .addr = r->traceno,
			    .proto = r->proto, .line = r->line };
	struct tvm *v = vm_of(t, r->tgid, r->vm);

	if (!v) {
		t->bad_recs++;
		return;
	}
	out_at(v->out, v, r->seq);
	out_sym(v->out, &s);
	traces_add(v, r);
	out_at(v->out, NULL, 0);
	v->p->traces++;
}

/* A position (LMT_EV_POS) to a line through the prototype's table. */
static void pos_line(struct tvm *v, struct mp_event *m)
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

/* The name Lua code gives C function (or builtin, LUANAMES_FF) key, if
 * any. The target's tables are read again when a function they did not
 * name appears: at once for one not seen before (a module just loaded),
 * up to LMT_NAMES_MISSED_MAX of them; the ones they did not name wait for
 * the next walk, at most one every LMT_NAMES_REWALK_S (readcaps.h). */
const char *lua_name(struct tvm *v, uint64_t key)
{
	const char *n = u64map_get(&v->cnames, key);

	if (n || !v->var ||
	    ((u64set_has(&v->cmissed, key) || v->cmissed.n >= LMT_NAMES_MISSED_MAX) &&
	     now() - v->cnames_at < LMT_NAMES_REWALK_S))
		return n;
	v->cnames_at = now();
	v->p->nm_walks++;
	if (luanames_read(v->p->pid, v->var, v->g, &v->cnames, &v->p->nm_nodes) > 0)
		v->p->nm_cut++;
	n = u64map_get(&v->cnames, key);
	if (!n && v->cmissed.n < LMT_NAMES_MISSED_MAX)
		u64set_add(&v->cmissed, key);
	return n;
}

/* A C function by the name Lua code gives it (luanames.h), beside the
 * stream's ELF name: "cjson.encode (liblua5.1-cjson.so+0x3cc0)". */
void cfunc_name(struct tvm *v, uint64_t f)
{
	const char *n, *elf;
	char buf[512];

	if (u64set_has(&v->cnamed, f) || !(n = lua_name(v, f)))
		return;
	u64set_add(&v->cnamed, f);
	elf = syms_name(&v->p->syms, f);
	snprintf(buf, sizeof(buf), elf ? "%s (%s)" : "%s", n, elf);
	out_sym(v->out, &(struct mp_sym){ .kind = MP_SYM_CFUNC, .addr = f,
					  .name = buf, .name_len = strlen(buf) });
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
static inline void ev_where(struct tvm *v, struct mp_event *m, uint8_t src, uint8_t flags,
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

/* An event of VM v into its stream. */
static void ev_out(struct tvm *v, const struct lmt_ev *r)
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

/* -- Awaits ---------------------------------------------------------------- */

/* An allocation whose event left before its return (bpf/await.h), held
 * under its thread's mark until its LMT_RET event brings its address. A
 * thread has one in flight at a time: a second one of its mark means the
 * first's address was lost (its LMT_RET found the ring full), or the
 * mark is a new thread's on a dead one's kernel stack: counted lost. */
struct await {
	uint32_t tgid, vm;
	struct lmt_ev ev;
};

static void await_hold(struct tr *t, struct tvm *v, const struct lmt_ev *r)
{
	struct await *a = u64map_get(&t->awaits, r->naddr);
	int err;

	if (a) {
		t->aw_missed++;
	} else if (!(a = malloc(sizeof(*a))) ||
		   (u64map_put(&t->awaits, r->naddr, a, &err), err)) {
		free(a);
		t->bad_recs++; /* said, as a record that cannot be read */
		return;
	}
	a->tgid = v->p->pid;
	a->vm = v->id;
	a->ev = *r;
}

/* Awaiting event e completed by its return r: the address and, while
 * events are numbered, where lmt_await_renumbers says, the return's
 * number, as bpf/await.h does for an event it fills. */
static void await_complete(struct lmt_ev *e, const struct lmt_ev *r)
{
	e->naddr = r->naddr;
	if (r->seq && lmt_await_renumbers(e->kind, e->oaddr, r->naddr))
		e->seq = r->seq;
}

/* Is r, a return of awaiting event e's mark, e's own? A thread's return
 * sent before e was (a free's, which gives NULL, or an earlier call's
 * whose note was gone) bears the same mark; while events are numbered it
 * is numbered below e, or not at all if sent before numbering began. A
 * take can hold e while such a return is still in the ring. (Both sent
 * before numbering began cannot be told apart: takes begin with it.) */
static int await_own(const struct lmt_ev *e, const struct lmt_ev *r)
{
	return e->naddr == r->loc && (!e->seq || e->seq < r->seq);
}

/* A held batch of process tgid (merge_round's takes) whose last event
 * awaits r's mark: completed by r (a take's numbers stay its bound).
 * 1 if found. */
static int await_in_takes(struct tr *t, uint32_t tgid, const struct lmt_ev *r)
{
	struct tproc *p = proc_of(t, tgid);

	for (unsigned i = 0; p && i < p->nvm; i++)
		for (unsigned k = 0; k < p->vms[i]->ntakes; k++) {
			struct take *tk = &p->vms[i]->takes[k];
			struct lmt_ev *e = &tk->ev[tk->n - 1];

			if (await_own(e, r)) {
				await_complete(e, r);
				tk->max = e->seq > tk->max ? e->seq : tk->max;
				return 1;
			}
		}
	return 0;
}

/* The return r of process tgid's allocation of its mark (await_complete).
 * The allocation came first (bpf/await.h), or waits in a take; otherwise
 * it was not recorded, or its event was lost (counted by BPF). */
static void await_ret(struct tr *t, uint32_t tgid, const struct lmt_ev *r)
{
	struct await *a = u64map_get(&t->awaits, r->loc);
	struct tvm *v;

	if (!a || a->tgid != tgid || !await_own(&a->ev, r)) {
		(void)await_in_takes(t, tgid, r);
		return;
	}
	u64map_del(&t->awaits, r->loc);
	await_complete(&a->ev, r);
	if ((v = vm_get(t, a->tgid, a->vm)))
		ev_out(v, &a->ev);
	else
		t->aw_missed++;
	free(a);
}

/* Process tgid (0: every one) ended, or tracing did: its allocations
 * still awaiting their return are in flight (its threads were in the
 * allocator). */
static void awaits_end(struct tr *t, uint32_t tgid)
{
	for (size_t i = 0; i < t->awaits.cap; i++) {
		struct await *a = t->awaits.v[i];

		if (a && (!tgid || a->tgid == tgid)) {
			u64map_del(&t->awaits, t->awaits.k[i]);
			free(a);
			t->aw_left++;
		}
	}
}

/* -- Batches --------------------------------------------------------------- */

/* A source an event may have. */
static inline int ev_src_ok(uint8_t src)
{
	return src >= LMT_SRC_INTERNAL && src <= LMT_SRC_TRACE;
}

/* An allocation whose address its return will bring (await_hold). */
static inline int ev_awaits(uint8_t kind, uint64_t naddr)
{
	return kind != LMT_FREE && kind != LMT_RET && lmt_await_mark(naddr);
}

/* An event of process tgid's VM v (NULL: a return alone). */
static void batch_ev(struct tr *t, uint32_t tgid, struct tvm *v, const struct lmt_ev *r)
{
	if (r->kind == LMT_RET)
		await_ret(t, tgid, r);
	else if (!v || !ev_src_ok(r->src))
		t->bad_recs++;
	else if (ev_awaits(r->kind, r->naddr))
		await_hold(t, v, r);
	else
		ev_out(v, r);
}

/* Batch b's events (packed: struct lmt_ev's words on the wire), in
 * order: ev_next gives each, 0 after the last. One that does not unpack
 * ends it: the rest cannot be told, and count as one record that cannot
 * be read (said). b is 8-byte aligned (a ring record, a slot's buffer). */
struct evs {
	const __u64 *w;
	size_t left; /* words */
};

/* Batch b of sz bytes: its header into hd, its events (up to the
 * header's len where the record is longer) into it; -1 if it has no
 * header. */
static int batch_open(const uint8_t *b, size_t sz, struct lmt_batch *hd, struct evs *it)
{
	if (sz < sizeof(*hd))
		return -1;
	memcpy(hd, b, sizeof(*hd));
	if (hd->len >= sizeof(*hd) && hd->len < sz)
		sz = hd->len;
	*it = (struct evs){ .w = (const __u64 *)(const void *)(b + sizeof(*hd)),
			    .left = (sz - sizeof(*hd)) / 8 };
	return 0;
}

static int ev_next(struct tr *t, struct evs *it, struct lmt_ev *r)
{
	uint32_t n;

	if (!it->left)
		return 0;
	if (!(n = lmt_ev_unpack(it->w, it->left, r))) {
		t->bad_recs++;
		it->left = 0;
		return 0;
	}
	it->w += n;
	it->left -= n;
	return 1;
}

/* The rest of a batch's events, counted as records that cannot be read. */
static void evs_lost(struct tr *t, struct evs *it)
{
	struct lmt_ev r;

	while (ev_next(t, it, &r))
		t->bad_recs++;
}

/* VM v's batch where its stream is lone (out_lone), of process tgid:
 * each event from its words straight into the stream, without ev_next's
 * and ev_out's copies; one that needs more (a return, an address awaited,
 * a C function's names, a stack) or that does not check goes the general
 * way, which counts what cannot be read. */
static void lone_batch(struct tr *t, uint32_t tgid, struct tvm *v, struct evs *it)
{
	struct lmt_ev r;
	struct mp_event m;
	struct tloc at;

	while (it->left) {
		const __u64 *w = it->w, h = w[0];
		const __u8 kind = lmt_ev_kind(h), fl = lmt_ev_flags(h), src = lmt_ev_src(h);
		const __u32 n = lmt_ev_check(h, it->left);
		__u64 loc, oa, os, na, ns;

		if (!n || kind == LMT_RET || !ev_src_ok(src) || src == LMT_SRC_CFUNC ||
		    (fl & LMT_EV_STK) || ev_awaits(kind, w[lmt_ev_naddr_w(fl)])) {
			if (!ev_next(t, it, &r))
				return;
			batch_ev(t, tgid, v, &r);
			continue;
		}
		/* Field by field, as ev_event. */
		m.kind = kind;
		m.src = src;
		m.line = lmt_ev_line(h);
		lmt_ev_fields(w, kind, fl, &loc, &oa, &os, &na, &ns);
		m.loc = loc;
		m.oaddr = oa;
		m.osize = os;
		m.naddr = na;
		m.nsize = ns;
		it->w += n;
		it->left -= n;
		ev_where(v, &m, src, fl & ~LMT_EV_WIRE, &at);
		out_lone_event(v->out, &m);
	}
}

/* A slot's batch (struct lmt_slot), or returns alone (LMT_VM_NONE). */
static void on_batch(struct tr *t, const uint8_t *b, size_t sz)
{
	struct lmt_batch hd;
	struct lmt_ev r;
	struct tvm *v = NULL;
	struct evs it;

	if (batch_open(b, sz, &hd, &it))
		return;
	if (hd.vm != LMT_VM_NONE && !(v = vm_of(t, hd.tgid, hd.vm))) {
		const struct tproc *p = proc_of(t, hd.tgid);

		/* a VM refused over its process's cap: its events go with
		 * it (vm_refuse); a VM we cannot tell: lost, and said */
		if (!p || !vms_full(p))
			evs_lost(t, &it);
		return;
	}
	if (v && out_lone(v->out))
		lone_batch(t, hd.tgid, v, &it);
	else
		while (ev_next(t, &it, &r))
			batch_ev(t, hd.tgid, v, &r);
	if (v)
		out_at(v->out, NULL, 0);
}

/* lua_newstate returned in a process whose new VM user space must
 * register: a traced process's new allocator, or with --all a process not
 * seen before (stopped meanwhile). */
static void on_newvm(struct tr *t, const struct lmt_newvm *n)
{
	struct tproc *p = proc_of(t, n->tgid);
	struct vminfo v;
	struct pmaps m;
	char why[160];
	int fresh = 0, want;

	if (t->stopping)
		return;
	if (n->registered) { /* BPF did it: its allocator is probed */
		struct tvm *tv;

		if (p && !vm_get(t, n->tgid, n->id) && vms_full(p)) {
			vm_refuse(t, p, n->id, n->L, n->ud);
			return;
		}
		tv = p ? vm_known(t, p, n->id, n->L, n->g, n->ud, p->next_num) : NULL;
		if (tv && t->o->verbose)
			fprintf(stderr, "luamemtrace: PID %u VM %u: L 0x%" PRIx64
				" g 0x%" PRIx64 ", allocator 0x%" PRIx64 " ud 0x%"
				PRIx64 " (registered in BPF)\n", n->tgid, tv->num,
				(uint64_t)n->L, (uint64_t)n->g, (uint64_t)n->allocf,
				(uint64_t)n->ud);
		return;
	}
	if (!p) { /* --all: a process not seen before */
		p = proc_new(t, (pid_t)n->tgid, 1);
		if (!p) { /* gone already */
			if (n->left_out)
				forget_proc(t, n->tgid);
			return;
		}
		fresh = 1;
		want = proc_wanted(t, p);
		/* Left out by BPF, it ran on: listed as BPF told (a name
		 * changed since cannot bring back what went unseen). */
		if (n->left_out && want) {
			err1("warning: PID %d (%s) not traced: its name changed "
			     "after its first VM", (int)p->pid, p->comm);
			t->lost_vm++;
		}
		if (n->left_out || !want) {
			proc_ignore(t, p);
			return;
		}
	}
	if (p->ignored)
		return;
	/* -- COMMAND was bound before it executed its program: its memory
	 * is the program's from here (proc.h; stopped, our child). */
	if (!p->attached && p->pid == t->cmd_pid && proc_bind(p->pid, p->pidfd)) {
		err1("warning: PID %d: cannot open its memory: not traced", (int)p->pid);
		t->lost_vm++;
		return;
	}
	if (pmaps_load((pid_t)n->tgid, &m) == 0) {
		if (vm_at((pid_t)n->tgid, &m, t->o->variant, n->L, &v, why,
			  sizeof(why)) == 0) {
			int r = p->attached ? add_vm(t, p, &v) : proc_attach(t, p, &v, 1);
			if (r)
				t->lost_vm++;
			else if (!p->nvm || (p->nvm == 1 && !t->o->quiet && t->o->all))
				err1("tracing PID %d (%s)", (int)p->pid, p->comm);
		} else {
			err1("warning: new lua_State 0x%" PRIx64 " in PID %u not "
			     "traced: %s", (uint64_t)n->L, n->tgid, why);
			t->lost_vm++;
		}
		pmaps_free(&m);
	}
	if (fresh && !p->attached)
		proc_drop(t, p);
}

/* A traced process forked (-o DIR): the child, stopped, gets its streams
 * and probes before it runs. */
static void on_fork(struct tr *t, const struct lmt_fork *f)
{
	struct tproc *parent = proc_of(t, f->ptgid), *c;

	if (!t->dir || t->skel->rodata->fork_stop == LMT_FORK_STOP_NONE) {
		t->forks_skipped++;
		return;
	}
	if (!f->stopped || t->stopping || !parent) {
		forget_proc(t, f->tgid);
		return;
	}
	c = proc_new(t, (pid_t)f->tgid, 1);
	if (!c) {
		forget_proc(t, f->tgid);
		return;
	}
	if (proc_attach_child(t, parent, c)) {
		err1("warning: PID %d, a child of PID %d, not traced",
		     (int)f->tgid, (int)f->ptgid);
		t->lost_vm++;
		proc_end(t, c, "error");
		return;
	}
	/* It has not run: nothing of it to wait for before it continues;
	 * unless it stops itself (bpf/stop.h: stop_born), which it must have
	 * done before its stop is released. */
	c->nowait = t->skel->rodata->fork_stop == LMT_FORK_STOP_TASK;
	if (!t->o->quiet)
		err1("tracing PID %d (%s), a child of PID %d", (int)c->pid, c->comm,
		     (int)f->ptgid);
}

static void on_exec(struct tr *t, uint32_t tgid)
{
	struct tproc *p = proc_of(t, tgid);

	if (!p)
		return;
	if (!p->ignored && !t->o->quiet && !t->o->all)
		err1("PID %d executed a new program: tracing ended there",
		     (int)p->pid);
	proc_end(t, p, "exec");
}

/* -- Takes --------------------------------------------------------------- */

/* merge_round takes a slot's batch as it is, and converts it once the
 * records its VM sent before it are in: a VM's records are in the order it
 * sent them (one thread; a symbol record flushes the VM's batch first, a
 * stack record does not and may be numbered inside a take's range: it
 * only adds), but a record can still be in the ring when a batch sent
 * after it is taken from the slot. So a take waits for the first record
 * of its VM numbered after it (or its lua_close), for the ring to be read
 * up to where it was when taken (the end of a round), or for its slot to
 * be read by unbatch or slots_left; a record without a number (sent
 * before numbering began) precedes it. */
static void take_add(struct tr *t, struct tvm *v, const uint8_t *b, size_t sz)
{
	struct lmt_batch hd;
	struct lmt_ev r;
	struct take *nt;
	struct evs it;
	unsigned n = 0;

	if (batch_open(b, sz, &hd, &it) || !it.left)
		return;
	if (v->ntakes == v->takes_cap) {
		const unsigned cap = v->takes_cap ? 2 * v->takes_cap : 4;
		if (!(nt = realloc(v->takes, cap * sizeof(*nt))))
			goto oom;
		v->takes = nt;
		v->takes_cap = cap;
	}
	nt = &v->takes[v->ntakes];
	/* at most an event every 3 words */
	if (!(nt->ev = malloc((it.left / 3 + 1) * sizeof(*nt->ev))))
		goto oom;
	while (ev_next(t, &it, &r))
		nt->ev[n++] = r;
	if (!n) {
		free(nt->ev);
		return;
	}
	nt->n = n;
	nt->max = nt->ev[n - 1].seq;
	v->ntakes++;
	return;
oom: /* counted and said, as records that cannot be read */
	evs_lost(t, &it);
}

/* The VM's takes numbered below seq (all: UINT64_MAX), converted now, in
 * order: the records its VM sent before them are in. */
static void takes_below(struct tr *t, struct tvm *v, uint64_t seq)
{
	unsigned k = 0;

	for (; k < v->ntakes && v->takes[k].max < seq; k++) {
		for (unsigned i = 0; i < v->takes[k].n; i++)
			batch_ev(t, (uint32_t)v->p->pid, v, &v->takes[k].ev[i]);
		out_at(v->out, NULL, 0);
		free(v->takes[k].ev);
	}
	if (!k)
		return;
	memmove(v->takes, v->takes + k, (v->ntakes - k) * sizeof(*v->takes));
	v->ntakes -= k;
	if (!v->ntakes)
		takes_free(v);
}

void takes_free(struct tvm *v)
{
	for (unsigned k = 0; k < v->ntakes; k++)
		free(v->takes[k].ev);
	free(v->takes);
	v->takes = NULL;
	v->ntakes = v->takes_cap = 0;
}

/* A record of VM (tgid, id) numbered seq is about to be read (0: sent
 * before numbering began; UINT64_MAX: its lua_close): the takes it
 * follows go first. */
static void take_before(struct tr *t, uint32_t tgid, uint32_t id, uint64_t seq)
{
	struct tvm *v;

	if (seq && (v = vm_get(t, tgid, id)) && v->ntakes)
		takes_below(t, v, seq);
}

/* Every take of process tgid (0: all), converted. */
static void takes_done(struct tr *t, uint32_t tgid)
{
	for (struct tproc *p = t->procs; p; p = p->next)
		for (unsigned i = 0; (!tgid || (uint32_t)p->pid == tgid) && i < p->nvm; i++)
			if (p->vms[i]->ntakes)
				takes_below(t, p->vms[i], UINT64_MAX);
}

/* The number of a record that has one (0: none, or not one of a VM's;
 * a lua_close: UINT64_MAX, after all its VM sent). */
static uint64_t rec_seq(const void *data, size_t sz, uint32_t *tgid, uint32_t *vm)
{
	const uint8_t rec = *(const uint8_t *)data;

#define SEQ_OF(type, s) do { const type *r_ = data; if (sz < (s)) return 0; \
		*tgid = r_->tgid; *vm = r_->vm; return r_->seq; } while (0)
	switch (rec) {
	case LMT_REC_PROTO: SEQ_OF(struct lmt_proto, offsetof(struct lmt_proto, lineinfo));
	case LMT_REC_TRACE: SEQ_OF(struct lmt_trace, sizeof(struct lmt_trace));
	case LMT_REC_FORGET: SEQ_OF(struct lmt_forget, sizeof(struct lmt_forget));
	case LMT_REC_STACK: SEQ_OF(struct lmt_stack, offsetof(struct lmt_stack, f));
	case LMT_REC_BATCH: { /* its first event's */
		struct lmt_batch hd;
		struct lmt_ev e;
		struct evs it;

		if (batch_open(data, sz, &hd, &it) || !it.left ||
		    !lmt_ev_unpack(it.w, it.left, &e))
			return 0;
		*tgid = hd.tgid;
		*vm = hd.vm;
		return e.seq;
	}
	case LMT_REC_CLOSE: { /* after all its VM sent */
		const struct lmt_close *c = data;

		if (sz < sizeof(*c))
			return 0;
		*tgid = c->tgid;
		*vm = c->vm;
		return UINT64_MAX;
	}
	}
#undef SEQ_OF
	*tgid = 0;
	return 0;
}

/* --no-loss: an event record of the process taken out of the ring
 * (bpf/ring.h: ring_taken, which only we write). */
static void ring_taken_add(struct tr *t, const struct lmt_batch *b, size_t sz)
{
	const int fd = bpf_map__fd(t->skel->maps.ring_taken);
	uint64_t n = 0;

	bpf_map_lookup_elem(fd, &b->tgid, &n);
	n += sz;
	bpf_map_update_elem(fd, &b->tgid, &n, BPF_ANY);
}

int on_rec(void *ctx, void *data, size_t sz)
{
	struct tr *t = ctx;
	const uint8_t rec = *(const uint8_t *)data;

	if (t->takes) {
		uint32_t tgid = 0, vm = 0;
		const uint64_t seq = rec_seq(data, sz, &tgid, &vm);

		if (tgid)
			take_before(t, tgid, vm, seq);
	}
	switch (rec) {
	case LMT_REC_PROTO:
		if (sz >= offsetof(struct lmt_proto, lineinfo))
			on_proto(t, data, sz);
		break;
	case LMT_REC_BATCH:
		if (t->o->no_loss && sz >= sizeof(struct lmt_batch))
			ring_taken_add(t, data, sz);
		on_batch(t, data, sz);
		break;
	case LMT_REC_FORGET:
		if (sz >= sizeof(struct lmt_forget)) {
			const struct lmt_forget *f = data;
			struct tvm *v = vm_get(t, f->tgid, f->vm);
			if (v) {
				free(u64map_del(&v->lines, f->addr));
				free(u64map_del(&v->pnames, f->addr));
			}
		}
		break;
	case LMT_REC_STACK:
		if (sz >= offsetof(struct lmt_stack, f)) {
			const struct lmt_stack *k = data;
			struct tvm *v = vm_of(t, k->tgid, k->vm);

			if (v) {
				out_at(v->out, v, 0); /* its symbols: behind v's events */
				stk_def_rec(v, k, sz);
				out_at(v->out, NULL, 0);
			}
		}
		break;
	case LMT_REC_TRACE:
		if (sz >= sizeof(struct lmt_trace))
			on_trace(t, data);
		break;
	case LMT_REC_CLOSE:
		if (sz >= sizeof(struct lmt_close)) {
			const struct lmt_close *c = data;
			struct tvm *v = vm_get(t, c->tgid, c->vm);
			if (v)
				v->closed = 1;
			t->closed++;
		}
		break;
	case LMT_REC_NEWVM:
	case LMT_REC_FORK:
		/* Both may unbatch, which must wait until we are out of
		 * the ring's callback (in_cb). */
		t->in_cb = 1;
		if (rec == LMT_REC_NEWVM && sz >= sizeof(struct lmt_newvm))
			on_newvm(t, data);
		else if (rec == LMT_REC_FORK && sz >= sizeof(struct lmt_fork))
			on_fork(t, data);
		t->in_cb = 0;
		break;
	case LMT_REC_MAPPED:
		/* Read while the process is stopped (settle_stops). */
		if (sz >= sizeof(struct lmt_mapped))
			u64set_add(&t->rescan,
				   ((const struct lmt_mapped *)data)->tgid | 1ULL << 32);
		break;
	case LMT_REC_EXEC:
		if (sz >= sizeof(struct lmt_exec))
			on_exec(t, ((const struct lmt_exec *)data)->tgid);
		break;
	}
	return 0;
}

/* -- Draining ------------------------------------------------------------ */

void drain(struct tr *t)
{
	while (ring_buffer__consume(t->rb) > 0)
		;
}

/* A slot's batch, taken under its lock (keep: as a take, converted
 * later); -1 if a program holds it (a sleepable one may be preempted
 * there): try again later. */
static int slot_take(struct tr *t, struct lmt_slot *s, int keep)
{
	uint32_t free_ = 0;

	for (int tries = 0; !__atomic_compare_exchange_n(&s->busy, &free_, LMT_BUSY_USER, 0,
							 __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED);
	     tries++) {
		free_ = 0;
		if (tries == 1000)
			return -1;
		sched_yield();
	}
	if (s->len > sizeof(struct lmt_batch) && s->len < LMT_SBUF) {
		struct lmt_batch hd;
		struct tvm *v;

		memcpy(&hd, s->buf, sizeof(hd));
		if (keep && (v = vm_get(t, hd.tgid, hd.vm))) {
			take_add(t, v, s->buf, s->len);
			t->takes = 1;
		} else {
			take_before(t, hd.tgid, hd.vm, UINT64_MAX);
			on_batch(t, s->buf, s->len);
		}
	}
	s->len = sizeof(struct lmt_batch);
	s->nev = 0;
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	return 0;
}

/* Batching ends: VMs share a ud, and their events cannot be told apart
 * (struct lmt_slot). What the ring holds goes first, then each slot's
 * batch. Inside a ring buffer callback that waits for the main loop. */
void unbatch(struct tr *t)
{
	if (t->in_cb) {
		t->skel->bss->nobatch = 1;
		t->unbatch_req = 1;
		return;
	}
	t->unbatch_req = 0;
	t->skel->bss->nobatch = 1;
	drain(t);
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		struct lmt_slot *s = &t->slots[i];

		/* Each is taken, the next event of its VM at the latest. */
		if (__atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE))
			(void)slot_take(t, s, 0);
	}
}

/* -o FILE with several VMs (merge.h): the point up to which every number
 * the process gave is in. Numbers up to n were given when n is read; one
 * given to an event appended to a batch is in that batch or a ring record
 * by the time its slot's lock is free, one given to a record after its
 * reserve is in the ring (a prototype's or stack's, numbered just before
 * it is sent, may come late: merge.h). So: n, then each slot of the
 * process taken, then the ring read up to where its producer was then
 * (the takes converted on the way, or at the end: see take_add). What is
 * held up to n goes. Tried after each poll; a slot or record still being
 * written puts it off. */
void merge_round(struct tr *t)
{
	struct tout *o = t->one;
	const size_t pg = t->rb_pos_len / 2;
	uint64_t n, prod;

	if (!o || !o->mg || !merge_held(o->mg) || !o->p || !t->rb_pos)
		return;
	n = __atomic_load_n(&t->skel->data_seq->seqn, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		struct lmt_slot *s = &t->slots[i];

		if (__atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE) == (uint32_t)o->p->pid &&
		    slot_take(t, s, 1))
			return;
	}
	prod = __atomic_load_n((const uint64_t *)((const char *)t->rb_pos + pg), __ATOMIC_ACQUIRE);
	while (__atomic_load_n((const uint64_t *)t->rb_pos, __ATOMIC_ACQUIRE) < prod)
		if (ring_buffer__consume(t->rb) <= 0)
			return;
	takes_done(t, (uint32_t)o->p->pid);
	t->takes = 0;
	merge_release(o->mg, n);
}

void slots_left(struct tr *t, uint32_t tgid, int release)
{
	takes_done(t, tgid); /* older than what the slots hold */
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		struct lmt_slot *s = &t->slots[i];
		const uint32_t owner = __atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE);

		if (!owner || (tgid && owner != tgid))
			continue;
		if (s->len > sizeof(struct lmt_batch) && s->len < LMT_SBUF)
			on_batch(t, s->buf, s->len);
		s->len = sizeof(struct lmt_batch);
		s->nev = 0;
		if (release) { /* its process is gone: the slot is free again */
			__atomic_store_n(&s->live, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&s->tgid, 0, __ATOMIC_RELEASE);
		}
	}
	awaits_end(t, tgid);
}

/* -- Stops --------------------------------------------------------------- */

/* Is every thread of tgid stopped, or gone? A thread runs programs only
 * until it stops, so then every record the process sent before its stop
 * is in the ring. */
static int stopped(pid_t tgid)
{
	char st[512];
	DIR *d;
	struct dirent *de;
	int running = 0, fd = proc_openat(tgid, "task", O_RDONLY | O_DIRECTORY);

	/* its own /proc directory once bound (proc.h): gone, it is stopped */
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	while (!running && (de = readdir(d))) {
		char q[48];
		const char *c;

		if (de->d_name[0] == '.')
			continue;
		snprintf(q, sizeof(q), "%.32s/stat", de->d_name);
		if (proc_small_at(dirfd(d), q, st, sizeof(st)) < 0)
			continue;
		c = strrchr(st, ')'); /* the name may hold anything */
		running = c && c[1] == ' ' && !strchr("TtZXx", c[2]);
	}
	closedir(d);
	return !running;
}

/* Are the processes of the stops v all stopped (or children attached
 * before they ran, which need no wait)? */
static int all_stopped(struct tr *t, const struct held *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct tproc *p = proc_of(t, v[i].k.tgid);

		if (held_first(v, i) && !(p && p->nowait) && !stopped((pid_t)v[i].k.tgid))
			return 0;
	}
	return 1;
}

/* For tests (LMT_TEST_HOLD=MS): stops are held MS longer, before they are
 * handled, for a SIGCONT not ours, or another tracer's, to come
 * meanwhile. */
static void test_hold(void)
{
	const char *ms = getenv("LMT_TEST_HOLD");

	if (ms)
		usleep((useconds_t)atoi(ms) * 1000);
}

/* Processes sent a SIGCONT not ours while stopped for us (struct
 * lmt_hold, as guard_release marked it), but for a pacing stop
 * (--no-loss): said, once a process. */
static void check_held(struct tr *t, const struct held *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tproc *p = proc_of(t, v[i].k.tgid);
		size_t j;

		if (!v[i].h.conts || v[i].h.soft || (p && p->ran_held))
			continue;
		for (j = 0; j < i && !(v[j].k.tgid == v[i].k.tgid && v[j].h.conts &&
				       !v[j].h.soft); j++)
			;
		if (j < i)
			continue;
		if (p)
			p->ran_held = 1;
		err1("warning: PID %u ran while stopped for the tracer (a SIGCONT "
		     "not ours: another tracer's, or anyone's): what it did "
		     "meanwhile may be missing (a new VM's first allocations, "
		     "a module's names)", v[i].k.tgid);
		t->ran_held++;
	}
}

/* Stops the guardian ended for being held past the deadline (the tracer
 * stalled: user/guard.h): said, once a process and a round; the process
 * ran before we were done with it, so its stream is incomplete, but for
 * a pacing stop (--no-loss: what it loses is counted). */
static void said_expired(struct tr *t, const struct held *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tproc *p = proc_of(t, v[i].k.tgid);
		size_t j;

		if (v[i].h.state != LMT_STOP_EXPIRED)
			continue;
		for (j = 0; j < i && !(v[j].k.tgid == v[i].k.tgid &&
				       v[j].h.state == LMT_STOP_EXPIRED); j++)
			;
		if (j < i)
			continue;
		t->expired++;
		err1("warning: PID %u held stopped over %.1f s (the tracer "
		     "stalled): the guardian continued it%s", v[i].k.tgid,
		     LMT_HOLD_MAX_MS / 1e3,
		     v[i].h.soft ? "" : "; what it did meanwhile may be missing");
		if (!v[i].h.soft && !(p && p->ran_held)) {
			if (p)
				p->ran_held = 1;
			t->ran_held++;
		}
		if (t->o->no_loss) /* it may pause again */
			bpf_map__delete_elem(t->skel->maps.paused, &v[i].k.tgid,
					     sizeof(v[i].k.tgid), 0);
	}
}

/* Keeps of v the stops of processes in w (seen stopped): the others'
 * are for the next round. Their count. */
static size_t stops_of(struct held *v, size_t n, const struct held *w, size_t nw)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < nw && w[j].k.tgid != v[i].k.tgid; j++)
			;
		if (j < nw)
			v[k++] = v[i];
	}
	return k;
}

void settle_stops(struct tr *t, int block)
{
	struct held *v;
	size_t n = guard_expired(t->stops_fd, &v);

	check_held(t, v, n); /* a SIGCONT not ours came first: said as such */
	said_expired(t, v, n);
	free(v);
	n = guard_stops(t->stops_fd, &v);

	if (n && !all_stopped(t, v, n)) {
		if (!t->settling)
			t->settling = now();
		while (block && now() - t->settling < 2 && !all_stopped(t, v, n))
			usleep(200);
		if (now() - t->settling < 2 && !all_stopped(t, v, n)) {
			free(v);
			return; /* again after the next poll */
		}
	}
	t->settling = 0;
	if (n) {
		/* Stops of these processes made while we waited are in now,
		 * and none can come: release them all. */
		struct held *w = v;
		size_t nw = n;

		n = guard_stops(t->stops_fd, &v);
		n = stops_of(v, n, w, nw);
		free(w);
		test_hold();
		drain(t);
	}
	if (t->unbatch_req)
		unbatch(t);
	for (size_t i = 0; t->rescan.n && i < t->rescan.cap; i++) {
		struct tproc *p;
		if (t->rescan.k[i] && (p = proc_of(t, (uint32_t)t->rescan.k[i])))
			syms_scan(&p->syms);
	}
	if (t->rescan.n) {
		u64set_free(&t->rescan);
		memset(&t->rescan, 0, sizeof(t->rescan));
	}
	if (guard_release(t->stops_fd, v, n) && !t->peers_warned++)
		err1("warning: cannot look at other tracers' stops (%s): a "
		     "process two tracers stop may be continued before the "
		     "other is done with it", strerror(errno));
	check_held(t, v, n);
	said_expired(t, v, n); /* ended by the guardian as we released them */
	/* --no-loss: drained, they may pause again */
	for (size_t i = 0; t->o->no_loss && i < n; i++)
		bpf_map__delete_elem(t->skel->maps.paused, &v[i].k.tgid, sizeof(v[i].k.tgid), 0);
	free(v);
}
