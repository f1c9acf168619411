/* Summary: what a trace did, on stderr when it ends, and in the stream's
 * sidecar (FILE.info) from its start to its end. */
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

#include "util/knobs.h"
#include "session/session.h"

#include "util/esc.h"
#include "util/numfmt.h"
#include "format/info.h"
#include "format/memprof_write.h"
#include "streams/outfile.h"
#include "target/caps.h"
#include "report/report.h"
#include "session/tracer.h"
#include "session/duty.h"

void sum_stats(struct tr *t, struct lmt_stats *s)
{
	int ncpu = libbpf_num_possible_cpus();
	struct lmt_percpu *v;
	uint32_t zero = 0;

	memset(s, 0, sizeof(*s));
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	if (!bpf_map__lookup_elem(t->probes.skel->maps.stats, &zero, sizeof(zero), v,
				  sizeof(*v) * (size_t)ncpu, 0)) {
		for (int i = 0; i < ncpu; i++) {
			const struct lmt_stats *a = &v[i].st;
			s->events += a->events;
			s->lost += a->lost;
			s->lost_sym += a->lost_sym;
			s->reads += a->reads;
			s->direct += a->direct;
			s->read_errs += a->read_errs;
			s->protos += a->protos;
			s->traces += a->traces;
			s->unknown_vm += a->unknown_vm;
			s->lost_vm += a->lost_vm;
			s->stacks += a->stacks;
			s->lost_stk += a->lost_stk;
			s->paused += a->paused;
			s->ev_recs += a->ev_recs;
			s->pred += a->pred;
			s->pchk += a->pchk;
			s->pwrong += a->pwrong;
			s->pdecl += a->pdecl;
		}
	}
	free(v);
	/* Allocations awaiting their return: user space's (capture/ring.c). */
	s->missed = t->cap.aw_missed;
	s->parked = t->cap.aw_left + t->cap.awaits.n;
}

/* Events whose stack user space could not tell (convert/callstacks.c). */
static uint64_t stk_unknown(const struct tr *t)
{
	uint64_t n = 0;

	for (const struct tproc *p = t->procs; p; p = p->next)
		n += p->cv.stk_unknown;
	return n;
}

/* What a process held past a cap (target/caps.h, target/tfile.h): traces cut,
 * evicted or over its budget, walks for names cut, as lost symbols; VMs
 * refused or unchecked, as lost VMs; and each on its own. */
static void over_caps(const struct tr *t, struct info *in)
{
	for (const struct tproc *p = t->procs; p; p = p->next) {
		in->lost_sym += p->cv.tr_cut + p->cv.tr_evicted + p->cv.tr_budget + p->cv.nm_cut;
		in->lost_vm += p->vms_over + p->vms_unchecked;
		in->vms_refused += p->vms_over;
		in->vms_unchecked += p->vms_unchecked;
		in->files_skipped += p->cv.syms.skipped;
		in->traces_budget += p->cv.tr_budget;
	}
}

/* What was lost, as the sidecar counts it: events, symbol records, VMs.
 * Counted for the whole trace: every stream of a lossy trace says so. */
static void losses(const struct tr *t, const struct lmt_stats *st, struct info *in)
{
	in->lost = st->lost + st->missed + t->cap.bad_recs;
	in->lost_sym = st->lost_sym;
	in->lost_vm = st->lost_vm + (uint64_t)t->lost_vm + (uint64_t)t->ran_held;
	/* An address told at entry that its return contradicted: those
	 * told since its VM's last check may be wrong (bpf/lja.h). */
	in->lost += st->pwrong * (LMT_PRED_EVERY - 1);
	/* --stacks: an event without its stack is a lost record too. */
	in->lost_sym += st->lost_stk + stk_unknown(t);
	over_caps(t, in);
}

int trace_lossy(const struct tr *t, const struct lmt_stats *st)
{
	struct info in = { 0 };

	losses(t, st, &in);
	return info_lossy(&in);
}

