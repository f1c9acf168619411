/* Consume: ring buffer records into the memprof writer and the summary's
 * aggregator, in the order BPF sent them; prototypes' line tables kept to
 * turn bytecode positions into lines; the stops BPF made settled. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>

#include "trace.h"

#include "guard.h"
#include "memprof_write.h"
#include "proc.h"
#include "report.h"

/* -- Stream output ------------------------------------------------------- */

void emit_sym(void *ctx, const struct mp_sym *s)
{
	struct tr *t = ctx;

	if (t->w)
		mpw_sym(t->w, s);
	report_sym(t->rep, s);
}

/* A prototype's line table, as LuaJIT's lj_debug_line reads it. */
struct pline {
	int32_t firstline;
	uint32_t sizebc, numline;
	uint8_t width; /* 1, 2, 4 */
	uint32_t len;
	uint8_t li[];
};

/* lj_debug_line(pt, pos); -1 when pos is past the bytecode (LuaJIT's
 * JLOOP undo case, charged INTERNAL). */
static int64_t pline_line(const struct pline *p, uint64_t pos)
{
	uint64_t i;

	if (pos > p->sizebc)
		return -1;
	if (!p->len && p->sizebc > 1)
		return 0; /* stripped: no line info */
	if (pos == p->sizebc)
		return (int64_t)p->firstline + p->numline;
	if (pos == 0)
		return p->firstline;
	i = (pos - 1) * p->width;
	if (i + p->width > p->len)
		return -1;
	if (p->width == 1)
		return (int64_t)p->firstline + p->li[i];
	if (p->width == 2)
		return (int64_t)p->firstline + (p->li[i] | p->li[i + 1] << 8);
	return (int64_t)p->firstline + (int64_t)((uint32_t)p->li[i] |
		(uint32_t)p->li[i + 1] << 8 | (uint32_t)p->li[i + 2] << 16 |
		(uint32_t)p->li[i + 3] << 24);
}

static void keep_lines(struct tr *t, const struct lmt_proto *p, size_t sz)
{
	struct pline *l;
	int err;

	free(u64map_del(&t->lines, p->addr));
	if (!p->li_width || p->li_len > LMT_LI_MAX ||
	    sz < offsetof(struct lmt_proto, lineinfo) + p->li_len)
		return;
	l = malloc(sizeof(*l) + p->li_len);
	if (!l)
		return;
	l->firstline = p->firstline;
	l->sizebc = p->sizebc;
	l->numline = p->numline;
	l->width = p->li_width;
	l->len = p->li_len;
	memcpy(l->li, p->lineinfo, p->li_len);
	u64map_put(&t->lines, p->addr, l, &err);
	if (err)
		free(l);
}

static void on_proto(struct tr *t, const struct lmt_proto *p, size_t sz)
{
	struct mp_sym s = { .kind = MP_SYM_LFUNC, .addr = p->addr };
	char *full = NULL;
	uint32_t n = p->copied <= LMT_NAME_MAX ? p->copied : LMT_NAME_MAX;

	s.name = p->name;
	s.name_len = n;
	/* Long chunk names (load(string) without a name: the whole source)
	 * are completed from the target; if the string is gone, the prefix
	 * BPF copied is what we have. */
	if (p->len > n && p->len < (64u << 20) && (full = malloc(p->len))) {
		if (!proc_read((pid_t)p->tgid, p->str, full, p->len) &&
		    !memcmp(full, p->name, n)) {
			s.name = full;
			s.name_len = p->len;
		} else {
			t->names_cut++;
		}
	} else if (p->len > n) {
		t->names_cut++;
	}
	/* Built-ins in bytecode have firstline -1: sign-extend, as LuaJIT. */
	s.line = (uint64_t)(int64_t)p->firstline;
	emit_sym(t, &s);
	keep_lines(t, p, sz);
	free(full);
	t->protos++;
}

static void on_trace(struct tr *t, const struct lmt_trace *r)
{
	struct mp_sym s = { .kind = MP_SYM_TRACE, .addr = r->traceno,
			    .proto = r->proto, .line = r->line };
	emit_sym(t, &s);
	t->traces++;
}

