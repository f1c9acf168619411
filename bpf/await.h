/* An allocation between its entry and its return: sent at its entry, its
 * address written in at its return. */
#ifndef LMT_BPF_AWAIT_H
#define LMT_BPF_AWAIT_H

/* An allocation leaves at its entry as a free does, its naddr the
 * thread's mark (lmt_await_mark), and the CPU notes where it went
 * (lmt_percpu's await): its process and slot, its offset in the batch,
 * its VM, and sp as its return will see it (at the probe site rsp is the
 * function's entry rsp, user/probes/placement.c; the return pops 8). Every call
 * leaves a note, one with nothing to complete for an allocation not
 * recorded (AW_NONE) or a free (AW_FREE), so that no return takes an
 * older note for its own. The return, most often on the same CPU with
 * nothing between, finds its note, takes the slot's lock and, if the
 * event at that offset still bears its mark, writes the address over it
 * (its word lmt_ev_naddr_w); while events are numbered (several VMs in one
 * stream) it numbers the event again where lmt_await_renumbers says (an
 * event packed before numbering began has no word for a number: its
 * address then goes alone, numbered, as below). No table by thread:
 * its entry's compare-and-swaps, ten words and their check cost more
 * than the rest of the event's path (docs/costs.md).
 *
 * Without its note (the thread moved to another CPU, or another thread's
 * allocation came between on this one), or where the event is not at the
 * note's place, the return looks for its mark at the end of each of its
 * process's batches: a VM's allocator runs on one thread at a time, so its
 * event is its batch's last. It clears the notes of its mark that other
 * CPUs still hold: one left where it entered would mislead a later
 * return of its thread there. Where its event has left its batch (sent
 * with it, taken by user space) or went alone (the VM has no slot, VMs
 * share a ud), the return sends an LMT_RET event alone, which reaches
 * user space after the allocation, and user space completes it
 * (user/capture/ring.c: awaits). An allocation whose return never came
 * (tracing stopped between, its thread died in the allocator) stays
 * awaiting: user space counts it in flight.
 *
 * Per-CPU notes assume what the per-CPU scratch does: a program run is
 * not preempted by another on its CPU (docs/limits.md). Even so a note is
 * read back to front, its mark last: a note written between fails the
 * check (its sp is another thread's), and the return goes the long way. */

#define AW_BATCH (1ULL << 40) /* note: the event went into the batch */
#define AW_NONE (1ULL << 41)  /* note: nothing to complete */
#define AW_FREE (1ULL << 42)  /* note: a free's, whose return (where its
			       * path has one) gives NULL; where it has none,
			       * the note stays: an allocation's return that
			       * finds it takes the long way */
_Static_assert(LMT_NSLOT <= 256, "a note keeps a slot in bits 32-39");

/* The address of the probe's pt_regs as a number: the thread's mark
 * without bit 0. Through a map slot: the verifier lets a pointer become
 * a number no other way. */
static __always_inline __u64 await_mark(struct ctx *c)
{
	*(void *volatile *)&c->pc->spill = c->regs;
	return *(volatile __u64 *)&c->pc->spill | 1;
}

/* The note of this CPU's last call: sent (SENT_*) at off, or nothing to
 * complete (SENT_LOST, with what: AW_NONE or AW_FREE). sp first, the
 * mark last (see await_arrive). */
static __always_inline void await_note(struct ctx *c, __u64 mark, int sent, __u32 off,
				       __u64 what)
{
	volatile __u64 *n = c->pc->await;

	n[1] = PT_REGS_SP((struct pt_regs *)c->regs) + 8;
	n[2] = sent == SENT_LOST ? what :
	       c->tgid | (__u64)c->si << 32 | (sent == SENT_BATCH ? AW_BATCH : 0);
	n[3] = off | (__u64)c->vmid << 32;
	n[0] = mark;
}

/* A call whose return has nothing to complete: AW_NONE or AW_FREE. */
static __always_inline void await_none(struct ctx *c, __u64 what)
{
	await_note(c, await_mark(c), SENT_LOST, 0, what);
}

/* The slot's lock for a return: a program that holds it (a flush, VMs
 * sharing a ud) holds it for a few stores or one ring buffer output, and
 * an address sent alone meanwhile could overtake its event; user space,
 * which takes the batch, is not waited for. 0, or the holder. */
static __always_inline __u32 await_lock(struct lmt_slot *sl)
{
	__u32 h = slot_lock(sl);

	for (int i = 0; i < 64 && h == LMT_BUSY_BPF; i++)
		h = slot_lock(sl);
	return h;
}

/* Writes ret over the mark of the event at off in slot sl, if it is
 * there: 1, else 0. (LMT_TEST_AWAIT=2: the batch is sent instead, so
 * that the return finds its event gone, as it may.) */
