// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* luamemtrace: probes on a LuaJIT VM's allocator.
 *
 * alloc_enter runs at a probe site inside allocf(ud, ptr, osize, nsize)
 * where the four argument registers still hold the arguments. It finds the
 * VM by (tgid, ud), attributes the call the way LuaJIT's in-VM memory
 * profiler does (vmstate + top frame of cur_L), and sends a FREE at once
 * or parks the event for alloc_return, which adds the new address and
 * sends it.
 * First sightings of prototypes and traces are sent as symbol records ahead
 * of the event that needs them. No policy here: user space decides what is
 * probed and writes the stream.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "luamemtrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A CPU wakes the consumer once it has submitted this much since its last
 * wakeup; below it the consumer finds the data on its next timed poll.
 * Counted per CPU, not asked of the ring (bpf_ringbuf_query is a helper
 * call per record). Set by user space before load. */
const volatile __u64 wakeup_bytes = 256 * 1024;

/* Benchmark only (--ab): an allocation of LMT_AB_MARK bytes switches the
 * allocator's programs between tracing and doing nothing, so the floor and
 * luamemtrace alternate in one process, which cancels the drifts that move
 * whole runs. Off, the verifier drops this code (a constant at load). */
const volatile __u8 ab = 0;
__u8 ab_floor;

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

/* An attributed allocation waits here for its return probe, which adds
 * the new address and batches or sends it. (Doing the attribution there
 * instead measured no cheaper, and put its code in two programs.)
 *
 * The return probe finds its entry through its thread without a helper
 * call: the probes' pt_regs are the thread's user registers at the top of
 * its kernel stack, so their address names the thread (read as a number
 * through a map slot). pends is direct-mapped by it; an entry also holds
 * the stack pointer after the return (at the probe site rsp is the
 * function's entry rsp, probe.c; the return pops 8). chk covers the other
 * words and is 0 for a free entry, PEND_BUSY while one is written. An
 * entry is taken by exchanging chk, and consumed by a compare-and-swap of
 * it, so an allocation whose entry another thread took (two threads in one
 * entry, or a return that never came) is counted once, by the taker, in
 * missed; parked counts the entries in use, so what is left at the end is
 * in flight. */
#define PEND_N 4096
#define PEND_SALT 0x70656e64696e6721ULL
#define PEND_BUSY 1

struct pend {
	__u64 thr; /* the thread's pt_regs address */
	__u64 sp;
	__u64 ud;
	__u64 hdr; /* kind | src << 8 | flags << 16 | line << 32 */
	__u64 loc, oaddr, osize, nsize;
	__u64 chk;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PEND_N);
	__type(key, __u32);
	__type(value, struct pend);
} pends SEC(".maps");

static __always_inline __u64 pend_chk(const struct pend *p)
{
	return ((p->sp * 0xff51afd7ed558ccdULL) ^ (p->ud * 0xc4ceb9fe1a85ec53ULL) ^
		(p->thr * 0x9e3779b97f4a7c15ULL) ^ (p->oaddr * 0x94d049bb133111ebULL) ^
		(p->osize << 20) ^ (p->nsize * 0xbf58476d1ce4e5b9ULL) ^
		(p->hdr * 0xd6e8feb86659fd93ULL) ^ (p->loc * 0xa0761d6478bd642fULL) ^
		PEND_SALT) |
	       2; /* never 0 (free) or PEND_BUSY */
}

static __always_inline __u32 pend_of(__u64 thr)
{
	return (__u32)(((thr >> 8) * 0x9e3779b97f4a7c15ULL) >> 52) & (PEND_N - 1);
}

/* The address of the probe's pt_regs as a number (see struct pend). */
static __always_inline __u64 thr_of(void *ctx, struct lmt_percpu *pc)
{
	*(void *volatile *)&pc->spill = ctx;
	return *(volatile __u64 *)&pc->spill;
}

/* What attribution needs of a GCfunc, by address: a GCfunc never changes,
 * so this saves a read (~80 ns) per event of a known function, and for a
 * Lua function the objs lookup of its prototype too (a live function keeps
 * its prototype alive, so it stays announced). Direct-mapped and shared by
 * all CPUs without locks: chk covers the other words, so a slot torn by
 * two writers is a miss, never a wrong answer. A free of the address
 * clears the slot.
 *
 * The free of any block looks here, and a random line of this map costs
 * more than the rest of a free's program (~30 ns on the mixed bench), so
 * fntag keeps 16 more bits of each slot's hash (0: none) in 8 KiB that
 * stay in cache: a free whose tag differs skips the map. A hit needs the
 * tag too, and a writer stores the tag after the entry, so an entry is
 * only ever used while its tag stands, and its tag stands from before any
 * use until the slot is rewritten or its function freed. */
#define FNC_N 4096
#define FNC_SALT 0x6c75616d656d7472ULL
#define FN_POS 1       /* prototype announced with its line table */
#define FN_BPF_LINES 2 /* prototype announced; BPF computes its lines */

struct fnc {
	__u64 fn;   /* GCfunc address, 0 = empty */
	__u64 pcf;  /* fn->pc (Lua) or fn->f (C, fast) | ffid << 48 | flags << 56 */
	__u64 meta; /* tgid | VM id << 32: a VM closed and its memory reused
		     * by a later VM (whose frees we saw none of) never hits */
	__u64 szb;  /* Lua: the prototype's sizebc */
	__u64 chk;  /* fn ^ pcf ^ meta ^ szb * K ^ FNC_SALT */
};

/* Bytecode address -> the prototype it belongs to, for what the
 * interpreter saved as its PC (SAVE_PC in the C frame). With the
 * interpreter in INTERP state, the in-VM profiler charges the top frame:
 * a Lua function at SAVE_PC, or a fast function's Lua caller at the frame
 * link, and every fast function that stores SAVE_PC while it can allocate
 * stores either that link or &GG->bcff[i]+1, which is no prototype's
 * bytecode (LuaJIT's vm_x64.dasc, luajit and luajit2 alike: tostring,
 * fff_fallback, coroutine.*; string.sub/char/reverse/lower/upper). So a
 * SAVE_PC found here is charged without reading the frame, a read saved
 * per event. Entries are filled from the frame-based path only, hence
 * only for bytecode of announced prototypes; a prototype's free bumps
 * pcgen, which every entry's check word covers. (One known exception, an
 * error: a stack overflow raised while calling a C function runs in INTERP
 * with the caller's SAVE_PC; its message, if not interned, is charged to
 * the Lua caller's line instead of the C function.) */
#define PCC_N 4096
#define PCC_SALT 0x7063636163686521ULL

struct pcc {
	__u64 pc;
	__u64 pt;   /* prototype | flags << 56 */
	__u64 meta; /* tgid | VM id << 32 */
	__u64 chk;  /* pc ^ pt ^ meta ^ pcgen * K ^ PCC_SALT */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCC_N);
	__type(key, __u32);
	__type(value, struct pcc);
} pccache SEC(".maps");

__u64 pcgen; /* bumped by every announced prototype's free */
__u16 fntag[FNC_N]; /* struct fnc */
__u32 multi; /* the process has had a second VM: no batching (lmt_slot) */
/* Set by user space when tracing ends, before it detaches (which takes a
 * while): the allocator's programs do nothing from then on, so the end of
 * the trace is one instant. An allocation that entered before it and
 * returns after is in flight (struct pend). */
