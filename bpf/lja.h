/* LuaJIT's bundled allocator (lj_alloc.c, a dlmalloc): the address an
 * allocation or reallocation will get, told at its entry from the
 * allocator's state.
 *
 * An allocation's address comes at its return, and the return costs a
 * trap of its own (docs/costs.md). Where the VM's allocator is
 * lj_alloc_f, ud is its malloc_state and lj_alloc_malloc's common paths
 * take their chunk from a place the state names: the first chunk of a
 * small bin (an exact fit, or the next bin's), the designated victim
 * (dv), or the top chunk; lj_alloc_realloc keeps a block in place where
 * its chunk (the header before it) is large enough or borders top with
 * room, and otherwise allocates as malloc does. The entry reads the
 * state's head, the block's header for a reallocation, and a bin's first
 * chunk where it takes one, and knows the address; the paths it cannot
 * follow (a tree bin, new system memory, a block of its own mapping, a
 * failure) leave the return to tell. Nothing runs between the probe and
 * the allocator's own reads on the VM's thread, and no other thread uses
 * a VM's allocator meanwhile.
 *
 * Whether ud is lj_alloc's state at all is for the returns to say: a VM's
 * addresses are taken from here only after LMT_PRED_TRUST of its returns
 * agreed, and one in LMT_PRED_EVERY is checked after that
 * (bpf/luamemtrace.bpf.c: pred_tell, pred_check). tests/unit/test_lja.c
 * holds this to Debian's libluajit's allocator itself.
 *
 * Layout of struct malloc_state's head on 64-bit targets, the same in
 * every LuaJIT 2.1 and in OpenResty's luajit2: binmap_t smallmap, treemap
 * (32 bits each), size_t dvsize, topsize, mchunkptr dv, top, then at 56
 * smallbins, where bin i is the fake chunk at smallbins[2i], its fd at
 * smallbins[2i + 2]. MALLOC_ALIGNMENT is 8, a chunk's header 8 bytes
 * (head: size, bit 0 the previous chunk in use, bit 1 this one), its user
 * memory 16 bytes on (chunk2mem), prev_foot before head (bit 0 of a block
 * of its own mapping, whose head has bit 0 clear). */
#ifndef LMT_BPF_LJA_H
#define LMT_BPF_LJA_H

#define LJA_HEAD 40          /* bytes of the head read: smallmap to top */
#define LJA_BINFD(i) (72 + 16 * (__u64)(i)) /* offset of bin i's fd */
#define LJA_MEM 16           /* chunk2mem */
#define LJA_MIN_CHUNK 32     /* MIN_CHUNK_SIZE */
#define LJA_MIN_REQUEST 23   /* MIN_REQUEST */
#define LJA_MAX_SMALL 240    /* MAX_SMALL_REQUEST */
#define LJA_MAX_REQUEST (~(__u64)0 - 127) /* MAX_REQUEST: (-32) << 2 */

enum { LJA_NONE, LJA_BIN, LJA_AT };

/* The index of x's lowest set bit, x not 0 (lj_ffs). */
static __always_inline __u32 lja_ffs(__u32 x)
{
	__u32 n = 0;

	if (!(x & 0xffff)) { n += 16; x >>= 16; }
	if (!(x & 0xff)) { n += 8; x >>= 8; }
	if (!(x & 0xf)) { n += 4; x >>= 4; }
	if (!(x & 0x3)) { n += 2; x >>= 2; }
	if (!(x & 0x1)) n += 1;
	return n;
}

/* The chunk size of a request of nsize bytes (request2size; for large
 * requests pad_request, the same there). */
static __always_inline __u64 lja_chunk(__u64 nsize)
{
	return nsize < LJA_MIN_REQUEST ? LJA_MIN_CHUNK : (nsize + 15) & ~7ULL;
}

