/* pprof output: a gzipped profile.proto (user/report/profile.proto) heap
 * profile with Go's sample types in Go's order, encoded by protobuf-c.
 *
 * A sample per stack (with the companion) or per location (without): what
 * its events allocated (alloc_objects, alloc_space: ALLOC and REALLOC, as
 * --folded counts them) and what it still held at the end of the stream
 * (inuse_objects, inuse_space: HEAP SUMMARY's blocks). A Lua frame is a
 * Function named chunk:firstline (as LuaJIT's jit.p names functions), its
 * file the chunk name without '@', and a Location at its line; any other
 * frame (C function, builtin, trace, INTERNAL, [truncated]) a Function of
 * that name at line 0. Locations are the report's frame names, so frames
 * that read the same are one. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "profile.pb-c.h"
#include "aggregate.h"
#include "keys.h"
#include "pprof.h"

/* -- The profile --------------------------------------------------------- */

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Label Label;

enum { NVAL = 4 };

/* The profile being built from one report or several (pprof_add): names
 * in its own pool (sp), so reports can come and go; string table index,
 * function and location ids by pool id; samples by (label, key). */
struct pp {
	struct strpool sp;
	struct kvmap str, fn, loc, smp;
	char **strs;
	uint32_t nstr, str_cap;
	Function *fns;
	uint32_t nfn, fn_cap;
	Location *locs;
	Line *lines;
	uint32_t nloc, loc_cap, line_cap;
	Sample *smps;
	Label *labels; /* one per sample, used when labelled */
	uint64_t *ids; /* location ids of all samples, in one array */
	uint32_t nids, ids_cap;
	int64_t *vals; /* NVAL per sample */
	uint32_t nsmp, smp_cap, vals_cap, lab_cap;
	int labelled, oom;
	double scale; /* the largest report_scale of a stream added */
};

/* Pool id of text s (n bytes) in p's own pool. */
static uint32_t own(struct pp *p, const char *s, size_t n)
{
	const uint32_t id = intern(&p->sp, s, n);
	if (id == NONE)
		p->oom = 1;
	return id;
}

static uint32_t own_of(struct pp *p, const struct report *rp, uint32_t id)
{
	return id == NONE ? (p->oom = 1, NONE) :
			    own(p, str_ptr(&rp->sp, id), rp->sp.s[id].len);
}

static int64_t str_idx(struct pp *p, uint32_t id)
{
	uint64_t *v;
	int isnew;

	if (id == NONE || p->oom)
		goto oom;
	if ((v = kvmap_get(&p->str, id)))
		return (int64_t)*v;
	if (grow(&p->strs, &p->str_cap, (size_t)p->nstr + 1, sizeof(*p->strs)) ||
	    !(p->strs[p->nstr] = strndup(str_ptr(&p->sp, id), p->sp.s[id].len)) ||
	    !kvmap_put(&p->str, id, p->nstr, &isnew))
		goto oom;
	return p->nstr++;
oom:
	p->oom = 1;
	return 0;
}

static int64_t lit_idx(struct pp *p, const char *s)
{
	return str_idx(p, own(p, s, strlen(s)));
}

static uint64_t fn_id(struct pp *p, uint32_t name, uint32_t file, uint64_t start)
{
	uint64_t *v;
	int isnew;

	if (name == NONE)
		return p->oom = 1, 0;
	if ((v = kvmap_get(&p->fn, name)))
		return *v;
	if (grow(&p->fns, &p->fn_cap, (size_t)p->nfn + 1, sizeof(*p->fns)) ||
	    !kvmap_put(&p->fn, name, p->nfn + 1, &isnew)) {
		p->oom = 1;
		return 0;
	}
	perftools__profiles__function__init(&p->fns[p->nfn]);
	p->fns[p->nfn].id = p->nfn + 1;
	p->fns[p->nfn].name = str_idx(p, name);
	p->fns[p->nfn].system_name = p->fns[p->nfn].name;
	p->fns[p->nfn].filename = file == NONE ? 0 : str_idx(p, file);
	p->fns[p->nfn].start_line = (int64_t)start;
	return ++p->nfn;
}

