/* The one table of LuaJIT offsets. Each entry was taken with offsetof()
 * from the exact sources Debian builds (apt-get source luajit / luajit2)
 * and checked against live processes. A variant is never chosen by name or
 * version string: target/vmscan.c tries every entry against the target's memory and
 * keeps the one whose self-references hold (L->glref == g, g->mainthref ==
 * L, type tags, vmstate range).
 *
 * Adding a variant (LuaJIT 2.0, a fork with more vmstates) means one more
 * entry here; BPF reads everything through struct lj_layout. The width of
 * references (gc64) is the entry's: BPF (bpf/lj.h) and user space
 * (target/ljref.h) read references, TValues and frames by it.
 */
#include "target/layout.h"

/* Shared by every 2.1 GC64 x86-64 build we know: only the lengths of
 * lua_State and global_State (OpenResty's exdata, exdata2 and
 * saved_jit_base at their ends), hence where g and J sit in GG_State,
 * differ between them. */
#define LJ21_GC64_COMMON                                                     \
	.g_allocf = 0, .g_allocd = 8, .g_vmstate = 184, .g_mainthref = 192,   \
	.g_cur_L = 368, .g_jit_base = 376, .J_trace = 384, .L_gct = 9,                          \
	.L_glref = 16, .L_base = 32, .L_stack = 56, .L_cframe = 80,          \
	.fn_ffid = 10, .fn_pc = 32, .fn_f = 40, .pt_size = 104,               \
	.pt_sizebc = 12, .pt_chunkname = 64, .pt_firstline = 72,             \
	.pt_numline = 76, .pt_lineinfo = 80, .str_size = 24, .str_len = 20,   \
	.T_size = 120, .T_startpt = 64, .T_startpc = 72, .T_szmcode = 84,     \
	.T_mcode = 88, .J_parent = 3016, .cf_pc = 24, .gc64 = 1,              \
	.tthread = 6, .tfunc = 8,                                             \
	/* Stock vmstates: INTERP, C, GC, EXIT, RECORD, OPT, ASM. The first   \
	 * two are resolved through the top frame (docs/stream-format.md). */  \
	.nvmst = 7,                                                           \
	.vmst = { LMT_VMST_INTERP, LMT_VMST_FRAME, LMT_VMST_INTERNAL,         \
		  LMT_VMST_EXIT, LMT_VMST_RECORD, LMT_VMST_INTERNAL,          \
		  LMT_VMST_ASM }

/* The IR's field numbers (lj_ir.h IRFLDEF) of a metatable's lookup, GC64
 * or not: upstream's, and luajit2's (THREAD_EXDATA and THREAD_EXDATA2
 * before TAB_META, UDATA_UDTYPE before UDATA_FILE: two more). */
#define LJ21_IRFL                                                            \
	.irfl_tab_meta = 5, .irfl_tab_node = 7, .irfl_udata_meta = 11
#define OR21_IRFL                                                            \
	.irfl_tab_meta = 7, .irfl_tab_node = 9, .irfl_udata_meta = 13

/* What user space alone reads (traces' snapshots, prototypes found by a
 * PC), the same in both builds. */
