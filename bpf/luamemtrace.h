/* Shared by the BPF programs and user space: the LuaJIT layout description
 * handed to BPF per VM, and the records BPF sends through the ring buffer.
 * Offsets themselves live in one table (user/target/layout.c); BPF only ever sees
 * them through struct lj_layout.
 */
#ifndef LMT_SHARED_H
#define LMT_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* What an index of ~vmstate means to attribution. */
enum lmt_vmst {
	LMT_VMST_FRAME = 0,    /* look at the top frame of cur_L */
	LMT_VMST_INTERNAL = 1, /* GC, optimizer, assembler */
	LMT_VMST_INTERP = 2,   /* the interpreter: as FRAME, and what it saves as
				* its PC follows the rules of struct pcc
				* (bpf/attribute.h) */
	LMT_VMST_EXIT = 3,     /* a trace exits: J->parent and J->exitno name
				* the trace and its snapshot */
	LMT_VMST_RECORD = 4,   /* the recorder: the state stays set while the
				* interpreter runs the recorded instruction,
				* charged as INTERP; the recorder's own calls
				* run in lj_vm_cpcall's frame, the VM's */
	LMT_VMST_ASM = 5,      /* the assembler: as INTERNAL; it allocates each
				* new trace's GCtrace (bpf/announce.h: trgen) */
};

#define LMT_VMST_MAX 16

/* --ab (benchmark): the allocation size that switches between tracing and
 * the floor. LuaJIT allocates exactly this for the array part of
 * require("table.new")(99991, 0) (99992 slots of 8 bytes, with slot 0), and
 * nothing in a bench workload otherwise. */
#define LMT_AB_MARK 799936
/* --ab's switch (bpf/state.h: ab): by those allocations, or by user space's
 * clock (--ab=MS) */
#define LMT_AB_MARKED 1
#define LMT_AB_TIMED 2
/* --ab-without (benchmark): the parts of tracing the floor's windows go
 * without, tracing all the rest, instead of doing nothing; each part's
 * cost is then the pairs' ratio (bpf/state.h: ab_leaves) */
#define LMT_AB_W_SEARCH 1 /* the search of the stack in a trace (bpf/trace.h) */
#define LMT_AB_W_ATTR 2   /* attribution: every event the VM's, no read */
#define LMT_AB_W_RING 4   /* the ring: a full batch is dropped (counted lost);
			   * an event sent alone still goes */
#define LMT_AB_W_TOLD 8   /* addresses told at entry (bpf/lja.h): every
			   * allocation's return probed */

/* Offsets (bytes) into LuaJIT's structures for one build variant: only
 * what BPF reads (user/target/layout.c is the table). */
struct lj_layout {
	/* global_State */
	__u16 g_allocf, g_allocd, g_vmstate, g_mainthref, g_cur_L;
	/* global_State: the running trace's base (stacks) */
	__u16 g_jit_base;
	/* GG_State: g and J relative to the main lua_State (= start of GG) */
	__u16 gg_g, gg_J;
	/* jit_State */
	__u16 J_trace;
	/* lua_State */
	__u16 L_gct, L_glref, L_base, L_stack, L_cframe;
	/* GCfunc */
	__u16 fn_ffid, fn_pc, fn_f;
	/* GCproto */
	__u16 pt_size, pt_sizebc, pt_chunkname, pt_firstline, pt_numline,
		pt_lineinfo;
	/* GCstr */
	__u16 str_size, str_len;
	/* GCtrace: startpt to mcode are read as one LMT_TWIN window */
	__u16 T_size, T_startpt, T_startpc, T_szmcode, T_mcode; /* T_size:
						      * sizeof(GCtrace) */
	/* jit_State: parent, then exitno (a trace's exit) */
	__u16 J_parent;
	/* C frame of the interpreter */
	__u16 cf_pc;
	__u8 gc64; /* refs are 64-bit (bpf/lj.h: what else GC64 means) */
	/* Type tags (the gct byte, ~itype) */
	__u8 tthread, tfunc;
	__u8 nvmst; /* number of vmstate indices */
	__u8 vmst[LMT_VMST_MAX]; /* enum lmt_vmst per index */
};

/* Fixed-size reads of a structure's head (bpf/announce.h, attribute.h):
 * every field BPF takes from one lies inside it (lmt_windows_fit). */
#define LMT_PTWIN 96 /* a GCproto */
#define LMT_FNWIN 48 /* a GCfunc */
#define LMT_TWIN 32  /* a GCtrace, from startpt */

/* Per-VM configuration, keyed by (tgid, allocator ud). */
struct lmt_vm_key {
	__u32 tgid;
	__u32 pad;
	__u64 ud;
};

struct lmt_vm {
	__u64 g;  /* global_State address */
	__u32 id; /* luamemtrace's number for this VM */
	__u32 pad;
	struct lj_layout lay;
};

