/* Numbers and byte counts as text (numfmt.h). */
#include <inttypes.h>
#include <stdio.h>

#include "util/numfmt.h"

/* -- Numbers as the parser prints them -- */

/* LuaJIT's string.format("%d", x) where x = tonumber(uint64 v). */
int lua_d(char *out, uint64_t v)
{
	const double d = (double)v;
	if (d >= 9223372036854775808.0) /* (int64_t)d saturates on x86-64 */
		return sprintf(out, "%" PRId64, INT64_MIN);
	return sprintf(out, "%" PRId64, (int64_t)d);
}

/* LuaJIT's string.format("%#x", x): no "0x" for zero. */
int lua_hex(char *out, uint64_t v)
{
	const double d = (double)v;
	const int64_t k = d >= 9223372036854775808.0 ? (int64_t)(d - 18446744073709551616.0)
						      : (int64_t)d;
	return k ? sprintf(out, "%#" PRIx64, (uint64_t)k) : sprintf(out, "0");
}

/* humanize.lua format_bytes(). Dividing by 1024 is exact in doubles, so
 * this is done in integers: unit m while v >= 1024^(m+1), "%d" if the
 * quotient is whole, else "%.2f" rounded half up on the exact value, which
 * is what LuaJIT's own formatter does (glibc would round half to even:
 * 68736B is 67.13KiB for LuaJIT, 67.12KiB for printf). */
int fmt_bytes(char *out, uint64_t v, int human)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB" };
	int m = 0, n;
	uint64_t d = 1;
	unsigned __int128 q;
	if (!human) {
		n = lua_d(out, v);
		out[n++] = 'B';
		out[n] = 0;
		return n;
	}
	while (m < 3 && v / d >= 1024) {
		d *= 1024;
		m++;
	}
	if (v % d == 0)
		return sprintf(out, "%" PRIu64 "%s", v / d, unit[m]);
	q = ((unsigned __int128)v * 100 + d / 2) / d;
	return sprintf(out, "%" PRIu64 ".%02u%s", (uint64_t)(q / 100), (unsigned)(q % 100), unit[m]);
}

/* -- Byte counts for people -- */

void fmt_size(char *out, size_t n, uint64_t v)
{
	if (v >= 10u << 20)
		snprintf(out, n, "%.1f MiB", v / 1048576.0);
	else if (v >= 10u << 10)
		snprintf(out, n, "%.1f KiB", v / 1024.0);
	else
		snprintf(out, n, "%" PRIu64 " B", v);
}

void fmt_size_short(char *out, size_t n, double v)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, n, i ? "%.1f%s" : "%.0f%s", v, u[i]);
}
