/* Direct reads: target memory through the target's page tables, by plain
 * loads from the kernel's direct map.
 *
 * bpf_probe_read_user costs ~65 ns a call here (docs/costs.md): the user
 * access itself, its checks, and returns under the SRSO mitigation. A walk
 * of the four levels of the page tables that the MMU walked a moment ago
 * is five loads from cache, and the data one more: no call at all. A
 * load goes through bpf_rdonly_cast, which the verifier turns into a
 * move, as a load the JIT guards with an exception-table entry, so an
 * address that is not mapped in the kernel reads 0 and never faults.
 *
 * What is read is what the target sees at that instant, or nothing (the
 * caller then reads through the helper): only user addresses, only
 * entries present and user-accessible at every level, frames of RAM, no
 * special mappings (device memory).
 *
 * A walk stands while its mm's TLB generation does (x86's
 * mm->context.tlb_gen). The kernel changes a present entry, or unhooks a
 * table, and then flushes the TLBs before it frees the old frame or table
 * (the TLBs may hold the old translation until then), and every flush of
 * an mm's user range, immediate or batched for reclaim, first increments
 * its generation (flush_tlb_mm_range, arch_tlbbatch_add_pending). So each
 * read loads the generation, then (through a walk kept under that
 * generation, or a new one) the data, then the generation again (dr_same):
 * equal, nothing the walk passed through was freed before the data was
 * loaded, which x86 keeps in order after the first load and before the
 * second; the data is the page's, or its content at the instant it was
 * unmapped. Otherwise the read goes through the helper and the walk is
 * dropped. A kept walk needs no load of the page tables at all: their
 * lines, which the MMU's own walks do not keep in the data caches, cost
 * more than the rest of a read (docs/costs.md). Walks name the mm by its
 * ctx_id, which the kernel never gives twice, so a walk kept in one
 * process is never taken in a later one with the same PGD page.
 *
 * The direct map's base (page_offset_base, randomized at boot and not in
 * kallsyms) is found once, at start, by find_po (a syscall program run by
 * user space on its own page tables; the search: bpf/po.h): the 1 GiB-
 * aligned base under which the kernel's own tables translate the address
 * of the tracer's PGD to itself and through which a value user space
 * chose reads back (a wrong base can pass the first alone), then checked
 * again by a direct read. 0 until then, and on x86 with 5-level tables:
 * every read falls back. */
#ifndef LMT_BPF_DIRECT_H
#define LMT_BPF_DIRECT_H

#ifndef LMT_DR_HOST
/* 6.2+. Weak: older kernels load the object with every direct read off
 * (kf_rdonly_cast 0, set before load from user/probes/kfeat.c's probe), and the
 * verifier removes the calls it then never reaches. */
extern void *bpf_rdonly_cast(const void *obj__ign, __u32 btf_id__k) __ksym __weak;
const volatile __u8 kf_rdonly_cast = 1;

/* A load of the kernel word at a: 0 where nothing is mapped. pt_regs is
 * any kernel struct whose first member is a 64-bit scalar. */
static __always_inline __u64 kld(__u64 a)
{
	struct pt_regs *p;

	if (!kf_rdonly_cast)
		return 0;
	p = bpf_rdonly_cast((void *)a, bpf_core_type_id_kernel(struct pt_regs));
	return p->r15;
}
#endif /* the host's tests bring a kld of their own (tests/unit/test_direct.c) */

__u64 dr_po; /* the direct map's base; 0: direct reads off */
/* A table entry's frame bits: 12 up to the CPU's physical address width
 * (above it: NX, and memory encryption's C-bit). Set before load. */
const volatile __u64 dr_mask = 0x000ffffffffff000ULL;
/* The end of RAM's physical addresses (/proc/iomem): a frame at or above
 * it is no frame of RAM, and its direct map address nothing to load.
 * Set before load. */
const volatile __u64 dr_top = ~0ULL;

#define DR_P    (1ULL << 0) /* _PAGE_PRESENT */
#define DR_U    (1ULL << 2) /* _PAGE_USER */
#define DR_PSE  (1ULL << 7) /* _PAGE_PSE: a 1 GiB or 2 MiB leaf */
#define DR_SPEC (1ULL << 9) /* _PAGE_SPECIAL */
#define DR_USER_END (1ULL << 47) /* 4-level tables: user addresses below */
#define DR_MAX 512 /* bytes a dr_words read may have */

/* The next level's entry for va, from entry e (po: the direct map). */
#define DR_NEXT(po, e, va, shift) \
	((po) + ((e) & dr_mask) + (((va) >> (shift)) & 511) * 8)
