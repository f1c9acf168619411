/* The life of a trace: check, find the target, open and load the BPF
 * object, start the guardian, attach, poll until tracing ends, clean up.
 * The life of its processes and VMs is session/life.c's. */
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

#include "util/knobs.h"
#include "session/session.h"
#include "session/life.h"
#include "session/stops.h"
#include "capture/ring.h"

#include "target/elfsym.h"
#include "util/esc.h"
#include "session/guard.h"
#include "format/info.h"
#include "format/memprof_write.h"
#include "streams/outfile.h"
#include "target/proc.h"
#include "report/report.h"
#include "session/tracer.h"
#include "convert/jit.h"
#include "convert/callstacks.h"
#include "session/duty.h"
#include "session/spawn.h"
#include "session/select.h"
#include "probes/object.h"
#include "probes/hooks.h"
#include "session/summary.h"
#include "probes/alloc.h"


static int libbpf_quiet(enum libbpf_print_level lvl, const char *fmt,
			va_list ap)
{
	if (!knobs.libbpf_debug)
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

/* Checks what the kernel and our privileges must provide, and probes
 * what it offers (t->probes.kf). */
/* What the options ask of the probes (probes/probes.h); -o DIR's
 * following is set once the output is checked (out_check). */
static struct probe_opts probe_opts_of(const struct topts *o)
{
	return (struct probe_opts){
		.verbose = o->verbose, .quiet = o->quiet, .all = o->all,
		.exes = o->exes, .nexes = o->nexes, .mode = o->probes,
		.floor = o->floor, .floor_entry = o->floor_entry,
		.floor_events = o->floor_events, .ab = o->ab,
		.ab_without = o->ab_without, .ab_ms = o->ab_ms,
		.jit_trace = o->jit_trace, .stacks = o->stacks, .no_loss = o->no_loss,
		.rb_bytes = o->rb_bytes, .duty = o->duty != 0,
	};
}

static int preflight(struct tr *t)
{
	const char *sys = knobs.sysfs, *proc = knobs.procfs;
	char p[PATH_MAX];

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
	{
		char why[256];

		if (kfeat_probe(&t->probes.kf, why, sizeof(why))) {
			err1("%s", why);
			return -1;
		}
		kfeat_restrict(&t->probes.kf);
		if (t->o->verbose)
			kfeat_print(&t->probes.kf, stderr);
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL) != 1 ||
	    libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1 ||
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) != 1) {
		err1("this kernel cannot load the BPF programs: needs Linux "
		     "%d.%d+ (ring buffers, atomics, bpf_loop) with "
		     "CONFIG_BPF_SYSCALL=y", KFEAT_MIN_MAJOR, KFEAT_MIN_MINOR);
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
			bpf_map__fd(t->probes.skel->maps.slots), 0);

	if (mp == MAP_FAILED) {
		err1("cannot map the VM slots: %s", strerror(errno));
		return -1;
	}
	t->cap.slots = mp;
	t->probes.slots = mp;
	t->cap.slots_len = len;
	/* The ring's positions, read only: its consumer's page, then its
	 * producer's (merge_round). */
	mp = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, bpf_map__fd(t->probes.skel->maps.rb), 0);
	if (mp == MAP_FAILED) {
		err1("cannot map the ring buffer's positions: %s", strerror(errno));
		return -1;
	}
	t->cap.rb_pos = mp;
	t->cap.rb_pos_len = 2 * pg;
	return 0;
}

/* Processes that exited: what they sent is read, their streams end. The
 * exits are seen first, then the ring drained once: a process's records
 * are all in the ring before its exit, and one that exits while another's
 * stream is ended waits for the next round (draining only before the
 * first lost the records of a second that exited meanwhile). */
static void reap(struct tr *t)
{
	unsigned n = 0;

	for (struct tproc *p = t->procs; p; p = p->next) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

		p->exited = !p->ended && p->pidfd >= 0 && poll(&pf, 1, 0) > 0;
		n += p->exited;
	}
	if (!n)
		return;
	drain(&t->cap);
	for (struct tproc *p = t->procs; p; p = p->next)
		if (p->exited) {
			const uint32_t tg = (uint32_t)p->pid;

			proc_end(t, p, "exited");
			if (t->o->no_loss) { /* bpf/ring.h: its ring share */
				bpf_map__delete_elem(t->probes.skel->maps.ring_sent, &tg, sizeof(tg), 0);
				bpf_map__delete_elem(t->probes.skel->maps.ring_taken, &tg, sizeof(tg), 0);
			}
		}
}

