/* Capture: the ring's and the slots' records, in the order each VM sent
 * them (capture/ring.h). t: the trace's capture (struct capture). */
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

#include "capture/ring.h"
#include "convert/events.h"
#include "util/knobs.h"

#include "format/memprof_write.h"
#include "target/proc.h"
#include "report/report.h"
#include "convert/lines.h"
#include "convert/jit.h"
#include "convert/luanames.h"
#include "target/caps.h"
#include "convert/callstacks.h"

/* A batch taken from a slot: its events, unpacked, and its last one's
 * number. */
struct take {
	struct lmt_ev *ev;
	unsigned n;
	uint64_t max;
};

/* -- Routing ------------------------------------------------------------- */

/* A traced VM (capture_ops.vm_get). */
static struct cap_vm *vm_get(struct capture *t, uint32_t tgid, uint32_t id)
{
	return t->ops->vm_get(t->ctx, tgid, id);
}

/* The VM a record names; one BPF registered whose first record this is
 * is made by the session (capture_ops.vm_new). */
static struct cap_vm *vm_of(struct capture *t, uint32_t tgid, uint32_t id)
{
	struct cap_vm *v = vm_get(t, tgid, id);

	return v ? v : t->ops->vm_new(t->ctx, tgid, id);
}

static void on_proto(struct capture *t, const struct lmt_proto *p, size_t sz)
{
	struct cap_vm *v = vm_of(t, p->tgid, p->vm);

	if (v)
		ev_proto(v->cv, p, sz);
	else
		t->bad_recs++;
}

static void on_trace(struct capture *t, const struct lmt_trace *r)
{
	struct cap_vm *v = vm_of(t, r->tgid, r->vm);

	if (v)
		ev_trace(v->cv, r);
	else
		t->bad_recs++;
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

static void await_hold(struct capture *t, struct cap_vm *v, const struct lmt_ev *r)
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
	a->tgid = v->tgid;
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
 * whose note was gone, or one its VM did not record yet) bears the same
 * mark; while events are numbered it is numbered below e, or not at all
 * if sent before numbering began. Both sent before numbering began
 * cannot be told apart here, nor need to be: e's batch then reaches us
 * through the ring behind such a return, or after the ring is drained
 * (unbatch). A take is the exception (await_in_takes). */
static int await_own(const struct lmt_ev *e, const struct lmt_ev *r)
{
	return e->naddr == r->loc && (!e->seq || e->seq < r->seq);
}

/* A held batch of VM v (merge_round's takes) whose last event awaits
 * return r's mark (arg): completed by r (a take's numbers stay its
 * bound). 1 if found. */
static int await_in_vm(void *arg, struct cap_vm *v)
{
	const struct lmt_ev *r = arg;

	for (unsigned k = 0; k < v->ntakes; k++) {
		struct take *tk = &v->takes[k];
		struct lmt_ev *e = &tk->ev[tk->n - 1];

		if (await_own(e, r)) {
			await_complete(e, r);
			tk->max = e->seq > tk->max ? e->seq : tk->max;
			return 1;
		}
	}
	return 0;
}

/* The same, for the VMs of live process tgid, in order. 1 if found.
 * Takes begin once events are numbered, but a take's batch may hold an
 * event packed before: its thread's return sent before its entry,
 * unnumbered, can still be in the ring, behind the take. Its own return,
 * which did not find it in its slot, came once the take had begun, so
 * numbered: an unnumbered return completes no take's event. (Or its
 * return gave up on a slot another program held 64 tries while numbering
 * was off: it stays awaiting, said in flight.) */
static int await_in_takes(struct capture *t, uint32_t tgid, const struct lmt_ev *r)
{
	if (!r->seq)
		return 0;
	return t->ops->each_vm(t->ctx, tgid, 1, await_in_vm, (void *)r);
}

/* The return r of process tgid's allocation of its mark (await_complete).
 * The allocation came first (bpf/await.h), or waits in a take; otherwise
 * it was not recorded, or its event was lost (counted by BPF). */
static void await_ret(struct capture *t, uint32_t tgid, const struct lmt_ev *r)
{
	struct await *a = u64map_get(&t->awaits, r->loc);
	struct cap_vm *v;

	if (!a || a->tgid != tgid || !await_own(&a->ev, r)) {
		(void)await_in_takes(t, tgid, r);
		return;
	}
	u64map_del(&t->awaits, r->loc);
	await_complete(&a->ev, r);
	if ((v = vm_get(t, a->tgid, a->vm)))
		ev_out(v->cv, &a->ev);
	else
		t->aw_missed++;
	free(a);
}

