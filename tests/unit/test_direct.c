/* Direct reads (bpf/direct.h) on the host: the page walk, dr_addr, the
 * walks kept while the mm's TLB generation stands, and the search of the
 * user stack for a trace's return (bpf/trace.h) against page tables laid
 * out as x86-64's four levels, in a buffer that stands for physical
 * memory (the direct map's base is its address); and the trace a CPU
 * charged last (bpf/trace.h: tm_get). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/types.h>

#include "luamemtrace.h"

#ifndef __noinline
#define __noinline __attribute__((noinline))
#endif
#define LMT_DR_HOST
static int loads;
static __u64 ld[16]; /* the addresses of the last loads, by their number */
static __u64 kld(__u64 a)
{
	ld[loads++ & 15] = a;
	return *(const __u64 *)(uintptr_t)a;
}
#include "direct.h"
#pragma GCC diagnostic ignored "-Wunknown-pragmas" /* cache.h's clang loop hints */
#include "cache.h"
#include "../../bpf/trace.h" /* not user/session/session.h */

#include "check.h"

#define PG 4096ULL
/* bpf/trace.h's hint for the trace whose machine code is at mc */
#define SH(t, mc) dr_hint_of(&(t), (mc))
/* the walk used last */
#define LAST(t) ((t).walk[(t).cur & (LMT_NWALK - 1)])
/* Is va's page kept in t, for pgd, the mm and the generation now? */
static int kept(const struct lmt_percpu *t, __u64 pgd, __u64 va);
#define NPG 8
#define E_PU (DR_P | DR_U | 2ULL) /* present, user, writable */
#define NX (1ULL << 63)

static _Alignas(4096) __u64 mem[NPG][512]; /* "physical" pages 0..7 */
static __u64 tlbgen = 1; /* the mm's TLB generation (mm->context.tlb_gen) */
#define MM_ID 77ULL      /* and its ID (ctx_id) */

/* A CPU's state as a run in that mm finds it (dr_pgd). */
static void t_init(struct lmt_percpu *t)
{
	memset(t, 0, sizeof(*t));
	t->tg = (__u64)(uintptr_t)&tlbgen;
	t->ctx = MM_ID;
}

static int kept(const struct lmt_percpu *t, __u64 pgd, __u64 va)
{
	int n = 0;

	for (int i = 0; i < LMT_NWALK; i++)
		n += t->walk[i].pgd == pgd && t->walk[i].v == va >> 12 &&
		     t->walk[i].ctx == t->ctx && t->walk[i].gen == tlbgen;
	return n == 1; /* never twice */
}

static __u64 va_of(__u64 i4, __u64 i3, __u64 i2, __u64 i1, __u64 off)
{
	return i4 << 39 | i3 << 30 | i2 << 21 | i1 << 12 | off;
}