/* Polls until tracing ends; says why in t->end. */
static void run_loop(struct tr *t)
{
	double next_scan = 0;
	int r;

	duty_start(t);
	while (!stop_req) {
		/* Waiting for a process to stop, or a window due: back soon. */
		r = ring_buffer__poll(t->cap.rb, duty_wait_ms(t, t->settling ? 1 : 50));
		if (r < 0 && r != -EINTR) {
			err1("ring buffer: %s", strerror(-r));
			t->end = "ring buffer error";
			t->failed = 1;
			return;
		}
		ring_buffer__consume(t->cap.rb);
		if (t->cap.unbatch_req)
			unbatch(&t->cap);
		settle_stops(t, 0);
		merge_round(&t->cap, t->st.one);
		duty_turn(t);
		foreign_check(&t->probes);
		if (t->o->live)
			t->o->live(t);
		for (unsigned i = 0; i < t->st.nouts; i++)
			if (t->st.outs[i]->w.err && !t->st.outs[i]->finished) {
				if (!t->st.dir) {
					t->end = "write error";
					return;
				}
				err1("cannot write %s: %s", t->st.outs[i]->path,
				     strerror(t->st.outs[i]->w.err));
				t->st.outs[i]->failed = 1;
				stream_end(t, t->st.outs[i], "write error");
			}
		if (t->deadline && now() >= t->deadline) {
			t->end = "duration";
			return;
		}
		/* Objects loaded since (C modules): named while they are
		 * mapped. dlopen stops the process for that (dl_state); this
		 * catches the rest (a mmap by hand). */
		if (now() >= next_scan) {
			for (struct tproc *p = t->procs; p; p = p->next)
				if (p->attached && !p->ended)
					syms_scan(&p->cv.syms);
			if (t->o->all)
				select_rescan(t);
			next_scan = now() + 1;
		}
		if (t->o->cmd) {
			int status;
			if (waitpid(t->probes.cmd_pid, &status, WNOHANG) == t->probes.cmd_pid) {
				t->child_done = 1;
				t->child_status = status;
				t->end = "target exited";
				return;
			}
		}
		reap(t);
		if (!t->o->all && !t->o->cmd && !t->nlive) {
			struct tproc *p = t->procs;
			t->end = p && p->end && !strcmp(p->end, "exec") ? "exec" :
				 "target exited";
			return;
		}
	}
	t->end = "signal";
}

/* -- Stages -------------------------------------------------------------- */

/* The targets: running processes and their VMs (--all: found when
 * attaching), or -- COMMAND started and held at its gate until we are
 * ready. */
static int select_target(struct tr *t, struct vmscan *scans)
{
	const struct topts *o = t->o;

	if (o->cmd) {
		struct tproc *p;
		if (resolve_cmd(o->cmd[0], t->cmd_exe)) {
			err1("cannot run %s: command not found", o->cmd[0]);
			return -1;
		}
		t->probes.cmd_pid = start_child(o, &t->gate);
		if (t->probes.cmd_pid < 0) {
			err1("cannot start %s: %s", o->cmd[0], strerror(errno));
			return -1;
		}
		p = proc_new(t, t->probes.cmd_pid, 0);
		if (!p)
			return -1;
		snprintf(p->exe, sizeof(p->exe), "%s", t->cmd_exe);
		snprintf(p->comm, sizeof(p->comm), "%.15s",
			 strrchr(t->cmd_exe, '/') ? strrchr(t->cmd_exe, '/') + 1 :
						    t->cmd_exe);
		proc_link(t, p);
		return 0;
	}
	for (unsigned i = 0; i < o->npids; i++) {
		if (!(t->sel[i] = proc_new(t, o->pids[i], 0)) ||
		    proc_find_vms(t, t->sel[i], &scans[i], 0))
			return -1;
	}
	return 0;
}

/* The object loaded with the kernel-stack reader where the kernel has
 * it, else (or if it does not load) the compatible one: 0 or -1, said. */
static int load_object(struct tr *t)
{
	return open_load(&t->probes, t->probes.kf.kst) && (!t->probes.kf.kst || open_load(&t->probes, 0)) ? -1 : 0;
}

