/* Inside a trace: where the compiled code was when it called the C
 * function that allocates. LuaJIT maps a machine code address to a
 * snapshot itself (lj_trace_unwind: the rightmost snapshot whose mcofs is
 * not above it), and a snapshot's PC names the bytecode and so the line:
 * BPF finds the return address into the running trace's machine code on
 * the user stack and sends its offset; user space, which has read the
 * trace's snapshots once, finds the line (user/convert/jit.c). */
#ifndef LMT_BPF_TRACE_H
#define LMT_BPF_TRACE_H

/* Where the last search found it. A trace's calls into C all push their
 * return at one place: its frame is fixed while it runs, below the C
 * frame it was entered from (cur_L->cframe less the VM's 16 bytes and
 * the trace's spadjust), whatever C frames lie below the call. So the
 * word where the last search found the return into this trace's code
 * (t->sh, an entry for each of a few traces by their code's address: a
 * request's traces take turns) is tried first, if it lies in the words
 * the search would read. It answers other than the search only where a
 * word nearer sp is in the trace's code too: a stale word in a C frame
 * (no surer an answer), or, with the trace entered this time from a
 * deeper C frame (a coroutine's, a C caller's), this run's own return,
 * below a word left in the old place that was not overwritten since (the
 * exit stubs' push and the VM's frames write there). The offset, or -1. */
static __always_inline __u64 *dr_hint_of(struct lmt_percpu *t, __u64 mc)
{
	return t->sh[(mc * LMT_HASH_K) >> (64 - LMT_SHINT_BITS)];
}

static __always_inline long dr_trace_hint(struct lmt_percpu *t, __u64 pgd, __u64 sp,
					  __u64 mc, __u64 sz, const int kept)
{
	__u64 *h = dr_hint_of(t, mc), a = h[0], d, v;

	if (h[1] != mc || h[2] != pgd || a < sp || a - sp >= LMT_STKW * 8)
		return -1;
	/* kept: through a kept walk alone (dr_kaddr), inline; else dr_addr,
	 * which tries the kept walks first itself */
	d = kept ? dr_kaddr(t, pgd, a, 8) : dr_addr(t, pgd, a, 8);
	if (!d)
		return -1;
	v = kld(d);
	return v - mc < sz && dr_same(t) ? (long)(v - mc) : -1;
}

/* trace_ret's search in place through the page tables (bpf/direct.h), a
 * page at a time (the words can straddle two): the offset, -1 if none,
 * -2 if a page could not be read so. A global function, verified once
 * (its loop around a call, inlined, multiplies the verifier's paths). */
__noinline long dr_trace_ret(struct lmt_percpu *t, __u64 pgd, __u64 sp,
			     __u64 mc, __u64 sz)
{
	__u64 n, a, d = 0, v;
	long r;

	if (!t)
		return -2;
	r = dr_trace_hint(t, pgd, sp, mc, sz, 0);
	if (r >= 0)
		return r;
	for (int i = 0; i < LMT_STKW; i++) {
		a = sp + i * 8;
		if (i == 0 || !(a & 4095)) {
			if (i && !dr_same(t))
				return -2;
			n = (4096 - (a & 4095)) / 8;
			if (n > (__u64)(LMT_STKW - i))
				n = (__u64)(LMT_STKW - i);
			d = dr_addr(t, pgd, a, n * 8);
			if (!d)
				return -2;
			d -= a;
		}
		v = kld(a + d);
		if (v - mc < sz) {
			if (!dr_same(t))
				return -2;
			__u64 *h = dr_hint_of(t, mc);

			h[0] = a;
			h[1] = mc;
			h[2] = pgd;
			return (long)(v - mc);
		}
	}
	return dr_same(t) ? -1 : -2;
}

/* -- The trace charged last ------------------------------------------------ */

/* The traces whose code a CPU charged last (lmt_percpu's tm, an entry by
 * the low bits of the trace's number: tm_of): its process and number, its VM, its machine code and size, and a check
 * word (bpf/cache.h) salted with the trgen it was known under
 * (bpf/announce.h), so that it reads as a miss once a trace may have been
 * made since, as trcache's entries do, or while a run that preempted its
 * writer tore it. An allocation-bound loop's events come from a few
 * traces (a root trace and the side traces its exits grew, taking turns
 * within a request): a hit saves the trace's cache line and check and the
 * charge's call apart (bpf/attribute.h: charge_memo). */
#define TM_SALT 0x6c6173747472616bULL

static __always_inline __u64 *tm_of(struct lmt_percpu *t, __u32 traceno)
{
	return t->tm[traceno & (LMT_TM - 1)];
}

static __always_inline void tm_put(struct lmt_percpu *t, __u32 tgid, __u32 traceno,
				   __u64 vmid, __u64 mc, __u64 sz, __u64 gen)
{
	const __u64 w[4] = { tgid | (__u64)traceno << 32, vmid, mc, sz };

	dm_put(tm_of(t, traceno), w, 4, TM_SALT ^ gen * LMT_HASH_K);
}

/* 0 and the code's range if trace traceno of process tgid's VM vmid is
 * the one kept under trgen gen; -1 if not. */
static __always_inline int tm_get(struct lmt_percpu *t, __u32 tgid, __u32 traceno,
				  __u64 vmid, __u64 gen, __u64 *mc, __u64 *sz)
{
	__u64 w[4];

	if (!dm_get(tm_of(t, traceno), w, 4, TM_SALT ^ gen * LMT_HASH_K) ||
	    w[0] != (tgid | (__u64)traceno << 32) || w[1] != vmid)
		return -1;
	*mc = w[2];
	*sz = w[3];
	return 0;
}

#ifndef LMT_DR_HOST
/* The offset in [mc, mc + sz) of the return address nearest the stack
 * pointer: the compiled code's call into the VM (lj_tab_new1,
 * lj_buf_putstr, lj_str_new...), below the allocator's own few frames.
 * -1 if none in the LMT_STKW words above sp; inplace: -2 where the
 * words could not be read in place (instead of through the helper). */
static __always_inline int trace_ret(struct ctx *c, __u64 mc, __u64 sz,
				     __u32 *ofs, const int inplace)
{
	struct pt_regs *regs = c->regs;
	struct lmt_percpu *t = c->pc;
	__u64 *w = t->stk, sp = PT_REGS_SP(regs), pgd;
	long r;

	if (!mc || !sz)
		return -1;
	/* where the last return into this code was, through a kept walk:
	 * inline, no call; then the search */
	pgd = dr_pgd(c);
	r = pgd ? dr_trace_hint(t, pgd, sp, mc, sz, 1) : -1;
	if (r < 0)
		r = dr_trace_ret(t, pgd, sp, mc, sz);
	if (r >= 0 || r == -1) {
		dr_count(c);
		if (r < 0)
			return -1;
		*ofs = (__u32)r;
		return 0;
	}
	if (inplace)
		return -2;
	/* Through the helper, all of the words, where in place could not. */
	if (rd(c, w, LMT_STKW * 8, sp))
		return -1;
#pragma clang loop unroll(disable)
	for (int i = 0; i < LMT_STKW; i++) {
		if (w[i] - mc < sz) {
			*ofs = (__u32)(w[i] - mc);
			return 0;
		}
	}
	return -1;
}
#endif /* LMT_DR_HOST: the host's tests take the search alone */

#endif
