/* LuaJIT's ABI as the programs read it, with LuaJIT's own names (lj_obj.h,
 * lj_frame.h, lj_bc.h): references, tagged values, frames, what a vmstate
 * means. Offsets come per VM in struct lj_layout; what is not an offset is
 * written here once.
 *
 * Every layout luamemtrace knows is GC64 with FR2 (user/target/layout.c): 8-byte
 * TValues with the type in bits 47-63 (tv_gc), and two-slot frame headers,
 * the function in the slot below the frame link (the frame_* macros). A
 * non-GC64 entry would change those two, and nothing else: its 32-bit refs
 * already go through ref(), by the layout's gc64 flag.
 */
#ifndef LMT_BPF_LJ_H
#define LMT_BPF_LJ_H

/* -- References and tagged values ----------------------------------------- */

/* A GCRef/MRef's address: all 64 bits in a GC64 build, the low 32 else. */
static __always_inline __u64 ref_gc64(__u8 gc64, __u64 v)
{
	return gc64 ? v : (v & 0xffffffffULL);
}

static __always_inline __u64 gcref(const struct lj_layout *lay, __u64 v)
{
	return ref_gc64(lay->gc64, v);
}

#define LJ_GCVMASK ((1ULL << 47) - 1) /* GC64: a TValue's GC pointer bits */
#define itype(tv) ((__s64)(tv) >> 47)  /* GC64: its type, ~gct for GC objects */
#define TV_SIZE 8                      /* GC64: bytes per stack slot */

/* The GC object a TValue holds if it is of type ~gct (a gct byte), else 0. */
static __always_inline __u64 tv_gc(__u64 tv, __u8 gct)
{
	if (itype(tv) != (__s64)(__s32)~(__u32)gct)
		return 0;
	return tv & LJ_GCVMASK;
}

/* -- Frames (lj_frame.h, FR2) --------------------------------------------- */

/* A frame is addressed by its link slot, just below its base; the function
 * sits in the slot below the link. The link (frame_ftsz) is a Lua
 * frame's return PC, or a size with the frame type in its low bits. */
#define LJ_FR2 1
#define FRAME_LUA 0
#define FRAME_CONT 2
#define FRAME_VARG 3
#define FRAME_TYPE 3
#define FRAME_P 4
#define FRAME_TYPEP (FRAME_TYPE | FRAME_P)

#define bc_a(ins) (((ins) >> 8) & 0xff)
#define frame_of_base(base) ((base) - TV_SIZE)
#define frame_func(f) ((f) - TV_SIZE) /* the function's slot */
#define frame_type(link) ((link) & FRAME_TYPE)
#define frame_typep(link) ((link) & FRAME_TYPEP)
#define frame_islua(link) (frame_type(link) == FRAME_LUA)
#define frame_iscont(link) (frame_typep(link) == FRAME_CONT)
#define frame_sized(link) ((link) & ~(__u64)FRAME_TYPEP)
/* The frame below a Lua frame: its base lies A slots (of the call at
 * link - 4, the instruction before the return PC) and a header below. */
#define frame_prevl(f, call) ((f) - TV_SIZE * (1 + LJ_FR2 + bc_a(call)))
/* The frame below a C, vararg or continuation frame: link holds its size. */
#define frame_prevd(f, link) ((f) - frame_sized(link))
/* A continuation frame keeps the Lua PC to return to two slots down. */
#define frame_contpc(f) ((f) - 2 * TV_SIZE)

/* GCfunc.ffid: a Lua function, a C function, else a fast function. */
#define FF_LUA 0
#define FF_C 1

/* -- VM states ------------------------------------------------------------ */

/* A vmstate's entry in the layout's table (enum lmt_vmst); INTERNAL for
 * a trace number (>= 1) or a state the table lacks. */
static __always_inline __u8 vmst_raw(__s32 vmstate, __u8 nvmst, const __u8 *vmst)
{
	__u32 idx = ~(__u32)vmstate;

	if (vmstate >= 1 || idx >= nvmst || idx >= LMT_VMST_MAX)
		return LMT_VMST_INTERNAL;
	return vmst[idx & (LMT_VMST_MAX - 1)];
}

/* How a vmstate is charged: its entry, ASM as INTERNAL; a trace number
 * (>= 1) is charged to its trace, which needs no frame. */
static __always_inline __u8 vmst_of(__s32 vmstate, __u8 nvmst, const __u8 *vmst)
{
	__u8 kind = vmst_raw(vmstate, nvmst, vmst);

	return kind <= LMT_VMST_RECORD ? kind : LMT_VMST_INTERNAL;
}

#endif
