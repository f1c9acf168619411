/* Inside convert/jit*.c (not an API: convert/jit.h is): a trace as read
 * from the target (struct ttrace: its snapshots, its IR's constants, the
 * prototypes it runs) and what its files share. Calls go one way:
 *   jit.c         the entry points of convert/jit.h: a trace added,
 *                 evicted, freed; an event's line (its memo); its stack;
 *   jit_walk.c    each snapshot's stretch of bytecode walked to the lines
 *                 it charges, and where sunk objects were made;
 *   jit_frames.c  a snapshot's stack frames, told at once;
 *   jit_read.c    reads of the target within the trace's budgets, a
 *                 prototype's bytecode and lines, a snapshot's slots, the
 *                 machine code's calls.
 * jit.c calls the three others; jit_walk.c and jit_frames.c call only
 * jit_read.c; jit_read.c calls none of them. */
#ifndef LMT_JIT_INT_H
#define LMT_JIT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "luamemtrace.h"
#include "convert/conv.h"
#include "format/memprof.h"
#include "convert/lines.h"
#include "format/stacks.h"
#include "target/caps.h"

#define MAX_SITES 8
#define MAX_BLOADS 16

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
	uint32_t rsite;  /* a reallocation's site (k + 1: its one store is
			  * site k, which grows its table), 0 the line */
	uint32_t stop;   /* where its stretch ends: a snapshot's index + 1,
			  * 0 none (jit_stretch_ends) */
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
	 * while the process is stopped (jit_snap_frames): its innermost frame
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
	uint32_t popped; /* returned out of the snapshot's innermost frame
			  * into this many of the frames below it */
	uint64_t bfn;    /* the builtin the trace compiled in, called there
			  * (its GCfunc), 0 none */
	struct sk_frame leaf; /* its frame, once kept */
	uint64_t pt[MAX_DEPTH];
	uint32_t pos[MAX_DEPTH];
	int64_t line[MAX_DEPTH];
};

/* A snapshot's frame slot: its constant, a frame link or PC (SNAP_FRAME,
 * SNAP_CONT) or the GCfunc in the slot below a frame link. Numbered as
 * FR2 numbers them (a frame two slots: its function, then its link), also
 * for a VM without FR2 (GC64 off), whose snapshots are read into it
 * (jit_frame_slots). */
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

/* A call in a trace's machine code: the offset of its return (what BPF
 * sends for what is allocated below it) and where it goes (a call rel32's
 * target; 0 another call's). */
struct tcall {
	uint32_t ret;
	uint64_t to;
};

struct ttrace {
	uint64_t T, startpt;
	uint32_t nsnap;
	uint32_t szmcode; /* its machine code's length */
	uint8_t *mc;      /* and its bytes, until decoded (jit_calls) */
	uint64_t mcaddr;  /* where they were */
	uint32_t ncalls;  /* its calls, by offset (jit_calls) */
	struct tcall *calls;
	/* Its budgets (target/caps.h): target reads made, bytes kept; over:
	 * one was hit, what was left unread is not resolved */
	uint32_t reads;
	uint64_t bytes;
	int over;
	int budget; /* its process's budget of reads was hit (over too) */
	uint32_t nk, nins; /* IR refs [nk, nins), biased */
	uint64_t *ir;      /* IR, from nk */
	struct u64map protos; /* prototype -> struct tproto */
	/* Builtins told by the load that filled the called slot (its PC),
	 * for all the trace's stretches: the IR guards on a builtin once,
	 * in the first stretch calling it (MAX_BLOADS: a trace calls few) */
	uint32_t nbloads;
	uint64_t bload_pc[MAX_BLOADS], bload_fn[MAX_BLOADS];
	uint64_t bload_pt[MAX_BLOADS]; /* the load's prototype */
	uint32_t bload_ins[MAX_BLOADS]; /* and its instruction */
	struct origin replay; /* allocations before the first snapshot */
	struct origin *xsunk; /* per snapshot: objects its exits restore */
	struct tsnap s[];
};

#define SNAP_FRAME 0x010000 /* lj_jit.h: a frame's slot */
#define SNAP_CONT 0x020000  /* a continuation's */
#define REF_BIAS 0x8000     /* constants lie below it */
#define MAX_BC LMT_PROTO_BC_MAX
#define WALK_MAX LMT_WALK_STEPS

/* -- jit_read.c: the target ------------------------------------------------ */

/* A read of the target for trace tr, within its read budget and its
 * process's (the trace counted once if that one stops it): 0, or -1. */
int jit_rd(struct conv_vm *v, struct ttrace *tr, uint64_t addr, void *buf, size_t len);
/* n more bytes kept for trace tr: 0, or -1 over its budget. */
int jit_keep(struct ttrace *tr, size_t n);
/* A trace (struct ttrace *, or NULL) freed, its prototypes too. */
void jit_trace_free(void *p);
/* The trace's IR [nk, nins) at T: read for the functions it inlined. */
void jit_read_ir(struct conv_vm *v, struct ttrace *tr, uint64_t T);
/* The trace's machine code (sz bytes at mc) read and kept, for jit_calls. */
void jit_read_mcode(struct conv_vm *v, struct ttrace *tr, uint64_t mc, uint32_t sz);
/* Its calls decoded in order into tr->calls, once, the bytes freed; none
 * if there are none kept or they do not decode whole. */