static void write_event(struct tr *t, struct mp_event *m)
{
	if (m->src == MP_SRC_CFUNC)
		syms_cfunc(&t->syms, m->loc);
	if (t->w)
		mpw_event(t->w, m);
	report_event(t->rep, m);
	t->n[m->kind & 3]++;
	if (m->kind & MP_ALLOC)
		t->bytes_alloc += m->nsize;
	if (m->kind & MP_FREE)
		t->bytes_free += m->osize;
}

/* A position (LMT_EV_POS) to a line through the prototype's table. */
static void pos_line(struct tr *t, struct mp_event *m)
{
	const struct pline *l = u64map_get(&t->lines, m->loc);
	int64_t line = l ? pline_line(l, m->line) : 0;

	if (!l)
		t->nolines++;
	if (line < 0) {
		m->src = MP_SRC_INTERNAL;
		m->loc = 0;
		line = 0;
	}
	m->line = (uint64_t)line;
}

/* A slot's batch (struct lmt_slot). */
static void on_batch(struct tr *t, const uint8_t *b, size_t sz)
{
	const size_t h = sizeof(struct lmt_batch), rs = sizeof(struct lmt_ev);

	for (size_t off = h; off + rs <= sz; off += rs) {
		struct lmt_ev r;
		struct mp_event m;

		memcpy(&r, b + off, rs);
		if (r.kind < 1 || r.kind > 3 || r.src < LMT_SRC_INTERNAL ||
		    r.src > LMT_SRC_TRACE) {
			t->bad_recs++;
			continue;
		}
		m = (struct mp_event){ .kind = r.kind, .src = r.src, .loc = r.loc,
				       .line = r.line, .oaddr = r.oaddr,
				       .osize = r.osize, .naddr = r.naddr,
				       .nsize = r.nsize };
		if (r.flags & LMT_EV_POS)
			pos_line(t, &m);
		write_event(t, &m);
	}
}

static void on_newvm(struct tr *t, const struct lmt_newvm *n)
{
	struct vminfo v;
	struct pmaps m;
	char why[160];

	if (t->stopping)
		return;
	if (n->registered) { /* BPF did it: its allocator is probed */
		t->nvm++;
		if (t->o->verbose)
			fprintf(stderr, "luamemtrace: VM %u: L 0x%" PRIx64 " g 0x%"
				PRIx64 ", allocator 0x%" PRIx64 " ud 0x%" PRIx64
				" (registered in BPF)\n", n->id, (uint64_t)n->L,
				(uint64_t)n->g, (uint64_t)n->allocf, (uint64_t)n->ud);
		return;
	}
	if (pmaps_load((pid_t)n->tgid, &m) == 0) {
		if (vm_at((pid_t)n->tgid, &m, t->o->variant, n->L, &v, why,
			  sizeof(why)) == 0) {
			if (add_vm(t, &v))
				t->lost_vm++;
		} else {
			err1("warning: new lua_State 0x%" PRIx64 " in PID %u not "
			     "traced: %s", (uint64_t)n->L, n->tgid, why);
			t->lost_vm++;
		}
		pmaps_free(&m);
	}
}

int on_rec(void *ctx, void *data, size_t sz)
{
	struct tr *t = ctx;
	const uint8_t rec = *(const uint8_t *)data;

	switch (rec) {
	case LMT_REC_PROTO:
		if (sz >= offsetof(struct lmt_proto, lineinfo))
			on_proto(t, data, sz);
		break;
	case LMT_REC_BATCH:
		on_batch(t, data, sz);
		break;
	case LMT_REC_FORGET:
		if (sz >= sizeof(struct lmt_forget))
			free(u64map_del(&t->lines,
					((const struct lmt_forget *)data)->addr));
		break;
	case LMT_REC_TRACE:
		if (sz >= sizeof(struct lmt_trace))
			on_trace(t, data);
		break;
	case LMT_REC_CLOSE:
		t->closed++;
		break;
	case LMT_REC_NEWVM:
		if (sz >= sizeof(struct lmt_newvm)) {
			t->in_cb = 1;
			on_newvm(t, data);
			t->in_cb = 0;
		}
		break;
	case LMT_REC_MAPPED:
		/* Read while the process is stopped (settle_stops). */
		t->rescan = 1;
		break;
	}
	return 0;
}

