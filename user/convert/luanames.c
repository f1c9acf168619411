/* Lua names of C functions (convert/luanames.h): the registry's _LOADED table, its
 * modules' hash parts, one level of sub-tables. Bounded (target/caps.h): a
 * table of more than LMT_NAMES_TAB_NODES_MAX nodes, a key over
 * LMT_NAMES_KEY_MAX bytes, is skipped; no table is walked twice, and a walk
 * reads at most LMT_NAMES_NODES_MAX nodes in all. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/luanames.h"
#include "target/proc.h"
#include "target/caps.h"
#include "target/ljref.h"

#define MAX_NODES LMT_NAMES_TAB_NODES_MAX
#define MAX_NAME LMT_NAMES_KEY_MAX

struct walk {
	pid_t pid;
	const struct lj_variant *var;
	struct u64map *names;
	unsigned found;
	struct u64set seen; /* tables walked */
	uint64_t nodes;     /* nodes read */
	int cut;            /* a table left out: the budget was spent */
};

/* The string tv holds, into buf (NUL-terminated): 0, or -1. */
static int str_of(const struct walk *w, uint64_t tv, char *buf, size_t len)
{
	const struct lj_layout *l = &w->var->lay;
	uint64_t s = lj_tv_gc(w->var, tv);
	uint32_t n;

	if (lj_itype(w->var, tv) != w->var->u.itype_str ||
	    proc_read(w->pid, s + l->str_len, &n, 4) || n >= len ||
	    proc_read(w->pid, s + l->str_size, buf, n))
		return -1;
	buf[n] = 0;
	return memchr(buf, 0, n) ? -1 : 0;
}

/* The nodes of table t (its hash part), malloc'd: their count, or 0. */
static uint32_t nodes_of(struct walk *w, uint64_t t, uint8_t **out)
{
	const struct lj_ulayout *u = &w->var->u;
	uint64_t node = 0;
	uint32_t hmask = 0;

	*out = NULL;
	if (lj_read_ref(w->pid, w->var, t + u->tab_node, &node) ||
	    proc_read(w->pid, t + u->tab_hmask, &hmask, 4) ||
	    hmask >= MAX_NODES || !node)
		return 0;
	if (w->nodes + hmask + 1 > LMT_NAMES_NODES_MAX) {
		w->cut = 1;
		return 0;
	}
	w->nodes += hmask + 1;
	*out = malloc((size_t)(hmask + 1) * u->node_size);
	if (!*out || proc_read(w->pid, node, *out, (size_t)(hmask + 1) * u->node_size)) {
		free(*out);
		*out = NULL;
		return 0;
	}
	return hmask + 1;
}

static void name_fn(struct walk *w, uint64_t fn, const char *name)
{
	const struct lj_layout *l = &w->var->lay;
	uint8_t ffid = 0;
	uint64_t f = 0;
	char *dup;
	int err;

	if (proc_read(w->pid, fn + l->fn_ffid, &ffid, 1) || ffid == 0 /* a Lua function */ ||
	    proc_read(w->pid, fn + l->fn_f, &f, 8))
		return;
	/* Builtins share entries (pcall, xpcall): by their number. */
	if (ffid != 1 /* FF_C */)
		f = LUANAMES_FF(ffid);
	if (!f || u64map_get(w->names, f))
		return;
	if (!(dup = strdup(name)))
		return;
	u64map_put(w->names, f, dup, &err);
	if (err)
		free(dup);
	else
		w->found++;
}