/* Present, user-accessible, and a frame of RAM (dr_top). */
#define DR_OK(e) (((e) & (DR_P | DR_U)) == (DR_P | DR_U) && ((e) & dr_mask) < dr_top)

/* The kernel address of va's page, 0 if it has none a read may use. */
static __always_inline __u64 dr_walk(__u64 po, __u64 pgd, __u64 va)
{
	__u64 pe = kld(pgd + ((va >> 39) & 511) * 8), e, span;

	if (!DR_OK(pe) || (pe & DR_PSE))
		return 0;
	/* The PUD, PMD and PTE levels: a leaf at any (PSE) or the last. */
	for (int shift = 30; shift >= 12; shift -= 9) {
		e = kld(DR_NEXT(po, pe, va, shift));
		if (!DR_OK(e))
			return 0;
		if (shift == 12 || (e & DR_PSE)) {
			if (e & DR_SPEC)
				return 0;
			span = (1ULL << shift) - 1;
			return po + (e & dr_mask & ~span) + (va & span & ~4095ULL);
		}
		pe = e;
	}
	return 0;
}

/* After a read's loads through the page last walked (dr_addr): its mm's
 * TLB generation as it was before them (see above). A walk that fails it
 * is dropped. */
static __always_inline int dr_same(struct lmt_percpu *t)
{
	asm volatile("" ::: "memory"); /* the data's loads before this one */
	if (kld(t->tg) == t->gen)
		return 1;
	t->walk[t->cur & (LMT_NWALK - 1)].pgd = 0;
	return 0;
}

/* LMT_WALK_PER_RUN=1 (benchmarks): a walk is kept for its run only. */
const volatile __u8 dr_fresh = 0;

/* A program run begins (dr_pgd). */
static __always_inline void dr_newrun(struct lmt_percpu *t)
{
	if (dr_fresh)
		for (int j = 0; j < LMT_NWALK; j++)
			t->walk[j].pgd = 0;
}

/* Walk k for va's page in page tables pgd, TLB generation gen: 1 if it
 * may be used; 0 if it is another page's; -1 if it was this page's under
 * an older generation (walked again in its place). */
static __always_inline int dr_kept(const struct lmt_percpu *t, const struct lmt_walk *k,
				   __u64 pgd, __u64 va, __u64 gen)
{
	if (va >> 12 != k->v || pgd != k->pgd || t->ctx != k->ctx)
		return 0;
	return k->gen == gen ? 1 : -1;
}

/* dr_addr's answer where one of the kept walks stands for the page,
 * inline: no call, no walk (a read's common case); 0 to ask dr_addr. The
 * last one used is tried first. The generation it loaded first is left in
 * t->gen either way. */
static __always_inline __u64 dr_kaddr(struct lmt_percpu *t, __u64 pgd, __u64 va, __u64 sz)
{
	__u64 gen;
	__u32 i;

	if (!t->tg || (va & 7) || (va & 4095) + sz > 4096)
		return 0;
	gen = kld(t->tg);
	t->gen = gen;
	asm volatile("" ::: "memory"); /* before the walk's loads and the data's */
	i = t->cur;
	for (int n = 0; n < LMT_NWALK; n++, i++) {
		i &= LMT_NWALK - 1;
		if (dr_kept(t, &t->walk[i], pgd, va, gen) > 0) {
			t->cur = i;
			t->walk[i].used = ++t->clock;
			return t->walk[i].k + (va & 4095);
		}
	}
	return 0;
}

/* Where a new walk for va's page goes: in the place of that page's stale
 * walk, if one is kept; else in the place of the one used longest ago. */
static __always_inline __u32 dr_victim(const struct lmt_percpu *t, __u64 pgd, __u64 va)
{
	__u64 oldest = ~0ULL;
	__u32 v = 0;

	for (__u32 i = 0; i < LMT_NWALK; i++) {
		if (dr_kept(t, &t->walk[i], pgd, va, t->gen))
			return i;
		if (t->walk[i].used < oldest) {
			oldest = t->walk[i].used;
			v = i;
		}
	}
	return v;
}

/* The kernel address of [va, va + sz), 0 if the read must go through
 * the helper: va 8-aligned, all of it in one page. The page's walk is
 * left the last one (cur), and the generation read first in t->gen, for
 * the check after the loads (dr_same).
 *
 * The LMT_NWALK pages last walked are kept in t: an event's reads come
 * in runs on a page (the GG_State's fields), and its events' on a few (the
 * GG_State's, which holds the allocator's state too; the C stack's for a
 * trace's return; the Lua stack's; a reallocated block's header):
 * docs/costs.md.
 *
 * A global function, verified once: inlined at every read, the walk's
 * branches multiply the verifier's paths past its limit. */
