/* esc_text: the one escaping rule of every human output, byte for byte. */
#include <stdio.h>
#include <string.h>

#include "util/esc.h"

#include "check.h"

struct out {
	char p[256];
	size_t n;
};

static void put(void *ctx, const char *p, size_t n)
{
	struct out *o = ctx;
	if (o->n + n < sizeof(o->p)) {
		memcpy(o->p + o->n, p, n);
		o->n += n;
	}
}

/* esc_text(in, flags) is exactly want; in may hold NULs (len given). */
static void expect(const char *name, const char *in, size_t len, int flags, const char *want)
{
	struct out o = { .n = 0 };
	char label[200];
	esc_text(put, &o, in, len, flags);
	snprintf(label, sizeof(label), "%s: %s", name, want);
	CHECK(label, o.n == strlen(want) && !memcmp(o.p, want, o.n));
	if (o.n != strlen(want) || memcmp(o.p, want, o.n)) {
		printf("# got:");
		for (size_t i = 0; i < o.n; i++)
			printf(" %02x", (unsigned char)o.p[i]);
		printf("\n");
	}
}

#define E(name, in, flags, want) expect(name, in, sizeof(in) - 1, flags, want)

int main(void)
{
	/* Passed through unchanged. */
	E("empty", "", 0, "");
	E("plain ASCII, backslash kept", "@a/b c\\d.lua:~!\"#", 0, "@a/b c\\d.lua:~!\"#");
	E("2-byte UTF-8 (e acute)", "caf\xc3\xa9", 0, "caf\xc3\xa9");
	E("3-byte UTF-8 (euro)", "\xe2\x82\xac" "5", 0, "\xe2\x82\xac" "5");
	E("4-byte UTF-8 (emoji)", "a\xf0\x9f\x98\x80z", 0, "a\xf0\x9f\x98\x80z");
	E("NBSP is no control", "a\xc2\xa0z", 0, "a\xc2\xa0z");
	E("last code point U+10FFFF", "\xf4\x8f\xbf\xbf", 0, "\xf4\x8f\xbf\xbf");
	E("U+E000 after the surrogates", "\xee\x80\x80", 0, "\xee\x80\x80");

	/* C0 and DEL. */
	E("TAB", "a\tb", 0, "a\\tb");
	E("LF", "a\nb", 0, "a\\nb");
	E("CR", "a\rb", 0, "a\\rb");
	E("ESC", "\x1b[31m", 0, "\\x1b[31m");
	E("NUL", "a\0b", 0, "a\\x00b");
	E("0x01 and 0x1f", "\x01\x1f", 0, "\\x01\\x1f");
	E("DEL", "c\x7f", 0, "c\\x7f");
	E("keep_tab: TAB raw, the rest escaped", "\tx\r\x1b\n", ESC_TAB, "\tx\\r\\x1b\\n");

	/* C1: raw bytes (ill-formed UTF-8) and UTF-8-encoded. */
	E("raw 0x9b (CSI)", "a\x9b" "31m", 0, "a\\x9b31m");
	E("raw 0x80", "\x80", 0, "\\x80");
	E("UTF-8 CSI U+009B", "a\xc2\x9b" "31m", 0, "a\\xc2\\x9b31m");
	E("UTF-8 U+0080", "\xc2\x80", 0, "\\xc2\\x80");
	E("UTF-8 U+009F", "\xc2\x9f", 0, "\\xc2\\x9f");

	/* Ill-formed UTF-8: every byte. */
	E("stray continuation bytes", "a\xbf\x80z", 0, "a\\xbf\\x80z");
	E("overlong 2-byte '/'", "\xc0\xaf", 0, "\\xc0\\xaf");
	E("overlong C1 lead", "\xc1\xbf", 0, "\\xc1\\xbf");
	E("overlong 3-byte '/'", "\xe0\x80\xaf", 0, "\\xe0\\x80\\xaf");
	E("overlong 4-byte", "\xf0\x80\x80\xaf", 0, "\\xf0\\x80\\x80\\xaf");
	E("surrogate U+D800", "\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	E("above U+10FFFF", "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80");
	E("lead 0xf5", "\xf5\x80\x80\x80", 0, "\\xf5\\x80\\x80\\x80");
	E("lead 0xff", "\xff", 0, "\\xff");
	E("truncated 2-byte at the end", "ab\xc3", 0, "ab\\xc3");
	E("truncated 3-byte at the end", "ab\xe2\x82", 0, "ab\\xe2\\x82");
	E("truncated 4-byte at the end", "ab\xf0\x9f\x98", 0, "ab\\xf0\\x9f\\x98");
	E("cut sequence then a valid one", "\xe2\x82\xe2\x82\xac", 0, "\\xe2\\x82\xe2\x82\xac");
	E("bad continuation is ASCII", "\xc3" "A", 0, "\\xc3A");

	/* Quoted text (error messages): quote and backslash escaped too. */
	E("quote mode", "a\"\\\x7f\xc3\xa9", ESC_QUOTE, "a\\x22\\x5c\\x7f\xc3\xa9");
	E("quote mode off", "a\"\\", 0, "a\"\\");

	/* esc_str: a fixed buffer, cut between whole escapes and characters. */
	{
		char b[8];
		CHECK("esc_str fits", !strcmp(esc_str(b, sizeof(b), "a\nb", 3, 0), "a\\nb"));
		CHECK("esc_str cuts text", !strcmp(esc_str(b, sizeof(b), "abcdefghij", 10, 0), "abcdefg"));
		CHECK("esc_str never splits an escape",
		      !strcmp(esc_str(b, sizeof(b), "abcde\x1b", 6, 0), "abcde"));
		CHECK("esc_str never splits a character",
		      !strcmp(esc_str(b, 7, "abcd\xe2\x82\xac", 7, 0), "abcd"));
		CHECK("esc_str stops at the first cut",
		      !strcmp(esc_str(b, sizeof(b), "abcdef\x01z", 8, 0), "abcdef"));
	}
	return fails != 0;
}
