/* The tables the report is built on: growth, big zeroed arrays, a
 * u64 -> u64 map, interned byte strings, a text buffer, per-name
 * accumulators (tables.h). */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include "util/esc.h"
#include "util/hash.h"

#include "tables.h"

/* Doubles the capacity of *p (elements of sz bytes) to hold need. */
int grow(void *pp, uint32_t *cap, size_t need, size_t sz)
{
	void **p = pp;
	size_t c = *cap ? *cap : 16;
	void *q;
	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (c > UINT32_MAX / 2)
		return -1;
	q = realloc(*p, c * sz);
	if (!q)
		return -1;
	*p = q;
	*cap = (uint32_t)c;
	return 0;
}

/* Zeroed memory for the big tables (block map, owner table). Their probes
 * are random, so with 4 KiB pages nearly every one is also a TLB miss;
 * huge pages halve the cost of a profile with a large live heap. */
#define BIG_MIN (2u << 20)

void *big_calloc(size_t n, size_t sz)
{
	const size_t len = n * sz;
	void *p;
	if (len < BIG_MIN)
		return calloc(n, sz);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE); /* a hint: fine if refused */
	return p;
}

void big_free(void *p, size_t n, size_t sz)
{
	if (!p)
		return;
	if (n * sz < BIG_MIN)
		free(p);
	else
		munmap(p, n * sz);
}

/* -- u64 -> u64 map: linear probing, key 0 kept aside, no deletion ------- */

uint64_t *kvmap_get(const struct kvmap *m, uint64_t k)
{
	uint32_t i;
	if (!k)
		return m->has0 ? (uint64_t *)&m->v0 : NULL;
	if (!m->slot)
		return NULL;
	for (i = (uint32_t)hash_u64(k) & m->mask; m->slot[i].k; i = (i + 1) & m->mask)
		if (m->slot[i].k == k)
			return &m->slot[i].v;
	return NULL;
}

static int kvmap_resize(struct kvmap *m, uint32_t nslots)
{
	struct kv *s = calloc(nslots, sizeof(*s));
	if (!s)
		return -1;
	for (uint32_t j = 0; m->slot && j <= m->mask; j++) {
		uint32_t i;
		if (!m->slot[j].k)
			continue;
		for (i = (uint32_t)hash_u64(m->slot[j].k) & (nslots - 1); s[i].k; i = (i + 1) & (nslots - 1))
			;
		s[i] = m->slot[j];
	}
	free(m->slot);
	m->slot = s;
	m->mask = nslots - 1;
	return 0;
}

/* Returns the value slot, inserting v0 if k is new; NULL on OOM. */
uint64_t *kvmap_put(struct kvmap *m, uint64_t k, uint64_t v, int *isnew)
{
	uint32_t i;
	*isnew = 0;
	if (!k) {
		if (!m->has0) {
			m->has0 = 1;
			m->v0 = v;
			*isnew = 1;
		}
		return &m->v0;
	}
	if (!m->slot || (m->n + 1) * 4 > (m->mask + 1) * 3) {
		if (m->mask >= (1u << 30) || kvmap_resize(m, m->slot ? (m->mask + 1) * 2 : 64))
			return NULL;
	}
	for (i = (uint32_t)hash_u64(k) & m->mask; m->slot[i].k; i = (i + 1) & m->mask)
		if (m->slot[i].k == k)
			return &m->slot[i].v;
	m->slot[i].k = k;
	m->slot[i].v = v;
	m->n++;
	*isnew = 1;
	return &m->slot[i].v;
}

void kvmap_free(struct kvmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* -- Interned byte strings: names are compared and merged by id --------- */

const char *str_ptr(const struct strpool *sp, uint32_t id)
{
	return sp->arena + sp->s[id].off;
}

int str_cmp(const struct strpool *sp, uint32_t a, uint32_t b)
{
	const uint32_t la = sp->s[a].len, lb = sp->s[b].len;
	int c;
	if (a == b)
		return 0;
	c = memcmp(str_ptr(sp, a), str_ptr(sp, b), la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

uint32_t intern(struct strpool *sp, const char *p, size_t n)
{
	const uint32_t h = hash_bytes32(p, n);
	uint32_t i;
	if (n > UINT32_MAX - 1)
		return NONE;
	if (!sp->tab || (sp->n + 1) * 2 > sp->mask + 1) {
		uint32_t ns = sp->tab ? (sp->mask + 1) * 2 : 256;
		uint32_t *t;
		if (ns > (1u << 30) || !(t = calloc(ns, sizeof(*t))))
			return NONE;
		for (uint32_t id = 0; id < sp->n; id++) {
			for (i = sp->s[id].hash & (ns - 1); t[i]; i = (i + 1) & (ns - 1))
				;
			t[i] = id + 1;
		}
		free(sp->tab);
		sp->tab = t;
		sp->mask = ns - 1;
	}
	for (i = h & sp->mask; sp->tab[i]; i = (i + 1) & sp->mask) {
		const struct str *s = &sp->s[sp->tab[i] - 1];
		if (s->hash == h && s->len == n && !memcmp(sp->arena + s->off, p, n))
			return sp->tab[i] - 1;
	}
	if (grow(&sp->s, &sp->cap, (size_t)sp->n + 1, sizeof(*sp->s)))
		return NONE;
	if (sp->alen + n > sp->acap || !sp->arena) { /* even for "": str_ptr's base */
		size_t c = sp->acap ? sp->acap : 4096;
		char *a;
		while (c < sp->alen + n)
			c *= 2;
		if (!(a = realloc(sp->arena, c)))
			return NONE;
		sp->arena = a;
		sp->acap = c;
	}
	memcpy(sp->arena + sp->alen, p, n);
	sp->s[sp->n] = (struct str){ .off = sp->alen, .len = (uint32_t)n, .hash = h };
	sp->alen += n;
	sp->tab[i] = ++sp->n;
	return sp->n - 1;
}

/* -- Scratch text buffer ------------------------------------------------ */

void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (!n) /* b->p may still be NULL: memcpy(NULL, s, 0) is UB */
		return;
	if (b->len + n > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		char *q;
		while (c < b->len + n)
			c *= 2;
		if (!(q = realloc(b->p, c))) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = c;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

void sb_puts(struct sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_put_cb(void *b, const char *s, size_t n) { sb_put(b, s, n); }

/* Target-controlled text, escaped (util/esc.h). */
void sb_escaped(struct sbuf *b, const char *s, size_t n, int flags)
{
	esc_text(sb_put_cb, b, s, n, flags);
}

/* -- Per-name accumulators -- */

struct acc *acc_of(struct accset *s, uint32_t name)
{
	int isnew;
	uint64_t *i;
	/* Room first, so the index never points past the array. */
	if (grow(&s->v, &s->cap, (size_t)s->n + 1, sizeof(*s->v)) ||
	    !(i = kvmap_put(&s->idx, (uint64_t)name + 1, s->n, &isnew))) {
		s->oom = 1;
		return NULL;
	}
	if (isnew)
		s->v[s->n++] = (struct acc){ .name = name };
	return &s->v[*i];
}

void acc_free(struct accset *s)
{
	kvmap_free(&s->idx);
	free(s->v);
}
