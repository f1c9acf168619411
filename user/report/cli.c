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
	"usage: luamemtrace report [--leak-only [--by-stack]] [--human-readable]\n"
	"                          [--folded [--weight=bytes|events|live]] [--pprof]\n"
	"                          [--flamegraph] FILE\n"
	"\n"
	"Prints the report of a memprof stream (FILE, or - for stdin) like\n"
	"luajit-parse-memprof does.\n"
	"\n"
	"  --leak-only        only HEAP SUMMARY (and ALIASES)\n"
	"  --by-stack         with --leak-only: also what is still held, by the\n"
	"                     full stack that allocated it (needs FILE.stacks)\n"
	"  --human-readable   KiB/MiB/GiB instead of bytes\n"
	"  --folded           folded stacks for flamegraph.pl / speedscope: full\n"
	"                     Lua stacks if FILE.stacks is there (--stacks)\n"
	"  --weight=W         folded weight: bytes allocated (default), allocating\n"
	"                     events, or live bytes at the end of the stream\n"
	"  --pprof            a gzipped pprof heap profile on stdout (go tool pprof,\n"
	"                     Pyroscope): alloc_objects, alloc_space, inuse_objects,\n"
	"                     inuse_space by stack (FILE.stacks) or by location\n"
	"  --flamegraph       a self-contained HTML flame graph on stdout: bytes,\n"
	"                     allocations, held at the end or at the peak, held\n"
	"                     bytes over the stream and a range to restrict it to\n"
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

/* FILE.stacks, if there: its descriptor; -1 if absent (an error with
 * need), -2 having said why. */
static int stacks_open(const char *path, int need)
{
	char sp[4096];
	int fd;

	if (snprintf(sp, sizeof(sp), "%s" STACKS_SUFFIX, path) >= (int)sizeof(sp))
		return need ? -2 : -1;
	fd = open(sp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno != ENOENT || need)) {
		fprintf(stderr, "luamemtrace report: %s: %s%s\n", sp, strerror(errno),
			errno == ENOENT ? " (trace with --stacks)" : "");
		return -2;
	}
	return fd;
}

/* The next event's stack from the companion, defining frames and stacks
 * on the way: 0, or -1 having said why. Past the companion's end (a
 * tracer killed while writing), events have none (*rc says so). */
static int next_stack(struct report *rp, struct skr *sk, uint32_t *sid, enum skr_rc *rc)
{
	struct sk_frame f;
	uint32_t id, n;
	unsigned flags;
	const uint32_t *fr;

	*sid = 0;
	while (*rc == SKR_EVENT || *rc == SKR_FRAME || *rc == SKR_STACK) {
		switch ((*rc = skr_next(sk, &id, &f, sid))) {
		case SKR_EVENT:
			return 0;
		case SKR_FRAME:
			if (report_frame(rp, id, &f))
				goto oom;
			break;
		case SKR_STACK:
			fr = skr_stack(sk, &n, &flags);
			if (report_stack(rp, id, fr, n, flags))
				goto oom;
			break;
		case SKR_ERROR:
			fprintf(stderr, "luamemtrace report: %s\n", skr_diag(sk));
			return -1;
		default:
			break;
		}
	}
	*sid = 0;
	return 0;
oom:
	fprintf(stderr, "luamemtrace report: out of memory\n");
	return -1;
}

/* Reads stream path (stdin if "-") and, if there, its companion into rp
 * (report_stacks_on if it is: before the first event). quiet: no warnings
 * (a first pass). The exit status so far. */
