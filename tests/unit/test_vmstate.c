/* rd_vmstate's shortcut (lmt_vmstate_whole) against every valid vmstate:
 * the string helper's copy, when taken as whole, is the value itself. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/types.h>

#include "luamemtrace.h"

#include "check.h"

/* bpf_probe_read_user_str(dst, 8, src) as the kernel does it
 * (strncpy_from_user_nofault): bytes up to the first zero, the bytes after
 * it zero (rds clears dst first), a zero in the last byte if none came
 * sooner; returns the length with the zero. */
static long read_str(uint64_t *dst, const unsigned char src[8])
{
	unsigned char d[8] = { 0 };
	long n = 8;

	for (int i = 0; i < 7; i++) {
		d[i] = src[i];
		if (!src[i]) {
			n = i + 1;
			break;
		}
	}
	memcpy(dst, d, 8);
	return n;
}

int main(void)
{
	/* The 4 bytes after vmstate in global_State, whatever they hold. */
	static const uint32_t next[] = { 0, 0xffffffffu, 1, 0x12340000u, 0xff };
	unsigned long wrong = 0, slow_neg = 0, slow_trace = 0, fast_trace = 0;
	char name[160];

	for (unsigned k = 0; k < sizeof(next) / sizeof(next[0]); k++) {
		for (int64_t v = -256; v <= 65534; v++) {
			unsigned char src[8];
			int32_t vs = (int32_t)v;
			uint64_t b;
			long n;

			if (v == 0)
				continue; /* neither a state nor a trace */
			memcpy(src, &vs, 4);
			memcpy(src + 4, &next[k], 4);
			n = read_str(&b, src);
			if (!lmt_vmstate_whole(n)) {
				if (v < 0)
					slow_neg++;
				else
					slow_trace++;
				continue;
			}
			if ((int32_t)b != vs)
				wrong++;
			if (v > 0)
				fast_trace++;
		}
	}
	CHECK("no valid vmstate is taken for another value", wrong == 0);
	/* ~255 is the only state with a zero byte; LuaJIT has ~20 states. */
	snprintf(name, sizeof(name), "every state but ~255 needs one read "
		 "(%lu slow)", slow_neg);
	CHECK(name, slow_neg == 5);
	/* Trace numbers that are multiples of 256 need the plain read. */
	snprintf(name, sizeof(name), "trace numbers: %lu whole, %lu need the "
		 "plain read", fast_trace, slow_trace);
	CHECK(name, slow_trace == 5 * 255 && fast_trace == 5 * (65534 - 255));
	return fails != 0;
}
