/* The one writer of the memprof stream (see format/memprof.h for the record types).
 *
 * Order of calls: mpw_init, mpw_sym* (leading symtab), mpw_begin_events,
 * then any mix of mpw_event and mpw_sym* (written as event-symtab records),
 * then mpw_finish (epilogue + flush). Output is buffered; the first write
 * error is sticky and reported by mpw_error / mpw_finish.
 */
#ifndef LMT_MEMPROF_WRITE_H
#define LMT_MEMPROF_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "format/memprof.h"

struct mpw {
	int fd;
	int err;      /* first errno seen, 0 if none */
	int in_events; /* after mpw_begin_events */
	uint64_t bytes; /* bytes handed to the kernel so far + buffered */
	size_t len;
	unsigned char buf[1 << 16];
};

/* Writes the symtab prologue. fd stays owned by the caller. */
void mpw_init(struct mpw *w, int fd);
/* Symbol record: leading symtab before mpw_begin_events, event-symtab after. */
void mpw_sym(struct mpw *w, const struct mp_sym *s);
/* Symtab final byte and the events prologue. */
void mpw_begin_events(struct mpw *w);
void mpw_event(struct mpw *w, const struct mp_event *e);
/* Hands buffered bytes to the kernel. Returns 0 or an errno. */
int mpw_flush(struct mpw *w);
/* Epilogue and flush. Returns 0 or the first errno seen. */
int mpw_finish(struct mpw *w);

#endif
