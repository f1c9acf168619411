/* The memprof stream (symtab v3 + events v3): record kinds and the
 * in-memory form of one record. Byte values of the format live only in
 * format/memprof_write.c and format/memprof_read.c; everything else speaks these types.
 */
#ifndef LMT_MEMPROF_H
#define LMT_MEMPROF_H

#include <stddef.h>
#include <stdint.h>

/* Allocation event kinds (the low two bits of an event header). */
enum mp_kind {
	MP_ALLOC = 1,
	MP_FREE = 2,
	MP_REALLOC = 3, /* ALLOC | FREE */
};

/* Where an event is charged. */
enum mp_src {
	MP_SRC_INTERNAL = 1,
	MP_SRC_LFUNC = 2, /* loc = GCproto address, line = current line */
	MP_SRC_CFUNC = 3, /* loc = C function address */
	MP_SRC_TRACE = 4, /* loc = trace number */
};

/* One alloc/free/realloc. Unused payload fields are 0. */
struct mp_event {
	uint8_t kind; /* enum mp_kind */
	uint8_t src;  /* enum mp_src */
	uint64_t loc;
	uint64_t line;
	uint64_t oaddr, osize;
	uint64_t naddr, nsize;
};

/* Symbol records, in the leading symtab or inside the event stream. */
enum mp_sym_kind {
	MP_SYM_LFUNC = 0, /* addr = GCproto, name = chunk, line = firstline */
	MP_SYM_CFUNC = 1, /* addr = function, name = symbol name */
	MP_SYM_TRACE = 2, /* addr = trace number, proto, line = start line */
};

struct mp_sym {
	uint8_t kind; /* enum mp_sym_kind */
	uint64_t addr;
	const char *name; /* not NUL-terminated; name_len bytes (LFUNC, CFUNC) */
	size_t name_len;
	uint64_t proto; /* TRACE only */
	uint64_t line;  /* LFUNC: firstline (may be 2^64-1 for -1); TRACE: line */
};

#endif
