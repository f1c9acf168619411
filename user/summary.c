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

#include "trace.h"

#include "esc.h"
#include "info.h"
#include "memprof_write.h"
#include "outfile.h"
#include "report.h"
#include "tracer.h"

void sum_stats(struct tr *t, struct lmt_stats *s)
{
	int ncpu = libbpf_num_possible_cpus();
	struct lmt_percpu *v;
	uint32_t zero = 0;

	memset(s, 0, sizeof(*s));
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	if (!bpf_map__lookup_elem(t->skel->maps.stats, &zero, sizeof(zero), v,
				  sizeof(*v) * (size_t)ncpu, 0)) {
		for (int i = 0; i < ncpu; i++) {
			const struct lmt_stats *a = &v[i].st;
			s->events += a->events;
			s->lost += a->lost;
			s->lost_sym += a->lost_sym;
			s->reads += a->reads;
			s->read_errs += a->read_errs;
			s->protos += a->protos;
			s->traces += a->traces;
			s->unknown_vm += a->unknown_vm;
			s->missed += a->missed;
			s->parked += a->parked;
			s->lost_vm += a->lost_vm;
		}
	}
	free(v);
}

/* What was lost, as the sidecar counts it: events, symbol records, VMs. */
static void losses(const struct tr *t, const struct lmt_stats *st, struct info *in)
{
	in->lost = st->lost + st->missed + t->bad_recs;
	in->lost_sym = st->lost_sym;
	in->lost_vm = st->lost_vm + (uint64_t)t->lost_vm;
}

int trace_lossy(const struct tr *t, const struct lmt_stats *st)
{
	struct info in = { 0 };

	losses(t, st, &in);
	return info_lossy(&in);
}

static void human(char *b, size_t n, uint64_t v)
{
	if (v >= 10u << 20)
		snprintf(b, n, "%.1f MiB", v / 1048576.0);
	else if (v >= 10u << 10)
		snprintf(b, n, "%.1f KiB", v / 1024.0);
	else
		snprintf(b, n, "%" PRIu64 " B", v);
}

