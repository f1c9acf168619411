/* An allocation between its entry and its return: sent at its entry, its
 * address written in at its return. */
#ifndef LMT_BPF_AWAIT_H
#define LMT_BPF_AWAIT_H

/* An allocation leaves at its entry as a free does, its naddr the
 * thread's mark (lmt_await_mark), and the CPU notes where it went
 * (lmt_percpu's await): its process and slot, its offset in the batch,
 * its VM, and sp as its return will see it (at the probe site rsp is the
 * function's entry rsp, user/probe.c; the return pops 8). The return,
 * most often on the same CPU with nothing between, finds the note, takes
 * the slot's lock and, if the event at that offset still bears its mark,
 * writes the address over it. No table by thread: its entry's
 * compare-and-swaps, ten words and their check cost more than the rest
 * of the event's path (docs/costs.md).
 *
 * Without the note (the thread moved to another CPU, or another thread's
 * allocation came between on this one) the return looks for its mark at
 * the end of every batch: a VM's allocator runs on one thread at a time,
 * so its event is its batch's last. Where its event has left its batch
 * (sent with it, or taken by user space), or went alone (the VM has no
 * slot, or VMs share a ud), the return sends an LMT_RET event bearing the
 * mark, which user space meets after the allocation, and completes it
 * (user/consume.c: awaits). An allocation whose return never came
 * (tracing stopped between, the thread died in the allocator) stays
 * awaiting: user space counts it in flight. */

#define AW_BATCH (1ULL << 40) /* note: the event went into the batch */
#define AW_NONE (1ULL << 41)  /* note: nothing to complete (not traced, lost) */

/* The address of the probe's pt_regs as a number: the thread's mark
 * without bit 0. Through a map slot: the verifier lets a pointer become
 * a number no other way. */
static __always_inline __u64 await_mark(struct ctx *c)
{
	*(void *volatile *)&c->pc->spill = c->regs;
	return *(volatile __u64 *)&c->pc->spill | 1;
}

/* The note of this CPU's last allocation: sent (SENT_*, or SENT_LOST for
 * one not traced) at off. The mark goes last; a return reads it first. */
static __always_inline void await_note(struct ctx *c, __u64 mark, int sent, __u32 off)
{
	__u64 *n = c->pc->await;

	n[1] = PT_REGS_SP((struct pt_regs *)c->regs) + 8;
	n[2] = sent == SENT_LOST ? AW_NONE :
	       c->tgid | (__u64)c->si << 32 | (sent == SENT_BATCH ? AW_BATCH : 0);
	n[3] = off | (__u64)c->vmid << 32;
	asm volatile("" ::: "memory");
	n[0] = mark;
}

/* An allocation the entry does not record: its return has nothing to
 * complete. */
static __always_inline void await_none(struct ctx *c, __u64 nsize)
{
	if (nsize)
		await_note(c, await_mark(c), SENT_LOST, 0);
}

/* Writes ret over the mark of the event at off in slot sl, if it is
 * there: 1, else 0. (LMT_TEST_AWAIT=2: the batch is sent instead, so
 * that the return finds its event gone, as it may.) */
static __always_inline int await_fill(struct ctx *c, struct lmt_slot *sl, __u32 off,
				      __u64 mark, __u64 ret)
{
	struct lmt_ev *e;
	int done = 0;

	if (slot_lock(sl))
		return 0;
	off &= LMT_SBUF - 8;
	e = (struct lmt_ev *)(sl->buf + off);
	if (off + sizeof(*e) <= sl->len && e->naddr == mark) {
		if (await_test == 2) {
			flush_locked(c, sl);
		} else {
			e->naddr = ret;
			done = 1;
		}
	}
	slot_unlock(sl);
	return done;
}

struct await_scan {
	struct ctx *c;
	__u64 mark, ret;
	int done;
};

/* Slot i's last event, if it bears the mark: filled. Looked at without
 * the lock, which is taken only for one's own event: a search must not
 * make another thread's return find its slot taken. */
static long await_scan_one(__u32 i, void *arg)
{
	struct await_scan *a = arg;
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &i);
	__u32 off;

	if (!sl || !sl->tgid)
		return 0;
	off = *(volatile __u32 *)&sl->len - sizeof(struct lmt_ev);
	if (off < sizeof(struct lmt_batch) || off > LMT_SBUF - sizeof(struct lmt_ev))
		return 0;
	off &= LMT_SBUF - 8;
	if (((struct lmt_ev *)(sl->buf + off))->naddr != a->mark)
		return 0;
	a->done = await_fill(a->c, sl, off, a->mark, a->ret);
	return 1;
}

/* An allocation's return (see above). */
static __always_inline void await_arrive(struct ctx *c, __u64 ret)
{
	const __u64 mark = await_mark(c), *n = c->pc->await;
	struct lmt_ev r = { .kind = LMT_RET, .src = LMT_SRC_INTERNAL, .loc = mark,
			    .naddr = ret };
	struct lmt_slot *sl;
	__u64 w2, w3;
	__u32 si;

	if (n[0] != mark || n[1] != PT_REGS_SP((struct pt_regs *)c->regs) ||
	    await_test) {
		struct await_scan a = { .c = c, .mark = mark, .ret = ret };

		/* A free's return (where its path has the allocation's
		 * probe) gives NULL: nothing to complete. */
		if (!ret)
			return;
		bpf_loop(LMT_NSLOT, await_scan_one, &a, 0);
		if (a.done)
			return;
		c->tgid = cur_tgid(c);
		c->vmid = LMT_VM_NONE;
		c->sl = NULL;
		emit(c, &r);
		return;
	}
	w2 = n[2];
	w3 = n[3];
	c->pc->await[0] = 0;
	if (w2 & AW_NONE)
		return;
	c->tgid = (__u32)w2;
	c->vmid = (__u32)(w3 >> 32);
	c->sl = NULL;
	if (w2 & AW_BATCH) {
		si = (__u32)(w2 >> 32) & (LMT_NSLOT - 1);
		sl = bpf_map_lookup_elem(&slots, &si);
		if (!sl)
			return;
		if (await_fill(c, sl, (__u32)w3, mark, ret))
			return;
		/* It left: its return follows it in the batch. */
		if (!nobatch && sl->live && sl->tgid == c->tgid)
			c->sl = sl;
	}
	send(c, &r);
}

#endif