__u32 stop;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FNC_N);
	__type(key, __u32);
	__type(value, struct fnc);
} fncache SEC(".maps");

/* Main lua_State -> its vms key, for lua_close. */
struct main_key {
	__u32 tgid;
	__u32 pad;
	__u64 L;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct main_key);
	__type(value, struct lmt_vm_key);
} mains SEC(".maps");

/* Processes whose new VMs we want to hear about. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lmt_proc);
} procs SEC(".maps");

/* Allocators already probed, per process (value unused). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lmt_allocf_key);
	__type(value, __u32);
} allocfs SEC(".maps");

/* Prototype records are built here: too big for the stack, and sent with
 * bpf_ringbuf_output since their size varies. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lmt_proto);
} protobuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lmt_vm);
} vmbuf SEC(".maps");

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
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct obj_key);
	__type(value, struct obj_val);
} objs SEC(".maps");

/* A bit per hash of (tgid, address) ever entered in objs, never cleared:
 * a free whose bit is clear needs no objs lookup (~50 ns), and one whose
 * bit is set only the lookup it needed before. 2^20 bits. */
#define OBJB_WORDS 16384

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OBJB_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} objbits SEC(".maps");

static __always_inline __u32 objb_of(__u32 tgid, __u64 addr)
{
	return (__u32)((((addr >> 3) ^ ((__u64)tgid << 44)) * 0x9e3779b97f4a7c15ULL) >> 44);
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

/* Trace number -> GCtrace address, per VM. */
struct trace_key {
	__u32 tgid;
	__u32 traceno;
	__u64 vm; /* VM id */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct trace_key);
	__type(value, __u64);
} traces SEC(".maps");

/* Traces known to be announced, direct-mapped in front of the traces map:
 * an event of JIT-compiled code costs no hash lookup. The check word makes
 * a slot torn by two writers a miss; a trace's free clears its slot. */
#define TRC_N 1024
#define TRC_SALT 0x7472616365732121ULL

struct trc {
	__u64 k1; /* tgid | traceno << 32 */
	__u64 k2; /* VM id */
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
	__u32 k = (__u32)(((tgid ^ ((__u64)traceno << 20) ^ (vm << 40)) *
			   0x9e3779b97f4a7c15ULL) >> 54) & (TRC_N - 1);

	return bpf_map_lookup_elem(&trcache, &k);
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lmt_percpu);
} stats SEC(".maps");

/* Masks v in a way clang cannot fold away, so that the verifier sees the
 * bound at the helper call. */
#define BOUND(v, mask) asm volatile("%0 &= " #mask : "+r"(v))

#define FRAME_TYPE 3
#define FRAME_TYPEP 7
#define FRAME_LUA 0
#define FRAME_CONT 2
#define FF_LUA 0
#define FF_C 1
#define SIGSTOP 19

/* Window reads: a fixed-size read of a structure's head, then fields at
 * per-variant offsets, masked so the verifier sees them in bounds. */
#define WIN LMT_WIN
#define F8(b, o) (*(__u8 *)((char *)(b) + ((o) & (WIN - 1))))
#define F32(b, o) (*(__u32 *)((char *)(b) + ((o) & (WIN - 4))))
#define F64(b, o) (*(__u64 *)((char *)(b) + ((o) & (WIN - 8))))

struct ctx {
	void *regs; /* the probe's pt_regs (see struct pend) */
	struct lmt_stats *st;
	struct lmt_percpu *pc;
	struct lmt_slot *sl; /* the VM's slot, if it has one */
	__u32 si;            /* its index */
	__u32 tgid;
	__u32 reads;
};

/* Where a read lands decides what it costs. The kernel checks the
 * destination of every read from user memory (hardened usercopy), and one
 * on the kernel stack passes at once. A map value, or the JIT's private
 * stack (which a program or subprogram with 64 bytes of stack or more
 * gets), does not: an 8-byte read as a program's only read costs ~80 ns
 * into the kernel stack here, ~145 ns into either of the others. So reads
 * of up to RDK_MAX bytes go through rdk, a subprogram whose frame stays
 * under 64 bytes and so runs on the kernel stack: it reads into its own
 * frame and copies out. */
#define RDK_MAX 48

static __noinline long rdk(void *dst, __u32 sz, __u64 src)
{
	__u64 b[RDK_MAX / 8];
	long r;

	if (sz > RDK_MAX)
		return -1;
	r = bpf_probe_read_user(b, sz, (const void *)src);
	if (r)
		return r;
	if (sz == 1)
		*(__u8 *)dst = (__u8)b[0];
	else if (sz == 2)
		*(__u16 *)dst = (__u16)b[0];
	else if (sz == 4)
		*(__u32 *)dst = (__u32)b[0];
	else
		for (int i = 0; i < RDK_MAX / 8; i++)
			if (i * 8 < sz)
				((__u64 *)dst)[i] = b[i];
	return 0;
}

/* The string helper's word, the same way (see rds). */
static __noinline long rdks(__u64 *dst, __u64 src)
{
	__u64 b = 0;
	long n = bpf_probe_read_user_str(&b, 8, (const void *)src);

	*dst = b;
	return n;
}

/* A read of a constant size up to RDK_MAX (1, 2, 4 or a multiple of 8)
 * goes through rdk; a larger or variable one lands where dst is. */
static __always_inline int rd(struct ctx *c, void *dst, __u32 sz, __u64 src)
{
	long r;

	c->reads++;
	if (__builtin_constant_p(sz) && sz <= RDK_MAX)
		r = rdk(dst, sz, src);
	else
		r = bpf_probe_read_user(dst, sz, (const void *)src);
	if (r) {
		if (c->st)
			c->st->read_errs++;
		return -1;
	}
	return 0;
}

/* A word read through the string helper: as a program's first read it
 * costs ~15 ns less here. It stops at a zero byte and zeroes the bytes
 * after it, so the word is whole only where the caller knows the bytes it
 * did not copy. */
static __always_inline long rds(struct ctx *c, __u64 *dst, __u64 src)
{
	long n;

	c->reads++;
	n = rdks(dst, src);
	if (n < 0 && c->st)
		c->st->read_errs++;
	return n;
}

/* g->vmstate, through the string helper when that gives it whole. */
static __always_inline int rd_vmstate(struct ctx *c, __s32 *vs, __u64 src)
{
	__u64 b;
	long n = rds(c, &b, src);

	if (n < 0)
		return -1;
	if (lmt_vmstate_whole(n)) {
		*vs = (__s32)b;
		return 0;
	}
	return rd(c, vs, 4, src);
}

/* A GCRef/MRef's address: all 64 bits in a GC64 build, the low 32 else. */
static __always_inline __u64 ref_gc64(__u8 gc64, __u64 v)
{
	return gc64 ? v : (v & 0xffffffffULL);
}

static __always_inline __u64 ref(const struct lj_layout *lay, __u64 v)
{
	return ref_gc64(lay->gc64, v);
}

