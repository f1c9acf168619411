/* What LuaJIT's jit/vmdef.lua and lj_bc.h say of a build, per variant
 * (each entry of target/layout.c points to one): its fast functions' names
 * by ffid (vmdef.lua's ffnames: "string.gmatch_aux"), its bytecode's
 * modes (lj_bc.h's BCDEF: what an instruction's A operand is, the
 * metamethod it may call). The numbering differs between builds
 * (OpenResty's luajit2 adds thread.exdata, table.isempty, ... among the
 * ffids): a name is only given through the variant the target was found
 * to be. */
#ifndef LMT_VMDEF_H
#define LMT_VMDEF_H

#include <stddef.h>

/* An instruction's A operand, as lj_bc.h's bcmode_a tells it (BCMbase,
 * BCMdst; the others do not matter to lj_debug_slotname). */
enum { LJ_BCA_OTHER, LJ_BCA_BASE, LJ_BCA_DST };

/* An instruction's metamethod (bcmode_mm): a call (MM_call), or the
 * metamethod's name as LuaJIT interns it ("__index"), or NULL (MM__MAX). */
#define LJ_BC_CALL "()"

struct lj_bcdef {
	unsigned char a;
	const char *mm;
};

struct lj_vmdef {
	const char *const *ffnames; /* by ffid; nff of them */
	unsigned nff;
	const struct lj_bcdef *bc;  /* by opcode; nbc of them */
	unsigned nbc;
	/* the opcodes lj_debug_slotname tells apart */
	unsigned bc_mov, bc_knil, bc_uget, bc_gget, bc_tgets, bc_iterc;
};

/* The fast function ffid's name in build d: NULL if d has none (an ffid
 * past its list, or 0 and 1: a Lua or C function, no builtin). */
static inline const char *vmdef_ffname(const struct lj_vmdef *d, unsigned ffid)
{
	return d && ffid > 1 && ffid < d->nff ? d->ffnames[ffid] : NULL;
}

/* Does builtin ffid of build d never allocate (target/vmdef.c's list, by
 * name)? 0 if not, or not known. */
int vmdef_ff_noalloc(const struct lj_vmdef *d, unsigned ffid);

/* LuaJIT 2.1 GC64 as Debian builds it (luajit 2.1.0~beta3+git20220320),
 * and OpenResty's luajit2 (Debian's luajit2 2.1-20230119). */
extern const struct lj_vmdef lj_vmdef_lj21, lj_vmdef_or21, lj_vmdef_tt26;

#endif
