/* luamemtrace heap FILE... (snapshot files, or directories of *.lmh):
 * each process's report with its PID, then the totals of all of them;
 * or the flame graph page of them all, the difference of two, or the
 * Chrome DevTools export of one. Files are untrusted: heap_load bounds
 * them; at most LMT_HEAP_FILES_MAX are named. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/exitcode.h"
#include "heap/heap.h"
#include "util/esc.h"

struct snap {
	char *path;
	struct heap *hs;
	size_t n;
	uint32_t pid;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(char ***v, size_t *n, size_t *cap, char *p)
{
	if (!p)
		return -1;
	if (*n >= LMT_HEAP_FILES_MAX) {
		free(p);
		fprintf(stderr, "luamemtrace heap: more than %d snapshot files "
				"(LMT_HEAP_FILES_MAX)\n", LMT_HEAP_FILES_MAX);
		return -2;
	}
	if (*n == *cap) {
		char **nv = reallocarray(*v, *cap = *cap ? 2 * *cap : 16, sizeof(**v));

		if (!nv) {
			free(p);
			return -1;
		}
		*v = nv;
	}
	(*v)[(*n)++] = p;
	return 0;
}

/* The files args name: each file, and in a directory its *.lmh in name
 * order. 0, or -1 having said why. */
static int paths(char **args, int nargs, char ***out, size_t *nout)
{
	char **v = NULL, e[ESC_MAX(256)];
	size_t n = 0, cap = 0;
	int err = 0;

	for (int i = 0; i < nargs && !err; i++) {
		struct stat st;
		struct dirent *de;
		size_t first = n;
		DIR *d;

		if (stat(args[i], &st) || !S_ISDIR(st.st_mode)) {
			err = add_path(&v, &n, &cap, strdup(args[i]));
			continue;
		}
		if (!(d = opendir(args[i]))) {
			fprintf(stderr, "luamemtrace heap: %s: %s\n", esc_cstr(e, sizeof(e), args[i]),
				strerror(errno));
			err = -2;
			break;
		}
		while (!err && (de = readdir(d))) {
			size_t l = strlen(de->d_name);
			char *p;

			if (l < 5 || strcmp(de->d_name + l - 4, ".lmh"))
				continue;
			err = add_path(&v, &n, &cap, asprintf(&p, "%s/%s", args[i], de->d_name) < 0
							       ? NULL : p);
		}
		closedir(d);
		if (!err && n == first) {
			fprintf(stderr, "luamemtrace heap: %s: no snapshots (*.lmh) in it\n",
				esc_cstr(e, sizeof(e), args[i]));
			err = -2;
		}
		if (!err)
			qsort(v + first, n - first, sizeof(*v), cmp_str);
	}
	if (err) {
		if (err == -1)
			fprintf(stderr, "luamemtrace heap: out of memory\n");
		while (n)
			free(v[--n]);
		free(v);
		return -1;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* Loads and analyses one file: 0, or an exit status having said why. */
static int load(struct snap *s)
{
	char why[256], e[ESC_MAX(256)];
	FILE *f = fopen(s->path, "rbe");

	if (!f) {
		fprintf(stderr, "luamemtrace heap: %s: %s\n", esc_cstr(e, sizeof(e), s->path),
			strerror(errno));
		return LMT_ERR;
	}
	if (heap_load(f, &s->hs, &s->n, why, sizeof(why))) {
		fclose(f);
		fprintf(stderr, "luamemtrace heap: %s: %s\n", esc_cstr(e, sizeof(e), s->path), why);
		return LMT_ERR;
	}
	fclose(f);
	s->pid = s->n ? s->hs[0].pid : 0;
	for (size_t i = 0; i < s->n; i++)
		if (heap_mark(&s->hs[i]) || heap_dom(&s->hs[i]) == -ENOMEM) {
			fprintf(stderr, "luamemtrace heap: analysing the copy: out of memory\n");
			return LMT_ERR;
		}
	return LMT_OK;
}

static void unload(struct snap *s)
{
	for (size_t i = 0; s->hs && i < s->n; i++)
		heap_free(&s->hs[i]);
	free(s->hs);
	s->hs = NULL;
	s->n = 0;
}

static int lossy(const struct heap *h)
{
	return memcmp(&h->c, &(struct hcounts){ 0 }, sizeof(h->c)) != 0;
}

/* -- Several processes: each one's report, then the totals ----------------- */

struct tot {
	uint64_t vms, objs, bytes, live, live_bytes, gc_total;
};

static void tot_add(struct tot *t, const struct heap *h)
{
	t->vms++;
	t->gc_total += h->gc_total;
	for (size_t i = 0; i < h->n; i++) {
		t->objs++;
		t->bytes += h->o[i].size;
		if (h->o[i].flags & HOBJ_REACHED) {
			t->live++;
			t->live_bytes += h->o[i].size;
		}
	}
}

static void tot_row(const char *who, const struct tot *t, FILE *f)
{
	fprintf(f, "%-12s %4" PRIu64 " %10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64
		   " %14" PRIu64 "\n",
		who, t->vms, t->objs, t->bytes, t->live, t->live_bytes, t->gc_total);
}

static int text(struct snap *s, size_t n, const struct hview *v)
{
	struct tot *t = calloc(n ? n : 1, sizeof(*t)), all = { 0 };
	int rc = LMT_OK;
	char e[ESC_MAX(256)], who[32];

	if (!t)
		return LMT_ERR;
	for (size_t k = 0; k < n; k++) {
		if (load(&s[k]) != LMT_OK) {
			rc = LMT_ERR;
			break;
		}
		if (n > 1)
			printf("%s== process %u (%s)\n\n", k ? "\n" : "", s[k].pid,
			       esc_cstr(e, sizeof(e), s[k].path));
		for (size_t i = 0; i < s[k].n; i++) {
			if (i)
				printf("\n");
			heap_view_text(&s[k].hs[i], v, stdout);
			tot_add(&t[k], &s[k].hs[i]);
			if (lossy(&s[k].hs[i]))
				rc = LMT_LOSSY; /* said under "incomplete:" */
		}
		unload(&s[k]);
	}
	if (n > 1 && rc != LMT_ERR) {
		printf("\n== all %zu processes\n%-12s %4s %10s %14s %10s %14s %14s\n", n, "process",
		       "VMs", "objects", "bytes", "reachable", "bytes", "gc.total");
		for (size_t k = 0; k < n; k++) {
			snprintf(who, sizeof(who), "%u", s[k].pid);
			tot_row(who, &t[k], stdout);
			all.vms += t[k].vms;
			all.objs += t[k].objs;
			all.bytes += t[k].bytes;
			all.live += t[k].live;
			all.live_bytes += t[k].live_bytes;
			all.gc_total += t[k].gc_total;
		}
		tot_row("all", &all, stdout);
	}
	free(t);
	return rc;
}

/* -- The views of them all -------------------------------------------------- */

/* Every VM of every file in one array (views of s[k]'s copies, freed
 * through them) with a label each ("process P VM 0xL"): 0, or an exit
 * status. */
static int gather(struct snap *s, size_t n, struct heap **all, char ***labels, size_t *m)
{
	size_t k;
	int rc = LMT_OK;

	*all = NULL;
	*labels = NULL;
	*m = 0;
	for (k = 0; k < n; k++)
		if ((rc = load(&s[k])) != LMT_OK)
			return rc;
	for (k = 0; k < n; k++)
		*m += s[k].n;
	if (!(*all = calloc(*m ? *m : 1, sizeof(**all))) ||
	    !(*labels = calloc(*m ? *m : 1, sizeof(**labels))))
		return LMT_ERR;
	*m = 0;
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < s[j].n; i++, (*m)++) {
			(*all)[*m] = s[j].hs[i];
			if (asprintf(&(*labels)[*m], "process %u VM 0x%" PRIx64, s[j].pid,
				     (*all)[*m].L) < 0) {
				(*labels)[*m] = NULL;
				return LMT_ERR;
			}
		}
	return LMT_OK;
}

static void ungather(struct heap *all, char **labels, size_t m)
{
	for (size_t i = 0; labels && i < m; i++)
		free(labels[i]);
	free(labels);
	free(all);
}

static int flame(struct snap *s, size_t n)
{
	struct heap *all;
	char **labels, title[256], e[ESC_MAX(128)];
	size_t m;
	int rc = gather(s, n, &all, &labels, &m);

	if (rc == LMT_OK) {
		if (n == 1)
			snprintf(title, sizeof(title), "heap of process %u (%s)", s[0].pid,
				 esc_cstr(e, sizeof(e), s[0].path));
		else
			snprintf(title, sizeof(title), "heap of %zu processes", n);
		if (heap_view_flame(all, m, (const char *const *)labels, title, stdout))
			rc = LMT_ERR;
		for (size_t i = 0; i < m; i++)
			if (lossy(&all[i]))
				rc = rc == LMT_OK ? LMT_LOSSY : rc;
	}
	ungather(all, labels, m);
	return rc;
}

/* One .heapsnapshot of every VM of every file. */
static int chrome(struct snap *s, size_t n)
{
	struct heap *all;
	char **labels;
	size_t m;
	int rc = gather(s, n, &all, &labels, &m);

	if (rc == LMT_OK)
		rc = heap_view_chrome(all, m, (const char *const *)labels, stdout);
	ungather(all, labels, m);
	return rc;
}

int heap_files_main(int mode, char **args, int nargs, const struct hview *v)
{
	char **pv;
	size_t n;
	struct snap *s;
	int rc;

	if (paths(args, nargs, &pv, &n))
		return LMT_ERR;
	if (mode == HEAP_DIFF && n != 2) {
		for (size_t k = 0; k < n; k++)
			free(pv[k]);
		free(pv);
		fprintf(stderr, "luamemtrace heap: --diff takes two snapshot files\n");
		return LMT_USAGE;
	}
	if (!(s = calloc(n, sizeof(*s)))) {
		free(pv);
		return LMT_ERR;
	}
	for (size_t k = 0; k < n; k++)
		s[k].path = pv[k];
	switch (mode) {
	case HEAP_FLAME:
		rc = flame(s, n);
		break;
	case HEAP_DIFF:
		rc = load(&s[0]);
		if (rc == LMT_OK)
			rc = load(&s[1]);
		if (rc == LMT_OK)
			rc = heap_view_diff(s[0].hs, s[0].n, s[1].hs, s[1].n, v, stdout);
		break;
	case HEAP_CHROME:
		rc = chrome(s, n);
		break;
	default:
		rc = text(s, n, v);
	}
	for (size_t k = 0; k < n; k++) {
		unload(&s[k]);
		free(s[k].path);
	}
	free(s);
	free(pv);
	return rc;
}
