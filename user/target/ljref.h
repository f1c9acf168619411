/* A traced VM's references and tagged values, by its variant's width
 * (lj_obj.h; bpf/lj.h is BPF's side): GC64, 64-bit GCRef/MRef and TValues
 * with the type in bits 47-63 and the GC pointer in the low 47; else
 * 32-bit GCRef/MRef (every GC object below 4 GiB) and NaN-tagged TValues,
 * the type (itype) in the high 32 bits and the reference in the low 32.
 * Every user-space reader of a reference or a TValue goes through here. */
#ifndef LMT_LJREF_H
#define LMT_LJREF_H

#include <stdint.h>
#include <string.h>

#include "target/layout.h"
#include "target/proc.h"

/* -- References ------------------------------------------------------------ */

/* Bytes of a GCRef/MRef: 8 or 4. */
static inline unsigned lj_refsz(const struct lj_variant *v)
{
	return lmt_refsz(&v->lay);
}

/* The reference held by w, 8 bytes read at its offset. */
static inline uint64_t lj_ref(const struct lj_variant *v, uint64_t w)
{
	return v->lay.gc64 ? w : (uint32_t)w;
}

/* The reference at b + off (a copy of the target's bytes). */
static inline uint64_t lj_ref_at(const struct lj_variant *v, const void *b,
				 size_t off)
{
	uint64_t w = 0;

	memcpy(&w, (const uint8_t *)b + off, lj_refsz(v));
	return w;
}

/* Reads the reference at addr of pid into *out: 0, or proc_read's -errno. */
static inline int lj_read_ref(pid_t pid, const struct lj_variant *v,
			      uint64_t addr, uint64_t *out)
{
	uint64_t w = 0;
	int r = proc_read(pid, addr, &w, lj_refsz(v));

	*out = r ? 0 : w;
	return r;
}

/* -- Tagged values --------------------------------------------------------- */

#define LJ_GCVMASK ((1ULL << 47) - 1) /* GC64: a TValue's GC pointer bits */

/* A TValue's itype (~gct for GC objects: the int32 itype_* of the entry). */
static inline int32_t lj_itype(const struct lj_variant *v, uint64_t tv)
{
	return v->lay.gc64 ? (int32_t)((int64_t)tv >> 47) : (int32_t)(tv >> 32);
}

/* Is the TValue nil (GC64: all ones; else its itype alone, LJ_TNIL)? */
static inline int lj_tvisnil(const struct lj_variant *v, uint64_t tv)
{
	return v->lay.gc64 ? tv == ~0ULL : lj_itype(v, tv) == -1;
}

/* The GC object of a TValue known to hold one. */
static inline uint64_t lj_tv_gc(const struct lj_variant *v, uint64_t tv)
{
	return v->lay.gc64 ? tv & LJ_GCVMASK : (uint32_t)tv;
}

/* -- Frames ---------------------------------------------------------------- */

/* lj_frame.h's frame types: the link's low 3 bits (FRAME_TYPEP); a Lua
 * frame's are 0 (its PC's, low 2 bits: FRAME_TYPE), a continuation's 2, a
 * vararg function's 3. */
#define LJ_FRAME_TYPE 3
#define LJ_FRAME_TYPEP 7
#define LJ_FRAME_CONT 2
#define LJ_FRAME_VARG 3

/* A frame's link (lj_frame.h's ftsz: a Lua frame's return PC, low bits 0,
 * or a size and type) from its link slot: FR2's (GC64) whole slot, else
 * the slot's high 32 bits, signed (the low 32 hold the frame's function). */
static inline int64_t lj_frame_link(const struct lj_variant *v, uint64_t tv)
{
	return v->lay.gc64 ? (int64_t)tv : (int64_t)(int32_t)(tv >> 32);
}

/* A Lua frame's return PC from its link (without FR2, a 32-bit address). */
static inline uint64_t lj_frame_pc(const struct lj_variant *v, int64_t link)
{
	return v->lay.gc64 ? (uint64_t)link : (uint32_t)link;
}

#endif
