/* C symbols from the ELF objects a process maps, emitted once per object
 * in maps order (executable first), like the in-VM profiler's symtab. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/elfsym.h"
#include "target/proc.h"
#include "convert/symbols.h"
#include "target/tfile.h"
#include "util/log.h"

void syms_init(struct syms *s, pid_t pid, sym_emit_fn emit, void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->emit = emit;
	s->ctx = ctx;
}

/* Kept for the streams that start later (syms_replay). */
static void keep(struct syms *s, uint64_t addr, const char *name)
{
	struct csym *nv;

	if (s->nlog == s->caplog) {
		size_t cap = s->caplog ? 2 * s->caplog : 1024;
		nv = realloc(s->log, cap * sizeof(*nv));
		if (!nv)
			return;
		s->log = nv;
		s->caplog = cap;
	}
	s->log[s->nlog].addr = addr;
	s->log[s->nlog].name = strdup(name);
	if (s->log[s->nlog].name) {
		int err;
		s->nlog++;
		u64map_put(&s->byaddr, addr | 1ULL << 63, (void *)(uintptr_t)s->nlog, &err);
	}
}

const char *syms_name(const struct syms *s, uint64_t addr)
{
	uintptr_t i = (uintptr_t)u64map_get(&s->byaddr, addr | 1ULL << 63);

	return i ? s->log[i - 1].name : NULL;
}

static void emit_name(struct syms *s, uint64_t addr, const char *name)
{
	struct mp_sym r = { .kind = MP_SYM_CFUNC, .addr = addr, .name = name,
			    .name_len = strlen(name) };

	u64set_add(&s->named, addr);
	keep(s, addr, name);
	if (s->emit)
		s->emit(s->ctx, &r);
	s->nsyms++;
}

void syms_replay(const struct syms *s, sym_emit_fn fn, void *ctx)
{
	for (size_t i = 0; i < s->nlog; i++) {
		struct mp_sym r = { .kind = MP_SYM_CFUNC, .addr = s->log[i].addr,
				    .name = s->log[i].name,
				    .name_len = strlen(s->log[i].name) };
		fn(ctx, &r);
	}
}

static void on_func(void *ctx, uint64_t addr, const char *name)
{
	emit_name(ctx, addr, name);
}

static struct cobj *find_obj(struct syms *s, uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < s->nobj; i++)
		if (s->obj[i].dev == dev && s->obj[i].inode == inode)
			return &s->obj[i];
	return NULL;
}

/* Object o's function symbols, read from the file its mapping p holds
 * (target/tfile.h: the very file maps names, or none); an object over elfsym's
 * caps, or whose file is refused (not the one maps name), gives none,
 * counted and said once. */
static void obj_syms(struct syms *s, struct cobj *o, const struct pmap *p)
{
	static struct u64set said; /* objects said: once, not per process */
	struct tfile f;
	const char *why;

	int r;

	o->bias = p->lo - p->off;
	if ((r = tfile_open(&f, s->pid, p))) {
		/* refused: not the file maps name (replaced under its
		 * mapping), or not a regular file */
		if (r == -ESTALE || r == -EINVAL) {
			s->skipped++;
			if (u64set_add(&said, (o->dev * 0x9e3779b97f4a7c15ULL ^ o->inode) | 1) == 1)
				err1("warning: PID %d: no C names from %s: not the file its "
				     "maps name", (int)s->pid, o->name);
		}
		return;
	}
	elfsym_bias(f.fd, p->lo, p->off, &o->bias);
	if (elfsym_funcs(f.fd, o->bias, on_func, s, &why) == ELFSYM_OVER_CAP) {
		s->skipped++;
		if (u64set_add(&said, tfile_key(&f)) == 1)
			err1("warning: PID %d: no C names from %s: %s (caps: docs/security.md)", (int)s->pid,
			     o->name, why);
	}
	tfile_close(&f);
}

int syms_scan(struct syms *s)
{
	struct pmaps m;
	int r = pmaps_load(s->pid, &m);

	if (r)
		return r;
	for (size_t i = 0; i < m.n; i++) {
		const struct pmap *p = &m.v[i];
		uint64_t dev = ((uint64_t)p->dev_major << 32) | p->dev_minor;
		struct cobj *o, *nv;
		const char *base;

		if (p->perms[2] != 'x' || !pmap_is_file(p))
			continue;
		o = find_obj(s, dev, p->inode);
		if (o) { /* another executable mapping of a known object */
			if (p->lo < o->lo)
				o->lo = p->lo;
			if (p->hi > o->hi)
				o->hi = p->hi;
			continue;
		}
		nv = realloc(s->obj, (s->nobj + 1) * sizeof(*nv));
		if (!nv)
			break;
		s->obj = nv;
		o = &s->obj[s->nobj++];
		memset(o, 0, sizeof(*o));
		o->dev = dev;
		o->inode = p->inode;
		o->lo = p->lo;
		o->hi = p->hi;
		base = strrchr(p->path, '/');
		snprintf(o->name, sizeof(o->name), "%.63s", base ? base + 1 : p->path);
		o->name[strcspn(o->name, " ")] = 0; /* " (deleted)" */
		obj_syms(s, o, p);
	}
	pmaps_free(&m);
	return 0;
}

static const struct cobj *obj_of(const struct syms *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nobj; i++)
		if (addr >= s->obj[i].lo && addr < s->obj[i].hi)
			return &s->obj[i];
	return NULL;
}

void syms_cfunc(struct syms *s, uint64_t addr)
{
	const struct cobj *o;
	char name[96];

	if (u64set_has(&s->named, addr))
		return;
	if (!obj_of(s, addr)) {
		syms_scan(s);
		if (u64set_has(&s->named, addr))
			return;
	}
	o = obj_of(s, addr);
	if (o)
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, o->name,
			 addr - o->bias);
	else
		snprintf(name, sizeof(name), "[unknown]");
	emit_name(s, addr, name);
}

void syms_free(struct syms *s)
{
	for (size_t i = 0; i < s->nlog; i++)
		free(s->log[i].name);
	free(s->log);
	u64map_free(&s->byaddr, NULL);
	free(s->obj);
	u64set_free(&s->named);
	memset(s, 0, sizeof(*s));
}