/* Registered VMs get a slot in a direct-mapped table, shared with user
 * space through mmap: BPF reads it without a helper call (an array lookup
 * is inlined, a hash lookup is not), and batches the VM's events in it, so
 * that a ring buffer record carries many events (a reserve and submit per
 * event would cost more; docs/costs.md). A slot is found by the
 * allocator's ud (lmt_slot_of), and names its process: the programs run
 * only in traced processes, so the fast path needs no helper call for the
 * process id (one costs ~2% of the floor, measured). Processes whose VMs
 * have one ud (forked children, which have their parent's addresses;
 * twins without address randomisation) mark that slot shared: there the
 * process id is loaded from the task (cur_task), the owner keeps the
 * slot, and the others go to the slot of their process and ud
 * (lmt_slot2_of). shared stays set.
 * A slot is claimed by a compare-and-swap of tgid from 0, by user space or
 * by BPF, filled, then marked live; BPF clears live at lua_close, and user
 * space frees it (tgid 0) once its process has exited or executed a new
 * program and its batch is read. Collisions go through the vms hash map
 * and one record per event.
 *
 * buf starts with a struct lmt_batch header naming the process and VM,
 * written at claim time; BPF appends events after it, packed (Events on
 * the wire), and sends buf[0, len) as one ring buffer record when the next
 * one might not fit, before any symbol record (so a prototype's
 * announcement or end never overtakes the events before it) and at
 * lua_close. What is left when tracing stops user space reads from the
 * slot.
 *
 * Batches keep the order of one VM's events, which is all a stream of one
 * VM needs. VMs written to one stream together (-o FILE with a process of
 * several VMs) need the order across VMs: then every event and symbol
 * record carries the process's sequence number (lmt_ev.seq; the multi
 * flag), taken under the slot's lock as it is appended, or after its
 * ring buffer record is reserved (a prototype's or a stack's, copied in
 * by bpf_ringbuf_output: just before it is sent, so it may come after
 * user space has passed its number; it never comes after an event that
 * names it), and user space merges the VMs' batches by it
 * (user/streams/merge.c). busy is a lock taken by compare-and-swap around
 * every use of the batch: two threads in one slot at once (VMs sharing a
 * ud, whose events cannot be told apart) do not wait; the one that finds
 * it taken sends its event on its own, and batching ends (the nobatch
 * flag): a slot's batch is flushed by its next event. */
#define LMT_NSLOT 256
#define LMT_SBUF 4096
#define LMT_BUSY_BPF 1  /* lmt_slot.busy: a program holds it */
#define LMT_BUSY_USER 2 /* user space holds it */
/* bpf/lja.h: a VM's allocation addresses are told at entry once this many
 * returns agreed with what the entry told, and one in LMT_PRED_EVERY of
 * them (a power of two) is checked at its return after that. */
#define LMT_PRED_TRUST 64
#define LMT_PRED_EVERY 64

/* The one record of events: a header, then events. An event sent on its
 * own is a batch of one. */
struct lmt_batch {
	__u8 rec; /* LMT_REC_BATCH */
	__u8 pad[3];
	__u32 tgid; /* the process */
	__u32 vm;   /* its VM (struct lmt_vm id) */
	__u32 len;  /* bytes used where the record is longer (an event sent
		     * alone: its reservation is the longest event's); 0: all */
} __attribute__((aligned(8))); /* events after it are stored by words */

/* An alloc, free or realloc, or an allocation's return (LMT_RET).
 *
 * An allocation leaves at its entry, before the allocator has chosen its
 * address: its naddr is the thread's await mark (lmt_await_mark), which
 * its return replaces in place while the event is still in its slot's
 * batch (bpf/await.h). Otherwise the return sends an LMT_RET event, loc
 * its mark, naddr the address, and user space completes the allocation
 * (user/capture/ring.c: awaits); such an event in a batch of LMT_VM_NONE
 * names only its process. */
#define LMT_VM_NONE 0xffffffffu
struct lmt_ev {
	__u8 kind;  /* 1 alloc, 2 free, 3 realloc, 4 return */
	__u8 src;   /* enum lmt_src */
	__u8 flags; /* LMT_EV_* */
	__u8 pad;
	__u32 line; /* or a bytecode position (LMT_EV_POS) */
	__u64 loc;  /* prototype, C function or trace number */
	__u64 oaddr, osize, naddr, nsize;
	__u64 stk;  /* --stacks: its Lua stack (struct lmt_stack id); 0 none */
	__u64 seq;  /* the process's sequence (struct lmt_slot); 0 none */
};

/* The foreign map's value (bpf/luamemtrace.bpf.c): a process's name. */
struct lmt_comm {
	char comm[16];
};

