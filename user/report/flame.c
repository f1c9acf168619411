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

#include "flame.h"
#include "keys.h"
#include "live.h"

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

/* The page's data, from one report or several (flame_add): keys in its
 * own pool, a stream's under a root frame of its label; the held bytes per
 * bucket summed over the streams (bucket b of each: the same fraction of
 * its events), the peaks summed (each stream's own), cells by (key,
 * bucket allocated, bucket freed). */
struct fl {
	struct strpool sp;
	struct kvmap idx; /* key (pool id) -> index */
	uint32_t *name;
	uint64_t (*v)[NV];
	uint32_t n, cap, vcap;
	struct kvmap cidx; /* (index, born, dead) -> cell */
	struct tcell *cv;
	uint32_t nc, ccap;
	uint64_t bmax[1024], bend[1024];
	uint32_t nb, nstreams, peak_seq;
	uint64_t nev, peak;
	int oom;
	char *heap; /* flame_heap: the page is a heap's, this its summary */
};

/* The index of key (klen bytes at k) under label, or NONE. */
static uint32_t key_index(struct fl *f, const char *k, uint32_t klen, const char *label)
{
	struct sbuf b = { 0 };
	uint32_t id;
	uint64_t *i;
	int isnew;

	if (label) {
		sb_escaped(&b, label, strlen(label), 0);
		sb_put(&b, ";", 1);
	}
	sb_put(&b, k, klen);
	id = b.oom ? NONE : intern(&f->sp, b.p ? b.p : "", b.len);
	free(b.p);
	if (id == NONE || grow(&f->name, &f->cap, (size_t)f->n + 1, sizeof(*f->name)) ||
	    grow(&f->v, &f->vcap, (size_t)f->n + 1, sizeof(*f->v)) ||
	    !(i = kvmap_put(&f->idx, id, f->n, &isnew))) {
		f->oom = 1;
		return NONE;
	}
	if (isnew) {
		f->name[f->n] = id;
		memset(f->v[f->n], 0, sizeof(f->v[0]));
		f->n++;
	}
	return (uint32_t)*i;
}

/* The index of key (rp's pool) under label, or NONE; memo: rp's key ->
 * index + 1, for the report being added. */
static uint32_t key_of(struct fl *f, const struct report *rp, uint32_t key, const char *label,
		       struct kvmap *memo)
{
	uint32_t id;
	uint64_t *i;
	int isnew;

	if ((i = kvmap_get(memo, key)))
		return (uint32_t)*i - 1;
	id = key_index(f, str_ptr(&rp->sp, key), rp->sp.s[key].len, label);
	if (id != NONE && !kvmap_put(memo, key, (uint64_t)id + 1, &isnew))
		f->oom = 1;
	return id;
}

static void add_set(struct fl *f, const struct report *rp, const struct accset *s, int col,
		    const char *label, struct kvmap *memo)
{
	uint32_t k;

	for (uint32_t i = 0; i < s->n; i++)
		if ((k = key_of(f, rp, s->v[i].name, label, memo)) != NONE) {
			f->v[k][col] += s->v[i].a;
			f->v[k][col + 1] += s->v[i].b;
		}
}

struct fl *flame_new(void)
{
	return calloc(1, sizeof(struct fl));
}

void flame_free(struct fl *f)
{
	if (!f)
		return;
	kvmap_free(&f->idx);
	kvmap_free(&f->cidx);
	free(f->name);
	free(f->v);
	free(f->cv);
	free(f->sp.arena);
	free(f->sp.s);
	free(f->sp.tab);
	free(f->heap);
	free(f);
}

int flame_key(struct fl *f, const char *key, size_t len, const uint64_t v[6])
{
	uint32_t k = len < UINT32_MAX ? key_index(f, key, (uint32_t)len, NULL) : NONE;

	if (k == NONE)
		return -1;
	for (int c = 0; c < NV; c++)
		f->v[k][c] += v[c];
	return 0;
}

int flame_heap(struct fl *f, const char *summary)
{
	free(f->heap);
	if (!(f->heap = strdup(summary)))
		f->oom = 1;
	return f->heap ? 0 : -1;
}

