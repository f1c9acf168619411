/* luamemtrace heap -p PID: finds the VMs of PID (target/vmscan.c), stops it under the
 * guardian, copies each VM's objects, continues it, then reports. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/exitcode.h"
#include "format/info.h"
#include "report/report.h"
#include "util/clock.h"
#include "util/esc.h"
#include "heap/heap.h"
#include "streams/outfile.h"
#include "target/proc.h"
#include "target/vmscan.h"

static int usage(const char *msg)
{
	fprintf(stderr, "luamemtrace heap: %s\n"
			"usage: luamemtrace heap -p PID [-o FILE [-f]] [--stopped] [--variant NAME] [--top N]\n"
			"       luamemtrace heap --all [--exe NAME]... [-o DIR [-f]] [--stopped] [--top N]\n"
			"                        [--with TRACE]\n"
			"       luamemtrace heap [--top N] [--with TRACE] FILE\n"
			"       luamemtrace heap [--top N] FILE|DIR...\n"
			"       luamemtrace heap --flamegraph FILE|DIR... > heap.html\n"
			"       luamemtrace heap [--top N] --diff A B\n"
			"       luamemtrace heap --chrome FILE > heap.heapsnapshot\n", msg);
	return LMT_USAGE;
}

/* The process --all is at (0: -p's), named in its errors. */
static pid_t saying;

static int fail(const char *what, int err)
{
	if (saying)
		fprintf(stderr, "luamemtrace heap: PID %d: %s: %s\n", (int)saying, what,
			strerror(err));
	else
		fprintf(stderr, "luamemtrace heap: %s: %s\n", what, strerror(err));
	return LMT_ERR;
}

/* --with TRACE of process pid: 0, or -1 if its sidecar names another
 * (said). Checked before the target is stopped. */
static int trace_of(const char *path, pid_t pid)
{
	struct info in;
	char ep[ESC_MAX(1024)];

	if (info_load(path, &in) > 0 && in.pid && in.pid != pid) {
		fprintf(stderr, "luamemtrace heap: %s is a trace of process %d, not %d\n",
			esc_cstr(ep, sizeof(ep), path), in.pid, (int)pid);
		return -1;
	}
	return 0;
}

/* --with TRACE: the trace read to its end (report.h: report_read) into
 * *rp. An exit status (LMT_LOSSY: the trace is incomplete, said). */
static int with_trace(const char *path, struct report **rp)
{
	if (!(*rp = report_new()))
		return fail("memory", ENOMEM);
	return report_read(*rp, path);
}

/* Analyses and reports each copy (joined with the trace rp if not NULL):
 * an exit status. */
static int report(struct heap *hs, size_t n, const struct hview *view, int expired,
		  struct report *rp, const char *trace)
{
	int rc = LMT_OK;

	if (expired)
		printf("the guardian continued the target before the copy ended: "
		       "the copy may mix two instants\n");
	for (size_t i = 0; i < n; i++) {
		if (!hs[i].var)
			continue;
		if (heap_mark(&hs[i]) || heap_dom(&hs[i]) == -ENOMEM ||
		    (rp && heap_join(&hs[i], rp, trace)))
			return fail("analysing the copy", ENOMEM);
		if (i)
			printf("\n");
		heap_view_text(&hs[i], view, stdout);
		if (memcmp(&hs[i].c, &(struct hcounts){ 0 }, sizeof(hs[i].c)))
			rc = LMT_LOSSY; /* said under "incomplete:" */
	}
	return rc;
}

/* luamemtrace heap FILE */
static int from_file(const char *path, const struct hview *view, struct report *rp,
		     const char *trace)
{
	char why[256];
	struct heap *hs;
	size_t n;
	int rc;
	FILE *f = fopen(path, "rbe");

	if (!f)
		return fail(path, errno);
	if (heap_load(f, &hs, &n, why, sizeof(why))) {
		fclose(f);
		fprintf(stderr, "luamemtrace heap: %s: %s\n", path, why);
		return LMT_ERR;
	}
	fclose(f);
	rc = report(hs, n, view, 0, rp, trace);
	for (size_t i = 0; i < n; i++)
		heap_free(&hs[i]);
	free(hs);
	return rc;
}

int heap_save_path(const char *path, int force, struct heap *hs, size_t n)
{
	char err[256];
	int regular, fd = outfile_create(path, force, 1, &regular, err, sizeof(err)), e;
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "luamemtrace heap: %s\n", err);
		return LMT_ERR;
	}
	if (!(f = fdopen(fd, "wb"))) {
		close(fd);
		return fail(path, errno);
	}
	e = heap_save(f, hs, n);
	if (fclose(f) && !e)
		e = -EIO;
	return e ? fail(path, -e) : 0;
}

