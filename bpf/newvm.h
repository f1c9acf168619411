/* A process changes under the tracer: new VMs (registered here when
 * their allocator is probed), stops while user space catches up (new
 * allocators, dlopen), and the stops map a guardian also holds. */
#ifndef LMT_BPF_NEWVM_H
#define LMT_BPF_NEWVM_H

/* Main lua_State -> its vms key, for lua_close. */
struct main_key {
	__u32 tgid;
	__u32 pad;
	__u64 L;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct main_key);
	__type(value, struct lmt_vm_key);
} mains SEC(".maps");

/* procs, the processes whose new VMs we want to hear about: bpf/state.h. */

/* Allocators already probed, per process (value unused). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lmt_allocf_key);
	__type(value, __u32);
} allocfs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lmt_vm);
} vmbuf SEC(".maps");

/* Fills slot sl, claimed for tgid. */
static __always_inline void slot_fill(struct lmt_slot *sl, __u32 tgid, __u64 ud,
				      const struct lmt_vm *vm)
{
	struct lmt_batch *h;

	sl->ud = ud;
	sl->pok = 0;
	sl->pwrong = 0;
	sl->pn = 0;
	__builtin_memcpy(&sl->vm, vm, sizeof(*vm));
	h = (struct lmt_batch *)sl->buf;
	h->rec = LMT_REC_BATCH;
	h->tgid = tgid;
	h->vm = vm->id;
	h->len = 0;
	sl->len = sizeof(*h);
	sl->nev = 0;
	asm volatile("" ::: "memory");
	sl->live = 1;
}

/* Claim the VM's slot for it, if free (see struct lmt_slot): its ud's,
 * or, where another process has that ud, its process's. */
static __always_inline void slot_claim(__u32 tgid, __u64 ud,
				       const struct lmt_vm *vm)
{
	__u32 si = lmt_slot_of(ud);
	struct lmt_slot *sl = bpf_map_lookup_elem(&slots, &si);

	if (!sl)
		return;
	if (!sl->tgid && !__sync_val_compare_and_swap(&sl->tgid, 0, tgid)) {
		slot_fill(sl, tgid, ud, vm);
		return;
	}
	/* Owned: by a VM with this ud (or one being filled), then shared. */
	if (sl->ud != ud && sl->live)
		return;
	sl->shared = 1;
	si = lmt_slot2_of(tgid, ud);
	sl = bpf_map_lookup_elem(&slots, &si);
	if (sl && !sl->tgid && !__sync_val_compare_and_swap(&sl->tgid, 0, tgid))
		slot_fill(sl, tgid, ud, vm);
}

/* -- Forks --------------------------------------------------------------- */

/* A child has its parent's VMs at the same addresses: what BPF knows of
 * them is copied for it, under the child's process id. */
struct forked {
	__u32 ptgid, tgid;
};

static long fork_vm(struct bpf_map *m, struct lmt_vm_key *k,
		    struct lmt_vm *v, struct forked *f)
{
	struct lmt_vm_key ck = { .tgid = f->tgid, .ud = k->ud };

	if (k->tgid == f->ptgid &&
	    !bpf_map_update_elem(&vms, &ck, v, BPF_NOEXIST))
		slot_claim(f->tgid, k->ud, v);
	return 0;
}

static long fork_main(struct bpf_map *m, struct main_key *k,
		      struct lmt_vm_key *v, struct forked *f)
{
	struct main_key ck = { .tgid = f->tgid, .L = k->L };
	struct lmt_vm_key cv = { .tgid = f->tgid, .ud = v->ud };

	if (k->tgid == f->ptgid)
		bpf_map_update_elem(&mains, &ck, &cv, BPF_NOEXIST);
	return 0;
}

static long fork_allocf(struct bpf_map *m, struct lmt_allocf_key *k,
			__u32 *v, struct forked *f)
{
	struct lmt_allocf_key ck = { .tgid = f->tgid, .allocf = k->allocf };

	if (k->tgid == f->ptgid)
		bpf_map_update_elem(&allocfs, &ck, v, BPF_NOEXIST);
	return 0;
}

/* 0, or -1 if the child's process entry cannot be made. */
static __always_inline int fork_copy(struct forked *f, const struct lmt_proc *pr)
{
	if (bpf_map_update_elem(&procs, &f->tgid, pr, BPF_ANY))
		return -1;
	bpf_for_each_map_elem(&vms, fork_vm, f, 0);
	bpf_for_each_map_elem(&mains, fork_main, f, 0);
	bpf_for_each_map_elem(&allocfs, fork_allocf, f, 0);
	return 0;
}