/* -- Draining ------------------------------------------------------------ */

void drain(struct tr *t)
{
	while (ring_buffer__consume(t->rb) > 0)
		;
}

/* Batching ends: the process has a second VM (struct lmt_slot). What the
 * ring holds goes first, then each slot's batch, taken under its lock.
 * Inside a ring buffer callback (a new VM stopped its process) that waits
 * for the main loop, which runs it before the process continues. */
void unbatch(struct tr *t)
{
	if (t->in_cb) {
		t->skel->bss->multi = 1;
		t->unbatch_req = 1;
		return;
	}
	t->unbatch_req = 0;
	t->skel->bss->multi = 1;
	drain(t);
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		struct lmt_slot *s = &t->slots[i];
		uint32_t free_ = 0;
		int tries = 0;

		if (!__atomic_load_n(&s->tgid, __ATOMIC_ACQUIRE))
			continue;
		while (!__atomic_compare_exchange_n(&s->busy, &free_, 1, 0,
						    __ATOMIC_ACQUIRE,
						    __ATOMIC_RELAXED)) {
			free_ = 0;
			if (++tries == 1000000)
				break; /* a program died holding it: cannot be */
		}
		if (tries == 1000000)
			continue;
		if (s->len > sizeof(struct lmt_batch) && s->len < LMT_SBUF)
			on_batch(t, s->buf, s->len);
		s->len = sizeof(struct lmt_batch);
		__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	}
}

/* What the slots held when tracing stopped (the probes are gone). */
void slots_left(struct tr *t)
{
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		const struct lmt_slot *s = &t->slots[i];
		if (s->tgid && s->len > sizeof(struct lmt_batch) && s->len < LMT_SBUF)
			on_batch(t, s->buf, s->len);
	}
}

/* -- Stops --------------------------------------------------------------- */

/* Waits (up to ~2 s) until every thread of tgid is stopped or gone. A
 * thread runs programs only until it stops, so then every record the
 * process sent before its stop is in the ring. */
static void wait_stopped(pid_t tgid)
{
	char p[64], st[512];

	for (int i = 0; i < 10000; i++) {
		DIR *d;
		struct dirent *de;
		int running = 0;

		snprintf(p, sizeof(p), "/proc/%d/task", (int)tgid);
		if (!(d = opendir(p)))
			return;
		while (!running && (de = readdir(d))) {
			char q[96];
			const char *c;
			ssize_t n;
			int fd;

			if (de->d_name[0] == '.')
				continue;
			snprintf(q, sizeof(q), "/proc/%d/task/%.32s/stat", (int)tgid,
				 de->d_name);
			if ((fd = open(q, O_RDONLY | O_CLOEXEC)) < 0)
				continue;
			n = read(fd, st, sizeof(st) - 1);
			close(fd);
			if (n <= 0)
				continue;
			st[n] = 0;
			c = strrchr(st, ')'); /* the name may hold anything */
			running = c && c[1] == ' ' && !strchr("TtZXx", c[2]);
		}
		closedir(d);
		if (!running)
			return;
		usleep(200);
	}
}

/* Processes BPF stopped (the stops map): once each is wholly stopped, the
 * records they sent are handled (new allocators probed, new objects read),
 * then each is continued once. A new stop after our SIGCONT is an entry
 * of its own, for the next round. */
void settle_stops(struct tr *t)
{
	struct lmt_stop *v;
	size_t n = guard_stops(t->stops_fd, &v);

	for (size_t i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < i && v[j].tgid != v[i].tgid; j++)
			;
		if (j == i)
			wait_stopped((pid_t)v[i].tgid);
	}
	if (n) {
		/* Stops made while we waited are in now, and none can come:
		 * release them all. */
		free(v);
		n = guard_stops(t->stops_fd, &v);
		drain(t);
	}
	if (t->unbatch_req)
		unbatch(t);
	if (t->rescan) {
		t->rescan = 0;
		syms_scan(&t->syms);
	}
	guard_release(t->stops_fd, v, n);
	free(v);
}
