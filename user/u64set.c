#include <stdlib.h>

#include "u64set.h"

static size_t slot(uint64_t k, size_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k & mask;
}

static int grow(struct u64set *s)
{
	size_t cap = s->cap ? 2 * s->cap : 1024;
	uint64_t *k = calloc(cap, sizeof(*k));

	if (!k)
		return -1;
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;
		if (!s->k[i])
			continue;
		for (j = slot(s->k[i], cap - 1); k[j]; j = (j + 1) & (cap - 1))
			;
		k[j] = s->k[i];
	}
	free(s->k);
	s->k = k;
	s->cap = cap;
	return 0;
}

int u64set_has(const struct u64set *s, uint64_t key)
{
	if (!key)
		return s->has0;
	if (!s->cap)
		return 0;
	for (size_t j = slot(key, s->cap - 1); s->k[j]; j = (j + 1) & (s->cap - 1))
		if (s->k[j] == key)
			return 1;
	return 0;
}

int u64set_add(struct u64set *s, uint64_t key)
{
	size_t j;

	if (!key) {
		int was = s->has0;
		s->has0 = 1;
		return !was;
	}
	if (u64set_has(s, key))
		return 0;
	if ((s->n + 1) * 2 > s->cap && grow(s))
		return -1;
	for (j = slot(key, s->cap - 1); s->k[j]; j = (j + 1) & (s->cap - 1))
		;
	s->k[j] = key;
	s->n++;
	return 1;
}

void u64set_free(struct u64set *s)
{
	free(s->k);
	s->k = NULL;
	s->cap = s->n = 0;
	s->has0 = 0;
}
