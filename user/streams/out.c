/* Output: the streams a trace writes and their sidecars. -o FILE is one
 * stream for one process (its VMs share it, as they did in one stream
 * before); -o DIR is a stream per VM, COMM.PID.vmN.bin, made when the VM
 * is first seen. A stream begins with the C symbols its process has, and
 * ends with its epilogue when its VM's process ends or tracing does. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "streams/out.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/log.h"

#include "format/info.h"
#include "format/memprof_write.h"
#include "streams/outfile.h"
#include "report/report.h"

/* -- Checks ---------------------------------------------------------------- */

/* A directory with streams in it already: refused unless -f. */
static int dir_has_streams(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return 0;
	while (!r && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		r = l > 4 && !strcmp(de->d_name + l - 4, ".bin");
	}
	closedir(d);
	return r;
}

int out_check(struct streams *t)
{
	const struct out_opts *o = &t->o;
	char err[PATH_MAX + 128];
	size_t l = strlen(o->out);

	/* A directory: named so (DIR/), one already, or a new name where
	 * several processes are traced. */
	t->dir = o->out[l ? l - 1 : 0] == '/' ||
		 (!outfile_is_device(o->out) && !access(o->out, F_OK) &&
		  !outfile_dir(o->out, 0, err, sizeof(err))) ||
		 (o->several && access(o->out, F_OK));
	if (t->dir) {
		if (outfile_dir(o->out, 0, err, sizeof(err))) {
			err1("%s", err);
			return -1;
		}
		if (!o->force && dir_has_streams(o->out)) {
			err1("%s holds streams already (-f to replace them, or "
			     "another directory)", o->out);
			return -1;
		}
		return 0;
	}
	if (o->several) {
		err1("%s: several processes write several streams: give a "
		     "directory (-o DIR/)", o->out);
		return -1;
	}
	if (!o->floor && !outfile_is_device(o->out) &&
	    l + sizeof(INFO_SUFFIX) > PATH_MAX) {
		err1("output file name too long");
		return -1;
	}
	if (outfile_check(o->out, o->force, 1, err, sizeof(err))) {
		err1("%s", err);
		return -1;
	}
	if (!o->floor && !outfile_is_device(o->out)) {
		char info[PATH_MAX + 8];
		snprintf(info, sizeof(info), "%s" INFO_SUFFIX, o->out);
		if (outfile_check(info, o->force, 0, err, sizeof(err))) {
			err1("%s", err);
			return -1;
		}
		snprintf(info, sizeof(info), "%s" STACKS_SUFFIX, o->out);
		if (o->stacks && outfile_check(info, o->force, 0, err, sizeof(err))) {
			err1("%s", err);
			return -1;
		}
	}
	return 0;
}

/* -- Streams --------------------------------------------------------------- */

void out_sym_now(void *ctx, const struct mp_sym *s)
{
	struct tout *o = ctx;

	if (!o->finished) {
		if (o->fd >= 0)
			mpw_sym(&o->w, s);
		report_sym(o->rep, s);
	}
}

static void event_now(void *ctx, const struct mp_event *e, uint32_t sid)
{
	struct tout *o = ctx;

	if (o->finished)
		return;
	if (sid)
		sid = stknum_number(&o->sn, sid); /* a held stack's, numbered now */
	if (o->sk)
		skw_event(o->sk, sid);
	if (!o->stk) {
		out_lone_event(o, e);
		return;
	}
	if (o->fd >= 0)
		mpw_event(&o->w, e);
	if (o->tally)
		report_events_stk(o->rep, e, &sid, 1);
	out_count(o, e);
}

/* A record held out of order for want of memory: said once. */
static void merge_oom(struct tout *o)
{
	if (!o->merge_oom++)
		err1("out of memory: %s may have events out of order", o->path);
}

void out_sym(struct tout *o, const struct mp_sym *s)
{
	const int r = merge_sym(o->mg, o->at_src, o->at_key, s);

	if (r < 0)
		merge_oom(o);
	if (r <= 0)
		out_sym_now(o, s);
}

void out_event(struct tout *o, const struct mp_event *e, uint32_t sid)
{
	int r;

	if (!o->mg) { /* one VM's stream: nothing to hold */
		event_now(o, e, sid);
		return;
	}
	r = merge_event(o->mg, o->at_src, o->at_key, e, sid);

	if (r < 0)
		merge_oom(o);
	if (r <= 0)
		event_now(o, e, sid);
}

uint32_t out_stack(struct tout *o, const struct cframe *fr, uint32_t n, unsigned flags)
{
	return stknum_stack(&o->sn, o->mg != NULL, fr, n, flags);
}

void out_at(struct tout *o, const void *src, uint64_t key)
{
	o->at_src = src;
	o->at_key = key;
}