/* Open, configure and load the BPF object; then, before any probe, the
 * guardian (it must hold no probe's descriptor); the slots, the ring, the
 * exec, fork and SIGCONT watches, and -- COMMAND's hooks. */
static int open_bpf(struct tr *t)
{
	if (load_object(t))
		return -1;
	t->cap.skel = t->probes.skel;
	if (t->st.dir && t->probes.skel->rodata->fork_stop == LMT_FORK_STOP_NONE)
		err1("warning: this kernel cannot stop a forked child before it runs "
		     "(needs 6.13, or schedule_tail under fexit): children of traced "
		     "processes are not followed, only counted");
	t->stops_fd = bpf_map__fd(t->probes.skel->maps.lmt_stops);
	t->guardian = guard_start(t->stops_fd, NULL);
	if (t->guardian < 0) {
		err1("cannot start the guardian process: %s", strerror(errno));
		return -1;
	}
	/* Other tracers see our stops only through this record. */
	if (guard_record(t->guardian, t->stops_fd)) {
		err1("cannot write /run/luamemtrace/peers: %s", strerror(errno));
		return -1;
	}
	if (map_slots(t))
		return -1;
	t->cap.rb = ring_buffer__new(bpf_map__fd(t->probes.skel->maps.rb), on_rec, &t->cap, NULL);
	if (!t->cap.rb) {
		err1("cannot open the ring buffer: %s", strerror(errno));
		return -1;
	}
	if (link_add(&t->probes.links, bpf_program__attach(t->probes.skel->progs.on_exec))) {
		err1("cannot watch exec: %s", strerror(errno));
		return -1;
	}
	if (link_add(&t->probes.links, bpf_program__attach(t->probes.skel->progs.on_fork))) {
		err1("cannot watch fork: %s", strerror(errno));
		return -1;
	}
	if (bpf_program__autoload(t->probes.skel->progs.child_start) &&
	    link_add(&t->probes.links, bpf_program__attach(t->probes.skel->progs.child_start))) {
		err1("cannot watch new processes' first scheduling: %s", strerror(errno));
		return -1;
	}
	if (link_add(&t->probes.links, bpf_program__attach(t->probes.skel->progs.on_signal))) {
		err1("cannot watch SIGCONT: %s", strerror(errno));
		return -1;
	}
	if (t->o->cmd) {
		struct lmt_proc pr = { .spawn = 1 };
		uint32_t tg = (uint32_t)t->probes.cmd_pid;
		struct tproc *c = proc_of(t, tg);
		char bin[PATH_MAX];

		if (bpf_map__update_elem(t->probes.skel->maps.procs, &tg, sizeof(tg), &pr,
					 sizeof(pr), BPF_ANY))
			return -1;
		/* The command must be traceable before its output is made. */
		cmd_program(t->cmd_exe, bin);
		if (cmd_probes(&t->probes, c ? &c->probes : NULL, bin)) {
			err1("%s does not export lua_newstate (nor links a libluajit "
			     "that does): cannot trace it from the start; start it "
			     "and use -p", t->cmd_exe);
			return -1;
		}
	}
	return 0;
}

/* -o FILE: the stream, its sidecar, and the stream's head (the C symbols
 * of what is mapped now, then the events prologue), before any allocator
 * probe. -o DIR: the directory; streams come with their VMs. */
static int open_output(struct tr *t)
{
	char err[PATH_MAX + 128];

	if (t->st.dir) {
		if (outfile_dir(t->o->out, 1, err, sizeof(err)) &&
		    outfile_dir(t->o->out, 0, err, sizeof(err))) {
			err1("%s", err);
			return -1;
		}
		return 0;
	}
	if (t->o->npids) {
		syms_scan(&t->sel[0]->cv.syms);
		return stream_one(t, t->sel[0]);
	}
	return stream_one(t, NULL);
}

/* -p: the VMs found and the hooks of their objects; --all: every LuaJIT
 * process; -- COMMAND: let go. */
