/* Which VM an allocator call belongs to, and how its events leave: a
 * VM's batch in its slot (struct lmt_slot), sent as one ring buffer
 * record, or a record of its own. */
#ifndef LMT_BPF_RING_H
#define LMT_BPF_RING_H

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lmt_vm_key);
	__type(value, struct lmt_vm);
} vms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LMT_NSLOT);
	__type(key, __u32);
	__type(value, struct lmt_slot);
} slots SEC(".maps");

/* --no-loss: bytes of event records each process has put in the ring
 * (BPF adds them) and user space has taken out (it alone writes
 * ring_taken: user/capture/ring.c). Their difference is what the process holds
 * in the ring now: pressure() pauses the process that fills the ring,
 * not every process that finds it full. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} ring_sent SEC(".maps"), ring_taken SEC(".maps");

static __always_inline void ring_sent_add(__u32 tgid, __u64 len)
{
	__u64 *v, zero = 0;

	if (!no_loss)
		return;
	v = bpf_map_lookup_elem(&ring_sent, &tgid);
	if (!v) {
		bpf_map_update_elem(&ring_sent, &tgid, &zero, BPF_NOEXIST);
		if (!(v = bpf_map_lookup_elem(&ring_sent, &tgid)))
			return; /* full: it holds nothing, as far as we know */
	}
	__sync_fetch_and_add(v, len);
}

/* What tgid holds in the ring (bytes of its event records unread). */
static __always_inline __u64 ring_held(__u32 tgid)
{
	__u64 *s = bpf_map_lookup_elem(&ring_sent, &tgid);
	__u64 *tk = bpf_map_lookup_elem(&ring_taken, &tgid);
	__u64 sent, taken;

	if (!s)
		return 0;
	sent = *s;
	taken = tk ? *tk : 0;
	return sent > taken ? sent - taken : 0;
}

static __always_inline __u64 wake_flags(struct ctx *c, __u64 bytes)
{
	c->pc->unwoken += bytes;
	if (c->pc->unwoken < wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	c->pc->unwoken = 0;
	return BPF_RB_FORCE_WAKEUP;
}

/* The slot's lock (struct lmt_slot), held for a few stores or one
 * ring buffer output: LMT_BUSY_BPF by a program, LMT_BUSY_USER by user
 * space taking the batch. Who finds it taken does not wait: sends on its
 * own. 0, or the holder. */
static __always_inline __u32 slot_lock(struct lmt_slot *sl)
{
	return __sync_val_compare_and_swap(&sl->busy, 0, LMT_BUSY_BPF);
}

static __always_inline void slot_unlock(struct lmt_slot *sl)
{
	asm volatile("" ::: "memory");
	sl->busy = 0;
}

/* Send the slot's batch, if any, as one ring buffer record. Lock held. */
static __always_inline void flush_locked(struct ctx *c, struct lmt_slot *sl)
{
	__u64 len = sl->len, n;

	if (len <= sizeof(struct lmt_batch))
		return;
	BOUND(len, 0xfff); /* LMT_SBUF - 1 */
	n = sl->nev;
	if (ab_leaves(LMT_AB_W_RING) ||
	    bpf_ringbuf_output(&rb, sl->buf, len, wake_flags(c, len))) {
		c->st->lost += n;
	} else {
		c->st->events += n;
		c->st->ev_recs++;
		ring_sent_add(sl->tgid, len);
	}
	sl->len = sizeof(struct lmt_batch);
	sl->nev = 0;
}

/* The same, taking the lock; a busy slot is being sent by its holder. */
static __always_inline void flush_slot(struct ctx *c, struct lmt_slot *sl)
{
	if (sl->len <= sizeof(struct lmt_batch) || slot_lock(sl))
		return;
	flush_locked(c, sl);
	slot_unlock(sl);
}

/* The VM's batch, before a record that must not overtake it. */
static __always_inline void flush(struct ctx *c)
{
	if (c->sl)
		flush_slot(c, c->sl);
}

/* Batching ends (VMs share a ud): every batch goes now, ahead of any
 * event sent on its own. */
static long unbatch_one(__u32 i, void *arg)
{
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &i);

	if (sl)
		flush_slot(arg, sl);
	return 0;
}

static __always_inline void unbatch(struct ctx *c)
{
	nobatch = 1;
	bpf_loop(LMT_NSLOT, unbatch_one, c, 0);
}

/* Append the event to slot sl's batch, at *off; 0, or who holds the
 * slot. */
static __always_inline __u32 append(struct ctx *c, struct lmt_slot *sl,
				    const struct lmt_ev *ev, __u32 *offp)
{
	__u32 off, holder;

	if ((holder = slot_lock(sl)))
		return holder;
	if (sl->len > LMT_SBUF - 1 - LMT_EV_WMAX * 8)
		flush_locked(c, sl);
	/* Offsets are multiples of 8 (the header, then events of whole
	 * words): stored by words, not bytes. Numbered under the lock, so
	 * a batch's numbers rise, and a number taken is in the batch. */
	off = sl->len & (LMT_SBUF - 8);
	sl->len = off + 8 * lmt_ev_pack((__u64 *)(sl->buf + off), ev, seq_next());
	sl->last = off;
	sl->nev++;
	*offp = off;
	slot_unlock(sl);
	return 0;
}

/* The event as a record of its own: a batch of one. 0, or -1 if lost
 * (counted). */
