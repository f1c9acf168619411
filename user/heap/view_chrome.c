/* luamemtrace heap --chrome: the reachable graph as Chrome DevTools'
 * .heapsnapshot JSON (its public format: snapshot.meta names the fields;
 * nodes and edges flat arrays of numbers; names in strings[]), so that
 * DevTools' Memory panel (Load profile) opens it: its Summary groups
 * tables by their metatable's name (the Lua "constructor"), computes
 * retained sizes with its own dominator tree, and shows retainers.
 *
 * Node 0 is a synthetic root whose edges are the GC's roots (edges.c).
 * Several VMs (of one process or of several files): node 0's edges lead
 * to a synthetic node per VM, "VM k" (k from 1, in the files' order),
 * named by its label (process and VM address), whose edges are that VM's
 * roots; DevTools' retained size of such a node is its VM's reachable
 * bytes, its Summary the VMs' classes together.
 * A node per reachable object: type as DevTools knows them (a table is an
 * "object" named by its metatable's path, or "table"; a string is a
 * "string" named by its kept bytes; a Lua function a "closure" named
 * chunk:line; a prototype or trace "code"; userdata and cdata "native",
 * cdata named by C type), self_size LuaJIT's size, id 2k + 1. Edges are
 * the strong references lj_gc.c follows: array slots "element" (index),
 * string-keyed fields "property" (the key), upvalues and stack slots
 * "context", the rest "internal" named as paths name them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/exitcode.h"
#include "heap/heap.h"
#include "target/ljref.h"
#include "report/tables.h"

enum { N_HIDDEN, N_ARRAY, N_STRING, N_OBJECT, N_CODE, N_CLOSURE, N_REGEXP, N_NUMBER,
       N_NATIVE, N_SYNTHETIC };
/* Nodes written at most: DevTools indexes its arrays of nodes and edges
 * (7 numbers a node) with 32-bit integers. Past it: counted, said. */
#define CHROME_NODES_MAX (UINT32_MAX / 8)

enum { E_CONTEXT, E_ELEMENT, E_PROPERTY, E_INTERNAL, E_HIDDEN, E_SHORTCUT, E_WEAK };

struct cx {
	struct heap *h;   /* the VM being written */
	FILE *f;
	struct strpool sp;
	uint32_t *node;   /* per object of h: its node index, or UINT32_MAX */
	uint64_t count;   /* edges of the object being walked */
	uint64_t edges;   /* written */
	int oom;
};

static uint32_t str_id(struct cx *x, const char *s, size_t n)
{
	uint32_t id = intern(&x->sp, s, n);

	if (id == NONE)
		x->oom = 1;
	return id == NONE ? 0 : id;
}

static uint32_t cstr_id(struct cx *x, const char *s)
{
	return str_id(x, s, strlen(s));
}

/* -- Names ------------------------------------------------------------------------ */

static void node_name(struct cx *x, uint32_t i, unsigned *type, uint32_t *name)
{
	struct heap *h = x->h;
	const struct lj_variant *v = h->var;
	const struct hobj *o = &h->o[i];
	char b[1100];

	if (o->gct == v->h.tstr) {
		uint32_t n;
		int cut;
		const char *s = heap_str(h, o, &n, &cut);

		*type = N_STRING;
		*name = str_id(x, s, n);
	} else if (o->gct == v->h.ttab) {
		long mt = heap_find(h, heap_ref(h, o, v->h.tab_metatable));

		*type = N_OBJECT;
		if (mt >= 0) {
			heap_path(h, (uint32_t)mt, b, sizeof(b));
			*name = cstr_id(x, b);
		} else {
			*name = cstr_id(x, "table");
		}
	} else if (o->gct == v->lay.tfunc) {
		*type = N_CLOSURE;
		if (heap_u8(h, o, v->lay.fn_ffid)) {
			*name = cstr_id(x, "C function");
		} else {
			char w[1024];

			heap_where(h, i, w, sizeof(w));
			snprintf(b, sizeof(b), "function %s", w);
			*name = cstr_id(x, b);
		}
	} else if (o->gct == v->h.tproto) {
		char w[1024];

		heap_where(h, i, w, sizeof(w));
		snprintf(b, sizeof(b), "prototype %s", w);
		*type = N_CODE;
		*name = cstr_id(x, b);
	} else if (o->gct == v->h.tcdata) {
		char w[256];

		heap_ctype_name(h, heap_u16(h, o, v->h.cd_ctypeid), w, sizeof(w));
		snprintf(b, sizeof(b), "cdata %s", w);
		*type = N_NATIVE;
		*name = cstr_id(x, b);
	} else {
		*type = o->gct == v->h.tudata ? N_NATIVE : o->gct == v->h.ttrace ? N_CODE
			: o->gct == v->h.tupval ? N_HIDDEN : N_OBJECT;
		*name = cstr_id(x, heap_type_name(o->gct));
	}
}

