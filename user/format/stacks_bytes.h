/* The stacks companion's byte values (docs/stacks-format.md): included by
 * its one writer and its one reader only. */
#ifndef LMT_STACKS_BYTES_H
#define LMT_STACKS_BYTES_H

#define SK_MAGIC "lmtstk\x01"
#define SK_MAGIC_LEN 7
#define SK_REC_FRAME 0x01
#define SK_REC_STACK 0x02
#define SK_REC_EVENTS 0x03
#define SK_REC_END 0x04

#endif
