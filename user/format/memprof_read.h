/* The one reader of the memprof stream (see format/memprof.h for the records).
 *
 * Streaming: memory is bounded by the read buffer plus the longest string
 * (capped at MPR_STR_MAX), never by the stream length. Records come out in
 * stream order; symbol records of the leading symtab and of the event
 * stream look the same to the caller.
 *
 * Diagnostics are one line, "NAME: offset N: what", where N is the byte
 * offset of the offending record or field.
 */
#ifndef LMT_MEMPROF_READ_H
#define LMT_MEMPROF_READ_H

#include <stdint.h>
#include <stdio.h>

#include "format/memprof.h"

/* Strings (chunk names, C symbols) longer than this are rejected. The
 * reference parser can't read more than 10 MiB anyway. */
#define MPR_STR_MAX (64u << 20)

enum mpr_status {
	MPR_SYM = 1,    /* *sym filled in */
	MPR_EVENT = 2,  /* *ev filled in */
	MPR_END = 0,    /* epilogue reached; trailing bytes are ignored */
	MPR_TRUNC = -1, /* EOF mid-record or before the epilogue; mpr_diag says where */
	MPR_ERROR = -2, /* malformed input or I/O error; mpr_diag says what */
};

struct mpr;

/* name is used in diagnostics only (copied). Neither opener takes
 * ownership of fd / f. Return NULL on allocation failure. */
struct mpr *mpr_open_fd(int fd, const char *name);
struct mpr *mpr_open_file(FILE *f, const char *name);
void mpr_close(struct mpr *r);

/* Next record. A sym's name points into the reader and stays valid until
 * the next call. After MPR_END/TRUNC/ERROR every call returns the same. */
int mpr_next(struct mpr *r, struct mp_sym *sym, struct mp_event *ev);

/* Callback driver over mpr_next. Returns the final status (END, TRUNC or
 * ERROR), or a callback's non-zero return value to stop early. */
typedef int (*mpr_sym_cb)(void *ud, const struct mp_sym *s);
typedef int (*mpr_event_cb)(void *ud, const struct mp_event *e);
int mpr_run(struct mpr *r, mpr_sym_cb on_sym, mpr_event_cb on_event, void *ud);

/* Whether the record mpr_next last returned came from the event stream
 * (a symbol announced among events) rather than the symbol table. */
int mpr_in_events(const struct mpr *r);
/* The diagnostic line of a TRUNC or ERROR status ("" otherwise). */
const char *mpr_diag(const struct mpr *r);
/* Bytes consumed so far. */
uint64_t mpr_offset(const struct mpr *r);
/* Records returned so far. */
uint64_t mpr_nsyms(const struct mpr *r);
uint64_t mpr_nevents(const struct mpr *r);

#endif