/* An edge's type and its name (a string id) or index. */
static void edge_name(struct cx *x, const struct hedge *e, unsigned *type, uint64_t *ni)
{
	struct heap *h = x->h;
	static const char *const roots[] = { "[main thread]", "_G", "registry", "gcroot",
					     "[running thread]", "[awaiting __gc]" };
	char b[64];

	*type = E_INTERNAL;
	switch (e->kind) {
	case HE_ROOT:
		*type = E_PROPERTY;
		if (e->a == HROOT_GCROOT)
			snprintf(b, sizeof(b), "gcroot[%" PRIu64 "]", e->b);
		*ni = e->a == HROOT_GCROOT ? cstr_id(x, b)
		      : cstr_id(x, e->a < sizeof(roots) / sizeof(roots[0]) ? roots[e->a] : "?");
		return;
	case HE_ARRAY:
		*type = E_ELEMENT;
		*ni = e->a;
		return;
	case HE_HVAL: {
		uint32_t it = (uint32_t)lj_itype(h->var, e->b), n;
		long s = it == ~(uint32_t)h->var->h.tstr ? heap_find(h, lj_tv_gc(h->var, e->b)) : -1;
		int cut;

		*type = E_PROPERTY;
		if (s >= 0 && h->o[s].gct == h->var->h.tstr) {
			const char *p = heap_str(h, &h->o[s], &n, &cut);

			*ni = str_id(x, p, n);
			return;
		}
		if (it < 0xfffffff2u) { /* a number key */
			double d;

			memcpy(&d, &e->b, 8);
			snprintf(b, sizeof(b), "[%.17g]", d);
		} else {
			snprintf(b, sizeof(b), "[%s key]", heap_type_name(~it));
		}
		*ni = cstr_id(x, b);
		return;
	}
	case HE_UPVAL:
		*type = E_CONTEXT;
		snprintf(b, sizeof(b), "upvalue %" PRIu64, e->a + 1);
		break;
	case HE_STACK:
		*type = E_CONTEXT;
		snprintf(b, sizeof(b), "stack slot %" PRIu64, e->a);
		break;
	case HE_HKEY: snprintf(b, sizeof(b), "<key>"); break;
	case HE_MT: snprintf(b, sizeof(b), "[metatable]"); break;
	case HE_ENV: snprintf(b, sizeof(b), "[env]"); break;
	case HE_PROTO: snprintf(b, sizeof(b), "[prototype]"); break;
	case HE_KGC: snprintf(b, sizeof(b), "[constant %" PRIu64 "]", e->a); break;
	case HE_CHUNK: snprintf(b, sizeof(b), "[chunk name]"); break;
	case HE_UVVAL: snprintf(b, sizeof(b), "[value]"); break;
	default: snprintf(b, sizeof(b), "[trace]"); break;
	}
	*ni = cstr_id(x, b);
}

/* -- The walk ---------------------------------------------------------------------- */

static int count_one(void *ctx, const struct hedge *e)
{
	struct cx *x = ctx;

	x->count += e->to < x->h->n && x->node[e->to] != UINT32_MAX;
	return 0;
}

