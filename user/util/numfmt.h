/* Numbers and byte counts as text, the one place for them: as the
 * standard parser (LuaJIT's string.format) prints them in reports, and
 * the two shorter forms people read on stderr (the summary) and on
 * screen (top). Hashing is util/hash.h's. */
#ifndef LMT_NUMFMT_H
#define LMT_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* -- Numbers as the parser prints them (out: 32 bytes; 40 for fmt_bytes) -- */

/* string.format("%d", v as a Lua number). */
int lua_d(char *out, uint64_t v);
/* string.format("%#x", v as a Lua number). */
int lua_hex(char *out, uint64_t v);
/* humanize.lua format_bytes(): "<n>B", or with human KiB/MiB/GiB
 * ("8080B", "67.13KiB"). */
int fmt_bytes(char *out, uint64_t v, int human);

/* -- Byte counts for people -- */

/* The summary's: "9999 B", then "10.0 KiB" from 10 KiB, "10.0 MiB" from
 * 10 MiB on (one decimal, printf's rounding). */
void fmt_size(char *out, size_t n, uint64_t v);
/* top's, for sizes and rates: "512B", then "1.5KiB" .. "1.0TiB" from
 * each 1024 on (one decimal). */
void fmt_size_short(char *out, size_t n, double v);

#endif
