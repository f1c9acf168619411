/* The flame graph page: one self-contained HTML file (d3, d3-flame-graph
 * and the page's code inlined: flame_assets.S), its data as JSON. Per key
 * (a folded stack with the companion, else a location): bytes and
 * allocations, what was held at the end and at the peak (report_temporal);
 * the held bytes per bucket of events, and the blocks by (key, bucket
 * allocated, bucket freed) for a range selection (user/report/flame/
 * page.js says what the page does with them). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define ASSET(s) extern const char s[], s##_end[]
ASSET(lmt_fg_css);
ASSET(lmt_fg_d3);
ASSET(lmt_fg_flame);
ASSET(lmt_fg_tip);
ASSET(lmt_fg_page);
ASSET(lmt_fg_js);
#define PUT(s, out) fwrite(s, 1, (size_t)(s##_end - s), out)

enum { NV = 6 };

/* A JSON string, safe inside <script>: no '<', '>' or '&' as such. */
static void json_str(FILE *out, const char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		const unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void html_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", out);
		else if (*s == '>')
			fputs("&gt;", out);
		else if (*s == '&')
			fputs("&amp;", out);
		else
			fputc(*s, out);
	}
}

/* Keys and their values. */
struct fkeys {
	struct kvmap idx; /* name -> index */
	uint32_t *name;
	uint64_t (*v)[NV];
	uint32_t n, cap, vcap;
	int oom;
};

static uint64_t *vals_of(struct fkeys *k, uint32_t name)
{
	uint64_t *i;
	int isnew;

	if (grow(&k->name, &k->cap, (size_t)k->n + 1, sizeof(*k->name)) ||
	    grow(&k->v, &k->vcap, (size_t)k->n + 1, sizeof(*k->v)) ||
	    !(i = kvmap_put(&k->idx, name, k->n, &isnew))) {
		k->oom = 1;
		return NULL;
	}
	if (isnew) {
		k->name[k->n] = name;
		memset(k->v[k->n], 0, sizeof(k->v[0]));
		k->n++;
	}
	return k->v[*i];
}

static void add_set(struct fkeys *k, const struct accset *s, int col)
{
	uint64_t *v;

	for (uint32_t i = 0; i < s->n; i++)
		if ((v = vals_of(k, s->v[i].name))) {
			v[col] += s->v[i].a;
			v[col + 1] += s->v[i].b;
		}
}

int flamegraph(struct report *rp, FILE *out, const char *title)
{
	struct fkeys k = { 0 };
	struct accset live = { 0 };
	uint64_t tot[3] = { 0 }, *v;
	int first = 1;

	/* What each key allocated, then held at the end and at the peak. */
	if (rp->has_stacks) {
		add_set(&k, &rp->fold, 0);
	} else {
		for (uint32_t g = 0; g < rp->ngrp; g++)
			if (rp->grp[g].kind != MP_FREE && (v = vals_of(&k, rp->grp[g].name))) {
				v[0] += rp->grp[g].alloc;
				v[1] += rp->grp[g].num;
			}
	}
	live_by_key(rp, &live);
	add_set(&k, &live, 2);
	if (temporal_end(rp))
		goto oom;
	add_set(&k, &rp->peak, 4);
	for (uint32_t i = 0; i < k.n; i++) {
		tot[0] += k.v[i][0];
		tot[1] += k.v[i][1];
		tot[2] += k.v[i][2];
	}
	if (k.oom || live.oom || rp->peak.oom)
		goto oom;

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", out);
	html_text(out, title);
	fputs(" - luamemtrace</title>\n<style>", out);
	PUT(lmt_fg_css, out);
	fputs("</style>\n<script>", out);
	PUT(lmt_fg_d3, out);
	fputs("</script>\n<script>", out);
	PUT(lmt_fg_flame, out);
	fputs("</script>\n<script>", out);
	PUT(lmt_fg_tip, out);
	fputs("</script>\n</head><body>\n", out);
	PUT(lmt_fg_page, out);
	/* The data. */
	fputs("<script id=\"lmt-data\" type=\"application/json\">{\"title\":", out);
	json_str(out, title, strlen(title));
	fprintf(out, ",\"n\":%" PRIu64 ",\"nb\":%u,\"peak\":{\"seq\":%u,\"bytes\":%" PRIu64 "}",
		rp->tn, rp->nb, rp->peak_seq, rp->held_max);
	fprintf(out, ",\"totals\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", tot[0], tot[1], tot[2]);
	fputs(",\"series\":{\"max\":[", out);
	for (uint32_t b = 0; b < rp->nb; b++)
		fprintf(out, "%s%" PRIu64, b ? "," : "", rp->bmax[b]);
	fputs("],\"end\":[", out);
	for (uint32_t b = 0; b < rp->nb; b++)
		fprintf(out, "%s%" PRIu64, b ? "," : "", rp->bend[b]);
	fputs("]},\n\"keys\":[", out);
	for (uint32_t i = 0; i < k.n; i++) {
		if (i)
			fputc(',', out);
		json_str(out, str_ptr(&rp->sp, k.name[i]), rp->sp.s[k.name[i]].len);
	}
	fputs("],\n\"v\":[", out);
	for (uint32_t i = 0; i < k.n; i++) {
		fputs(i ? ",[" : "[", out);
		for (int c = 0; c < NV; c++)
			fprintf(out, "%s%" PRIu64, c ? "," : "", k.v[i][c]);
		fputc(']', out);
	}
	/* Blocks by bucket allocated and freed (nb: still live). */
	fputs("],\n\"t\":[", out);
	for (uint32_t i = 0; i < rp->ntc; i++) {
		const struct tcell *t = &rp->tcv[i];
		const uint64_t *ki = kvmap_get(&k.idx, t->key);
		if (!ki)
			continue;
		fprintf(out, "%s[%" PRIu64 ",%u,%u,%" PRIu64 ",%" PRIu64 "]", first ? "" : ",",
			*ki, t->born, t->dead, t->bytes, t->n);
		first = 0;
	}
	fputs("]}</script>\n<script>", out);
	PUT(lmt_fg_js, out);
	fputs("</script>\n</body></html>\n", out);
	kvmap_free(&k.idx);
	free(k.name);
	free(k.v);
	acc_free(&live);
	return ferror(out) ? -1 : 0;
oom:
	kvmap_free(&k.idx);
	free(k.name);
	free(k.v);
	acc_free(&live);
	return -1;
}
