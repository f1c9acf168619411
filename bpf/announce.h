/* First sightings: a prototype or trace is announced (a symbol record)
 * before the first event that names it, and forgotten when it is freed. */
#ifndef LMT_BPF_ANNOUNCE_H
#define LMT_BPF_ANNOUNCE_H

/* Prototype records are built here: too big for the stack, and sent with
 * bpf_ringbuf_output since their size varies. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lmt_proto);
} protobuf SEC(".maps");

/* GC objects already announced: prototypes and traces, by address. A free
 * of the address forgets it, so a new object at a reused address is
 * announced again. So does a new VM: a closed VM's objects, whose frees we
 * never see, are not announced for the VM that reuses their memory. */
struct obj_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

struct obj_val {
	__u64 vm;      /* owning VM's id */
	__u32 traceno; /* 0 for prototypes */
	__u32 bpf_lines; /* prototypes: line table too big to send; BPF
			  * computes their lines */
	__u32 sizebc;    /* prototypes: instructions */
	__u32 gen;       /* prototypes: offgen when announced; another
			  * means its address may hold a new one */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct obj_key);
	__type(value, struct obj_val);
} objs SEC(".maps");

/* A bit per hash of (tgid, address) ever entered in objs, never cleared:
 * a free whose bit is clear needs no objs lookup (docs/costs.md), and one whose
 * bit is set only the lookup it needed before. 2^20 bits. */
#define OBJB_BITS 20
#define OBJB_WORDS ((1 << OBJB_BITS) / 64)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OBJB_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} objbits SEC(".maps");

static __always_inline __u32 objb_of(__u32 tgid, __u64 addr)
{
	return dm_slot(dm_hash(addr >> 3, (__u64)tgid << 44), OBJB_BITS);
}

static __always_inline void objb_set(__u32 tgid, __u64 addr)
{
	__u32 b = objb_of(tgid, addr), k = b >> 6;
	__u64 *w = bpf_map_lookup_elem(&objbits, &k);

	if (w)
		__sync_fetch_and_or(w, 1ULL << (b & 63));
}

static __always_inline int objb_test(__u32 tgid, __u64 addr)
{
	__u32 b = objb_of(tgid, addr), k = b >> 6;
	__u64 *w = bpf_map_lookup_elem(&objbits, &k);

	return !w || (*w >> (b & 63)) & 1;
}

/* Trace number -> its GCtrace and machine code, per VM. */
struct trace_key {
	__u32 tgid;
	__u32 traceno;
	__u64 vm; /* VM id */
};

struct tinfo {
	__u64 T;
	__u64 mcode;
	__u64 szmcode;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct trace_key);
	__type(value, struct tinfo);
} traces SEC(".maps");

/* Traces known to be announced, direct-mapped in front of the traces map:
 * an event of JIT-compiled code costs no hash lookup. The check word makes
 * a slot torn by two writers a miss; a trace's free clears its slot.
 *
 * A trace number comes back: a flush of all traces (jit.flush, a full
 * machine code area, the profiler's start) empties J->trace's slots, and
 * the GC frees the old GCtraces only later, after new traces took their
 * numbers. Every new trace's GCtrace is allocated by the assembler
 * (lj_trace_alloc, in vmstate ASM), so such an allocation bumps trgen,
 * which every slot's check word covers: the next event of each trace
 * reads J->trace again, and a GCtrace other than the one known, or with
 * other machine code (see_trace), is a new trace, announced. So does an
 * allocation whose vmstate could not be read, and tracing coming back
 * after time without it (bpf/state.h: tracing_back). trgen is in
 * bpf/state.h. */
#define TRC_BITS 10
#define TRC_N (1 << TRC_BITS)
#define TRC_SALT 0x7472616365732121ULL

static __always_inline __u64 trc_salt(void)
{
	return TRC_SALT ^ *(volatile __u64 *)&trgen * LMT_HASH_K;
}

/* A trace may have been made: every trace known is checked again. */
static __always_inline void trace_stale(void)
{
	__sync_fetch_and_add(&trgen, 1);
}

