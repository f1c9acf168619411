/* The one reader of the stacks companion (format/stacks.h, docs/stacks-format.md).
 * A file cut short (a tracer killed mid-write) reads up to its last whole
 * record and says so (SKR_TRUNC).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/caps.h"
#include "format/stacks.h"
#include "format/stacks_bytes.h"


struct skr {
	int fd;
	unsigned char buf[1 << 16];
	size_t pos, len;
	int eof, started, ended;
	int version;        /* 1 or 2 (format/stacks_bytes.h) */
	uint64_t off;       /* file offset of buf[pos] */
	uint64_t left;      /* events left in the current EVENTS record */
	uint32_t nframes, nstacks;
	uint32_t *stk;      /* the last stack */
	uint32_t nstk, stk_cap;
	unsigned flags;
	char *name;
	char diag[160];
};

struct skr *skr_open_fd(int fd)
{
	struct skr *r = calloc(1, sizeof(*r));

	if (r)
		r->fd = fd;
	return r;
}

void skr_close(struct skr *r)
{
	if (!r)
		return;
	free(r->stk);
	free(r->name);
	free(r);
}

const char *skr_diag(const struct skr *r)
{
	return r->diag;
}

/* At least n bytes buffered: 0, or -1 at the end of the file. */
static int need(struct skr *r, size_t n)
{
	while (r->len - r->pos < n) {
		ssize_t k;

		if (r->eof)
			return -1;
		if (r->pos) {
			memmove(r->buf, r->buf + r->pos, r->len - r->pos);
			r->len -= r->pos;
			r->pos = 0;
		}
		k = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			r->eof = 1;
		else
			r->len += (size_t)k;
	}
	return 0;
}

/* A uleb at the cursor: 0, -1 at the end of the file, -2 malformed. */
static int get_uleb(struct skr *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		unsigned char b;

		if (need(r, 1))
			return -1;
		b = r->buf[r->pos++];
		r->off++;
		if (shift == 63 && b > 1)
			return -2;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -2;
}

static int get_byte(struct skr *r, unsigned char *b)
{
	if (need(r, 1))
		return -1;
	*b = r->buf[r->pos++];
	r->off++;
	return 0;
}

static enum skr_rc bad(struct skr *r, int e, const char *what)
{
	if (e == -1) {
		snprintf(r->diag, sizeof(r->diag), "stacks file cut short in %s at "
			 "byte %llu", what, (unsigned long long)r->off);
		return SKR_TRUNC;
	}
	snprintf(r->diag, sizeof(r->diag), "malformed stacks file: bad %s at byte %llu",
		 what, (unsigned long long)r->off);
	return SKR_ERROR;
}

static enum skr_rc frame(struct skr *r, uint32_t *id, struct sk_frame *f)
{
	unsigned char src;
	uint64_t n;
	int e;

	memset(f, 0, sizeof(*f));
	if ((e = get_byte(r, &src)))
		return bad(r, e, "a frame");
	f->src = src;
	switch (src) {
	case MP_SRC_LFUNC:
		if ((e = get_uleb(r, &f->addr)) || (e = get_uleb(r, &f->line)))
			return bad(r, e, "a frame");
		break;
	case SK_SRC_LNAMED: /* version 2: a Lua frame, then its name */
		if (r->version < 2)
			return bad(r, -2, "frame kind");
		f->src = MP_SRC_LFUNC;
		if ((e = get_uleb(r, &f->addr)) || (e = get_uleb(r, &f->line)))
			return bad(r, e, "a frame");
		goto name;
	case MP_SRC_CFUNC:
	case MP_SRC_TRACE:
		if ((e = get_uleb(r, &f->addr)))
			return bad(r, e, "a frame");
		break;
	case MP_SRC_INTERNAL:
		break;
	case SK_NAMED:
	name:
		if ((e = get_uleb(r, &n)))
			return bad(r, e, "a frame");
		if (n > SK_MAX_NAME || (src == SK_SRC_LNAMED && !n))
			return bad(r, -2, "a frame's name");
		free(r->name);
		if (!(r->name = malloc(n ? n : 1)))
			return bad(r, -2, "a frame (out of memory)");
		if (need(r, n))
			return bad(r, -1, "a frame");
		memcpy(r->name, r->buf + r->pos, n);
		r->pos += n;
		r->off += n;
		f->name = r->name;
		f->name_len = n;
		break;
	default:
		return bad(r, -2, "frame kind");
	}
	*id = ++r->nframes;
	return SKR_FRAME;
}

static enum skr_rc stack(struct skr *r, uint32_t *id)
{
	unsigned char flags;
	uint64_t n, fid;
	int e;

	if ((e = get_byte(r, &flags)) || (e = get_uleb(r, &n)))
		return bad(r, e, "a stack");
	if (n > SK_MAX_FRAMES)
		return bad(r, -2, "a stack's size");
	if (n > r->stk_cap) {
		uint32_t *nv = realloc(r->stk, n * sizeof(*nv));
		if (!nv)
			return bad(r, -2, "a stack (out of memory)");
		r->stk = nv;
		r->stk_cap = (uint32_t)n;
	}
	for (uint64_t i = 0; i < n; i++) {
		if ((e = get_uleb(r, &fid)))
			return bad(r, e, "a stack");
		if (!fid || fid > r->nframes)
			return bad(r, -2, "frame number in a stack");
		r->stk[i] = (uint32_t)fid;
	}
	r->nstk = (uint32_t)n;
	r->flags = flags;
	*id = ++r->nstacks;
	return SKR_STACK;
}

enum skr_rc skr_next(struct skr *r, uint32_t *id, struct sk_frame *f, uint32_t *sid)
{
	unsigned char rec;
	uint64_t v;
	int e;

	if (!r->started) {
		if (need(r, SK_MAGIC_LEN) ||
		    (memcmp(r->buf + r->pos, SK_MAGIC, SK_MAGIC_LEN) &&
		     memcmp(r->buf + r->pos, SK_MAGIC_V1, SK_MAGIC_LEN))) {
			snprintf(r->diag, sizeof(r->diag), "not a luamemtrace stacks file");
			return SKR_ERROR;
		}
		r->version = r->buf[r->pos + SK_MAGIC_LEN - 1];
		r->pos += SK_MAGIC_LEN;
		r->off += SK_MAGIC_LEN;
		r->started = 1;
	}
	for (;;) {
		if (r->ended)
			return SKR_EOF;
		if (r->left) {
			if ((e = get_uleb(r, &v)))
				return bad(r, e, "an event's stack");
			if (v > r->nstacks)
				return bad(r, -2, "stack number of an event");
			r->left--;
			*sid = (uint32_t)v;
			return SKR_EVENT;
		}
		if (get_byte(r, &rec)) {
			snprintf(r->diag, sizeof(r->diag), "stacks file cut short "
				 "(no end record) at byte %llu", (unsigned long long)r->off);
			return SKR_TRUNC;
		}
		switch (rec) {
		case SK_REC_FRAME:
			return frame(r, id, f);
		case SK_REC_STACK:
			return stack(r, id);
		case SK_REC_EVENTS:
			if ((e = get_uleb(r, &r->left)))
				return bad(r, e, "an events record");
			continue;
		case SK_REC_END:
			r->ended = 1;
			return SKR_EOF;
		default:
			return bad(r, -2, "record kind");
		}
	}
}

const uint32_t *skr_stack(const struct skr *r, uint32_t *n, unsigned *flags)
{
	*n = r->nstk;
	*flags = r->flags;
	return r->stk;
}
