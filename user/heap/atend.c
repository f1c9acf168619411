/* luamemtrace --heap-at-end: as tracing ends, its probes still there, each
 * traced process's heap is copied as `luamemtrace heap -p PID -o FILE`
 * copies it, into a snapshot beside its streams, for `heap --with`
 * (join.c). The trace goes on for the milliseconds until its probes go:
 * what the target does after its copy is in the trace too (docs/heap.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/exitcode.h"
#include "heap/heap.h"
#include "session/session.h"
#include "target/proc.h"
#include "target/vmscan.h"
#include "streams/outfile.h"
#include "util/log.h"

/* The snapshot's path: -o FILE: FILE.lmh; -o DIR/: DIR/COMM.PID.lmh
 * (the process's streams' names, less .vmN.bin). 0, or -1 too long. */
static int snap_path(const struct tr *t, const struct tproc *p, char *buf, size_t len)
{
	const char *out = t->o->out;
	size_t dl = strlen(out);
	int n;

	if (t->st.dir)
		n = snprintf(buf, len, "%s%s%s.lmh", out, dl && out[dl - 1] == '/' ? "" : "/",
			     p->sname[0] ? p->sname : "lua");
	else
		n = snprintf(buf, len, "%s.lmh", out);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* One process: 0 or an exit status (said). */
static int snap_one(struct tr *t, struct tproc *p, const char *path)
{
	struct pmaps m;
	struct vmscan sc;
	struct heap *hs = NULL;
	struct hcapture cap = { 0 };
	int err, rc;

	if ((err = pmaps_load(p->pid, &m))) {
		if (err == -ESRCH || err == -ENOENT)
			err1("--heap-at-end: PID %d ended before tracing did: no heap",
			     (int)p->pid);
		else
			err1("--heap-at-end: PID %d: reading its maps: %s", (int)p->pid,
			     strerror(-err));
		return LMT_ERR;
	}
	if ((err = vm_scan(p->pid, &m, t->o->variant, &sc)) || !sc.n) {
		err1("--heap-at-end: PID %d: %s", (int)p->pid,
		     err ? strerror(-err) : "no LuaJIT VM left");
		rc = LMT_ERR;
		goto out;
	}
	if (!(hs = calloc(sc.n, sizeof(*hs)))) {
		rc = LMT_ERR;
		goto out;
	}
	/* No fork: the trace, still running, would see its child as one
	 * of the process's (registered, stopped and probed if followed). */
	rc = heap_capture(p->pid, p->pidfd, &m, &sc, t->o->variant, HCAP_NO_FORK, hs, &cap);
	if (rc == LMT_OK)
		rc = heap_save_path(path, t->o->force, hs, sc.n);
	if (rc == LMT_OK && !t->o->quiet)
		err1("heap of PID %d: %s (target stopped %.3f ms%s)", (int)p->pid, path,
		     (double)cap.pause_max / 1e6,
		     cap.expired ? "; the guardian continued it first: the copy may mix two "
			       "instants" : "");
	for (size_t i = 0; i < sc.n; i++)
		heap_free(&hs[i]);
out:
	free(hs);
	vm_scan_free(&sc);
	pmaps_free(&m);
	return rc;
}

void heap_at_end(struct tr *t)
{
	for (struct tproc *p = t->procs; p; p = p->next) {
		char path[PATH_MAX];

		if (!p->attached || p->ignored)
			continue;
		if (p->ended) {
			err1("--heap-at-end: PID %d ended before tracing did: no heap",
			     (int)p->pid);
			continue;
		}
		if (!t->o->out || outfile_is_device(t->o->out) ||
		    snap_path(t, p, path, sizeof(path))) {
			err1("--heap-at-end: PID %d: no file beside its stream for its heap",
			     (int)p->pid);
			continue;
		}
		snap_one(t, p, path);
	}
}