#define LJ21_GC64_USER                                                       \
	.T_nsnap = 10, .T_nsnapmap = 44, .T_snap = 48, .T_snapmap = 56,      \
	.T_nins = 12, .T_ir = 32, .T_nk = 40,                                \
	.snap_size = 12, .snap_mapofs = 0, .snap_ref = 4, .snap_mcofs = 6,   \
	.snap_nent = 10,                                                     \
	.ir_op1 = 0, .ir_op2 = 2, .ir_t = 4, .ir_o = 5, .ir_r = 6,            \
	.ir_kgc = 24, .irt_func = 8,                                         \
	.ref_bias = 32768, .ir_tnew = 81, .ir_tdup = 82, .ir_cnew = 83,      \
	.ir_cnewi = 84, .rid_sunk = 0xfd,                                    \
	.bc_tnew = 52, .bc_tdup = 53, .bc_cat = 38, .bc_fnew = 51,           \
	.bc_kcdata = 40, .bc_tsetv = 60, .bc_tsets = 61, .bc_tsetb = 62,     \
	.bc_tsetm = 63, .bc_callm = 65, .bc_call = 66, .bc_callmt = 67,      \
	.bc_callt = 68, .bc_retm = 73, .bc_ret = 74, .bc_ret0 = 75,          \
	.bc_ret1 = 76, .bc_jmp = 88, .bc_cond_hi = 17, .bc_iterc = 69,       \
	.bc_isnext = 72, .bc_fori = 77, .bc_jloop = 87, .bc_varg = 71,       \
	.pt_gct = 9, .tproto = 7, .bc_func_lo = 89, .bc_func_hi = 94,       \
	.fn_uvptr = 40, .uv_v = 32, .bc_uget = 45,                           \
	.ir_fload = 69, .ir_hrefk = 57, .ir_href = 58, .ir_hload = 67,       \
	.ir_kslot = 30, .bc_unm = 20, .bc_pow = 37, .bc_tgetv = 56,          \
	.bc_tgetb = 58, .ir_retf = 11, .ir_kptr = 25, .ir_newref = 59,      \
	.g_registrytv = 272, .g_cdatamt = 680, .tab_node = 40, .tab_hmask = 52, .node_size = 24, \
	.node_val = 0, .node_key = 8, .itype_str = -5, .itype_tab = -12,     \
	.itype_func = -9

/* The heap walker's values no width changes (LuaJIT 2.1, GC64 or not):
 * C types (lj_ctype.h), the IR's constants (lj_ir.h), the GC types'
 * numbers (lj_obj.h), gcroot[]'s length and its base metatables' index,
 * CTState's first fields. */
#define LJ21_HEAP_ANY                                                        \
	.gcroot_max = 38, .gcroot_basemt = 22, .cts_tab = 0,                 \
	.cts_sizetab = 12, .cts_finalizer = 32, .cdv_sizeof = 8,             \
	.cdv_extra = 2, .cdv_len = 4, .ct_info = 0, .ct_size = 4,            \
	.ct_shift = 28, .ct_hassize = 5, .ct_attrib = 8, .ct_cidmask = 65535, \
	.ir_sizeof = 8, .ref_true = 32765, .ir_knull = 27, .tstr = 4,         \
	.tupval = 5, .tproto = 7, .ttrace = 9, .tcdata = 10, .ttab = 11,     \
	.tudata = 12

/* CTState's length and its callbacks' type table (cb.cbid, cb.sizeid), the
 * same with GC64 or not: upstream's, and luajit2's, whose CCALL_MAX_FPR is
 * 14 against 8 (six more FPR slots in CCallback, 48 bytes before cbid). */
#define LJ21_CTS                                                             \
	.cts_sizeof = 472, .cts_cbid = 192, .cts_cb_sizeid = 200
#define OR21_CTS                                                             \
	.cts_sizeof = 520, .cts_cbid = 240, .cts_cb_sizeid = 248

/* What the heap walker reads (user/heap/), the same in both builds but
 * for GG_State's and CTState's sizes. */
#define LJ21_GC64_HEAP                                                       \
	LJ21_HEAP_ANY, .g_gc_total = 16, .g_gc_root = 40, .g_gc_mmudata = 80, \
	.g_gc_lightudnum = 35, .g_gc_lightudseg = 112, .g_str_tab = 152,     \
	.g_str_mask = 160, .g_tmpbuf_e = 208, .g_tmpbuf_b = 216, .g_tmpbuf_sz = 8, \
	.g_gcroot = 424, .g_ctype_state = 384, .g_strempty = 120,            \
	.g_uvhead = 280, .uv_next = 24, .pt_sizeuv = 60, .pt_uvinfo = 88,    \
	.pt_varinfo = 96,                                                    \
	.J_sizetrace = 396, .J_irtoplim = 336, .J_irbotlim = 340,            \
	.J_sizesnap = 348, .J_sizesnapmap = 368,                             \
	.L_env = 72, .L_stacksize = 88, .L_top = 40, .L_maxstack = 48,       \
	.tab_metatable = 32, .tab_array = 16, .tab_asize = 48,               \
	.tab_colo = 11, .tab_sizeof = 64, .str_sizeof = 24, .str_round4 = 1, \
	.fn_nupvalues = 11, .fn_env = 16, .fn_upvalue = 48,                  \
	.fnc_sizeof = 56, .fnl_sizeof = 48, .uv_closed = 10, .uv_tv = 16,    \
	.uv_sizeof = 48, .pt_sizept = 56, .pt_k = 32, .pt_sizekgc = 48,      \
	.pt_trace = 62, .ud_len = 24, .ud_env = 16, .ud_metatable = 32,      \
	.ud_sizeof = 48, .cd_ctypeid = 10, .cd_sizeof = 16, .ct_sizeof = 24, \
	.ct_name = 16, .T_link = 106, .T_nextroot = 110, .T_nextside = 112,  \
	.T_traceno = 104, .irt_is64 = 6315993

