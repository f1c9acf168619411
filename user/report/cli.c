/* `luamemtrace report`: the command line, the stream read front to back
 * into the aggregate, the sidecar's warnings; and report_print, the
 * dispatcher that picks the output (a leaf: text, folded, pprof, flame). */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <unistd.h>
#include "util/esc.h"
#include "format/info.h"
#include "format/caps.h"
#include "format/memprof_read.h"

#include "format/exitcode.h"
#include "flame.h"
#include "folded.h"
#include "live.h"
#include "pprof.h"
#include "text.h"

static const char usage_text[] =
	"usage: luamemtrace report [--leak-only [--by-stack]] [--human-readable]\n"
	"                          [--folded [--weight=bytes|events|live]] [--pprof]\n"
	"                          [--flamegraph] FILE...\n"
	"\n"
	"Prints the report of a memprof stream (FILE, or - for stdin) like\n"
	"luajit-parse-memprof does. Several FILEs, or a directory of streams\n"
	"(-o DIR/): --pprof and --flamegraph merge them (a process label, a\n"
	"root frame per stream), --folded puts each under a root frame named\n"
	"after it, the text reports come one per stream.\n"
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

/* A path in a message: escaped (util/esc.h), as a file's name is anyone's to
 * choose. Two at a time (a message names at most two). */
static const char *pe(const char *path)
{
	static char buf[2][ESC_MAX(PATH_MAX)];
	static int k;

	k ^= 1;
	return esc_cstr(buf[k], sizeof(buf[k]), path);
}

/* What the stream's sidecar says (format/info.h): 1 if the stream is known to be
 * incomplete, said on stderr. */
static int sidecar_warns(const char *path)
{
	struct info in;
	const int r = info_load(path, &in);

	if (r < 0)
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" is unreadable or not a luamemtrace sidecar: ignored\n", pe(path));
	if (r <= 0)
		return 0;
	if (info_lossy(&in)) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX ": %" PRIu64
			" events, %" PRIu64 " symbol records and %" PRIu64
			" new VMs or dlopens were lost while tracing: the report is "
			"incomplete\n", pe(path), in.lost, in.lost_sym, in.lost_vm);
		return 1;
	}
	if (!strcmp(in.state, "incomplete")) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" says tracing ended on an error (%s): the stream may be "
			"incomplete\n", pe(path), in.end[0] ? in.end : "unknown");
		return 1;
	}
	if (!strcmp(in.state, "running")) {
		fprintf(stderr, "luamemtrace report: warning: %s" INFO_SUFFIX
			" says tracing never ended (the tracer died?): the stream may "
			"be incomplete\n", pe(path));
		return 1;
	}
	return 0;
}

/* A --duty sample (its sidecar says so): rp scaled to estimates of the
 * whole run, said on stderr. The factor; 1 if not a sample. */
static double duty_scale(const char *path, struct report *rp)
{
	struct info in;
	double k;

	if (!strcmp(path, "-") || info_load(path, &in) <= 0 || (k = info_scale(&in)) <= 1)
		return 1;
	report_scale(rp, k);
	fprintf(stderr, "luamemtrace report: %s is a --duty sample (%g%% asked; windows "
		"recorded %.2f of %.2f s): what was allocated is reported as estimates, x%.3f\n",
		pe(path), in.duty, in.sampled, in.duration, k);
	return k;
}

/* The flame graph's title: the stream's name, and whether it estimates. */
static const char *title_of(const char *path, double k, char *buf, size_t len)
{
	if (k <= 1)
		snprintf(buf, len, "%s", pe(path));
	else
		snprintf(buf, len, "%s (estimates: a --duty sample, allocations x%.2f; held: "
			 "the sample's own)", pe(path), k);
	return buf;
}

/* FILE.stacks, if there: its descriptor; -1 if absent (an error with
 * need), -2 having said why. */