/* GC64 TValue holding a GC object of type ~gct? Returns its address. */
static __always_inline __u64 tv_gc(const struct lj_layout *lay, __u64 tv,
				   __u8 gct)
{
	if ((__s64)tv >> 47 != (__s64)(__s32)~(__u32)gct)
		return 0;
	return tv & ((1ULL << 47) - 1);
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
 * ring buffer output. Who finds it taken does not wait: sends on its own. */
static __always_inline int slot_lock(struct lmt_slot *sl)
{
	return __sync_val_compare_and_swap(&sl->busy, 0, 1) ? -1 : 0;
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
	n = (len - sizeof(struct lmt_batch)) / sizeof(struct lmt_bev);
	if (bpf_ringbuf_output(&rb, sl->buf, len, wake_flags(c, len)))
		c->st->lost += n;
	else
		c->st->events += n;
	sl->len = sizeof(struct lmt_batch);
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

/* Batching ends (a second VM): every batch goes now, ahead of any event
 * the new VM sends on its own. */
static long unbatch_one(__u32 i, void *arg)
{
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &i);

	if (sl)
		flush_slot(arg, sl);
	return 0;
}

static __always_inline void unbatch(struct ctx *c)
{
	multi = 1;
	bpf_loop(LMT_NSLOT, unbatch_one, c, 0);
}

/* Append the event to the slot's batch; -1 if the slot is busy. */
static __always_inline int append(struct ctx *c, const struct lmt_event *ev)
{
	struct lmt_slot *sl = c->sl;
	struct lmt_bev *r;
	__u32 off;

	if (!sl || slot_lock(sl))
		return -1;
	if (sl->len > LMT_SBUF - 1 - sizeof(*r))
		flush_locked(c, sl);
	off = sl->len & (LMT_SBUF - 1);
	r = (struct lmt_bev *)(sl->buf + off);
	r->kind = ev->kind;
	r->src = ev->src;
	r->flags = ev->flags;
	r->pad = 0;
	r->line = (__u32)ev->line;
	r->loc = ev->loc;
	r->oaddr = ev->oaddr;
	r->osize = ev->osize;
	r->naddr = ev->naddr;
	r->nsize = ev->nsize;
	sl->len = off + sizeof(*r);
	slot_unlock(sl);
	return 0;
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
	__u8 *win = c->pc->pw;
	struct lmt_proto *p;
	__u64 str, li;
	__u32 len = 0, n, zero = 0, sizebc, numline, w;

	hit = bpf_map_lookup_elem(&objs, &k);
	if (hit && hit->vm == vm->id)
		return hit;
	p = bpf_map_lookup_elem(&protobuf, &zero);
	if (!p || rd(c, win, 96, pt))
		return NULL;
	p->rec = LMT_REC_PROTO;
	p->tgid = c->tgid;
	p->addr = pt;
	p->vm = vm->id;
	p->firstline = (__s32)F32(win, lay->pt_firstline);
	sizebc = F32(win, lay->pt_sizebc);
	numline = F32(win, lay->pt_numline);
	p->sizebc = sizebc;
	p->numline = numline;
	str = ref(lay, F64(win, lay->pt_chunkname));
	p->str = str + lay->str_size;
	p->copied = 0;
	if (str && !rd(c, &len, sizeof(len), str + lay->str_len)) {
		n = len < LMT_NAME_MAX ? len : LMT_NAME_MAX;
		if (n > 0 && n <= LMT_NAME_MAX &&
		    !rd(c, p->name, n, str + lay->str_size))
			p->copied = n;
	}
	p->len = len;
	/* The line table: one entry per instruction after the header. */
	w = numline < 256 ? 1 : numline < 65536 ? 2 : 4;
	li = ref(lay, F64(win, lay->pt_lineinfo));
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
	{
		__u64 sz = p->li_len;
		BOUND(sz, 0x3fff);
		n = (__u32)sz;
	}
	flush(c);
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

	if (rd(c, win, 96, pt))
		return -1;
	if (ins < bc + 4 || ((ins - bc) & 3))
		return -1;
	pos = (__u32)((ins - bc) >> 2) - 1;
	sizebc = F32(win, lay->pt_sizebc);
	/* LuaJIT undoes a JLOOP side exit here; we do not, and punt. */
	if (pos > sizebc)
		return -1;
	lineinfo = ref(lay, F64(win, lay->pt_lineinfo));
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

/* Announce trace traceno of this VM unless its GCtrace is known. */
static __always_inline void see_trace(struct ctx *c, const struct lmt_vm *vm,
				      __u32 traceno)
{
	const struct lj_layout *lay = &vm->lay;
	struct trace_key tk = { .tgid = c->tgid, .traceno = traceno, .vm = vm->id };
	__u64 J = vm->g - lay->gg_g + lay->gg_J, arr, T, tw[2];
	struct trc *tc = trc_of(c->tgid, traceno, vm->id);
	__u64 k1 = c->tgid | (__u64)traceno << 32;
	struct lmt_trace *t;
	__s64 line;

	if (tc && *(volatile __u64 *)&tc->k1 == k1 &&
	    *(volatile __u64 *)&tc->k2 == vm->id &&
	    *(volatile __u64 *)&tc->chk == (k1 ^ vm->id * 0x9e3779b97f4a7c15ULL ^ TRC_SALT))
		return;
	if (bpf_map_lookup_elem(&traces, &tk))
		goto known;
	if (rd(c, &arr, 8, J + lay->J_trace))
		return;
	arr = ref(lay, arr);
	if (rd(c, &T, 8, arr + (__u64)traceno * (lay->gc64 ? 8 : 4)))
		return;
	T = ref(lay, T);
	if (!T || rd(c, tw, 16, T + lay->T_startpt))
		return;
	/* startpt and startpc are adjacent refs in every variant we know. */
	tw[0] = ref(lay, tw[0]);
	tw[1] = ref(lay, tw[1]);
	/* The start line: the trace's first bytecode, i.e. the instruction
	 * at startpc, so ask for the line "before" startpc + 1. */
	see_proto(c, vm, tw[0]);
	line = proto_line(c, vm, tw[0], tw[1] + 4);
	flush(c);
	t = bpf_ringbuf_reserve(&rb, sizeof(*t), 0);
	if (!t) {
		c->st->lost_sym++;
		return;
	}
	t->rec = LMT_REC_TRACE;
	t->tgid = c->tgid;
	t->traceno = traceno;
	t->proto = tw[0];
	t->line = line < 0 ? 0 : (__u64)line;
	t->vm = vm->id;
	bpf_ringbuf_submit(t, wake_flags(c, sizeof(*t)));
	c->st->traces++;
	if (bpf_map_update_elem(&traces, &tk, &T, BPF_ANY))
		return;
	{
		struct obj_key ok = { .tgid = c->tgid, .addr = T };
		struct obj_val ov = { .vm = vm->id, .traceno = traceno };
		objb_set(c->tgid, T);
		bpf_map_update_elem(&objs, &ok, &ov, BPF_ANY);
	}
known:
	if (tc) {
		tc->k1 = k1;
		tc->k2 = vm->id;
		tc->chk = k1 ^ vm->id * 0x9e3779b97f4a7c15ULL ^ TRC_SALT;
	}
}

struct fninfo {
	__u64 pcf;
	__u32 sizebc;
	__u8 ffid, flags;
};

static __always_inline __u64 fnc_hash(__u64 fn, __u32 tgid)
{
	return ((fn >> 3) ^ ((__u64)tgid << 40)) * 0x9e3779b97f4a7c15ULL;
}

static __always_inline __u32 fnc_slot(__u64 h)
{
	return (__u32)(h >> 52) & (FNC_N - 1);
}

static __always_inline __u16 fnc_tag(__u64 h)
{
	return (__u16)(h >> 36) | 1;
}

static __always_inline volatile __u16 *fntag_of(__u32 k)
{
	BOUND(k, 0xfff); /* FNC_N - 1 */
	return &fntag[k];
}

/* GCfunc fn of this VM: from the cache, or read (through win) and cached.
 * A Lua function's prototype is announced on the way. */
#define CHK_K 0x9e3779b97f4a7c15ULL

static __always_inline int fn_get(struct ctx *c, const struct lmt_vm *vm,
				  __u64 fn, __u8 *win, struct fninfo *fi)
{
	const struct lj_layout *lay = &vm->lay;
	__u64 h = fnc_hash(fn, c->tgid);
	__u32 k = fnc_slot(h);
	__u16 tag = fnc_tag(h);
	struct fnc *e = bpf_map_lookup_elem(&fncache, &k);
	__u64 efn, epcf, emeta, eszb, echk;
	struct obj_val *o;

	if (!e)
		return -1;
	/* One load each: a second load could see another writer. */
	efn = *(volatile __u64 *)&e->fn;
	epcf = *(volatile __u64 *)&e->pcf;
	emeta = *(volatile __u64 *)&e->meta;
	eszb = *(volatile __u64 *)&e->szb;
	echk = *(volatile __u64 *)&e->chk;
	if (efn == fn && emeta == (c->tgid | (__u64)vm->id << 32) &&
	    echk == (efn ^ epcf ^ emeta ^ eszb * CHK_K ^ FNC_SALT) &&
	    *fntag_of(k) == tag) {
		fi->pcf = epcf & ((1ULL << 48) - 1);
		fi->ffid = (__u8)(epcf >> 48);
		fi->flags = (__u8)(epcf >> 56);
		fi->sizebc = (__u32)eszb;
		return 0;
	}
	if (rd(c, win, 48, fn))
		return -1;
	fi->ffid = F8(win, lay->fn_ffid);
	fi->flags = 0;
	fi->sizebc = 0;
	if (fi->ffid == FF_LUA) {
		fi->pcf = ref(lay, F64(win, lay->fn_pc));
		o = see_proto(c, vm, fi->pcf - lay->pt_size);
		if (!o)
			return 0; /* not cached: announce again next time */
		fi->flags = o->bpf_lines ? FN_BPF_LINES : FN_POS;
		fi->sizebc = o->sizebc;
	} else {
		fi->pcf = F64(win, lay->fn_f);
	}
	/* User addresses fit in 48 bits. */
	if (fi->pcf >> 48)
		return 0;
	emeta = c->tgid | (__u64)vm->id << 32;
	epcf = fi->pcf | (__u64)fi->ffid << 48 | (__u64)fi->flags << 56;
	e->fn = fn;
	e->pcf = epcf;
	e->meta = emeta;
	e->szb = fi->sizebc;
	e->chk = fn ^ epcf ^ emeta ^ (__u64)fi->sizebc * CHK_K ^ FNC_SALT;
	asm volatile("" ::: "memory");
	*fntag_of(k) = tag;
	return 0;
}

static __always_inline __u32 pcc_slot(__u64 pc, __u32 tgid)
{
	return (__u32)((((pc >> 2) ^ ((__u64)tgid << 40)) * CHK_K) >> 52) &
	       (PCC_N - 1);
}

/* The prototype whose bytecode holds pc, if cached (see struct pcc). */
static __always_inline int pc_get(struct ctx *c, const struct lmt_vm *vm,
				  __u64 pc, struct fninfo *fi)
{
	__u32 k = pcc_slot(pc, c->tgid);
	struct pcc *e = bpf_map_lookup_elem(&pccache, &k);
	__u64 epc, ept, emeta, echk;

	if (!e)
		return -1;
	epc = *(volatile __u64 *)&e->pc;
	ept = *(volatile __u64 *)&e->pt;
	emeta = *(volatile __u64 *)&e->meta;
	echk = *(volatile __u64 *)&e->chk;
	if (epc != pc || emeta != (c->tgid | (__u64)vm->id << 32) ||
	    echk != (epc ^ ept ^ emeta ^ pcgen * CHK_K ^ PCC_SALT))
		return -1;
	fi->pcf = (ept & ((1ULL << 48) - 1)) + vm->lay.pt_size;
	fi->flags = (__u8)(ept >> 56);
	fi->ffid = FF_LUA;
	fi->sizebc = 0;
	return 0;
}

/* Remember that pc is bytecode of Lua function fi's prototype, if it is. */
static __always_inline void pc_put(struct ctx *c, const struct lmt_vm *vm,
				   __u64 pc, const struct fninfo *fi)
{
	__u64 bc = fi->pcf, pt = fi->pcf - vm->lay.pt_size, meta, ept;
	__u32 k = pcc_slot(pc, c->tgid);
	struct pcc *e;

	if (!fi->flags || pc < bc + 4 || pc > bc + 4 * (__u64)fi->sizebc ||
	    (pc & 3) || (pt >> 48))
		return;
	e = bpf_map_lookup_elem(&pccache, &k);
	if (!e)
		return;
	meta = c->tgid | (__u64)vm->id << 32;
	ept = pt | (__u64)fi->flags << 56;
	e->pc = pc;
	e->pt = ept;
	e->meta = meta;
	e->chk = pc ^ ept ^ meta ^ pcgen * CHK_K ^ PCC_SALT;
}

/* Lua function fi: LFUNC at the line of the instruction before ins; if
 * that has no line, the event stays INTERNAL (returns -1). */
static __always_inline int charge_lua(struct ctx *c, const struct lmt_vm *vm,
				      const struct fninfo *fi, __u64 ins,
				      struct lmt_event *e)
{
	__u64 pt = fi->pcf - vm->lay.pt_size, bc = fi->pcf;
	__s64 line;

	if (ins < bc + 4 || ((ins - bc) & 3))
		return -1;
	if (fi->flags & FN_POS) {
		e->src = LMT_SRC_LFUNC;
		e->loc = pt;
		/* lj_debug_frameline's position; user space has the table. */
		e->line = ((ins - bc) >> 2) - 1;
		e->flags |= LMT_EV_POS;
		return 0;
	}
	line = proto_line(c, vm, pt, ins);
	if (line < 0)
		return -1;
	e->src = LMT_SRC_LFUNC;
	e->loc = pt;
	e->line = (__u64)line;
	return 0;
}

/* How a vmstate is charged (enum lmt_vmst) by the layout's table: frame
 * or interpreter, or else the VM's (a trace number, >= 1, is charged to
 * its trace, which needs no frame either). */
static __always_inline __u8 vmst_of(__s32 vmstate, __u8 nvmst, const __u8 *vmst)
{
	__u32 idx = ~(__u32)vmstate;
	__u8 kind;

	if (vmstate >= 1 || idx >= nvmst || idx >= LMT_VMST_MAX)
		return LMT_VMST_INTERNAL;
	kind = vmst[idx & (LMT_VMST_MAX - 1)];
	return kind == LMT_VMST_FRAME || kind == LMT_VMST_INTERP ? kind :
								   LMT_VMST_INTERNAL;
}

/* The reads that find an event's frame: the GG_State window (vmstate,
 * cur_L and the main lua_State's fields), a coroutine's fields when cur_L
 * is one, and in the interpreter the PC saved in its C frame. gread_body
 * does them into b and leaves what attribution needs in q.
 *
 * Where b is decides what they cost (see rdk): as a program's only read,
 * the 440-byte window cost ~120 ns into the kernel stack here, ~165 ns into
 * a per-CPU map value and ~185 ns into the JIT's private stack, which a
 * subprogram with 64 bytes of stack or more gets. The verifier keeps every
 * subprogram that can run as an async callback on the kernel stack, so
 * gread_k, whose frame holds the window, is also made the callback of a
 * task work that is never scheduled (gread): a kernel-stack window where
 * the kernel has task works (6.18+). Elsewhere alloc_enter_compat reads
 * into the per-CPU scratch. q is all the subprogram sees (as a callback it
 * gets a map value), so the layout offsets it needs travel in it. */
struct gq {
	struct bpf_task_work tw; /* gread_k as a callback: never scheduled */
	/* in */
	__u64 gg;    /* GG_State: the main lua_State */
	__u64 ptr;   /* the block: a Lua stack being resized is the VM's */
	__u16 off;   /* the window: from gg + off (L_base) */
	__u16 n;     /* its bytes */
	__u16 vms;   /* vmstate in the window */
	__u16 curl;  /* cur_L in the window */
	__u16 stk, cf; /* L_stack, L_cframe from L_base */
	__u16 cfpc;  /* the saved PC in a C frame */
	__u8 gc64, nvmst;
	__u8 vmst[LMT_VMST_MAX];
	/* out */
	__u8 got;    /* GQ_* */
	__u8 reads, errs, pad;
	__s32 vmstate;
	__u64 L, base, stack, cfa, spc;
};

#define GQ_L 1  /* L, base, stack, cfa */
#define GQ_PC 2 /* spc: the interpreter's saved PC */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gq);
} gqs SEC(".maps");

extern int bpf_task_work_schedule_signal_impl(struct task_struct *task,
					      struct bpf_task_work *tw,
					      void *map__map,
					      bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

__u32 never; /* nobody sets it (gread) */

static __always_inline __u64 gq_u64(const __u8 *b, __u64 o)
{
	return *(const __u64 *)(b + o);
}

/* Returns -1 if the window could not be read; later reads that fail
 * leave their GQ_ bit clear. b holds LMT_GWIN bytes. */
static __always_inline long gread_body(struct gq *q, __u8 *b)
{
	__u64 n = q->n, o, L, cfa;
	__u8 kind;

	q->got = 0;
	q->reads = 1;
	q->errs = 0;
	asm volatile("" : "+r"(n)); /* the bound below on the size read */
	if (n > LMT_GWIN || n < 8)
		return -1;
	if (bpf_probe_read_user(b, n, (const void *)(q->gg + q->off))) {
		q->errs = 1;
		return -1;
	}
	o = q->vms & ~3ULL; /* aligned: lmt_gwin_fits */
	asm volatile("" : "+r"(o));
	if (o > LMT_GWIN - 4)
		return -1;
	q->vmstate = *(__s32 *)(b + o);
	/* The frame only where attribution will want it (vmst_kind). */
	kind = vmst_of(q->vmstate, q->nvmst, q->vmst);
	if (kind == LMT_VMST_INTERNAL)
		return 0;
	o = q->curl & ~7ULL;
	asm volatile("" : "+r"(o));
	if (o > LMT_GWIN - 8)
		return -1;
	L = ref_gc64(q->gc64, gq_u64(b, o));
	if (!L)
		return 0;
	/* base, stack and cframe sit within 64 bytes of base: for the main
	 * lua_State they are the window's head already. */
	if (L != q->gg) {
		q->reads++;
		if (bpf_probe_read_user(b, 64, (const void *)(L + q->off))) {
			q->errs++;
			return 0;
		}
	}
	q->L = L;
	q->base = gq_u64(b, 0);
	q->stack = ref_gc64(q->gc64, gq_u64(b, q->stk & 56));
	cfa = gq_u64(b, q->cf & 56) & ~3ULL;
	q->cfa = cfa;
	q->got = GQ_L;
	if (kind != LMT_VMST_INTERP || !cfa || (q->ptr && q->ptr == q->stack))
		return 0;
	q->reads++;
	if (bpf_probe_read_user(b, 8, (const void *)(cfa + q->cfpc))) {
		q->errs++;
		return 0;
	}
	q->spc = gq_u64(b, 0);
	q->got |= GQ_PC;
	return 0;
}

static __noinline long gread_k(struct bpf_map *map, void *key, struct gq *q)
{
	__u8 b[LMT_GWIN];

	if (!q)
		return 0;
	return gread_body(q, b);
}

static __always_inline long gread(struct ctx *c, struct gq *q, const int kst)
{
	long r;

	if (kst) {
		/* Never true: makes gread_k an async callback (see struct gq). */
		if (never == 0x6e657665) {
			__u32 zero = 0;
			struct gq *v = bpf_map_lookup_elem(&gqs, &zero);

			if (v)
				bpf_task_work_schedule_signal_impl(
					bpf_get_current_task_btf(), &v->tw, &gqs,
					(bpf_task_work_callback_t)gread_k, NULL);
		}
		r = gread_k(NULL, NULL, q);
	} else {
		r = gread_body(q, c->pc->gw);
	}
	c->reads += q->reads;
	if (q->errs && c->st)
		c->st->read_errs += q->errs;
	return r;
}

/* How an event in this vmstate is charged: events in a trace, or in a VM
 * state charged to the VM itself, are done here (LMT_VMST_INTERNAL); the
 * others need the frame (LMT_VMST_FRAME or LMT_VMST_INTERP). */
static __always_inline __u8 vmst_kind(struct ctx *c, const struct lmt_vm *vm,
				      __s32 vmstate, struct lmt_event *e)
{
	if (vmstate >= 1) {
		e->src = LMT_SRC_TRACE;
		e->loc = (__u32)vmstate;
		see_trace(c, vm, (__u32)vmstate);
		return LMT_VMST_INTERNAL;
	}
	return vmst_of(vmstate, vm->lay.nvmst, vm->lay.vmst);
}

/* The in-VM profiler's rules, on a stock VM (see memprof-format.md, 5). */
static __always_inline void attribute(struct ctx *c, const struct lmt_vm *vm,
				      __u64 ptr, struct lmt_event *e,
				      const int kst)
{
	const struct lj_layout *lay = &vm->lay;
	__u64 gg, L, base, stack, cf, fn, link, fr[2], ins = 0, spc = 0;
	struct fninfo fi, pfi;
	struct gq q;
	__s32 vmstate;
	__u8 kind, interp, *wide;

	e->src = LMT_SRC_INTERNAL;
	e->loc = 0;
	e->line = 0;
	/* Reads are what costs here (~75-145 ns each), whatever their size.
	 * vmstate alone can come through the string helper, which costs
	 * ~25 ns less (rd_vmstate). So when this kind of event needed no
	 * frame last time on this CPU (frees in the GC, code in traces),
	 * vmstate comes first, alone. */
	wide = &c->pc->wide[e->kind & 3];
	if (!*wide) {
		if (rd_vmstate(c, &vmstate, vm->g + lay->g_vmstate))
			return;
		if (vmst_kind(c, vm, vmstate, e) == LMT_VMST_INTERNAL)
			return;
		*wide = 1;
	}
	/* vmstate, cur_L and, for the main lua_State, its fields in one
	 * read (lmt_gwin_fits), up to cur_L and no further; then what the
	 * frame needs of them (gread). */
	gg = vm->g - lay->gg_g;
	q.gg = gg;
	q.ptr = ptr;
	q.off = lay->L_base;
	q.n = lay->gg_g + lay->g_cur_L + 8 - lay->L_base;
	q.vms = lay->gg_g + lay->g_vmstate - lay->L_base;
	q.curl = lay->gg_g + lay->g_cur_L - lay->L_base;
	q.stk = lay->L_stack - lay->L_base;
	q.cf = lay->L_cframe - lay->L_base;
	q.cfpc = lay->cf_pc;
	q.gc64 = lay->gc64;
	q.nvmst = lay->nvmst;
	__builtin_memcpy(q.vmst, lay->vmst, sizeof(q.vmst));
	if (gread(c, &q, kst))
		return;
	kind = vmst_kind(c, vm, q.vmstate, e);
	if (kind == LMT_VMST_INTERNAL) {
		*wide = 0;
		return;
	}
	interp = kind == LMT_VMST_INTERP;
	if (!(q.got & GQ_L))
		return;
	L = q.L;
	base = q.base;
	stack = q.stack;
	cf = q.cfa;
	/* Growing or shrinking a Lua stack is charged to the VM, as the
	 * in-VM profiler does (resizestack runs in INTERP there). */
	if (ptr && ptr == stack)
		return;
	/* The interpreter: what it saved as its PC may name the prototype
	 * without a look at the frame (struct pcc). */
	if (interp && cf) {
		if (!(q.got & GQ_PC))
			return;
		/* lua_cpcall's frame saves its L as the PC, and a frame's
		 * saved L is the lua_State it runs. */
		spc = q.spc;
		if (!spc || spc == L || (spc & 3))
			spc = 0;
		else if (!pc_get(c, vm, spc, &fi)) {
			charge_lua(c, vm, &fi, spc, e);
			return;
		}
	}
	if (rd(c, fr, 16, base - 16))
		return;
	fn = tv_gc(lay, fr[0], lay->tfunc);
	if (!fn)
		return; /* bottom frame: host C code between calls */
	if (fn_get(c, vm, fn, c->pc->w, &fi))
		return;
	if (fi.ffid == FF_LUA) {
		/* Lua on top: the PC saved in the innermost C frame. */
		if (!interp) {
			if (!cf || rd(c, &spc, 8, cf + lay->cf_pc))
				return;
			if (spc == L)
				spc = 0;
		}
		if (!spc)
			return;
		if (!charge_lua(c, vm, &fi, spc, e) && interp)
			pc_put(c, vm, spc, &fi);
		return;
	}
	if (fi.ffid == FF_C) {
		e->src = LMT_SRC_CFUNC;
		e->loc = fi.pcf;
		return;
	}
	/* Fast function: charge the Lua caller, at its call, if there is
	 * one; else the builtin's C implementation. */
	e->src = LMT_SRC_CFUNC;
	e->loc = fi.pcf;
	{
		__u64 frame = base - 8, pframe, pfn;
		__u8 *pw = c->pc->fw;
		link = fr[1];
		if ((link & FRAME_TYPE) == FRAME_LUA) {
			__u32 call;
			/* The caller is the prototype holding the link. */
			if (!pc_get(c, vm, link, &pfi)) {
				e->src = LMT_SRC_INTERNAL;
				e->loc = 0;
				charge_lua(c, vm, &pfi, link, e);
				return;
			}
			if (rd(c, &call, 4, link - 4))
				return;
			pframe = frame - 8 * (2 + ((call >> 8) & 0xff));
			ins = link;
		} else {
			pframe = frame - (link & ~(__u64)FRAME_TYPEP);
			if ((link & FRAME_TYPEP) == FRAME_CONT &&
			    rd(c, &ins, 8, frame - 16))
				return;
		}
		if (rd(c, &pfn, 8, pframe - 8))
			return;
		pfn = tv_gc(lay, pfn, lay->tfunc);
		if (!pfn || fn_get(c, vm, pfn, pw, &pfi))
			return;
		if (pfi.ffid != FF_LUA)
			return;
		/* A Lua caller below a C-type link needs a walk of the C
		 * frames; rare, charged to the VM. */
		if (!ins) {
			e->src = LMT_SRC_INTERNAL;
			e->loc = 0;
			return;
		}
		e->src = LMT_SRC_INTERNAL;
		e->loc = 0;
		if (!charge_lua(c, vm, &pfi, ins, e) &&
		    (link & FRAME_TYPE) == FRAME_LUA)
			pc_put(c, vm, ins, &pfi);
	}
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

		if (tc)
			tc->chk = 0;
		bpf_map_delete_elem(&traces, &tk);
	} else {
		struct lmt_forget *f;

		__sync_fetch_and_add(&pcgen, 1);
		flush(c);
		f = bpf_ringbuf_reserve(&rb, sizeof(*f), 0);
		if (f) {
			f->rec = LMT_REC_FORGET;
			f->tgid = c->tgid;
			f->addr = addr;
			bpf_ringbuf_submit(f, BPF_RB_NO_WAKEUP);
		}
	}
	bpf_map_delete_elem(&objs, &k);
}

static __always_inline void emit(struct ctx *c, const struct lmt_event *ev)
{
	struct lmt_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e) {
		c->st->lost++;
		return;
	}
	__builtin_memcpy(e, ev, sizeof(*e));
	bpf_ringbuf_submit(e, wake_flags(c, 8 + sizeof(*e)));
	c->st->events++;
}