__noinline __u64 dr_addr(struct lmt_percpu *t, __u64 pgd, __u64 va, __u64 sz)
{
	__u64 po = dr_po, k;
	struct lmt_walk *l;
	__u32 i;

	if (!t || !po || !pgd || !t->tg || (va & 7) || va >= DR_USER_END ||
	    (va & 4095) + sz > 4096)
		return 0;
	k = dr_kaddr(t, pgd, va, sz);
	if (k)
		return k;
	i = dr_victim(t, pgd, va);
	k = dr_walk(po, pgd, va);
	if (!k)
		return 0; /* all as they were */
	l = &t->walk[i];
	l->pgd = pgd;
	l->v = va >> 12;
	l->k = k;
	l->ctx = t->ctx;
	l->gen = t->gen;
	l->used = ++t->clock;
	t->cur = i;
	return k + (va & 4095);
}

#ifndef LMT_DR_HOST
/* The current task, asked once per program run (struct ctx): its process
 * and its page tables come from it by loads, so a run pays one helper
 * call for both (docs/costs.md). */
static __always_inline __u64 cur_task(struct ctx *c)
{
	if (!c->task)
		c->task = bpf_get_current_task();
	return c->task;
}

/* The current process, bpf_get_current_pid_tgid() >> 32: a load where
 * the kernel has bpf_rdonly_cast, else the helper (kld reads 0 there). */
static __always_inline __u32 cur_tgid(struct ctx *c)
{
	if (!kf_rdonly_cast)
		return bpf_get_current_pid_tgid() >> 32;
	return (__u32)kld(cur_task(c) + bpf_core_field_offset(struct task_struct, tgid));
}

/* The current task's PGD, once per program run (struct ctx), and its
 * mm's TLB generation's address and ID for the run's reads (dr_addr); 0
 * where the kernel's mm has no TLB generation: the helper reads. */
static __always_inline __u64 dr_pgd(struct ctx *c)
{
	__u64 mm;

	if (!c->pgd && c->pc &&
	    bpf_core_field_exists(((struct mm_struct *)0)->context.tlb_gen) &&
	    bpf_core_field_exists(((struct mm_struct *)0)->context.ctx_id)) {
		mm = kld(cur_task(c) + bpf_core_field_offset(struct task_struct, mm));
		if (mm) {
			c->pc->tg = mm + bpf_core_field_offset(struct mm_struct, context.tlb_gen);
			c->pc->ctx = kld(mm + bpf_core_field_offset(struct mm_struct, context.ctx_id));
			c->pgd = kld(mm + bpf_core_field_offset(struct mm_struct, pgd));
		}
		dr_newrun(c->pc);
	}
	return c->pgd;
}

/* A read done through the page tables, counted (struct lmt_stats). */
static __always_inline void dr_count(struct ctx *c)
{
	c->reads++;
	c->direct++;
}

/* sz bytes at src into dst, sz a constant multiple of 8 up to DR_MAX:
 * 0 if read directly, -1 if the caller must read through the helper. */
static __always_inline int dr_words(struct ctx *c, __u64 *dst, __u32 sz,
				    __u64 src)
{
	struct lmt_percpu *t = c->pc;
	__u64 k;

	if (sz > DR_MAX || (sz & 7) || !t)
		return -1;
	k = dr_kaddr(t, dr_pgd(c), src, sz);
	if (!k && !(k = dr_addr(t, dr_pgd(c), src, sz)))
		return -1;
	for (__u32 i = 0; i < sz / 8; i++)
		dst[i] = kld(k + i * 8);
	if (!dr_same(t))
		return -1;
	dr_count(c);
	return 0;
}

/* The 8-aligned word holding [src, src + sz), sz up to 8. */
static __always_inline int dr_word(struct ctx *c, __u64 *w, __u32 sz,
				   __u64 src)
{
	if ((src & 7) + sz > 8)
		return -1;
	return dr_words(c, w, 8, src & ~7ULL);
}

/* A read of any constant size: directly where it can be (whole words, or
 * a part of one), else -1. */
static __always_inline int dr_read(struct ctx *c, void *dst, __u32 sz, __u64 src)
{
	__u64 w;

	if (sz < 8) {
		if (dr_word(c, &w, sz, src))
			return -1;
		w >>= (src & 7) * 8;
		if (sz == 1)
			*(__u8 *)dst = (__u8)w;
		else if (sz == 2)
			*(__u16 *)dst = (__u16)w;
		else if (sz == 4)
			*(__u32 *)dst = (__u32)w;
		else
			return -1;
		return 0;
	}
	return dr_words(c, dst, sz, src);
}
#endif /* LMT_DR_HOST */

#endif
