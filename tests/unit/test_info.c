/* The stream's sidecar (user/format/info.c): what the tracer writes, report reads
 * back exactly; what is not a sidecar is refused. */
#include <stdio.h>
#include <string.h>

#include "format/info.h"

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
	      !strcmp(out.exe, "/usr/bin/luajit\\nstate: complete"));
	CHECK("parse: times", out.duration == 1.25 && out.start == 1795480300.5);
	CHECK("lossy", info_lossy(&out));
	CHECK("nspid: no line for a process in our PID namespace",
	      !strstr(buf, "nspid") && out.nspid == 0);
	in.lost = in.lost_sym = in.lost_vm = 0;
	n = info_format(&in, buf, sizeof(buf));
	CHECK("not lossy", !info_parse(buf, n, &out) && !info_lossy(&out));
	in.nspid = 7;
	n = info_format(&in, buf, sizeof(buf));
	CHECK("nspid: a container's, round trip", strstr(buf, "\nnspid: 7\n") &&
	      !info_parse(buf, n, &out) && out.nspid == 7 && out.pid == 4242);
	in.nspid = 0;
	CHECK("refused: a bad nspid", P(INFO_MAGIC "\nnspid: -1\nstate: x\n", &out));
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
	/* A hostile name: escaped (util/esc.h) when written, and when read. */
	strcpy(in.comm, "x\033]0;\302\233\233");
	n = info_format(&in, buf, sizeof(buf));
	CHECK("format: comm escaped", strstr(buf, "\ncomm: x\\x1b]0;\\xc2\\x9b\\x9b\n") != NULL);
	CHECK("parse: comm as written", !info_parse(buf, n, &out) &&
	      !strcmp(out.comm, "x\\x1b]0;\\xc2\\x9b\\x9b"));
	CHECK("parse: a raw comm escaped",
	      !P(INFO_MAGIC "\ncomm: \033[2J\302\233\nend: a\233b\nstate: x\n", &out) &&
	      !strcmp(out.comm, "\\x1b[2J\\xc2\\x9b") && !strcmp(out.end, "a\\x9bb"));
	/* The scale: finite and at most INFO_SCALE_MAX, or refused. */
	CHECK("refused: a scale of 1e300",
	      P(INFO_MAGIC "\nduration: 1\nduty: 5\nsampled: 1e-300\nstate: x\n", &out));
	CHECK("refused: a scale over the cap",
	      P(INFO_MAGIC "\nduration: 10001\nduty: 5\nsampled: 1\nstate: x\n", &out));
	CHECK("refused: duty over 100",
	      P(INFO_MAGIC "\nduration: 1\nduty: 101\nsampled: 1\nstate: x\n", &out));
	CHECK("scale at the cap", !P(INFO_MAGIC "\nduration: 10000\nduty: 5\nsampled: 1\nstate: x\n",
				     &out) && info_scale(&out) == INFO_SCALE_MAX);
	{
		static char big[INFO_LINE_MAX + 64];
		const size_t ml = strlen(INFO_MAGIC "\nexe: ");
		memcpy(big, INFO_MAGIC "\nexe: ", ml);
		memset(big + ml, 'a', INFO_LINE_MAX);
		memcpy(big + ml + INFO_LINE_MAX, "\nstate: x\n", 10);
		CHECK("refused: a line over INFO_LINE_MAX", info_parse(big, ml + INFO_LINE_MAX + 10, &out));
	}
	return fails != 0;
}