/* The location of frame name (rp's pool): a Lua line (struct pframe) or
 * a name. */
static uint64_t loc_id(struct pp *p, const struct report *rp, uint32_t name)
{
	const uint32_t oname = own_of(p, rp, name);
	const uint64_t *k;
	uint64_t *v, fid, line = 0;
	int isnew;

	if (oname == NONE)
		return 0;
	if ((v = kvmap_get(&p->loc, oname)))
		return *v;
	if ((k = kvmap_get(&rp->pfr, name))) {
		const struct pframe *f = &rp->pfv[*k];
		fid = fn_id(p, own_of(p, rp, f->fn), own_of(p, rp, f->file), f->start);
		line = f->line;
	} else {
		fid = fn_id(p, oname, NONE, 0);
	}
	if (p->oom || grow(&p->locs, &p->loc_cap, (size_t)p->nloc + 1, sizeof(*p->locs)) ||
	    grow(&p->lines, &p->line_cap, (size_t)p->nloc + 1, sizeof(*p->lines)) ||
	    !kvmap_put(&p->loc, oname, p->nloc + 1, &isnew)) {
		p->oom = 1;
		return 0;
	}
	perftools__profiles__line__init(&p->lines[p->nloc]);
	p->lines[p->nloc].function_id = fid;
	p->lines[p->nloc].line = (int64_t)line;
	perftools__profiles__location__init(&p->locs[p->nloc]);
	p->locs[p->nloc].id = p->nloc + 1;
	return ++p->nloc;
}

/* The sample of key (rp's pool: a folded stack, root first, or a location
 * name) under label (p's pool; NONE: none): its values, made with its
 * locations (leaf first) the first time. */
static int64_t *sample_of(struct pp *p, struct report *rp, uint32_t key, uint32_t label)
{
	const uint32_t okey = own_of(p, rp, key);
	const uint64_t sk = (uint64_t)(label == NONE ? 0 : label + 1) << 32 | okey;
	const uint32_t first = p->nids;
	uint64_t *v;
	uint32_t len, end, b;
	char *s;
	int isnew;

	if (okey == NONE)
		return NULL;
	if ((v = kvmap_get(&p->smp, sk)))
		return &p->vals[*v * NVAL];
	/* A copy: pieces are interned in the pool the key lives in. */
	len = rp->sp.s[key].len;
	if (!(s = malloc(len + 1))) {
		p->oom = 1;
		return NULL;
	}
	memcpy(s, str_ptr(&rp->sp, key), len);
	/* Without stacks a key is one frame, ';' and all. */
	for (end = len;;) {
		uint32_t piece;

		for (b = end; b > 0 && (!rp->has_stacks || s[b - 1] != ';'); b--)
			;
		piece = b == 0 && end == len ? key : intern(&rp->sp, s + b, end - b);
		if (piece == NONE || grow(&p->ids, &p->ids_cap, p->nids + 1, sizeof(*p->ids))) {
			p->oom = 1;
			break;
		}
		p->ids[p->nids++] = loc_id(p, rp, piece);
		if (b == 0)
			break;
		end = b - 1;
	}
	free(s);
	if (p->oom || grow(&p->smps, &p->smp_cap, (size_t)p->nsmp + 1, sizeof(*p->smps)) ||
	    grow(&p->labels, &p->lab_cap, (size_t)p->nsmp + 1, sizeof(*p->labels)) ||
	    grow(&p->vals, &p->vals_cap, ((size_t)p->nsmp + 1) * NVAL, sizeof(*p->vals)) ||
	    !kvmap_put(&p->smp, sk, p->nsmp, &isnew)) {
		p->oom = 1;
		return NULL;
	}
	perftools__profiles__sample__init(&p->smps[p->nsmp]);
	/* an offset into ids until ids stops moving (pprof_write) */
	p->smps[p->nsmp].n_location_id = p->nids - first;
	p->smps[p->nsmp].location_id = (uint64_t *)(uintptr_t)first;
	perftools__profiles__label__init(&p->labels[p->nsmp]);
	if (label != NONE) {
		p->labels[p->nsmp].key = lit_idx(p, "process");
		p->labels[p->nsmp].str = str_idx(p, label);
	}
	memset(&p->vals[(size_t)p->nsmp * NVAL], 0, NVAL * sizeof(*p->vals));
	return &p->vals[(size_t)p->nsmp++ * NVAL];
}