static int write_one(void *ctx, const struct hedge *e)
{
	struct cx *x = ctx;
	unsigned type;
	uint64_t ni;

	if (e->to >= x->h->n || x->node[e->to] == UINT32_MAX)
		return 0;
	edge_name(x, e, &type, &ni);
	fprintf(x->f, "%s%u,%" PRIu64 ",%" PRIu64 "\n", x->edges++ ? "," : "", type, ni,
		(uint64_t)x->node[e->to] * 7);
	return 0;
}

/* A JSON string: ASCII printable as is, every other byte \u00XX (the
 * target's bytes need not be UTF-8). */
static void json_bytes(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Node indexes for the reachable objects of each VM, after node 0 and,
 * with several VMs, one node per VM (1 to n): nodes[k] for hs[k]. */
static int number(struct heap *hs, size_t n, uint32_t **nodes, uint64_t *count, uint64_t *over)
{
	uint64_t next = 1 + (n > 1 ? n : 0);

	*over = 0;
	for (size_t k = 0; k < n; k++) {
		struct heap *h = &hs[k];

		if (!(nodes[k] = malloc((h->n ? h->n : 1) * sizeof(*nodes[k]))))
			return -1;
		for (size_t i = 0; i < h->n; i++) {
			if (!(h->o[i].flags & HOBJ_REACHED) || next >= CHROME_NODES_MAX) {
				*over += !!(h->o[i].flags & HOBJ_REACHED);
				nodes[k][i] = UINT32_MAX;
				continue;
			}
			nodes[k][i] = (uint32_t)next++;
		}
	}
	*count = next;
	return 0;
}

static void meta(FILE *f)
{
	fputs("{\"snapshot\":{\"meta\":{"
	      "\"node_fields\":[\"type\",\"name\",\"id\",\"self_size\",\"edge_count\","
	      "\"trace_node_id\",\"detachedness\"],"
	      "\"node_types\":[[\"hidden\",\"array\",\"string\",\"object\",\"code\",\"closure\","
	      "\"regexp\",\"number\",\"native\",\"synthetic\",\"concatenated string\","
	      "\"sliced string\",\"symbol\",\"bigint\",\"object shape\"],\"string\",\"number\","
	      "\"number\",\"number\",\"number\",\"number\"],"
	      "\"edge_fields\":[\"type\",\"name_or_index\",\"to_node\"],"
	      "\"edge_types\":[[\"context\",\"element\",\"property\",\"internal\",\"hidden\","
	      "\"shortcut\",\"weak\"],\"string_or_number\",\"node\"],"
	      "\"trace_function_info_fields\":[\"function_id\",\"name\",\"script_name\","
	      "\"script_id\",\"line\",\"column\"],"
	      "\"trace_node_fields\":[\"id\",\"function_info_index\",\"count\",\"size\","
	      "\"children\"],"
	      "\"sample_fields\":[\"timestamp_us\",\"last_assigned_id\"],"
	      "\"location_fields\":[\"object_index\",\"script_id\",\"line\",\"column\"]},", f);
}

/* Edges of object i of x->h (h->n: its roots) that lead to nodes. */
static uint64_t edges_of(struct cx *x, uint32_t i)
{
	x->count = 0;
	heap_edges(x->h, i, count_one, x);
	return x->count;
}

static int export(struct heap *hs, size_t n, const char *const *labels, FILE *f,
		  uint64_t *over)
{
	struct cx x = { .f = f };
	uint32_t **nodes = calloc(n, sizeof(*nodes));
	uint64_t *dangling = calloc(n, sizeof(*dangling));
	uint64_t count = 0, all = n > 1 ? n : 0, *roots = calloc(n, sizeof(*roots));
	unsigned type;
	uint32_t name;
	int rc = -1;

	if (!nodes || !dangling || !roots || number(hs, n, nodes, &count, over))
		goto out;
	cstr_id(&x, ""); /* string 0 */
	meta(f);
	/* the edges' count: a first walk */
	for (size_t k = 0; k < n; k++) {
		x.h = &hs[k];
		x.node = nodes[k];
		dangling[k] = x.h->c.dangling;
		roots[k] = edges_of(&x, (uint32_t)x.h->n);
		all += roots[k];
		for (size_t i = 0; i < x.h->n; i++)
			if (x.node[i] != UINT32_MAX)
				all += edges_of(&x, (uint32_t)i);
	}
	fprintf(f, "\"node_count\":%" PRIu64 ",\"edge_count\":%" PRIu64
		   ",\"trace_function_count\":0},\n\"nodes\":[",
		count, all);
	fprintf(f, "%u,%u,1,0,%" PRIu64 ",0,0\n", N_SYNTHETIC, cstr_id(&x, "(GC roots)"),
		n > 1 ? (uint64_t)n : roots[0]);
	for (size_t k = 0; n > 1 && k < n; k++)
		fprintf(f, ",%u,%u,%" PRIu64 ",0,%" PRIu64 ",0,0\n", N_SYNTHETIC,
			cstr_id(&x, labels[k]), (uint64_t)(k + 1) * 2 + 1, roots[k]);
	for (size_t k = 0; k < n; k++) {
		x.h = &hs[k];
		x.node = nodes[k];
		for (size_t i = 0; i < x.h->n; i++) {
			if (x.node[i] == UINT32_MAX)
				continue;
			node_name(&x, (uint32_t)i, &type, &name);
			fprintf(f, ",%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",0,0\n", type, name,
				(uint64_t)x.node[i] * 2 + 1, x.h->o[i].size,
				edges_of(&x, (uint32_t)i));
		}
	}
	fputs("],\n\"edges\":[", f);
	for (size_t k = 0; n > 1 && k < n; k++) {
		char b[32];

		snprintf(b, sizeof(b), "VM %zu", k + 1);
		fprintf(f, "%s%u,%u,%zu\n", x.edges++ ? "," : "", E_PROPERTY, cstr_id(&x, b),
			(k + 1) * 7);
	}
	/* in the nodes' order: the roots' nodes (node 0, or each VM's), then
	 * every VM's objects */
	for (size_t k = 0; k < n; k++) {
		x.h = &hs[k];
		x.node = nodes[k];
		heap_edges(x.h, (uint32_t)x.h->n, write_one, &x);
	}
	for (size_t k = 0; k < n; k++) {
		x.h = &hs[k];
		x.node = nodes[k];
		for (size_t i = 0; i < x.h->n; i++)
			if (x.node[i] != UINT32_MAX)
				heap_edges(x.h, (uint32_t)i, write_one, &x);
		x.h->c.dangling = dangling[k]; /* heap_edges counted them again */
	}
	fputs("],\n\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],\"locations\":[],"
	      "\n\"strings\":[", f);
	for (uint32_t k = 0; k < x.sp.n; k++) {
		if (k)
			fputs(",\n", f);
		json_bytes(f, str_ptr(&x.sp, k), x.sp.s[k].len);
	}
	fputs("]}\n", f);
	rc = x.oom || ferror(f) ? -1 : 0;
out:
	for (size_t k = 0; nodes && k < n; k++)
		free(nodes[k]);
	free(nodes);
	free(dangling);
	free(roots);
	free(x.sp.arena);
	free(x.sp.s);
	free(x.sp.tab);
	return rc;
}

int heap_view_chrome(struct heap *hs, size_t n, const char *const *labels, FILE *f)
{
	uint64_t over = 0;
	int lossy = 0;

	if (!n || export(hs, n, labels, f, &over)) {
		fprintf(stderr, "luamemtrace heap: --chrome: out of memory, or a write failed\n");
		return LMT_ERR;
	}
	if (over) {
		fprintf(stderr, "luamemtrace heap: --chrome: %" PRIu64 " reachable objects past "
			"DevTools' %u nodes not written\n", over, (unsigned)CHROME_NODES_MAX);
		lossy = 1;
	}
	for (size_t k = 0; k < n; k++)
		lossy |= !!memcmp(&hs[k].c, &(struct hcounts){ 0 }, sizeof(hs[k].c));
	return lossy ? LMT_LOSSY : LMT_OK;
}
