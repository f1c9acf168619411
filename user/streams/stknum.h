/* A stream's stacks (--stacks), numbered once per stream: each frame and
 * each stack gets its number in the companion (format/stacks.h) and in
 * the live report the first time it is written. While a stream of several
 * VMs holds its records for their turn (streams/merge.h), a stack is held
 * by content and numbered when its event is written (stknum_number). */
#ifndef LMT_STKNUM_H
#define LMT_STKNUM_H

#include <stdint.h>

#include "format/stacks.h"
#include "report/report.h"
#include "util/u64set.h"

#define LMT_FRAME_NAME 64 /* a named frame's name, cut */

struct cframe {
	uint8_t src; /* enum mp_src or SK_NAMED */
	uint64_t addr, line;
	char name[LMT_FRAME_NAME];
};

/* A stream's numbering: its companion's writer (NULL: none, numbers
 * given all the same) and its live report, set when the stream opens. */
struct stknum {
	struct skw *sk;
	struct report *rep;
	struct u64map frames, stacks; /* hash -> number */
	struct u64map held;           /* several VMs: hash -> held stack */
	void **held_v;
	uint32_t nheld, held_cap;
	uint32_t nf, ns;              /* numbers given (without a companion) */
};

/* The number of the stack of frames fr[0..n) (SK_TRUNCATED in flags: cut):
 * its companion's, or with hold (a stream of several VMs) a held one's;
 * 0 if it cannot be kept. */
uint32_t stknum_stack(struct stknum *o, int hold, const struct cframe *fr, uint32_t n,
		      unsigned flags);
/* A held stack's number, given now (any other number as it is). */
uint32_t stknum_number(struct stknum *o, uint32_t sid);
/* The held stacks, gone; and the numbering. */
void stknum_free_held(struct stknum *o);
void stknum_free(struct stknum *o);

#endif
