/* A set of 64-bit keys (open addressing, linear probing). */
#ifndef LMT_U64SET_H
#define LMT_U64SET_H

#include <stddef.h>
#include <stdint.h>

struct u64set {
	uint64_t *k; /* 0 marks an empty slot; key 0 is kept aside */
	size_t cap, n;
	int has0;
};

/* 1 if added, 0 if present, -1 on allocation failure. */
int u64set_add(struct u64set *s, uint64_t key);
int u64set_has(const struct u64set *s, uint64_t key);
void u64set_free(struct u64set *s);



/* A map from 64-bit keys to pointers (same scheme; key 0 not allowed). */
struct u64map {
	uint64_t *k;
	void **v;
	size_t cap, n, dead;
};

void *u64map_get(const struct u64map *m, uint64_t key);
/* Replaces; returns the previous value (or NULL). -1 on failure via *err. */
void *u64map_put(struct u64map *m, uint64_t key, void *val, int *err);
void *u64map_del(struct u64map *m, uint64_t key);
/* Room for n more keys, its memory touched (no page fault in the puts to
 * come): 0, or -1 on allocation failure. */
int u64map_reserve(struct u64map *m, size_t n);
/* Calls fn on every value, then frees the table. */
void u64map_free(struct u64map *m, void (*fn)(void *));
#endif