/* LuaJIT 2.1 with LUAJIT_DISABLE_GC64 on x86-64 (Debian's source built so,
 * tests/variants.bash): 32-bit references, NaN-tagged TValues, one-slot
 * frames (no FR2). docs/variants.md has the table beside GC64's. */
#define LJ21_GC32_COMMON                                                     \
	.L_gct = 5, .L_glref = 8, .L_base = 16, .L_stack = 36, .L_cframe = 48, \
	.fn_ffid = 6, .fn_pc = 16, .fn_f = 24, .pt_size = 64,                 \
	.pt_sizebc = 8, .pt_chunkname = 40, .pt_firstline = 44,              \
	.pt_numline = 48, .pt_lineinfo = 52,                                 \
	.T_size = 96, .T_startpt = 48, .T_startpc = 52, .T_szmcode = 60,      \
	.T_mcode = 64, .cf_pc = 28, .gc64 = 0,                                \
	.tthread = 6, .tfunc = 8, .nvmst = 7,                                 \
	.vmst = { LMT_VMST_INTERP, LMT_VMST_FRAME, LMT_VMST_INTERNAL,         \
		  LMT_VMST_EXIT, LMT_VMST_RECORD, LMT_VMST_INTERNAL,          \
		  LMT_VMST_ASM }

/* User space's: the bytecode numbering is GC64's. */
#define LJ21_GC32_USER                                                       \
	.T_nsnap = 6, .T_nsnapmap = 28, .T_snap = 32, .T_snapmap = 40,       \
	.T_nins = 8, .T_ir = 16, .T_nk = 24,                                 \
	.snap_size = 12, .snap_mapofs = 0, .snap_ref = 4,                    \
	.ir_op1 = 0, .ir_op2 = 2, .ir_t = 4, .ir_o = 5, .ir_r = 6,            \
	.ir_kgc = 24, .irt_func = 8, .ref_bias = 32768, .rid_sunk = 0xfd,     \
	.bc_tnew = 52, .bc_tdup = 53, .bc_cat = 38, .bc_fnew = 51,           \
	.bc_kcdata = 40, .bc_tsetv = 60, .bc_tsets = 61, .bc_tsetb = 62,     \
	.bc_tsetm = 63, .bc_callm = 65, .bc_call = 66, .bc_callmt = 67,      \
	.bc_callt = 68, .bc_retm = 73, .bc_ret = 74, .bc_ret0 = 75,          \
	.bc_ret1 = 76, .bc_jmp = 88, .bc_cond_hi = 17, .bc_iterc = 69,       \
	.bc_isnext = 72, .bc_fori = 77, .bc_jloop = 87, .bc_varg = 71,       \
	.pt_gct = 5, .tproto = 7, .bc_func_lo = 89, .bc_func_hi = 94,       \
	.fn_uvptr = 20, .uv_v = 16, .bc_uget = 45,                           \
	.tab_node = 20, .tab_hmask = 28,                                      \
	.node_size = 24, .node_val = 0, .node_key = 8, .itype_str = -5,      \
	.itype_tab = -12, .itype_func = -9

/* Upstream 2.1's and OpenResty luajit2's, GC64 off: the same but for the
 * lengths of lua_State and global_State (gg_g, gg_J). */
#define LJ21_GC32_G                                                          \
	.g_allocf = 0, .g_allocd = 8, .g_vmstate = 136, .g_mainthref = 140,   \
	.g_cur_L = 288, .g_jit_base = 292, .J_trace = 360, .J_parent = 2464,  \
	.str_size = 20, .str_len = 16