/* The VM of ud: in its slot (c->sl set while batching), or in vms. id is
 * the pid/tid pair where it was needed. */
static __always_inline const struct lmt_vm *vm_of(struct ctx *c, __u64 ud,
						  __u64 *id)
{
	struct lmt_slot *sl;

	c->si = lmt_slot_of(ud);
	sl = bpf_map_lookup_elem(&slots, &c->si);
	if (sl && sl->live && sl->ud == ud) {
		c->tgid = sl->tgid;
		if (!multi)
			c->sl = sl;
		else /* No more batching: what is batched goes first. */
			flush_slot(c, sl);
		if (!c->sl)
			*id = bpf_get_current_pid_tgid();
		return &sl->vm;
	}
	{
		struct lmt_vm_key k = { .ud = ud };
		const struct lmt_vm *vm;

		*id = bpf_get_current_pid_tgid();
		c->tgid = k.tgid = *id >> 32;
		vm = bpf_map_lookup_elem(&vms, &k);
		if (!vm)
			c->st->unknown_vm++;
		return vm;
	}
}

/* Into the VM's batch, or a record of its own. */
static __always_inline void send(struct ctx *c, struct lmt_event *ev)
{
	if (c->sl && !append(c, ev))
		return;
	if (c->sl) {
		/* Two threads in one slot: VMs share this ud. */
		unbatch(c);
		ev->tid = (__u32)bpf_get_current_pid_tgid();
	}
	emit(c, ev);
}

