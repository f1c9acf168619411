/* LuaJIT structure layouts, one entry per build variant. */
#ifndef LMT_LAYOUT_H
#define LMT_LAYOUT_H

#include "luamemtrace.h"
#include "target/vmdef.h"

/* Offsets only user space reads. */
struct lj_ulayout {
	/* GCtrace */
	unsigned T_nsnap, T_nsnapmap, T_snap, T_snapmap, T_nins, T_ir, T_nk;
	/* SnapShot */
	unsigned snap_size, snap_mapofs, snap_ref, snap_mcofs, snap_nent;
	/* 1: SnapShot has no mcofs (an older 2.1: Tarantool's), so a machine
	 * code offset cannot be told its snapshot (convert/jit.c) */
	unsigned snap_nomcofs;
	/* IR: an instruction's op1, op2, opcode and register; constants
	 * below ref_bias; IR_KGC's 64-bit pointer in the next slot (GC64);
	 * the allocations the JIT may sink, and the register of one sunk */
	unsigned ir_op1, ir_op2, ir_t, ir_o, ir_r, ir_kgc, ref_bias, irt_func;
	unsigned ir_tnew, ir_tdup, ir_cnew, ir_cnewi, rid_sunk;
	/* Bytecode opcodes a stretch of a trace is walked over
	 * (convert/jit.c): what allocates, what ends the walk */
	unsigned bc_tnew, bc_tdup, bc_cat, bc_fnew, bc_kcdata, bc_tsetv,
		bc_tsets, bc_tsetb, bc_tsetm, bc_callm, bc_call, bc_callmt,
		bc_callt, bc_retm, bc_ret, bc_ret0, bc_ret1, bc_jmp, bc_cond_hi,
		bc_iterc, bc_isnext, bc_fori, bc_jloop, bc_varg;
	/* GCproto's type tag, and the opcodes of a Lua function's header
	 * instruction (bc[0]; no other instruction has them) */
	unsigned pt_gct, tproto, bc_func_lo, bc_func_hi;
	/* A Lua function's upvalues (GCfuncL.uvptr, GCupval.v) and the
	 * bytecode that loads one (an inlined callee read from its caller) */
	unsigned fn_uvptr, uv_v, bc_uget;
	/* A metamethod a trace inlined: the IR of its lookup in a metatable
	 * (lj_record_mm_lookup: FLOAD tab.meta or udata.meta, its node,
	 * HREFK or HREF by the name, a KSLOT of it, HLOAD), and the bytecodes
	 * that may call one besides CAT, the calls and the table stores
	 * (UNM to POW: arithmetic and LEN; TGETV to TGETB) */
	unsigned ir_fload, ir_hrefk, ir_href, ir_hload, ir_kslot, irfl_tab_meta,
		irfl_tab_node, irfl_udata_meta, bc_unm, bc_pow, bc_tgetv, bc_tgetb;
	/* A return below the trace's base frame: RETF's guard on the return
	 * PC (a KPTR constant, its pointer in the next slot) */
	unsigned ir_retf, ir_kptr;
	/* A store of a new key, which may grow its table */
	unsigned ir_newref;
	/* Lua tables, for the names Lua gives C functions (convert/luanames.c):
	 * global_State's registry, GCtab, Node, and the itypes (int32) */
	unsigned g_registrytv, g_cdatamt, tab_node, tab_hmask, node_size, node_val, node_key;
	int itype_str, itype_tab, itype_func;
};

/* Offsets the heap walker reads (user/heap/): global_State from g, jit_State
 * from J, and the GC objects' fields and sizes (lj_obj.h, lj_jit.h,
 * lj_ctype.h); with the other layouts' fields it needs. */
struct lj_hlayout {
	unsigned g_gc_total, g_gc_root, g_gc_mmudata, g_gc_lightudnum, g_gc_lightudseg;
	unsigned g_str_tab, g_str_mask, g_tmpbuf_e, g_tmpbuf_b, g_gcroot, gcroot_max;
	/* g->tmpbuf's pointers' size: 8, or 4 (an older 2.1's MRefs); no
	 * lightuserdata segments (an older 2.1): g_gc_lightudseg 0 */
	unsigned g_tmpbuf_sz;
	unsigned gcroot_basemt; /* GCROOT_BASEMT: gcroot[] below it are metamethod names */
	unsigned g_ctype_state, g_strempty, g_uvhead, gg_size;
	unsigned J_sizetrace, J_irtoplim, J_irbotlim, J_sizesnap, J_sizesnapmap;
	unsigned L_env, L_stacksize, L_top, L_maxstack;
	unsigned tab_metatable, tab_array, tab_asize, tab_colo, tab_sizeof;
	unsigned str_sizeof;
	/* a string's size: 1: GCstr, the length and its NUL rounded up to 4
	 * (lj_str_size); 0: GCstr, the length and its NUL (an older 2.1's
	 * sizestring) */
	unsigned str_round4;
	unsigned fn_nupvalues, fn_env, fn_upvalue, fnc_sizeof, fnl_sizeof;
	unsigned uv_closed, uv_tv, uv_next, uv_sizeof;
	unsigned pt_sizept, pt_k, pt_sizekgc, pt_trace, pt_sizeuv, pt_uvinfo, pt_varinfo;
	unsigned ud_len, ud_env, ud_metatable, ud_sizeof;
	unsigned cd_ctypeid, cd_sizeof, cdv_sizeof, cdv_extra, cdv_len;
	unsigned cts_tab, cts_sizetab, cts_finalizer, cts_sizeof, cts_cbid, cts_cb_sizeid;
	unsigned ct_sizeof, ct_info, ct_size, ct_shift, ct_hassize, ct_attrib, ct_cidmask;
	unsigned ct_name; /* CType.name: a GCstr, the type's own name (struct, typedef) */
	unsigned T_link, T_nextroot, T_nextside, T_traceno, ir_sizeof, ref_true, ir_knull;
	unsigned irt_is64; /* IRT_IS64: a bit per IR type with a 64-bit constant */
	/* type tags (~itype) */
	unsigned tstr, tupval, tproto, ttrace, tcdata, ttab, tudata;
};

struct lj_variant {
	const char *name;
	struct lj_layout lay;
	struct lj_ulayout u;
	struct lj_hlayout h;
	unsigned sizeof_L; /* sizeof(lua_State): g follows it in GG_State */
	const struct lj_vmdef *vmdef; /* its ffnames and bytecode (target/vmdef.h) */
};

extern const struct lj_variant lj_variants[];
extern const unsigned lj_nvariants;

#endif