/* The stream has a second VM: merge from now on. -1 out of memory. */
static int out_merge(struct tout *o)
{
	if (!o->mg)
		o->mg = merge_new(&(struct merge_out){ .event = event_now,
						      .sym = out_sym_now, .ctx = o });
	return o->mg ? 0 : -1;
}

/* A process's C symbols go to each of its streams, at once: into one of
 * several VMs (streams/merge.h), ahead of every event held, since a C function
 * one VM names first may be named by another VM's earlier event, still
 * held or not read yet. (An address's meaning changes only if a module is
 * unloaded and another mapped there.) */
void out_owner_sym(struct streams *t, const void *owner, const struct mp_sym *s)
{
	for (unsigned i = 0; i < t->nouts; i++)
		if (t->outs[i]->owner == owner)
			out_sym_now(t->outs[i], s);
}

static int out_add(struct streams *t, struct tout *o)
{
	if (t->nouts == t->outs_cap) {
		unsigned cap = t->outs_cap ? 2 * t->outs_cap : 8;
		struct tout **nv = realloc(t->outs, cap * sizeof(*nv));
		if (!nv)
			return -1;
		t->outs = nv;
		t->outs_cap = cap;
	}
	t->outs[t->nouts++] = o;
	/* The summary prints the top sites of a lone stream only (and none
	 * with --top 0 or -q): without a live view, a second stream ends
	 * the tally, which is ~1/4 of the consumer's time an event. */
	o->tally = t->o.live || (!t->o.quiet && t->o.top > 0 && t->nouts == 1);
	if (!t->o.live && t->nouts == 2)
		t->outs[0]->tally = 0;
	return 0;
}

/* --stacks: the companion beside the stream at path. -1 having said why
 * (the stream is then failed). */
static int stacks_open(struct streams *t, struct tout *out, const char *path)
{
	char err[PATH_MAX + 128];
	int reg;

	snprintf(out->skpath, sizeof(out->skpath), "%s" STACKS_SUFFIX, path);
	out->skfd = outfile_create(out->skpath, t->o.force, 0, &reg, err, sizeof(err));
	if (out->skfd < 0 || !(out->sk = malloc(sizeof(*out->sk)))) {
		err1("%s", out->skfd < 0 ? err : "out of memory");
		if (out->skfd >= 0)
			close(out->skfd);
		out->skfd = -1;
		close(out->fd);
		out->fd = -1;
		out->failed = 1;
		out->finished = 1;
		return -1;
	}
	skw_init(out->sk, out->skfd);
	out->sn.sk = out->sk;
	return 0;
}

/* Makes the stream at path for process p (NULL: none yet), its sidecar
 * beside it, and its head: p's C symbols, then the events prologue. */
static struct tout *out_open(struct streams *t, const char *path, int vm, double duty0)
{
	const struct out_opts *o = &t->o;
	struct tout *out = calloc(1, sizeof(*out));
	char err[PATH_MAX + 128];
	int reg = 0;

	if (!out || !(out->rep = report_new()) || out_add(t, out)) {
		if (out)
			report_free(out->rep);
		free(out);
		err1("out of memory");
		return NULL;
	}
	/* The summary's top sites need no heap stage; a live view (luamemtrace
	 * top) shows what is held. */
	if (!o->live)
		report_no_heap(out->rep);
	out->sn.rep = out->rep;
	snprintf(out->path, sizeof(out->path), "%s", path);
	out->vm = vm;
	out->fd = -1;
	out->wall0 = wall_now();
	out->t0 = now();
	out->duty0 = duty0;
	if (o->floor) { /* writes nothing */
		out->finished = 0;
		mpw_init(&out->w, -1);
		return out;
	}
	out->fd = outfile_create(path, o->force, !t->dir, &reg, err, sizeof(err));
	if (out->fd < 0) {
		err1("%s", err);
		out->failed = 1;
		out->finished = 1;
		return out;
	}
	if (reg)
		snprintf(out->info, sizeof(out->info), "%s" INFO_SUFFIX, path);
	if (reg && o->stacks && stacks_open(t, out, path))
		return out;
	/* Stacks go to the companion beside a file, and to the live report
	 * (luamemtrace top) whatever the output. */
	if ((out->stk = o->stacks != 0))
		report_stacks_on(out->rep);
	mpw_init(&out->w, out->fd);
	return out;
}

/* COMM.PID.vmN.bin; a second process with this PID in one trace (reused,
 * or a new program with --all) is COMM.PID-K.vmN.bin. The process's part
 * is made once, into sname. */
