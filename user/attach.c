/* Attach: load the BPF object, probe allocators and the hooks that tell
 * us a process changed (lua_newstate, lua_close, dlopen), register VMs.
 *
 * Every probe is a perf-event link owned by this process, so the kernel
 * removes them when we exit or die; nothing is pinned. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#include "elfsym.h"
#include "proc.h"
#include "symbols.h"

/* -- Links --------------------------------------------------------------- */

int link_add(struct tr *t, struct bpf_link *l)
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
void detach_all(struct tr *t)
{
	while (t->nlinks)
		bpf_link__destroy(t->links[--t->nlinks]);
}

/* -- The BPF object ------------------------------------------------------ */

/* Does the kernel have task works (6.18+)? Then alloc_enter's reads can
 * land on its stack (struct gq in bpf/read.h). */
int kernel_keeps_callbacks_on_stack(void)
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
int open_load(struct tr *t, int kst)
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

/* -- Allocators and VMs -------------------------------------------------- */

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
	*h = (struct lmt_batch){ .rec = LMT_REC_BATCH };
	s->len = sizeof(*h);
	__atomic_store_n(&s->live, 1, __ATOMIC_RELEASE);
}

int add_vm(struct tr *t, const struct vminfo *v)
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

/* -- Hooks --------------------------------------------------------------- */

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

void newstate_probes_maps(struct tr *t, const struct pmaps *m)
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
int cmd_probes(struct tr *t, const char *exe)
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