/* Park an attributed allocation for alloc_return (see struct pend). */
static __always_inline void park(struct ctx *c, __u64 ud,
				 const struct lmt_event *ev)
{
	__u64 thr = thr_of(c->regs, c->pc), old;
	__u32 k = pend_of(thr);
	struct pend *p = bpf_map_lookup_elem(&pends, &k);

	if (!p) {
		c->st->missed++; /* cannot be (k < PEND_N): counted all the same */
		return;
	}
	old = __sync_lock_test_and_set(&p->chk, PEND_BUSY);
	if (old == PEND_BUSY) {
		c->st->missed++; /* another thread is writing it: ours is lost */
		return;
	}
	if (old)
		c->st->missed++; /* its allocation never came back */
	else
		c->st->parked++;
	p->thr = thr;
	p->sp = PT_REGS_SP((struct pt_regs *)c->regs) + 8;
	p->ud = ud;
	p->hdr = ev->kind | (__u64)ev->src << 8 | (__u64)ev->flags << 16 |
		 ev->line << 32;
	p->loc = ev->loc;
	p->oaddr = ev->oaddr;
	p->osize = ev->osize;
	p->nsize = ev->nsize;
	asm volatile("" ::: "memory");
	p->chk = pend_chk(p);
}

/* The allocator's programs are sleepable: the kernel runs a non-sleepable
 * uprobe program inside rcu_read_lock(), two out-of-line calls with this
 * kernel's preemptible RCU, ~18 ns per probe hit here (a sleepable one is
 * covered by the RCU-tasks-trace lock the kernel takes for every uprobe
 * program anyway). Their reads stay the non-faulting kind, so they never
 * sleep: per-CPU scratch is as safe as in a non-sleepable program. The
 * floor's programs are sleepable too, so the floor is the cheapest probe. */
