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

#include "trace.h"

#include "info.h"
#include "memprof_write.h"
#include "outfile.h"
#include "report.h"
#include "traces.h"
#include "callstacks.h"

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

int check_output(struct tr *t)
{
	const struct topts *o = t->o;
	char err[PATH_MAX + 128];
	size_t l = strlen(o->out);

	/* A directory: named so (DIR/), one already, or a new name where
	 * several processes are traced. */
	t->dir = o->out[l ? l - 1 : 0] == '/' ||
		 (!outfile_is_device(o->out) && !access(o->out, F_OK) &&
		  !outfile_dir(o->out, 0, err, sizeof(err))) ||
		 ((o->all || o->npids > 1) && access(o->out, F_OK));
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
	if (o->all || o->npids > 1) {
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

static void sym_now(void *ctx, const struct mp_sym *s)
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
		sid = stk_number(o, sid); /* a held stack's, numbered now */
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
		sym_now(o, s);
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

void out_at(struct tout *o, const void *src, uint64_t key)
{
	o->at_src = src;
	o->at_key = key;
}

int out_merge(struct tout *o)
{
	if (!o->mg)
		o->mg = merge_new(&(struct merge_out){ .event = event_now,
						      .sym = sym_now, .ctx = o });
	return o->mg ? 0 : -1;
}

/* A process's C symbols go to each of its streams, at once: into one of
 * several VMs (merge.h), ahead of every event held, since a C function
 * one VM names first may be named by another VM's earlier event, still
 * held or not read yet. (An address's meaning changes only if a module is
 * unloaded and another mapped there.) */
void proc_sym(void *ctx, const struct mp_sym *s)
{
	struct tproc *p = ctx;
	struct tr *t = p->t;

	for (unsigned i = 0; i < t->nouts; i++)
		if (t->outs[i]->p == p)
			sym_now(t->outs[i], s);
}

static int out_add(struct tr *t, struct tout *o)
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
	o->tally = t->o->live || (!t->o->quiet && t->o->top > 0 && t->nouts == 1);
	if (!t->o->live && t->nouts == 2)
		t->outs[0]->tally = 0;
	return 0;
}

/* --stacks: the companion beside the stream at path. -1 having said why
 * (the stream is then failed). */
static int stacks_open(struct tr *t, struct tout *out, const char *path)
{
	char err[PATH_MAX + 128];
	int reg;

	snprintf(out->skpath, sizeof(out->skpath), "%s" STACKS_SUFFIX, path);
	out->skfd = outfile_create(out->skpath, t->o->force, 0, &reg, err, sizeof(err));
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
	return 0;
}

/* Makes the stream at path for process p (NULL: none yet), its sidecar
 * beside it, and its head: p's C symbols, then the events prologue. */
static struct tout *out_open(struct tr *t, const char *path, struct tproc *p,
			     int vm)
{
	const struct topts *o = t->o;
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
	snprintf(out->path, sizeof(out->path), "%s", path);
	out->p = p;
	out->vm = vm;
	out->fd = -1;
	out->wall0 = wall_now();
	out->t0 = now();
	out->duty0 = duty_sampled(t);
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
	out_info(t, out, NULL, 0);
	mpw_init(&out->w, out->fd);
	if (p)
		syms_replay(&p->syms, sym_now, out);
	mpw_begin_events(&out->w);
	return out;
}

/* COMM.PID.vmN.bin; a second process with this PID in one trace (reused,
 * or a new program with --all) is COMM.PID-K.vmN.bin. */
static void stream_name(struct tr *t, const struct tvm *v, char *buf, size_t len)
{
	struct tproc *p = v->p;
	const size_t dl = strlen(t->o->out);

	if (!p->sname[0]) {
		char comm[sizeof(p->comm)];
		size_t i;

		for (i = 0; i + 1 < sizeof(comm) && p->comm[i]; i++)
			comm[i] = isalnum((unsigned char)p->comm[i]) ||
				  p->comm[i] == '-' || p->comm[i] == '_' ?
				  p->comm[i] : '_';
		comm[i] = 0;
		for (unsigned k = 1;; k++) {
			uint64_t h = 1469598103934665603ULL;

			if (k == 1)
				snprintf(p->sname, sizeof(p->sname), "%s.%d",
					 comm[0] ? comm : "lua", (int)p->pid);
			else
				snprintf(p->sname, sizeof(p->sname), "%s.%d-%u",
					 comm[0] ? comm : "lua", (int)p->pid, k);
			for (const char *c = p->sname; *c; c++)
				h = (h ^ (unsigned char)*c) * 1099511628211ULL;
			if (u64set_add(&t->names, h) != 0)
				break;
		}
	}
	snprintf(buf, len, "%s%s%s.vm%u.bin", t->o->out,
		 dl && t->o->out[dl - 1] == '/' ? "" : "/", p->sname, v->num);
}

struct tout *out_for(struct tr *t, struct tvm *v)
{
	char path[PATH_MAX];
	char err[PATH_MAX + 128];

	if (!t->dir) {
		if (!t->one->p) {
			/* The one stream's process: its symbols, as
			 * event-symtab records if it began without them. */
			t->one->p = v->p;
			syms_replay(&v->p->syms, sym_now, t->one);
		}
		t->one->nvms++;
		/* A second VM: their records are numbered (bpf/newvm.h,
		 * attach.c), and merged in that order. */
		if (t->one->nvms == 2 && out_merge(t->one))
			err1("out of memory: %s may have events out of order", t->o->out);
		if (t->one->nvms == 2)
			err1("PID %d has several VMs: they share the one stream %s "
			     "(-o DIR/ writes a stream per VM)", (int)v->p->pid,
			     t->o->out);
		return t->one;
	}
	if (outfile_dir(t->o->out, access(t->o->out, F_OK) != 0, err, sizeof(err))) {
		err1("%s", err);
		return NULL;
	}
	stream_name(t, v, path, sizeof(path));
	{
		struct tout *o = out_open(t, path, v->p, (int)v->num);
		if (o) {
			o->nvms = 1;
			if (o->fd < 0 && !t->o->floor) {
				t->lost_vm++; /* said: its stream cannot be made */
			}
		}
		return o;
	}
}

/* -o FILE: the one stream, made before any probe can fire. */
int out_one(struct tr *t, struct tproc *p)
{
	t->one = out_open(t, t->o->out, NULL, -1);
	if (!t->one || (t->one->fd < 0 && !t->o->floor))
		return -1;
	if (p) {
		/* -p: the process's symbols lead the stream, as in the
		 * in-VM profiler's. */
		t->one->p = p;
	}
	return 0;
}

/* -- Ends ------------------------------------------------------------------ */

void out_info(struct tr *t, struct tout *o, const struct lmt_stats *st, int done)
{
	struct info in = { .pid = o->p ? o->p->pid : 0, .vms = o->nvms,
			   .start = o->wall0, .vm = o->vm,
			   .parent = o->p ? o->p->parent : 0,
			   .duration = done ? o->secs : 0 };
	char buf[INFO_FILE_MAX], err[PATH_MAX + 64];

	if (!o->info[0])
		return;
	snprintf(in.version, sizeof(in.version), "%s", LMT_VERSION);
	if (o->p) {
		snprintf(in.exe, sizeof(in.exe), "%.*s", (int)sizeof(in.exe) - 1,
			 o->p->exe);
		snprintf(in.comm, sizeof(in.comm), "%s", o->p->comm);
	}
	snprintf(in.state, sizeof(in.state), "%s",
		 !done ? "running" : o->failed || t->failed ? "incomplete" : "complete");
	snprintf(in.end, sizeof(in.end), "%s", o->end ? o->end : "");
	if (st) {
		in.events = o->n[1] + o->n[2] + o->n[3];
		losses(t, st, &in);
		in.in_flight = st->parked;
	}
	/* What the windows recorded while this stream was written. */
	if ((in.duty = t->o->duty) > 0)
		in.sampled = duty_sampled(t) - o->duty0;
	info_format(&in, buf, sizeof(buf));
	if (!o->info_made) {
		int reg, fd = outfile_create(o->info, t->o->force, 0, &reg, err,
					     sizeof(err));
		if (fd >= 0) {
			size_t l = strlen(buf);
			if (write(fd, buf, l) != (ssize_t)l)
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
	if (outfile_replace(o->info, buf, strlen(buf), err, sizeof(err)) &&
	    !o->failed)
		err1("%s", err);
}

void out_finish(struct tr *t, struct tout *o, const char *end)
{
	struct lmt_stats st;
	int r;

	if (o->finished)
		return;
	merge_free(o->mg); /* what it holds, in order */
	o->mg = NULL;
	stk_free_held(o);
	o->finished = 1;
	o->end = end;
	o->secs = now() - o->t0;
	if (o->fd < 0)
		return;
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
		o->sk = NULL;
		u64map_free(&o->skframes, NULL);
		u64map_free(&o->skstacks, NULL);
	}
	sum_stats(t, &st);
	out_info(t, o, &st, 1);
	close(o->fd);
	o->fd = -1;
}

/* The process ended (exited, or executed a new program): what its slots
 * hold goes into its streams, which end; what BPF kept of it goes. */
void proc_end(struct tr *t, struct tproc *p, const char *end)
{
	if (p->ended)
		return;
	p->ended = 1;
	p->end = end;
	slots_left(t, (uint32_t)p->pid, 1);
	if (t->dir)
		for (unsigned i = 0; i < t->nouts; i++)
			if (t->outs[i]->p == p)
				out_finish(t, t->outs[i], end);
	proc_links_free(p, 1);
	forget_proc(t, (uint32_t)p->pid);
	u64map_del(&t->pmap, (uint64_t)p->pid | 1ULL << 32);
	for (unsigned i = 0; i < p->nvm; i++) {
		u64map_del(&t->vmap, (uint64_t)p->pid << 32 | p->vms[i]->id);
		vm_state_free(p->vms[i]);
	}
	if (!p->ignored && t->nlive)
		t->nlive--;
	proc_unlock(p);
	proc_unbind(p->pid, p->pidfd);
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
}
