/* The report's one place for hashing and for numbers as text: a 64-bit
 * mixer and a byte-string hash (the tables' and maps' keys), and numbers
 * and byte sizes as the standard parser (LuaJIT's string.format) prints
 * them. */
#ifndef LMT_REPORT_UTIL_H
#define LMT_REPORT_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* -- Hashing -- */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

/* n bytes at p: 64 bits (top's rows by name), or folded to 32 (the
 * string pool). */
uint64_t hash64_bytes(const char *p, size_t n);
uint32_t hash_bytes(const char *p, size_t n);

/* -- Numbers as the parser prints them (out: 32 bytes; 40 for fmt_bytes) -- */

/* string.format("%d", v as a Lua number). */
int lua_d(char *out, uint64_t v);
/* string.format("%#x", v as a Lua number). */
int lua_hex(char *out, uint64_t v);
/* humanize.lua format_bytes(): "<n>B", or with human KiB/MiB/GiB. */
int fmt_bytes(char *out, uint64_t v, int human);

#endif
