/* Conversion's part of a traced process and of its VMs: what convert/
 * keeps of them (symbols, line tables, traces, names, stacks) and counts.
 * The session embeds them (struct tproc's and struct tvm's cv, in
 * session/session.h), fills in what they are when it makes them and links
 * each VM to its process (conv_vm_link); every function of convert/ takes
 * these, never the session's structs. Each file frees its own part
 * (traces_free, stk_forget_vm, ...); the session calls them. */
#ifndef LMT_CONV_H
#define LMT_CONV_H

#include <stdint.h>
#include <sys/types.h>

#include "convert/symbols.h"
#include "target/layout.h"
#include "util/u64set.h"

struct tout;
struct tlmemo;
struct conv_vm;

/* A traced process, for conversion. */
struct conv_proc {
	pid_t pid;
	struct syms syms;    /* its C symbols, for every stream of it */
	struct conv_vm *vms, *last; /* its VMs, in order of discovery */
	uint64_t protos, traces, names_cut, nolines;
	uint64_t stk_unknown; /* events whose stack could not be told */
	/* Over a cap of target/caps.h (the target is not trusted): traces cut
	 * or refused, traces evicted for the process's budget, their bytes
	 * kept; package.loaded's walks, nodes read and walks cut; chunk
	 * names cut; traces not resolved over the process's budget of reads
	 * (LMT_PROC_READS_MAX), and the reads made */
	uint64_t tr_cut, tr_evicted, tr_bytes, tr_budget, tr_reads;
	/* events in compiled code left on their trace: the build's snapshots
	 * keep no machine code offsets (lj_ulayout.snap_nomcofs) */
	uint64_t tr_nomcofs;
	uint64_t nm_walks, nm_nodes, nm_cut, names_long;
	/* function names (convert/fnames.c): not read (a prototype that
	 * could not be read or lies), cut to LMT_FNAME_ID_MAX */
	uint64_t fn_unread, fn_cut;
};

/* A VM of a traced process, for conversion. */
struct conv_vm {
	struct conv_proc *p;
	struct conv_vm *next; /* p's next VM */
	uint64_t g;           /* its global_State */
	const struct lj_variant *var;
	unsigned depth;       /* --stacks: frames per stack at most; 0: none */
	int by_trace;         /* --jit=trace: compiled code's events charged to
			       * their trace, whose snapshots are not read
			       * (BPF does not hold the process for them) */
	struct tout *out;     /* its stream */
	struct u64map lines;  /* prototype -> struct pline */
	struct u64map pnames; /* prototype -> its chunk name (malloc'd, up to
			       * LMT_NAME_MAX), for an announcement whose
			       * name BPF could not read */
	struct u64map traces; /* trace number | 1 << 32 -> its snapshots
			       * (convert/jit.h) */
	struct tlmemo *tlm;   /* traces_line's answers, and their */
	uint32_t tlgen;       /* generation (convert/jit.h) */
	struct u64map cnames; /* C function -> the name Lua gives it */
	struct u64set cnamed; /* C functions the stream has by that name */
	struct u64set cmissed; /* ones cnames did not name when last read */
	struct u64set alloc_to; /* where compiled code's calls were seen
				 * making new blocks below (convert/jit.c) */
	double cnames_at;     /* when cnames was read */
	struct u64map stacks; /* --stacks: BPF's stack id -> its frames */
	struct u64map fnames; /* --stacks: prototype -> the names its calls
			       * give (convert/fnames.c) */
	uint64_t fnames_n;    /* names kept */
	char fname_tmp[64];   /* a name not kept (fnames.c) */
	int ff_bad;           /* the variant's ffnames contradict package.loaded */
	size_t ff_checked;    /* cnames.n when that was last looked at */
};

/* VM v, filled in, becomes p's last. */
static inline void conv_vm_link(struct conv_proc *p, struct conv_vm *v)
{
	v->p = p;
	v->next = NULL;
	if (p->last)
		p->last->next = v;
	else
		p->vms = v;
	p->last = v;
}

#endif
