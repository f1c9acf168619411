/* Kernel features (see probes/kfeat.h). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util/knobs.h"
#include "probes/kfeat.h"

/* -- Probes ---------------------------------------------------------------- */

/* A program that returns 0: what the probes below load. */
static const struct bpf_insn ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

/* Does a link of attach type type get past its type? A sleepable kprobe
 * program of that expected type, linked on "/": a kernel with the type
 * looks the path up and refuses a directory (EBADF); one without it
 * refuses the type (EINVAL), whatever the program's load said (a kprobe
 * program's expected type is not checked at load before 6.6). Nothing
 * is ever attached. */
static int link_type(uint32_t type)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = (enum bpf_attach_type)type,
		    .prog_flags = BPF_F_SLEEPABLE);
	const uint64_t off = 0;
	struct lmt_um_attr l = { .attach_type = type,
				 .path = (uint64_t)(uintptr_t)"/",
				 .offsets = (uint64_t)(uintptr_t)&off,
				 .cnt = 1 };
	union bpf_attr a;
	int pfd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", ret0, 2, &opts);
	int fd, ok;

	if (pfd < 0)
		return 0;
	l.prog_fd = (uint32_t)pfd;
	memset(&a, 0, sizeof(a));
	memcpy(&a, &l, sizeof(l));
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	ok = fd < 0 && errno == EBADF;
	if (fd >= 0)
		close(fd);
	close(pfd);
	return ok;
}

/* Can fexit attach to fn? A do-nothing fexit program on it, attached and
 * detached at once (a trampoline exists only for functions ftrace may
 * patch, which BTF alone does not tell). */
static int fexit_ok(const struct btf *b, const char *fn)
{
	const int id = btf__find_by_name_kind(b, fn, BTF_KIND_FUNC);
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FEXIT,
		    .attach_btf_id = (uint32_t)id);
	int pfd, lfd;

	if (id <= 0)
		return 0;
	pfd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", ret0, 2, &opts);
	if (pfd < 0)
		return 0;
	lfd = bpf_raw_tracepoint_open(NULL, pfd);
	if (lfd >= 0)
		close(lfd);
	close(pfd);
	return lfd >= 0;
}

int kfeat_probe(struct kfeat *k, char *err, size_t errlen)
{
	struct utsname u;
	struct btf *b;

	memset(k, 0, sizeof(*k));
	if (!uname(&u)) {
		snprintf(k->release, sizeof(k->release), "%s", u.release);
		if (sscanf(u.release, "%u.%u", &k->major, &k->minor) != 2)
			k->major = k->minor = 0;
	}
	if (k->major && (k->major < KFEAT_MIN_MAJOR ||
			 (k->major == KFEAT_MIN_MAJOR && k->minor < KFEAT_MIN_MINOR))) {
		snprintf(err, errlen, "kernel %s is older than %d.%d, the oldest "
			 "luamemtrace runs on", k->release, KFEAT_MIN_MAJOR, KFEAT_MIN_MINOR);
		return -1;
	}
	b = btf__load_vmlinux_btf();
	if (!b) {
		snprintf(err, errlen, "kernel %s has no BTF (/sys/kernel/btf/vmlinux: "
			 "CONFIG_DEBUG_INFO_BTF), which luamemtrace needs", k->release);
		return -1;
	}
	k->btf = 1;
	k->rdonly_cast = btf__find_by_name_kind(b, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	k->signal_task = btf__find_by_name_kind(b, "bpf_send_signal_task", BTF_KIND_FUNC) > 0;
	k->kst = btf__find_by_name_kind(b, "bpf_task_work_schedule_signal_impl",
					BTF_KIND_FUNC) > 0;
	if (!k->signal_task)
		k->sched_tail = fexit_ok(b, "schedule_tail");
	btf__free(b);
	k->uprobe_multi = link_type(LMT_TRACE_UPROBE_MULTI);
	k->session = k->uprobe_multi && link_type(LMT_TRACE_UPROBE_SESSION);
	return 0;
}

void kfeat_restrict(struct kfeat *k)
{
	if (knobs.no_uprobe_multi)
		k->uprobe_multi = k->session = 0;
	if (knobs.no_session)
		k->session = 0;
	if (knobs.compat_reader)
		k->kst = 0;
	if (knobs.no_signal_task && k->signal_task) {
		k->signal_task = 0;
		struct btf *b = btf__load_vmlinux_btf();

		k->sched_tail = b && fexit_ok(b, "schedule_tail");
		btf__free(b);
	}
}

/* -- --check --------------------------------------------------------------- */

void kfeat_print(const struct kfeat *k, FILE *f)
{
	fprintf(f, "kernel %s: supported (%d.%d or later, BTF)\n", k->release,
		KFEAT_MIN_MAJOR, KFEAT_MIN_MINOR);
	fprintf(f, "  reads of the target:  %s\n", k->rdonly_cast ?
		"through its page tables, the helper where they cannot (~5-15 ns a read)" :
		"through bpf_probe_read_user (~65 ns a read; page-table reads need "
		"bpf_rdonly_cast, 6.2)");
	fprintf(f, "  allocator probes:     %s\n", k->session ?
		"a uprobe session: a return trapped only where the entry cannot tell "
		"the address; one link for processes sharing a file" :
		"perf links, every allocation's return trapped (sessions: 6.13)");
	fprintf(f, "  --duty windows:       %s\n", k->uprobe_multi ?
		"uprobe_multi links (a window closes in ~0.04 s a link)" :
		"perf links (~10x slower to close a window; uprobe_multi: 6.6)");
	fprintf(f, "  a forked child:       %s\n", k->signal_task ?
		"stopped from its parent's fork (bpf_send_signal_task)" :
		k->sched_tail ? "stops itself before its first instruction (fexit on "
				"schedule_tail; bpf_send_signal_task: 6.13)" :
				"not followed: -o DIR/ traces the processes it finds, and "
				"counts a VM lost for each child (needs schedule_tail "
				"traceable, or 6.13)");
	fprintf(f, "  the entry's reads:    %s\n", k->kst ?
		"on the kernel stack" :
		"in per-CPU scratch (~45-65 ns more a read of a window; the kernel "
		"stack: 6.18)");
}
