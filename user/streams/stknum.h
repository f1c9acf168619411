/* A stream's stacks (--stacks), numbered once per stream: each frame and
 * each stack gets its number in the companion (format/stacks.h) and in
 * the live report the first time it is written. While a stream of several
 * VMs holds its records for their turn (streams/merge.h), a stack is held
 * by content and numbered when its event is written (out_stack_number). */
#ifndef LMT_STKNUM_H
#define LMT_STKNUM_H

#include <stdint.h>

#include "streams/out.h"

#define LMT_FRAME_NAME 64 /* a named frame's name, cut */

struct cframe {
	uint8_t src; /* enum mp_src or SK_NAMED */
	uint64_t addr, line;
	char name[LMT_FRAME_NAME];
};

/* The number of the stack of frames fr[0..n) (SK_TRUNCATED in flags: cut)
 * in stream o: its companion's, or a held one's (several VMs); 0 if it
 * cannot be kept. */
uint32_t out_stack(struct tout *o, const struct cframe *fr, uint32_t n, unsigned flags);
/* A held stack's number, given now (any other number as it is). */
uint32_t out_stack_number(struct tout *o, uint32_t sid);
/* The stream's held stacks, gone. */
void out_stacks_free_held(struct tout *o);

#endif
