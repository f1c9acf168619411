/* Escaping of target-controlled text (chunk names, C names, stream bytes)
 * for every human output: one rule, here.
 *
 * Printable ASCII and well-formed UTF-8 pass through unchanged (backslash
 * too, so printable names match the standard parser byte for byte).
 * Escaped, so nothing a target names can drive a terminal:
 * - C0 controls and DEL: \t \n \r, else \xHH (TAB kept with ESC_TAB);
 * - C1 controls (U+0080..U+009F) encoded in UTF-8: both bytes, \xc2\x9b;
 * - every byte of an ill-formed UTF-8 sequence (stray continuation bytes,
 *   overlongs, surrogates, > U+10FFFF, sequences cut short): \xHH each.
 */
#ifndef LMT_ESC_H
#define LMT_ESC_H

#include <stddef.h>

#define ESC_TAB   1 /* TAB kept raw (source text in ALIASES) */
#define ESC_QUOTE 2 /* '"' and '\\' as \xHH too (text shown inside "...") */

/* Receives the output in pieces: runs of s itself and escapes. */
typedef void esc_put_fn(void *ctx, const char *p, size_t n);

/* Escapes s[0..n) (any bytes, NULs included) into put(ctx, ...). */
void esc_text(esc_put_fn *put, void *ctx, const char *s, size_t n, int flags);

/* The same into dst (cap bytes, NUL-terminated), cut before an escape or
 * character that would not fit: for messages. Returns dst. */
char *esc_str(char *dst, size_t cap, const char *s, size_t n, int flags);

/* Room for n bytes escaped (each at most \xHH) and the NUL. */
#define ESC_MAX(n) (4 * (n) + 1)

/* The NUL-terminated s escaped into dst (esc_str, flags 0): a path, a
 * process name or a file's text in a message. Returns dst. */
char *esc_cstr(char *dst, size_t cap, const char *s);

#endif