int main(void)
{
	const __u64 po = (__u64)(uintptr_t)mem, pgd = po; /* page 0: the PGD */
	const __u64 va = va_of(0xfe, 3, 7, 9, 0x128);
	__u64 k;
	struct lmt_percpu t;

	/* pgd -> page 1 (PUD) -> page 2 (PMD) -> page 3 (PTE) -> frame 5 */
	mem[0][0xfe] = 1 * PG | E_PU;
	mem[1][3] = 2 * PG | E_PU;
	mem[2][7] = 3 * PG | E_PU;
	mem[3][9] = 5 * PG | E_PU | NX;
	k = dr_walk(po, pgd, va);
	CHECK("walk: a 4 KiB page's frame, NX not taken for an address bit",
	      k == po + 5 * PG);

	/* Each level not present, or not user-accessible: no address. */
	{
		__u64 *lv[4] = { &mem[0][0xfe], &mem[1][3], &mem[2][7], &mem[3][9] };
		int none = 0;

		for (int i = 0; i < 4; i++) {
			const __u64 keep = *lv[i];

			*lv[i] = keep & ~DR_P;
			none += !dr_walk(po, pgd, va);
			*lv[i] = keep & ~DR_U;
			none += !dr_walk(po, pgd, va);
			*lv[i] = keep;
		}
		CHECK("walk: not present or kernel-only at any level: none", none == 8);
	}
	mem[3][9] |= DR_SPEC;
	CHECK("walk: a special mapping (device memory): none",
	      !dr_walk(po, pgd, va));
	mem[3][9] &= ~DR_SPEC;
	mem[0][0xfe] |= DR_PSE;
	CHECK("walk: a leaf at the PGD (none on x86-64): none",
	      !dr_walk(po, pgd, va));
	mem[0][0xfe] &= ~DR_PSE;

	/* Huge leaves: the frame's base plus the address's page within it. */
	mem[2][8] = 0x400000ULL | E_PU | DR_PSE;
	k = dr_walk(po, pgd, va_of(0xfe, 3, 8, 0x1ab, 0x10));
	CHECK("walk: a 2 MiB leaf", k == po + 0x400000ULL + 0x1ab * PG);
	mem[2][8] |= DR_SPEC;
	CHECK("walk: a special 2 MiB leaf (device memory): none",
	      !dr_walk(po, pgd, va_of(0xfe, 3, 8, 0x1ab, 0x10)));
	mem[2][8] &= ~DR_SPEC;
	mem[1][4] = (1ULL << 30) | E_PU | DR_PSE;
	k = dr_walk(po, pgd, va_of(0xfe, 4, 0x15, 0x33, 0x10));
	CHECK("walk: a 1 GiB leaf", k == po + (1ULL << 30) + (0x15ULL << 21) + 0x33 * PG);
	mem[1][4] |= DR_SPEC;
	CHECK("walk: a special 1 GiB leaf: none",
	      !dr_walk(po, pgd, va_of(0xfe, 4, 0x15, 0x33, 0x10)));
	mem[1][4] &= ~DR_SPEC;

	/* dr_addr: the byte's kernel address; the last page walked kept
	 * for its PGD, mm and TLB generation; what it refuses. */
	t_init(&t);
	dr_po = po;
	loads = 0;
	k = dr_addr(&t, pgd, va, 16);
	CHECK("dr_addr: the byte's address: the generation, then a walk",
	      k == po + 5 * PG + 0x128 && loads == 5 && ld[0] == (__u64)(uintptr_t)&tlbgen);
	CHECK("dr_addr: the page kept, with its mm and generation",
	      LAST(t).pgd == pgd && LAST(t).v == va >> 12 && LAST(t).ctx == MM_ID &&
	      LAST(t).gen == tlbgen && t.gen == tlbgen);
	loads = 0;
	CHECK("dr_same: the generation unchanged: the generation alone read",
	      dr_same(&t) && loads == 1 && ld[0] == (__u64)(uintptr_t)&tlbgen);
	mem[3][9] = 6 * PG | E_PU; /* the page moved, the TLBs not flushed yet */
	CHECK("dr_same: an entry changed, not yet flushed: the old frame stands "
	      "(not freed before the flush)", dr_same(&t));
	tlbgen++; /* the flush */
	CHECK("dr_same: flushed since the loads began: not", !dr_same(&t));
	CHECK("dr_same: ... its walk dropped", !LAST(t).pgd);
	loads = 0;
	k = dr_addr(&t, pgd, va + 0x100, 8);
	CHECK("dr_addr: walked again: the new frame", k == po + 6 * PG + 0x228 && loads == 5 &&
	      LAST(t).gen == tlbgen && dr_same(&t));
	mem[3][9] = 5 * PG | E_PU | NX;
	tlbgen++;
	k = dr_addr(&t, pgd, va + 0x100, 8);
	CHECK("dr_addr: and back", k == po + 5 * PG + 0x228);
	loads = 0;
	k = dr_addr(&t, pgd, va + 0x200, 8);
	CHECK("dr_addr: the same page, the same generation: no walk",
	      k == po + 5 * PG + 0x328 && loads == 1);
	mem[0][0xfe] &= ~DR_P;
	CHECK("dr_addr: another PGD walks its own tables", !dr_addr(&t, pgd + 8, va, 8));
	mem[0][0xfe] |= DR_P;
	t.ctx = MM_ID + 1;
	loads = 0;
	CHECK("dr_addr: another mm on the same PGD page: walked, not taken",
	      dr_addr(&t, pgd, va, 8) == po + 5 * PG + 0x128 && loads == 5 &&
	      LAST(t).ctx == MM_ID + 1);
	t.ctx = MM_ID;
	CHECK("dr_addr: across a page's end: none", !dr_addr(&t, pgd, va_of(0xfe, 3, 7, 9, 0xff8), 16));
	CHECK("dr_addr: unaligned: none", !dr_addr(&t, pgd, va + 4, 8));
	CHECK("dr_addr: a kernel address: none", !dr_addr(&t, pgd, DR_USER_END, 8) &&
	      !dr_addr(&t, pgd, 0xffff888000000000ULL, 8));
	t.tg = 0;
	CHECK("dr_addr: no TLB generation known (dr_pgd): none", !dr_addr(&t, pgd, va, 8) &&
	      !dr_kaddr(&t, pgd, va, 8));
	t.tg = (__u64)(uintptr_t)&tlbgen;

	/* dr_kaddr: the kept walks alone, no walk */
	t_init(&t);
	loads = 0;
	CHECK("dr_kaddr: nothing kept: 0, the generation alone read",
	      !dr_kaddr(&t, pgd, va, 8) && loads == 1);
	mem[3][10] = 6 * PG | E_PU;
	dr_addr(&t, pgd, va, 8);
	CHECK("dr_kaddr: a second page walked, the first kept behind it",
	      dr_addr(&t, pgd, va_of(0xfe, 3, 7, 10, 0), 8) == po + 6 * PG &&
	      LAST(t).v != va >> 12 && kept(&t, pgd, va));
	loads = 0;
	CHECK("dr_kaddr: the older kept page: its address, now the last, the generation kept",
	      dr_kaddr(&t, pgd, va, 8) == po + 5 * PG + 0x128 && loads == 1 &&
	      LAST(t).v == va >> 12 && t.gen == tlbgen && dr_same(&t));
	t.ctx = MM_ID + 1;
	CHECK("dr_kaddr: another mm: 0", !dr_kaddr(&t, pgd, va, 8));
	t.ctx = MM_ID;
	tlbgen++;
	CHECK("dr_kaddr: a flush since: 0 (dr_addr walks again)", !dr_kaddr(&t, pgd, va, 8) &&
	      dr_addr(&t, pgd, va, 8) == po + 5 * PG + 0x128 && dr_kaddr(&t, pgd, va, 8));
	CHECK("dr_kaddr: across a page's end, or unaligned: 0",
	      !dr_kaddr(&t, pgd, va_of(0xfe, 3, 7, 9, 0xff8), 16) && !dr_kaddr(&t, pgd, va + 4, 8));
	mem[3][10] = 0;

	/* Walks kept across runs while the generation stands: the
	 * LMT_NWALK pages used last. */
	{
		const __u64 vb = va_of(0xfe, 3, 7, 10, 0x40), vc = va_of(0xfe, 3, 7, 11, 0);
		const __u64 vd = va_of(0xfe, 3, 7, 12, 0), ve = va_of(0xfe, 3, 7, 13, 0);

		_Static_assert(LMT_NWALK == 4, "the pages below are four, and a fifth");
		mem[3][10] = 6 * PG | E_PU;
		mem[3][11] = 7 * PG | E_PU;
		mem[3][12] = 4 * PG | E_PU;
		mem[3][13] = 4 * PG | E_PU;
		t_init(&t);
		dr_newrun(&t);
		dr_addr(&t, pgd, va, 8);
		k = dr_addr(&t, pgd, vb, 8);
		CHECK("kept: the second page's address, the first kept behind it",
		      k == po + 6 * PG + 0x40 && kept(&t, pgd, va) && LAST(t).v == vb >> 12);
		loads = 0;
		dr_addr(&t, pgd, vb + 8, 8);
		dr_addr(&t, pgd, va, 8);
		dr_newrun(&t);
		dr_addr(&t, pgd, vb, 8);
		CHECK("kept: either page, in this run or the next: the generation alone",
		      loads == 3);
		CHECK("kept: ... the page used last the one checked",
		      LAST(t).v == vb >> 12 && kept(&t, pgd, va) && dr_same(&t));
		dr_addr(&t, pgd, vc, 8);
		dr_addr(&t, pgd, vd, 8);
		CHECK("kept: four pages, all kept",
		      LAST(t).v == vd >> 12 && kept(&t, pgd, va) && kept(&t, pgd, vb) &&
		      kept(&t, pgd, vc) && kept(&t, pgd, vd));
		loads = 0;
		dr_addr(&t, pgd, vb, 8);
		dr_addr(&t, pgd, vc, 8);
		dr_addr(&t, pgd, vd, 8);
		CHECK("kept: ... each read with the generation alone", loads == 3);
		dr_addr(&t, pgd, ve, 8);
		CHECK("kept: a fifth page: the one used longest ago goes",
		      LAST(t).v == ve >> 12 && !kept(&t, pgd, va) && kept(&t, pgd, vb) &&
		      kept(&t, pgd, vc) && kept(&t, pgd, vd));
		loads = 0;
		dr_addr(&t, pgd, va, 8);
		CHECK("kept: ... and is walked again, in the place of the next oldest",
		      loads == 5 && LAST(t).v == va >> 12 && !kept(&t, pgd, vb) &&
		      kept(&t, pgd, ve));
		/* any flush of the mm: every walk of it walked again, in its
		 * own place, the others kept */
		dr_addr(&t, pgd, vb, 8);
		mem[3][10] = 7 * PG | E_PU;
		tlbgen++;
		loads = 0;
		k = dr_addr(&t, pgd, vb, 8);
		{
			const __u32 at = t.cur;

			CHECK("kept: a flush since: walked again in its own place",
			      k == po + 7 * PG + 0x40 && loads == 5 && LAST(t).v == vb >> 12 &&
			      kept(&t, pgd, vb) && !kept(&t, pgd, va));
			tlbgen--; /* as if the others were walked under this one */
			CHECK("kept: ... the others kept where they were",
			      t.walk[at].v == vb >> 12 && kept(&t, pgd, va) && kept(&t, pgd, vd) &&
			      kept(&t, pgd, ve));
			tlbgen++;
		}
		dr_addr(&t, pgd, va, 8);
		dr_addr(&t, pgd, vd, 8);
		dr_addr(&t, pgd, ve, 8);
		dr_addr(&t, pgd, vb, 8);
		mem[3][11] = 0;
		CHECK("kept: a walk that fails: none, all kept as they were",
		      !dr_addr(&t, pgd, vc, 8) && LAST(t).v == vb >> 12 && kept(&t, pgd, va) &&
		      kept(&t, pgd, vb) && kept(&t, pgd, vd) && kept(&t, pgd, ve));
		mem[3][11] = 7 * PG | E_PU;
		mem[3][10] = 6 * PG | E_PU;
		tlbgen++;
		/* a 2 MiB page: walked in three loads */
		{
			const __u64 vh = va_of(0xfe, 3, 8, 0x1ab, 0x10);

			mem[2][8] = 0x400000ULL | E_PU | DR_PSE;
			loads = 0;
			k = dr_addr(&t, pgd, vh & ~7ULL, 8);
			CHECK("kept: a 2 MiB page walked", k == po + 0x400000ULL + 0x1ab * PG + 0x10 &&
			      loads == 1 + 3);
			loads = 0;
			CHECK("kept: ... kept", dr_addr(&t, pgd, vh & ~7ULL, 8) == k && loads == 1);
			mem[1][3] ^= DR_P;
			tlbgen++;
			CHECK("kept: ... its PUD entry gone, flushed: not taken",
			      !dr_addr(&t, pgd, vh & ~7ULL, 8));
			mem[1][3] ^= DR_P;
			mem[2][8] = 0;
			tlbgen++;
		}
		mem[3][10] = 0;
		mem[3][11] = 0;
		mem[3][12] = 0;
		mem[3][13] = 0;
		tlbgen++;
	}

	/* dr_trace_ret: the return address into the trace's machine code
	 * nearest sp; then first where the last one was, whatever the C
	 * frames below it (the trace pushes every call's return at one
	 * place). The stack: page 9 (frame 5) and page 10 (frame 6). */
	{
		const __u64 mc = 0x7000000, sz = 0x1000;
		const __u64 sp = va_of(0xfe, 3, 7, 9, 0x100);
		__u64 *s = &mem[5][0x100 / 8];
		int full;

		mem[3][10] = 6 * PG | E_PU;
		t_init(&t);
		memset(mem[5], 0x11, PG);
		memset(mem[6], 0x11, PG);
		s[3] = mc + sz; /* just past the code: not it */
		s[11] = mc + 0x40;
		s[12] = mc + 0x80;
		loads = 0;
		CHECK("trace_ret: the nearest return into the code",
		      dr_trace_ret(&t, pgd, sp, mc, sz) == 0x40);
		full = loads;
		CHECK("trace_ret: where it was found kept, for the code and the tables",
		      SH(t, mc)[0] == sp + 88 && SH(t, mc)[1] == mc && SH(t, mc)[2] == pgd);
		dr_newrun(&t);
		loads = 0;
		CHECK("trace_ret: again: the same offset",
		      dr_trace_ret(&t, pgd, sp, mc, sz) == 0x40);
		CHECK("trace_ret: ... from one word: the generation, the word, the check",
		      loads == 1 + 1 + 1 && loads < full);
		tlbgen++;
		loads = 0;
		CHECK("trace_ret: ... after a flush: no kept walk stands, the page walked again "
		      "(the generation, the walk, the word, the check)",
		      dr_trace_ret(&t, pgd, sp, mc, sz) == 0x40 && loads == 1 + 4 + 1 + 1);
		dr_newrun(&t);
		loads = 0;
		CHECK("trace_ret: through deeper C frames (sp lower): taken at once",
		      dr_trace_ret(&t, pgd, sp - 40, mc, sz) == 0x40 && loads == 3);
		s[11] = 0x11;
		dr_newrun(&t);
		CHECK("trace_ret: not there any more: searched",
		      dr_trace_ret(&t, pgd, sp, mc, sz) == 0x80 && SH(t, mc)[0] == sp + 96);
		dr_newrun(&t);
		CHECK("trace_ret: sp above where it was: searched",
		      dr_trace_ret(&t, pgd, sp + 104, mc, sz) == -1 && SH(t, mc)[0] == sp + 96);
		dr_newrun(&t);
		CHECK("trace_ret: where it was beyond the words searched: not taken "
		      "(the search meets the page below, not mapped)",
		      dr_trace_ret(&t, pgd, sp + 96 - LMT_STKW * 8, mc, sz) == -2);
		dr_newrun(&t);
		CHECK("trace_ret: another trace's code: none",
		      dr_trace_ret(&t, pgd, sp, mc + 2 * sz, sz) == -1);
		dr_newrun(&t);
		CHECK("trace_ret: other page tables: searched, their own kept",
		      dr_trace_ret(&t, pgd, sp, mc, sz) == 0x80 && SH(t, mc)[2] == pgd &&
		      (SH(t, mc)[2] = pgd + 8, dr_newrun(&t), loads = 0,
		       dr_trace_ret(&t, pgd, sp, mc, sz) == 0x80 && loads > 3));
		/* Two traces in turn each keep their own. */
		{
			__u64 mc2 = mc + 4 * sz;

			while (SH(t, mc2) == SH(t, mc))
				mc2 += 4 * sz;
			s[5] = mc2 + 0x10;
			dr_newrun(&t);
			CHECK("trace_ret: a second trace's return, searched",
			      dr_trace_ret(&t, pgd, sp, mc2, sz) == 0x10 &&
			      SH(t, mc2)[0] == sp + 40);
			dr_newrun(&t);
			loads = 0;
			CHECK("trace_ret: the first trace's still taken at once",
			      dr_trace_ret(&t, pgd, sp - 8, mc, sz) == 0x80 && loads == 3);
			dr_newrun(&t);
			loads = 0;
			CHECK("trace_ret: and the second's",
			      dr_trace_ret(&t, pgd, sp, mc2, sz) == 0x10 && loads == 3);
			s[5] = 0x11;
		}
		/* Across the page's end: words on the next page. */
		{
			const __u64 sp2 = va_of(0xfe, 3, 7, 9, PG - 16);

			mem[6][1] = mc + 0x99;
			dr_newrun(&t);
			CHECK("trace_ret: on the next page",
			      dr_trace_ret(&t, pgd, sp2, mc, sz) == 0x99 &&
			      SH(t, mc)[0] == va_of(0xfe, 3, 7, 10, 8));
			dr_newrun(&t);
			loads = 0;
			CHECK("trace_ret: on the next page again: from its one word",
			      dr_trace_ret(&t, pgd, sp2, mc, sz) == 0x99 && loads == 3);
			mem[3][10] = 0;
			tlbgen++;
			CHECK("trace_ret: the next page not mapped: cannot tell",
			      dr_trace_ret(&t, pgd, sp2, mc, sz) == -2);
		}
	}

	dr_po = 0;
	CHECK("dr_addr: off until the direct map is found", !dr_addr(&t, pgd, va, 8));

	/* The trace charged last: trace 7 of process 42's VM 3, under trgen 9. */
	{
		const __u64 mc0 = 0x7f0000001000ULL;
		__u64 mc = 0, sz = 0, *tm = tm_of(&t, 7);

		memset(t.tm, 0, sizeof(t.tm));
		CHECK("tm_get: none kept yet", tm_get(&t, 42, 7, 3, 9, &mc, &sz) == -1);
		tm_put(&t, 42, 7, 3, mc0, 0x400, 9);
		CHECK("tm_get: its code, while trgen stands",
		      tm_get(&t, 42, 7, 3, 9, &mc, &sz) == 0 && mc == mc0 && sz == 0x400);
		CHECK("tm_get: a trace may have been made since (trgen moved): a miss",
		      tm_get(&t, 42, 7, 3, 10, &mc, &sz) == -1);
		CHECK("tm_get: another trace number, process or VM: a miss",
		      tm_get(&t, 42, 7 + LMT_TM, 3, 9, &mc, &sz) == -1 &&
		      tm_get(&t, 43, 7, 3, 9, &mc, &sz) == -1 &&
		      tm_get(&t, 42, 7, 4, 9, &mc, &sz) == -1);
		tm[2] = mc0 + 0x1000; /* torn: another trace's code, not its check */
		CHECK("tm_get: a word rewritten without its check word: a miss",
		      tm_get(&t, 42, 7, 3, 9, &mc, &sz) == -1);
		tm_put(&t, 42, 7, 3, mc0 + 0x1000, 0x200, 10);
		tm_put(&t, 42, 8, 3, mc0 + 0x2000, 0x100, 9);
		CHECK("tm_of: a root trace and its side trace each keep their own",
		      tm_of(&t, 8) != tm && tm_get(&t, 42, 8, 3, 9, &mc, &sz) == 0 &&
		      mc == mc0 + 0x2000 && tm_of(&t, 7 + LMT_TM) == tm);
		CHECK("tm_get: kept again under the new trgen: the new code",
		      tm_get(&t, 42, 7, 3, 10, &mc, &sz) == 0 && mc == mc0 + 0x1000 &&
		      sz == 0x200 && tm_get(&t, 42, 7, 3, 9, &mc, &sz) == -1);
	}
	return fails != 0;
}