/* One line per stream: -o DIR. */
static void streams(const struct tr *t)
{
	for (unsigned i = 0; i < t->st.nouts; i++) {
		const struct tout *o = t->st.outs[i];
		char a[32], f[32], e[PATH_MAX * 4];
		const char *b = strrchr(o->path, '/');

		fmt_size(a, sizeof(a), o->bytes_alloc);
		fmt_size(f, sizeof(f), o->bytes_free);
		b = b ? b + 1 : o->path;
		fprintf(stderr, "    %-28s %9" PRIu64 " events, %s allocated, %s "
			"freed", esc_str(e, sizeof(e), b, strlen(b), 0),
			o->n[1] + o->n[2] + o->n[3], a, f);
		if (o->owner && o->who.parent)
			fprintf(stderr, " (a child of PID %d)", (int)o->who.parent);
		fprintf(stderr, "%s\n", o->failed ? " INCOMPLETE" : "");
	}
}

/* What was over a cap of target/caps.h; with -v, the walks for names. */
static void caps_said(const struct tr *t)
{
	uint64_t c[12] = { 0 };

	for (const struct tproc *p = t->procs; p; p = p->next) {
		c[9] += p->cv.fn_unread;
		c[10] += p->cv.fn_cut;
		c[0] += p->cv.tr_cut;
		c[1] += p->cv.tr_evicted;
		c[2] += p->cv.nm_cut;
		c[3] += p->vms_unchecked;
		c[4] += p->cv.names_long;
		c[5] += p->cv.nm_walks;
		c[6] += p->cv.nm_nodes;
		c[7] += p->vms_over;
		c[8] += p->cv.tr_budget;
		c[11] += p->cv.tr_nomcofs;
	}
	if (c[11])
		fprintf(stderr, "  compiled code: %" PRIu64 " events charged to their trace "
			"(TRACE in the report, as this LuaJIT's own memprof charges them), "
			"not to a line: its snapshots keep no machine code offsets\n", c[11]);
	if (c[0] || c[1])
		fprintf(stderr, "  over caps: %" PRIu64 " traces cut or refused (a count, "
			"link or index no LuaJIT makes, or over %u reads or %u MiB), %"
			PRIu64 " evicted (over %u MiB a process): their events at "
			"trace granularity\n", c[0], LMT_TRACE_READS_MAX,
			LMT_TRACE_BYTES_MAX >> 20, c[1], LMT_PROC_TRACE_BYTES_MAX >> 20);
	if (c[8])
		fprintf(stderr, "  over caps: %" PRIu64 " traces not resolved: budget (over "
			"%u reads of a process's memory to resolve traces): their events at "
			"trace granularity\n", c[8], LMT_PROC_READS_MAX);
	if (c[2])
		fprintf(stderr, "  over caps: %" PRIu64 " walks of package.loaded cut "
			"at %u nodes: C functions there unnamed\n", c[2],
			LMT_NAMES_NODES_MAX);
	if (c[3])
		fprintf(stderr, "  over caps: %" PRIu64 " VM candidates past %d VMs "
			"a process: not checked, not traced\n", c[3], LMT_VMS_MAX);
	if (c[7])
		fprintf(stderr, "  over caps: %" PRIu64 " VMs refused past %d VMs a "
			"process (closed ones count): not traced\n", c[7], LMT_VMS_MAX);
	if (c[4])
		fprintf(stderr, "  %" PRIu64 " chunk names over %d bytes cut to it "
			"(ending in ...)\n", c[4], LMT_CHUNKNAME_MAX);
	if (c[9])
		fprintf(stderr, "  %" PRIu64 " call sites whose prototype could not be "
			"read or lied (a PC, index or size no LuaJIT makes): their "
			"frames without a function name\n", c[9]);
	if (c[10])
		fprintf(stderr, "  %" PRIu64 " function names over %d bytes cut to it "
			"(ending in ...)\n", c[10], LMT_FNAME_ID_MAX);
	if (t->o->verbose)
		fprintf(stderr, "  names:   %" PRIu64 " walks of package.loaded, %"
			PRIu64 " nodes read\n", c[5], c[6]);
}

/* The trace's totals: events by kind (n[1] alloc, n[2] free, n[3]
 * realloc) and bytes over its streams, and what its attached processes
 * found (one: the last of them). */
struct totals {
	uint64_t n[4], evs, ba, bf, protos, traces, names_cut, nolines;
	unsigned long csyms, cskipped;
	unsigned nvm, np;
	const struct tproc *one;
};