void jit_calls(struct ttrace *tr);
/* The pointer constant at IR ref of trace tr (IR_KGC's GCobj, IR_KPTR's
 * pointer): GC64 keeps it in the next slot, else it is the instruction's
 * own op12 (32 bits). 0, or -1 if ref's slots lie outside the IR. */
int jit_kref(const struct conv_vm *v, const struct ttrace *tr, uint32_t ref,
	     uint64_t *out);
/* Snapshot sn's entries ent and what follows them in its map (map, of
 * nmap entries): its PC, its innermost frame's base slot (FR2's
 * numbering) and its frame slots, for stacks; *rawbase the base slot in
 * ent's numbering. 0, or -1 if the map is short or not LuaJIT's. */
int jit_snap_read(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn,
		  const uint32_t *ent, uint32_t nent, const uint32_t *map,
		  uint32_t nmap, uint32_t *rawbase);
/* The constant of snapshot sn's frame slot slot, in *v: 0, or -1. */
int jit_fr_get(const struct tsnap *sn, uint32_t slot, uint64_t *v);
/* Prototype pt of trace tr: its bytecode and lines, read once; its
 * symbol written to the stream the first time. NULL if unreadable. */
struct tproto *jit_proto_get(struct conv_vm *v, struct ttrace *tr, uint64_t pt);
/* The prototype holding PC pc of trace tr, read, in *pt, and pc's
 * position in it; NULL if it cannot be found or read. */
struct tproto *jit_at_pc(struct conv_vm *v, struct ttrace *tr, uint64_t pc,
			 uint64_t *pt, uint32_t *pos);

/* -- jit_ir.c: what the IR says of a stretch -------------------------------- */

/* How an inlined function was called: by a call, or as a metamethod of
 * the kind a bytecode calls (walk_mm; MM_OTHER: a comparison's, or one
 * not told). */
enum { MM_NONE, MM_INDEX, MM_NEWINDEX, MM_CALL, MM_CONCAT, MM_ARITH, MM_OTHER };

/* The prototype of Lua function fn (a GCfunc), or 0. */
uint64_t jit_fn_proto(struct conv_vm *v, struct ttrace *tr, uint64_t fn);
/* The ffid of function fn (a GCfunc: 0 a Lua function, 1 a C function,
 * else a builtin), in *ffid: 0, or -1 if unreadable. */
int jit_fn_ffid(struct conv_vm *v, struct ttrace *tr, uint64_t fn, uint8_t *ffid);
/* Instruction ref of trace tr, NULL if outside its IR (inline: jit_read.c
 * reads constants through it, and jit_ir.c calls jit_read.c). */
static inline const uint8_t *jit_ir_at(const struct ttrace *tr, uint32_t ref)
{
	return ref >= tr->nk && ref < tr->nins ? (const uint8_t *)&tr->ir[ref - tr->nk] :
						 NULL;
}
/* Operand k (0, 1) of instruction ins. */
uint32_t jit_ir_opn(const struct lj_ulayout *u, const uint8_t *ins, int k);
/* The kind of metamethod (MM_*) a function constant is when instruction
 * ins compares it (its operand k) with one looked up in a metatable. */
int jit_mm_kind(struct conv_vm *v, struct ttrace *tr, const uint8_t *ins, int k);
/* The Lua functions trace tr inlined in IR refs [lo, hi), their
 * prototypes, how each was called and the IR ref that first took it (at
 * most max); the builtins in bfns and theirs in brefs (*nb, at most max). */
unsigned jit_inlined(struct conv_vm *v, struct ttrace *tr, uint32_t lo,
		     uint32_t hi, uint64_t *pts, uint64_t *fns, uint8_t *mms,
		     uint32_t *crefs, unsigned max, uint64_t *bfns, uint32_t *brefs,
		     unsigned *nb);
/* NEWREF instructions of trace tr in IR refs [lo, hi); in *nv those whose
 * key is not a GC constant. */
unsigned jit_newrefs(struct conv_vm *v, const struct ttrace *tr, uint32_t lo, uint32_t hi,
		     unsigned *nv);

/* -- jit_walk.c: stretches ------------------------------------------------- */

/* Where each snapshot's stretch ends (struct tsnap's stop). */
void jit_stretch_ends(struct conv_vm *v, struct ttrace *tr);
/* Resolves snapshot i of trace tr: the prototype and line its stretch is
 * charged to. Once: every later event of the stretch finds it done. 0,
 * or -1 if it cannot be told. */
int jit_resolve(struct conv_vm *v, struct ttrace *tr, uint32_t i);
/* An exit through snapshot i: the line it resumes at. 0, or -1. */
int jit_resolve_exit(struct conv_vm *v, struct ttrace *tr, uint32_t i);
/* Snapshot i's entries ent (baseslot: the slot of its innermost frame's
 * register 0): the objects an exit there restores, and for the first
 * snapshot of a side trace those replayed before it. */
void jit_sunk_origins(struct conv_vm *v, struct ttrace *tr, uint32_t i,
		      const uint32_t *ent, uint32_t nent, uint32_t baseslot);

/* -- jit_frames.c: stacks -------------------------------------------------- */

/* Snapshot sn's innermost frame and the frames below it, down to the
 * trace's base frame, kept in sn; read while the process is stopped. */
void jit_snap_frames(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn);
/* A non-Lua function's frame (fn a GCfunc): a C function by its address,
 * a builtin as src 0 and its ffid, its name read. 0, or -1. */
int jit_fn_frame(struct conv_vm *v, struct ttrace *tr, uint64_t fn, struct sk_frame *f);

#endif
