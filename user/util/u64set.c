#include <stdlib.h>

#include "util/hash.h"
#include "util/u64set.h"

static size_t slot(uint64_t k, size_t mask)
{
	return (size_t)hash_slot(k) & mask;
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

/* Deleted slots keep their key with a NULL value (tombstones); a rebuild
 * drops them once they pile up. */
static int map_rebuild(struct u64map *m, size_t cap)
{
	uint64_t *k = calloc(cap, sizeof(*k));
	void **v = calloc(cap, sizeof(*v));

	if (!k || !v) {
		free(k);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;
		if (!m->k[i] || !m->v[i])
			continue;
		for (j = slot(m->k[i], cap - 1); k[j]; j = (j + 1) & (cap - 1))
			;
		k[j] = m->k[i];
		v[j] = m->v[i];
	}
	free(m->k);
	free(m->v);
	m->k = k;
	m->v = v;
	m->cap = cap;
	m->dead = 0;
	return 0;
}

static size_t map_find(const struct u64map *m, uint64_t key)
{
	size_t j;

	for (j = slot(key, m->cap - 1); m->k[j]; j = (j + 1) & (m->cap - 1))
		if (m->k[j] == key)
			return j;
	return m->cap;
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t j;

	if (!m->cap)
		return NULL;
	j = map_find(m, key);
	return j < m->cap ? m->v[j] : NULL;
}

void *u64map_put(struct u64map *m, uint64_t key, void *val, int *err)
{
	size_t j;
	void *old;

	*err = 0;
	if ((m->n + m->dead + 1) * 2 > m->cap &&
	    map_rebuild(m, m->cap && (m->n + 1) * 4 < m->cap ? m->cap :
			   m->cap ? 2 * m->cap : 256)) {
		*err = -1;
		return NULL;
	}
	j = map_find(m, key);
	if (j < m->cap) {
		old = m->v[j];
		m->v[j] = val;
		if (!old) {
			m->n++;
			m->dead--;
		}
		return old;
	}
	for (j = slot(key, m->cap - 1); m->k[j]; j = (j + 1) & (m->cap - 1))
		;
	m->k[j] = key;
	m->v[j] = val;
	m->n++;
	return NULL;
}

void *u64map_del(struct u64map *m, uint64_t key)
{
	size_t j;
	void *old;

	if (!m->cap)
		return NULL;
	j = map_find(m, key);
	if (j == m->cap || !m->v[j])
		return NULL;
	old = m->v[j];
	m->v[j] = NULL;
	m->n--;
	m->dead++;
	return old;
}

void u64map_free(struct u64map *m, void (*fn)(void *))
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i] && fn)
			fn(m->v[i]);
	free(m->k);
	free(m->v);
	m->k = NULL;
	m->v = NULL;
	m->cap = m->n = m->dead = 0;
}

int u64map_reserve(struct u64map *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 256;

	while (cap / 2 < n + m->n + m->dead + 1)
		cap *= 2;
	if (cap > m->cap && map_rebuild(m, cap))
		return -1;
	/* touched now: the puts to come take no page fault */
	for (size_t i = 0; i < m->cap; i += 512) {
		((volatile uint64_t *)m->k)[i] = m->k[i];
		((void *volatile *)m->v)[i] = m->v[i];
	}
	return 0;
}
