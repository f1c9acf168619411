/* Reads of the stopped target through a cache of blocks (heap.h): objects
 * lie close together, so most of a copy's reads cost no system call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "target/proc.h"

struct block {
	uint32_t valid; /* bytes read from its start (a mapping may end) */
	uint8_t d[HPAGES_BLOCK];
};

static void free_block(void *b)
{
	free(b);
}

int hpages_read(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	uint64_t a = addr;
	size_t left = len;

	if (len > HPAGES_BLOCK || addr > UINT64_MAX - len) {
		c->direct++;
		return proc_read(pid, addr, buf, len);
	}
	while (left) {
		uint64_t base = a & ~(uint64_t)(HPAGES_BLOCK - 1), off = a - base;
		size_t k = HPAGES_BLOCK - off < left ? HPAGES_BLOCK - off : left;
		struct block *b = u64map_get(&c->m, base + 1);

		if (!b) {
			ssize_t n;
			int err;

			if (c->bytes + sizeof(*b) > LMT_HEAP_COPY_MAX || !(b = malloc(sizeof(*b))))
				return proc_read(pid, addr, buf, len);
			n = proc_read_some(pid, base, b->d, HPAGES_BLOCK);
			b->valid = n > 0 ? (uint32_t)n : 0;
			u64map_put(&c->m, base + 1, b, &err);
			if (err) {
				free(b);
				return proc_read(pid, addr, buf, len);
			}
			c->bytes += sizeof(*b);
			c->reads++;
		}
		/* Not all of it cached (its block starts or ends in unmapped
		 * memory): read as asked. */
		if (off + k > b->valid) {
			c->direct++;
			return proc_read(pid, addr, buf, len);
		}
		memcpy(out, b->d + off, k);
		out += k;
		a += k;
		left -= k;
	}
	return 0;
}

void hpages_free(struct hpages *c)
{
	u64map_free(&c->m, free_block);
	memset(c, 0, sizeof(*c));
}
