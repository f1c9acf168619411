/* Inside a trace: where the compiled code was when it called the C
 * function that allocates. LuaJIT maps a machine code address to a
 * snapshot itself (lj_trace_unwind: the rightmost snapshot whose mcofs is
 * not above it), and a snapshot's PC names the bytecode and so the line:
 * BPF finds the return address into the running trace's machine code on
 * the user stack and sends its offset; user space, which has read the
 * trace's snapshots once, finds the line (user/traces.c). */
#ifndef LMT_BPF_TRACE_H
#define LMT_BPF_TRACE_H

/* The offset in [mc, mc + sz) of the return address nearest the stack
 * pointer: the compiled code's call into the VM (lj_tab_new1,
 * lj_buf_putstr, lj_str_new...), below the allocator's own few frames.
 * -1 if none in the LMT_STKW words above sp. */
static __always_inline int trace_ret(struct ctx *c, __u64 mc, __u64 sz,
				     __u32 *ofs)
{
	struct pt_regs *regs = c->regs;
	struct lmt_percpu *t = c->pc;
	__u64 *w = t->stk, sp = PT_REGS_SP(regs), n, k, v;

	if (!mc || !sz)
		return -1;
	/* Directly, the words up to the end of sp's page (bpf/direct.h);
	 * through the helper, all of them if the address is not there. */
	n = (4096 - (sp & 4095)) / 8;
	if (n > LMT_STKW)
		n = LMT_STKW;
	k = dr_addr(t, dr_pgd(c), sp, n * 8);
	if (k) {
#pragma clang loop unroll(disable)
		for (int i = 0; i < LMT_STKW; i++) {
			if (i >= n)
				break;
			v = kld(k + i * 8);
			if (v - mc < sz) {
				if (!dr_same(t))
					break;
				c->reads++;
				c->direct++;
				*ofs = (__u32)(v - mc);
				return 0;
			}
		}
		if (n == LMT_STKW && dr_same(t)) {
			c->reads++;
			c->direct++;
			return -1;
		}
	}
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

#endif
