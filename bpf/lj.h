/* LuaJIT's ABI as the programs read it, with LuaJIT's own names (lj_obj.h,
 * lj_frame.h, lj_bc.h): references, tagged values, frames, what a vmstate
 * means. Offsets come per VM in struct lj_layout; what is not an offset is
 * written here once.
 *
 * Two reference widths (user/target/layout.c: the entry's gc64 flag, per
 * VM in its struct lmt_vm): GC64, 64-bit GCRef/MRef, TValues with the type
 * in bits 47-63 and two-slot frame headers (FR2: the function in the slot
 * below the frame link); else 32-bit references (every GC object below
 * 4 GiB), NaN-tagged TValues (the type, itype, in the high 32 bits, the
 * reference in the low 32) and one-slot frame headers (the function in the
 * low half of the link's slot, the link in the high half). LuaJIT 2.1 on
 * x86-64 has FR2 exactly when GC64. The width is arithmetic on the flag,
 * not a branch: the verifier walks one path either way.
 */
#ifndef LMT_BPF_LJ_H
#define LMT_BPF_LJ_H

/* -- References and tagged values ----------------------------------------- */

/* A GCRef/MRef's address from the 8 bytes read at its offset: all 64 bits
 * in a GC64 build, the low 32 else. */
static __always_inline __u64 ref_gc64(__u8 gc64, __u64 v)
{
	return gc64 ? v : (v & 0xffffffffULL);
}

static __always_inline __u64 gcref(const struct lj_layout *lay, __u64 v)
{
	return ref_gc64(lay->gc64, v);
}

#define TV_SIZE 8 /* bytes per stack slot, either width */

/* The bit a TValue's type starts at: 47 (GC64), 32 (NaN-tagging). */
static __always_inline __u32 tv_tshift(__u8 gc64)
{
	return 32 + 15 * (__u32)(gc64 & 1);
}

/* A TValue's itype (~gct for GC objects), sign-extended. */
static __always_inline __s64 itype(__u8 gc64, __u64 tv)
{
	return (__s64)tv >> tv_tshift(gc64);
}

/* The GC object a TValue holds if it is of type ~gct (a gct byte), else 0. */
static __always_inline __u64 tv_gc(__u8 gc64, __u64 tv, __u8 gct)
{
	if (itype(gc64, tv) != (__s64)(__s32)~(__u32)gct)
		return 0;
	return tv & ((1ULL << tv_tshift(gc64)) - 1);
}

/* The GC object in a frame's function slot w: a TValue of type ~gct (FR2),
 * else the low half, untyped (the link holds the high half: fn_get checks
 * the object's own type tag). 0 if none. */
static __always_inline __u64 frame_gc(__u8 gc64, __u64 w, __u8 gct)
{
	if (!gc64)
		return (__u32)w;
	return tv_gc(gc64, w, gct);
}

/* -- Frames (lj_frame.h) -------------------------------------------------- */

/* A frame is addressed by its link slot, just below its base. The link
 * (frame_ftsz) is a Lua frame's return PC, or a size with the frame type
 * in its low bits: the whole slot (FR2), or its high half (else: a 32-bit
 * PC or int32 size). The function is the slot below (FR2), or the low half
 * of the link's slot. */
#define FRAME_LUA 0
#define FRAME_CONT 2
#define FRAME_VARG 3
#define FRAME_TYPE 3
#define FRAME_P 4
#define FRAME_TYPEP (FRAME_TYPE | FRAME_P)

#define fr2(gc64) ((__u64)((gc64) & 1))
#define bc_a(ins) (((ins) >> 8) & 0xff)
#define frame_of_base(base) ((base) - TV_SIZE)
#define frame_func(f, gc64) ((f) - TV_SIZE * fr2(gc64)) /* the function's slot */
/* The link from the 8 bytes of its slot. */
#define frame_link(w, gc64) ((w) >> (32 - 32 * fr2(gc64)))
#define frame_type(link) ((link) & FRAME_TYPE)
#define frame_typep(link) ((link) & FRAME_TYPEP)
#define frame_islua(link) (frame_type(link) == FRAME_LUA)
#define frame_iscont(link) (frame_typep(link) == FRAME_CONT)
#define frame_sized(link) ((link) & ~(__u64)FRAME_TYPEP)
/* The frame below a Lua frame: its base lies A slots (of the call at
 * link - 4, the instruction before the return PC) and a header below. */
#define frame_prevl(f, call, gc64) ((f) - TV_SIZE * (1 + fr2(gc64) + bc_a(call)))
/* The frame below a C, vararg or continuation frame: link holds its size. */
#define frame_prevd(f, link) ((f) - frame_sized(link))
/* A continuation frame keeps the Lua PC to return to a header down, a
 * link of its own (read with frame_link). */
#define frame_contpc(f, gc64) ((f) - TV_SIZE * (1 + fr2(gc64)))
/* The stack's first frame: the dummy frame's link slot. */
#define frame_bot(stack, gc64) ((stack) + TV_SIZE * fr2(gc64))

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
