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
#include "util/clock.h"
#include "heap/heap.h"
#include "streams/outfile.h"
#include "target/proc.h"
#include "target/vmscan.h"

static int usage(const char *msg)
{
	fprintf(stderr, "luamemtrace heap: %s\n"
			"usage: luamemtrace heap -p PID [-o FILE [-f]] [--variant NAME] [--top N]\n"
			"       luamemtrace heap [--top N] FILE|DIR...\n"
			"       luamemtrace heap --flamegraph FILE|DIR... > heap.html\n"
			"       luamemtrace heap [--top N] --diff A B\n"
			"       luamemtrace heap --chrome FILE > heap.heapsnapshot\n", msg);
	return LMT_USAGE;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "luamemtrace heap: %s: %s\n", what, strerror(err));
	return LMT_ERR;
}

/* Copies the VMs of v while pid is stopped; *pause the stop's ns. */
static int copy_all(pid_t pid, int pidfd, const struct pmaps *m, const struct vmscan *sc,
		    const char *variant, struct heap *hs, int *expired)
{
	struct hstop s;
	uint64_t deadline, ns;
	int err;

	if ((err = hstop_init(&s, pid, pidfd)))
		return fail("starting the guardian", -err);
	if ((err = hstop_stop(&s, pid))) {
		hstop_end(&s);
		return fail(err == -ETIMEDOUT ? "the target did not stop in time (continued)"
					      : "stopping the target", -err);
	}
	deadline = boot_ns() + (uint64_t)LMT_HEAP_STOP_MS * 1000000;

	for (size_t i = 0; i < sc->n; i++) {
		struct vminfo vi;
		char why[256];

		/* Checked again, stopped: it may have closed since the scan. */
		if (vm_at(pid, m, variant, sc->v[i].L, &vi, why, sizeof(why))) {
			fprintf(stderr, "luamemtrace heap: VM 0x%llx gone: %s\n",
				(unsigned long long)sc->v[i].L, why);
			continue;
		}
		if ((err = heap_copy(pid, vi.var, vi.L, deadline, &hs[i])))
			break;

	}
	ns = hstop_cont(&s, expired);
	hstop_end(&s);
	for (size_t i = 0; i < sc->n; i++) {
		hs[i].pause_ns = ns;
		hs[i].stopped_before = s.was_stopped;
		hs[i].pid = (uint32_t)pid;
	}
	return err ? fail("copying the heap", -err) : 0;
}

/* Analyses and reports each copy: an exit status. */
static int report(struct heap *hs, size_t n, const struct hview *view, int expired)
{
	int rc = LMT_OK;

	if (expired)
		printf("the guardian continued the target before the copy ended: "
		       "the copy may mix two instants\n");
	for (size_t i = 0; i < n; i++) {
		if (!hs[i].var)
			continue;
		if (heap_mark(&hs[i]) || heap_dom(&hs[i]) == -ENOMEM)
			return fail("analysing the copy", ENOMEM);
		if (i)
			printf("\n");
		heap_view_text(&hs[i], view, stdout);
		if (memcmp(&hs[i].c, &(struct hcounts){ 0 }, sizeof(hs[i].c)))
			rc = LMT_LOSSY; /* said under "incomplete:" */
	}
	return rc;
}

/* -o FILE: the copies written; 0 or an exit status. */
static int save(const char *path, int force, struct heap *hs, size_t n)
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

int heap_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "variant", required_argument, NULL, 'V' },
		{ "top", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "flamegraph", no_argument, NULL, 'F' },
		{ "diff", no_argument, NULL, 'D' },
		{ "chrome", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	int force = 0;
	struct hview view = { .top = 10 };
	const char *variant = NULL;
	struct vmscan sc;
	struct pmaps m;
	struct heap *hs;
	pid_t pid = 0;
	int c, pidfd, err, rc = LMT_OK, expired = 0, mode = HEAP_TEXT;
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
			view.top = (int)v;
			break;
		}
		case 'V':
			variant = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'f':
			force = 1;
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
	if (!pid && optind < argc && !out)
		return heap_files_main(mode, argv + optind, argc - optind, &view);
	if (mode != HEAP_TEXT)
		return usage("--flamegraph, --diff and --chrome read snapshot files (-o FILE)");
	if (!pid || optind != argc)
		return usage("one process: -p PID, or a snapshot FILE");
	if (out) {
		char bad[256];

		if (outfile_check(out, force, 1, bad, sizeof(bad)))
			return usage(bad);
	}
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return fail("no such process", errno);
	if ((err = proc_bind(pid, pidfd)) || (err = pmaps_load(pid, &m))) {
		close(pidfd);
		return fail("reading the process", -err);
	}
	if ((err = vm_scan(pid, &m, variant, &sc)) || !sc.n) {
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
	else
		rc = copy_all(pid, pidfd, &m, &sc, variant, hs, &expired);
	proc_unbind(pid, pidfd);
	close(pidfd);
	if (hs && rc == LMT_OK && out)
		rc = save(out, force, hs, sc.n);
	if (hs && rc == LMT_OK)
		rc = report(hs, sc.n, &view, expired);
	for (size_t i = 0; hs && i < sc.n; i++)
		heap_free(&hs[i]);
	free(hs);
	vm_scan_free(&sc);
	pmaps_free(&m);
	return rc;
}
