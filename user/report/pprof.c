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
#include "report_int.h"

/* -- Frames -------------------------------------------------------------- */

int pframe_add(struct report *rp, uint32_t name, uint64_t addr, uint64_t line)
{
	const uint64_t *chunk = kvmap_get(&rp->lfunc, addr);
	const uint64_t *first = kvmap_get(&rp->lfirst, addr);
	struct pframe *f;
	uint64_t *i;
	const char *p;
	uint32_t len;
	char num[32];
	int isnew;

	if (!chunk || kvmap_get(&rp->pfr, name))
		return 0;
	if (grow(&rp->pfv, &rp->pf_cap, (size_t)rp->npf + 1, sizeof(*rp->pfv)) ||
	    !(i = kvmap_put(&rp->pfr, name, rp->npf, &isnew)))
		return -1;
	f = &rp->pfv[rp->npf++];
	p = str_ptr(&rp->sp, (uint32_t)*chunk);
	len = rp->sp.s[*chunk].len;
	if (len && *p == '@') {
		p++;
		len--;
	}
	f->file = intern(&rp->sp, p, len);
	/* a first line of -1 (2^64 - 1 in the stream) is 0 here */
	f->start = first && *first != UINT64_MAX ? *first : 0;
	rp->sb.len = 0;
	sb_put(&rp->sb, p, len);
	num[0] = ':';
	sb_put(&rp->sb, num, 1 + (size_t)lua_d(num + 1, f->start));
	f->fn = rp->sb.oom ? NONE : intern(&rp->sp, rp->sb.p ? rp->sb.p : "", rp->sb.len);
	f->line = line;
	return f->file == NONE || f->fn == NONE ? -1 : 0;
}

/* -- The profile --------------------------------------------------------- */

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;

enum { NVAL = 4 };

/* The profile being built: its tables, and the report names they came
 * from (string pool id -> string index, function and location ids). */
struct pp {
	struct report *rp;
	struct kvmap str, fn, loc, smp;
	char **strs;
	uint32_t nstr, str_cap;
	Function *fns;
	uint32_t nfn, fn_cap;
	Location *locs;
	Line *lines;
	uint32_t nloc, loc_cap, line_cap;
	Sample *smps;
	uint64_t *ids; /* location ids of all samples, in one array */
	uint32_t nids, ids_cap;
	int64_t *vals; /* NVAL per sample */
	uint32_t nsmp, smp_cap, vals_cap;
	int oom;
};

static int64_t str_idx(struct pp *p, uint32_t id)
{
	uint64_t *v;
	int isnew;

	if (id == NONE || p->oom)
		goto oom;
	if ((v = kvmap_get(&p->str, id)))
		return (int64_t)*v;
	if (grow(&p->strs, &p->str_cap, (size_t)p->nstr + 1, sizeof(*p->strs)) ||
	    !(p->strs[p->nstr] = strndup(str_ptr(&p->rp->sp, id), p->rp->sp.s[id].len)) ||
	    !kvmap_put(&p->str, id, p->nstr, &isnew))
		goto oom;
	return p->nstr++;
oom:
	p->oom = 1;
	return 0;
}

static int64_t lit_idx(struct pp *p, const char *s)
{
	return str_idx(p, intern(&p->rp->sp, s, strlen(s)));
}

