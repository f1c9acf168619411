/* BPF helpers on the host: LuaJIT's frame arithmetic (bpf/lj.h) against
 * a frame laid out as LuaJIT's FR2 interpreter lays it, tagged values, and
 * the one direct-mapped cache (bpf/cache.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/types.h>

#include "luamemtrace.h"
#pragma GCC diagnostic ignored "-Wunknown-pragmas" /* clang's loop unroll */
#include "lj.h"
#include "cache.h"

#include "check.h"

int main(void)
{
	/* A Lua frame at base B called by a Lua function whose CALL has
	 * A = 5: the caller's frame link sits 1 + FR2 + 5 slots below. */
	const __u64 B = 0x7f0000001000ULL, f = frame_of_base(B);
	const __u32 call = 0x05u << 8 | 0x42; /* op 0x42, A = 5 */
	const __u64 tvfn = ((__u64)(__s64)~(__u64)8 << 47) | 0x123456780ULL;

	CHECK("frame: the link below the base", f == B - 8);
	CHECK("frame: the function below the link", frame_func(f, 1) == B - 16);
	CHECK("frame_prevl: 1 + FR2 + A slots down", frame_prevl(f, call, 1) == f - 8 * 7);
	CHECK("frame_prevd: the link's size down", frame_prevd(f, 0x30 | 2ULL) == f - 0x30);
	CHECK("frame_contpc: two slots down", frame_contpc(f, 1) == f - 16);
	CHECK("frame types", frame_islua(0x5000) && !frame_islua(0x5001) &&
	      frame_iscont(0x32) && !frame_iscont(0x36) && frame_sized(0x37) == 0x30);
	CHECK("bc_a", bc_a(call) == 5);
	CHECK("tv_gc: a function", tv_gc(1, tvfn, 8) == 0x123456780ULL);
	CHECK("tv_gc: not a thread", tv_gc(1, tvfn, 6) == 0);
	CHECK("gcref: 64-bit and 32-bit refs", ref_gc64(1, 0x1122334455ULL) == 0x1122334455ULL &&
	      ref_gc64(0, 0x1122334455ULL) == 0x22334455ULL);

	/* Without GC64 (no FR2): one slot a header, the function's 32-bit
	 * reference in its low half, the link (a 32-bit PC or an int32
	 * size) in its high half; TValues NaN-tagged, itype the high half. */
	{
		const __u64 slot = (__u64)0x5040u << 32 | 0x00a0b0c0u;
		const __u64 tv32 = (__u64)(__u32)~8u << 32 | 0x00a0b0c0u;

		CHECK("GC64 off: the function in the link's slot", frame_func(f, 0) == f);
		CHECK("GC64 off: the link, the slot's high half",
		      frame_link(slot, 0) == 0x5040 && frame_islua(frame_link(slot, 0)) &&
		      frame_link(slot, 1) == slot);
		CHECK("GC64 off: the function, the slot's low half, untyped",
		      frame_gc(0, slot, 8) == 0xa0b0c0 && frame_gc(1, tvfn, 8) == 0x123456780ULL);
		CHECK("GC64 off: frame_prevl 1 + A slots down", frame_prevl(f, call, 0) == f - 8 * 6);
		CHECK("GC64 off: frame_contpc one slot down", frame_contpc(f, 0) == f - 8);
		CHECK("GC64 off: the bottom frame is the stack's first slot",
		      frame_bot(B, 0) == B && frame_bot(B, 1) == B + 8);
		CHECK("GC64 off: tv_gc by the high half", tv_gc(0, tv32, 8) == 0xa0b0c0 &&
		      tv_gc(0, tv32, 6) == 0 && itype(0, tv32) == -9 && itype(1, tvfn) == -9);
	}
	{
		__u64 e[5] = { 0 }, w[4] = { 1, 2, 3, 4 }, r[4];
		int misses = 0;

		CHECK("dm: an empty entry misses", !dm_get(e, r, 4, 0x1234));
		dm_put(e, w, 4, 0x1234);
		CHECK("dm: a stored entry hits, words intact",
		      dm_get(e, r, 4, 0x1234) && !memcmp(r, w, sizeof(w)));
		CHECK("dm: another salt misses", !dm_get(e, r, 4, 0x1235));
		/* Torn: any one word from another writer's entry. */
		for (int i = 0; i < 4; i++) {
			__u64 t[5];
			memcpy(t, e, sizeof(t));
			t[i] ^= 0x40;
			misses += !dm_get(t, r, 4, 0x1234);
		}
		CHECK("dm: a torn entry misses", misses == 4);
		CHECK("dm: the check word is never 0 (an empty entry)",
		      dm_chk((const __u64[4]){ 0 }, 4, 0) >= 2);
		CHECK("dm_slot: in range", dm_slot(dm_hash(~0ULL, 0), 12) < 4096 &&
		      dm_slot(dm_hash(0x7f00000001ULL, 42ULL << 40), 10) < 1024);
	}
	return fails != 0;
}