static __always_inline int enter(struct pt_regs *ctx, __u64 ud, __u64 ptr,
				 __u64 osize, __u64 nsize, const int kst)
{
	struct ctx c = { .regs = ctx };
	struct lmt_event ev = {};
	const struct lmt_vm *vm;
	__u64 id = 0;
	__u32 zero = 0;

	if (ab) {
		if (nsize == LMT_AB_MARK)
			ab_floor = !ab_floor;
		if (ab_floor)
			return 0;
	}
	c.pc = bpf_map_lookup_elem(&stats, &zero);
	if (!c.pc || stop)
		return 0;
	c.st = &c.pc->st;
	vm = vm_of(&c, ud, &id);
	if (!vm)
		return 0;
	if (ptr) {
		/* The block may be a cached GCfunc. */
		__u64 h = fnc_hash(ptr, c.tgid);
		__u32 fk = fnc_slot(h);

		if (*fntag_of(fk) == fnc_tag(h)) {
			struct fnc *fc = bpf_map_lookup_elem(&fncache, &fk);

			*fntag_of(fk) = 0;
			if (fc && fc->fn == ptr)
				fc->fn = 0;
		}
	}
	ev.rec = LMT_REC_EVENT;
	ev.tgid = c.tgid;
	ev.tid = (__u32)id;
	ev.kind = nsize == 0 ? 2 : ptr == 0 ? 1 : 3;
	ev.oaddr = ptr;
	ev.osize = ev.kind == 1 ? 0 : osize;
	ev.nsize = nsize;
	attribute(&c, vm, ptr, &ev, kst);
	/* Prototypes and traces are bigger than their headers: smaller
	 * blocks, and blocks never announced, need no objs lookup. */
	if (ev.kind != 1 && (osize > vm->lay.pt_size || osize > vm->lay.T_size) &&
	    objb_test(c.tgid, ptr))
		forget(&c, ptr);
	if (ev.kind == 2)
		send(&c, &ev);
	else
		park(&c, ud, &ev);
	c.st->reads += c.reads;
	return 0;
}

