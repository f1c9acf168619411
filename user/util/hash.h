/* Hashing for the tracer's tables: one mixer (a multiply by the golden
 * ratio and a fold) and FNV-1a for strings. Not for anything an attacker
 * could turn against us: the tables keyed by these are bounded by caps
 * (target/caps.h), not by the hash's spread. */
#ifndef LMT_HASH_H
#define LMT_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* FNV-1a of the string s. */
static inline uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

#endif
