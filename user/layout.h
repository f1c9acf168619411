/* LuaJIT structure layouts, one entry per build variant. */
#ifndef LMT_LAYOUT_H
#define LMT_LAYOUT_H

#include "luamemtrace.h"

/* Offsets only user space reads. */
struct lj_ulayout {
	/* GCtrace */
	unsigned T_nsnap, T_nsnapmap, T_snap, T_snapmap;
	/* SnapShot */
	unsigned snap_size, snap_mapofs, snap_mcofs, snap_nent;
	/* GCproto's type tag, and the opcodes of a Lua function's header
	 * instruction (bc[0]; no other instruction has them) */
	unsigned pt_gct, tproto, bc_func_lo, bc_func_hi;
};

struct lj_variant {
	const char *name;
	struct lj_layout lay;
	struct lj_ulayout u;
	unsigned sizeof_L; /* sizeof(lua_State): g follows it in GG_State */
};

extern const struct lj_variant lj_variants[];
extern const unsigned lj_nvariants;

#endif
