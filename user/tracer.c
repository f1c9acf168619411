/* A tracing session: find the VMs, probe their allocators, turn ring
 * buffer records into the memprof stream, stop cleanly, summarise.
 *
 * Every probe is a perf-event link owned by this process, so the kernel
 * removes them when we exit or die; nothing is pinned.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elfsym.h"
#include "esc.h"
#include "guard.h"
#include "info.h"
#include "luamemtrace.skel.h"
#include "memprof_write.h"
#include "outfile.h"
#include "probe.h"
#include "proc.h"
#include "report.h"
#include "symbols.h"
#include "tracer.h"
#include "vm.h"

#define MAX_ALLOCF 16
#define MAX_LINKS 64

struct allocf {
	uint64_t addr;
	struct probe_plan plan;
};

struct tr {
	const struct topts *o;
	struct luamemtrace_bpf *skel;
	struct bpf_program *enter; /* alloc_enter or alloc_enter_compat */
	struct ring_buffer *rb;
	struct mpw *w;
	struct report *rep;
	struct syms syms;
	pid_t pid;
	const struct lj_variant *var;
	struct allocf af[MAX_ALLOCF];
	unsigned naf;
	struct bpf_link *links[MAX_LINKS];
	unsigned nlinks;
	unsigned nvm;
	unsigned closed; /* VMs that ran lua_close while traced */
	int lost_vm; /* VMs we could not attach to */
	/* counts */
	uint64_t n[4], bytes_alloc, bytes_free;
	uint64_t protos, traces, names_cut, nolines;
	struct u64map lines; /* prototype -> struct pline */
	struct lmt_slot *slots; /* the slots map, mmapped */
	size_t slots_len;
	uint64_t bad_recs; /* batched records that cannot be: not written */
	int in_cb;         /* inside a ring buffer callback: no drain() */
	int unbatch_req;   /* unbatch() once out of it */
	int rescan;        /* the process's objects changed: syms_scan() */
	int child_started, child_done, child_status;
	int stops_fd;      /* the stops map (bpf/luamemtrace.bpf.c) */
	const char *end;   /* why tracing ended */
	int failed;        /* the stream could not be finished */
	const char *info_path; /* the sidecar, beside a regular file */
	int info_made;
	double wall0;      /* when tracing began, seconds since the epoch */
	char exe[PATH_MAX]; /* the target's executable */
	double cpu0; /* our CPU time (ns) when tracing began */
};

static volatile sig_atomic_t stop_req;
/* A signal to pass on to -- COMMAND: sent to us alone (SI_USER), not by
 * the terminal to the whole foreground group, the command included. */
static volatile sig_atomic_t forward_sig;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_req = sig;
	if (si->si_code == SI_USER || si->si_code == SI_QUEUE)
		forward_sig = sig;
}

/* One line on stderr, escaped (esc.h): paths and names in it may come
 * from the target. */
__attribute__((format(printf, 1, 2)))
static void err1(const char *fmt, ...)
{
	char m[1024], e[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fprintf(stderr, "luamemtrace: %s\n",
		esc_str(e, sizeof(e), m, (size_t)n < sizeof(m) ? (size_t)n : sizeof(m) - 1, 0));
}

static int libbpf_quiet(enum libbpf_print_level lvl, const char *fmt,
			va_list ap)
{
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("LMT_LIBBPF_DEBUG") != NULL;
	if (!verbose && lvl != LIBBPF_WARN)
		return 0;
	if (!verbose)
		return 0; /* we report failures ourselves, in one line */
	return vfprintf(stderr, fmt, ap);
}

/* CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE (reading the
 * target's memory), in our effective set. */
static int has_caps(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	if (eff & (1ULL << 21)) /* CAP_SYS_ADMIN */
		return 1;
	return (eff & (1ULL << 39)) && (eff & (1ULL << 38)) &&
	       (eff & (1ULL << 19)); /* CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE */
}

/* Checks what the kernel and our privileges must provide. */
static int preflight(void)
{
	const char *sys = getenv("LMT_SYSFS");
	char p[PATH_MAX];

	const char *proc = getenv("LMT_PROCFS");

	if (!sys)
		sys = "/sys";
	if (!proc)
		proc = "/proc";
	if (geteuid() != 0 && !has_caps()) {
		err1("needs root, or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE "
		     "(run it with sudo)");
		return -1;
	}
	snprintf(p, sizeof(p), "%s/kernel/btf/vmlinux", sys);
	if (access(p, R_OK)) {
		err1("this kernel has no BTF (%s is missing): needs "
		     "CONFIG_DEBUG_INFO_BTF=y", p);
		return -1;
	}
	snprintf(p, sizeof(p), "%s/bus/event_source/devices/uprobe/type", sys);
	if (access(p, R_OK)) {
		err1("this kernel has no uprobes (%s is missing): needs "
		     "CONFIG_UPROBE_EVENTS=y", p);
		return -1;
	}
	snprintf(p, sizeof(p), "%s/sys/kernel/bpf_stats_enabled", proc);
	if (access(p, F_OK)) {
		err1("this kernel has no BPF system call (%s is missing): needs "
		     "CONFIG_BPF_SYSCALL=y", p);
		return -1;
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL) != 1 ||
	    libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1 ||
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) != 1) {
		err1("this kernel cannot load the BPF programs: needs Linux "
		     "5.17+ (ring buffers, atomics, bpf_loop) with "
		     "CONFIG_BPF_SYSCALL=y");
		return -1;
	}
	return 0;
}