static void totals_of(const struct tr *t, struct totals *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned i = 0; i < t->st.nouts; i++) {
		const struct tout *o = t->st.outs[i];
		for (int k = 0; k < 4; k++)
			c->n[k] += o->n[k];
		c->ba += o->bytes_alloc;
		c->bf += o->bytes_free;
	}
	for (const struct tproc *p = t->procs; p; p = p->next) {
		if (p->ignored || !p->attached)
			continue;
		c->np++;
		c->one = p;
		c->nvm += p->nvm;
		c->protos += p->cv.protos;
		c->traces += p->cv.traces;
		c->names_cut += p->cv.names_cut;
		c->nolines += p->cv.nolines;
		c->csyms += p->cv.syms.nsyms;
		c->cskipped += p->cv.syms.skipped;
	}
	c->evs = c->n[1] + c->n[2] + c->n[3];
}

/* What was traced, for how long, what it allocated and freed (with
 * --duty, the estimate for the whole run), and the symbols found. */
static void said_traced(const struct tr *t, const struct totals *c, double secs)
{
	char a[32], f[32];

	fmt_size(a, sizeof(a), c->ba);
	fmt_size(f, sizeof(f), c->bf);
	if (c->np == 1)
		fprintf(stderr, "luamemtrace: traced PID %d, %u VM%s (%s), %.2f s\n",
			(int)c->one->pid, c->nvm, c->nvm == 1 ? "" : "s",
			t->var ? t->var->name : "-", secs);
	else
		fprintf(stderr, "luamemtrace: traced %u processes, %u VM%s, %.2f s\n",
			c->np, c->nvm, c->nvm == 1 ? "" : "s", secs);
	fprintf(stderr, "  events:  %" PRIu64 " (%" PRIu64 " alloc, %" PRIu64
		" realloc, %" PRIu64 " free), %s allocated, %s freed\n",
		c->evs, c->n[1], c->n[3], c->n[2], a, f);
	if (t->o->floor_events)
		fprintf(stderr, "  floor:   --floor=events: every event charged to the "
			"VM, none attributed (a benchmark)\n");
	else if (t->o->floor)
		fprintf(stderr, "  floor:   --floor%s: the allocator's probes%s with programs "
			"that do nothing, no event (a benchmark)\n",
			t->o->floor_entry ? "=entry" : "",
			t->o->floor_entry ? " at its entry alone" : "");
	if (t->o->duty > 0) {
		/* A sample: what it saw, then the estimate of the whole run. */
		const struct info in = { .duty = t->o->duty, .sampled = duty_sampled(t),
					 .duration = secs };
		const double on = in.sampled, k = info_scale(&in);
		char ea[32], ef[32];

		fmt_size(ea, sizeof(ea), (uint64_t)((double)c->ba * k));
		fmt_size(ef, sizeof(ef), (uint64_t)((double)c->bf * k));
		fprintf(stderr, "  duty:    %g%% asked; windows recorded %.2f of %.2f s "
			"(%.1f%%): the counts above are that sample's\n",
			t->o->duty, on, secs, secs > 0 ? on * 100 / secs : 0);
		fprintf(stderr, "  estimate for the whole run (x%.2f): %.0f events, %s allocated, "
			"%s freed\n", k, (double)c->evs * k, ea, ef);
	}
	fprintf(stderr, "  symbols: %" PRIu64 " prototypes, %" PRIu64
		" traces, %lu C functions\n", c->protos, c->traces, c->csyms);
}

/* VMs closed, missed or lost, processes that ran held, children not
 * followed, C names skipped, chunk names cut. */
