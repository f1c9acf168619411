/* Direct-mapped caches: arrays indexed by a hash of the key, shared by all
 * CPUs without locks. An entry is n words and a check word over them (and
 * the cache's salt), written last; a reader loads each word once, so an
 * entry torn by two writers, or one being written, reads as a miss, never
 * a wrong answer. A zeroed entry never matches (dm_chk is never 0).
 */
#ifndef LMT_BPF_CACHE_H
#define LMT_BPF_CACHE_H

/* A key's hash: x and y mixed (y: what else the key holds, shifted clear
 * of x's bits), spread by Fibonacci hashing. */
static __always_inline __u64 dm_hash(__u64 x, __u64 y)
{
	return (x ^ y) * LMT_HASH_K;
}

/* Entry of hash h in a cache of 2^bits entries: its top bits. */
#define dm_slot(h, bits) ((__u32)((h) >> (64 - (bits))))

/* The check word of n words: their xor, the last one spread by a multiply
 * (the caches' cost before they shared this: one multiply). */
static __always_inline __u64 dm_chk(const __u64 *w, const int n, __u64 salt)
{
	__u64 c = salt ^ w[n - 1] * LMT_HASH_K;

#pragma clang loop unroll(full)
	for (int i = 0; i < n - 1; i++)
		c ^= w[i];
	return c | 2;
}

/* Loads entry e's n words into w, each once: 1 if its check word holds. */
static __always_inline int dm_get(const void *e, __u64 *w, const int n,
				  __u64 salt)
{
	const volatile __u64 *v = e;

#pragma clang loop unroll(full)
	for (int i = 0; i < n; i++)
		w[i] = v[i];
	return v[n] == dm_chk(w, n, salt);
}

/* Stores n words into entry e, then their check word. */
static __always_inline void dm_put(void *e, const __u64 *w, const int n, __u64 salt)
{
	volatile __u64 *v = e;

#pragma clang loop unroll(full)
	for (int i = 0; i < n; i++)
		v[i] = w[i];
	asm volatile("" ::: "memory");
	v[n] = dm_chk(w, n, salt);
}

#endif
