/* The life of a trace: check, find the target, open and load the BPF
 * object, start the guardian, attach, poll until tracing ends, clean up.
 * The stages it calls: attach.c, consume.c, spawn.c, summary.c. */
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
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "trace.h"

#include "elfsym.h"
#include "esc.h"
#include "guard.h"
#include "info.h"
#include "memprof_write.h"
#include "outfile.h"
#include "proc.h"
#include "report.h"
#include "tracer.h"

volatile sig_atomic_t stop_req;
volatile sig_atomic_t forward_sig;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_req = sig;
	if (si->si_code == SI_USER || si->si_code == SI_QUEUE)
		forward_sig = sig;
}

/* One line on stderr, escaped (esc.h): paths and names in it may come
 * from the target. */

void err1(const char *fmt, ...)
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

double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

/* A pidfd turns readable when the process exits, zombie or not. */
static int target_gone(pid_t pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd < 0)
		return !proc_exists(pid);
	return poll(&p, 1, 0) > 0;
}

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

/* Polls until tracing ends; says why in t->end. */
static void run_loop(struct tr *t)
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
		if (t->deadline && now() >= t->deadline) {
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
		} else if (target_gone(t->pid, t->pidfd)) {
			t->end = "target exited";
			return;
		}
	}
	t->end = "signal";
}

/* -- Stages -------------------------------------------------------------- */

/* The output files can be made: checked, nothing created yet. */
static int check_output(struct tr *t)
{
	const struct topts *o = t->o;
	char err[PATH_MAX + 128];

	t->info[0] = 0;
	if (!o->floor && !outfile_is_device(o->out) &&
	    snprintf(t->info, sizeof(t->info), "%s" INFO_SUFFIX, o->out) >=
		    (int)sizeof(t->info)) {
		err1("output file name too long");
		return -1;
	}
	if (outfile_check(o->out, o->force, 1, err, sizeof(err)) ||
	    (t->info[0] && outfile_check(t->info, o->force, 0, err, sizeof(err)))) {
		err1("%s", err);
		return -1;
	}
	return 0;
}

/* The target: a running process and its VMs, or -- COMMAND started and
 * held at its gate until we are ready. */
static int select_target(struct tr *t)
{
	const struct topts *o = t->o;

	if (o->cmd) {
		if (resolve_cmd(o->cmd[0], t->exe)) {
			err1("cannot run %s: command not found", o->cmd[0]);
			return -1;
		}
		t->pid = start_child(o->cmd, &t->gate);
		if (t->pid < 0) {
			err1("cannot start %s: %s", o->cmd[0], strerror(errno));
			return -1;
		}
		return 0;
	}
	t->pid = o->pid;
	if (!proc_exists(t->pid)) {
		err1("no such process: %d", (int)t->pid);
		return -1;
	}
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	return find_vms(t, &t->maps, &t->scan);
}

/* Open, configure and load the BPF object; then, before any probe, the
 * guardian (it must hold no probe's descriptor); the slots, the ring, the
 * exec watch, the process in procs, and -- COMMAND's hooks. */
static int open_bpf(struct tr *t)
{
	const int kst = kernel_keeps_callbacks_on_stack();
	struct lmt_proc pr = { .spawn = !!t->o->cmd };
	uint32_t tg = (uint32_t)t->pid;

	if (open_load(t, kst) && (!kst || open_load(t, 0)))
		return -1;
	t->stops_fd = bpf_map__fd(t->skel->maps.stops);
	if (guard_start(t->stops_fd) < 0) {
		err1("cannot start the guardian process: %s", strerror(errno));
		return -1;
	}
	if (map_slots(t))
		return -1;
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.rb), on_rec, t, NULL);
	if (!t->rb) {
		err1("cannot open the ring buffer: %s", strerror(errno));
		return -1;
	}
	if (link_add(t, bpf_program__attach(t->skel->progs.on_exec))) {
		err1("cannot watch exec: %s", strerror(errno));
		return -1;
	}
	if (bpf_map__update_elem(t->skel->maps.procs, &tg, sizeof(tg), &pr,
				 sizeof(pr), BPF_ANY))
		return -1;
	/* The command must be traceable before its output is made. */
	if (t->o->cmd && cmd_probes(t, t->exe)) {
		err1("%s does not export lua_newstate (nor links a libluajit that "
		     "does): cannot trace it from the start; start it and use -p",
		     t->exe);
		return -1;
	}
	return 0;
}

/* The stream, its sidecar, and the stream's head: C symbols of what is
 * mapped now, then the events prologue, before any allocator probe. */
static int open_output(struct tr *t)
{
	const struct topts *o = t->o;
	char err[PATH_MAX + 128];
	int reg = 0;

	t->wbuf = malloc(sizeof(*t->wbuf));
	if (!t->wbuf) {
		err1("out of memory");
		return -1;
	}
	if (!o->floor)
		t->w = t->wbuf;
	t->fd = outfile_create(o->out, o->force, 1, &reg, err, sizeof(err));
	if (t->fd < 0) {
		err1("%s", err);
		return -1;
	}
	if (reg && t->info[0])
		t->info_path = t->info;
	t->wall0 = wall_now();
	write_info(t, NULL, 0, 0);
	mpw_init(t->wbuf, t->fd);
	syms_init(&t->syms, t->pid, emit_sym, t);
	if (o->pid)
		syms_scan(&t->syms);
	mpw_begin_events(t->wbuf);
	return 0;
}