static void said_missed(const struct tr *t, const struct lmt_stats *s,
			const struct totals *c)
{
	if (t->cap.closed)
		fprintf(stderr, "  closed:  %u VM%s ran lua_close (its teardown frees "
			"are not recorded)\n", t->cap.closed, t->cap.closed == 1 ? "" : "s");
	if (t->lost_vm)
		fprintf(stderr, "  missed:  %d VM%s or process%s not traced (said "
			"above)\n", t->lost_vm, t->lost_vm == 1 ? "" : "s",
			t->lost_vm == 1 ? "" : "es");
	if (t->ran_held)
		fprintf(stderr, "  ran:     %d process%s ran while stopped for the tracer "
			"(said above): the stream is INCOMPLETE\n", t->ran_held,
			t->ran_held == 1 ? "" : "es");
	if (s->lost_vm)
		fprintf(stderr, "  lost:    %" PRIu64 " new VMs, forks or dlopens "
			"(ring buffer full: the stream is INCOMPLETE; raise -b or use --no-loss)\n",
			(uint64_t)s->lost_vm);
	if (t->forks_skipped)
		fprintf(stderr, "  not followed: %u child%s of traced processes "
			"(%s)\n", t->forks_skipped, t->forks_skipped == 1 ? "" : "ren",
			t->st.dir ? "this kernel cannot stop a child before it runs: "
				 "6.13, or schedule_tail under fexit" :
				 "-o DIR/ traces them too");
	if (c->cskipped)
		fprintf(stderr, "  skipped: %lu object%s C names, over the caps on symbol "
			"tables or not the file maps names (said above)\n", c->cskipped,
			c->cskipped == 1 ? "'s" : "s'");
	if (c->names_cut)
		fprintf(stderr, "  %" PRIu64 " chunk names cut to %d bytes (string "
			"gone before it could be read)\n", c->names_cut, LMT_NAME_MAX);
}

/* Events and records lost, and what the stream holds less of than ran:
 * allocations in flight, lines and stacks unknown, VMs and processes
 * missed, children not followed, names skipped or cut. */
static void said_lost(const struct tr *t, const struct lmt_stats *s,
		      const struct totals *c)
{
	fprintf(stderr, "  lost:    %" PRIu64 " events, %" PRIu64
		" symbol records%s\n", (uint64_t)s->lost, (uint64_t)s->lost_sym,
		s->lost + s->lost_sym ?
			" (ring buffer full: the stream is INCOMPLETE; raise -b or use --no-loss)" :
			"");
	if (s->missed)
		fprintf(stderr, "  lost:    %" PRIu64 " allocations whose address "
			"was lost: the stream is INCOMPLETE\n",
			(uint64_t)s->missed);
	if (t->cap.bad_recs)
		fprintf(stderr, "  lost:    %" PRIu64 " batched records that cannot "
			"be: the stream is INCOMPLETE\n", t->cap.bad_recs);
	/* Allocations whose return had not come (bpf/await.h). */
	if (s->parked)
		fprintf(stderr, "  %" PRIu64 " allocation%s in flight when tracing "
			"or its process ended (not recorded)\n", (uint64_t)s->parked,
			s->parked == 1 ? "" : "s");
	if (c->nolines)
		fprintf(stderr, "  %" PRIu64 " events of prototypes whose record was "
			"lost: line 0\n", c->nolines);
	if (s->lost_stk || stk_unknown(t))
		fprintf(stderr, "  stacks:  %" PRIu64 " events without their stack (the "
			"ring was full, or a frame could not be read)\n",
			(uint64_t)s->lost_stk + stk_unknown(t));
	/* bpf/lja.h: a return that contradicted its entry turned telling
	 * off for its VM; the ones told since its last check may be wrong. */
	if (s->pwrong)
		fprintf(stderr, "  WRONG:   %" PRIu64 " allocation address%s told at entry "
			"differed from the allocator's return: none told for %s VM since, "
			"but up to %d told before may be wrong, counted lost "
			"(LMT_NO_PREDICT=1 tells none)\n", (uint64_t)s->pwrong,
			s->pwrong == 1 ? "" : "es", s->pwrong == 1 ? "its" : "their",
			LMT_PRED_EVERY - 1);
	if (s->paused)
		fprintf(stderr, "  paused:  %" PRIu64 " time%s, the ring over half full "
			"(--no-loss)\n", (uint64_t)s->paused, s->paused == 1 ? "" : "s");
	said_missed(t, s, c);
}

/* Allocator calls by VMs left out over a cap (they still call the
 * allocator we probe: the real one, if forged VMs hid it,
 * target/vmscan.c); the BPF counters with LMT_DEBUG_STATS; what an event
 * cost. */