struct lmt_slot {
	__u32 tgid; /* owner; 0: free */
	__u8 live;
	__u8 shared; /* another process has a VM with this ud */
	__u8 pok;    /* bpf/lja.h: addresses told at entry that the returns
		      * confirmed, up to LMT_PRED_TRUST (then they are used) */
	__u8 pwrong; /* one did not: none told for this VM any more */
	__u64 ud;
	struct lmt_vm vm;
	__u32 len;  /* bytes used in buf */
	__u32 busy; /* lock of len, buf, last and nev */
	__u32 last; /* offset of the batch's last event */
	__u32 nev;  /* events in the batch */
	__u32 pn;   /* bpf/lja.h: addresses told since the VM's allocator was
		     * trusted: every LMT_PRED_EVERY-th is checked at its
		     * return all the same (one thread at a time: no lock) */
	__u32 pad3;
	__u8 buf[LMT_SBUF + 64]; /* + 64: a masked offset below LMT_SBUF
				  * plus an event (LMT_EV_WMAX words) stays in
				  * bounds */
};

/* The hash constant of every cache (bpf/cache.h): 2^64 / phi, odd. */
#define LMT_HASH_K 0x9e3779b97f4a7c15ULL

static inline __u32 lmt_slot_of(__u64 ud)
{
	return (__u32)((ud * LMT_HASH_K) >> 56) & (LMT_NSLOT - 1);
}

/* The slot of a process's VM whose ud's slot is shared. */
static inline __u32 lmt_slot2_of(__u32 tgid, __u64 ud)
{
	return (__u32)(((ud ^ (__u64)tgid << 44 ^ 0x5bd1e995ULL) * LMT_HASH_K) >> 56) &
	       (LMT_NSLOT - 1);
}

/* Ring buffer records. */
enum lmt_rec {
	LMT_REC_BATCH = 1, /* events (struct lmt_batch) */
	LMT_REC_PROTO,     /* first sight of a prototype */
	LMT_REC_TRACE,     /* first sight of a trace */
	LMT_REC_NEWVM,     /* lua_newstate returned in a traced process */
	LMT_REC_CLOSE,     /* lua_close began: the VM is no longer traced */
	LMT_REC_FORGET,    /* a prototype was freed */
	LMT_REC_MAPPED,    /* the dynamic linker changed the process's objects */
	LMT_REC_EXEC,      /* a traced process executed a new program */
	LMT_REC_FORK,      /* a traced process forked: the child is traced */
	LMT_REC_STACK,     /* first sight of a Lua stack (--stacks) */
	LMT_REC_EXITING,   /* a traced process called exit(): stopped */
};

/* Event kinds, same numbering as user/format/memprof.h enum mp_kind. */
enum lmt_kind {
	LMT_ALLOC = 1,
	LMT_FREE = 2,
	LMT_REALLOC = 3,
	LMT_RET = 4, /* not a memprof event: an allocation's address */
};

/* An allocation awaiting its address (struct lmt_ev): the address of its
 * thread's pt_regs, which names the thread for its life (the top of its
 * kernel stack), with bit 0 set; never a user address. A thread has one
 * allocation in flight at a time. */
static inline int lmt_await_mark(__u64 naddr)
{
	return (naddr >> 63) && (naddr & 1);
}

/* While events are numbered, does an awaiting event of kind, old block
 * oaddr, completed with addr, take its return's number? An allocation,
 * or a realloc that stayed in place, does: a block another VM freed
 * before the address was chosen comes first. A realloc that moved keeps
 * its entry's: the free of its old block, inside it, must not come after
 * that block's next owner (bpf/await.h, user/capture/ring.c). */
static inline int lmt_await_renumbers(__u8 kind, __u64 oaddr, __u64 addr)
{
	return kind == LMT_ALLOC || addr == oaddr;
}

/* Sources, same numbering as user/format/memprof.h enum mp_src. */
enum lmt_src {
	LMT_SRC_INTERNAL = 1,
	LMT_SRC_LFUNC = 2,
	LMT_SRC_CFUNC = 3,
	LMT_SRC_TRACE = 4,
};

