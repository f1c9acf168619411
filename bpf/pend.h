/* An allocation between its entry and its return: attributed at entry,
 * parked per thread, completed with the new address at return. */
#ifndef LMT_BPF_PEND_H
#define LMT_BPF_PEND_H

/* An attributed allocation waits here for its return probe, which adds
 * the new address and batches or sends it. (Doing the attribution there
 * instead measured no cheaper, and put its code in two programs.)
 *
 * The return probe finds its entry through its thread without a helper
 * call: the probes' pt_regs are the thread's user registers at the top of
 * its kernel stack, so their address names the thread (read as a number
 * through a map slot). pends is two-way: a thread's entry is one of two,
 * from two parts of one hash, so two threads whose first entries collide
 * (for 8 threads in 4096 entries, ~0.7% of runs; then most of the
 * allocations of one of them were lost) each have one. An entry also
 * holds the stack pointer after the return (at the probe site rsp is the
 * function's entry rsp, probe.c; the return pops 8). chk covers the other
 * words and is 0 for a free entry, PEND_BUSY while one is written. An
 * entry is taken by
 * a compare-and-swap of chk from 0, or an exchange of it when it is the
 * thread's own or both are held, and consumed by a compare-and-swap of it,
 * so an allocation whose entry another thread took (both of that thread's
 * entries held by others, or a return that never came) is counted once, by
 * the taker, in missed; parked counts the entries in use, so what is left
 * at the end is in flight. */
#define PEND_BITS 12
#define PEND_N (1 << PEND_BITS)
#define PEND_SALT 0x70656e64696e6721ULL
#define PEND_BUSY 1
#define PEND_W 10 /* words under chk */

struct pend {
	__u64 thr; /* the thread's pt_regs address */
	__u64 sp;
	__u64 ud;
	__u64 hdr; /* the event's first word: kind, src, flags, line */
	__u64 loc, oaddr, osize, nsize;
	__u64 stk;
	__u64 where; /* where the entry found the VM (vm_where) */
	__u64 chk;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PEND_N);
	__type(key, __u32);
	__type(value, struct pend);
} pends SEC(".maps");

/* How many entries may be in use in way 1: while none, a park in way 0
 * need not look for its thread's stale entry there (pend_unstale). A hint
 * that may count too many (an entry another thread took in its way 0),
 * never too few. A section of its own: written only as way 1 is taken and
 * left, read by every park. */
__u64 pend_w1 SEC(".data.pend") = 0;

/* A thread's entry of way 0 or 1 (see struct pend). */
static __always_inline struct pend *pend_of(__u64 thr, const int way)
{
	__u64 h = dm_hash(thr >> 8, 0);
	__u32 k = way ? dm_slot2(h, PEND_BITS) : dm_slot(h, PEND_BITS);

	if (pend_crowd) /* a test's threads: one first entry, seconds apart */
		k = way ? 1 + (__u32)bpf_get_current_pid_tgid() % (PEND_N - 1) : 0;

	return bpf_map_lookup_elem(&pends, &k);
}

/* Takes entry p for thread thr if it is free, or thr's own (a return
 * that never came): 1, and its check word before in *old. 0 if another
 * thread holds it or is writing it. */
static __always_inline int pend_take(struct pend *p, __u64 thr, __u64 *old)
{
	*old = __sync_val_compare_and_swap(&p->chk, 0, PEND_BUSY);
	if (!*old)
		return 1;
	if (*old == PEND_BUSY || *(volatile __u64 *)&p->thr != thr)
		return 0;
	*old = __sync_lock_test_and_set(&p->chk, PEND_BUSY);
	return *old != PEND_BUSY;
}

/* Does entry p hold an allocation of thread thr? Its words into w, its
 * check word into *chk. */
static __always_inline int pend_mine(const struct pend *p, __u64 thr, __u64 *w,
				     __u64 *chk)
{
	return p && dm_load(p, w, PEND_W, PEND_SALT, 1, chk) && w[0] == thr;
}

