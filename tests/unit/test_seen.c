/* target/seen.c: the version string of a LuaJIT file, found in its bytes
 * within LMT_SEEN_FILE_MAX, cut to LMT_SEEN_VERSION_MAX. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "target/seen.h"

/* A file of len zero bytes with text at off: its descriptor. */
static int file_with(size_t len, size_t off, const char *text)
{
	char path[] = "/tmp/lmt-seen-XXXXXX";
	int fd = mkstemp(path);
	size_t n = strlen(text);

	if (fd < 0)
		exit(2);
	unlink(path);
	if (ftruncate(fd, (off_t)len) || pwrite(fd, text, n, (off_t)off) != (ssize_t)n)
		exit(2);
	return fd;
}

static int version_is(int fd, const char *want)
{
	char v[LMT_SEEN_VERSION_MAX + 1] = "unset";
	int r = seen_version(fd, v, sizeof(v));

	close(fd);
	return want ? !r && !strcmp(v, want) : r == -1 && !strcmp(v, "unset");
}

int main(void)
{
	const size_t mib = 1u << 20;
	char longv[200];

	CHECK("seen: the version in a small file, up to its first non-version byte",
	      version_is(file_with(4096, 100, "LuaJIT 2.1.0-beta3 -- Copyright"),
			 "LuaJIT 2.1.0-beta3"));
	CHECK("seen: \"LuaJIT \" without a digit after it is not a version; the next is",
	      version_is(file_with(4096, 10, "LuaJIT x LuaJIT 2.0.5\n"), "LuaJIT 2.0.5"));
	CHECK("seen: none", version_is(file_with(4096, 10, "Lua 5.1"), NULL));
	CHECK("seen: across the boundary of the first 1 MiB read",
	      version_is(file_with(3 * mib, mib - 3, "LuaJIT 2.1.1700008891"),
			 "LuaJIT 2.1.1700008891"));
	CHECK("seen: at 40 MiB of a 41 MiB file",
	      version_is(file_with(41 * mib, 40 * mib, "LuaJIT 2.1.0-beta3"),
			 "LuaJIT 2.1.0-beta3"));
	CHECK("seen: past LMT_SEEN_FILE_MAX: not searched",
	      version_is(file_with(LMT_SEEN_FILE_MAX + mib, LMT_SEEN_FILE_MAX + 10,
				   "LuaJIT 2.1.0-beta3"), NULL));
	memset(longv, '1', sizeof(longv) - 1);
	memcpy(longv, "LuaJIT 2", 8);
	longv[sizeof(longv) - 1] = 0;
	{
		char v[LMT_SEEN_VERSION_MAX + 1];
		int fd = file_with(4096, 0, longv);

		CHECK("seen: a version of 199 bytes cut to LMT_SEEN_VERSION_MAX",
		      !seen_version(fd, v, sizeof(v)) && strlen(v) == LMT_SEEN_VERSION_MAX &&
			      !strncmp(v, longv, LMT_SEEN_VERSION_MAX));
		CHECK("seen: ... and to a smaller buffer's length", !seen_version(fd, v, 10) &&
		      !strcmp(v, "LuaJIT 21"));
		strcpy(v, "unset");
		CHECK("seen: a buffer too small for \"LuaJIT N\": none, nothing written",
		      seen_version(fd, v, 8) == -1 && !strcmp(v, "unset"));
		close(fd);
	}
	return fails != 0;
}
