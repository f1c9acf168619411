/* Stops: a process held (SIGSTOP) until user space has done what needs
 * it still running or not yet gone: probe a new allocator (newvm.h), read
 * a new object's symbols, read a new trace's snapshots (announce.h), probe
 * a forked child. */
#ifndef LMT_BPF_STOP_H
#define LMT_BPF_STOP_H

/* -- Stops ---------------------------------------------------------------- */

#define SIGSTOP 19
#define SIGCONT 18

/* Processes stopped (SIGSTOP) until user space has done what needs the
 * process still: probe a new allocator, read a new object's symbols. Each
 * stop is an entry, made before the signal and removed by user space
 * after its SIGCONT, so the map always names every stop owed a SIGCONT: a
 * guardian process holds it too, and continues what is left if the
 * tracer dies (user/session/guard.h). Its name is how other tracers find it
 * (struct lmt_hold). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lmt_stop);
	__type(value, struct lmt_hold);
} lmt_stops SEC(".maps");

__u32 stopseq;

static __always_inline __u8 stop_process(__u32 tgid, __u8 soft)
{
	struct lmt_stop k = { .tgid = tgid,
			      .seq = __sync_fetch_and_add(&stopseq, 1) };
	struct lmt_hold h = { .state = LMT_STOP_HELD, .soft = soft,
			      .since = bpf_ktime_get_boot_ns(),
			      .start = BPF_CORE_READ((struct task_struct *)
						     bpf_get_current_task(),
						     group_leader, start_boottime) };

	if (bpf_map_update_elem(&lmt_stops, &k, &h, BPF_NOEXIST))
		return 0;
	/* To this thread: a SIGSTOP to the process finds one pending from
	 * another thread and wakes nobody, so this thread would run on until
	 * the other dequeues it (measured: VMs created at the same moment ran
	 * for a millisecond, allocations unseen). A stop signal sent to one
	 * thread still stops the whole process. */
	if (bpf_send_signal_thread(SIGSTOP)) {
		bpf_map_delete_elem(&lmt_stops, &k);
		return 0;
	}
	return 1;
}

/* 6.13+. Weak: older kernels load the object without it (fork_stop set
 * before load from user/probes/kfeat.c's probe): a child then stops itself
 * (child_start, bpf/luamemtrace.bpf.c) from the stop made here, or, where
 * that cannot run either, is not stopped at all (its VMs counted lost). */
extern int bpf_send_signal_task(struct task_struct *task, int sig,
				enum pid_type type, __u64 value) __ksym __weak;
const volatile __u8 fork_stop = LMT_FORK_STOP_TASK;

/* Children whose stop is made (stop_task) and whose SIGSTOP they send
 * themselves, at their first scheduling: by tgid, the stop's key. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct lmt_stop);
} born SEC(".maps");

/* The same for a process that is not the current one (a new child, which
 * stops before its first instruction). */
static __always_inline __u8 stop_task(struct task_struct *task, __u32 tgid)
{
	struct lmt_stop k = { .tgid = tgid,
			      .seq = __sync_fetch_and_add(&stopseq, 1) };
	struct lmt_hold h = { .state = LMT_STOP_HELD,
			      .since = bpf_ktime_get_boot_ns(),
			      .start = BPF_CORE_READ(task, group_leader, start_boottime) };

	if (fork_stop == LMT_FORK_STOP_NONE ||
	    bpf_map_update_elem(&lmt_stops, &k, &h, BPF_NOEXIST))
		return 0;
	if (fork_stop == LMT_FORK_STOP_TASK ? bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0) :
			     bpf_map_update_elem(&born, &tgid, &k, BPF_ANY)) {
		bpf_map_delete_elem(&lmt_stops, &k);
		return 0;
	}
	return 1;
}

/* A child of stop_task's, without bpf_send_signal_task, at its first
 * scheduling (it has run nothing yet): its SIGSTOP, from itself, while
 * its stop is still held (user space waits for it to be stopped before
 * it releases it: user/capture/ring.c). */
static __always_inline void stop_born(void)
{
	const __u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct lmt_stop *b, k;
	struct lmt_hold *h;

	if ((__u32)id != tgid || !(b = bpf_map_lookup_elem(&born, &tgid)))
		return;
	k = *b;
	bpf_map_delete_elem(&born, &tgid);
	h = bpf_map_lookup_elem(&lmt_stops, &k);
	if (h && h->state == LMT_STOP_HELD)
		bpf_send_signal_thread(SIGSTOP);
}

/* A SIGCONT sent to tgid (tp signal_generate): each stop of it still
 * held counts it. */
static long hold_cont(struct bpf_map *m, struct lmt_stop *k, struct lmt_hold *h,
		      __u32 *tgid)
{
	if (k->tgid == *tgid && h->state == LMT_STOP_HELD)
		__sync_fetch_and_add(&h->conts, 1);
	return 0;
}

static __always_inline void stops_continued(__u32 tgid)
{
	bpf_for_each_map_elem(&lmt_stops, hold_cont, &tgid, 0);
}

#endif