static int stacks_open(const char *path, int need)
{
	struct stat st;
	char sp[4096];
	int fd;

	if (snprintf(sp, sizeof(sp), "%s" STACKS_SUFFIX, path) >= (int)sizeof(sp))
		return need ? -2 : -1;
	/* A FIFO or a device planted there must not hang or feed the reader:
	 * opened without blocking, read only if a regular file. */
	fd = open(sp, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && (errno != ENOENT || need)) {
		fprintf(stderr, "luamemtrace report: %s: %s%s\n", pe(sp), strerror(errno),
			errno == ENOENT ? " (trace with --stacks)" : "");
		return -2;
	}
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		fprintf(stderr, "luamemtrace report: %s: not a regular file: not read\n", pe(sp));
		close(fd);
		return -2;
	}
	return fd;
}

/* The next event's stack from the companion, defining frames and stacks
 * on the way: 0, or -1 having said why. Past the companion's end (a
 * tracer killed while writing), events have none (*rc says so). */
static int next_stack(struct report *rp, struct skr *sk, const char *path, uint32_t *sid,
		      enum skr_rc *rc)
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
			switch (report_stack(rp, id, fr, n, flags)) {
			case 0:
				break;
			case -2:
				fprintf(stderr, "luamemtrace report: %s" STACKS_SUFFIX ": its stacks' "
					"names pass %llu MiB: refused\n", pe(path),
					REPORT_KEYS_MAX_BYTES >> 20);
				return -1;
			default:
				goto oom;
			}
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

/* After a stream read to its end (rc: mpr_next's last; fd: 0 for stdin):
 * what made it incomplete, said on stderr. LMT_OK or LMT_LOSSY. */
static int stream_warns(const char *path, int fd, const struct mpr *r, int rc, const struct skr *sk,
			enum skr_rc skrc, const struct report *rp)
{
	int status = LMT_OK;

	if (rc == MPR_TRUNC) {
		fprintf(stderr, "luamemtrace report: warning: %s; reporting the %" PRIu64
				" events read\n",
			mpr_diag(r), mpr_nevents(r));
		status = LMT_LOSSY;
	}
	if (fd > 0 && sidecar_warns(path))
		status = LMT_LOSSY;
	if (report_stacks_cut(rp)) {
		fprintf(stderr, "luamemtrace report: warning: %s" STACKS_SUFFIX ": %llu stacks cut "
			"to their innermost %u frames or %u bytes (under a [cut] root)\n", pe(path),
			(unsigned long long)report_stacks_cut(rp), REPORT_KEY_MAX_FRAMES,
			REPORT_KEY_MAX_BYTES);
		status = LMT_LOSSY;
	}
	if (sk && skrc == SKR_TRUNC && rc == MPR_END) {
		fprintf(stderr, "luamemtrace report: warning: %s" STACKS_SUFFIX ": %s; "
			"events after it have no stack\n", pe(path), skr_diag(sk));
		status = LMT_LOSSY;
	}
	return status;
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
		fprintf(stderr, "luamemtrace report: %s: %s\n", pe(path), strerror(errno));
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
		if (rc == MPR_EVENT && sk && next_stack(rp, sk, path, &sids[nbatch], &skrc)) {
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
	if (!quiet)
		status = stream_warns(path, fd, r, rc, sk, skrc, rp);
out:
	mpr_close(r);
	skr_close(sk);
	if (skfd >= 0)
		close(skfd);
	if (fd > 0)
		close(fd);
	return status;
}

int report_read(struct report *rp, const char *path)
{
	return read_stream(path, 0, 0, rp);
}

/* The streams FILE... name: each file, and in a directory its streams
 * (*.bin, in name order: COMM.PID.vmN.bin). 0, or -1 having said why. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int stream_paths(char **args, int n, char ***out, size_t *nout)
{
	char **v = NULL;
	size_t nv = 0, cap = 0;

	for (int i = 0; i < n; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;
		size_t first = nv;

		if (strcmp(args[i], "-") && !stat(args[i], &st) && S_ISDIR(st.st_mode)) {
			if (!(d = opendir(args[i]))) {
				fprintf(stderr, "luamemtrace report: %s: %s\n", pe(args[i]), strerror(errno));
				goto fail;
			}
			while ((e = readdir(d))) {
				const size_t l = strlen(e->d_name);
				if (l < 5 || strcmp(e->d_name + l - 4, ".bin"))
					continue;
				if (nv == cap && !(v = reallocarray(v, cap = cap ? cap * 2 : 16, sizeof(*v))))
					break;
				if (asprintf(&v[nv], "%s%s%s", args[i],
					     args[i][strlen(args[i]) - 1] == '/' ? "" : "/",
					     e->d_name) < 0)
					break;
				nv++;
			}
			closedir(d);
			if (nv == first) {
				fprintf(stderr, "luamemtrace report: %s: no streams (*.bin) in it\n", pe(args[i]));
				goto fail;
			}
			qsort(v + first, nv - first, sizeof(*v), cmp_str);
			continue;
		}
		if (nv == cap && !(v = reallocarray(v, cap = cap ? cap * 2 : 16, sizeof(*v))))
			goto oom;
		if (!(v[nv] = strdup(args[i])))
			goto oom;
		nv++;
	}
	*out = v;
	*nout = nv;
	return 0;
oom:
	fprintf(stderr, "luamemtrace report: out of memory\n");
fail:
	while (nv)
		free(v[--nv]);
	free(v);
	return -1;
}

/* --flamegraph: a first pass finds the peak and the events' count; the
 * report is made by the second, which knows them. NB buckets of events
 * over time. */
enum { NB = 200 };

static int temporal_pass(const char *path, struct report *rp);

/* A stream's label in a merged view: its file name (escaped), less ".bin". */
static char *label_of(const char *path)
{
	const char *b = strrchr(path, '/');
	const char *base = b ? b + 1 : path;
	char *l = malloc(ESC_MAX(strlen(base)));
	size_t n = l ? strlen(esc_cstr(l, ESC_MAX(strlen(base)), base)) : 0;

	if (n > 4 && !strcmp(l + n - 4, ".bin"))
		l[n - 4] = 0;
	for (char *p = l; p && *p; p++)
		if (*p == ';')
			*p = ','; /* a folded frame holds none */
	return l;
}

static int print_failed(void)
{
	fprintf(stderr, "luamemtrace report: %s\n",
		ferror(stdout) ? "error writing the report" : "out of memory");
	return LMT_ERR;
}

static int report_one(const char *path, struct report_opts *o)
{
	struct report *rp = report_new();
	char title[4200];
	int status;

	if (!rp) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		return LMT_ERR;
	}
	if ((o->format == REPORT_FLAMEGRAPH && (status = temporal_pass(path, rp)) == LMT_ERR) ||
	    (status = read_stream(path, o->by_stack, 0, rp)) == LMT_ERR)
		goto out;
	o->title = title_of(path, duty_scale(path, rp), title, sizeof(title));
	if (report_print(rp, stdout, o) || fflush(stdout))
		status = print_failed();
out:
	report_free(rp);
	return status;
}

