/* `luamemtrace report`: the command line, the stream read front to back,
 * the sidecar's warnings. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <unistd.h>
#include "info.h"
#include "memprof_read.h"

#include "exitcode.h"
#include "report_int.h"

static const char usage_text[] =
	"usage: luamemtrace report [--leak-only] [--human-readable]\n"
	"                          [--folded [--weight=bytes|events|live]] FILE\n"
	"\n"
	"Prints the report of a memprof stream (FILE, or - for stdin) like\n"
	"luajit-parse-memprof does.\n"
	"\n"
	"  --leak-only        only HEAP SUMMARY (and ALIASES)\n"
	"  --human-readable   KiB/MiB/GiB instead of bytes\n"
	"  --folded           folded stacks for flamegraph.pl / speedscope\n"
	"  --weight=W         folded weight: bytes allocated (default), allocating\n"
	"                     events, or live bytes at the end of the stream\n"
	"\n"
	"Exit status: 0 ok, 1 unreadable or malformed stream, 2 usage error,\n"
	"3 report printed from an incomplete stream: truncated, or its FILE.info\n"
	"says events were lost or the trace never ended.\n";

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("luamemtrace report: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try 'luamemtrace report --help')\n", stderr);
	return LMT_USAGE;
}

/* What the stream's sidecar says (info.h): 1 if the stream is known to be
 * incomplete, said on stderr. */
static int sidecar_warns(const char *path)
{
	struct info in;
	const int r = info_load(path, &in);

	if (r < 0)
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" is unreadable or not a luamemtrace sidecar: ignored\n", path);
	if (r <= 0)
		return 0;
	if (info_lossy(&in)) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX ": %" PRIu64
			" events, %" PRIu64 " symbol records and %" PRIu64
			" new VMs or dlopens were lost while tracing: the report is "
			"incomplete\n", path, in.lost, in.lost_sym, in.lost_vm);
		return 1;
	}
	if (!strcmp(in.state, "incomplete")) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" says tracing ended on an error (%s): the stream may be "
			"incomplete\n", path, in.end[0] ? in.end : "unknown");
		return 1;
	}
	if (!strcmp(in.state, "running")) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" says tracing never ended (the tracer died?): the stream may "
			"be incomplete\n", path);
		return 1;
	}
	return 0;
}

int report_main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "leak-only", no_argument, NULL, 'l' },
		{ "human-readable", no_argument, NULL, 'H' },
		{ "folded", no_argument, NULL, 'f' },
		{ "weight", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_opts o = { 0 };
	int leak = 0, fold = 0, weight_set = 0, c, fd, rc, status = LMT_OK;
	const char *path;
	struct mpr *r;
	struct report *rp;
	enum { BATCH = 64 };
	struct mp_sym sym;
	struct mp_event batch[BATCH];
	size_t nbatch = 0;

	opterr = 0;
	optind = 0; /* full re-initialisation (glibc): main may have parsed before */
	while ((c = getopt_long(argc, argv, "+:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			leak = 1;
			break;
		case 'H':
			o.human = 1;
			break;
		case 'f':
			fold = 1;
			break;
		case 'w':
			weight_set = 1;
			if (!strcmp(optarg, "bytes"))
				o.weight = REPORT_W_BYTES;
			else if (!strcmp(optarg, "events"))
				o.weight = REPORT_W_EVENTS;
			else if (!strcmp(optarg, "live"))
				o.weight = REPORT_W_LIVE;
			else
				return usage_error("bad --weight '%s': want bytes, events or live", optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return LMT_OK;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default: {
			const char *a = argv[optind - 1];
			if (!strncmp(a, "--", 2))
				return usage_error("unrecognized option '%s'", a);
			return usage_error("unknown option '-%c'", optopt);
		}
		}
	}
	if (argc == optind)
		return usage_error("missing FILE");
	if (argc - optind > 1)
		return usage_error("expected one FILE, got %d arguments", argc - optind);
	if (fold && (leak || o.human))
		return usage_error("--folded can't be combined with --leak-only or --human-readable");
	if (weight_set && !fold)
		return usage_error("--weight needs --folded");
	o.format = fold ? REPORT_FOLDED : leak ? REPORT_LEAK_ONLY : REPORT_STANDARD;

	path = argv[optind];
	if (!strcmp(path, "-")) {
		fd = 0;
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "luamemtrace report: %s: %s\n", path, strerror(errno));
		return LMT_ERR;
	}
	r = mpr_open_fd(fd, path);
	rp = report_new();
	if (!r || !rp) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		status = LMT_ERR;
		goto out;
	}
	/* Events go in batches (see report_events); a symbol record flushes
	 * the batch first, as naming depends on stream order. */
	for (;;) {
		rc = mpr_next(r, &sym, &batch[nbatch]);
		if (rc == MPR_EVENT && ++nbatch < BATCH)
			continue;
		report_events(rp, batch, nbatch);
		nbatch = 0;
		if (rc == MPR_SYM)
			report_sym(rp, &sym);
		else if (rc != MPR_EVENT)
			break;
	}
	if (rc == MPR_ERROR) {
		fprintf(stderr, "luamemtrace report: %s\n", mpr_diag(r));
		status = LMT_ERR;
		goto out;
	}
	if (rc == MPR_TRUNC) {
		fprintf(stderr, "luamemtrace report: warning: %s; reporting the %" PRIu64
				" events read\n",
			mpr_diag(r), mpr_nevents(r));
		status = LMT_LOSSY;
	}
	if (fd > 0 && sidecar_warns(path))
		status = LMT_LOSSY;
	if (report_print(rp, stdout, &o) || fflush(stdout)) {
		fprintf(stderr, "luamemtrace report: %s\n",
			ferror(stdout) ? "error writing the report" : "out of memory");
		status = LMT_ERR;
	}
out:
	report_free(rp);
	mpr_close(r);
	if (fd > 0)
		close(fd);
	return status;
}
