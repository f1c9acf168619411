/* Probe placement on known instruction sequences. */
#include <stdio.h>
#include <string.h>

#include "probes/placement.h"

#include "check.h"

#define BASE 0x14790ULL

static int plan(const unsigned char *code, size_t n, struct probe_plan *p)
{
	char err[128];
	return probe_plan_code(code, n, BASE, 0x14790, p, err, sizeof(err));
}

int main(void)
{
	/* Debian luajit 2.1 lj_alloc_f: test rcx,rcx; je free; test rsi,rsi;
	 * je malloc; mov rdx,rcx; jmp realloc; nop; mov rsi,rcx; jmp malloc;
	 * free: jmp lj_alloc_free */
	static const unsigned char lj[] = {
		0x48, 0x85, 0xc9, 0x74, 0x1b, 0x48, 0x85, 0xf6, 0x74, 0x0e,
		0x48, 0x89, 0xca, 0xe9, 0xce, 0xfd, 0xff, 0xff, 0x66, 0x0f,
		0x1f, 0x44, 0x00, 0x00, 0x48, 0x89, 0xce, 0xe9, 0x10, 0xeb,
		0xff, 0xff, 0xe9, 0x4b, 0xd6, 0xff, 0xff,
	};
	static const unsigned char push[] = { 0x55, 0x48, 0x89, 0xe5, 0xc3 };
	static const unsigned char clob[] = { 0x48, 0x89, 0xf7, 0x90, 0xc3 };
	static const unsigned char jne[] = {
		0xf3, 0x0f, 0x1e, 0xfa,             /* endbr64 */
		0x48, 0x85, 0xc9, 0x75, 0x05,       /* test rcx,rcx; jne +5 */
		0xe9, 0x00, 0x00, 0x00, 0x00,       /* free: jmp */
		0x55, 0xc3,                         /* alloc: push rbp; ret */
	};
	struct probe_plan p;

	CHECK("lj_alloc_f decodes", plan(lj, sizeof(lj), &p) == 0);
	CHECK("lj_alloc_f: single site is the je after test rcx,rcx",
	      p.all.addr == BASE + 3 && p.all.emulated && !p.warning[0]);
	CHECK("lj_alloc_f: split into free and allocation paths", p.split);
	CHECK("lj_alloc_f: free path probe on its jmp",
	      p.free_site.addr == BASE + 0x20 && p.free_site.emulated &&
		      p.free_site.off == 0x14790 + 0x20);
	CHECK("lj_alloc_f: allocation path probe on the second je",
	      p.alloc_site.addr == BASE + 8 && p.alloc_site.emulated);

	CHECK("push rbp entry decodes", plan(push, sizeof(push), &p) == 0);
	CHECK("push rbp: probe at the entry, emulated, no split",
	      p.all.addr == BASE && p.all.emulated && !p.split && !p.warning[0]);

	CHECK("clobbering entry decodes", plan(clob, sizeof(clob), &p) == 0);
	CHECK("mov rdi,rsi first: falls back to the entry with a warning",
	      p.all.addr == BASE && !p.all.emulated && strstr(p.warning, "single-steps"));

	CHECK("endbr64 + jne decodes", plan(jne, sizeof(jne), &p) == 0);
	CHECK("jne: fall-through is the free path, target the allocation path",
	      p.split && p.free_site.addr == BASE + 9 && p.alloc_site.addr == BASE + 14);
	CHECK("endbr64 is stepped over to the first jcc",
	      p.all.addr == BASE + 7 && p.all.emulated);
	return fails ? 1 : 0;
}