/* Several streams: --pprof and --flamegraph merge them (a process label,
 * a root frame per stream), --folded puts each stream's stacks under a
 * root frame of its label, the text reports come one per stream under a
 * "==> FILE <==" line. The worst status of them. */
static int report_many(char **paths, size_t n, struct report_opts *o, const char *title)
{
	struct pp *pp = o->format == REPORT_PPROF ? pprof_new() : NULL;
	struct fl *fl = o->format == REPORT_FLAMEGRAPH ? flame_new() : NULL;
	int status = LMT_OK, st = LMT_OK;
	double kmax = 1, k;
	char tbuf[4200];

	if ((o->format == REPORT_PPROF && !pp) || (o->format == REPORT_FLAMEGRAPH && !fl))
		goto oom;
	for (size_t i = 0; i < n && status != LMT_ERR; i++) {
		struct report *rp = report_new();
		char *label = label_of(paths[i]);

		if (!rp || !label) {
			report_free(rp);
			free(label);
			goto oom;
		}
		o->title = paths[i];
		if ((fl && (st = temporal_pass(paths[i], rp)) == LMT_ERR) ||
		    (st = read_stream(paths[i], o->by_stack, 0, rp)) == LMT_ERR) {
			status = LMT_ERR;
			goto next;
		}
		if ((k = duty_scale(paths[i], rp)) > kmax)
			kmax = k;
		if (pp || fl) {
			report_sync(rp);
			if (pp ? pprof_add(pp, rp, label) : flame_add(fl, rp, label))
				status = print_failed();
		} else {
			if (o->format == REPORT_FOLDED)
				rp->label = label;
			else
				printf("%s==> %s <==\n", i ? "\n" : "", pe(paths[i]));
			if (report_print(rp, stdout, o))
				status = print_failed();
		}
next:
		if (st == LMT_LOSSY && status == LMT_OK)
			status = LMT_LOSSY;
		report_free(rp);
		free(label);
	}
	if (status != LMT_ERR &&
	    ((pp && pprof_write(pp, stdout)) ||
	     (fl && flame_write(fl, stdout, title_of(title, kmax, tbuf, sizeof(tbuf)))) ||
	     fflush(stdout)))
		status = print_failed();
	pprof_free(pp);
	flame_free(fl);
	return status;
oom:
	pprof_free(pp);
	flame_free(fl);
	fprintf(stderr, "luamemtrace report: out of memory\n");
	return LMT_ERR;
}

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
	if (report_temporal(rp, NB, n, peak)) {
		fprintf(stderr, "luamemtrace report: out of memory\n");
		return LMT_ERR;
	}
	return LMT_OK;
}

