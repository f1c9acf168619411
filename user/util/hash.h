/* Hashing, the one place for it: a 64-bit key's bits spread for a
 * table's slot (hash_u64, hash_slot), two values mixed into one key
 * (hash_mix), and strings (hash_str, hash_bytes64, hash_bytes32). Not for
 * anything an attacker could turn against us: the tables keyed by these
 * are bounded by caps (target/caps.h, report/model.h), not by the hash's
 * spread. Each function's values are fixed: the report's output order
 * follows hash_u64's (a flame graph's keys), the tracer's tables' walks
 * follow hash_slot's. */
#ifndef LMT_HASH_H
#define LMT_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 2^64 / the golden ratio, odd: a multiply by it is a bijection. */
#define HASH_GOLDEN 0x9e3779b97f4a7c15ULL

/* x's bits spread (the report's tables, user/report/): a bijection, so
 * distinct keys stay distinct. */
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 31;
	x *= HASH_GOLDEN;
	x ^= x >> 29;
	return x;
}

/* Key k's bits spread for struct u64set's and u64map's slots
 * (util/u64set.h): MurmurHash3's fmix64, first round. Not hash_u64: the
 * order of those tables' slots is what their walks follow (which trace a
 * process over its cap loses first, convert/jit.c), kept as it was. */
static inline uint64_t hash_slot(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* h and v mixed: a running hash of several values (frames, stacks). */
static inline uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * HASH_GOLDEN;
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

/* The n bytes at p, eight at a time through hash_u64 (top's rows by
 * name, the report's string pool). */
static inline uint64_t hash_bytes64(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;

	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = hash_u64(h ^ w);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = hash_u64(h ^ w ^ 0x100);
	}
	return h;
}

/* hash_bytes64 folded to 32 bits. */
static inline uint32_t hash_bytes32(const char *p, size_t n)
{
	const uint64_t h = hash_bytes64(p, n);

	return (uint32_t)(h ^ (h >> 32));
}

#endif