static __always_inline int await_fill(struct ctx *c, struct lmt_slot *sl, __u32 off,
				      __u64 mark, __u64 ret)
{
	__u64 *w, oaddr;
	__u32 na, nw;
	__u8 kind, fl;
	int done = 0;

	if (await_lock(sl))
		return 0;
	off &= LMT_SBUF - 8;
	w = (__u64 *)(sl->buf + off);
	kind = lmt_ev_kind(w[0]);
	fl = lmt_ev_flags(w[0]);
	nw = lmt_ev_nw(w[0]);
	na = lmt_ev_naddr_w(fl);
	if (off + 8 * nw <= sl->len && kind != LMT_FREE && w[na] == mark) {
		if (await_test == 2) {
			flush_locked(c, sl);
		} else {
			oaddr = kind == LMT_REALLOC ? w[lmt_ev_oaddr_w(kind, fl) & 7] : 0;
			if (multi && lmt_await_renumbers(kind, oaddr, ret)) {
				/* Packed before numbering began, it has no
				 * word for one: its batch goes now, and its
				 * address after it, alone and numbered
				 * (await_search), as with LMT_TEST_AWAIT=2. */
				if (!(fl & LMT_EV_SEQ)) {
					flush_locked(c, sl);
					goto out;
				}
				w[(nw - 1) & 7] = seq_next(); /* the last word */
			}
			w[na] = ret;
			done = 1;
		}
	}
out:
	slot_unlock(sl);
	return done;
}

struct await_scan {
	struct ctx *c;
	__u64 mark, ret;
	__u32 tgid;
	int done;
};

/* Slot i's last event, if it is its process's and bears the mark:
 * filled. Looked at without the lock, which is taken only for one's own
 * event: a search must not make another thread's return find its slot
 * taken. */
static long await_scan_one(__u32 i, void *arg)
{
	struct await_scan *a = arg;
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &i);
	__u64 *w;
	__u32 off;

	if (!sl || sl->tgid != a->tgid)
		return 0;
	off = *(volatile __u32 *)&sl->last;
	if (off < sizeof(struct lmt_batch) || off >= *(volatile __u32 *)&sl->len)
		return 0;
	off &= LMT_SBUF - 8;
	w = (__u64 *)(sl->buf + off);
	if (w[lmt_ev_naddr_w(lmt_ev_flags(w[0]))] != a->mark)
		return 0;
	a->done = await_fill(a->c, sl, off, a->mark, a->ret);
	return 1;
}

/* CPU i's note, if it bears the mark: cleared. */
static long await_clear_one(__u32 i, void *arg)
{
	__u32 zero = 0;
	struct lmt_percpu *pc = bpf_map_lookup_percpu_elem(&stats, &zero, i);

	if (pc && pc->await[0] == *(__u64 *)arg)
		__sync_val_compare_and_swap(&pc->await[0], *(__u64 *)arg, 0);
	return 0;
}

/* The address alone (an LMT_RET event), for process tgid's VM vmid
 * (LMT_VM_NONE: not known), behind the event it completes. */
static __always_inline void await_alone(struct ctx *c, __u32 tgid, __u32 vmid,
					__u64 mark, __u64 ret)
{
	c->tgid = tgid;
	c->vmid = vmid;
	c->sl = NULL;
	send(c, &(struct lmt_ev){ .kind = LMT_RET, .src = LMT_SRC_INTERNAL, .loc = mark,
				  .naddr = ret });
}

/* The long way (see above): the batches, then the address alone; clear:
 * the notes of the mark on other CPUs first (none where this CPU's was
 * the return's own). */
static __always_inline void await_search(struct ctx *c, __u64 mark, __u64 ret,
					 const int clear)
{
	struct await_scan a = { .c = c, .mark = mark, .ret = ret, .tgid = cur_tgid(c) };

	if (clear)
		bpf_loop(ncpus, await_clear_one, &a.mark, 0);
	bpf_loop(LMT_NSLOT, await_scan_one, &a, 0);
	if (!a.done)
		await_alone(c, a.tgid, LMT_VM_NONE, mark, ret);
}

/* An allocation's return (see above). The note is read back to front:
 * its place, then sp, then the mark (await_note writes sp first and the
 * mark last). */
static __always_inline void await_arrive(struct ctx *c, __u64 ret)
{
	const __u64 mark = await_mark(c);
	volatile __u64 *n = c->pc->await;
	struct lmt_slot *sl;
	__u64 w2 = n[2], w3 = n[3];
	__u32 si;

	if (n[1] != PT_REGS_SP((struct pt_regs *)c->regs) || n[0] != mark || await_test ||
	    (ret && (w2 & AW_FREE))) {
		await_search(c, mark, ret, 1);
		return;
	}
	n[0] = 0;
	if (w2 & (AW_NONE | AW_FREE))
		return;
	if (w2 & AW_BATCH) {
		si = (__u32)(w2 >> 32) & (LMT_NSLOT - 1);
		sl = bpf_map_lookup_elem(&slots, &si);
		if (sl && await_fill(c, sl, (__u32)w3, mark, ret))
			return;
		await_search(c, mark, ret, 0);
		return;
	}
	/* It went alone, ahead of this. */
	await_alone(c, (__u32)w2, (__u32)(w3 >> 32), mark, ret);
}

#endif
