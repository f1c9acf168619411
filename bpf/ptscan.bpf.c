// SPDX-License-Identifier: GPL-2.0
/* The soft-dirty bits of a process's own page table entries (heap
 * snapshots, user/heap/dirty.c). /proc/PID/pagemap reports every page of
 * a mapping written once the mapping is new or has grown (the kernel's
 * VM_SOFTDIRTY), whatever its entries say: a LuaJIT heap whose allocator
 * adds a segment next to the last has its largest mapping "written" whole
 * between two looks. The entries themselves still tell: clear_refs
 * write-protected each one and cleared its bit, and a write since through
 * this entry faulted and set the bit again (do_wp_page). So this program
 * walks the target's page tables (the direct map's base found first on
 * our own, bpf/po.h, every load through the checked helper) and answers, a page at
 * a time, PT_UNWRITTEN only for an entry present, user, not special (the
 * zero page) nor device memory nor userfaultfd-protected, write-protected
 * and without the bit, in a private writable mapping without
 * userfaultfd's write-protection; anything else is no claim, and the
 * caller keeps pagemap's word. A flagged mapping is untracked for the
 * kernel: an entry can be made writable there without the bit (mprotect,
 * NUMA hinting, swap-in), and is then writable, so no claim; one written
 * so and write-protected again by mprotect is in a mapping not writable
 * now, so no claim; by a fork, not the process's alone (the caller asks
 * pagemap's exclusive bit). The mm's TLB generation is read before and
 * after each mapping's pages: a table freed or an entry changed meanwhile
 * (mprotect, munmap, reclaim) moves it, and the run's answers are void
 * (PT_MOVED). The iterator holds the mm's mmap lock while it visits a
 * mapping.
 *
 * An iterator over one task's mappings (the process's main thread, by the
 * link's tid), run by reading it: the process in pt_tgid, the range in
 * pt_start/pt_n, the answers in pt_out. Run once first over our own
 * main thread (pt_self), for the direct map's base. x86-64 with 4-level
 * tables only (the caller checks). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "ptscan_def.h"
#include "po.h"

char LICENSE[] SEC("license") = "GPL";

/* Set before load: a table entry's frame bits, RAM's end. */
const volatile __u64 pt_mask = 0x000ffffffffff000ULL;
const volatile __u64 pt_top = ~0ULL;

/* In: the process, the range (pt_start page-aligned, pt_n <= PT_RUN
 * pages), the direct map's bound for the base's search (GiBs of RAM,
 * + 1); pt_status PT_NOTASK and pt_claimed 0 before each run. */
__u32 pt_tgid;
/* In, for the base's search (the first run): the process it is made in
 * (ours), and a word of ours and its address, which the base found must
 * read (bpf/po.h). */
__u32 pt_self;
__u64 pt_cva, pt_cword;
__u64 pt_start;
__u32 pt_n;
__u32 pt_gib;
/* Out: the base (found by the first run, kept), the status, the first
 * claimed page and its frame (the caller checks it against pagemap's),
 * the answers. */
__u64 pt_po;
__s32 pt_status;
__u64 pt_addr0, pt_frame0;
__u32 pt_claimed;
__u8 pt_out[PT_RUN];

#define PT_P    (1ULL << 0)  /* _PAGE_PRESENT */
#define PT_RW   (1ULL << 1)  /* _PAGE_RW */
#define PT_U    (1ULL << 2)  /* _PAGE_USER */
#define PT_PSE  (1ULL << 7)  /* _PAGE_PSE: a 1 GiB or 2 MiB leaf */
#define PT_SPEC (1ULL << 9)  /* _PAGE_SPECIAL (SOFTW1): the zero page, raw PFNs */
#define PT_SD   (1ULL << 11) /* _PAGE_SOFT_DIRTY (SOFTW3) */
#define PT_UFFD (1ULL << 10) /* _PAGE_UFFD_WP (SOFTW2) */
#define PT_DEVM (1ULL << 57) /* _PAGE_DEVMAP (SOFTW4): device memory */

/* A PTE page read whole: one per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[512]);
} pt_page SEC(".maps");

/* -- The walk --------------------------------------------------------------- */

#define PT_NEXT(po, e, va, shift) ((po) + ((e) & pt_mask) + (((va) >> (shift)) & 511) * 8)

/* A user entry of an upper level: present, user, a frame of RAM. */
#define UP_OK(e) (((e) & (PT_P | PT_U)) == (PT_P | PT_U) && ((e) & pt_mask) < pt_top)
/* A leaf's answer. */
#define LEAF_UNWRITTEN(e) \
	(((e) & (PT_P | PT_U | PT_RW | PT_SD | PT_SPEC | PT_UFFD | PT_DEVM)) == (PT_P | PT_U))

struct walk {
	__u64 pgd, po, lo, hi; /* the mapping's part of the range */
	__u64 leaf;  /* the region's 2 MiB leaf (mode 1) */
	int mode;    /* the current 2 MiB region: 0 nothing to claim, 1 a
		      * 2 MiB leaf, 2 its PTE page read (pt_page) */
};

