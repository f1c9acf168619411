/* ULEB128 encoding, for the writers of the memprof stream and of the
 * stacks companion: the one encoder. */
#ifndef LMT_ULEB_H
#define LMT_ULEB_H

#include <stdint.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "uleb_put stores a word's bytes in memory order");

/* v in its shortest form at p; returns the byte after it. Writes at most
 * 10 bytes at p, as the longest form does: below 2^56 the 7-bit groups are
 * spread over a word at once and the word stored whole, its bytes past the
 * form scratch (a byte a turn was a third of the memprof writer's time). */
static inline unsigned char *uleb_put(unsigned char *p, uint64_t v)
{
	uint64_t x;
	unsigned n;

	if (v < 0x80) {
		*p = (unsigned char)v;
		return p + 1;
	}
	if (v >> 56) {
		while (v >= 0x80) {
			*p++ = (unsigned char)(v | 0x80);
			v >>= 7;
		}
		*p++ = (unsigned char)v;
		return p;
	}
	n = (unsigned)(70 - __builtin_clzll(v)) / 7; /* bytes: 2..8 */
	x = (v & 0x7f) | (v << 1 & 0x7f00) | (v << 2 & 0x7f0000) | (v << 3 & 0x7f000000) |
	    (v << 4 & 0x7f00000000ULL) | (v << 5 & 0x7f0000000000ULL) |
	    (v << 6 & 0x7f000000000000ULL) | (v << 7 & 0x7f00000000000000ULL);
	x |= 0x8080808080808080ULL & ((1ULL << (8 * n - 8)) - 1); /* all but the last */
	memcpy(p, &x, 8);
	return p + n;
}

#endif
