/* The direct map's base (page_offset_base: randomized at boot, not in
 * kallsyms), found from a PGD, for the readers of page tables: bpf/direct.h
 * (find_po, on the tracer's own tables) and bpf/ptscan.bpf.c (on the
 * target's). Every process's tables map the kernel alike. pgd, an address
 * in the direct map, is base + its frame's physical address, and the base
 * is 1 GiB-aligned (KASLR's unit), so the base is pgd's GiB or one below
 * it: the one under which the kernel's tables, read with the checked
 * helper, translate pgd to itself. x86-64, 4-level tables. */
#ifndef LMT_BPF_PO_H
#define LMT_BPF_PO_H

/* A kernel word through the checked helper: 0 where it cannot be read. */
static __always_inline __u64 po_rd(__u64 a)
{
	__u64 v = 0;

	if (bpf_probe_read_kernel(&v, 8, (void *)a))
		return 0;
	return v;
}

struct po_search {
	__u64 pgd, po, mask, top, cva, cword;
};

/* va's byte translated through the tables at a->pgd with base po, every
 * entry read through the helper: its kernel address, or 0 (an entry
 * without the bits need, a large leaf at the top level, or a frame not
 * below a->top; frame bits: a->mask). need: present (1) for the kernel
 * half, present and user (5) for the user half. What a wrong base reads
 * is any word of RAM, and only a word naming RAM is followed, so the
 * search's reads stay in the direct map's RAM. */
static __u64 po_xlate(const struct po_search *a, __u64 po, __u64 va, __u64 need)
{
	__u64 e = po_rd(a->pgd + ((va >> 39) & 511) * 8), span;

	if ((e & need) != need || (e & a->mask) >= a->top || (e & (1ULL << 7)))
		return 0;
	for (int shift = 30; shift >= 12; shift -= 9) {
		e = po_rd(po + (e & a->mask) + ((va >> shift) & 511) * 8);
		if ((e & need) != need || (e & a->mask) >= a->top)
			return 0;
		if (shift == 12 || (e & (1ULL << 7))) { /* the last level, or PSE */
			span = (1ULL << shift) - 1;
			return po + (e & a->mask & ~span) + (va & span);
		}
	}
	return 0;
}

/* Candidate k: pgd's GiB, k below. A wrong base can still translate pgd
 * to itself (a word of RAM read as a 1 GiB leaf with a small frame, below
 * pgd's own GiB: ~1 search in 100 here), so it must also read, through
 * the user half, the word the caller put at cva. */
static long po_try(__u64 k, struct po_search *a)
{
	__u64 po = (a->pgd & ~((1ULL << 30) - 1)) - (k << 30), kv;

	/* pgd's own address through the kernel half (its upper levels carry
	 * the user bit too: x86 checks it at the leaf) */
	if (po_xlate(a, po, a->pgd, 1) != a->pgd)
		return 0;
	kv = po_xlate(a, po, a->cva, 5);
	if (!kv || po_rd(kv) != a->cword)
		return 0;
	a->po = po;
	return 1;
}

/* The base, from pgd (a kernel address: above 0xffff800000000000 with
 * 4-level tables) whose user half maps cva, where the word cword is
 * (present: the caller wrote it), trying the gib GiBs below it (RAM's
 * size, + 1; at most 2^23); 0 if none. */
static __always_inline __u64 po_find(__u64 pgd, __u32 gib, __u64 mask, __u64 top, __u64 cva,
				     __u64 cword)
{
	struct po_search a = { .pgd = pgd, .mask = mask, .top = top, .cva = cva, .cword = cword };

	if (pgd < 0xffff800000000000ULL || gib > (1U << 23) || cva >= (1ULL << 47))
		return 0;
	bpf_loop(gib, po_try, &a, 0);
	return a.po;
}

#endif