int heap_snap(pid_t pid, const struct hopts *o, const char *out, const char *title)
{
	struct hcapture cap = { 0 };
	struct vmscan sc;
	struct pmaps m;
	struct report *rp = NULL;
	struct heap *hs;
	int pidfd, err, rc, trc = LMT_OK;

	saying = title ? pid : 0;
	if (o->trace && trace_of(o->trace, pid))
		return LMT_USAGE;
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return fail("no such process", errno);
	if ((err = proc_bind(pid, pidfd)) || (err = pmaps_load(pid, &m))) {
		close(pidfd);
		return fail("reading the process", -err);
	}
	if ((err = vm_scan(pid, &m, o->variant, &sc)) || !sc.n) {
		if (!err)
			fprintf(stderr, "luamemtrace heap: no LuaJIT VM in process %d\n",
				(int)pid);
		vm_scan_free(&sc);
		pmaps_free(&m);
		proc_unbind(pid, pidfd);
		close(pidfd);
		return err ? fail("scanning for VMs", -err) : LMT_ERR;
	}
	if (!(hs = calloc(sc.n, sizeof(*hs))))
		rc = fail("memory", ENOMEM);
	else if ((rc = heap_capture(pid, pidfd, &m, &sc, o->variant, o->stopped, hs, &cap)) ==
		 LMT_OK)
		heap_capture_say(pid, &cap, stderr);
	proc_unbind(pid, pidfd);
	close(pidfd);
	if (hs && rc == LMT_OK && out)
		rc = heap_save_path(out, o->force, hs, sc.n);
	/* the trace read after the copy: what it has of the instant copied */
	if (hs && rc == LMT_OK && o->trace && (trc = with_trace(o->trace, &rp)) != LMT_OK &&
	    trc != LMT_LOSSY)
		rc = trc;
	if (hs && rc == LMT_OK) {
		if (title)
			printf("%s\n", title);
		rc = report(hs, sc.n, &o->view, cap.expired, rp, o->trace);
	}
	if (rc == LMT_OK)
		rc = trc;
	report_free(rp);
	for (size_t i = 0; hs && i < sc.n; i++)
		heap_free(&hs[i]);
	free(hs);
	vm_scan_free(&sc);
	pmaps_free(&m);
	return rc;
}

int heap_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "variant", required_argument, NULL, 'V' },
		{ "top", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "stopped", no_argument, NULL, 'S' },
		{ "all", no_argument, NULL, 'a' },
		{ "exe", required_argument, NULL, 'e' },
		{ "with", required_argument, NULL, 'w' },
		{ "flamegraph", no_argument, NULL, 'F' },
		{ "diff", no_argument, NULL, 'D' },
		{ "chrome", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct hopts o = { .view = { .top = 10 } };
	const char *out = NULL;
	pid_t pid = 0;
	int c, mode = HEAP_TEXT;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:t:o:f", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT32_MAX)
				return usage("-p takes a process ID");
			pid = (pid_t)v;
			break;
		}
		case 't': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > 100000)
				return usage("--top takes 1 to 100000");
			o.view.top = (int)v;
			break;
		}
		case 'V':
			o.variant = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'f':
			o.force = 1;
			break;
		case 'S':
			o.stopped = 1;
			break;
		case 'a':
			o.all = 1;
			break;
		case 'e': /* NAME[,NAME...], as the tracer's */
			for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ",")) {
				if (o.nexes == HEAP_EXES_MAX)
					return usage("--exe: at most 16 names");
				o.exes[o.nexes++] = t;
			}
			break;
		case 'w':
			o.trace = optarg;
			break;
		case 'F':
		case 'D':
		case 'C':
			if (mode != HEAP_TEXT)
				return usage("one of --flamegraph, --diff, --chrome");
			mode = c == 'F' ? HEAP_FLAME : c == 'D' ? HEAP_DIFF : HEAP_CHROME;
			break;
		default:
			return usage("unknown option");
		}
	}
	if (o.nexes && !o.all)
		return usage("--exe narrows --all");
	if (o.all) {
		if (pid || optind != argc || o.trace || mode != HEAP_TEXT)
			return usage("--all takes no -p, no FILE and no --with");
		return heap_all(&o, out);
	}
	if (!pid && optind == argc - 1 && !out && o.trace && mode == HEAP_TEXT) {
		struct report *rp = NULL;
		int rc, trc = LMT_OK;

		if (o.trace && (trc = with_trace(o.trace, &rp)) != LMT_OK && trc != LMT_LOSSY) {
			report_free(rp);
			return trc;
		}
		rc = from_file(argv[optind], &o.view, rp, o.trace);
		report_free(rp);
		return rc == LMT_OK ? trc : rc;
	}
	if (!pid && optind < argc && !out && !o.trace)
		return heap_files_main(mode, argv + optind, argc - optind, &o.view);
	if (mode != HEAP_TEXT)
		return usage("--flamegraph, --diff and --chrome read snapshot files (-o FILE)");
	if (!pid || optind != argc)
		return usage("one process: -p PID, or a snapshot FILE");
	if (out) {
		char bad[256];

		if (outfile_check(out, o.force, 1, bad, sizeof(bad)))
			return usage(bad);
	}
	return heap_snap(pid, &o, out, NULL);
}
