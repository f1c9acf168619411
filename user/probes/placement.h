/* Where to put the allocator's probes, from its decoded instructions. */
#ifndef LMT_PROBE_H
#define LMT_PROBE_H

#include <stdint.h>

struct probe_site {
	uint64_t addr;   /* runtime address */
	uint64_t off;    /* file offset, for the uprobe */
	int emulated;    /* the kernel emulates it: no single-step */
	char text[200];  /* the instruction, for messages */
};

struct probe_plan {
	/* split: frees take an entry-only probe on the free path and
	 * allocations an entry+return probe on their own path. Otherwise
	 * one entry+return probe at `all`. */
	int split;
	struct probe_site all, free_site, alloc_site;
	char warning[400]; /* non-empty: the plan has a known cost */
};

/* Plans probes for the function at runtime address addr, whose code is at
 * file offset off of the file open at fd (target/tfile.h: the file the probes go
 * on, read by its descriptor). 0, or -1 with err set. */
int probe_plan(int fd, uint64_t addr, uint64_t off,
	       struct probe_plan *p, char *err, size_t errlen);
/* The same from bytes in memory (for tests). */
int probe_plan_code(const uint8_t *code, size_t len, uint64_t addr,
		    uint64_t off, struct probe_plan *p, char *err,
		    size_t errlen);

#endif