void summary(struct tr *t, const struct lmt_stats *s, double secs,
		    uint64_t out_bytes)
{
	char a[32], f[32];
	uint64_t evs = t->n[1] + t->n[2] + t->n[3];

	human(a, sizeof(a), t->bytes_alloc);
	human(f, sizeof(f), t->bytes_free);
	fprintf(stderr, "luamemtrace: traced PID %d, %u VM%s (%s), %.2f s\n",
		(int)t->pid, t->nvm, t->nvm == 1 ? "" : "s",
		t->var ? t->var->name : "-", secs);
	fprintf(stderr, "  events:  %" PRIu64 " (%" PRIu64 " alloc, %" PRIu64
		" realloc, %" PRIu64 " free), %s allocated, %s freed\n",
		evs, t->n[1], t->n[3], t->n[2], a, f);
	fprintf(stderr, "  symbols: %" PRIu64 " prototypes, %" PRIu64
		" traces, %lu C functions\n", t->protos, t->traces,
		t->syms.nsyms);
	fprintf(stderr, "  lost:    %" PRIu64 " events, %" PRIu64
		" symbol records%s\n", (uint64_t)s->lost, (uint64_t)s->lost_sym,
		s->lost + s->lost_sym ?
			" (ring buffer full: the stream is INCOMPLETE; raise -b)" :
			"");
	if (s->missed)
		fprintf(stderr, "  lost:    %" PRIu64 " allocations whose return "
			"probe came too late or never: the stream is INCOMPLETE\n",
			(uint64_t)s->missed);
	if (t->bad_recs)
		fprintf(stderr, "  lost:    %" PRIu64 " batched records that cannot "
			"be: the stream is INCOMPLETE\n", t->bad_recs);
	/* Parked allocations whose return had not come (struct pend). */
	if (s->parked)
		fprintf(stderr, "  %" PRIu64 " allocation%s in flight when tracing "
			"stopped (not recorded)\n", (uint64_t)s->parked,
			s->parked == 1 ? "" : "s");
	if (t->nolines)
		fprintf(stderr, "  %" PRIu64 " events of prototypes whose record was "
			"lost: line 0\n", t->nolines);
	if (t->closed)
		fprintf(stderr, "  closed:  %u VM%s ran lua_close (its teardown frees "
			"are not recorded)\n", t->closed, t->closed == 1 ? "" : "s");
	if (t->lost_vm)
		fprintf(stderr, "  missed:  %d VM%s created during the trace\n",
			t->lost_vm, t->lost_vm == 1 ? "" : "s");
	if (s->lost_vm)
		fprintf(stderr, "  lost:    %" PRIu64 " new VMs or dlopens (ring "
			"buffer full: the stream is INCOMPLETE; raise -b)\n",
			(uint64_t)s->lost_vm);
	if (t->names_cut)
		fprintf(stderr, "  %" PRIu64 " chunk names cut to %d bytes (string "
			"gone before it could be read)\n", t->names_cut,
			LMT_NAME_MAX);
	if (getenv("LMT_DEBUG_STATS"))
		fprintf(stderr, "  bpf: events %llu reads %llu errs %llu protos %llu unknown_vm %llu\n",
			(unsigned long long)s->events, (unsigned long long)s->reads,
			(unsigned long long)s->read_errs, (unsigned long long)s->protos,
			(unsigned long long)s->unknown_vm);
	if (evs)
		fprintf(stderr, "  cost:    %.1f target memory reads per event\n",
			(double)s->reads / (double)(evs ? evs : 1));
	if (evs)
		fprintf(stderr, "  consumer: %.0f ns CPU per event\n",
			(cpu_ns() - t->cpu0) / (double)evs);
	if (t->o->top > 0 && evs)
		report_print_top(t->rep, stderr, t->o->top, 1);
	{
		char e[PATH_MAX * 4];
		fprintf(stderr, "  wrote %s (%" PRIu64 " bytes)\n",
			esc_str(e, sizeof(e), t->o->out, strlen(t->o->out), 0), out_bytes);
	}
}

void write_info(struct tr *t, const struct lmt_stats *st, int done,
		       double secs)
{
	struct info in = { .pid = t->pid, .vms = t->nvm, .start = t->wall0,
			   .duration = secs };
	char buf[2048], err[320], p[64];
	ssize_t n;

	if (!t->info_path)
		return;
	snprintf(in.version, sizeof(in.version), "%s", LMT_VERSION);
	if (!t->exe[0]) { /* -p: the target's, while it runs */
		snprintf(p, sizeof(p), "/proc/%d/exe", (int)t->pid);
		n = readlink(p, t->exe, sizeof(t->exe) - 1);
		t->exe[n > 0 ? n : 0] = 0;
	}
	snprintf(in.exe, sizeof(in.exe), "%.*s", (int)sizeof(in.exe) - 1, t->exe);
	snprintf(in.state, sizeof(in.state), "%s",
		 !done ? "running" : t->failed ? "incomplete" : "complete");
	snprintf(in.end, sizeof(in.end), "%s", t->end ? t->end : "");
	if (st) {
		in.events = t->n[1] + t->n[2] + t->n[3];
		losses(t, st, &in);
		in.in_flight = st->parked;
	}
	info_format(&in, buf, sizeof(buf));
	if (!t->info_made) {
		int reg, fd = outfile_create(t->info_path, t->o->force, 0, &reg, err,
					     sizeof(err));
		if (fd >= 0) {
			size_t l = strlen(buf);
			if (write(fd, buf, l) != (ssize_t)l)
				snprintf(err, sizeof(err), "cannot write %s: %s",
					 t->info_path, strerror(errno));
			else
				t->info_made = 1;
			close(fd);
		}
		if (!t->info_made)
			err1("%s", err);
		return;
	}
	/* A full disk is said once, for the stream. */
	if (outfile_replace(t->info_path, buf, strlen(buf), err, sizeof(err)) &&
	    !t->failed)
		err1("%s", err);
}
