/* The stream's sidecar (user/info.c): what the tracer writes, report reads
 * back exactly; what is not a sidecar is refused. */
#include <stdio.h>
#include <string.h>

#include "info.h"

#include "check.h"

#define P(lit, out) info_parse(lit, sizeof(lit) - 1, out)

int main(void)
{
	struct info in = { .pid = 4242, .vms = 3, .start = 1795480300.5,
			   .duration = 1.25, .events = 123456789012ULL, .lost = 7,
			   .lost_sym = 2, .lost_vm = 1, .in_flight = 5 }, out;
	char buf[2048];
	size_t n;

	strcpy(in.version, "0.2.0");
	strcpy(in.exe, "/usr/bin/luajit\nstate: complete"); /* a newline in a name */
	strcpy(in.state, "complete");
	strcpy(in.end, "target exited");
	n = info_format(&in, buf, sizeof(buf));
	CHECK("format: fits", n > 0 && n < sizeof(buf));
	CHECK("format: first line names the format",
	      !strncmp(buf, INFO_MAGIC "\n", strlen(INFO_MAGIC) + 1));
	CHECK("format: a name cannot add a line", !strstr(buf, "luajit\nstate"));
	CHECK("parse: round trip", !info_parse(buf, n, &out));
	CHECK("parse: numbers exact", out.pid == 4242 && out.vms == 3 &&
	      out.events == 123456789012ULL && out.lost == 7 && out.lost_sym == 2 &&
	      out.lost_vm == 1 && out.in_flight == 5);
	CHECK("parse: texts", !strcmp(out.state, "complete") &&
	      !strcmp(out.end, "target exited") && !strcmp(out.version, "0.2.0") &&
	      !strcmp(out.exe, "/usr/bin/luajit?state: complete"));
	CHECK("parse: times", out.duration == 1.25 && out.start == 1795480300.5);
	CHECK("lossy", info_lossy(&out));
	in.lost = in.lost_sym = in.lost_vm = 0;
	n = info_format(&in, buf, sizeof(buf));
	CHECK("not lossy", !info_parse(buf, n, &out) && !info_lossy(&out));
	CHECK("unknown keys ignored",
	      !P(INFO_MAGIC "\nfuture: 1\nstate: running\n", &out) &&
	      !strcmp(out.state, "running"));
	CHECK("refused: another magic", P("luamemtrace stream info 2\nstate: x\n", &out));
	CHECK("refused: no state", P(INFO_MAGIC "\nlost: 1\n", &out));
	CHECK("refused: a bad number", P(INFO_MAGIC "\nlost: -1\nstate: x\n", &out));
	CHECK("refused: overflow", P(INFO_MAGIC "\nlost: 99999999999999999999\nstate: x\n", &out));
	CHECK("refused: a NaN duration", P(INFO_MAGIC "\nduration: nan\nstate: x\n", &out));
	CHECK("refused: a negative duration", P(INFO_MAGIC "\nduration: -1\nstate: x\n", &out));
	CHECK("refused: empty", info_parse("", 0, &out));
	return fails != 0;
}
