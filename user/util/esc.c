/* Escaping for human outputs (the rule is in util/esc.h). */
#include <string.h>

#include "util/esc.h"

/* Length of the well-formed UTF-8 sequence (Unicode table 3-7) that starts
 * a non-ASCII byte at s[0..n), 0 if none does. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	const unsigned c = s[0];
	unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
	size_t len;
	if (c < 0xc2 || c > 0xf4) /* continuation, overlong C0/C1, > U+13FFFF */
		return 0;
	if (c < 0xe0) {
		len = 2;
	} else if (c < 0xf0) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else {
		len = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* > U+10FFFF */
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

void esc_text(esc_put_fn *put, void *ctx, const char *s, size_t n, int flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;
	while (i < n) {
		const unsigned c = u[i];
		size_t k, bad = 1;
		char e[8], *p = e;
		if (c >= 0x20 && c < 0x7f) {
			if (!(flags & ESC_QUOTE) || (c != '"' && c != '\\')) {
				i++;
				continue;
			}
		} else if (c == '\t' && (flags & ESC_TAB)) {
			i++;
			continue;
		} else if (c >= 0x80 && (k = utf8_len(u + i, n - i))) {
			if (c != 0xc2 || u[i + 1] >= 0xa0) {
				i += k;
				continue;
			}
			bad = 2; /* C1 control */
		}
		/* A bad lead byte goes alone: what follows is judged on its
		 * own, and continuation bytes never lead, so they go too. */
		if (i > run)
			put(ctx, s + run, i - run);
		for (; bad; bad--, i++) {
			*p++ = '\\';
			if (u[i] == '\t' || u[i] == '\n' || u[i] == '\r') {
				*p++ = u[i] == '\t' ? 't' : u[i] == '\n' ? 'n' : 'r';
			} else {
				*p++ = 'x';
				*p++ = hex[u[i] >> 4];
				*p++ = hex[u[i] & 15];
			}
		}
		put(ctx, e, (size_t)(p - e));
		run = i;
	}
	if (n > run)
		put(ctx, s + run, n - run);
}

struct fixbuf {
	char *p;
	size_t len, cap;
	int full;
};

static void fix_put(void *ctx, const char *s, size_t n)
{
	struct fixbuf *b = ctx;
	size_t room = b->cap - b->len;

	if (b->full)
		return;
	if (n > room) {
		/* An escape goes whole or not at all; a run of text is cut
		 * between characters (never before a continuation byte). */
		n = *s == '\\' ? 0 : room;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		b->full = 1;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

char *esc_str(char *dst, size_t cap, const char *s, size_t n, int flags)
{
	struct fixbuf b = { dst, 0, cap ? cap - 1 : 0, 0 };

	if (!cap)
		return dst;
	esc_text(fix_put, &b, s, n, flags);
	dst[b.len] = 0;
	return dst;
}

char *esc_cstr(char *dst, size_t cap, const char *s)
{
	return esc_str(dst, cap, s, strlen(s), 0);
}