/* ---- stream output ---------------------------------------------------- */

static void emit_sym(void *ctx, const struct mp_sym *s)
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

static void on_event(struct tr *t, const struct lmt_event *e)
{
	struct mp_event m = { .kind = e->kind, .src = e->src, .loc = e->loc,
			      .line = e->line, .oaddr = e->oaddr,
			      .osize = e->osize, .naddr = e->naddr,
			      .nsize = e->nsize };

	if (e->flags & LMT_EV_POS)
		pos_line(t, &m);
	write_event(t, &m);
}

/* A slot's batch (struct lmt_slot). */
static void on_batch(struct tr *t, const uint8_t *b, size_t sz)
{
	const size_t h = sizeof(struct lmt_batch), rs = sizeof(struct lmt_bev);

	for (size_t off = h; off + rs <= sz; off += rs) {
		struct lmt_bev r;
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

static int add_vm(struct tr *t, const struct vminfo *v);

static void on_newvm(struct tr *t, const struct lmt_newvm *n)
{
	struct vminfo v;
	struct pmaps m;
	char why[160];

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

static int on_rec(void *ctx, void *data, size_t sz)
{
	struct tr *t = ctx;
	const uint8_t rec = *(const uint8_t *)data;

	switch (rec) {
	case LMT_REC_EVENT:
		if (sz >= sizeof(struct lmt_event))
			on_event(t, data);
		break;
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

/* ---- attaching -------------------------------------------------------- */

static int link_add(struct tr *t, struct bpf_link *l)
{
	if (!l)
		return -errno ? -errno : -EINVAL;
	if (t->nlinks == MAX_LINKS) {
		bpf_link__destroy(l);
		return -E2BIG;
	}
	t->links[t->nlinks++] = l;
	return 0;
}

/* Newest first: an allocation's entry probe goes before its return probe. */
static void detach_all(struct tr *t)
{
	while (t->nlinks)
		bpf_link__destroy(t->links[--t->nlinks]);
}

/* Does the kernel have task works (6.18+)? Then alloc_enter's reads can
 * land on its stack (struct gq in bpf/luamemtrace.bpf.c). */
static int kernel_keeps_callbacks_on_stack(void)
{
	struct btf *b;
	int r;

	/* For tests: the compatible reader on any kernel. */
	if (getenv("LMT_COMPAT_READER"))
		return 0;
	b = btf__load_vmlinux_btf();
	r = b && btf__find_by_name_kind(b, "bpf_task_work_schedule_signal_impl",
					BTF_KIND_FUNC) > 0;
	btf__free(b);
	return r;
}

/* Open and load the BPF object with one of the two entry programs: kst,
 * the one whose reads land on the kernel stack (tried first where the
 * kernel should take it), or the compatible one. */
static int open_load(struct tr *t, int kst)
{
	const struct topts *o = t->o;

	luamemtrace_bpf__destroy(t->skel);
	t->skel = luamemtrace_bpf__open();
	if (!t->skel) {
		err1("cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	t->enter = kst ? t->skel->progs.alloc_enter : t->skel->progs.alloc_enter_compat;
	bpf_program__set_autoload(kst ? t->skel->progs.alloc_enter_compat :
					t->skel->progs.alloc_enter, false);
	if (o->rb_bytes)
		bpf_map__set_max_entries(t->skel->maps.rb, (uint32_t)o->rb_bytes);
	{
		/* Each CPU counts its own bytes: wake at 1/16 of the ring in all. */
		const long ncpu = libbpf_num_possible_cpus();
		uint64_t wb = bpf_map__max_entries(t->skel->maps.rb) / 16 /
			      (uint64_t)(ncpu > 0 ? ncpu : 1);
		t->skel->rodata->wakeup_bytes = wb < 4096 ? 4096 : wb;
	}
	t->skel->rodata->ab = (uint8_t)o->ab;
	if (!luamemtrace_bpf__load(t->skel)) {
		if (o->verbose)
			fprintf(stderr, "luamemtrace: reads land on the %s\n",
				kst ? "kernel stack" : "per-CPU scratch");
		return 0;
	}
	if (kst) {
		if (o->verbose)
			fprintf(stderr, "luamemtrace: the kernel-stack reader did not "
				"load (%s); using the compatible one\n", strerror(errno));
		return -1;
	}
	err1("cannot load the BPF programs: %s (LMT_LIBBPF_DEBUG=1 shows "
	     "the verifier log)", strerror(errno));
	return -1;
}

static int attach_at(struct tr *t, const char *path, uint64_t off, int ret)
{
	struct bpf_program *pe = t->o->floor ? t->skel->progs.floor_enter :
					       t->enter;
	struct bpf_program *pr = t->o->floor ? t->skel->progs.floor_return :
					       t->skel->progs.alloc_return;
	/* The return probe first, and gone last (links are destroyed in
	 * reverse): no allocation is seen entering without its return being
	 * caught, or it would count as missed. */
	int r = ret ? link_add(t, bpf_program__attach_uprobe(pr, true, t->pid,
							      path, (size_t)off)) : 0;

	if (r)
		return r;
	return link_add(t, bpf_program__attach_uprobe(pe, false, t->pid, path,
						      (size_t)off));
}

static void describe(const char *what, const struct probe_site *s, int verbose)
{
	if (verbose)
		err1("%s probe at 0x%" PRIx64 " (%s)%s", what, s->addr, s->text,
			s->emulated ? "" : ", single-stepped");
}

/* Probes the allocator at runtime address addr, once per address. */
static int attach_allocf(struct tr *t, uint64_t addr)
{
	struct allocf *a;
	const struct pmap *p;
	struct pmaps m;
	char path[128], err[256];
	int r;

	for (unsigned i = 0; i < t->naf; i++)
		if (t->af[i].addr == addr)
			return 0;
	if (t->naf == MAX_ALLOCF) {
		err1("too many distinct allocators");
		return -1;
	}
	r = pmaps_load(t->pid, &m);
	if (r) {
		err1("cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-r));
		return -1;
	}
	p = pmaps_find(&m, addr);
	if (!p || !pmap_is_file(p)) {
		err1("the allocator 0x%" PRIx64 " is not in a mapped file "
		     "(JIT-generated or anonymous code cannot be probed)", addr);
		pmaps_free(&m);
		return -1;
	}
	a = &t->af[t->naf];
	a->addr = addr;
	pmap_file_path(t->pid, p, path, sizeof(path));
	r = probe_plan(path, addr, addr - p->lo + p->off, &a->plan, err,
		       sizeof(err));
	if (r) {
		err1("%s", err);
		pmaps_free(&m);
		return -1;
	}
	if (t->o->verbose)
		err1("allocator 0x%" PRIx64 " in %s", addr, p->path);
	if (t->o->probes == PROBES_ENTRY) {
		a->plan.split = 0;
		a->plan.all.addr = addr;
		a->plan.all.off = addr - p->lo + p->off;
		a->plan.all.emulated = 0;
		snprintf(a->plan.all.text, sizeof(a->plan.all.text), "entry");
		a->plan.warning[0] = 0;
	}
	if (a->plan.split && t->o->probes == PROBES_AUTO) {
		describe("free path", &a->plan.free_site, t->o->verbose);
		describe("allocation path", &a->plan.alloc_site, t->o->verbose);
		r = attach_at(t, path, a->plan.free_site.off, 0);
		if (!r)
			r = attach_at(t, path, a->plan.alloc_site.off, 1);
	} else {
		if (a->plan.warning[0] && !t->o->quiet)
			err1("warning: %s", a->plan.warning);
		describe("allocator", &a->plan.all, t->o->verbose);
		r = attach_at(t, path, a->plan.all.off, 1);
	}
	pmaps_free(&m);
	if (r) {
		err1("cannot attach uprobes to %s: %s", path, strerror(-r));
		return -1;
	}
	t->naf++;
	return 0;
}

/* Claim the VM's slot (see struct lmt_slot), if it is free. */
static void slot_put(struct tr *t, const struct lmt_vm_key *k, const struct lmt_vm *vm)
{
	struct lmt_slot *s;
	struct lmt_batch *h;
	uint32_t free_ = 0;

	if (!t->slots)
		return;
	s = &t->slots[lmt_slot_of(k->ud)];
	if (!__atomic_compare_exchange_n(&s->tgid, &free_, k->tgid, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	s->ud = k->ud;
	s->vm = *vm;
	h = (struct lmt_batch *)s->buf;
	*h = (struct lmt_batch){ .rec = LMT_REC_BATCH, .tgid = k->tgid, .vm = vm->id };
	s->len = sizeof(*h);
	__atomic_store_n(&s->live, 1, __ATOMIC_RELEASE);
}

static void drain(struct tr *t);

/* Batching ends: the process has a second VM (struct lmt_slot). What the
 * ring holds goes first, then each slot's batch, taken under its lock.
 * Inside a ring buffer callback (a new VM stopped its process) that waits
 * for the main loop, which runs it before the process continues. */
static void unbatch(struct tr *t)
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
static void slots_left(struct tr *t)
{
	for (unsigned i = 0; t->slots && i < LMT_NSLOT; i++) {
		const struct lmt_slot *s = &t->slots[i];
		if (s->tgid && s->len > sizeof(struct lmt_batch) && s->len < LMT_SBUF)
			on_batch(t, s->buf, s->len);
	}
}

static int add_vm(struct tr *t, const struct vminfo *v)
{
	struct lmt_vm_key k = { .tgid = (uint32_t)t->pid, .ud = v->allocd };
	struct lmt_vm val = { .g = v->g, .id = t->nvm, .lay = v->var->lay }, known;

	if (bpf_map__lookup_elem(t->skel->maps.vms, &k, sizeof(k), &known,
				 sizeof(known), 0) == 0) {
		/* Known, or another VM with the same ud: then their events
		 * cannot be told apart, and must not be batched. */
		if (known.g != v->g && !t->skel->bss->multi)
			unbatch(t);
		return 0;
	}
	if (attach_allocf(t, v->allocf))
		return -1;
	struct { uint32_t tgid, pad; uint64_t L; } mk = { (uint32_t)t->pid, 0, v->L };
	/* A second VM ends batching (struct lmt_slot). */
	if (t->nvm && !t->skel->bss->multi)
		unbatch(t);
	if (bpf_map__update_elem(t->skel->maps.vms, &k, sizeof(k), &val,
				 sizeof(val), BPF_ANY) ||
	    bpf_map__update_elem(t->skel->maps.mains, &mk, sizeof(mk), &k,
				 sizeof(k), BPF_ANY)) {
		err1("cannot register VM 0x%" PRIx64 ": %s", v->L, strerror(errno));
		return -1;
	}
	slot_put(t, &k, &val);
	if (t->o->verbose)
		fprintf(stderr, "luamemtrace: VM %u: L 0x%" PRIx64 " g 0x%" PRIx64
			" (%s), allocator 0x%" PRIx64 " ud 0x%" PRIx64 "\n",
			t->nvm, v->L, v->g, v->var->name, v->allocf, v->allocd);
	{
		/* From now on BPF registers this process's new VMs itself. */
		struct lmt_proc pr = { .has_layout = 1, .next_id = 1u << 16,
				       .lay = v->var->lay };
		struct lmt_allocf_key ak = { .tgid = (uint32_t)t->pid,
					     .allocf = v->allocf };
		uint32_t tg = (uint32_t)t->pid, one = 1;
		struct lmt_proc old;

		if (bpf_map__lookup_elem(t->skel->maps.procs, &tg, sizeof(tg), &old,
					 sizeof(old), 0) ||
		    !old.has_layout)
			bpf_map__update_elem(t->skel->maps.procs, &tg, sizeof(tg),
					     &pr, sizeof(pr), BPF_ANY);
		bpf_map__update_elem(t->skel->maps.allocfs, &ak, sizeof(ak), &one,
				     sizeof(one), BPF_ANY);
	}
	t->var = v->var;
	t->nvm++;
	/* The process is stopped or attached: what it maps now is readable
	 * now, while the consumer may only get to its events after it exits. */
	syms_scan(&t->syms);
	return 0;
}

/* Probes what tells us a process changed while we trace it, in every
 * object that has it: lua_newstate's return (VMs created while we trace,
 * or before the command's first line), lua_close, and the dynamic linker's
 * _dl_debug_state (a dlopen: C names read while the module is mapped). */
static void newstate_probe(struct tr *t, const char *path)
{
	uint64_t off;

	if (!elfsym_offset(path, "_dl_debug_state", &off) &&
	    !link_add(t, bpf_program__attach_uprobe(t->skel->progs.dl_state, false,
						    t->pid, path, (size_t)off)) &&
	    t->o->verbose)
		err1("watching dlopen in %s", path);
	if (elfsym_offset(path, "lua_newstate", &off))
		return;
	if (link_add(t, bpf_program__attach_uprobe(t->skel->progs.newstate_return,
						   true, t->pid, path,
						   (size_t)off)) == 0 &&
	    t->o->verbose)
		err1("watching lua_newstate in %s", path);
	if (!elfsym_offset(path, "lua_close", &off))
		link_add(t, bpf_program__attach_uprobe(t->skel->progs.close_enter,
						       false, t->pid, path,
						       (size_t)off));
}

static void newstate_probes_maps(struct tr *t, const struct pmaps *m)
{
	struct u64set seen = { 0 };

	for (size_t i = 0; i < m->n; i++) {
		const struct pmap *p = &m->v[i];
		char path[128];
		if (p->perms[2] != 'x' || !pmap_is_file(p) ||
		    u64set_add(&seen, p->inode) != 1)
			continue;
		pmap_file_path(t->pid, p, path, sizeof(path));
		newstate_probe(t, path);
	}
	u64set_free(&seen);
}

/* ---- the command to start --------------------------------------------- */

/* What execvp would run: the first PATH entry with an executable file. */
/* out: PATH_MAX bytes, as realpath wants. */
static int resolve_cmd(const char *name, char *out)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(name, '/'))
		return realpath(name, out) && !access(out, X_OK) ? 0 : -1;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t l = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, path, name);
		if (!access(buf, X_OK) && realpath(buf, out))
			return 0;
		path += l + (path[l] == ':');
	}
	return -1;
}

static void on_needed(void *ctx, uint64_t unused, const char *soname)
{
	static const char *dirs[] = { "/lib/x86_64-linux-gnu",
				      "/usr/lib/x86_64-linux-gnu",
				      "/usr/local/lib", "/lib", "/usr/lib" };
	struct tr *t = ctx;
	char p[PATH_MAX];

	if (!strstr(soname, "luajit"))
		return;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dirs[i], soname);
		if (!access(p, R_OK)) {
			newstate_probe(t, p);
			return;
		}
	}
}

/* Watches lua_newstate in the program (following one #! line) and in a
 * libluajit it links against, and dlopen in its dynamic linker. */
static int cmd_probes(struct tr *t, const char *exe)
{
	char interp[PATH_MAX], line[PATH_MAX];
	const char *bin = exe;
	FILE *f = fopen(exe, "re");
	unsigned before;

	if (f && fgets(line, sizeof(line), f) && !strncmp(line, "#!", 2)) {
		char *s = line + 2;
		s += strspn(s, " \t");
		s[strcspn(s, " \t\n")] = 0;
		if (!strcmp(s, "/usr/bin/env")) {
			char *a = s + strlen(s) + 1;
			a += strspn(a, " \t");
			a[strcspn(a, " \t\n")] = 0;
			s = a;
		}
		if (!resolve_cmd(s, interp))
			bin = interp;
	}
	if (f)
		fclose(f);
	if (!elfsym_interp(bin, line, sizeof(line)))
		newstate_probe(t, line);
	before = t->nlinks;
	newstate_probe(t, bin);
	elfsym_needed(bin, on_needed, t);
	return t->nlinks > before ? 0 : -1;
}

/* ---- main loop -------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sum_stats(struct tr *t, struct lmt_stats *s)
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

static void human(char *b, size_t n, uint64_t v)
{
	if (v >= 10u << 20)
		snprintf(b, n, "%.1f MiB", v / 1048576.0);
	else if (v >= 10u << 10)
		snprintf(b, n, "%.1f KiB", v / 1024.0);
	else
		snprintf(b, n, "%" PRIu64 " B", v);
}

static void summary(struct tr *t, const struct lmt_stats *s, double secs,
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
	if (evs) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "  consumer: %.0f ns CPU per event\n",
			((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
			 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3 -
			 t->cpu0) / (double)evs);
	}
	if (t->o->top > 0 && evs)
		report_print_top(t->rep, stderr, t->o->top, 1);
	{
		char e[PATH_MAX * 4];
		fprintf(stderr, "  wrote %s (%" PRIu64 " bytes)\n",
			esc_str(e, sizeof(e), t->o->out, strlen(t->o->out), 0), out_bytes);
	}
}

static void drain(struct tr *t)
{
	while (ring_buffer__consume(t->rb) > 0)
		;
}

/* ---- stops ------------------------------------------------------------ */

/* Waits (up to ~0.5 s) until every thread of tgid is stopped or gone. A
 * thread runs programs only until it stops, so then every record the
 * process sent before its stop is in the ring. */
static void wait_stopped(pid_t tgid)
{
	char p[64], st[512];

	for (int i = 0; i < 2500; i++) {
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
static void settle_stops(struct tr *t)
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

/* ---- the command's life ----------------------------------------------- */

/* A pidfd turns readable when the process exits, zombie or not. */
static int target_gone(pid_t pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd < 0)
		return !proc_exists(pid);
	return poll(&p, 1, 0) > 0;
}

static pid_t start_child(char **cmd, int *gate)
{
	int p[2];
	pid_t c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	c = fork();
	if (c < 0)
		return -1;
	if (c == 0) {
		char b;
		close(p[1]);
		/* Wait until the tracer is ready; EOF means it gave up. */
		if (read(p[0], &b, 1) != 1)
			_exit(127);
		execvp(cmd[0], cmd);
		err1("cannot run %s: %s", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*gate = p[1];
	return c;
}

/* Waits for the command, passing on the signals sent to us alone, like
 * strace and time: it is never left behind. */
static void wait_child(struct tr *t)
{
	while (!t->child_done) {
		int status;
		pid_t r;

		if (forward_sig) {
			kill(t->pid, forward_sig);
			forward_sig = 0;
		}
		r = waitpid(t->pid, &status, 0);
		if (r == t->pid) {
			t->child_done = 1;
			t->child_status = status;
		} else if (r < 0 && errno != EINTR) {
			break;
		}
	}
}

/* The command's status as a shell gives it: its exit code, or 128 + the
 * signal that killed it. */
static int child_rc(const struct tr *t)
{
	if (WIFEXITED(t->child_status))
		return WEXITSTATUS(t->child_status);
	if (WIFSIGNALED(t->child_status))
		return 128 + WTERMSIG(t->child_status);
	return LMT_ERR;
}

/* ---- the sidecar ------------------------------------------------------ */

static void write_info(struct tr *t, const struct lmt_stats *st, int done,
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
		in.lost = st->lost + st->missed + t->bad_recs;
		in.lost_sym = st->lost_sym;
		in.lost_vm = st->lost_vm + (uint64_t)t->lost_vm;
		in.in_flight = st->parked;
	}
	info_format(&in, buf, sizeof(buf));
	if (!t->info_made) {
		int reg, fd = outfile_create(t->info_path, t->o->force, &reg, err,
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

/* ---- a trace ---------------------------------------------------------- */

/* Finds the VMs of a running process: 0, or -1 having said why not. */
static int find_vms(struct tr *t, struct pmaps *m, struct vmscan *scan)
{
	const struct topts *o = t->o;
	char why[PATH_MAX + 8];
	int r = pmaps_load(t->pid, m);

	if (r) {
		err1("cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-r));
		return -1;
	}
	r = vm_scan(t->pid, m, o->variant, scan);
	if (r) {
		err1("cannot scan PID %d: %s", (int)t->pid, strerror(-r));
		return -1;
	}
	if (!scan->n) {
		int lj = 0;
		for (size_t i = 0; i < m->n && !lj; i++) {
			char path[128];
			uint64_t off;
			if (m->v[i].perms[2] != 'x' || !pmap_is_file(&m->v[i]))
				continue;
			pmap_file_path(t->pid, &m->v[i], path, sizeof(path));
			lj = !elfsym_offset(path, "luaJIT_setmode", &off);
		}
		/* Self-pointers like L->glref also occur by chance
		 * (allocator free lists): only LuaJIT's own symbols
		 * tell an unknown layout from no LuaJIT at all. */
		if (!lj) {
			err1("PID %d runs no LuaJIT VM", (int)t->pid);
			return -1;
		}
		why[0] = 0;
		if (scan->first_reject[0])
			snprintf(why, sizeof(why), " (%s)", scan->first_reject);
		err1("unrecognised LuaJIT layout in PID %d: LuaJIT is loaded but "
		     "no VM matched %s%s", (int)t->pid,
		     o->variant ? o->variant : "any known variant", why);
		return -1;
	}
	return 0;
}

/* The slots map, shared with BPF (struct lmt_slot). */
static int map_slots(struct tr *t)
{
	/* Array values are 8-byte aligned, so the map is an array of
	 * struct lmt_slot. */
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (sizeof(struct lmt_slot) * LMT_NSLOT + pg - 1) & ~(pg - 1);
	void *mp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(t->skel->maps.slots), 0);

	if (mp == MAP_FAILED) {
		err1("cannot map the VM slots: %s", strerror(errno));
		return -1;
	}
	t->slots = mp;
	t->slots_len = len;
	return 0;
}

static double cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

/* Polls until tracing ends; says why in t->end. */
static void run_loop(struct tr *t, int pidfd, double deadline)
{
	double next_scan = 0;
	int r;

	while (!stop_req) {
		r = ring_buffer__poll(t->rb, 50);
		if (r < 0 && r != -EINTR) {
			err1("ring buffer: %s", strerror(-r));
			t->end = "ring buffer error";
			t->failed = 1;
			return;
		}
		ring_buffer__consume(t->rb);
		if (t->unbatch_req)
			unbatch(t);
		settle_stops(t);
		if (t->w && t->w->err) {
			t->end = "write error";
			return;
		}
		if (t->skel->bss->execd) {
			t->end = "exec";
			if (!t->o->quiet)
				err1("PID %d executed a new program: tracing ended "
				     "there", (int)t->pid);
			return;
		}
		if (deadline && now() >= deadline) {
			t->end = "duration";
			return;
		}
		/* Objects loaded since (C modules): named while they are
		 * mapped. dlopen stops the process for that (dl_state); this
		 * catches the rest (a mmap by hand). */
		if (now() >= next_scan) {
			syms_scan(&t->syms);
			next_scan = now() + 1;
		}
		if (t->o->cmd) {
			int status;
			if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
				t->child_done = 1;
				t->child_status = status;
				t->end = "target exited";
				return;
			}
		} else if (target_gone(t->pid, pidfd)) {
			t->end = "target exited";
			return;
		}
	}
	t->end = "signal";
}

int trace_run(const struct topts *o)
{
	struct tr t = { .o = o, .stops_fd = -1 };
	struct lmt_stats st = { 0 };
	struct mpw *w = NULL;
	struct vmscan scan = { 0 };
	struct pmaps m = { 0 };
	int fd = -1, gate = -1, pidfd = -1, rc = LMT_ERR, r, kst, reg = 0;
	double t0 = now(), deadline = 0;
	struct sigaction sa = { 0 };
	char exe[PATH_MAX], err[PATH_MAX + 128], info[PATH_MAX];
	pid_t guard = -1;

	libbpf_set_print(libbpf_quiet);
	if (preflight())
		return LMT_ERR;
	/* Nothing is created before the target and the options hold. */
	if (outfile_check(o->out, o->force, err, sizeof(err)) ||
	    (!o->floor && snprintf(info, sizeof(info), "%s" INFO_SUFFIX, o->out) <
				  (int)sizeof(info) && !outfile_is_device(o->out) &&
	     outfile_check(info, o->force, err, sizeof(err)))) {
		err1("%s", err);
		return LMT_ERR;
	}
	t.rep = report_new();
	w = malloc(sizeof(*w));
	if (!t.rep || !w) {
		err1("out of memory");
		goto out;
	}
	if (!o->floor)
		t.w = w;

	if (o->cmd) {
		if (resolve_cmd(o->cmd[0], exe)) {
			err1("cannot run %s: command not found", o->cmd[0]);
			goto out;
		}
		snprintf(t.exe, sizeof(t.exe), "%s", exe);
		t.pid = start_child(o->cmd, &gate);
		if (t.pid < 0) {
			err1("cannot start %s: %s", o->cmd[0], strerror(errno));
			goto out;
		}
	} else {
		t.pid = o->pid;
		if (!proc_exists(t.pid)) {
			err1("no such process: %d", (int)t.pid);
			goto out;
		}
		pidfd = (int)syscall(SYS_pidfd_open, t.pid, 0);
		if (find_vms(&t, &m, &scan))
			goto out;
	}

	kst = kernel_keeps_callbacks_on_stack();
	if (open_load(&t, kst) && (!kst || open_load(&t, 0)))
		goto out;
	/* Before any probe: the guardian must hold no probe's descriptor. */
	t.stops_fd = bpf_map__fd(t.skel->maps.stops);
	guard = guard_start(t.stops_fd);
	if (guard < 0) {
		err1("cannot start the guardian process: %s", strerror(errno));
		goto out;
	}
	if (map_slots(&t))
		goto out;
	t.rb = ring_buffer__new(bpf_map__fd(t.skel->maps.rb), on_rec, &t, NULL);
	if (!t.rb) {
		err1("cannot open the ring buffer: %s", strerror(errno));
		goto out;
	}
	if (link_add(&t, bpf_program__attach(t.skel->progs.on_exec))) {
		err1("cannot watch exec: %s", strerror(errno));
		goto out;
	}

	sa.sa_sigaction = on_stop_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	{
		uint32_t tg = (uint32_t)t.pid;
		struct lmt_proc pr = { .spawn = !!o->cmd };
		bpf_map__update_elem(t.skel->maps.procs, &tg, sizeof(tg), &pr,
				     sizeof(pr), BPF_ANY);
	}
	if (o->cmd && cmd_probes(&t, exe)) {
		err1("%s does not export lua_newstate (nor links a "
		     "libluajit that does): cannot trace it from the "
		     "start; start it and use -p", exe);
		goto out;
	}

	/* The stream starts before any allocator probe fires: C symbols of
	 * what is mapped now, then the events prologue. */
	fd = outfile_create(o->out, o->force, &reg, err, sizeof(err));
	if (fd < 0) {
		err1("%s", err);
		goto out;
	}
	if (reg && !o->floor && snprintf(info, sizeof(info), "%s" INFO_SUFFIX,
					 o->out) < (int)sizeof(info))
		t.info_path = info;
	t.wall0 = wall_now();
	write_info(&t, NULL, 0, 0);
	mpw_init(w, fd);
	syms_init(&t.syms, t.pid, emit_sym, &t);
	if (o->pid)
		syms_scan(&t.syms);
	mpw_begin_events(w);

	if (o->pid) {
		for (size_t i = 0; i < scan.n; i++)
			if (add_vm(&t, &scan.v[i]))
				goto out;
		newstate_probes_maps(&t, &m);
	}

	t0 = now();
	t.cpu0 = cpu_ns();
	if (o->duration > 0)
		deadline = t0 + o->duration;
	if (gate >= 0) {
		if (write(gate, "g", 1) != 1) {
			err1("cannot start %s", o->cmd[0]);
			goto out;
		}
		close(gate);
		gate = -1;
		t.child_started = 1;
	}
	if (!o->quiet && o->pid)
		fprintf(stderr, "luamemtrace: tracing PID %d (%zu VM%s, %s); "
			"Ctrl-C to stop\n", (int)t.pid, scan.n,
			scan.n == 1 ? "" : "s", scan.v[0].var->name);

	run_loop(&t, pidfd, deadline);
	if (forward_sig && o->cmd && !t.child_done) {
		kill(t.pid, forward_sig);
		forward_sig = 0;
	}
	/* Stop, then detach so no new records arrive, then drain what is
	 * left. */
	__atomic_store_n(&t.skel->bss->stop, 1, __ATOMIC_SEQ_CST);
	detach_all(&t);
	settle_stops(&t);
	drain(&t);
	slots_left(&t);
	sum_stats(&t, &st);
	r = mpw_finish(w);
	if (r) {
		err1("cannot write %s: %s", o->out, strerror(r));
		t.failed = 1;
	}
	write_info(&t, &st, 1, now() - t0);
	if (r)
		goto out;
	if (!o->quiet)
		summary(&t, &st, now() - t0, w->bytes);
	rc = st.lost + st.lost_sym + st.missed + st.lost_vm + t.bad_recs +
			     (uint64_t)t.lost_vm ? LMT_LOSSY : LMT_OK;
out:
	detach_all(&t);
	if (t.stops_fd >= 0)
		settle_stops(&t);
	if (gate >= 0) {
		close(gate); /* the child exits without running the command */
		waitpid(t.pid, NULL, 0);
	}
	ring_buffer__free(t.rb);
	if (t.slots)
		munmap(t.slots, t.slots_len);
	luamemtrace_bpf__destroy(t.skel);
	syms_free(&t.syms);
	u64map_free(&t.lines, free);
	vm_scan_free(&scan);
	pmaps_free(&m);
	report_free(t.rep);
	free(w);
	if (fd >= 0)
		close(fd);
	if (pidfd >= 0)
		close(pidfd);
	if (t.child_started) {
		/* Like strace and time: the command's status, once it is over. */
		if (!t.child_done && !o->quiet)
			err1("tracing ended (%s); waiting for %s (PID %d) to exit",
			     t.end ? t.end : "error", o->cmd[0], (int)t.pid);
		wait_child(&t);
		if (!o->quiet && t.child_done) {
			if (WIFEXITED(t.child_status) && WEXITSTATUS(t.child_status))
				fprintf(stderr, "  command exited with status %d\n",
					WEXITSTATUS(t.child_status));
			else if (WIFSIGNALED(t.child_status))
				fprintf(stderr, "  command killed by signal %d\n",
					WTERMSIG(t.child_status));
		}
		if (!o->strict || rc == LMT_OK)
			rc = t.child_done ? child_rc(&t) : LMT_ERR;
	}
	return rc;
}