static void said_costs(const struct tr *t, const struct lmt_stats *s, uint64_t evs)
{
	struct info in = { 0 };

	over_caps(t, &in);
	if (s->unknown_vm && (in.vms_refused || in.vms_unchecked))
		fprintf(stderr, "  untraced: %" PRIu64 " allocator calls by VMs not "
			"traced (left out over the caps above)\n",
			(uint64_t)s->unknown_vm);
	if (knobs.debug_stats)
		fprintf(stderr, "  bpf: events %llu reads %llu errs %llu protos %llu unknown_vm %llu\n",
			(unsigned long long)s->events, (unsigned long long)s->reads,
			(unsigned long long)s->read_errs, (unsigned long long)s->protos,
			(unsigned long long)s->unknown_vm);
	if (evs)
		fprintf(stderr, "  cost:    %.1f target memory reads per event (%.0f%% "
			"through the page tables); %.1f events per ring buffer record\n",
			(double)s->reads / (double)(evs ? evs : 1),
			100.0 * (double)s->direct / (double)(s->reads ? s->reads : 1),
			(double)s->events / (double)(s->ev_recs ? s->ev_recs : 1));
	if (t->probes.sess && evs)
		fprintf(stderr, "  returns: %" PRIu64 " allocation addresses told at entry "
			"(their return not probed), %" PRIu64 " checked at it%s\n",
			(uint64_t)s->pred, (uint64_t)s->pchk,
			s->pdecl ? "; an allocator not LuaJIT's own: its returns probed" : "");
	if (evs)
		fprintf(stderr, "  consumer: %.0f ns CPU per event\n",
			(cpu_ns() - t->cpu0) / (double)evs);
}

/* What was written: the stream (-o FILE) or each of them (-o DIR/), and
 * the top allocation sites if there is one stream. */
static void said_wrote(const struct tr *t, uint64_t evs)
{
	char e[PATH_MAX * 4];

	if (!t->st.dir) {
		if (t->o->top > 0 && evs && t->st.one)
			report_print_top(t->st.one->rep, stderr, t->o->top, 1);
		fprintf(stderr, "  wrote %s (%" PRIu64 " bytes)\n",
			esc_str(e, sizeof(e), t->o->out, strlen(t->o->out), 0),
			t->st.one ? t->st.one->w.bytes : 0);
		return;
	}
	fprintf(stderr, "  wrote %u stream%s in %s:\n", t->st.nouts,
		t->st.nouts == 1 ? "" : "s",
		esc_str(e, sizeof(e), t->o->out, strlen(t->o->out), 0));
	streams(t);
	if (t->o->top > 0 && evs && t->st.nouts == 1)
		report_print_top(t->st.outs[0]->rep, stderr, t->o->top, 1);
}

void summary(struct tr *t, const struct lmt_stats *s, double secs)
{
	struct totals c;

	totals_of(t, &c);
	said_traced(t, &c, secs);
	said_lost(t, s, &c);
	caps_said(t);
	said_costs(t, s, c.evs);
	said_wrote(t, c.evs);
}

/* -- Sidecars -------------------------------------------------------------- */

void out_info(struct tr *t, struct tout *o, const struct lmt_stats *st, int done)
{
	struct info in = { .pid = o->owner ? o->who.pid : 0, .vms = o->nvms,
			   .start = o->wall0, .vm = o->vm,
			   .parent = o->owner ? o->who.parent : 0,
			   .nspid = o->owner ? o->who.nspid : 0,
			   .duration = done ? o->secs : 0 };
	char buf[INFO_FILE_MAX];

	if (!o->info[0])
		return;
	snprintf(in.version, sizeof(in.version), "%s", LMT_VERSION);
	if (o->owner) {
		snprintf(in.exe, sizeof(in.exe), "%.*s", (int)sizeof(in.exe) - 1,
			 o->who.exe);
		snprintf(in.comm, sizeof(in.comm), "%s", o->who.comm);
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
	out_sidecar(&t->st, o, buf);
}

void stream_end(struct tr *t, struct tout *o, const char *end)
{
	struct lmt_stats st;

	if (!out_finish(o, end))
		return;
	sum_stats(t, &st);
	out_info(t, o, &st, 1);
	out_close(o);
}
