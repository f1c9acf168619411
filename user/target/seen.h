/* What an unknown LuaJIT build shows, for the line that refuses it: the
 * version string its file holds (target/seen.c). */
#ifndef LMT_SEEN_H
#define LMT_SEEN_H

#include <stddef.h>

/* Bytes of a LuaJIT file searched for its version string: LuaJIT keeps it
 * in .rodata, within the first few MiB of even a large static host
 * (Tarantool's 20 MiB executable: at 9 MiB). A larger file is searched
 * this far. */
#define LMT_SEEN_FILE_MAX (64u << 20)
/* The version string's bytes kept ("LuaJIT 2.1.0-beta3": 18). */
#define LMT_SEEN_VERSION_MAX 48

/* The first "LuaJIT N..." (a digit after the space) in the file open at
 * fd, within LMT_SEEN_FILE_MAX bytes, into out (printable; at most
 * LMT_SEEN_VERSION_MAX bytes and len - 1): 0, or -1 if there is none
 * (or len cannot hold "LuaJIT N"). */
int seen_version(int fd, char *out, size_t len);

#endif
