/* The one reader of the memprof stream: symtab v3 + memprof v3.
 *
 * Stricter than the reference parser where that helps to diagnose damaged
 * streams (symtab header bits 2..6 must be 0, the symtab final byte must be
 * exactly 0x80, ulebs must fit 64 bits in at most 10 octets), and more
 * tolerant where it lets a caller report what was read (a missing epilogue
 * or any EOF mid-record is MPR_TRUNC, not a failure).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/esc.h"
#include "format/memprof_read.h"

#define LJS_MAGIC "ljs"
#define LJM_MAGIC "ljm"
#define FORMAT_VERSION 3
#define PROLOGUE_LEN 7
#define SYMTAB_FINAL 0x80
#define SYMTAB_TYPE_MASK 0x03
#define LJM_EPILOGUE 0x80
#define AEVENT_MASK 0x03
#define ASOURCE_SHIFT 2
#define EV_HEADER_MAX 0x13
#define ULEB_MAX 10

#define BUF_CAP (256u << 10)
/* The longest string-free event: hdr + proto + line + 4 payload ulebs. */
#define FAST_MIN (1 + 6 * ULEB_MAX)

enum { ST_LJS, ST_SYMS, ST_LJM, ST_EVENTS, ST_DONE };

struct mpr {
	int fd;
	FILE *fp;
	int state, status; /* status is meaningful in ST_DONE */
	int eof, ioerr;
	unsigned char *buf;
	size_t pos, end;
	uint64_t base; /* stream offset of buf[0] */
	uint64_t rec_off; /* start of the record being decoded */
	const char *rec_what;
	unsigned char *str;
	size_t strcap;
	uint64_t nsyms, nevents;
	char *name;
	char diag[512];
};

#define OFF(r) ((r)->base + (r)->pos)

static struct mpr *mpr_new(const char *name)
{
	struct mpr *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	name = name ? name : "-";
	r->buf = malloc(BUF_CAP);
	/* Diagnostics name the stream: its name escaped (util/esc.h), once. */
	if ((r->name = malloc(ESC_MAX(strlen(name)))))
		esc_cstr(r->name, ESC_MAX(strlen(name)), name);
	if (!r->buf || !r->name) {
		mpr_close(r);
		return NULL;
	}
	r->fd = -1;
	return r;
}

struct mpr *mpr_open_fd(int fd, const char *name)
{
	struct mpr *r = mpr_new(name);
	if (r)
		r->fd = fd;
	return r;
}

struct mpr *mpr_open_file(FILE *f, const char *name)
{
	struct mpr *r = mpr_new(name);
	if (r)
		r->fp = f;
	return r;
}

void mpr_close(struct mpr *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r->str);
	free(r->name);
	free(r);
}

/* Whether the record mpr_next last returned came from the event stream
 * (a symbol announced among events) rather than the symbol table. */
int mpr_in_events(const struct mpr *r)
{
	return r->state >= ST_EVENTS;
}

const char *mpr_diag(const struct mpr *r) { return r->diag; }
uint64_t mpr_offset(const struct mpr *r) { return OFF(r); }
uint64_t mpr_nsyms(const struct mpr *r) { return r->nsyms; }
uint64_t mpr_nevents(const struct mpr *r) { return r->nevents; }

__attribute__((format(printf, 4, 5)))
static int finish(struct mpr *r, int status, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->diag, sizeof(r->diag), "%s: offset %llu: ", r->name,
			 (unsigned long long)off);
	if (n < 0 || (size_t)n >= sizeof(r->diag))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(r->diag + n, sizeof(r->diag) - (size_t)n, fmt, ap);
	va_end(ap);
	r->state = ST_DONE;
	r->status = status;
	return status;
}

/* EOF inside the current record. An I/O error is not a truncation. */
static int eof_in_record(struct mpr *r)
{
	if (r->ioerr)
		return finish(r, MPR_ERROR, OFF(r), "read error: %s", strerror(r->ioerr));
	return finish(r, MPR_TRUNC, r->rec_off, "truncated stream: end of file inside %s",
		      r->rec_what);
}

/* Makes at least need bytes available if the stream has them; returns
 * what is available. */
