/* The one writer of the memprof stream: symtab v3 + memprof v3.
 * Byte values of the format live here and in format/memprof_read.c only.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "format/memprof_write.h"
#include "format/uleb.h"

#define LJS_PROLOGUE "ljs\x03\x00\x00\x00"
#define LJM_PROLOGUE "ljm\x03\x00\x00\x00"
#define PROLOGUE_LEN 7
#define SYMTAB_FINAL 0x80
#define LJM_EPILOGUE 0x80
#define AEVENT_SYMTAB 0x00
#define ASOURCE_SHIFT 2

static void put_raw(struct mpw *w, const void *p, size_t n);

static void drain(struct mpw *w)
{
	size_t off = 0;
	while (off < w->len && !w->err) {
		ssize_t k = write(w->fd, w->buf + off, w->len - off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
		} else if (k == 0) {
			w->err = EIO; /* write(2) returning 0 for n > 0: don't spin */
		} else {
			off += (size_t)k;
		}
	}
	w->len = 0; /* After an error the buffer is dropped: the error is sticky. */
}

static void put_raw(struct mpw *w, const void *p, size_t n)
{
	const unsigned char *s = p;
	if (w->err)
		return;
	w->bytes += n;
	while (n) {
		size_t room = sizeof(w->buf) - w->len;
		size_t k = n < room ? n : room;
		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == sizeof(w->buf))
			drain(w);
		if (w->err)
			return;
	}
}

/* A record without strings fits a small stack buffer (hdr + 6 ulebs). */
#define REC_MAX (1 + 6 * 10)

static void put_string(struct mpw *w, const char *s, size_t n)
{
	unsigned char tmp[10];
	put_raw(w, tmp, (size_t)(uleb_put(tmp, n) - tmp));
	put_raw(w, s, n);
}

void mpw_init(struct mpw *w, int fd)
{
	w->fd = fd;
	w->err = 0;
	w->in_events = 0;
	w->bytes = 0;
	w->len = 0;
	put_raw(w, LJS_PROLOGUE, PROLOGUE_LEN);
}

void mpw_sym(struct mpw *w, const struct mp_sym *s)
{
	unsigned char rec[REC_MAX], *p = rec;
	unsigned char hdr;

	if (s->kind > MP_SYM_TRACE) {
		if (!w->err)
			w->err = EINVAL;
		return;
	}
	/* Leading symtab: hdr = type. Event stream: AEVENT_SYMTAB | source,
	 * where the source code of a symbol type is type + 2. */
	hdr = w->in_events ? (unsigned char)(AEVENT_SYMTAB | ((s->kind + 2) << ASOURCE_SHIFT))
			   : s->kind;
	*p++ = hdr;
	p = uleb_put(p, s->addr);
	if (s->kind == MP_SYM_TRACE) {
		p = uleb_put(p, s->proto);
		p = uleb_put(p, s->line);
		put_raw(w, rec, (size_t)(p - rec));
		return;
	}
	put_raw(w, rec, (size_t)(p - rec));
	put_string(w, s->name, s->name_len);
	if (s->kind == MP_SYM_LFUNC) {
		p = uleb_put(rec, s->line);
		put_raw(w, rec, (size_t)(p - rec));
	}
}

void mpw_begin_events(struct mpw *w)
{
	static const unsigned char fin = SYMTAB_FINAL;
	if (w->in_events)
		return;
	put_raw(w, &fin, 1);
	put_raw(w, LJM_PROLOGUE, PROLOGUE_LEN);
	w->in_events = 1;
}

void mpw_event(struct mpw *w, const struct mp_event *e)
{
	unsigned char rec[REC_MAX], *p, *s;

	/* Source 0 or a symtab kind here would be misread by every parser. */
	if (e->kind < MP_ALLOC || e->kind > MP_REALLOC ||
	    e->src < MP_SRC_INTERNAL || e->src > MP_SRC_TRACE || !w->in_events) {
		if (!w->err)
			w->err = EINVAL;
		return;
	}
	/* In place while the buffer has room for any record: the copy of a
	 * few bytes through memcpy was a tenth of the consumer's time. */
	s = p = sizeof(w->buf) - w->len < REC_MAX ? rec : w->buf + w->len;
	*p++ = (unsigned char)(e->kind | (e->src << ASOURCE_SHIFT));
	switch (e->src) {
	case MP_SRC_LFUNC:
		p = uleb_put(p, e->loc);
		p = uleb_put(p, e->line);
		break;
	case MP_SRC_CFUNC:
	case MP_SRC_TRACE:
		p = uleb_put(p, e->loc);
		break;
	default:
		break;
	}
	if (e->kind & MP_FREE) {
		p = uleb_put(p, e->oaddr);
		p = uleb_put(p, e->osize);
	}
	if (e->kind & MP_ALLOC) {
		p = uleb_put(p, e->naddr);
		p = uleb_put(p, e->nsize);
	}
	if (s == rec) {
		put_raw(w, rec, (size_t)(p - rec));
	} else if (!w->err) {
		w->len += (size_t)(p - s);
		w->bytes += (size_t)(p - s);
	}
}

int mpw_flush(struct mpw *w)
{
	if (!w->err)
		drain(w);
	return w->err;
}

int mpw_finish(struct mpw *w)
{
	static const unsigned char epi = LJM_EPILOGUE;
	mpw_begin_events(w); /* An empty profile still needs both parts. */
	put_raw(w, &epi, 1);
	return mpw_flush(w);
}
