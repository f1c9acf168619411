/* One process's snapshot (heap -p, each of --all's, --heap-at-end's
 * file): its VMs found (target/vmscan.c), copied at one instant
 * (capture.c), written, reported; and a snapshot FILE joined with a trace
 * (--with). Below heap.c's command line and all.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/exitcode.h"
#include "format/info.h"
#include "report/report.h"
#include "util/esc.h"
#include "heap/heap.h"
#include "streams/outfile.h"
#include "target/proc.h"
#include "target/vmscan.h"

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
	/* an entry without the heap walker's offsets */
	for (size_t i = 0; i < sc.n; i++)
		if (!sc.v[i].var->h.gg_size) {
			fprintf(stderr, "luamemtrace heap: PID %d: %s: no heap snapshot for this "
				"layout yet (docs/variants.md)\n", (int)pid, sc.v[i].var->name);
			vm_scan_free(&sc);
			pmaps_free(&m);
			proc_unbind(pid, pidfd);
			close(pidfd);
			return LMT_ERR;
		}
	if (!(hs = calloc(sc.n, sizeof(*hs))))
		rc = fail("memory", ENOMEM);
	else if ((rc = heap_capture(pid, pidfd, &m, &sc, o->variant,
				       (o->stopped ? HCAP_STOPPED : 0) | (o->nofork ? HCAP_NO_FORK : 0), hs, &cap)) ==
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

int heap_file_with(const char *path, const struct hopts *o)
{
	struct report *rp = NULL;
	int rc, trc;

	if ((trc = with_trace(o->trace, &rp)) != LMT_OK && trc != LMT_LOSSY) {
		report_free(rp);
		return trc;
	}
	rc = from_file(path, &o->view, rp, o->trace);
	report_free(rp);
	return rc == LMT_OK ? trc : rc;
}