int flame_add(struct fl *f, struct report *rp, const char *label)
{
	struct accset alloc = { 0 }, live = { 0 };
	struct kvmap memo = { 0 };
	uint64_t last = 0;
	uint32_t k;

	if (rp->nb > 1024 || (f->nstreams && rp->nb != f->nb))
		return -1;
	f->nb = rp->nb;
	f->nstreams++;
	/* What each key allocated, then held at the end and at the peak. */
	alloc_by_key(rp, 1, &alloc);
	add_set(f, rp, &alloc, 0, label, &memo);
	live_by_key(rp, &live);
	add_set(f, rp, &live, 2, label, &memo);
	add_set(f, rp, &rp->peak, 4, label, &memo);
	f->oom |= alloc.oom;
	acc_free(&alloc);
	acc_free(&live);
	/* Blocks by bucket allocated and freed (nb: still live). */
	if (temporal_end(rp))
		f->oom = 1;
	for (uint32_t i = 0; i < rp->ntc && !f->oom; i++) {
		const struct tcell *t = &rp->tcv[i];
		uint64_t *c;
		int isnew;

		if ((k = key_of(f, rp, t->key, label, &memo)) == NONE ||
		    grow(&f->cv, &f->ccap, (size_t)f->nc + 1, sizeof(*f->cv)) ||
		    !(c = kvmap_put(&f->cidx, (uint64_t)k << 32 | (uint64_t)t->born << 16 | t->dead,
				    f->nc, &isnew))) {
			f->oom = 1;
			break;
		}
		if (isnew)
			f->cv[f->nc++] = (struct tcell){ .key = k, .born = t->born, .dead = t->dead };
		f->cv[*c].bytes += t->bytes;
		f->cv[*c].n += t->n;
	}
	/* Held bytes per bucket; one with no event holds what the last did. */
	for (uint32_t b = 0; b < rp->nb; b++) {
		const int none = rp->bmax[b] == UINT64_MAX;
		f->bmax[b] += none ? last : rp->bmax[b];
		last = none ? last : rp->bend[b];
		f->bend[b] += last;
	}
	f->nev += rp->tn;
	f->peak += rp->held_max;
	f->peak_seq = rp->peak_seq;
	f->oom |= live.oom || rp->peak.oom || rp->oom || rp->blk_oom;
	kvmap_free(&memo);
	return f->oom ? -1 : 0;
}

static void u64_list(FILE *out, const uint64_t *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", v[i]);
}

int flame_write(struct fl *f, FILE *out, const char *title)
{
	uint64_t tot[3] = { 0 };

	if (f->oom)
		return -1;
	for (uint32_t i = 0; i < f->n; i++)
		for (int c = 0; c < 3; c++)
			tot[c] += f->v[i][c];
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
	/* The data (user/report/flame/page.js). */
	fputs("<script id=\"lmt-data\" type=\"application/json\">{\"title\":", out);
	json_str(out, title, strlen(title));
	if (f->heap) {
		fputs(",\"heap\":", out);
		json_str(out, f->heap, strlen(f->heap));
	}
	fprintf(out, ",\"streams\":%u,\"n\":%" PRIu64 ",\"nb\":%u", f->nstreams, f->nev, f->nb);
	fprintf(out, ",\"peak\":{\"seq\":%u,\"bytes\":%" PRIu64 "}", f->peak_seq, f->peak);
	fputs(",\"totals\":[", out);
	u64_list(out, tot, 3);
	fputs("],\"series\":{\"max\":[", out);
	u64_list(out, f->bmax, f->nb);
	fputs("],\"end\":[", out);
	u64_list(out, f->bend, f->nb);
	fputs("]},\n\"keys\":[", out);
	for (uint32_t i = 0; i < f->n; i++) {
		if (i)
			fputc(',', out);
		json_str(out, str_ptr(&f->sp, f->name[i]), f->sp.s[f->name[i]].len);
	}
	fputs("],\n\"v\":[", out);
	for (uint32_t i = 0; i < f->n; i++) {
		fputs(i ? ",[" : "[", out);
		u64_list(out, f->v[i], NV);
		fputc(']', out);
	}
	fputs("],\n\"t\":[", out);
	for (uint32_t i = 0; i < f->nc; i++) {
		const struct tcell *t = &f->cv[i];
		fprintf(out, "%s[%u,%u,%u,%" PRIu64 ",%" PRIu64 "]", i ? "," : "", t->key, t->born,
			t->dead, t->bytes, t->n);
	}
	fputs("]}</script>\n<script>", out);
	PUT(lmt_fg_js, out);
	fputs("</script>\n</body></html>\n", out);
	return ferror(out) ? -1 : 0;
}

int flame_print(struct report *rp, FILE *out, const char *title)
{
	struct fl *f = flame_new();
	int rc = !f || flame_add(f, rp, NULL) ? -1 : flame_write(f, out, title);

	flame_free(f);
	return rc;
}