static size_t fill(struct mpr *r, size_t need)
{
	size_t avail = r->end - r->pos;
	if (avail >= need || r->eof)
		return avail;
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, avail);
		r->base += r->pos;
		r->pos = 0;
		r->end = avail;
	}
	while (r->end < need && !r->eof) {
		size_t room = BUF_CAP - r->end;
		if (r->fp) {
			size_t k = fread(r->buf + r->end, 1, room, r->fp);
			if (k == 0) {
				r->eof = 1;
				if (ferror(r->fp))
					r->ioerr = errno ? errno : EIO;
			}
			r->end += k;
		} else {
			ssize_t k = read(r->fd, r->buf + r->end, room);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				r->eof = 1;
				if (k < 0)
					r->ioerr = errno;
				k = 0;
			}
			r->end += (size_t)k;
		}
	}
	return r->end - r->pos;
}

static int get_byte(struct mpr *r, unsigned *b)
{
	if (r->pos == r->end && fill(r, 1) == 0)
		return eof_in_record(r);
	*b = r->buf[r->pos++];
	return 0;
}

static int uleb_error(struct mpr *r, uint64_t off, unsigned last)
{
	if (last & 0x80)
		return finish(r, MPR_ERROR, off, "bad uleb128: longer than %d bytes", ULEB_MAX);
	return finish(r, MPR_ERROR, off, "bad uleb128: value exceeds 64 bits");
}

static int get_uleb(struct mpr *r, uint64_t *v)
{
	const uint64_t off = OFF(r);
	uint64_t x = 0;
	unsigned sh = 0;
	for (int i = 0; i < ULEB_MAX; i++, sh += 7) {
		unsigned b = 0;
		int rc = get_byte(r, &b);
		if (rc)
			return rc;
		/* The 10th octet may only carry bit 63. */
		if (i == ULEB_MAX - 1 && (b & 0xfe))
			return uleb_error(r, off, b);
		x |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return uleb_error(r, off, 0x80); /* not reached */
}

/* Decodes without bounds checks: the caller guarantees ULEB_MAX bytes.
 * Returns NULL on a malformed uleb (the slow path then explains it). */
static inline const unsigned char *uleb_fast(const unsigned char *p, uint64_t *v)
{
	uint64_t x = *p & 0x7f;
	if (__builtin_expect(!(*p++ & 0x80), 1)) {
		*v = x;
		return p;
	}
	for (unsigned i = 1, sh = 7; i < ULEB_MAX; i++, sh += 7) {
		const unsigned b = *p++;
		if (i == ULEB_MAX - 1 && (b & 0xfe))
			return NULL;
		x |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = x;
			return p;
		}
	}
	return NULL;
}

static int get_string(struct mpr *r, const char **s, size_t *len)
{
	const uint64_t off = OFF(r);
	uint64_t n;
	size_t got = 0;
	int rc = get_uleb(r, &n);
	if (rc)
		return rc;
	if (n > MPR_STR_MAX)
		return finish(r, MPR_ERROR, off, "string length %llu exceeds the limit of %u MiB",
			      (unsigned long long)n, MPR_STR_MAX >> 20);
	/* Grow with the data actually read, so a huge length claimed by a
	 * short stream doesn't allocate the claim. */
	while (got < n) {
		size_t avail = r->end - r->pos, k;
		if (avail == 0 && (avail = fill(r, 1)) == 0)
			return eof_in_record(r);
		k = n - got < avail ? (size_t)(n - got) : avail;
		if (got + k > r->strcap) {
			size_t cap = r->strcap ? r->strcap : 256;
			unsigned char *p;
			while (cap < got + k)
				cap *= 2;
			if (cap > n)
				cap = (size_t)n;
			p = realloc(r->str, cap);
			if (!p)
				return finish(r, MPR_ERROR, off, "out of memory reading a %llu-byte string",
					      (unsigned long long)n);
			r->str = p;
			r->strcap = cap;
		}
		memcpy(r->str + got, r->buf + r->pos, k);
		r->pos += k;
		got += k;
	}
	*s = n ? (const char *)r->str : "";
	*len = (size_t)n;
	return 0;
}