static int attach_target(struct tr *t, struct vmscan *scans)
{
	const struct topts *o = t->o;

	signals_catch();
	/* The allocators' probes once all are attached: processes that
	 * share a file may share a link (alloc_probes_on). */
	t->probes.defer = t->probes.sess && !o->duty;
	for (unsigned i = 0; i < o->npids; i++) {
		struct tproc *p = t->sel[i];
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

		t->sel[i] = NULL; /* linked: the trace's now */
		if (proc_attach(t, p, scans[i].v, scans[i].n))
			return -1;
		if (t->cap.unbatch_req) /* its VMs share a ud (add_vm) */
			unbatch(&t->cap);
		/* Gone while we attached (its PID may be another's now). */
		if (poll(&pf, 1, 0) > 0) {
			err1("PID %d exited while luamemtrace attached", (int)p->pid);
			return -1;
		}
	}
	if (o->all && select_all(t))
		return -1;
	if (t->cap.unbatch_req)
		unbatch(&t->cap);
	if (t->probes.defer) {
		t->probes.defer = 0;
		if (alloc_probes_on(&t->probes, 1))
			return -1;
	}
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
	if (!o->quiet && o->npids == 1)
		fprintf(stderr, "luamemtrace: tracing PID %d (%zu VM%s, %s); "
			"Ctrl-C to stop\n", (int)o->pids[0], scans[0].n,
			scans[0].n == 1 ? "" : "s", scans[0].v[0].var->name);
	else if (!o->quiet && o->npids)
		fprintf(stderr, "luamemtrace: tracing %u processes; Ctrl-C to "
			"stop\n", o->npids);
	else if (!o->quiet && o->all)
		fprintf(stderr, "luamemtrace: tracing %u LuaJIT process%s, and "
			"those that start; Ctrl-C to stop\n", t->nlive,
			t->nlive == 1 ? "" : "es");
	return 0;
}

/* Tracing ends at one instant (the stop flag), then the probes go so no
 * new records come, then what is left is drained and the streams ended. */
static int finish(struct tr *t)
{
	struct lmt_stats st;
	int err = 0;

	forward_signal(t);
	duty_end(t);
	if (t->o->at_end)
		t->o->at_end(t); /* still traced: the trace goes up to the copy */
	__atomic_store_n(&t->probes.skel->bss->stop, 1, __ATOMIC_SEQ_CST);
	t->stopping = 1; /* a new VM's record still queued: not attached */
	for (struct tproc *p = t->procs; p; p = p->next)
		proc_links_free(&p->probes, 0);
	links_free(&t->probes.links);
	links_join();
	settle_stops(t, 1);
	drain(&t->cap);
	slots_left(&t->cap, 0, 0);
	for (unsigned i = 0; i < t->st.nouts; i++) {
		struct tout *o = t->st.outs[i];
		if (!o->finished)
			stream_end(t, o, t->end);
		if (o->failed)
			err = 1;
	}
	sum_stats(t, &st);
	if (err && !t->st.dir)
		return LMT_ERR;
	if (!t->o->quiet)
		summary(t, &st, now() - t->t0);
	if (t->failed || err)
		return LMT_ERR; /* said when it happened */
	return trace_lossy(t, &st) ? LMT_LOSSY : LMT_OK;
}

static void cleanup(struct tr *t)
{
	duty_end(t);
	t->stopping = 1;
	for (struct tproc *p = t->procs; p; p = p->next)
		proc_links_free(&p->probes, 0);
	links_free(&t->probes.links);
	links_join();
	/* An error after the output was made: the stream still ends with its
	 * epilogue, and its sidecar says why it is incomplete. */
	for (unsigned i = 0; i < t->st.nouts; i++)
		if (!t->st.outs[i]->finished) {
			t->failed = 1;
			stream_end(t, t->st.outs[i], t->end ? t->end : "error");
		}
	if (t->stops_fd >= 0)
		settle_stops(t, 1);
	if (t->gate >= 0) {
		close(t->gate); /* the child exits without running the command */
		waitpid(t->probes.cmd_pid, NULL, 0);
	}
	ring_buffer__free(t->cap.rb);
	if (t->cap.slots)
		munmap(t->cap.slots, t->cap.slots_len);
	if (t->cap.rb_pos)
		munmap(t->cap.rb_pos, t->cap.rb_pos_len);
	luamemtrace_bpf__destroy(t->probes.skel);
	for (unsigned i = 0; t->sel && i < t->o->npids; i++)
		if (t->sel[i])
			proc_drop(t, t->sel[i]);
	free(t->sel);
	while (t->procs) {
		struct tproc *p = t->procs;
		t->procs = p->next;
		for (unsigned i = 0; i < p->nvm; i++) {
			vm_state_free(p->vms[i]);
			free(p->vms[i]);
		}
		proc_drop(t, p);
	}
	for (unsigned i = 0; i < t->st.nouts; i++) {
		report_free(t->st.outs[i]->rep);
		if (t->st.outs[i]->fd >= 0)
			close(t->st.outs[i]->fd);
		free(t->st.outs[i]);
	}
	free(t->st.outs);
	u64map_free(&t->pmap, NULL);
	u64map_free(&t->vmap, NULL);
	u64map_free(&t->cap.awaits, free);
	u64set_free(&t->cap.exiting);
	u64set_free(&t->probes.watched);
	u64set_free(&t->probes.foreign);
	u64set_free(&t->st.names);
	u64set_free(&t->rescan);
	select_free();
}

