/* The tracer's messages: one line each on stderr, "luamemtrace: " first,
 * escaped (util/esc.h) because paths and names in them may come from a
 * target. */
#ifndef LMT_LOG_H
#define LMT_LOG_H

__attribute__((format(printf, 1, 2))) void err1(const char *fmt, ...);

#endif