static void stream_name(struct streams *t, const struct out_who *w, char *sname,
			unsigned num, char *buf, size_t len)
{
	const size_t dl = strlen(t->o.out);

	if (!sname[0]) {
		char comm[sizeof(w->comm)];
		size_t i;

		for (i = 0; i + 1 < sizeof(comm) && w->comm[i]; i++)
			comm[i] = isalnum((unsigned char)w->comm[i]) ||
				  w->comm[i] == '-' || w->comm[i] == '_' ?
				  w->comm[i] : '_';
		comm[i] = 0;
		for (unsigned k = 1;; k++) {
			if (k == 1)
				snprintf(sname, LMT_SNAME, "%s.%d",
					 comm[0] ? comm : "lua", (int)w->pid);
			else
				snprintf(sname, LMT_SNAME, "%s.%d-%u",
					 comm[0] ? comm : "lua", (int)w->pid, k);
			if (u64set_add(&t->names, hash_str(sname)) != 0)
				break;
		}
	}
	snprintf(buf, len, "%s%s%s.vm%u.bin", t->o.out,
		 dl && t->o.out[dl - 1] == '/' ? "" : "/", sname, num);
}

/* Whose stream o is: its owner's facts for the sidecar and the summary. */
static void out_own(struct tout *o, const void *owner, const struct out_who *w)
{
	o->owner = owner;
	o->who = *w;
}

struct tout *out_for(struct streams *t, const void *owner, const struct out_who *w,
		     char *sname, unsigned num, double duty0, int *fresh)
{
	char path[PATH_MAX];
	char err[PATH_MAX + 128];
	struct tout *o;

	*fresh = 0;
	if (!t->dir) {
		if (!t->one->owner) {
			/* The one stream's process: its symbols, as
			 * event-symtab records if it began without them. */
			out_own(t->one, owner, w);
			*fresh = 1;
		}
		t->one->nvms++;
		/* A second VM: their records are numbered (bpf/newvm.h,
		 * probes/alloc.c), and merged in that order. */
		if (t->one->nvms == 2 && out_merge(t->one))
			err1("out of memory: %s may have events out of order", t->o.out);
		if (t->one->nvms == 2)
			err1("PID %d has several VMs: they share the one stream %s "
			     "(-o DIR/ writes a stream per VM)", (int)w->pid, t->o.out);
		return t->one;
	}
	if (outfile_dir(t->o.out, access(t->o.out, F_OK) != 0, err, sizeof(err))) {
		err1("%s", err);
		return NULL;
	}
	stream_name(t, w, sname, num, path, sizeof(path));
	if (!(o = out_open(t, path, (int)num, duty0)))
		return NULL;
	o->nvms = 1;
	out_own(o, owner, w);
	*fresh = o->fd >= 0;
	return o;
}

int out_one(struct streams *t, const void *owner, const struct out_who *w, double duty0)
{
	t->one = out_open(t, t->o.out, -1, duty0);
	if (!t->one || (t->one->fd < 0 && !t->o.floor))
		return -1;
	/* -p: the process's symbols lead the stream, as in the in-VM
	 * profiler's. */
	if (owner)
		out_own(t->one, owner, w);
	return 0;
}

void out_begin(struct tout *o)
{
	if (o->begun)
		return;
	o->begun = 1;
	if (o->fd >= 0)
		mpw_begin_events(&o->w);
}

/* -- Ends ------------------------------------------------------------------ */

void out_sidecar(struct streams *t, struct tout *o, const char *text)
{
	char err[PATH_MAX + 64];

	if (!o->info[0])
		return;
	if (!o->info_made) {
		int reg, fd = outfile_create(o->info, t->o.force, 0, &reg, err,
					     sizeof(err));
		if (fd >= 0) {
			size_t l = strlen(text);
			if (write(fd, text, l) != (ssize_t)l)
				snprintf(err, sizeof(err), "cannot write %s: %s",
					 o->info, strerror(errno));
			else
				o->info_made = 1;
			close(fd);
		}
		if (!o->info_made)
			err1("%s", err);
		return;
	}
	/* A full disk is said once, for the stream. */
	if (outfile_replace(o->info, text, strlen(text), err, sizeof(err)) &&
	    !o->failed)
		err1("%s", err);
}

int out_finish(struct tout *o, const char *end)
{
	int r;

	if (o->finished)
		return 0;
	merge_free(o->mg); /* what it holds, in order */
	o->mg = NULL;
	stknum_free_held(&o->sn);
	o->finished = 1;
	o->end = end;
	o->secs = now() - o->t0;
	if (o->fd < 0)
		return 0;
	r = mpw_finish(&o->w);
	if (r) {
		err1("cannot write %s: %s", o->path, strerror(r));
		o->failed = 1;
	}
	if (o->sk) {
		if ((r = skw_finish(o->sk))) {
			err1("cannot write %s: %s", o->skpath, strerror(r));
			o->failed = 1;
		}
		close(o->skfd);
		free(o->sk);
		o->sk = o->sn.sk = NULL;
		stknum_free(&o->sn);
	}
	return 1;
}

void out_close(struct tout *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}