/* VMs traced (those of processes left out by --exe not counted). */
static unsigned vms_traced(const struct tr *t)
{
	unsigned n = 0;

	for (const struct tproc *p = t->procs; p; p = p->next)
		if (p->attached && !p->ignored)
			n += p->nvm;
	return n;
}

/* -- COMMAND that traced no VM: why (each VM refused was said when it
 * came); NULL if it traced one. */
static const char *nothing_traced(const struct tr *t)
{
	if (!t->o->cmd || !t->child_started || vms_traced(t))
		return NULL;
	if (select_unmatched())
		return "no VM matched a known LuaJIT layout";
	if (t->lost_vm)
		return "no VM could be traced";
	return "no LuaJIT VM appeared (lua_newstate returned none)";
}

/* -- COMMAND, like strace and time: its status, once it is over, unless
 * --strict makes the tracer's own (an error, or loss) the answer; or 1
 * when nothing was traced (none says why, last): the stream is empty,
 * whatever the command's status (said above it). */
static int command_status(struct tr *t, int rc, const char *none)
{
	const struct topts *o = t->o;

	if (!t->child_started)
		return rc;
	if (!t->child_done && !o->quiet)
		err1("tracing ended (%s); waiting for %s (PID %d) to exit",
		     t->end ? t->end : "error", o->cmd[0], (int)t->probes.cmd_pid);
	wait_child(t);
	if (!o->quiet && t->child_done) {
		if (WIFEXITED(t->child_status) && WEXITSTATUS(t->child_status))
			fprintf(stderr, "  command exited with status %d\n",
				WEXITSTATUS(t->child_status));
		else if (WIFSIGNALED(t->child_status))
			fprintf(stderr, "  command killed by signal %d\n",
				WTERMSIG(t->child_status));
	}
	if (none) {
		err1("nothing traced: %s (PID %d): %s%s", o->cmd[0], (int)t->probes.cmd_pid, none,
		     select_unmatched() ? " (said above; luamemtrace --list-variants)" :
		     t->lost_vm	       ? " (said above)" :
					 "");
		return LMT_ERR;
	}
	if (o->strict && rc != LMT_OK)
		return rc;
	return t->child_done ? child_rc(t) : LMT_ERR;
}

/* -- --check -------------------------------------------------------------- */

int trace_check(const struct topts *o)
{
	struct tr t = { .o = o, .stops_fd = -1, .gate = -1 };
	struct topts v = *o;
	int rc = LMT_ERR;

	libbpf_set_print(libbpf_quiet);
	v.verbose = 0;
	t.o = &v;
	t.probes.o = probe_opts_of(&v);
	if (preflight(&t))
		return LMT_ERR;
	kfeat_print(&t.probes.kf, stdout);
	fflush(stdout);
	/* What the probes say is only true if the object loads. */
	if (!load_object(&t)) {
		printf("  the BPF object:       loads (%s)\n", bpf_program__name(t.probes.enter));
		rc = 0;
	}
	luamemtrace_bpf__destroy(t.probes.skel);
	return rc;
}

/* -- A trace ------------------------------------------------------------- */

/* What capture asks of the session and reports up (struct capture_ops;
 * ctx: the trace), and who handles it. */
static struct cap_vm *cap_vm_get(void *ctx, uint32_t tgid, uint32_t id)
{
	struct tvm *v = vm_get(ctx, tgid, id);

	return v ? &v->cap : NULL;
}