/* An allocator call in vmstate: the assembler's may be a new trace's. */
static __always_inline void trace_made(__s32 vmstate, const struct lj_layout *lay)
{
	if (vmst_raw(vmstate, lay->nvmst, lay->vmst) == LMT_VMST_ASM)
		trace_stale();
}

struct trc {
	__u64 k1; /* tgid | traceno << 32 */
	__u64 k2; /* VM id */
	__u64 mcode;
	__u64 szmcode;
	__u64 chk;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TRC_N);
	__type(key, __u32);
	__type(value, struct trc);
} trcache SEC(".maps");

static __always_inline struct trc *trc_of(__u32 tgid, __u32 traceno, __u64 vm)
{
	__u32 k = dm_slot(dm_hash(tgid ^ (__u64)traceno << 20, vm << 40), TRC_BITS);

	return bpf_map_lookup_elem(&trcache, &k);
}

/* Announce prototype pt unless known: its chunk name, first line and line
 * table. Returns its objs entry (NULL if it could not be announced). */
static __always_inline struct obj_val *see_proto(struct ctx *c,
						 const struct lmt_vm *vm,
						 __u64 pt)
{
	const struct lj_layout *lay = &vm->lay;
	struct obj_key k = { .tgid = c->tgid, .addr = pt };
	struct obj_val v = {}, *hit;
	const __u32 gen = (__u32)*(volatile __u64 *)&offgen;
	__u8 *win = c->pc->pw;
	struct lmt_proto *p;
	__u64 str, li;
	__u32 len = 0, n, zero = 0, sizebc, numline, w;

	hit = bpf_map_lookup_elem(&objs, &k);
	if (hit && hit->vm == vm->id && hit->gen == gen)
		return hit;
	p = bpf_map_lookup_elem(&protobuf, &zero);
	if (!p || rd(c, win, LMT_PTWIN, pt))
		return NULL;
	p->rec = LMT_REC_PROTO;
	p->tgid = c->tgid;
	p->vm = vm->id;
	p->addr = pt;
	p->firstline = (__s32)F32(win, lay->pt_firstline);
	sizebc = F32(win, lay->pt_sizebc);
	numline = F32(win, lay->pt_numline);
	p->sizebc = sizebc;
	p->numline = numline;
	str = win_ref(lay->gc64, win, lay->pt_chunkname);
	p->str = str + lay->str_size;
	p->copied = 0;
	if (str && !rd(c, &len, sizeof(len), str + lay->str_len) && len) {
		/* 1 to LMT_NAME_MAX, bounded in the register the read takes
		 * (6.1's verifier loses a bound checked before a spill) */
		__u64 sz = (len < LMT_NAME_MAX ? len : LMT_NAME_MAX) - 1;

		BOUND(sz, 0x3ff); /* LMT_NAME_MAX - 1 */
		sz += 1;
		if (!rd(c, p->name, (__u32)sz, str + lay->str_size))
			p->copied = (__u32)sz;
	}
	p->len = len;
	/* The line table: one entry per instruction after the header. */
	w = numline < 256 ? 1 : numline < 65536 ? 2 : 4;
	li = win_ref(lay->gc64, win, lay->pt_lineinfo);
	n = sizebc > 1 ? (sizebc - 1) * w : 0;
	p->li_width = 0;
	p->li_len = 0;
	if (!li) {
		p->li_width = w; /* no line info: every line is 0 */
	} else if (n <= LMT_LI_MAX) {
		__u64 sz = n;
		BOUND(sz, 0x3fff); /* 2 * LMT_LI_MAX - 1 */
		if (n == 0 || !rd(c, p->lineinfo, (__u32)sz, li)) {
			p->li_width = w;
			p->li_len = n;
		}
	}
	v.bpf_lines = p->li_width == 0;
	v.sizebc = sizebc;
	v.vm = vm->id;
	v.gen = gen; /* as checked: a bump since makes it checked again */
	{
		__u64 sz = p->li_len;
		BOUND(sz, 0x3fff);
		n = (__u32)sz;
	}
	flush(c);
	/* Numbered before its record is in the ring: it may come late,
	 * never ahead of an event that names it (user/streams/merge.c). */
	p->seq = seq_next();
	if (bpf_ringbuf_output(&rb, p, offsetof(struct lmt_proto, lineinfo) + n,
			       wake_flags(c, offsetof(struct lmt_proto, lineinfo) + n))) {
		c->st->lost_sym++;
		return NULL;
	}
	c->st->protos++;
	objb_set(c->tgid, pt);
	bpf_map_update_elem(&objs, &k, &v, BPF_ANY);
	return bpf_map_lookup_elem(&objs, &k);
}