static __always_inline void count_lost_vm(void)
{
	__u32 zero = 0;
	struct lmt_percpu *pc = bpf_map_lookup_elem(&stats, &zero);

	if (pc)
		pc->st.lost_vm++;
}

/* A record about the process, zeroed; NULL, and counted, when the ring is
 * full (then nothing stops either). */
static __always_inline void *proc_rec(const __u64 sz, __u8 rec)
{
	__u8 *r = bpf_ringbuf_reserve(&rb, sz, 0);

	if (!r) {
		count_lost_vm();
		return NULL;
	}
	__builtin_memset(r, 0, sz);
	r[0] = rec;
	return r;
}

/* -- Names (--all --exe) ------------------------------------------------- */

/* The names --exe wants, each matched as user space does (proc_wanted):
 * the process's comm, or its executable's file name. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LMT_EXES_MAX);
	__type(key, struct lmt_exe);
	__type(value, __u8);
} exes SEC(".maps");

/* Does --exe leave the current process out? Then its first VM needs no
 * stop for user space to read its name. The process's name is its main
 * thread's (/proc/PID/comm), not the caller's. A name this cannot match as
 * user space does asks user space (0): too long; with a space (user space
 * cuts there) or a '/' (a memfd's); a file that is its mount's root (a
 * single file bind-mounted: /proc/PID/exe names the mount point). */
static __always_inline int exe_left_out(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);
	struct lmt_exe k = {};
	long n;

	if (BPF_CORE_READ_STR_INTO(&k.name, task, group_leader, comm) <= 0 ||
	    bpf_map_lookup_elem(&exes, &k) || !exe ||
	    BPF_CORE_READ(exe, f_path.dentry) == BPF_CORE_READ(exe, f_path.mnt, mnt_root))
		return 0;
	__builtin_memset(&k, 0, sizeof(k));
	n = bpf_probe_read_kernel_str(k.name, sizeof(k.name),
				      BPF_CORE_READ(exe, f_path.dentry, d_name.name));
	if (n <= 1 || n >= LMT_EXE_LEN)
		return 0;
	for (int i = 0; i < LMT_EXE_LEN; i++)
		if (k.name[i] == ' ' || k.name[i] == '/')
			return 0;
	return !bpf_map_lookup_elem(&exes, &k);
}

/* -- New VMs, new objects, new programs --------------------------------- */

/* Registers the new VM L of tgid here and now if its allocator is already
 * probed (threads of one program share it). 1 if it did. */
static __always_inline int register_vm(__u32 tgid, struct lmt_proc *pr,
				       __u64 L, struct lmt_newvm *n)
{
	__u64 g = 0, gw[2] = {};
	struct lmt_vm *vm;
	__u32 zero = 0;

	if (!pr->has_layout ||
	    bpf_probe_read_user(&g, 8, (void *)(L + pr->lay.L_glref)))
		return 0;
	g = gcref(&pr->lay, g);
	if (bpf_probe_read_user(gw, 16, (void *)(g + pr->lay.g_allocf)))
		return 0;
	n->g = g;
	n->allocf = gw[0];
	n->ud = gw[1];
	{
		struct lmt_allocf_key ak = { .tgid = tgid, .allocf = gw[0] };
		struct lmt_vm_key vk = { .tgid = tgid, .ud = gw[1] };
		struct main_key mk = { .tgid = tgid, .L = L };

		/* The layout value lives in a per-CPU slot: too big for the
		 * stack. */
		vm = bpf_map_lookup_elem(&vmbuf, &zero);
		if (!vm || !bpf_map_lookup_elem(&allocfs, &ak))
			return 0;
		vm->g = g;
		/* Two threads may make VMs at once: ids stay apart (a
		 * stream's merge keeps each VM's records by it). */
		vm->id = __sync_fetch_and_add(&pr->next_id, 1);
		vm->lay = pr->lay;
		/* The process's first VM was registered by user space: this
		 * one is at least its second, and shares its stream: events
		 * are numbered from now on, before it has any. */
		if (one_stream)
			multi = 1;
		if (bpf_map_lookup_elem(&vms, &vk) ||
		    bpf_map_update_elem(&vms, &vk, vm, BPF_NOEXIST) ||
		    bpf_map_update_elem(&mains, &mk, &vk, BPF_ANY))
			return 0;
		n->id = vm->id;
		slot_claim(tgid, vk.ud, vm);
	}
	return 1;
}

#endif
