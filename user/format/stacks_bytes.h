/* The stacks companion's byte values (docs/stacks-format.md): included by
 * its one writer and its one reader only. */
#ifndef LMT_STACKS_BYTES_H
#define LMT_STACKS_BYTES_H

/* Version 2 (written): frames may be SK_SRC_LNAMED. Version 1 (read):
 * the same without them. */
#define SK_MAGIC "lmtstk\x02"
#define SK_MAGIC_V1 "lmtstk\x01"
#define SK_MAGIC_LEN 7
#define SK_SRC_LNAMED 6 /* a Lua frame and its function's name */
#define SK_REC_FRAME 0x01
#define SK_REC_STACK 0x02
#define SK_REC_EVENTS 0x03
#define SK_REC_END 0x04

#endif
