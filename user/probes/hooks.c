/* Hooks (probes/hooks.h): the probes that tell us a traced process
 * changed: lua_newstate's return, lua_close, the dynamic linker's
 * _dl_debug_state (a dlopen), and libc's exit(). */
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

#include "luamemtrace.skel.h"
#include "probes/hooks.h"
#include "probes/links.h"
#include "target/elfsym.h"
#include "target/tfile.h"
#include "util/log.h"

/* -- Hooks --------------------------------------------------------------- */

/* luaL_newstate's return in file f for pid (-1: every process), beside
 * lua_newstate's: without GC64 on x86-64 it makes its VM without
 * lua_newstate (bpf: lnewstate_return skips a VM lua_newstate returned). */
static void lnewstate_of(struct probes *t, struct links *l, pid_t pid,
			 const struct tfile *f)
{
	uint64_t off;

	if (!elfsym_offset(f->fd, "luaL_newstate", &off))
		link_add(l, bpf_program__attach_uprobe(t->skel->progs.lnewstate_return,
						       true, pid, f->path, (size_t)off));
}

/* Probes what tells us process p changed while we trace it, in every
 * object that has it: lua_newstate's return (VMs created while we trace,
 * or before the command's first line), lua_close, and the dynamic linker's
 * _dl_debug_state (a dlopen: C names read while the module is mapped).
 * With --all the first two are watched for every process (watch_file). */
/* The key of file f's per-process watch for pid (watch_file), in
 * t->watched with the files watched for every process. */
static uint64_t watch_key(const struct tfile *f, pid_t pid)
{
	return (tfile_key(f) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)pid << 1) | 1;
}

static void hooks_of(struct probes *t, struct probe_proc *p, struct tfile *f)
{
	const unsigned before = p->links.n;
	char name[PATH_MAX];
	uint64_t off;

	if (u64set_add(&p->hooked, tfile_key(f)) != 1)
		return;
	if (!elfsym_offset(f->fd, "_dl_debug_state", &off) &&
	    !link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.dl_state,
							   false, p->pid, f->path,
							   (size_t)off)) &&
	    t->o.verbose)
		err1("PID %d: watching dlopen in %s", (int)p->pid,
		     tfile_name(f, name, sizeof(name)));
	/* libc's exit(): the process waits there for its last names to be
	 * read (bpf: exit_enter) */
	if (!elfsym_offset(f->fd, "exit", &off))
		link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.exit_enter,
							       false, p->pid, f->path,
							       (size_t)off));
	/* --all watches the rest: for every process (a file of root's), or
	 * for the process that mapped it when found (watch_file) */
	if ((t->o.all && (u64set_has(&t->watched, tfile_key(f)) ||
			   u64set_has(&t->watched, watch_key(f, p->pid)))) ||
	    elfsym_offset(f->fd, "lua_newstate", &off))
		goto out;
	if (link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.newstate_return,
							   true, p->pid, f->path,
							   (size_t)off)) == 0 &&
	    t->o.verbose)
		err1("PID %d: watching lua_newstate in %s", (int)p->pid,
		     tfile_name(f, name, sizeof(name)));
	lnewstate_of(t, &p->links, p->pid, f);
	if (!elfsym_offset(f->fd, "lua_close", &off))
		link_add(&p->links, bpf_program__attach_uprobe(t->skel->progs.close_enter,
							       false, p->pid, f->path,
							       (size_t)off));
out:
	if (p->links.n > before)
		links_hold(&p->links, f);
}

void proc_hooks(struct probes *t, struct probe_proc *p, const struct pmaps *m)
{
	struct u64set seen = { 0 };

	for (size_t i = 0; i < m->n; i++) {
		const struct pmap *mp = &m->v[i];
		struct tfile f;

		if (mp->perms[2] != 'x' || !pmap_is_file(mp) ||
		    u64set_add(&seen, mp->inode) != 1 || tfile_open(&f, p->pid, mp))
			continue;
		hooks_of(t, p, &f);
		tfile_close(&f);
	}
	u64set_free(&seen);
}

int watch_file(struct probes *t, struct tfile *f, pid_t pid)
{
	const int all = tfile_trusted(f);
	const unsigned before = t->links.n;
	char name[PATH_MAX];
	uint64_t off;
	int r;

	if (!all && pid <= 0) {
		if (t->o.verbose)
			err1("not watching %s for new VMs: not root's, or writable by others",
			     tfile_name(f, name, sizeof(name)));
		return 0;
	}
	if (u64set_add(&t->watched, all ? tfile_key(f) : watch_key(f, pid)) != 1)
		return 0;
	if (elfsym_offset(f->fd, "lua_newstate", &off))
		return -1;
	r = link_add(&t->links, bpf_program__attach_uprobe(t->skel->progs.newstate_return,
							   true, all ? -1 : pid, f->path,
							   (size_t)off));
	if (!r)
		lnewstate_of(t, &t->links, all ? -1 : pid, f);
	if (!r && !elfsym_offset(f->fd, "lua_close", &off))
		r = link_add(&t->links, bpf_program__attach_uprobe(t->skel->progs.close_enter,
								   false, all ? -1 : pid, f->path,
								   (size_t)off));
	if (t->links.n > before)
		links_hold(&t->links, f);
	if (r)
		err1("warning: cannot watch %s for new VMs: %s",
		     tfile_name(f, name, sizeof(name)), strerror(-r));
	else if (t->o.verbose && all)
		err1("watching lua_newstate in %s (every process)",
		     tfile_name(f, name, sizeof(name)));
	else if (t->o.verbose)
		err1("watching lua_newstate in %s (PID %d only: the file is not root's, "
		     "or is writable by others)", tfile_name(f, name, sizeof(name)), (int)pid);
	return r;
}

/* -- COMMAND's process (cmd_probes), for on_needed. */
struct cmd_hooks {
	struct probes *t;
	struct probe_proc *c;
};

static void on_needed(void *ctx, uint64_t unused, const char *soname)
{
	static const char *dirs[] = { "/lib/x86_64-linux-gnu",
				      "/usr/lib/x86_64-linux-gnu",
				      "/usr/local/lib", "/lib", "/usr/lib" };
	const struct cmd_hooks *h = ctx;
	char p[PATH_MAX];

	if (!strstr(soname, "luajit"))
		return;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct tfile f;

		snprintf(p, sizeof(p), "%s/%s", dirs[i], soname);
		if (!tfile_open_path(&f, p)) {
			hooks_of(h->t, h->c, &f);
			tfile_close(&f);
			return;
		}
	}
}

int cmd_probes(struct probes *t, struct probe_proc *c, const char *bin)
{
	char line[PATH_MAX];
	struct cmd_hooks h = { t, c };
	struct tfile bf, lf;
	unsigned before;

	/* the operator's program, read once by its descriptor */
	if (!c || tfile_open_path(&bf, bin))
		return -1;
	if (!elfsym_interp(bf.fd, line, sizeof(line)) && !tfile_open_path(&lf, line)) {
		hooks_of(t, c, &lf);
		tfile_close(&lf);
	}
	before = c->links.n;
	hooks_of(t, c, &bf);
	elfsym_needed(bf.fd, on_needed, &h);
	tfile_close(&bf);
	return c->links.n > before ? 0 : -1;
}
