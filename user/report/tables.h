/* The tables the report is built on (tables.c): growth, big zeroed
 * arrays, a u64 -> u64 map, interned byte strings, a text buffer, and
 * per-name accumulators. Nothing here knows of memprof. */
#ifndef LMT_REPORT_TABLES_H
#define LMT_REPORT_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* No such index or string id. */
#define NONE UINT32_MAX

struct kv {
	uint64_t k, v;
};

struct kvmap {
	struct kv *slot;
	uint32_t mask, n; /* mask + 1 slots */
	int has0;
	uint64_t v0;
};

struct str {
	size_t off;
	uint32_t len, hash;
};

struct strpool {
	char *arena;
	size_t alen, acap;
	struct str *s;
	uint32_t n, cap;
	uint32_t *tab; /* id + 1, 0 = empty */
	uint32_t mask;
};

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

/* Per-name accumulator (HEAP SUMMARY, folded, the views' keys). */
struct acc {
	uint32_t name;
	uint64_t a, b, c; /* meaning depends on the user */
};

struct accset {
	struct kvmap idx; /* name + 1 -> index */
	struct acc *v;
	uint32_t n, cap;
	int oom;
};

/* Doubles *cap (elements of sz bytes at *pp) until it holds need. 0, or
 * -1 out of memory or past UINT32_MAX / 2 elements. */
int grow(void *pp, uint32_t *cap, size_t need, size_t sz);
void *big_calloc(size_t n, size_t sz);
void big_free(void *p, size_t n, size_t sz);
uint64_t *kvmap_get(const struct kvmap *m, uint64_t k);
uint64_t *kvmap_put(struct kvmap *m, uint64_t k, uint64_t v, int *isnew);
void kvmap_free(struct kvmap *m);
const char *str_ptr(const struct strpool *sp, uint32_t id);
int str_cmp(const struct strpool *sp, uint32_t a, uint32_t b);
/* The id of n bytes at p, added if new; NONE out of memory. */
uint32_t intern(struct strpool *sp, const char *p, size_t n);
void sb_put(struct sbuf *b, const char *s, size_t n);
void sb_puts(struct sbuf *b, const char *s);
/* Target-controlled text, escaped (util/esc.h). */
void sb_escaped(struct sbuf *b, const char *s, size_t n, int flags);
/* The accumulator of name, zeroed if new; NULL (s->oom set) out of memory. */
struct acc *acc_of(struct accset *s, uint32_t name);
void acc_free(struct accset *s);

#endif