/* data, gzipped (pprof reads profiles gzipped), to out. */
static int gz_out(FILE *out, const uint8_t *data, size_t n)
{
	uint8_t buf[65536];
	z_stream z = { 0 };
	int rc;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)n;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR ||
		    fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
			deflateEnd(&z);
			return -1;
		}
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

struct pp *pprof_new(void)
{
	struct pp *p = calloc(1, sizeof(*p));

	/* string_table[0] is "" */
	if (p && lit_idx(p, "") != 0) {
		pprof_free(p);
		return NULL;
	}
	return p;
}

int pprof_add(struct pp *p, struct report *rp, const char *label)
{
	const uint32_t lab = label ? own(p, label, strlen(label)) : NONE;
	struct accset alloc = { 0 }, live = { 0 };

	if (rp->scale > p->scale)
		p->scale = rp->scale;
	int64_t *v;

	p->labelled |= label != NULL;
	/* Locations without a stack (a stream without companion, an event
	 * without its stack) are their group's: a Lua line is a frame. */
	for (uint32_t g = 0; g < rp->ngrp; g++) {
		const struct loc *l = &rp->loc[rp->grp[g].loc];
		if (!l->trace && pframe_add(rp, rp->grp[g].name, l->addr, l->line, NULL, 0))
			p->oom = 1;
	}
	/* What each stack or location allocated... */
	alloc_by_key(rp, 1, &alloc);
	for (uint32_t i = 0; i < alloc.n; i++)
		if ((v = sample_of(p, rp, alloc.v[i].name, lab))) {
			v[0] += (int64_t)alloc.v[i].b;
			v[1] += (int64_t)alloc.v[i].a;
		}
	/* ...and what it still held at the end. */
	live_by_key(rp, &live);
	for (uint32_t i = 0; i < live.n; i++)
		if ((v = sample_of(p, rp, live.v[i].name, lab))) {
			v[2] += (int64_t)live.v[i].b;
			v[3] += (int64_t)live.v[i].a;
		}
	p->oom |= alloc.oom || live.oom || rp->oom;
	acc_free(&alloc);
	acc_free(&live);
	return p->oom ? -1 : 0;
}

/* The pointer arrays protobuf-c packs from, over p's own arrays; sample
 * locations from offsets into ids to pointers (pprof_write undoes it). */
static void link_profile(struct pp *p, Sample **sp, Location **lp, Line **linep, Function **fp,
			 Label **labp)
{
	for (uint32_t i = 0; i < p->nsmp; i++) {
		p->smps[i].location_id = p->ids + (uintptr_t)p->smps[i].location_id;
		p->smps[i].n_value = NVAL;
		p->smps[i].value = &p->vals[(size_t)i * NVAL];
		if (p->labelled) {
			labp[i] = &p->labels[i];
			p->smps[i].n_label = 1;
			p->smps[i].label = &labp[i];
		}
		sp[i] = &p->smps[i];
	}
	for (uint32_t i = 0; i < p->nloc; i++) {
		p->locs[i].mapping_id = 1;
		linep[i] = &p->lines[i];
		p->locs[i].n_line = 1;
		p->locs[i].line = &linep[i];
		lp[i] = &p->locs[i];
	}
	for (uint32_t i = 0; i < p->nfn; i++)
		fp[i] = &p->fns[i];
}

