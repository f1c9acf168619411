/* The version string of a LuaJIT file: what LuaJIT prints for -v and
 * keeps as jit.version ("LuaJIT 2.1.0-beta3"), found in the file's bytes
 * (stripped static hosts have no symbol for it). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target/seen.h"

#define CHUNK (1u << 20)
#define TAG "LuaJIT "

/* A version's characters: digits, letters, '.', '-', '_'. */
static int verch(unsigned char c)
{
	return isalnum(c) || c == '.' || c == '-' || c == '_';
}

int seen_version(int fd, char *out, size_t len)
{
	const size_t tl = sizeof(TAG) - 1, blen = CHUNK + LMT_SEEN_VERSION_MAX;
	/* the tag, a digit and the NUL must fit */
	unsigned char *buf = len >= tl + 2 ? malloc(blen) : NULL;
	off_t pos = 0;
	int r = -1;

	if (!buf)
		return -1;
	while (r && pos < (off_t)LMT_SEEN_FILE_MAX) {
		/* Chunks overlap by a version's length: one across a
		 * boundary is seen whole in the next. */
		const size_t want = LMT_SEEN_FILE_MAX - (size_t)pos < blen ?
					    LMT_SEEN_FILE_MAX - (size_t)pos : blen;
		ssize_t got = pread(fd, buf, want, pos);

		if (got <= 0)
			break;
		for (size_t i = 0; r && i + tl < (size_t)got; i++) {
			size_t n = tl;

			if (buf[i] != 'L' || memcmp(buf + i, TAG, tl) ||
			    !isdigit(buf[i + tl]))
				continue;
			while (i + n < (size_t)got && n < LMT_SEEN_VERSION_MAX &&
			       n + 1 < len && verch(buf[i + n]))
				n++;
			memcpy(out, buf + i, n);
			out[n] = 0;
			r = 0;
		}
		if ((size_t)got < want)
			break;
		pos += CHUNK;
	}
	free(buf);
	return r;
}