/* Line of the instruction before ins in prototype pt, LuaJIT's
 * lj_debug_line(pt, proto_bcpos(pt, ins) - 1). -1 if there is none. */
static __always_inline __s64 proto_line(struct ctx *c, const struct lmt_vm *vm,
					__u64 pt, __u64 ins)
{
	const struct lj_layout *lay = &vm->lay;
	__u8 *win = c->pc->pw;
	__u64 bc = pt + lay->pt_size, lineinfo;
	__u32 sizebc, numline, pos;
	__s32 first;

	if (rd(c, win, LMT_PTWIN, pt))
		return -1;
	if (ins < bc + 4 || ((ins - bc) & 3))
		return -1;
	pos = (__u32)((ins - bc) >> 2) - 1;
	sizebc = F32(win, lay->pt_sizebc);
	/* LuaJIT undoes a JLOOP side exit here; we do not, and punt. */
	if (pos > sizebc)
		return -1;
	lineinfo = win_ref(lay->gc64, win, lay->pt_lineinfo);
	if (!lineinfo)
		return 0;
	first = (__s32)F32(win, lay->pt_firstline);
	numline = F32(win, lay->pt_numline);
	if (pos == sizebc)
		return (__s64)first + numline;
	if (pos == 0)
		return first;
	pos--;
	if (numline < 256) {
		__u8 d;
		if (rd(c, &d, 1, lineinfo + pos))
			return -1;
		return (__s64)first + d;
	} else if (numline < 65536) {
		__u16 d;
		if (rd(c, &d, 2, lineinfo + 2 * (__u64)pos))
			return -1;
		return (__s64)first + d;
	} else {
		__u32 d;
		if (rd(c, &d, 4, lineinfo + 4 * (__u64)pos))
			return -1;
		return (__s64)first + d;
	}
}

/* Announce trace traceno of this VM unless its GCtrace is known; its
 * machine code's range in *ti (0 on success). */