int pprof_write(struct pp *p, FILE *out)
{
	static const char *const types[NVAL][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[NVAL], period, *vtp[NVAL];
	int64_t comment;
	Mapping map, *mapp = &map;
	Sample **sp = NULL;
	Location **lp = NULL;
	Line **linep = NULL;
	Function **fp = NULL;
	Label **labp = NULL;
	uint8_t *buf = NULL;
	size_t n;
	int rc = -1;

	for (int i = 0; i < NVAL; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = lit_idx(p, types[i][0]);
		vt[i].unit = lit_idx(p, types[i][1]);
		vtp[i] = &vt[i];
	}
	/* One mapping, symbolized: pprof then looks for no binary. */
	perftools__profiles__mapping__init(&map);
	map.id = 1;
	map.filename = lit_idx(p, "[lua]");
	map.has_functions = map.has_filenames = map.has_line_numbers = 1;
	perftools__profiles__value_type__init(&period);
	period.type = lit_idx(p, "space");
	period.unit = lit_idx(p, "bytes");
	if (p->scale > 1) {
		char c[200];

		snprintf(c, sizeof(c), "estimates: a --duty sample, alloc_* scaled up to x%.3f to "
			 "the whole run; inuse_* is the sample's own", p->scale);
		comment = lit_idx(p, c);
		prof.n_comment = 1;
		prof.comment = &comment;
	}
	if (p->oom ||
	    !(sp = calloc(p->nsmp + 1, sizeof(*sp))) || !(lp = calloc(p->nloc + 1, sizeof(*lp))) ||
	    !(linep = calloc(p->nloc + 1, sizeof(*linep))) ||
	    !(fp = calloc(p->nfn + 1, sizeof(*fp))) || !(labp = calloc(p->nsmp + 1, sizeof(*labp))))
		goto out;
	link_profile(p, sp, lp, linep, fp, labp);
	prof.n_sample_type = NVAL;
	prof.sample_type = vtp;
	prof.n_sample = p->nsmp;
	prof.sample = sp;
	prof.n_mapping = 1;
	prof.mapping = &mapp;
	prof.n_location = p->nloc;
	prof.location = lp;
	prof.n_function = p->nfn;
	prof.function = fp;
	prof.n_string_table = p->nstr;
	prof.string_table = p->strs;
	prof.period_type = &period;
	prof.period = 1; /* every event: not sampled */
	n = perftools__profiles__profile__get_packed_size(&prof);
	if (!(buf = malloc(n ? n : 1)) ||
	    perftools__profiles__profile__pack(&prof, buf) != n)
		goto out;
	rc = gz_out(out, buf, n);
	/* ids may move again if the profile grows: offsets back */
	for (uint32_t i = 0; i < p->nsmp; i++)
		p->smps[i].location_id = (uint64_t *)(uintptr_t)(p->smps[i].location_id - p->ids);
out:
	free(buf);
	free(sp);
	free(lp);
	free(linep);
	free(fp);
	free(labp);
	return rc;
}

void pprof_free(struct pp *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nstr; i++)
		free(p->strs[i]);
	free(p->strs);
	free(p->fns);
	free(p->locs);
	free(p->lines);
	free(p->smps);
	free(p->labels);
	free(p->ids);
	free(p->vals);
	kvmap_free(&p->str);
	kvmap_free(&p->fn);
	kvmap_free(&p->loc);
	kvmap_free(&p->smp);
	free(p->sp.arena);
	free(p->sp.s);
	free(p->sp.tab);
	free(p);
}

int pprof_print(struct report *rp, FILE *out)
{
	struct pp *p = pprof_new();
	int rc = !p || pprof_add(p, rp, NULL) ? -1 : pprof_write(p, out);

	pprof_free(p);
	return rc;
}