static uint64_t fn_id(struct pp *p, uint32_t name, uint32_t file, uint64_t start)
{
	uint64_t *v;
	int isnew;

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

/* The location of frame name: a Lua line (struct pframe) or a name. */
static uint64_t loc_id(struct pp *p, uint32_t name)
{
	const uint64_t *k;
	uint64_t *v, fid;
	int isnew;

	if ((v = kvmap_get(&p->loc, name)))
		return *v;
	if ((k = kvmap_get(&p->rp->pfr, name))) {
		const struct pframe *f = &p->rp->pfv[*k];
		fid = fn_id(p, f->fn, f->file, f->start);
		k = &f->line;
	} else {
		static const uint64_t zero;
		fid = fn_id(p, name, NONE, 0);
		k = &zero;
	}
	if (p->oom || grow(&p->locs, &p->loc_cap, (size_t)p->nloc + 1, sizeof(*p->locs)) ||
	    grow(&p->lines, &p->line_cap, (size_t)p->nloc + 1, sizeof(*p->lines)) ||
	    !kvmap_put(&p->loc, name, p->nloc + 1, &isnew)) {
		p->oom = 1;
		return 0;
	}
	perftools__profiles__line__init(&p->lines[p->nloc]);
	p->lines[p->nloc].function_id = fid;
	p->lines[p->nloc].line = (int64_t)*k;
	perftools__profiles__location__init(&p->locs[p->nloc]);
	p->locs[p->nloc].id = p->nloc + 1;
	return ++p->nloc;
}

/* The sample of key (a folded stack, root first, or a location name):
 * its values, made with its locations (leaf first) the first time. */
static int64_t *sample_of(struct pp *p, uint32_t key)
{
	const char *s = str_ptr(&p->rp->sp, key);
	const uint32_t len = p->rp->sp.s[key].len;
	const size_t first = p->nids;
	uint64_t *v;
	uint32_t end = len, b;
	int isnew;

	if ((v = kvmap_get(&p->smp, key)))
		return &p->vals[*v * NVAL];
	/* Without stacks a key is one frame, ';' and all. */
	for (;;) {
		uint32_t piece;

		for (b = end; b > 0 && (!p->rp->has_stacks || s[b - 1] != ';'); b--)
			;
		piece = b == 0 && end == len ? key : intern(&p->rp->sp, s + b, end - b);
		if (piece == NONE || grow(&p->ids, &p->ids_cap, p->nids + 1, sizeof(*p->ids))) {
			p->oom = 1;
			return NULL;
		}
		p->ids[p->nids++] = loc_id(p, piece);
		if (b == 0)
			break;
		end = b - 1;
	}
	if (p->oom || grow(&p->smps, &p->smp_cap, (size_t)p->nsmp + 1, sizeof(*p->smps)) ||
	    grow(&p->vals, &p->vals_cap, ((size_t)p->nsmp + 1) * NVAL, sizeof(*p->vals)) ||
	    !kvmap_put(&p->smp, key, p->nsmp, &isnew)) {
		p->oom = 1;
		return NULL;
	}
	perftools__profiles__sample__init(&p->smps[p->nsmp]);
	/* an offset into ids until ids stops moving (pp_write) */
	p->smps[p->nsmp].n_location_id = p->nids - first;
	p->smps[p->nsmp].location_id = (uint64_t *)(uintptr_t)first;
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

/* The profile of p's samples, packed and written. */
static int pp_write(struct pp *p, FILE *out)
{
	static const char *const types[NVAL][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[NVAL], period, *vtp[NVAL];
	Mapping map, *mapp = &map;
	Sample **sp = NULL;
	Location **lp = NULL;
	Line **linep = NULL;
	Function **fp = NULL;
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
	if (p->oom ||
	    !(sp = calloc(p->nsmp + 1, sizeof(*sp))) || !(lp = calloc(p->nloc + 1, sizeof(*lp))) ||
	    !(linep = calloc(p->nloc + 1, sizeof(*linep))) ||
	    !(fp = calloc(p->nfn + 1, sizeof(*fp))))
		goto out;
	for (uint32_t i = 0; i < p->nsmp; i++) {
		p->smps[i].location_id = p->ids + (uintptr_t)p->smps[i].location_id;
		p->smps[i].n_value = NVAL;
		p->smps[i].value = &p->vals[(size_t)i * NVAL];
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
out:
	free(buf);
	free(sp);
	free(lp);
	free(linep);
	free(fp);
	return rc;
}

static void pp_free(struct pp *p)
{
	for (uint32_t i = 0; i < p->nstr; i++)
		free(p->strs[i]);
	free(p->strs);
	free(p->fns);
	free(p->locs);
	free(p->lines);
	free(p->smps);
	free(p->ids);
	free(p->vals);
	kvmap_free(&p->str);
	kvmap_free(&p->fn);
	kvmap_free(&p->loc);
	kvmap_free(&p->smp);
}

int pprof(struct report *rp, FILE *out)
{
	struct pp p = { .rp = rp };
	struct accset live = { 0 };
	int64_t *v;
	int rc = -1;

	/* string_table[0] is "" */
	if (lit_idx(&p, "") != 0)
		goto out;
	/* Locations without a stack (a stream without companion, an event
	 * without its stack) are their group's: a Lua line is a frame. */
	for (uint32_t g = 0; g < rp->ngrp; g++) {
		const struct loc *l = &rp->loc[rp->grp[g].loc];
		if (!l->trace && pframe_add(rp, rp->grp[g].name, l->addr, l->line))
			goto out;
	}
	/* What each stack or location allocated... */
	if (rp->has_stacks) {
		for (uint32_t i = 0; i < rp->fold.n; i++)
			if ((v = sample_of(&p, rp->fold.v[i].name))) {
				v[0] += (int64_t)rp->fold.v[i].b;
				v[1] += (int64_t)rp->fold.v[i].a;
			}
	} else {
		for (uint32_t g = 0; g < rp->ngrp; g++)
			if (rp->grp[g].kind != MP_FREE && (v = sample_of(&p, rp->grp[g].name))) {
				v[0] += (int64_t)rp->grp[g].num;
				v[1] += (int64_t)rp->grp[g].alloc;
			}
	}
	/* ...and what it still held at the end. */
	live_by_key(rp, &live);
	for (uint32_t i = 0; i < live.n; i++)
		if ((v = sample_of(&p, live.v[i].name))) {
			v[2] += (int64_t)live.v[i].b;
			v[3] += (int64_t)live.v[i].a;
		}
	if (!live.oom && !p.oom && !rp->oom)
		rc = pp_write(&p, out);
out:
	acc_free(&live);
	pp_free(&p);
	return rc;
}