/* lmt_ev.flags */
#define LMT_EV_POS 1    /* line holds a bytecode position of proto loc;
			 * user space maps it to a line (lineinfo came with
			 * the prototype's record) */
#define LMT_EV_MCOFS 2  /* TRACE: line holds the offset in trace loc's
			 * machine code of the call that allocates; user
			 * space maps it to a line through the snapshots */
#define LMT_EV_EXIT 4   /* TRACE: line holds the number of the snapshot
			 * trace loc exits through (sunk allocations
			 * restored) */

/* -- Events on the wire ----------------------------------------------------- */

/* In a batch an event is packed in words, leaving out what it does not
 * have: a header word (kind, src, flags, its number of words, line), then
 * loc if it has one, its block (naddr and nsize for an allocation or a
 * return, oaddr and osize for a free; a realloc has both, new first),
 * stk with --stacks, seq while events are numbered. A free in the GC
 * takes 3 words, an allocation in a trace 4, against the 8 of struct
 * lmt_ev: every copy of it (the slot, the ring, user space's reads) is
 * that much smaller (docs/costs.md). An allocation's naddr, which its
 * return writes in place, is word lmt_ev_naddr_w. The flags below are the
 * wire's own; the header's flags byte carries the LMT_EV_* above too. */
#define LMT_EV_LOC 8  /* loc is sent */
#define LMT_EV_STK 16 /* stk is sent */
#define LMT_EV_SEQ 32 /* seq is sent */
#define LMT_EV_WIRE (LMT_EV_LOC | LMT_EV_STK | LMT_EV_SEQ)
#define LMT_EV_WMAX 8 /* words of the longest event */

/* The header word's fields: kind, source, flags, words and line. */
static inline __u8 lmt_ev_kind(__u64 h)
{
	return (__u8)h;
}

static inline __u8 lmt_ev_src(__u64 h)
{
	return (__u8)(h >> 8);
}

static inline __u32 lmt_ev_line(__u64 h)
{
	return (__u32)(h >> 32);
}

static inline __u8 lmt_ev_flags(__u64 h)
{
	return (__u8)(h >> 16);
}

static inline __u32 lmt_ev_nw(__u64 h)
{
	return (__u8)(h >> 24);
}

static inline __u32 lmt_ev_words(__u8 kind, __u8 fl);

/* The words of the event whose header is h, of at most avail words: 0 if
 * they do not make an event. */
static inline __u32 lmt_ev_check(__u64 h, __u64 avail)
{
	const __u8 kind = lmt_ev_kind(h);
	const __u32 n = lmt_ev_nw(h);

	if (!avail || kind < LMT_ALLOC || kind > LMT_RET || n != lmt_ev_words(kind, lmt_ev_flags(h)) ||
	    n > avail)
		return 0;
	return n;
}

/* The word of the event with flags fl holding its naddr (an allocation, a
 * realloc, a return). */
static inline __u32 lmt_ev_naddr_w(__u8 fl)
{
	return 1 + !!(fl & LMT_EV_LOC);
}

/* The word of the event of kind with flags fl holding its oaddr (a free;
 * a realloc: after its naddr and nsize), its osize the next; for the
 * other kinds, which have none, naddr's: so + 2 is past the last address
 * and size of any kind. */
static inline __u32 lmt_ev_oaddr_w(__u8 kind, __u8 fl)
{
	return lmt_ev_naddr_w(fl) + 2 * (kind == LMT_REALLOC);
}

/* The words an event of kind with flags fl takes. */
static inline __u32 lmt_ev_words(__u8 kind, __u8 fl)
{
	return 3 + !!(fl & LMT_EV_LOC) + 2 * (kind == LMT_REALLOC) +
	       !!(fl & LMT_EV_STK) + !!(fl & LMT_EV_SEQ);
}

/* Packs e, numbered seq (0: not numbered), into w: its number of words.
 * No branches: every word is stored, and the next one's place moves on
 * only past a word sent, so the verifier walks one path. Stores up to
 * LMT_EV_WMAX words whatever the event's length: w has room for them. */
static __always_inline __u32 lmt_ev_pack(__u64 *w, const struct lmt_ev *e, __u64 seq)
{
	const __u32 hl = e->loc != 0, hs = e->stk != 0, hq = seq != 0,
		    re = e->kind == LMT_REALLOC, fr = e->kind == LMT_FREE;
	__u32 n = 1;
	__u8 fl = (e->flags & ~LMT_EV_WIRE) | (hl ? LMT_EV_LOC : 0) |
		  (hs ? LMT_EV_STK : 0) | (hq ? LMT_EV_SEQ : 0);

	w[n] = e->loc;
	n += hl;
	w[n] = fr ? e->oaddr : e->naddr;
	w[n + 1] = fr ? e->osize : e->nsize;
	n += 2;
	w[n] = e->oaddr;
	w[n + 1] = e->osize;
	n += 2 * re;
	w[n] = e->stk;
	n += hs;
	w[n] = seq;
	n += hq;
	w[0] = e->kind | (__u64)e->src << 8 | (__u64)fl << 16 | (__u64)n << 24 |
	       (__u64)e->line << 32;
	return n;
}

/* The location, addresses and sizes of the event at w, of kind with flags
 * fl (lmt_ev_check passed), each 0 where it has none. */
static inline void lmt_ev_fields(const __u64 *w, __u8 kind, __u8 fl, __u64 *loc, __u64 *oaddr,
				 __u64 *osize, __u64 *naddr, __u64 *nsize)
{
	const __u32 na = lmt_ev_naddr_w(fl), oa = lmt_ev_oaddr_w(kind, fl);
	const int has_o = kind == LMT_FREE || kind == LMT_REALLOC;

	*loc = (fl & LMT_EV_LOC) ? w[1] : 0;
	*oaddr = has_o ? w[oa] : 0;
	*osize = has_o ? w[oa + 1] : 0;
	*naddr = kind == LMT_FREE ? 0 : w[na];
	*nsize = kind == LMT_FREE ? 0 : w[na + 1];
}

/* Unpacks the event at w, of at most avail words, into e: its number of
 * words, 0 if they do not make an event. */
static inline __u32 lmt_ev_unpack(const __u64 *w, __u64 avail, struct lmt_ev *e)
{
	const __u64 h = avail ? w[0] : 0;
	const __u8 kind = lmt_ev_kind(h), fl = lmt_ev_flags(h);
	const __u32 n = lmt_ev_check(h, avail);
	__u32 i;

	if (!n)
		return 0;
	/* Field by field: a compound literal's zeroing is a rep stos, as
	 * costly as the rest (user space unpacks every event). */
	e->kind = kind;
	e->src = lmt_ev_src(h);
	e->flags = fl & ~LMT_EV_WIRE;
	e->pad = 0;
	e->line = lmt_ev_line(h);
	lmt_ev_fields(w, kind, fl, &e->loc, &e->oaddr, &e->osize, &e->naddr, &e->nsize);
	i = lmt_ev_oaddr_w(kind, fl) + 2;
	e->stk = (fl & LMT_EV_STK) ? w[i] : 0;
	i += !!(fl & LMT_EV_STK);
	e->seq = (fl & LMT_EV_SEQ) ? w[i] : 0;
	return n;
}

/* -- Stacks (--stacks) ---------------------------------------------------- */

/* Frames a stack can hold (--stack-depth is at most this), and the
 * default depth. */
#define LMT_STK_MAX 256
#define LMT_STK_DEFAULT 64

/* A frame of a stack record, by kind (LMT_FR_*, the top byte of b). */
enum lmt_fr {
	LMT_FR_LUA = 1,  /* a = the frame's PC (its line is the instruction's
			  * before, as an event's), b = its prototype */
	LMT_FR_LINE = 2, /* a = line (BPF computed it: the prototype's line
			  * table stayed in the target), b = prototype */
	LMT_FR_C = 3,    /* a = the C function (GCfunc.f) */
	LMT_FR_FF = 4,   /* a = the fast function's entry (GCfunc.f), b =
			  * its ffid: a builtin */
	LMT_FR_FN = 5,   /* a = a GCfunc that could not be read or told */
};

#define LMT_FR_KIND(b) ((__u8)((b) >> 56))
#define LMT_FR_VAL(b) ((b) & ((1ULL << 56) - 1))

struct lmt_sframe {
	__u64 a, b;
};

/* The Lua stack of an event's coroutine, innermost frame first, sent once
 * per distinct stack (and again after its cache entry is evicted: user
 * space keeps the first). id is a 64-bit hash of the frames, the VM and
 * the prototype generation: what events carry (lmt_ev.stk). Inside a
 * trace (top set) the frames start at the caller of the trace's base
 * frame; user space adds the frames the trace's snapshot holds. */
struct lmt_stack {
	__u8 rec; /* LMT_REC_STACK */
	__u8 truncated; /* more frames below, beyond the depth */
	__u16 n;        /* frames */
	__u32 tgid;
	__u32 vm;
	__u8 intrace;  /* the frames start below a trace's base frame */
	__u8 stopped;  /* its process is stopped until user space has read it
			* (it shows a C function or builtin first) */
	__u8 pad[2];
	__u64 id;
	__u64 seq; /* the process's sequence (struct lmt_slot); 0 none */
	struct lmt_sframe f[LMT_STK_MAX];
};

/* A prototype was freed (so user space can drop its line table). */
struct lmt_forget {
	__u8 rec; /* LMT_REC_FORGET */
	__u8 pad[3];
	__u32 tgid;
	__u32 vm;
	__u32 pad2;
	__u64 addr;
	__u64 seq; /* the process's sequence (struct lmt_slot); 0 none */
};

/* Chunk names longer than this are sent as a prefix plus the GCstr's
 * address, and completed by user space from target memory. */
#define LMT_NAME_MAX 1024
_Static_assert((LMT_NAME_MAX & (LMT_NAME_MAX - 1)) == 0, "see_proto masks with it");

/* Line tables up to this size travel with the prototype's record, and its
 * events carry bytecode positions; larger ones stay in the target and BPF
 * computes those lines itself. */
#define LMT_LI_MAX 8192

struct lmt_proto {
	__u8 rec; /* LMT_REC_PROTO */
	__u8 li_width; /* bytes per lineinfo entry: 1, 2 or 4; 0: none sent */
	__u8 pad[2];
	__u32 tgid;
	__u32 vm; /* the VM whose event named it */
	__u32 pad2;
	__u64 addr;
	__u64 seq; /* the process's sequence (struct lmt_slot); 0 none */
	__s32 firstline;
	__u32 len;    /* full length of the chunk name */
	__u64 str;    /* address of the name's bytes in the target */
	__u32 copied; /* bytes in name[] */
	__u32 sizebc, numline;
	__u32 li_len; /* bytes in lineinfo[] (the record is cut after them) */
	char name[LMT_NAME_MAX];
	__u8 lineinfo[2 * LMT_LI_MAX]; /* only LMT_LI_MAX used; the rest
				       * lets the verifier bound a masked size */
};

struct lmt_trace {
	__u8 rec; /* LMT_REC_TRACE */
	__u8 stopped; /* its process is stopped until user space has read it */
	__u8 pad[2];
	__u32 tgid;
	__u32 vm;
	__u32 szmcode;
	__u64 traceno;
	__u64 proto;
	__u64 line;
	__u64 T;     /* its GCtrace: user space reads the snapshots there */
	__u64 mcode; /* its machine code */
	__u64 seq;   /* the process's sequence (struct lmt_slot); 0 none */
};

/* Key of the exes map (--all --exe: the names wanted, zero-padded; at
 * most LMT_EXES_MAX names). */
#define LMT_EXE_LEN 64
#define LMT_EXES_MAX 64
struct lmt_exe {
	char name[LMT_EXE_LEN];
};

/* Key of the stops map (bpf/stop.h): one entry per stop. */
struct lmt_stop {
	__u32 tgid;
	__u32 seq;
};

/* Its value. A stop is held until its SIGCONT: user space marks it
 * released before it decides whether to send that signal, which it does
 * only when no stop of the process is held in any tracer's map (two
 * tracers of one process each stop it; SIGSTOPs do not count, so one
 * tracer's SIGCONT would end the other's stop). conts: SIGCONTs the
 * process was sent while held (by anyone: another tracer, a shell), each
 * of which may have let it run unseen. soft: a stop that only paces the
 * process (--no-loss), where running on loses nothing unsaid. */
enum { LMT_STOP_HELD = 1, LMT_STOP_RELEASED = 2,
       LMT_STOP_EXPIRED = 3 /* held past the deadline: the guardian
			     * continued it (user/session/guard.h) */ };

/* How a forked child is stopped before it runs (bpf/stop.h: fork_stop):
 * not at all, by its parent's fork (6.13), by itself (schedule_tail). */
enum { LMT_FORK_STOP_NONE = 0, LMT_FORK_STOP_TASK = 1, LMT_FORK_STOP_SELF = 2 };

struct lmt_hold {
	__u8 state; /* LMT_STOP_* */
	__u8 soft;
	__u16 pad;
	__u32 conts;
	__u64 since; /* when it was made: bpf_ktime_get_boot_ns() */
	__u64 start; /* its process's start (start_boottime, ns): its
		      * identity, for a SIGCONT never sent to a PID reused */
};

/* A new VM. Unless BPF registered it, its process is stopped until user
 * space has probed its allocator (the stops map). */
struct lmt_newvm {
	__u8 rec; /* LMT_REC_NEWVM */
	__u8 registered; /* BPF registered it (its allocator is probed) */
	__u8 left_out;   /* --exe leaves its process out (BPF told, and
			  * ignores it from now on): not stopped */
	__u8 pad;
	__u32 tgid;
	__u64 L;
	__u64 g, allocf, ud;
	__u32 id;
	__u32 pad2;
};

/* _dl_debug_state ran in a traced process with a VM: a dlopen or dlclose
 * (the linker calls it before and after changing its list of objects). */
struct lmt_mapped {
	__u8 rec; /* LMT_REC_MAPPED */
	__u8 pad[3];
	__u32 tgid;
};

/* A traced process called libc's exit() (a return from main, os.exit):
 * it is stopped until user space has read what it sent, its slots too,
 * while the tables and bytecode its names come from still exist. */
struct lmt_exiting {
	__u8 rec; /* LMT_REC_EXITING */
	__u8 pad[3];
	__u32 tgid;
};

/* A traced process executed a new program: its streams end there. */
struct lmt_exec {
	__u8 rec; /* LMT_REC_EXEC */
	__u8 pad[3];
	__u32 tgid;
};

/* A traced process forked (-o DIR): the child has its parent's VMs at the
 * same addresses, registered for it in BPF, and is stopped until user
 * space has probed it (unless stopped is 0: then it is not traced). */
struct lmt_fork {
	__u8 rec; /* LMT_REC_FORK */
	__u8 stopped;
	__u8 pad[2];
	__u32 ptgid, tgid;
	__u32 pad2;
};

/* A traced process: once one VM is known, the layout of its new VMs. */
struct lmt_proc {
	__u32 has_layout;
	__u32 next_id; /* ids of VMs BPF registers itself */
	__u8 spawn;    /* -- COMMAND: execs before its first VM start it */
	__u8 ignore;   /* --all: left out by a filter; nothing of it is traced */
	/* --stacks: a stack first seen since its last lua_close stop. Its
	 * frames' names are read from the callers' bytecode (user/convert/
	 * fnames.c), which a process that exits takes with it: lua_close
	 * stops the process until user space has read them (close_enter). */
	__u8 unnamed;
	__u8 exiting; /* it called exit() (exit_enter) */
	__u8 pad[4];
	struct lj_layout lay;
};

/* Allocators probed in a process. */
struct lmt_allocf_key {
	__u32 tgid;
	__u32 pad;
	__u64 allocf;
};

struct lmt_close {
	__u8 rec;     /* LMT_REC_CLOSE */
	__u8 stopped; /* its process is stopped until user space has read
		       * what it sent before (bpf: close_enter) */
	__u8 pad[2];
	__u32 tgid;
	__u32 vm;
	__u32 pad2;
};

/* find_po's argument (bpf/direct.h): in, the GiBs of physical address
 * space to search and a word of the caller's memory with the value it
 * holds; out, the PGD and the direct map's base found. */
struct lmt_po {
	__u64 gib;
	__u64 probe, want;
	__u64 pgd, po;
};

/* Counters, per CPU; user space sums them. */
struct lmt_stats {
	__u64 events;     /* alloc/free/realloc records submitted */
	__u64 lost;       /* records that found the ring buffer full */
	__u64 lost_sym;   /* symbol records that found it full */
	__u64 reads;      /* reads of target memory, all paths */
	__u64 read_errs;  /* reads that faulted */
	__u64 protos;     /* prototype records */
	__u64 traces;     /* trace records */
	__u64 unknown_vm; /* allocator hits with an unknown ud */
	__u64 missed;     /* user space's: allocations whose address was
			   * lost (user/capture/ring.c: awaits) */
	__u64 parked;     /* user space's: allocations awaiting their
			   * return, in flight */
	__u64 lost_vm;    /* new VMs (or dlopens) whose record found the ring
			   * full: not traced, or C names missing */
	__u64 stacks;     /* stack records sent (--stacks) */
	__u64 lost_stk;   /* events whose stack could not be told or sent */
	__u64 paused;     /* --no-loss: stops for a ring over half full */
	__u64 ev_recs;    /* ring buffer records the events went in */
	__u64 direct;     /* of the reads, those done through the page
			   * tables (bpf/direct.h) */
	__u64 pred;       /* allocations whose address was told at entry,
			   * their return not probed (bpf/lja.h) */
	__u64 pchk;       /* addresses told at entry checked at the return */
	__u64 pwrong;     /* of them, those the return contradicted after
			   * its VM's were used */
	__u64 pdecl;      /* VMs whose allocator failed its trial: none of
			   * their addresses told */
};

/* Per-CPU value of the stats map: the counters, then BPF's scratch space
 * (windows of target structures; too big for the BPF stack). */
#define LMT_WIN 128
#define LMT_SHINT_BITS 2 /* bpf/trace.h: 2^N traces' last returns kept */
#define LMT_SHINT (1 << LMT_SHINT_BITS)
#define LMT_TM 4 /* bpf/trace.h: traces charged last kept per CPU (a loop's
		  * root trace and the side traces it exits to) */
