/* The stacks companion (docs/stacks-format.md): beside a memprof stream
 * FILE, FILE.stacks holds the Lua call stack of each of its events. Frames
 * and stacks are defined once, numbered from 1 in order of definition;
 * events name their stack by number, in the stream's event order. Byte
 * values of the format live only in format/stacks_write.c and format/stacks_read.c.
 */
#ifndef LMT_STACKS_H
#define LMT_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "format/memprof.h"

/* A frame: where it is, as an event is charged (enum mp_src: a Lua
 * function's prototype and line, a C function, a trace, the VM), or a
 * builtin by name (SK_NAMED). */
#define SK_NAMED 5

struct sk_frame {
	uint8_t src;     /* enum mp_src, or SK_NAMED */
	uint64_t addr;   /* LFUNC: prototype; CFUNC: function; TRACE: number */
	uint64_t line;   /* LFUNC only */
	const char *name; /* SK_NAMED: not NUL-terminated, name_len bytes */
	size_t name_len;
};

/* The companion of stream FILE is FILE.stacks. */
#define STACKS_SUFFIX ".stacks"

#define SK_TRUNCATED 1 /* outer frames beyond the depth are missing */

/* -- Writer ---------------------------------------------------------------- */

/* Order of calls: skw_init, then any mix of skw_frame, skw_stack and
 * skw_event (a frame before the stacks that use it, a stack before the
 * events that name it), then skw_finish. Buffered; the first write error
 * is sticky. */
struct skw {
	int fd;
	int err;
	uint32_t nframes, nstacks; /* numbers given so far */
	uint32_t *pend;            /* stack numbers of events not yet written */
	uint32_t npend, pend_cap;
	size_t len;
	unsigned char buf[1 << 16];
};

void skw_init(struct skw *w, int fd);
/* Defines a frame; its number (from 1). */
uint32_t skw_frame(struct skw *w, const struct sk_frame *f);
/* Defines a stack of n frames, innermost first; its number (from 1). */
uint32_t skw_stack(struct skw *w, const uint32_t *frames, uint32_t n, unsigned flags);
/* The next event of the stream has stack sid (0: none). */
void skw_event(struct skw *w, uint32_t sid);
/* Hands buffered bytes to the kernel. 0 or an errno. */
int skw_flush(struct skw *w);
/* Flushes and frees; 0 or the first errno seen. fd stays the caller's. */
int skw_finish(struct skw *w);

/* -- Reader ---------------------------------------------------------------- */

struct skr;

enum skr_rc {
	SKR_EVENT = 0, /* *sid: the next event's stack */
	SKR_FRAME,     /* *f, numbered *id */
	SKR_STACK,     /* skr_stack() has it, numbered *id */
	SKR_EOF,       /* clean end */
	SKR_TRUNC,     /* cut short: a tracer killed mid-write */
	SKR_ERROR,     /* not a stacks file, or malformed */
};

struct skr *skr_open_fd(int fd);
/* The next item. Frames' names stay valid until the next call. */
enum skr_rc skr_next(struct skr *r, uint32_t *id, struct sk_frame *f, uint32_t *sid);
/* The stack just read (SKR_STACK): its frames' numbers, innermost first. */
const uint32_t *skr_stack(const struct skr *r, uint32_t *n, unsigned *flags);
const char *skr_diag(const struct skr *r);
void skr_close(struct skr *r);

#endif