/* Process tgid (0: every one) ended, or tracing did: its allocations
 * still awaiting their return are in flight (its threads were in the
 * allocator). */
static void awaits_end(struct capture *t, uint32_t tgid)
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
static void batch_ev(struct capture *t, uint32_t tgid, struct cap_vm *v, const struct lmt_ev *r)
{
	if (r->kind == LMT_RET)
		await_ret(t, tgid, r);
	else if (!v || !ev_src_ok(r->src))
		t->bad_recs++;
	else if (ev_awaits(r->kind, r->naddr))
		await_hold(t, v, r);
	else
		ev_out(v->cv, r);
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

static int ev_next(struct capture *t, struct evs *it, struct lmt_ev *r)
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
static void evs_lost(struct capture *t, struct evs *it)
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
static void lone_batch(struct capture *t, uint32_t tgid, struct cap_vm *v, struct evs *it)
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
		ev_where(v->cv, &m, src, fl & ~LMT_EV_WIRE, &at);
		out_lone_event(v->cv->out, &m);
	}
}

/* A slot's batch (struct lmt_slot), or returns alone (LMT_VM_NONE). */
static void on_batch(struct capture *t, const uint8_t *b, size_t sz)
{
	struct lmt_batch hd;
	struct lmt_ev r;
	struct cap_vm *v = NULL;
	struct evs it;

	if (batch_open(b, sz, &hd, &it))
		return;
	if (hd.vm != LMT_VM_NONE && !(v = vm_of(t, hd.tgid, hd.vm))) {
		/* a VM refused over its process's cap: its events go with
		 * it (vm_refuse); a VM we cannot tell: lost, and said */
		if (!t->ops->vms_full(t->ctx, hd.tgid))
			evs_lost(t, &it);
		return;
	}
	if (v && out_lone(v->cv->out))
		lone_batch(t, hd.tgid, v, &it);
	else
		while (ev_next(t, &it, &r))
			batch_ev(t, hd.tgid, v, &r);
	if (v)
		out_at(v->cv->out, NULL, 0);
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
static void take_add(struct capture *t, struct cap_vm *v, const uint8_t *b, size_t sz)
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
static void takes_below(struct capture *t, struct cap_vm *v, uint64_t seq)
{
	unsigned k = 0;

	for (; k < v->ntakes && v->takes[k].max < seq; k++) {
		for (unsigned i = 0; i < v->takes[k].n; i++)
			batch_ev(t, v->tgid, v, &v->takes[k].ev[i]);
		out_at(v->cv->out, NULL, 0);
		free(v->takes[k].ev);
	}
	if (!k)
		return;
	memmove(v->takes, v->takes + k, (v->ntakes - k) * sizeof(*v->takes));
	v->ntakes -= k;
	if (!v->ntakes)
		takes_free(v);
}

void takes_free(struct cap_vm *v)
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
static void take_before(struct capture *t, uint32_t tgid, uint32_t id, uint64_t seq)
{
	struct cap_vm *v;

	if (seq && (v = vm_get(t, tgid, id)) && v->ntakes)
		takes_below(t, v, seq);
}

/* Every take of VM v, converted (arg: the capture). */
static int takes_all(void *arg, struct cap_vm *v)
{
	if (v->ntakes)
		takes_below(arg, v, UINT64_MAX);
	return 0;
}

/* Every take of process tgid (0: all), converted: the processes in the
 * order they were seen, each one's VMs in order. */
static void takes_done(struct capture *t, uint32_t tgid)
{
	(void)t->ops->each_vm(t->ctx, tgid, 0, takes_all, t);
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
static void ring_taken_add(struct capture *t, const struct lmt_batch *b, size_t sz)
{
	const int fd = bpf_map__fd(t->skel->maps.ring_taken);
	uint64_t n = 0;

	bpf_map_lookup_elem(fd, &b->tgid, &n);
	n += sz;
	bpf_map_update_elem(fd, &b->tgid, &n, BPF_ANY);
}

int on_rec(void *ctx, void *data, size_t sz)
{
	struct capture *t = ctx;
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
		if (t->no_loss && sz >= sizeof(struct lmt_batch))
			ring_taken_add(t, data, sz);
		on_batch(t, data, sz);
		break;
	case LMT_REC_FORGET:
		if (sz >= sizeof(struct lmt_forget)) {
			const struct lmt_forget *f = data;
			struct cap_vm *v = vm_get(t, f->tgid, f->vm);
			if (v) {
				free(u64map_del(&v->cv->lines, f->addr));
				free(u64map_del(&v->cv->pnames, f->addr));
			}
		}
		break;
	case LMT_REC_STACK:
		if (sz >= offsetof(struct lmt_stack, f)) {
			const struct lmt_stack *k = data;
			struct cap_vm *v = vm_of(t, k->tgid, k->vm);

			if (v) {
				out_at(v->cv->out, v->cv, 0); /* its symbols: behind v's events */
				stk_def_rec(v->cv, k, sz);
				out_at(v->cv->out, NULL, 0);
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
			struct cap_vm *v = vm_get(t, c->tgid, c->vm);
			if (v)
				v->closed = 1;
			t->closed++;
		}
		break;
	case LMT_REC_NEWVM:
		if (sz >= sizeof(struct lmt_newvm))
			t->ops->newvm(t->ctx, data);
		break;
	case LMT_REC_FORK:
		if (sz >= sizeof(struct lmt_fork))
			t->ops->fork(t->ctx, data);
		break;
	case LMT_REC_MAPPED:
		/* Read while the process is stopped (settle_stops). */
		if (sz >= sizeof(struct lmt_mapped))
			t->ops->mapped(t->ctx, ((const struct lmt_mapped *)data)->tgid);
		break;
	case LMT_REC_EXITING:
		/* its slots read before its stop is released (settle_stops) */
		if (sz >= sizeof(struct lmt_exiting))
			(void)u64set_add(&t->exiting, ((const struct lmt_exiting *)data)->tgid);
		break;
	case LMT_REC_EXEC:
		if (sz >= sizeof(struct lmt_exec))
			t->ops->exec(t->ctx, ((const struct lmt_exec *)data)->tgid);
		break;
	}
	return 0;
}

/* -- Draining ------------------------------------------------------------ */

void drain(struct capture *t)
{
	while (ring_buffer__consume(t->rb) > 0)
		;
}

/* A slot's batch, taken under its lock (keep: as a take, converted
 * later); -1 if a program holds it (a sleepable one may be preempted
 * there): try again later. */
static int slot_take(struct capture *t, struct lmt_slot *s, int keep)
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
		struct cap_vm *v;

		memcpy(&hd, s->buf, sizeof(hd));
		/* A VM not known yet (its first records still in the
		 * ring) is made now: converted at once, its batch would
		 * overtake them. */
		if (keep && (v = vm_of(t, hd.tgid, hd.vm))) {
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
void unbatch_request(struct capture *t)
{
	t->skel->bss->nobatch = 1;
	t->unbatch_req = 1;
}

void unbatch(struct capture *t)
{
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

void slots_exiting(struct capture *t)
{
	if (!t->exiting.n)
		return;
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		struct lmt_slot *s = &t->slots[i];
		const uint32_t owner = __atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE);

		/* its process is stopped: no program holds the lock long */
		if (owner && u64set_has(&t->exiting, owner))
			(void)slot_take(t, s, 0);
	}
	u64set_free(&t->exiting);
	memset(&t->exiting, 0, sizeof(t->exiting));
}

/* -o FILE with several VMs (streams/merge.h): the point up to which every number
 * the process gave is in. Numbers up to n were given when n is read; one
 * given to an event appended to a batch is in that batch or a ring record
 * by the time its slot's lock is free, one given to a record after its
 * reserve is in the ring (a prototype's or stack's, numbered just before
 * it is sent, may come late: streams/merge.h). So: n, then each slot of the
 * process taken, then the ring read up to where its producer was then
 * (the takes converted on the way, or at the end: see take_add). What is
 * held up to n goes. Tried after each poll; a slot or record still being
 * written puts it off. */
void merge_round(struct capture *t, struct tout *o)
{
	const size_t pg = t->rb_pos_len / 2;
	uint64_t n, prod;

	if (!o || !o->mg || !merge_held(o->mg) || !o->owner || !t->rb_pos)
		return;
	n = __atomic_load_n(&t->skel->data_seq->seqn, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		struct lmt_slot *s = &t->slots[i];

		if (__atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE) == (uint32_t)o->who.pid &&
		    slot_take(t, s, 1))
			return;
	}
	prod = __atomic_load_n((const uint64_t *)((const char *)t->rb_pos + pg), __ATOMIC_ACQUIRE);
	while (__atomic_load_n((const uint64_t *)t->rb_pos, __ATOMIC_ACQUIRE) < prod)
		if (ring_buffer__consume(t->rb) <= 0)
			return;
	takes_done(t, (uint32_t)o->who.pid);
	t->takes = 0;
	merge_release(o->mg, n);
}

void slots_left(struct capture *t, uint32_t tgid, int release)
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
