/* Probe placement. A uprobe on an instruction the kernel can emulate
 * (jmp, jcc, call rel32, nop, push reg; arch/x86/kernel/uprobes.c) is
 * cheap; any other instruction is single-stepped out of line, which costs
 * ~35 times more (docs/costs.md). So we walk the allocator from its entry
 * to the first
 * emulated instruction reached before the argument registers or rsp
 * change: there the arguments are intact and [rsp] is still the return
 * address, so an entry+return probe there sees exactly what one at the
 * entry would.
 *
 * When the allocator starts by testing nsize (test rcx,rcx; je/jne), as
 * LuaJIT's lj_alloc_f and lauxlib-style allocators do, frees and
 * allocations take different paths. Frees need no return value, so they
 * get an entry-only probe on their path and only allocations pay for the
 * return probe.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probes/placement.h"

#define CODE_MAX 256
#define WALK_MAX 16

/* The kernel's preferred NOPs (x86_nops), which it emulates. */
static const uint8_t nops[][8] = {
	{ 0 },
	{ 0x90 },
	{ 0x66, 0x90 },
	{ 0x0f, 0x1f, 0x00 },
	{ 0x0f, 0x1f, 0x40, 0x00 },
	{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
	{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
	{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
	{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
};

static int emulated(const uint8_t *b, size_t n)
{
	if (n >= 1 && n <= 8 && !memcmp(b, nops[n], n))
		return 1;
	if (n >= 2 && (b[0] == 0xeb || (b[0] >= 0x70 && b[0] <= 0x7f)))
		return n == 2;
	if (n == 5 && (b[0] == 0xe9 || b[0] == 0xe8))
		return 1;
	if (n == 6 && b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f)
		return 1;
	if (n == 1 && b[0] >= 0x50 && b[0] <= 0x57)
		return 1;
	if (n == 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57)
		return 1;
	return 0;
}

/* Does the instruction write an argument register or the stack pointer? */
static int clobbers(csh h, const cs_insn *in)
{
	cs_regs rr, ww;
	uint8_t nr, nw;

	if (cs_regs_access(h, in, rr, &nr, ww, &nw))
		return 1;
	for (unsigned i = 0; i < nw; i++) {
		switch (ww[i]) {
		case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL:
		case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL:
		case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH:
		case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH:
		case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL:
			return 1;
		}
	}
	return 0;
}

static void site_set(struct probe_site *s, const cs_insn *in, uint64_t base,
		     uint64_t off)
{
	s->addr = in->address;
	s->off = off + (in->address - base);
	s->emulated = emulated(in->bytes, in->size);
	snprintf(s->text, sizeof(s->text), "%s %s", in->mnemonic, in->op_str);
}

/* From start, the first emulated instruction before anything clobbers the
 * arguments or rsp, or an unconditional transfer we cannot follow. */
static int walk(csh h, const uint8_t *code, size_t len, uint64_t base,
		uint64_t off, uint64_t start, struct probe_site *s)
{
	cs_insn *in = cs_malloc(h);
	const uint8_t *p;
	size_t n;
	uint64_t a = start;
	int found = -1;

	if (!in || start < base || start >= base + len) {
		if (in)
			cs_free(in, 1);
		return -1;
	}
	p = code + (start - base);
	n = len - (start - base);
	for (int i = 0; i < WALK_MAX && cs_disasm_iter(h, &p, &n, &a, in); i++) {
		if (emulated(in->bytes, in->size)) {
			site_set(s, in, base, off);
			found = 0;
			break;
		}
		if (clobbers(h, in) || cs_insn_group(h, in, X86_GRP_JUMP) ||
		    cs_insn_group(h, in, X86_GRP_RET) ||
		    cs_insn_group(h, in, X86_GRP_CALL))
			break;
	}
	cs_free(in, 1);
	return found;
}

static int is_reg(const cs_x86_op *o, x86_reg r)
{
	return o->type == X86_OP_REG && o->reg == r;
}

/* "test rcx,rcx" or "cmp rcx,0" directly followed by je/jne rel: returns
 * the free path's and the allocation path's first addresses. */
static int nsize_split(csh h, const uint8_t *code, size_t len, uint64_t base,
		       uint64_t *free_at, uint64_t *alloc_at)
{
	cs_insn *in = NULL;
	size_t n = cs_disasm(h, code, len, base, WALK_MAX, &in);
	int ok = -1;

	for (size_t i = 0; i + 1 < n; i++) {
		const cs_x86 *x = &in[i].detail->x86, *j = &in[i + 1].detail->x86;
		int tst = in[i].id == X86_INS_TEST && x->op_count == 2 &&
			  is_reg(&x->operands[0], X86_REG_RCX) &&
			  is_reg(&x->operands[1], X86_REG_RCX);
		int cmp = in[i].id == X86_INS_CMP && x->op_count == 2 &&
			  is_reg(&x->operands[0], X86_REG_RCX) &&
			  x->operands[1].type == X86_OP_IMM &&
			  x->operands[1].imm == 0;

		if (tst || cmp) {
			uint64_t next = in[i + 1].address + in[i + 1].size, tgt;
			if (j->op_count != 1 || j->operands[0].type != X86_OP_IMM)
				break;
			tgt = (uint64_t)j->operands[0].imm;
			if (in[i + 1].id == X86_INS_JE) {
				*free_at = tgt;
				*alloc_at = next;
				ok = 0;
			} else if (in[i + 1].id == X86_INS_JNE) {
				*free_at = next;
				*alloc_at = tgt;
				ok = 0;
			}
			break;
		}
		if (clobbers(h, &in[i]) || cs_insn_group(h, &in[i], X86_GRP_JUMP))
			break;
	}
	if (in)
		cs_free(in, n);
	return ok;
}

int probe_plan_code(const uint8_t *code, size_t len, uint64_t addr,
		    uint64_t off, struct probe_plan *p, char *err,
		    size_t errlen)
{
	uint64_t fa, aa;
	csh h;

	memset(p, 0, sizeof(*p));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		snprintf(err, errlen, "capstone: cannot open an x86-64 decoder");
		return -1;
	}
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	if (walk(h, code, len, addr, off, addr, &p->all)) {
		cs_insn *in = NULL;
		size_t n = cs_disasm(h, code, len, addr, 1, &in);
		p->all.addr = addr;
		p->all.off = off;
		p->all.emulated = 0;
		if (n)
			snprintf(p->all.text, sizeof(p->all.text), "%s %s",
				 in[0].mnemonic, in[0].op_str);
		if (in)
			cs_free(in, n);
		snprintf(p->warning, sizeof(p->warning),
			 "no emulated instruction before the allocator changes "
			 "its arguments; probing its entry (%s), which the "
			 "kernel single-steps: ~14 us per call instead of ~0.4 us",
			 p->all.text);
	}
	if (!nsize_split(h, code, len, addr, &fa, &aa) &&
	    !walk(h, code, len, addr, off, fa, &p->free_site) &&
	    !walk(h, code, len, addr, off, aa, &p->alloc_site))
		p->split = 1;
	cs_close(&h);
	return 0;
}

int probe_plan(int fd, uint64_t addr, uint64_t off,
	       struct probe_plan *p, char *err, size_t errlen)
{
	uint8_t code[CODE_MAX];
	ssize_t n = pread(fd, code, sizeof(code), (off_t)off);

	if (n <= 0) {
		snprintf(err, errlen, "cannot read the allocator's code (offset 0x%llx "
			 "of its file)", (unsigned long long)off);
		return -1;
	}
	return probe_plan_code(code, (size_t)n, addr, off, p, err, errlen);
}
