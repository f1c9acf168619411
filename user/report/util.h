/* The report's numbers as text: numbers and byte sizes as the standard
 * parser (LuaJIT's string.format) prints them. Hashing is util/hash.h's. */
#ifndef LMT_REPORT_UTIL_H
#define LMT_REPORT_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* -- Numbers as the parser prints them (out: 32 bytes; 40 for fmt_bytes) -- */

/* string.format("%d", v as a Lua number). */
int lua_d(char *out, uint64_t v);
/* string.format("%#x", v as a Lua number). */
int lua_hex(char *out, uint64_t v);
/* humanize.lua format_bytes(): "<n>B", or with human KiB/MiB/GiB. */
int fmt_bytes(char *out, uint64_t v, int human);

#endif