/* body(0) addr chunk firstline | body(1) addr name | body(2) traceno proto line */
static int get_sym(struct mpr *r, unsigned type, struct mp_sym *sym)
{
	int rc;
	memset(sym, 0, sizeof(*sym));
	sym->kind = (uint8_t)type;
	sym->name = "";
	if ((rc = get_uleb(r, &sym->addr)))
		return rc;
	if (type == MP_SYM_TRACE) {
		if ((rc = get_uleb(r, &sym->proto)) || (rc = get_uleb(r, &sym->line)))
			return rc;
	} else {
		if ((rc = get_string(r, &sym->name, &sym->name_len)))
			return rc;
		if (type == MP_SYM_LFUNC && (rc = get_uleb(r, &sym->line)))
			return rc;
	}
	r->nsyms++;
	return MPR_SYM;
}

static int get_prologue(struct mpr *r, const char *magic, const char *what)
{
	const size_t avail = fill(r, PROLOGUE_LEN);
	const size_t m = avail < 3 ? avail : 3;
	char esc[4 * 3 + 1]; /* 3 bytes, 4 each at most: never cut */
	r->rec_off = OFF(r);
	r->rec_what = what;
	if (memcmp(r->buf + r->pos, magic, m)) {
		/* Quoted: '"' and '\\' escaped too, so the quotes are the bounds. */
		esc_str(esc, sizeof(esc), (const char *)r->buf + r->pos, m, ESC_QUOTE);
		return finish(r, MPR_ERROR, OFF(r), "bad %s magic \"%s\" (want \"%s\")", what, esc,
			      magic);
	}
	if (avail > 3 && r->buf[r->pos + 3] != FORMAT_VERSION)
		return finish(r, MPR_ERROR, OFF(r) + 3, "unsupported %s version %u (want %d)", what,
			      r->buf[r->pos + 3], FORMAT_VERSION);
	if (avail < PROLOGUE_LEN) {
		if (r->ioerr)
			return eof_in_record(r);
		if (avail == 0 && r->state == ST_LJS)
			return finish(r, MPR_ERROR, 0, "empty stream, not a memprof profile");
		if (avail == 0)
			return finish(r, MPR_TRUNC, OFF(r),
				      "truncated stream: end of file after the symtab");
		return finish(r, MPR_TRUNC, OFF(r), "truncated stream: end of file inside the %s prologue",
			      what);
	}
	r->pos += PROLOGUE_LEN;
	return 0;
}

static int next_symtab(struct mpr *r, struct mp_sym *sym)
{
	for (;;) {
		unsigned hdr;
		r->rec_off = OFF(r);
		r->rec_what = "a symtab record";
		if (r->pos == r->end && fill(r, 1) == 0) {
			if (r->ioerr)
				return eof_in_record(r);
			return finish(r, MPR_TRUNC, OFF(r),
				      "truncated stream: end of file inside the symtab");
		}
		hdr = r->buf[r->pos++];
		if (hdr == SYMTAB_FINAL) {
			r->state = ST_LJM;
			return 0;
		}
		if (hdr & ~SYMTAB_TYPE_MASK || (hdr & SYMTAB_TYPE_MASK) > MP_SYM_TRACE)
			return finish(r, MPR_ERROR, r->rec_off, "bad symtab record header 0x%02x", hdr);
		return get_sym(r, hdr, sym);
	}
}

/* The fields of an event of kind from src at r->pos (its header) when
 * FAST_MIN bytes are buffered: unchecked ulebs, each ULEB_MAX bytes at most.
 * MPR_EVENT, or 0 if a uleb is malformed (event_slow words it). */
static int event_fast(struct mpr *r, unsigned kind, unsigned src, struct mp_event *ev)
{
	const unsigned char *p = r->buf + r->pos + 1;

	if (src == MP_SRC_LFUNC) {
		if (!(p = uleb_fast(p, &ev->loc)) || !(p = uleb_fast(p, &ev->line)))
			return 0;
	} else if (src != MP_SRC_INTERNAL) {
		if (!(p = uleb_fast(p, &ev->loc)))
			return 0;
	}
	if (kind & MP_FREE) {
		if (!(p = uleb_fast(p, &ev->oaddr)) || !(p = uleb_fast(p, &ev->osize)))
			return 0;
	}
	if (kind & MP_ALLOC) {
		if (!(p = uleb_fast(p, &ev->naddr)) || !(p = uleb_fast(p, &ev->nsize)))
			return 0;
	}
	r->pos = (size_t)(p - r->buf);
	r->nevents++;
	return MPR_EVENT;
}