static struct cap_vm *cap_vm_new(void *ctx, uint32_t tgid, uint32_t id)
{
	struct tproc *p = proc_of(ctx, tgid);
	struct tvm *v;

	if (!p || p->ignored || vms_full(p) || !(v = life_vm_new(ctx, p, id)))
		return NULL;
	return &v->cap;
}

static int cap_vms_full(void *ctx, uint32_t tgid)
{
	const struct tproc *p = proc_of(ctx, tgid);

	return p && vms_full(p);
}

static int cap_each_vm(void *ctx, uint32_t tgid, int live,
		       int (*fn)(void *arg, struct cap_vm *v), void *arg)
{
	struct tr *t = ctx;
	struct tproc *p = live ? proc_of(t, tgid) : t->procs;
	int r;

	for (; p; p = live ? NULL : p->next)
		for (unsigned i = 0; (!tgid || (uint32_t)p->pid == tgid) && i < p->nvm; i++)
			if ((r = fn(arg, &p->vms[i]->cap)))
				return r;
	return 0;
}

static void cap_newvm(void *ctx, const struct lmt_newvm *n)
{
	select_newvm(ctx, n);
}

static void cap_fork(void *ctx, const struct lmt_fork *f)
{
	life_fork(ctx, f);
}

static void cap_exec(void *ctx, uint32_t tgid)
{
	life_exec(ctx, tgid);
}

/* Read while the process is stopped (settle_stops). */
static void cap_mapped(void *ctx, uint32_t tgid)
{
	u64set_add(&((struct tr *)ctx)->rescan, proc_key(tgid));
}

static const struct capture_ops ops = {
	.vm_get = cap_vm_get,
	.vm_new = cap_vm_new,
	.vms_full = cap_vms_full,
	.each_vm = cap_each_vm,
	.newvm = cap_newvm,
	.fork = cap_fork,
	.exec = cap_exec,
	.mapped = cap_mapped,
};

/* What probes ask of the session (struct probes_ops; ctx: the trace). */
static int pr_each_proc(void *ctx, enum probes_which which,
			int (*fn)(void *arg, struct probe_proc *p), void *arg)
{
	const struct tr *t = ctx;
	int r;

	for (struct tproc *p = t->procs; p; p = p->next) {
		if (which != PROBES_ALL && (!p->attached || (which == PROBES_LIVE && p->ended)))
			continue;
		if ((r = fn(arg, &p->probes)))
			return r;
	}
	return 0;
}

static const struct probes_ops pr_ops = { .each_proc = pr_each_proc };

int trace_run(const struct topts *o)
{
	struct tr t = { .o = o, .stops_fd = -1, .gate = -1,
			.cap = { .ops = &ops, .no_loss = o->no_loss },
			.probes = { .o = probe_opts_of(o), .ops = &pr_ops,
				    .duty_off = o->duty != 0 } };
	struct vmscan *scans = calloc(o->npids + 1, sizeof(*scans));
	const char *none = NULL;
	char end[160];
	int rc = LMT_ERR;

	t.cap.ctx = &t;
	t.probes.ctx = &t;
	t.sel = calloc(o->npids + 1, sizeof(*t.sel));
	t.st.o = (struct out_opts){ .out = o->out, .force = o->force, .floor = o->floor,
				    .stacks = o->stacks, .quiet = o->quiet, .top = o->top,
				    .live = o->live != NULL, .several = o->all || o->npids > 1 };
	libbpf_set_print(libbpf_quiet);
	/* Nothing is created before the targets and the options hold. */
	if (!scans || !t.sel || preflight(&t) || out_check(&t.st)) {
		free(scans);
		free(t.sel);
		return LMT_ERR;
	}
	t.probes.o.follow = t.st.dir;
	if (!select_target(&t, scans) && !open_bpf(&t) && !open_output(&t) &&
	    !attach_target(&t, scans)) {
		run_loop(&t);
		/* The sidecar says it too; a VM refused makes it incomplete. */
		if ((none = nothing_traced(&t))) {
			snprintf(end, sizeof(end), "%s; %s", t.end, none);
			t.end = end;
			t.failed |= t.lost_vm > 0;
		}
		rc = finish(&t);
	}
	cleanup(&t);
	for (unsigned i = 0; i < o->npids; i++)
		vm_scan_free(&scans[i]);
	free(scans);
	return command_status(&t, rc, none);
}