static int read_stream(const char *path, int need_stacks, int quiet, struct report *rp)
{
	enum { BATCH = 64 };
	struct mp_sym sym;
	struct mp_event batch[BATCH];
	uint32_t sids[BATCH];
	size_t nbatch = 0;
	int skfd = -1, fd, rc, status = LMT_OK;
	struct skr *sk = NULL;
	struct mpr *r = NULL;
	enum skr_rc skrc = SKR_EVENT;

	if (!strcmp(path, "-")) {
		fd = 0;
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "luamemtrace report: %s: %s\n", path, strerror(errno));
		return LMT_ERR;
	}
	if (!(r = mpr_open_fd(fd, path))) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		status = LMT_ERR;
		goto out;
	}
	if (fd > 0 && (skfd = stacks_open(path, need_stacks)) == -2) {
		status = LMT_ERR;
		goto out;
	}
	if (skfd >= 0 && !(sk = skr_open_fd(skfd))) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		status = LMT_ERR;
		goto out;
	}
	if (sk)
		report_stacks_on(rp);
	/* Events go in batches (see report_events); a symbol record flushes
	 * the batch first, as naming depends on stream order. */
	for (;;) {
		rc = mpr_next(r, &sym, &batch[nbatch]);
		if (rc == MPR_EVENT && sk && next_stack(rp, sk, &sids[nbatch], &skrc)) {
			status = LMT_ERR;
			goto out;
		}
		if (rc == MPR_EVENT && ++nbatch < BATCH)
			continue;
		report_events_stk(rp, batch, sk ? sids : NULL, nbatch);
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
	if (quiet)
		goto out;
	if (rc == MPR_TRUNC) {
		fprintf(stderr, "luamemtrace report: warning: %s; reporting the %" PRIu64
				" events read\n",
			mpr_diag(r), mpr_nevents(r));
		status = LMT_LOSSY;
	}
	if (fd > 0 && sidecar_warns(path))
		status = LMT_LOSSY;
	if (sk && skrc == SKR_TRUNC && rc == MPR_END) {
		fprintf(stderr, "luamemtrace report: warning: %s" STACKS_SUFFIX ": %s; "
			"events after it have no stack\n", path, skr_diag(sk));
		status = LMT_LOSSY;
	}
out:
	mpr_close(r);
	skr_close(sk);
	if (skfd >= 0)
		close(skfd);
	if (fd > 0)
		close(fd);
	return status;
}

/* --flamegraph: a first pass finds the peak and the events' count; the
 * report is made by the second, which knows them. NB buckets of events
 * over time. */
enum { NB = 200 };

static int temporal_pass(const char *path, struct report *rp)
{
	struct report *p1 = report_new();
	uint64_t n, bytes;
	uint32_t peak;
	int status;

	if (!p1) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		return LMT_ERR;
	}
	status = read_stream(path, 0, 1, p1);
	report_peak(p1, &n, &peak, &bytes);
	report_free(p1);
	if (status == LMT_ERR)
		return status;
	if (report_temporal(rp, n < NB ? (n ? (uint32_t)n : 1) : NB, n, peak)) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		return LMT_ERR;
	}
	return LMT_OK;
}

int report_main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "leak-only", no_argument, NULL, 'l' },
		{ "by-stack", no_argument, NULL, 'S' },
		{ "human-readable", no_argument, NULL, 'H' },
		{ "folded", no_argument, NULL, 'f' },
		{ "weight", required_argument, NULL, 'w' },
		{ "pprof", no_argument, NULL, 'P' },
		{ "flamegraph", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_opts o = { 0 };
	int leak = 0, fold = 0, pp = 0, fg = 0, weight_set = 0, c, status = LMT_OK;
	const char *path;
	struct report *rp;

	opterr = 0;
	optind = 0; /* full re-initialisation (glibc): main may have parsed before */
	while ((c = getopt_long(argc, argv, "+:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			leak = 1;
			break;
		case 'S':
			o.by_stack = 1;
			break;
		case 'H':
			o.human = 1;
			break;
		case 'f':
			fold = 1;
			break;
		case 'P':
			pp = 1;
			break;
		case 'F':
			fg = 1;
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
	if (pp + fg + fold + leak > 1 || ((pp || fg) && o.human))
		return usage_error("--pprof, --flamegraph, --folded and --leak-only go alone (--human-readable with --leak-only or the standard report)");
	if (pp && isatty(1))
		return usage_error("--pprof writes a binary profile: redirect stdout to a file");
	if (weight_set && !fold)
		return usage_error("--weight needs --folded");
	if (o.by_stack && !leak)
		return usage_error("--by-stack goes with --leak-only");
	o.format = pp ? REPORT_PPROF : fg ? REPORT_FLAMEGRAPH : fold ? REPORT_FOLDED :
		   leak ? REPORT_LEAK_ONLY : REPORT_STANDARD;

	path = argv[optind];
	if (fg && !strcmp(path, "-"))
		return usage_error("--flamegraph reads FILE twice: not stdin");
	o.title = path;
	if (!(rp = report_new())) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		return LMT_ERR;
	}
	if ((fg && (status = temporal_pass(path, rp)) == LMT_ERR) ||
	    (status = read_stream(path, o.by_stack, 0, rp)) == LMT_ERR)
		goto out;
	if (report_print(rp, stdout, &o) || fflush(stdout)) {
		fprintf(stderr, "luamemtrace report: %s\n",
			ferror(stdout) ? "error writing the report" : "out of memory");
		status = LMT_ERR;
	}
out:
	report_free(rp);
	return status;
}