/* The allocator's entry probe: alloc_enter where the kernel keeps gread_k
 * on its stack, alloc_enter_compat elsewhere (user space loads one). */
SEC("uprobe.s")
int BPF_KPROBE(alloc_enter, __u64 ud, __u64 ptr, __u64 osize, __u64 nsize)
{
	return enter(ctx, ud, ptr, osize, nsize, 1);
}

SEC("uprobe.s")
int BPF_KPROBE(alloc_enter_compat, __u64 ud, __u64 ptr, __u64 osize,
	       __u64 nsize)
{
	return enter(ctx, ud, ptr, osize, nsize, 0);
}

SEC("uretprobe.s")
int BPF_KRETPROBE(alloc_return, __u64 ret)
{
	struct ctx c = { .regs = ctx };
	struct lmt_event ev = {};
	__u32 zero = 0, k;
	struct pend *p, e;
	__u64 id = 0;

	if (ab && ab_floor)
		return 0;
	c.pc = bpf_map_lookup_elem(&stats, &zero);
	if (!c.pc || stop)
		return 0;
	c.st = &c.pc->st;
	e.thr = thr_of(ctx, c.pc);
	k = pend_of(e.thr);
	p = bpf_map_lookup_elem(&pends, &k);
	if (!p)
		return 0;
	/* One load each: a second could see another writer. A free's return
	 * (one probe for all calls) finds no entry of its own. */
	e.chk = *(volatile __u64 *)&p->chk;
	e.sp = *(volatile __u64 *)&p->sp;
	e.ud = *(volatile __u64 *)&p->ud;
	e.hdr = *(volatile __u64 *)&p->hdr;
	e.loc = *(volatile __u64 *)&p->loc;
	e.oaddr = *(volatile __u64 *)&p->oaddr;
	e.osize = *(volatile __u64 *)&p->osize;
	e.nsize = *(volatile __u64 *)&p->nsize;
	if (*(volatile __u64 *)&p->thr != e.thr || e.sp != PT_REGS_SP(ctx) ||
	    e.chk != pend_chk(&e) ||
	    __sync_val_compare_and_swap(&p->chk, e.chk, 0) != e.chk)
		return 0;
	c.st->parked--; /* summed over CPUs, what is left is in flight */
	if (!vm_of(&c, e.ud, &id))
		return 0;
	ev.rec = LMT_REC_EVENT;
	ev.tgid = c.tgid;
	ev.tid = (__u32)id;
	ev.kind = (__u8)e.hdr;
	ev.src = (__u8)(e.hdr >> 8);
	ev.flags = (__u8)(e.hdr >> 16);
	ev.line = e.hdr >> 32;
	ev.loc = e.loc;
	ev.oaddr = e.oaddr;
	ev.osize = e.osize;
	ev.naddr = ret;
	ev.nsize = e.nsize;
	send(&c, &ev);
	return 0;
}

/* Claim the VM's slot for it, if free (see struct lmt_slot). */
static __always_inline void slot_claim(__u32 tgid, __u64 ud,
				       const struct lmt_vm *vm)
{
	__u32 si = lmt_slot_of(ud);
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &si);
	struct lmt_batch *h;

	if (!sl || sl->tgid || __sync_val_compare_and_swap(&sl->tgid, 0, tgid))
		return;
	sl->ud = ud;
	__builtin_memcpy(&sl->vm, vm, sizeof(*vm));
	h = (struct lmt_batch *)sl->buf;
	h->rec = LMT_REC_BATCH;
	h->tgid = tgid;
	h->vm = vm->id;
	sl->len = sizeof(*h);
	asm volatile("" ::: "memory");
	sl->live = 1;
}

/* -- Stops ---------------------------------------------------------------- */