#define LMT_STKW 64 /* words of user stack searched for a return address
		     * into a trace's machine code (bpf/trace.h) */
#define LMT_GWIN 464 /* GG_State from the main lua_State's base field
			* to g's cur_L (lmt_gwin_fits): 440 bytes on
			* Debian's luajit, 456 on luajit2; with the locals
			* of its reader, under BPF's 512-byte frame */
/* A page walked (bpf/direct.h): for page tables pgd of the mm whose
 * never-reused ID is ctx, the page's number and kernel address, walked
 * under that mm's TLB generation gen; used: when it was last (the CPU's
 * clock of uses). */
struct lmt_walk {
	__u64 pgd, v, k, ctx, gen, used;
};
#define LMT_NWALK 4 /* pages walked kept per CPU: a power of 2 */

struct lmt_percpu {
	struct lmt_stats st;
	__u64 unwoken; /* bytes this CPU submitted since it last woke the consumer */
	__u64 spill;   /* a pointer stored and read back as a number */
	/* bpf/await.h: the allocation this CPU last sent at its entry:
	 * its mark, sp at its return, where it went (process, slot), its
	 * offset in the batch and its VM */
	__u64 await[4];
	/* bpf/direct.h: the pages walked last, walk[cur] the last used, and
	 * the count of uses that stamps them; the run's mm: the address of
	 * its TLB generation and its ID (dr_pgd); the generation the last
	 * dr_addr read (dr_same) */
	struct lmt_walk walk[LMT_NWALK];
	__u64 tg, ctx, gen, clock;
	__u32 cur, pad2;
	__u8 wide[4];  /* per event kind: its last one needed a frame */
	__u8 pad[4];
	/* bpf/trace.h: where the last return into a trace's code was
	 * found, for that code, in those page tables; by the code's hash */
	__u64 sh[LMT_SHINT][3];
	/* bpf/trace.h: the traces whose code this CPU charged last, one by
	 * the low bits of its number, each with a check word (tm_get) */
	__u64 tm[LMT_TM][5];
	__u8 gw[LMT_GWIN]; /* GG_State: main lua_State and global_State */
	__u8 w[LMT_WIN];  /* lua_State / GCfunc */
	__u8 pw[LMT_WIN]; /* GCproto */
	__u8 fw[LMT_WIN]; /* caller's GCfunc */
	__u64 stk[LMT_STKW]; /* the user stack above sp (bpf/trace.h) */
};

