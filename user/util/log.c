/* The tracer's messages (util/log.h). */
#include <stdarg.h>
#include <stdio.h>

#include "util/esc.h"
#include "util/log.h"

void err1(const char *fmt, ...)
{
	char m[1024], e[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fprintf(stderr, "luamemtrace: %s\n",
		esc_str(e, sizeof(e), m, (size_t)n < sizeof(m) ? (size_t)n : sizeof(m) - 1, 0));
}