static __always_inline int emit(struct ctx *c, const struct lmt_ev *ev)
{
	struct {
		struct lmt_batch h;
		__u64 w[LMT_EV_WMAX];
	} *b = bpf_ringbuf_reserve(&rb, sizeof(*b), 0);

	if (!b) {
		/* an address: its allocation is counted, in flight or lost
		 * (user/capture/ring.c: awaits) */
		c->st->lost += ev->kind != LMT_RET;
		return -1;
	}
	b->h.rec = LMT_REC_BATCH;
	b->h.tgid = c->tgid;
	b->h.vm = c->vmid;
	/* Numbered once its record is reserved: a number taken is in the
	 * ring by then (user/streams/merge.c). */
	b->h.len = sizeof(b->h) + 8 * lmt_ev_pack(b->w, ev, seq_next());
	bpf_ringbuf_submit(b, wake_flags(c, 8 + sizeof(*b)));
	ring_sent_add(c->tgid, sizeof(*b));
	c->st->events += ev->kind != LMT_RET; /* an address, not an event */
	c->st->ev_recs++;
	return 0;
}

/* The slot of (tgid, ud), if it has one (struct lmt_slot). */
static __always_inline struct lmt_slot *slot_find(__u32 tgid, __u64 ud, __u32 *si)
{
	struct lmt_slot *sl;

	*si = lmt_slot_of(ud);
	sl = bpf_map_lookup_elem(&slots, si);
	if (sl && sl->ud == ud && sl->tgid == tgid)
		return sl;
	if (!sl || !sl->shared)
		return NULL;
	*si = lmt_slot2_of(tgid, ud);
	sl = bpf_map_lookup_elem(&slots, si);
	return sl && sl->ud == ud && sl->tgid == tgid ? sl : NULL;
}

/* The VM in slot sl, found for this run (c->si, c->tgid set). */
static __always_inline const struct lmt_vm *vm_in(struct ctx *c, struct lmt_slot *sl)
{
	if (!nobatch)
		c->sl = sl;
	else /* No batching: what is batched goes first. */
		flush_slot(c, sl);
	c->vmid = sl->vm.id;
	return &sl->vm;
}

/* The VM of ud in this process: in its slot (c->sl set while batching),
 * or in vms. Its ud's slot names the process unless it is shared. */
static __always_inline const struct lmt_vm *vm_of(struct ctx *c, __u64 ud)
{
	struct lmt_slot *sl;
	const struct lmt_vm *vm;

	c->si = lmt_slot_of(ud);
	sl = bpf_map_lookup_elem(&slots, &c->si);
	if (sl && sl->live && sl->ud == ud) {
		c->tgid = sl->tgid;
		/* A link with no PID (shl_on) runs in processes not traced
		 * too: a fork child not followed has its parent's ud. */
		if (sl->shared || shl_on) {
			c->tgid = cur_tgid(c);
			if (c->tgid != sl->tgid) {
				if (!sl->shared)
					goto map;
				c->si = lmt_slot2_of(c->tgid, ud);
				sl = bpf_map_lookup_elem(&slots, &c->si);
				if (!sl || !sl->live || sl->ud != ud ||
				    sl->tgid != c->tgid)
					goto map;
			}
		}
		return vm_in(c, sl);
	}
	c->tgid = cur_tgid(c);
map:
	{
		struct lmt_vm_key k = { .tgid = c->tgid, .ud = ud };

		vm = bpf_map_lookup_elem(&vms, &k);
		if (!vm) {
			c->st->unknown_vm++;
			return NULL;
		}
		c->vmid = vm->id;
		return vm;
	}
}

/* --no-loss: processes stopped for the ring's sake, until user space has
 * drained it and continued them (it deletes their entry then). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} paused SEC(".maps");

/* --no-loss: the ring over half full stops the producing process if it
 * holds a quarter of what is unread or more (the one that fills it; one
 * sending a little meanwhile goes on); over three quarters full, any
 * producing process. Once until it is continued (stop.h: the stops map,
 * the guardian). Its other threads may add a few events meanwhile: a
 * quarter of the ring is left for them. */
static __always_inline void pressure(struct ctx *c)
{
	__u64 avail, size;
	__u32 one = 1;

	if (!no_loss)
		return;
	avail = bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA);
	size = bpf_ringbuf_query(&rb, BPF_RB_RING_SIZE);
	if (avail * 2 < size ||
	    (avail * 4 < size * 3 && ring_held(c->tgid) * 4 < avail) ||
	    bpf_map_update_elem(&paused, &c->tgid, &one, BPF_NOEXIST))
		return;
	if (stop_process(c->tgid, 1))
		c->st->paused++;
	else
		bpf_map_delete_elem(&paused, &c->tgid);
}

/* Where send_at put an event. */
enum { SENT_BATCH, SENT_ALONE, SENT_LOST };

/* Into the VM's batch (at *off), or a record of its own: SENT_*. */
static __always_inline int send_at(struct ctx *c, const struct lmt_ev *ev, __u32 *off)
{
	__u32 holder;

	pressure(c);
	if (c->sl) {
		holder = append(c, c->sl, ev, off);
		if (!holder)
			return SENT_BATCH;
		/* Two threads in one slot: VMs share this ud. */
		if (holder == LMT_BUSY_BPF)
			unbatch(c);
	}
	return emit(c, ev) ? SENT_LOST : SENT_ALONE;
}

static __always_inline void send(struct ctx *c, const struct lmt_ev *ev)
{
	__u32 off;

	send_at(c, ev, &off);
}

#endif
