/* Caps of the readers of files a target, or another host, may have
 * written: the stacks companion (format/stacks_read.c), the sidecar (format/info.c), and
 * what `report` builds from them (user/report). Input over a cap is
 * refused or cut, and said; never read or built without bound.
 */
#ifndef LMT_READ_CAPS_H
#define LMT_READ_CAPS_H

/* -- Stacks companion ------------------------------------------------------ */

/* Frames in one stack record: the tracer writes at most LMT_STK_MAX (256),
 * so more is not a stack. */
#define SK_MAX_FRAMES 65536
/* Bytes of a builtin's name in a frame record: the tracer cuts them at 64. */
#define SK_MAX_NAME 65536

/* -- Report keys ----------------------------------------------------------- */

/* A folded stack (frames' names joined by ';'): frames and bytes at most.
 * A real one is at most LMT_STK_MAX frames of a few dozen bytes; a stack
 * of 65536 references to a 64 KiB name would make 16 GB. Over either
 * cap the key is cut (its outer frames go, under a "[cut]" root) and the
 * report says how many were. */
#define REPORT_KEY_MAX_FRAMES 1024
#define REPORT_KEY_MAX_BYTES (64 * 1024)
/* All the distinct folded stacks of one stream, in bytes: each may be
 * REPORT_KEY_MAX_BYTES from a few bytes of companion. Over it the
 * companion is refused (malformed), the report fails in one line. */
#define REPORT_KEYS_MAX_BYTES (256ull << 20)

/* -- Sidecar --------------------------------------------------------------- */

/* A line (longer ones are not read: a value is at most its field, escaped,
 * exe's 1023 bytes) and the file (a longer one is not a sidecar). */
#define INFO_LINE_MAX 2048
#define INFO_FILE_MAX 16384
/* A --duty sample's scale (duration / sampled seconds): --duty is 1 to 99
 * percent, about x100 at most; a sidecar saying more is refused, so no
 * count times it leaves the range of the integers it is kept in. */
#define INFO_SCALE_MAX 10000.0

#endif
