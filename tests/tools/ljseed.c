/* ljseed.so: LuaJIT's random seed from LJSEED, for the differential test
 * of compiled code's attribution (tests/tools/jitorders.sh), preloaded
 * into the traced run (the tracer too, which never asks getrandom through
 * syscall(): its other calls pass through).
 *
 * LuaJIT draws a random penalty when a trace aborts (lj_trace.c,
 * penalty_pc), so which traces it makes, and in what order, differ from
 * run to run. Its generator is seeded from getrandom(), which it calls
 * through syscall() (lj_prng.c); with LJSEED set, that call is answered
 * from the seed instead, and with address randomisation off (setarch -R)
 * a run is then repeated exactly. Without LJSEED it passes through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>

long syscall(long n, ...)
{
	long (*next)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	const char *seed = getenv("LJSEED");
	long a[6];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_getrandom && seed) {
		unsigned char *p = (unsigned char *)a[0];
		uint64_t x = strtoull(seed, NULL, 10) * 0x9e3779b97f4a7c15ull + 1;

		for (long i = 0; i < a[1]; i++) { /* xorshift64 */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = (unsigned char)x;
		}
		return a[1];
	}
	return next ? next(n, a[0], a[1], a[2], a[3], a[4], a[5]) : -1;
}