#define LJ21_GC32_G_USER                                                     \
	.snap_mcofs = 6, .snap_nent = 10, .ir_tnew = 81, .ir_tdup = 82,      \
	.ir_cnew = 83, .ir_cnewi = 84, .g_registrytv = 216, .g_cdatamt = 464, \
	.ir_fload = 69, .ir_hrefk = 57, .ir_href = 58, .ir_hload = 67,       \
	.ir_kslot = 30, .ir_retf = 11, .ir_kptr = 25, .ir_newref = 59,       \
	.bc_unm = 20, .bc_pow = 37, .bc_tgetv = 56, .bc_tgetb = 58

/* The heap walker's GC objects without GC64 (tests/tools/ljoffsets.c with
 * -DLUAJIT_DISABLE_GC64); global_State's and jit_State's fields apart
 * (LJ21_GC32_G_HEAP: Tarantool's global_State is another). */
#define LJ21_GC32_HEAP                                                       \
	LJ21_HEAP_ANY, .L_env = 44, .L_stacksize = 56, .L_top = 24,          \
	.L_maxstack = 32, .tab_metatable = 16, .tab_array = 8,               \
	.tab_asize = 24, .tab_colo = 7, .tab_sizeof = 32,                    \
	.fn_nupvalues = 7, .fn_env = 8, .fn_upvalue = 32,                    \
	.fnc_sizeof = 40, .fnl_sizeof = 24, .uv_closed = 6, .uv_tv = 8,      \
	.uv_next = 12, .uv_sizeof = 24, .pt_sizept = 32, .pt_k = 16,         \
	.pt_sizekgc = 24, .pt_trace = 38, .pt_sizeuv = 36, .pt_uvinfo = 56,  \
	.pt_varinfo = 60,                                                    \
	.ud_len = 12, .ud_env = 8, .ud_metatable = 16, .ud_sizeof = 24,      \
	.cd_ctypeid = 6, .cd_sizeof = 8, .ct_sizeof = 16, .ct_name = 12,     \
	.T_link = 82, .T_nextroot = 86, .T_nextside = 88, .T_traceno = 80,   \
	.irt_is64 = 6308360

/* The heap walker's global_State and jit_State fields, GC64 off: upstream's
 * and luajit2's (whose global_State only ends later), GCstr's length. */
#define LJ21_GC32_G_HEAP                                                     \
	.str_sizeof = 20, .str_round4 = 1, .g_gc_total = 16, .g_gc_root = 32, \
	.g_gc_mmudata = 52, .g_gc_lightudnum = 27, .g_gc_lightudseg = 72,    \
	.g_str_tab = 104, .g_str_mask = 112, .g_tmpbuf_e = 152, .g_tmpbuf_sz = 8, \
	.g_tmpbuf_b = 160, .g_gcroot = 336, .g_ctype_state = 296,            \
	.g_strempty = 76, .g_uvhead = 224, .J_sizetrace = 372,               \
	.J_irtoplim = 312, .J_irbotlim = 316, .J_sizesnap = 324,             \
	.J_sizesnapmap = 344