/* Table t's C functions as PREFIX.KEY; its sub-tables too while depth. */
static void walk_tab(struct walk *w, uint64_t t, const char *prefix, int depth)
{
	const struct lj_ulayout *u = &w->var->u;
	uint8_t *nodes;
	uint32_t n;

	/* Walked already at this depth (or no memory to know): tables are
	 * 8-byte aligned, depth is 0 or 1. */
	if (u64set_add(&w->seen, t | (uint64_t)(depth & 1)) != 1)
		return;
	n = nodes_of(w, t, &nodes);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key, val;
		char k[MAX_NAME], name[2 * MAX_NAME + 2];

		memcpy(&key, nodes + (size_t)i * u->node_size + u->node_key, 8);
		memcpy(&val, nodes + (size_t)i * u->node_size + u->node_val, 8);
		if (str_of(w, key, k, sizeof(k)))
			continue;
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k);
		if (lj_itype(w->var, val) == u->itype_func)
			name_fn(w, lj_tv_gc(w->var, val), name);
		else if (lj_itype(w->var, val) == u->itype_tab && depth > 0)
			walk_tab(w, lj_tv_gc(w->var, val), name, depth - 1);
	}
	free(nodes);
}

/* The walk of luanames_read. */
static int names_walk(struct walk *w, uint64_t g)
{
	const struct lj_ulayout *u = &w->var->u;
	uint64_t reg, loaded = 0, mt = 0;
	uint8_t *nodes;
	uint32_t n;

	if (proc_read(w->pid, g + u->g_registrytv, &reg, 8) ||
	    lj_itype(w->var, reg) != u->itype_tab)
		return -1;
	n = nodes_of(w, lj_tv_gc(w->var, reg), &nodes);
	for (uint32_t i = 0; i < n && !loaded; i++) {
		uint64_t key, val;
		char k[16];

		memcpy(&key, nodes + (size_t)i * u->node_size + u->node_key, 8);
		memcpy(&val, nodes + (size_t)i * u->node_size + u->node_val, 8);
		if (!str_of(w, key, k, sizeof(k)) && !strcmp(k, "_LOADED") &&
		    lj_itype(w->var, val) == u->itype_tab)
			loaded = lj_tv_gc(w->var, val);
	}
	free(nodes);
	if (!loaded)
		return -1;
	/* A module that is a function by its name (table.new), first; then
	 * each module's MOD.KEY and MOD.SUB.KEY; the globals (_G) by KEY. */
	n = nodes_of(w, loaded, &nodes);
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < n; i++) {
			uint64_t key, val;
			char k[MAX_NAME];

			memcpy(&key, nodes + (size_t)i * u->node_size + u->node_key, 8);
			memcpy(&val, nodes + (size_t)i * u->node_size + u->node_val, 8);
			if (str_of(w, key, k, sizeof(k)))
				continue;
			if (!pass && lj_itype(w->var, val) == u->itype_func)
				name_fn(w, lj_tv_gc(w->var, val), k);
			else if (pass && lj_itype(w->var, val) == u->itype_tab)
				walk_tab(w, lj_tv_gc(w->var, val), strcmp(k, "_G") ? k : "",
					 strcmp(k, "_G") ? 1 : 0);
		}
	free(nodes);
	/* The FFI's cdata metamethods, a GC root only (basemt of cdata), as
	 * LuaJIT's own vmdef.lua names them. */
	if (!lj_read_ref(w->pid, w->var, g + u->g_cdatamt, &mt) && mt)
		walk_tab(w, mt, "ffi.meta", 0);
	return 0;
}

int luanames_read(pid_t pid, const struct lj_variant *var, uint64_t g,
		  struct u64map *names, uint64_t *nodes)
{
	struct walk w = { .pid = pid, .var = var, .names = names };
	int r = names_walk(&w, g);

	u64set_free(&w.seen);
	*nodes += w.nodes;
	return r < 0 ? r : w.cut;
}

int luanames_ffbad(const struct u64map *names, const struct lj_vmdef *d)
{
	for (size_t i = 0; d && i < names->cap; i++) {
		const uint64_t k = names->k[i];
		const char *n = names->v[i];

		if (!k || !n || !(k >> 63))
			continue;
		for (unsigned ff = 2; ff < d->nff; ff++)
			if (!strcmp(d->ffnames[ff], n)) {
				if (ff != (k & 0xff))
					return 1;
				break;
			}
	}
	return 0;
}