/* g->vmstate through the string helper, which copies up to the first zero
 * byte and zeroes the bytes after it, returning the length with the zero
 * (n). vmstate is ~state (bytes xx ff ff ff) or a trace number below 65535
 * (trace_findfree), so xx yy 00 00: copied up to byte 4, or up to a zero in
 * byte 1 or 2, the copy is the whole value. A zero in byte 0 (a trace
 * number that is a multiple of 256) or byte 3 alone needs a plain read. */
static inline int lmt_vmstate_whole(long n)
{
	return n >= 5 || n == 2 || n == 3;
}

/* Bytes of a GCRef/MRef: 8 (GC64) or 4 (bpf/lj.h). */
static inline unsigned lmt_refsz(const struct lj_layout *l)
{
	return l->gc64 ? 8 : 4;
}

/* The window read first holds vmstate, cur_L and, when cur_L is the main
 * lua_State (the GG_State's first member), its base, stack and cframe:
 * one read where two would be needed. */
static inline int lmt_gwin_fits(const struct lj_layout *l)
{
	/* A coroutine's fields come from a 64-byte read at L_base; the
	 * windows' masks need aligned offsets: a reference's to its width
	 * (cur_L, stack), a pointer's to 8 (cframe). */
	const unsigned ra = lmt_refsz(l) - 1;

	return l->L_base < l->gg_g + l->g_vmstate &&
	       l->gg_g + l->g_cur_L + 8 - l->L_base <= LMT_GWIN &&
	       l->L_stack > l->L_base && l->L_stack + 8 - l->L_base <= 64 &&
	       l->L_cframe > l->L_base && l->L_cframe + 8 - l->L_base <= 64 &&
	       !((l->gg_g + l->g_vmstate - l->L_base) & 3) &&
	       !((l->gg_g + l->g_cur_L - l->L_base) & ra) &&
	       !((l->L_stack - l->L_base) & ra) && !((l->L_cframe - l->L_base) & 7);
}

