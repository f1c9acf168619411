/* Kernel features: what the running kernel offers the BPF object, probed
 * once at start, and the path each of the tracer's features takes there.
 *
 * Each probe asks the kernel itself, never its version: a kfunc is there
 * if vmlinux's BTF has it; a link type is there if creating one gets past
 * the attach type to the file check (libbpf's own probe: a link on "/",
 * which no kernel attaches, answers EBADF where the type exists and
 * EINVAL where it does not). The release is read for one thing only: a
 * kernel older than the oldest supported one is refused in one line
 * instead of a verifier log. */
#ifndef LMT_KFEAT_H
#define LMT_KFEAT_H

#include <stdint.h>
#include <stdio.h>

/* -- uprobe_multi links ---------------------------------------------------- */

/* Kernels since 6.6 have them; libbpf 1.1.2 has no API for them, nor
 * Debian's kernel headers the fields: bpf_attr.link_create's head, then
 * its uprobe_multi member. Sessions (6.13) are the same link with
 * another attach type. */
#define LMT_TRACE_UPROBE_MULTI 48
#define LMT_TRACE_UPROBE_SESSION 57
#define LMT_F_UPROBE_MULTI_RETURN 1

struct lmt_um_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, um_flags, pid;
};

/* -- Features -------------------------------------------------------------- */

/* The oldest kernel luamemtrace runs on (docs/kernels.md). */
#define KFEAT_MIN_MAJOR 6
#define KFEAT_MIN_MINOR 1

struct kfeat {
	char release[65];  /* uname -r */
	unsigned major, minor;
	int btf;           /* /sys/kernel/btf/vmlinux: CO-RE, kfuncs, tp_btf */
	int rdonly_cast;   /* kfunc bpf_rdonly_cast (6.2): direct reads */
	int signal_task;   /* kfunc bpf_send_signal_task (6.13): a forked
			    * child stopped from its parent's fork */
	int sched_tail;    /* fexit on schedule_tail: the child stops itself
			    * before its first instruction (without
			    * signal_task) */
	int uprobe_multi;  /* uprobe_multi links (6.6) */
	int session;       /* uprobe session links (6.13) */
	int kst;           /* bpf_task_work_schedule_signal_impl (6.18): the
			    * entry program's reads may land on the kernel
			    * stack */
};

/* Probes the running kernel into k. Returns 0, or -1 with one line in
 * err (no BTF; a kernel below KFEAT_MIN_*) when nothing can run here. */
int kfeat_probe(struct kfeat *k, char *err, size_t errlen);

/* The test and benchmark switches that take a feature away (LMT_NO_SESSION,
 * LMT_NO_UPROBE_MULTI, LMT_NO_SIGNAL_TASK, LMT_COMPAT_READER): applied to
 * k after the probe, so every path a newer kernel would not take can be
 * run on it. */
void kfeat_restrict(struct kfeat *k);

/* --check: what this kernel offers, which path each feature takes and
 * what it costs, a line each. */
void kfeat_print(const struct kfeat *k, FILE *f);

#endif