/* Entry q, if it holds thread thr's allocation whose return never came,
 * freed and counted missed: a park in the thread's other way would
 * otherwise leave it for a later return at the same sp to take. */
static __always_inline void pend_unstale(struct ctx *c, struct pend *q, __u64 thr)
{
	__u64 w[PEND_W], chk;

	if (pend_mine(q, thr, w, &chk) &&
	    __sync_val_compare_and_swap(&q->chk, chk, 0) == chk) {
		c->st->missed++;
		c->st->parked--;
		__sync_fetch_and_add(&pend_w1, -1);
	}
}

/* The address of the probe's pt_regs as a number (see struct pend). */
static __always_inline __u64 thr_of(void *ctx, struct lmt_percpu *pc)
{
	*(void *volatile *)&pc->spill = ctx;
	return *(volatile __u64 *)&pc->spill;
}

/* Park an attributed allocation for alloc_return (see struct pend). */
static __always_inline void park(struct ctx *c, __u64 ud, const struct lmt_ev *ev)
{
	__u64 w[PEND_W], old;
	struct pend *p;

	w[0] = thr_of(c->regs, c->pc);
	w[1] = PT_REGS_SP((struct pt_regs *)c->regs) + 8;
	w[2] = ud;
	w[3] = *(const __u64 *)ev; /* kind, src, flags, line */
	w[4] = ev->loc;
	w[5] = ev->oaddr;
	w[6] = ev->osize;
	w[7] = ev->nsize;
	w[8] = ev->stk;
	w[9] = vm_where(c);
	p = pend_of(w[0], 0);
	if (!p) {
		c->st->missed++; /* cannot be: counted all the same */
		return;
	}
	if (!pend_take(p, w[0], &old)) {
		struct pend *q = pend_of(w[0], 1);

		if (q && pend_take(q, w[0], &old)) {
			p = q;
			if (!old)
				__sync_fetch_and_add(&pend_w1, 1);
		} else {
			/* Both held: way 0's holder loses its allocation. */
			old = __sync_lock_test_and_set(&p->chk, PEND_BUSY);
			if (old == PEND_BUSY) {
				c->st->missed++; /* being written: ours is lost */
				return;
			}
		}
	} else if (*(volatile __u64 *)&pend_w1) {
		pend_unstale(c, pend_of(w[0], 1), w[0]);
	}
	if (old)
		c->st->missed++; /* that allocation never came back */
	else
		c->st->parked++;
	dm_put(p, w, PEND_W, PEND_SALT, 1);
}

/* The return of this thread's parked allocation: its event, completed
 * with the new address, its ud and where its entry found its VM. 0, or
 * -1 if the entry is not this call's (a free's return, one probe for all
 * calls, finds none; another thread took it). */
static __always_inline int unpark(struct ctx *c, __u64 ret, struct lmt_ev *ev,
				  __u64 *ud, __u64 *where)
{
	__u64 w[PEND_W], thr = thr_of(c->regs, c->pc), chk;
	struct pend *p = pend_of(thr, 0);
	int way1 = 0;

	if (!pend_mine(p, thr, w, &chk)) {
		p = pend_of(thr, 1);
		if (!pend_mine(p, thr, w, &chk))
			return -1;
		way1 = 1;
	}
	if (w[1] != PT_REGS_SP((struct pt_regs *)c->regs) ||
	    __sync_val_compare_and_swap(&p->chk, chk, 0) != chk)
		return -1;
	c->st->parked--; /* summed over CPUs, what is left is in flight */
	if (way1)
		__sync_fetch_and_add(&pend_w1, -1);
	*(__u64 *)ev = w[3];
	ev->loc = w[4];
	ev->oaddr = w[5];
	ev->osize = w[6];
	ev->naddr = ret;
	ev->nsize = w[7];
	ev->stk = w[8];
	*ud = w[2];
	*where = w[9];
	return 0;
}

#endif