/* Processes stopped (SIGSTOP) until user space has done what needs the
 * process still: probe a new allocator, read a new object's symbols. Each
 * stop is an entry, made before the signal and removed by user space
 * after its SIGCONT, so the map always names every stop owed a SIGCONT: a
 * guardian process holds it too, and continues what is left if the
 * tracer dies (user/guard.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lmt_stop);
	__type(value, __u32);
} stops SEC(".maps");

__u32 stopseq;

static __always_inline __u8 stop_process(__u32 tgid)
{
	struct lmt_stop k = { .tgid = tgid,
			      .seq = __sync_fetch_and_add(&stopseq, 1) };
	__u32 one = 1;

	if (bpf_map_update_elem(&stops, &k, &one, BPF_NOEXIST))
		return 0;
	/* To this thread: a SIGSTOP to the process finds one pending from
	 * another thread and wakes nobody, so this thread would run on until
	 * the other dequeues it (measured: VMs created at the same moment ran
	 * for a millisecond, allocations unseen). A stop signal sent to one
	 * thread still stops the whole process. */
	if (bpf_send_signal_thread(SIGSTOP)) {
		bpf_map_delete_elem(&stops, &k);
		return 0;
	}
	return 1;
}

static __always_inline void count_lost_vm(void)
{
	__u32 zero = 0;
	struct lmt_percpu *pc = bpf_map_lookup_elem(&stats, &zero);

	if (pc)
		pc->st.lost_vm++;
}

/* -- New VMs, new objects, new programs --------------------------------- */

/* Registers the new VM L of tgid here and now if its allocator is already
 * probed (threads of one program share it). 1 if it did. */
static __always_inline int register_vm(__u32 tgid, struct lmt_proc *pr,
				       __u64 L, struct lmt_newvm *n)
{
	__u64 g = 0, gw[2] = {};
	struct lmt_vm *vm;
	__u32 zero = 0;

	if (!pr->has_layout ||
	    bpf_probe_read_user(&g, 8, (void *)(L + pr->lay.L_glref)) ||
	    bpf_probe_read_user(gw, 16, (void *)(g + pr->lay.g_allocf)))
		return 0;
	n->g = g;
	n->allocf = gw[0];
	n->ud = gw[1];
	{
		struct lmt_allocf_key ak = { .tgid = tgid, .allocf = gw[0] };
		struct lmt_vm_key vk = { .tgid = tgid, .ud = gw[1] };
		struct main_key mk = { .tgid = tgid, .L = L };
		struct ctx c = { .pc = bpf_map_lookup_elem(&stats, &zero) };

		/* The layout value lives in a per-CPU slot: too big for the
		 * stack. */
		vm = bpf_map_lookup_elem(&vmbuf, &zero);
		if (!vm || !bpf_map_lookup_elem(&allocfs, &ak))
			return 0;
		vm->g = g;
		vm->id = pr->next_id++; /* a label only: races are harmless */
		vm->lay = pr->lay;
		/* The process's first VM was registered by user space: this
		 * one is at least its second (or shares a ud). */
		if (c.pc) {
			c.st = &c.pc->st;
			unbatch(&c);
		}
		if (bpf_map_lookup_elem(&vms, &vk) ||
		    bpf_map_update_elem(&vms, &vk, vm, BPF_NOEXIST) ||
		    bpf_map_update_elem(&mains, &mk, &vk, BPF_ANY))
			return 0;
		n->id = vm->id;
		slot_claim(tgid, vk.ud, vm);
	}
	return 1;
}

/* lua_newstate returned. A VM whose allocator is probed is registered on
 * the spot, so none of its allocations is missed and nothing stops.
 * Otherwise the process stops until user space has probed the new
 * allocator. Without room for the record nothing stops, and the VM is
 * counted lost. */
SEC("uretprobe")
int BPF_KRETPROBE(newstate_return, __u64 L)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr;
	struct lmt_newvm *n;

	/* Once tracing stops, a new VM is none of our business: above all,
	 * its process is not stopped. */
	if (!L || stop || !(pr = bpf_map_lookup_elem(&procs, &tgid)))
		return 0;
	n = bpf_ringbuf_reserve(&rb, sizeof(*n), 0);
	if (!n) {
		count_lost_vm();
		return 0;
	}
	__builtin_memset(n, 0, sizeof(*n));
	n->rec = LMT_REC_NEWVM;
	n->tgid = tgid;
	n->L = L;
	n->registered = register_vm(tgid, pr, L, n);
	if (!n->registered)
		n->stopped = stop_process(tgid);
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* The dynamic linker's debugger hook, _dl_debug_state, runs before and
 * after a dlopen or dlclose changes the process's objects. A C module's
 * functions are named from its file, which must be read while it is
 * mapped, however soon the process exits: stop it until user space has. */
SEC("uprobe")
int BPF_KPROBE(dl_state)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct lmt_mapped *n;

	/* Before its first VM nothing is named yet: user space reads every
	 * object when it registers that VM. */
	if (stop || !pr || !pr->has_layout)
		return 0;
	n = bpf_ringbuf_reserve(&rb, sizeof(*n), 0);
	if (!n) {
		count_lost_vm();
		return 0;
	}
	__builtin_memset(n, 0, sizeof(*n));
	n->rec = LMT_REC_MAPPED;
	n->tgid = tgid;
	n->stopped = stop_process(tgid);
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A traced process executed a new program. Its probes sit on files, by
 * PID: they would go on firing in the new image, beside the new image's
 * own. Tracing ends at this instant (one process per tracer): user space
 * polls execd. The exec that starts -- COMMAND is the one expected. */
__u32 execd;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct lmt_proc *pr = bpf_map_lookup_elem(&procs, &tgid);

	if (!pr || stop)
		return 0;
	if (pr->spawn) {
		pr->spawn = 0;
		return 0;
	}
	stop = 1;
	execd = tgid;
	return 0;
}

/* lua_close(L): the VM tears itself down. Like the in-VM profiler, which
 * lua_close stops, we stop there, so that what is live at the end of the
 * program is what the stream shows as live. */
SEC("uprobe")
int BPF_KPROBE(close_enter, __u64 L)
{
	struct main_key mk = { .tgid = bpf_get_current_pid_tgid() >> 32, .L = L };
	struct lmt_vm_key *vk = bpf_map_lookup_elem(&mains, &mk);
	struct lmt_close *n;

	if (!vk)
		return 0;
	{
		/* Its batch goes first: the VM's last events precede CLOSE. */
		struct ctx c = { .tgid = mk.tgid, .si = lmt_slot_of(vk->ud) };
		struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &c.si);
		__u32 zero = 0;

		c.pc = bpf_map_lookup_elem(&stats, &zero);
		if (c.pc && sl && sl->live && sl->tgid == vk->tgid && sl->ud == vk->ud) {
			c.st = &c.pc->st;
			flush_slot(&c, sl);
			sl->live = 0;
		}
	}
	bpf_map_delete_elem(&vms, vk);
	bpf_map_delete_elem(&mains, &mk);
	n = bpf_ringbuf_reserve(&rb, sizeof(*n), 0);
	if (!n)
		return 0;
	n->rec = LMT_REC_CLOSE;
	n->tgid = mk.tgid;
	n->L = L;
	bpf_ringbuf_submit(n, 0);
	return 0;
}

/* The benchmark floor: the same probe points with programs that do
 * nothing, to measure what the probes themselves cost. Sleepable, as the
 * allocator's programs are (see alloc_enter): the cheapest kind here. */
SEC("uprobe.s")
int floor_enter(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe.s")
int floor_return(struct pt_regs *ctx)
{
	return 0;
}
