/* The one writer of the stacks companion (format/stacks.h, docs/stacks-format.md).
 * Byte values of the format live here and in format/stacks_read.c only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/stacks.h"
#include "format/stacks_bytes.h"
#include "format/uleb.h"

#define SK_PEND_MAX 4096 /* events per EVENTS record at most */

static void drain(struct skw *w)
{
	size_t off = 0;

	while (off < w->len && !w->err) {
		ssize_t k = write(w->fd, w->buf + off, w->len - off);
		if (k < 0) {
			if (errno != EINTR)
				w->err = errno;
		} else if (k == 0) {
			w->err = EIO;
		} else {
			off += (size_t)k;
		}
	}
	w->len = 0; /* after an error the buffer is dropped: the error is sticky */
}

/* Room for n more bytes (n is at most a record's head plus 10 per uleb). */
static unsigned char *room(struct skw *w, size_t n)
{
	if (w->len + n > sizeof(w->buf))
		drain(w);
	return w->err ? NULL : w->buf + w->len;
}

static void put_uleb(struct skw *w, uint64_t v)
{
	unsigned char *p = room(w, 10);

	if (p)
		w->len = (size_t)(uleb_put(p, v) - w->buf);
}

static void put_byte(struct skw *w, unsigned char b)
{
	unsigned char *p = room(w, 1);

	if (p)
		w->buf[w->len++] = b;
}

/* The events named so far go before any definition: a definition is only
 * ever needed by the events after it. */
static void put_events(struct skw *w)
{
	if (!w->npend)
		return;
	put_byte(w, SK_REC_EVENTS);
	put_uleb(w, w->npend);
	for (uint32_t i = 0; i < w->npend; i++)
		put_uleb(w, w->pend[i]);
	w->npend = 0;
}

void skw_init(struct skw *w, int fd)
{
	memset(w, 0, offsetof(struct skw, buf));
	w->fd = fd;
	memcpy(w->buf, SK_MAGIC, SK_MAGIC_LEN);
	w->len = SK_MAGIC_LEN;
}

uint32_t skw_frame(struct skw *w, const struct sk_frame *f)
{
	put_events(w);
	put_byte(w, SK_REC_FRAME);
	put_byte(w, f->src == MP_SRC_LFUNC && f->name_len ? SK_SRC_LNAMED : f->src);
	switch (f->src) {
	case MP_SRC_LFUNC:
		put_uleb(w, f->addr);
		put_uleb(w, f->line);
		if (!f->name_len)
			break;
		put_uleb(w, f->name_len);
		for (size_t i = 0; i < f->name_len; i++)
			put_byte(w, (unsigned char)f->name[i]);
		break;
	case MP_SRC_CFUNC:
	case MP_SRC_TRACE:
		put_uleb(w, f->addr);
		break;
	case SK_NAMED:
		put_uleb(w, f->name_len);
		for (size_t i = 0; i < f->name_len; i++)
			put_byte(w, (unsigned char)f->name[i]);
		break;
	default: /* MP_SRC_INTERNAL */
		break;
	}
	return ++w->nframes;
}

uint32_t skw_stack(struct skw *w, const uint32_t *frames, uint32_t n, unsigned flags)
{
	put_events(w);
	put_byte(w, SK_REC_STACK);
	put_byte(w, (unsigned char)flags);
	put_uleb(w, n);
	for (uint32_t i = 0; i < n; i++)
		put_uleb(w, frames[i]);
	return ++w->nstacks;
}

void skw_event(struct skw *w, uint32_t sid)
{
	if (w->npend == w->pend_cap) {
		uint32_t cap = w->pend_cap ? w->pend_cap * 2 : 256;
		uint32_t *nv = cap <= SK_PEND_MAX ? realloc(w->pend, cap * sizeof(*nv)) : NULL;

		if (!nv) {
			put_events(w);
		} else {
			w->pend = nv;
			w->pend_cap = cap;
		}
	}
	if (w->npend < w->pend_cap)
		w->pend[w->npend++] = sid;
	else if (!w->err)
		w->err = ENOMEM;
}

int skw_flush(struct skw *w)
{
	put_events(w);
	drain(w);
	return w->err;
}

int skw_finish(struct skw *w)
{
	put_events(w);
	put_byte(w, SK_REC_END);
	drain(w);
	free(w->pend);
	w->pend = NULL;
	w->npend = w->pend_cap = 0;
	return w->err;
}