/* Where lj_alloc_malloc(ms, nsize) takes its chunk, from ms's head h
 * (LJA_HEAD bytes as words): LJA_AT with the address in *v, LJA_BIN with
 * the bin whose first chunk it is in *v, or LJA_NONE (its return tells).
 * lj_alloc_malloc's branches in its order. */
static __always_inline int lja_plan(const __u64 *h, __u64 nsize, __u64 *v)
{
	const __u32 smallmap = (__u32)h[0], treemap = (__u32)(h[0] >> 32);
	const __u64 dvsize = h[1], topsize = h[2], dv = h[3], top = h[4];
	const __u64 nb = lja_chunk(nsize);

	if (nsize <= LJA_MAX_SMALL) {
		const __u32 idx = (__u32)(nb >> 3), bits = smallmap >> idx;

		if (bits & 3) { /* remainderless: this bin or the next */
			*v = idx + (~bits & 1);
			return LJA_BIN;
		}
		if (nb > dvsize) {
			if (bits) { /* the next non-empty bin, split */
				*v = lja_ffs((bits << idx) &
					     ((1U << idx << 1) | (~(1U << idx << 1) + 1)));
				return LJA_BIN;
			}
			if (treemap)
				return LJA_NONE; /* tmalloc_small */
		}
	} else if (nsize >= LJA_MAX_REQUEST || treemap) {
		return LJA_NONE; /* too large (nb overflows); tmalloc_large,
				  * which may decline */
	}
	if (nb <= dvsize) {
		*v = dv + LJA_MEM;
		return LJA_AT;
	}
	if (nb < topsize) {
		*v = top + LJA_MEM;
		return LJA_AT;
	}
	return LJA_NONE; /* alloc_sys */
}

/* Where lj_alloc_realloc(ms, ptr, nsize) leaves the block, from ms's head
 * h and the block's chunk header c (prev_foot, head: the 16 bytes before
 * ptr): LJA_AT in place (it fits, or grows into top), else where a new
 * allocation would go (lja_plan: malloc, copy, free), or LJA_NONE (a
 * block of its own mapping: mremap). */
static __always_inline int lja_plan_realloc(const __u64 *h, const __u64 *c, __u64 ptr,
					    __u64 nsize, __u64 *v)
{
	const __u64 oldsize = c[1] & ~3ULL, top = h[4], topsize = h[2], nb = lja_chunk(nsize);

	if (nsize >= LJA_MAX_REQUEST || (!(c[1] & 1) && (c[0] & 1)))
		return LJA_NONE; /* too large; is_direct */
	if (oldsize >= nb || (ptr - LJA_MEM + oldsize == top && oldsize + topsize > nb)) {
		*v = ptr;
		return LJA_AT;
	}
	return lja_plan(h, nsize, v);
}

#ifndef LMT_LJA_HOST
/* The address the allocation (ptr 0) or reallocation of ptr to nsize
 * bytes by allocator state ud will get, or 0: the return must tell.
 * Reads through the page tables only (the state shares its page with the
 * GG_State's head, whose walk the entry keeps); a read that would need
 * the helper is not worth a return trap's saving. */
static __always_inline __u64 lja_predict(struct ctx *c, __u64 ud, __u64 ptr, __u64 nsize)
{
	__u64 h[LJA_HEAD / 8], ch[2], v = 0, fd;
	int how;

	if (dr_words(c, h, LJA_HEAD, ud))
		return 0;
	if (ptr) {
		if (dr_words(c, ch, 16, ptr - LJA_MEM))
			return 0;
		how = lja_plan_realloc(h, ch, ptr, nsize, &v);
	} else {
		how = lja_plan(h, nsize, &v);
	}
	switch (how) {
	case LJA_AT:
		return v;
	case LJA_BIN:
		if (v >= 32 || dr_words(c, &fd, 8, ud + LJA_BINFD(v)) || !fd)
			return 0;
		return fd + LJA_MEM;
	}
	return 0;
}
#endif

#endif