/* The same near EOF or for a malformed uleb: a bounds-checked decode
 * that also words the diagnostic. MPR_EVENT or the error's status. */
static int event_slow(struct mpr *r, unsigned kind, unsigned src, struct mp_event *ev)
{
	int rc;

	r->pos++;
	if (src == MP_SRC_LFUNC) {
		if ((rc = get_uleb(r, &ev->loc)) || (rc = get_uleb(r, &ev->line)))
			return rc;
	} else if (src != MP_SRC_INTERNAL) {
		if ((rc = get_uleb(r, &ev->loc)))
			return rc;
	}
	if (kind & MP_FREE) {
		if ((rc = get_uleb(r, &ev->oaddr)) || (rc = get_uleb(r, &ev->osize)))
			return rc;
	}
	if (kind & MP_ALLOC) {
		if ((rc = get_uleb(r, &ev->naddr)) || (rc = get_uleb(r, &ev->nsize)))
			return rc;
	}
	r->nevents++;
	return MPR_EVENT;
}

static int next_event(struct mpr *r, struct mp_sym *sym, struct mp_event *ev)
{
	for (;;) {
		size_t avail = r->end - r->pos;
		unsigned hdr, kind, src;
		if (avail < FAST_MIN)
			avail = fill(r, FAST_MIN);
		r->rec_off = OFF(r);
		r->rec_what = "an event record";
		if (avail == 0) {
			if (r->ioerr)
				return eof_in_record(r);
			return finish(r, MPR_TRUNC, OFF(r),
				      "truncated stream: end of file before the epilogue");
		}
		hdr = r->buf[r->pos];
		kind = hdr & AEVENT_MASK;
		src = hdr >> ASOURCE_SHIFT;
		if (hdr == LJM_EPILOGUE) {
			r->pos++;
			r->state = ST_DONE;
			r->status = MPR_END;
			return MPR_END;
		}
		/* 0x00 and 0x04 (symtab without a symbol source) are no-ops
		 * the reference parser accepts; no writer emits them. */
		if (kind == 0 && src <= MP_SRC_INTERNAL) {
			r->pos++;
			continue;
		}
		if (hdr > EV_HEADER_MAX || src < MP_SRC_INTERNAL) {
			if (hdr >= MP_ALLOC && hdr <= MP_REALLOC)
				return finish(r, MPR_ERROR, r->rec_off,
					      "bad event header 0x%02x (event without a source)",
					      hdr);
			return finish(r, MPR_ERROR, r->rec_off, "bad event header 0x%02x", hdr);
		}
		if (kind == 0) {
			r->pos++;
			r->rec_what = "an event-symtab record";
			return get_sym(r, src - 2, sym);
		}
		*ev = (struct mp_event){ .kind = (uint8_t)kind, .src = (uint8_t)src };
		if (avail >= FAST_MIN && event_fast(r, kind, src, ev))
			return MPR_EVENT;
		return event_slow(r, kind, src, ev);
	}
}

int mpr_next(struct mpr *r, struct mp_sym *sym, struct mp_event *ev)
{
	int rc;
	switch (r->state) {
	case ST_EVENTS:
		return next_event(r, sym, ev);
	case ST_LJS:
		if ((rc = get_prologue(r, LJS_MAGIC, "symtab")))
			return rc;
		r->state = ST_SYMS;
		/* fallthrough */
	case ST_SYMS:
		if ((rc = next_symtab(r, sym)))
			return rc;
		/* The final byte moved us to ST_LJM. */
		/* fallthrough */
	case ST_LJM:
		if ((rc = get_prologue(r, LJM_MAGIC, "memprof")))
			return rc;
		r->state = ST_EVENTS;
		return next_event(r, sym, ev);
	default:
		return r->status;
	}
}

int mpr_run(struct mpr *r, mpr_sym_cb on_sym, mpr_event_cb on_event, void *ud)
{
	struct mp_sym sym;
	struct mp_event ev;
	for (;;) {
		int rc = mpr_next(r, &sym, &ev), stop = 0;
		if (rc == MPR_SYM && on_sym)
			stop = on_sym(ud, &sym);
		else if (rc == MPR_EVENT && on_event)
			stop = on_event(ud, &ev);
		else if (rc != MPR_SYM && rc != MPR_EVENT)
			return rc;
		if (stop)
			return stop;
	}
}