static __always_inline int see_trace(struct ctx *c, const struct lmt_vm *vm,
				     __u32 traceno, struct tinfo *ti)
{
	const struct lj_layout *lay = &vm->lay;
	struct trace_key tk = { .tgid = c->tgid, .traceno = traceno, .vm = vm->id };
	__u64 J = vm->g - lay->gg_g + lay->gg_J, arr, T, tw[LMT_TWIN / 8], cw[4];
	struct trc *tc = trc_of(c->tgid, traceno, vm->id);
	const __u64 salt = trc_salt();
	__u64 k1 = c->tgid | (__u64)traceno << 32;
	struct tinfo *known;
	struct lmt_trace *t;
	__u64 pt, spc;
	__s64 line;

	if (tc && dm_get(tc, cw, 4, salt) && cw[0] == k1 && cw[1] == vm->id) {
		ti->mcode = cw[2];
		ti->szmcode = cw[3];
		return 0;
	}
	if (rd(c, &arr, 8, J + lay->J_trace))
		return -1;
	arr = gcref(lay, arr);
	if (rd(c, &T, 8, arr + (__u64)traceno * (lay->gc64 ? 8 : 4)))
		return -1;
	T = gcref(lay, T);
	if (!T)
		return -1;
	/* startpt, startpc, ..., szmcode, mcode (lmt_windows_fit). */
	if (rd(c, tw, LMT_TWIN, T + lay->T_startpt))
		return -1;
	pt = gcref(lay, tw[0]);
	spc = gcref(lay, lay->gc64 ? tw[1] : tw[0] >> 32); /* a reference on */
	ti->T = T;
	ti->szmcode = *(__u32 *)((__u8 *)tw + ((lay->T_szmcode - lay->T_startpt) & (LMT_TWIN - 4)));
	ti->mcode = *(__u64 *)((__u8 *)tw + ((lay->T_mcode - lay->T_startpt) & (LMT_TWIN - 8)));
	/* The GCtrace known under this number, or a new trace in its place:
	 * another GCtrace, or (its old one freed unseen, --duty's probes
	 * off, and its block taken again) other machine code. */
	known = bpf_map_lookup_elem(&traces, &tk);
	if (known && known->T == T && known->mcode == ti->mcode &&
	    known->szmcode == ti->szmcode)
		goto cache;
	/* The start line: the trace's first bytecode, i.e. the instruction
	 * at startpc, so ask for the line "before" startpc + 1. */
	see_proto(c, vm, pt);
	line = proto_line(c, vm, pt, spc + 4);
	flush(c);
	t = bpf_ringbuf_reserve(&rb, sizeof(*t), 0);
	if (!t) {
		c->st->lost_sym++;
		return -1;
	}
	t->rec = LMT_REC_TRACE;
	t->tgid = c->tgid;
	t->vm = vm->id;
	t->traceno = traceno;
	t->proto = pt;
	t->line = line < 0 ? 0 : (__u64)line;
	t->T = T;
	t->mcode = ti->mcode;
	t->szmcode = (__u32)ti->szmcode;
	t->seq = seq_next();
	/* User space reads its snapshots: the process must not be gone by
	 * then (a short program's traces would stay unread). */
	t->stopped = !jit_trace && stop_process(c->tgid, 0);
	bpf_ringbuf_submit(t, t->stopped ? BPF_RB_FORCE_WAKEUP :
					     wake_flags(c, sizeof(*t)));
	c->st->traces++;
	if (bpf_map_update_elem(&traces, &tk, ti, BPF_ANY))
		return 0;
	{
		struct obj_key ok = { .tgid = c->tgid, .addr = T };
		struct obj_val ov = { .vm = vm->id, .traceno = traceno };
		objb_set(c->tgid, T);
		bpf_map_update_elem(&objs, &ok, &ov, BPF_ANY);
	}
cache:
	if (tc) {
		cw[0] = k1;
		cw[1] = vm->id;
		cw[2] = ti->mcode;
		cw[3] = ti->szmcode;
		dm_put(tc, cw, 4, salt);
	}
	return 0;
}

/* A free of an announced prototype or trace: forget it. */
static __always_inline void forget(struct ctx *c, __u64 addr)
{
	struct obj_key k = { .tgid = c->tgid, .addr = addr };
	struct obj_val *v = bpf_map_lookup_elem(&objs, &k);

	if (!v)
		return;
	if (v->traceno) {
		struct trace_key tk = { .tgid = c->tgid, .traceno = v->traceno,
					.vm = v->vm };
		struct trc *tc = trc_of(c->tgid, v->traceno, v->vm);
		struct tinfo *known = bpf_map_lookup_elem(&traces, &tk);

		/* Not a new trace that took its number meanwhile. */
		if (known && known->T == addr) {
			if (tc)
				tc->chk = 0;
			bpf_map_delete_elem(&traces, &tk);
		}
	} else {
		struct lmt_forget *f;

		__sync_fetch_and_add(&pcgen, 1);
		flush(c);
		f = bpf_ringbuf_reserve(&rb, sizeof(*f), 0);
		if (f) {
			f->rec = LMT_REC_FORGET;
			f->tgid = c->tgid;
			f->vm = (__u32)v->vm;
			f->addr = addr;
			f->seq = seq_next();
			bpf_ringbuf_submit(f, BPF_RB_NO_WAKEUP);
		} else {
			c->st->lost_sym++;
		}
	}
	bpf_map_delete_elem(&objs, &k);
}

/* A freed or reallocated block may be an announced prototype or trace.
 * Both are bigger than their headers: smaller blocks, and blocks never
 * announced (objbits), need no objs lookup. */
static __always_inline void obj_freed(struct ctx *c, const struct lmt_vm *vm,
				      const struct lmt_ev *ev)
{
	if (ev->kind != LMT_ALLOC &&
	    (ev->osize > vm->lay.pt_size || ev->osize > vm->lay.T_size) &&
	    objb_test(c->tgid, ev->oaddr))
		forget(c, ev->oaddr);
}

#endif