/* Every fixed-size read window holds what is taken from it. */
static inline int lmt_windows_fit(const struct lj_layout *l)
{
	return l->pt_sizebc + 4 <= LMT_PTWIN && l->pt_chunkname + 8 <= LMT_PTWIN &&
	       l->pt_firstline + 4 <= LMT_PTWIN && l->pt_numline + 4 <= LMT_PTWIN &&
	       l->pt_lineinfo + 8 <= LMT_PTWIN && l->fn_ffid + 1 <= LMT_FNWIN &&
	       l->fn_pc + 8 <= LMT_FNWIN && l->fn_f + 8 <= LMT_FNWIN &&
	       l->T_startpc == l->T_startpt + lmt_refsz(l) &&
	       !((l->pt_chunkname | l->pt_lineinfo | l->fn_pc) & (lmt_refsz(l) - 1)) &&
	       l->T_szmcode > l->T_startpt && l->T_szmcode + 4 - l->T_startpt <= LMT_TWIN &&
	       l->T_mcode > l->T_startpt && l->T_mcode + 8 - l->T_startpt <= LMT_TWIN &&
	       !((l->T_mcode - l->T_startpt) & 7) && !((l->T_szmcode - l->T_startpt) & 3) &&
	       LMT_PTWIN <= LMT_WIN &&
	       LMT_FNWIN <= LMT_WIN && lmt_gwin_fits(l);
}


#endif
