/* Stops: a process held (SIGSTOP) until user space has done what needs
 * it still running or not yet gone: probe a new allocator (newvm.h), read
 * a new object's symbols, read a new trace's snapshots (announce.h), probe
 * a forked child. */
#ifndef LMT_BPF_STOP_H
#define LMT_BPF_STOP_H

/* -- Stops ---------------------------------------------------------------- */

#define SIGSTOP 19

/* Processes stopped (SIGSTOP) until user space has done what needs the
 * process still: probe a new allocator, read a new object's symbols. Each
 * stop is an entry, made before the signal and removed by user space
 * after its SIGCONT, so the map always names every stop owed a SIGCONT: a
 * guardian process holds it too, and continues what is left if the
 * tracer dies (user/guard.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lmt_stop);
	__type(value, __u32);
} stops SEC(".maps");

__u32 stopseq;

static __always_inline __u8 stop_process(__u32 tgid)
{
	struct lmt_stop k = { .tgid = tgid,
			      .seq = __sync_fetch_and_add(&stopseq, 1) };
	__u32 one = 1;

	if (bpf_map_update_elem(&stops, &k, &one, BPF_NOEXIST))
		return 0;
	/* To this thread: a SIGSTOP to the process finds one pending from
	 * another thread and wakes nobody, so this thread would run on until
	 * the other dequeues it (measured: VMs created at the same moment ran
	 * for a millisecond, allocations unseen). A stop signal sent to one
	 * thread still stops the whole process. */
	if (bpf_send_signal_thread(SIGSTOP)) {
		bpf_map_delete_elem(&stops, &k);
		return 0;
	}
	return 1;
}

extern int bpf_send_signal_task(struct task_struct *task, int sig,
				enum pid_type type, __u64 value) __ksym;

/* The same for a process that is not the current one (a new child, which
 * stops before its first instruction). */
static __always_inline __u8 stop_task(struct task_struct *task, __u32 tgid)
{
	struct lmt_stop k = { .tgid = tgid,
			      .seq = __sync_fetch_and_add(&stopseq, 1) };
	__u32 one = 1;

	if (bpf_map_update_elem(&stops, &k, &one, BPF_NOEXIST))
		return 0;
	if (bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0)) {
		bpf_map_delete_elem(&stops, &k);
		return 0;
	}
	return 1;
}

#endif