/* -- The dispatcher: the output o asks for, after the aggregate is whole -- */

int report_print(struct report *rp, FILE *out, const struct report_opts *o)
{
	static const struct report_opts defaults = { 0 };
	int rc;

	report_sync(rp);
	if (!o)
		o = &defaults;
	switch (o->format) {
	case REPORT_FOLDED:
		rc = folded_print(rp, out, o->weight);
		break;
	case REPORT_PPROF:
		rc = pprof_print(rp, out);
		break;
	case REPORT_FLAMEGRAPH:
		rc = flame_print(rp, out, o->title ? o->title : "");
		break;
	default:
		rc = text_print(rp, out, o);
		break;
	}
	if (rp->oom || rp->blk_oom || ferror(out))
		rc = -1;
	return rc ? -1 : 0;
}

/* -- luamemtrace report -- */

/* The options into *o; FILE... start at optind. -1 to go on, else the
 * exit status (--help, or a usage error said on stderr). */
static int args_of(int argc, char **argv, struct report_opts *o)
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
	int leak = 0, fold = 0, pp = 0, fg = 0, weight_set = 0, c;

	opterr = 0;
	optind = 0; /* full re-initialisation (glibc): main may have parsed before */
	while ((c = getopt_long(argc, argv, "+:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			leak = 1;
			break;
		case 'S':
			o->by_stack = 1;
			break;
		case 'H':
			o->human = 1;
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
				o->weight = REPORT_W_BYTES;
			else if (!strcmp(optarg, "events"))
				o->weight = REPORT_W_EVENTS;
			else if (!strcmp(optarg, "live"))
				o->weight = REPORT_W_LIVE;
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
	if (fold && (leak || o->human))
		return usage_error("--folded can't be combined with --leak-only or --human-readable");
	if (pp + fg + fold + leak > 1 || ((pp || fg) && o->human))
		return usage_error("--pprof, --flamegraph, --folded and --leak-only go alone (--human-readable with --leak-only or the standard report)");
	if (pp && isatty(1))
		return usage_error("--pprof writes a binary profile: redirect stdout to a file");
	if (weight_set && !fold)
		return usage_error("--weight needs --folded");
	if (o->by_stack && !leak)
		return usage_error("--by-stack goes with --leak-only");
	o->format = pp ? REPORT_PPROF : fg ? REPORT_FLAMEGRAPH : fold ? REPORT_FOLDED :
		   leak ? REPORT_LEAK_ONLY : REPORT_STANDARD;

	for (int i = optind; i < argc; i++)
		if (fg && !strcmp(argv[i], "-"))
			return usage_error("--flamegraph reads FILE twice: not stdin");
	return -1;
}

int report_main(int argc, char **argv)
{
	struct report_opts o = { 0 };
	char **paths;
	size_t npaths;
	int status;

	if ((status = args_of(argc, argv, &o)) >= 0)
		return status;
	if (stream_paths(argv + optind, argc - optind, &paths, &npaths))
		return LMT_ERR;
	if (npaths > 1)
		status = report_many(paths, npaths, &o, argv[optind]);
	else
		status = report_one(paths[0], &o);
	for (size_t i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
	return status;
}