/* -p: the VMs found and the hooks of their objects; -- COMMAND: let go. */
static int attach_target(struct tr *t)
{
	const struct topts *o = t->o;
	struct sigaction sa = { .sa_sigaction = on_stop_signal,
				.sa_flags = SA_SIGINFO };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; o->pid && i < t->scan.n; i++)
		if (add_vm(t, &t->scan.v[i]))
			return -1;
	if (o->pid)
		newstate_probes_maps(t, &t->maps);
	t->t0 = now();
	t->cpu0 = cpu_ns();
	if (o->duration > 0)
		t->deadline = t->t0 + o->duration;
	if (t->gate >= 0) {
		if (write(t->gate, "g", 1) != 1) {
			err1("cannot start %s", o->cmd[0]);
			return -1;
		}
		close(t->gate);
		t->gate = -1;
		t->child_started = 1;
	}
	if (!o->quiet && o->pid)
		fprintf(stderr, "luamemtrace: tracing PID %d (%zu VM%s, %s); "
			"Ctrl-C to stop\n", (int)t->pid, t->scan.n,
			t->scan.n == 1 ? "" : "s", t->scan.v[0].var->name);
	return 0;
}

/* Tracing ends at one instant (the stop flag), then the probes go so no
 * new records come, then what is left is drained and the stream ended. */
static int finish(struct tr *t)
{
	struct lmt_stats st;
	int r;

	forward_signal(t);
	__atomic_store_n(&t->skel->bss->stop, 1, __ATOMIC_SEQ_CST);
	t->stopping = 1; /* a new VM's record still queued: not attached */
	detach_all(t);
	settle_stops(t);
	drain(t);
	slots_left(t);
	sum_stats(t, &st);
	r = mpw_finish(t->wbuf);
	if (r) {
		err1("cannot write %s: %s", t->o->out, strerror(r));
		t->failed = 1;
	}
	t->finished = 1;
	write_info(t, &st, 1, now() - t->t0);
	if (r)
		return LMT_ERR;
	if (!t->o->quiet)
		summary(t, &st, now() - t->t0, t->wbuf->bytes);
	if (t->failed)
		return LMT_ERR; /* said when it happened */
	return trace_lossy(t, &st) ? LMT_LOSSY : LMT_OK;
}

static void cleanup(struct tr *t)
{
	t->stopping = 1;
	detach_all(t);
	/* An error after the output was made: the stream still ends with its
	 * epilogue, and its sidecar says why it is incomplete. */
	if (t->fd >= 0 && !t->finished) {
		if (!t->end)
			t->end = "error";
		t->failed = 1;
		mpw_finish(t->wbuf);
		write_info(t, NULL, 1, t->t0 ? now() - t->t0 : 0);
	}
	if (t->stops_fd >= 0)
		settle_stops(t);
	if (t->gate >= 0) {
		close(t->gate); /* the child exits without running the command */
		waitpid(t->pid, NULL, 0);
	}
	ring_buffer__free(t->rb);
	if (t->slots)
		munmap(t->slots, t->slots_len);
	luamemtrace_bpf__destroy(t->skel);
	syms_free(&t->syms);
	u64map_free(&t->lines, free);
	vm_scan_free(&t->scan);
	pmaps_free(&t->maps);
	report_free(t->rep);
	free(t->wbuf);
	if (t->fd >= 0)
		close(t->fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
}

/* -- COMMAND, like strace and time: its status, once it is over, unless
 * --strict makes the tracer's own (an error, or loss) the answer. */
static int command_status(struct tr *t, int rc)
{
	const struct topts *o = t->o;

	if (!t->child_started)
		return rc;
	if (!t->child_done && !o->quiet)
		err1("tracing ended (%s); waiting for %s (PID %d) to exit",
		     t->end ? t->end : "error", o->cmd[0], (int)t->pid);
	wait_child(t);
	if (!o->quiet && t->child_done) {
		if (WIFEXITED(t->child_status) && WEXITSTATUS(t->child_status))
			fprintf(stderr, "  command exited with status %d\n",
				WEXITSTATUS(t->child_status));
		else if (WIFSIGNALED(t->child_status))
			fprintf(stderr, "  command killed by signal %d\n",
				WTERMSIG(t->child_status));
	}
	if (o->strict && rc != LMT_OK)
		return rc;
	return t->child_done ? child_rc(t) : LMT_ERR;
}

/* -- A trace ------------------------------------------------------------- */

int trace_run(const struct topts *o)
{
	struct tr t = { .o = o, .stops_fd = -1, .gate = -1, .pidfd = -1,
			.fd = -1 };
	int rc = LMT_ERR;

	libbpf_set_print(libbpf_quiet);
	/* Nothing is created before the target and the options hold. */
	if (preflight() || check_output(&t))
		return LMT_ERR;
	t.rep = report_new();
	if (!t.rep)
		err1("out of memory");
	else if (!select_target(&t) && !open_bpf(&t) && !open_output(&t) &&
		 !attach_target(&t)) {
		run_loop(&t);
		rc = finish(&t);
	}
	cleanup(&t);
	return command_status(&t, rc);
}