const struct lj_variant lj_variants[] = {
	{
		/* LuaJIT 2.1 (Debian luajit, libluajit-5.1-2) */
		.name = "LuaJIT 2.1 GC64",
		.sizeof_L = 96,
		.vmdef = &lj_vmdef_lj21,
		.lay = { LJ21_GC64_COMMON, .gg_g = 96, .gg_J = 824 },
		.u = { LJ21_GC64_USER, LJ21_IRFL },
		.h = { LJ21_GC64_HEAP, LJ21_CTS, .gg_size = 6240 },
	},
	{
		/* OpenResty luajit2 (Debian luajit2): lua_State has 16 more
		 * bytes at its end. */
		.name = "OpenResty LuaJIT 2.1 GC64",
		.sizeof_L = 112,
		.vmdef = &lj_vmdef_or21,
		.lay = { LJ21_GC64_COMMON, .gg_g = 112, .gg_J = 848 },
		.u = { LJ21_GC64_USER, OR21_IRFL },
		.h = { LJ21_GC64_HEAP, OR21_CTS, .gg_size = 6296 },
	},
	{
		/* LuaJIT 2.1 built with LUAJIT_DISABLE_GC64. */
		.name = "LuaJIT 2.1 GC64 off",
		.sizeof_L = 64,
		.vmdef = &lj_vmdef_lj21, /* GC64 changes no bytecode or ffid */
		.lay = { LJ21_GC32_COMMON, LJ21_GC32_G, .gg_g = 64, .gg_J = 552 },
		.u = { LJ21_GC32_USER, LJ21_GC32_G_USER, LJ21_IRFL },
		.h = { LJ21_GC32_HEAP, LJ21_GC32_G_HEAP, LJ21_CTS, .gg_size = 5416 },
	},
	{
		/* OpenResty luajit2 (Debian's luajit2) built with
		 * LUAJIT_DISABLE_GC64, as older OpenResty, Kong and APISIX
		 * run it: lua_State 16 bytes longer (exdata, exdata2),
		 * global_State 8 (saved_jit_base, padded), CTState
		 * luajit2's. */
		.name = "OpenResty LuaJIT 2.1 GC64 off",
		.sizeof_L = 80,
		.vmdef = &lj_vmdef_or21,
		.lay = { LJ21_GC32_COMMON, LJ21_GC32_G, .gg_g = 80, .gg_J = 576 },
		.u = { LJ21_GC32_USER, LJ21_GC32_G_USER, OR21_IRFL },
		.h = { LJ21_GC32_HEAP, LJ21_GC32_G_HEAP, OR21_CTS, .gg_size = 5472 },
	},
	{
		/* Tarantool 2.6's LuaJIT fork (Debian's tarantool; its
		 * third_party/luajit, built with LUAJIT_SMART_STRINGS as its
		 * cmake/luajit.cmake does): an older 2.1, GC64 off. Its
		 * global_State has the string table (g->strhash, and bloom
		 * filters) first, an SBuf of MRefs, no lightuserdata segments
		 * and no string ids (GCstr 16 bytes); its SnapShot has no
		 * mcofs and its IR one opcode fewer before TNEW. Its GC
		 * objects are upstream's with GC64 off. */
		.name = "Tarantool 2.6 LuaJIT 2.1 GC64 off",
		.vmdef = &lj_vmdef_tt26,
		.sizeof_L = 64,
		.lay = { LJ21_GC32_COMMON, .gg_g = 64, .gg_J = 512,
			 .g_allocf = 48, .g_allocd = 56, .g_vmstate = 120,
			 .g_mainthref = 160, .g_cur_L = 280, .g_jit_base = 284,
			 .J_trace = 368, .J_parent = 2480, .str_size = 16,
			 .str_len = 12 },
		.u = { LJ21_GC32_USER, .snap_nomcofs = 1, .snap_nent = 8,
		       .ir_tnew = 80, .ir_tdup = 81, .ir_cnew = 82, .ir_cnewi = 83,
		       .g_registrytv = 168, .g_cdatamt = 420, .ir_fload = 69,
		       .ir_hrefk = 58, .ir_href = 59, .ir_hload = 67,
		       .ir_kslot = 30, .ir_retf = 11, .ir_kptr = 25,
		       .ir_newref = 60, .bc_unm = 20, .bc_pow = 37,
		       .bc_tgetv = 56, .bc_tgetb = 58, LJ21_IRFL },
		.h = { LJ21_GC32_HEAP, LJ21_CTS, .gg_size = 5384,
		       .str_sizeof = 16, .g_gc_total = 64, .g_gc_root = 80,
		       .g_gc_mmudata = 100, .g_str_tab = 0, .g_str_mask = 8,
		       .g_tmpbuf_e = 128, .g_tmpbuf_b = 132, .g_tmpbuf_sz = 4,
		       .g_gcroot = 292, .g_ctype_state = 288, .g_strempty = 140,
		       .g_uvhead = 216, .J_sizetrace = 380, .J_irtoplim = 320,
		       .J_irbotlim = 324, .J_sizesnap = 332, .J_sizesnapmap = 352 },
	},
};

const unsigned lj_nvariants = sizeof(lj_variants) / sizeof(lj_variants[0]);