/* The 2 MiB region of va: its PMD entry, its PTE page read whole. */
static __always_inline void region(struct walk *w, __u64 va)
{
	__u64 e, *pte;
	__u32 zero = 0;

	w->mode = 0;
	e = po_rd(w->pgd + ((va >> 39) & 511) * 8);
	if (!UP_OK(e) || (e & PT_PSE))
		return;
	e = po_rd(PT_NEXT(w->po, e, va, 30));
	if (!UP_OK(e) || (e & PT_PSE)) /* a 1 GiB leaf: no claim */
		return;
	e = po_rd(PT_NEXT(w->po, e, va, 21));
	if (!UP_OK(e))
		return;
	if (e & PT_PSE) { /* a 2 MiB leaf: its bits are every page's */
		w->leaf = e;
		w->mode = 1;
		return;
	}
	pte = bpf_map_lookup_elem(&pt_page, &zero);
	if (pte && !bpf_probe_read_kernel(pte, 4096, (void *)(w->po + (e & pt_mask))))
		w->mode = 2;
}

/* Page i of the mapping's part of the range (from w->lo). */
static long page(__u64 i, struct walk *w)
{
	__u64 va = w->lo + (i << 12), x, frame, *pte, k;
	__u32 zero = 0;

	if (va >= w->hi)
		return 1;
	if (!i || !(va & ((1ULL << 21) - 1)))
		region(w, va);
	if (w->mode == 1) {
		x = w->leaf;
		frame = (x & pt_mask & ~((1ULL << 21) - 1)) + (va & ((1ULL << 21) - 1));
	} else if (w->mode == 2 && (pte = bpf_map_lookup_elem(&pt_page, &zero))) {
		x = pte[(va >> 12) & 511];
		frame = x & pt_mask;
	} else {
		return 0;
	}
	if (!LEAF_UNWRITTEN(x) || frame >= pt_top)
		return 0;
	k = (va - pt_start) >> 12;
	if (k >= PT_RUN)
		return 1;
	pt_out[k & (PT_RUN - 1)] = PT_UNWRITTEN;
	if (!pt_claimed++) {
		pt_addr0 = va;
		pt_frame0 = frame;
	}
	return 0;
}

#define VMF_WRITE   0x00000002ULL /* VM_WRITE */
#define VMF_SHARED  0x00000008ULL /* VM_SHARED */
#define VMF_UFFD_WP 0x00001000ULL /* VM_UFFD_WP */

SEC("iter/task_vma")
int pt_scan(struct bpf_iter__task_vma *ctx)
{
	struct vm_area_struct *vma = ctx->vma;
	struct task_struct *task = ctx->task;
	__u64 gen, tg, end, flags, lo, hi, pgd;
	struct walk w = {};
	__u32 tgid;
	struct mm_struct *mm;

	if (!task || !vma)
		return 0;
	tgid = BPF_CORE_READ(task, tgid);
	/* the base's search, on our own tables: once, at the first mapping */
	if (!pt_po && tgid == pt_self && pt_self) {
		pgd = (__u64)BPF_CORE_READ(vma, vm_mm, pgd);
		pt_po = po_find(pgd, pt_gib, pt_mask, pt_top, pt_cva, pt_cword);
		pt_self = 0;
		return 0;
	}
	if (tgid != pt_tgid)
		return 0;
	if (pt_status == PT_NOTASK)
		pt_status = PT_OK;
	if (pt_status != PT_OK || pt_n > PT_RUN || (pt_start & 4095))
		return 0;
	end = pt_start + ((__u64)pt_n << 12);
	if (end > (1ULL << 47))
		return 0;
	lo = BPF_CORE_READ(vma, vm_start);
	hi = BPF_CORE_READ(vma, vm_end);
	lo = lo > pt_start ? lo : pt_start;
	hi = hi < end ? hi : end;
	flags = BPF_CORE_READ(vma, vm_flags);
	if (lo >= hi || !(flags & VMF_WRITE) || (flags & (VMF_SHARED | VMF_UFFD_WP)))
		return 0;
	mm = BPF_CORE_READ(vma, vm_mm);
	if (!mm) {
		pt_status = PT_NOMM;
		return 0;
	}
	if (!bpf_core_field_exists(mm->context.tlb_gen)) {
		pt_status = PT_NOGEN;
		return 0;
	}
	tg = (__u64)mm + bpf_core_field_offset(struct mm_struct, context.tlb_gen);
	w.pgd = (__u64)BPF_CORE_READ(mm, pgd);
	if (!pt_po) {
		pt_status = PT_NOPO;
		return 0;
	}
	w.po = pt_po;
	w.lo = lo;
	w.hi = hi;
	gen = po_rd(tg);
	bpf_loop((hi - lo) >> 12, page, &w, 0);
	asm volatile("" ::: "memory");
	if (po_rd(tg) != gen)
		pt_status = PT_MOVED;
	return 0;
}
