/* Unit tests of the memprof writer, reader and report.
 * One line per check: "ok - name" / "not ok - name"; exit status 1 on any
 * failure. Built with ASan/UBSan by the Makefile.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/memprof_read.h"
#include "format/memprof_write.h"
#include "report/report.h"

static int failures;

static void check(int cond, const char *fmt, ...)
{
	va_list ap;
	printf(cond ? "ok - " : "not ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		failures++;
}

/* Prints a diff-friendly explanation when two texts differ. */
static int same_text(const char *what, const char *want, const char *got)
{
	if (!strcmp(want, got))
		return 1;
	printf("# %s: want:\n%s\n# got:\n%s\n", what, want, got);
	return 0;
}

/* ---- Byte builder for hand-made streams ---- */

struct bytes {
	unsigned char *p;
	size_t n, cap;
};

static void b_put(struct bytes *b, const void *s, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void b_byte(struct bytes *b, unsigned v)
{
	unsigned char c = (unsigned char)v;
	b_put(b, &c, 1);
}

static void b_uleb(struct bytes *b, uint64_t v)
{
	do {
		b_byte(b, (unsigned)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void b_str(struct bytes *b, const char *s)
{
	b_uleb(b, strlen(s));
	b_put(b, s, strlen(s));
}

static void b_prologues(struct bytes *b) /* empty symtab, memprof prologue */
{
	b_put(b, "ljs\x03\0\0\0\x80ljm\x03\0\0\0", 15);
}

/* ---- Running the reader / report over bytes ---- */

static FILE *file_of(const void *p, size_t n)
{
	FILE *f = tmpfile();
	if (n)
		fwrite(p, 1, n, f);
	rewind(f);
	return f;
}

struct run {
	int status;
	char diag[600];
	uint64_t nsyms, nevents;
	char *out;
};

/* With LMT_DUMP_DIR set, every stream a test reports on is also saved
 * there (NNN.bin), to cross-check with the reference parser or to seed
 * the fuzzer. */
static void dump_stream(const void *p, size_t n)
{
	static int seq;
	const char *dir = getenv("LMT_DUMP_DIR");
	char path[4096];
	FILE *f;
	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%03d.bin", dir, seq++);
	if ((f = fopen(path, "wb"))) {
		fwrite(p, 1, n, f);
		fclose(f);
	}
}

/* Reads the stream, feeds a report, prints it with o (NULL = standard). */
static struct run run_report(const void *p, size_t n, const struct report_opts *o)
{
	struct run res = { 0 };
	FILE *f = file_of(p, n);
	struct mpr *r = mpr_open_file(f, "t.bin");
	struct report *rp = report_new();
	struct mp_sym s;
	struct mp_event e;
	size_t len;
	FILE *out;
	int rc;
	dump_stream(p, n);
	while ((rc = mpr_next(r, &s, &e)) > 0) {
		if (rc == MPR_SYM)
			report_sym(rp, &s);
		else
			report_event(rp, &e);
	}
	res.status = rc;
	snprintf(res.diag, sizeof(res.diag), "%s", mpr_diag(r));
	res.nsyms = mpr_nsyms(r);
	res.nevents = mpr_nevents(r);
	out = open_memstream(&res.out, &len);
	report_print(rp, out, o);
	fclose(out);
	report_free(rp);
	mpr_close(r);
	fclose(f);
	return res;
}

static struct run run_bytes(const struct bytes *b) { return run_report(b->p, b->n, NULL); }

/* ---- Writer into a temporary file ---- */

struct wfile {
	struct mpw w;
	FILE *f;
};

static void w_open(struct wfile *wf)
{
	wf->f = tmpfile();
	mpw_init(&wf->w, fileno(wf->f));
}

/* Finishes and returns the whole stream (malloc'd). */
static unsigned char *w_close(struct wfile *wf, size_t *n, int *err)
{
	unsigned char *p;
	long sz;
	*err = mpw_finish(&wf->w);
	sz = lseek(fileno(wf->f), 0, SEEK_END);
	p = malloc((size_t)sz + 1);
	*n = pread(fileno(wf->f), p, (size_t)sz, 0) == sz ? (size_t)sz : 0;
	fclose(wf->f);
	return p;
}

static struct mp_sym msym(uint8_t kind, uint64_t addr, const char *name, uint64_t proto,
			  uint64_t line)
{
	return (struct mp_sym){ .kind = kind, .addr = addr, .name = name,
				.name_len = name ? strlen(name) : 0, .proto = proto, .line = line };
}

static struct mp_event mev(uint8_t kind, uint8_t src, uint64_t loc, uint64_t line,
			   uint64_t oaddr, uint64_t osize, uint64_t naddr, uint64_t nsize)
{
	return (struct mp_event){ .kind = kind, .src = src, .loc = loc, .line = line,
				  .oaddr = oaddr, .osize = osize, .naddr = naddr, .nsize = nsize };
}

/* ---- Tests ---- */

static void test_uleb(void)
{
	static const struct {
		uint64_t v;
		const char *enc;
		size_t n;
	} cases[] = {
		{ 0, "\x00", 1 },
		{ 127, "\x7f", 1 },
		{ 128, "\x80\x01", 2 },
		{ 300, "\xac\x02", 2 },
		{ 0x40ac5728, "\xa8\xae\xb1\x85\x04", 5 },
		/* each length of the writer's word-at-once form, 2 to 8
		 * bytes, at and past its bounds; a user address */
		{ 0x3fffULL, "\xff\x7f", 2 },
		{ 0x4000ULL, "\x80\x80\x01", 3 },
		{ 0x200000ULL, "\x80\x80\x80\x01", 4 },
		{ 0x10000005ULL, "\x85\x80\x80\x80\x01", 5 },
		{ 0x7ffffffffULL, "\xff\xff\xff\xff\x7f", 5 },
		{ 0x40000000003ULL, "\x83\x80\x80\x80\x80\x80\x01", 7 },
		{ 0x7f0123456789ULL, "\x89\xcf\x95\x9a\x92\xe0\x1f", 7 },
		{ 0x2000000000000ULL, "\x80\x80\x80\x80\x80\x80\x80\x01", 8 },
		{ 0xffffffffffffffULL, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8 },
		{ 0x100000000000000ULL, "\x80\x80\x80\x80\x80\x80\x80\x80\x01", 9 },
		{ UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wfile wf;
		struct mp_sym s = msym(MP_SYM_TRACE, cases[i].v, NULL, 0, 0), got;
		struct mp_event e;
		size_t n;
		int err;
		unsigned char *p;
		FILE *f;
		struct mpr *r;
		w_open(&wf);
		mpw_sym(&wf.w, &s);
		p = w_close(&wf, &n, &err);
		/* ljs 03 000000, hdr 02, uleb, 00 00, final 80 ... */
		check(!err && n == 7 + 1 + cases[i].n + 2 + 1 + 7 + 1 &&
			      !memcmp(p + 8, cases[i].enc, cases[i].n),
		      "uleb: writer encodes %llu in %zu shortest bytes",
		      (unsigned long long)cases[i].v, cases[i].n);
		f = file_of(p, n);
		r = mpr_open_file(f, "t");
		check(mpr_next(r, &got, &e) == MPR_SYM && got.addr == cases[i].v &&
			      mpr_next(r, &got, &e) == MPR_END,
		      "uleb: reader decodes %llu", (unsigned long long)cases[i].v);
		mpr_close(r);
		fclose(f);
		free(p);
	}
	/* Padded forms are valid (the parser loops while bit 7 is set). */
	{
		struct bytes b = { 0 };
		struct mp_sym s;
		struct mp_event e;
		FILE *f;
		struct mpr *r;
		b_put(&b, "ljs\x03\0\0\0", 7);
		b_byte(&b, 0x01);
		b_put(&b, "\x85\x80\x80\x00", 4); /* addr 5, padded */
		b_str(&b, "x");
		b_put(&b, "\x80ljm\x03\0\0\0\x80", 9);
		f = file_of(b.p, b.n);
		r = mpr_open_file(f, "t");
		check(mpr_next(r, &s, &e) == MPR_SYM && s.addr == 5 && s.name_len == 1 &&
			      mpr_next(r, &s, &e) == MPR_END,
		      "uleb: padded form decodes");
		mpr_close(r);
		fclose(f);
		free(b.p);
	}
}

static void test_roundtrip(void)
{
	struct wfile wf;
	struct mp_sym syms[5];
	struct mp_event evs[8];
	size_t n, ns = 0, ne = 0;
	int err, ok = 1, rc;
	unsigned char *p;
	char *big = malloc(300000);
	FILE *f;
	struct mpr *r;
	struct mp_sym s;
	struct mp_event e;

	memset(big, 'a', 299999);
	big[299999] = 0;
	syms[0] = msym(MP_SYM_LFUNC, 0x40ac5728, "@ex.lua", 0, 0);
	syms[1] = msym(MP_SYM_LFUNC, 0x40ac3b70, "rad", 0, UINT64_MAX);
	syms[2] = msym(MP_SYM_CFUNC, 0x5560662d7500, "mmap_probe", 0, 0);
	syms[3] = msym(MP_SYM_TRACE, 7, NULL, 0x40ac5728, 9);
	syms[4] = msym(MP_SYM_LFUNC, 0x1234, big, 0, 3); /* longer than both buffers */
	evs[0] = mev(MP_ALLOC, MP_SRC_LFUNC, 0x40ac5728, 6, 0, 0, 0x40abfce8, 20);
	evs[1] = mev(MP_FREE, MP_SRC_INTERNAL, 0, 0, 0x40abf488, 56, 0, 0);
	evs[2] = mev(MP_REALLOC, MP_SRC_CFUNC, 0x5560662d7510, 0, 1, 2, 3, 4);
	evs[3] = mev(MP_ALLOC, MP_SRC_TRACE, 7, 0, 0, 0, UINT64_MAX, UINT64_MAX);
	evs[4] = mev(MP_FREE, MP_SRC_LFUNC, 0x40ac5728, 7, 0, 0, 0, 0);
	evs[5] = mev(MP_REALLOC, MP_SRC_INTERNAL, 0, 0, 0x10, 16, 0x10, 32);
	evs[6] = mev(MP_ALLOC, MP_SRC_CFUNC, 0, 0, 0, 0, 0x20, 1);
	evs[7] = mev(MP_FREE, MP_SRC_TRACE, 0, 0, 0x20, 1, 0, 0);

	w_open(&wf);
	mpw_sym(&wf.w, &syms[0]);
	mpw_sym(&wf.w, &syms[1]);
	mpw_sym(&wf.w, &syms[2]);
	mpw_begin_events(&wf.w);
	for (int i = 0; i < 4; i++)
		mpw_event(&wf.w, &evs[i]);
	mpw_sym(&wf.w, &syms[3]);
	mpw_sym(&wf.w, &syms[4]);
	for (int i = 4; i < 8; i++)
		mpw_event(&wf.w, &evs[i]);
	check(wf.w.bytes > 300000, "writer: bytes counts buffered and written bytes");
	p = w_close(&wf, &n, &err);
	check(!err && n == wf.w.bytes, "writer: finish succeeds, %zu bytes", n);
	check(n > 3 && p[n - 1] == 0x80, "writer: stream ends with the epilogue");

	f = file_of(p, n);
	r = mpr_open_file(f, "rt");
	while ((rc = mpr_next(r, &s, &e)) > 0) {
		if (rc == MPR_SYM) {
			const struct mp_sym *w = &syms[ns++];
			ok &= s.kind == w->kind && s.addr == w->addr && s.name_len == w->name_len &&
			      !memcmp(s.name, w->name ? w->name : "", s.name_len) &&
			      s.proto == w->proto && s.line == w->line;
		} else {
			ok &= !memcmp(&e, &evs[ne], sizeof(e)) || (e.kind == evs[ne].kind &&
				e.src == evs[ne].src && e.loc == evs[ne].loc &&
				e.line == evs[ne].line && e.oaddr == evs[ne].oaddr &&
				e.osize == evs[ne].osize && e.naddr == evs[ne].naddr &&
				e.nsize == evs[ne].nsize);
			ne++;
		}
		/* Order: 3 syms, 4 events, 2 syms, 4 events. */
		ok &= (ns + ne <= 3) ? rc == MPR_SYM : (ns + ne <= 7) ? rc == MPR_EVENT
			: (ns + ne <= 9) ? rc == MPR_SYM : rc == MPR_EVENT;
	}
	check(rc == MPR_END && ns == 5 && ne == 8 && ok,
	      "roundtrip: writer -> reader gives the same records in order");
	check(mpr_next(r, &s, &e) == MPR_END && mpr_offset(r) == n,
	      "reader: END is sticky and the offset is the stream length");
	mpr_close(r);
	fclose(f);
	free(p);
	free(big);
}

static void test_writer_errors(void)
{
	struct mpw *w = malloc(sizeof(*w));
	struct mp_event e = mev(MP_ALLOC, 0, 0, 0, 0, 0, 1, 1);
	int fds[2];
	check(pipe(fds) == 0, "writer: pipe");
	mpw_init(w, fds[1]);
	mpw_begin_events(w);
	mpw_event(w, &e);
	check(w->err == EINVAL, "writer: an event without a source is refused (EINVAL)");
	mpw_init(w, fds[1]);
	mpw_event(w, &(struct mp_event){ .kind = MP_ALLOC, .src = MP_SRC_INTERNAL });
	check(w->err == EINVAL, "writer: an event before mpw_begin_events is refused");
	close(fds[0]);
	close(fds[1]);
	mpw_init(w, fds[1]); /* closed fd */
	mpw_begin_events(w);
	check(mpw_flush(w) == EBADF, "writer: a write error is reported by mpw_flush");
	mpw_event(w, &(struct mp_event){ .kind = MP_ALLOC, .src = MP_SRC_INTERNAL });
	check(mpw_finish(w) == EBADF && w->len == 0, "writer: the first error is sticky");
	free(w);
}

/* Section 9 of the spec, byte for byte (symtab cut to its first records). */
static void build_example(struct bytes *b)
{
	b_put(b, "ljs\x03\0\0\0", 7);
	b_byte(b, 0x00), b_uleb(b, 0x40ac5728), b_str(b, "@ex.lua"), b_uleb(b, 0);
	b_byte(b, 0x00), b_uleb(b, 0x40ac55c0), b_str(b, "@ex.lua"), b_uleb(b, 4);
	b_byte(b, 0x00), b_uleb(b, 0x40ac3b70), b_str(b, "rad"), b_uleb(b, UINT64_MAX);
	b_byte(b, 0x01), b_uleb(b, 0x5560662d7500), b_str(b, "mmap_probe");
	b_byte(b, 0x80);
	b_put(b, "ljm\x03\0\0\0", 7);
	b_put(b, "\x09\xa8\xae\xb1\x85\x04\x06\xe8\xf9\xaf\x85\x04\x14", 13);
	b_put(b, "\x09\xc0\xab\xb1\x85\x04\x05\x88\xe9\xaf\x85\x04\x38", 13);
	b_put(b, "\x09\xa8\xae\xb1\x85\x04\x08\xc0\x99\xb0\x85\x04\x20", 13);
	b_put(b, "\x09\xa8\xae\xb1\x85\x04\x09\x98\xb9\xb0\x85\x04\x18", 13);
	b_put(b, "\x0b\xa8\xae\xb1\x85\x04\x09\x98\xb9\xb0\x85\x04\x18\xa0\xa3\xb0\x85\x04\x28", 19);
	b_put(b, "\x06\x88\xe9\xaf\x85\x04\x38", 7);
	b_byte(b, 0x80);
}

/* Ties in event counts are ordered by bytes allocated, descending. */
static const char example_report[] =
	"ALLOCATIONS\n"
	"@ex.lua:5: 1 events\t+56B\t-0B\n"
	"@ex.lua:8: 1 events\t+32B\t-0B\n"
	"@ex.lua:9: 1 events\t+24B\t-0B\n"
	"@ex.lua:6: 1 events\t+20B\t-0B\n"
	"\n"
	"REALLOCATIONS\n"
	"@ex.lua:9: 1 events\t+40B\t-24B\n"
	"\tOverrides:\n"
	"\t\t@ex.lua:9\n"
	"\n"
	"\n"
	"DEALLOCATIONS\n"
	"INTERNAL: 1 events\t+0B\t-56B\n"
	"\tOverrides:\n"
	"\t\t@ex.lua:5\n"
	"\n"
	"\n"
	"HEAP SUMMARY:\n"
	"@ex.lua:9 holds 40B: 2 allocs, 1 frees\n"
	"@ex.lua:8 holds 32B: 1 allocs, 0 frees\n"
	"@ex.lua:6 holds 20B: 1 allocs, 0 frees\n"
	"\n";

static void test_example(void)
{
	struct bytes b = { 0 };
	struct run r;
	struct report_opts lo = { .format = REPORT_LEAK_ONLY };
	build_example(&b);
	r = run_bytes(&b);
	check(r.status == MPR_END && r.nsyms == 4 && r.nevents == 6,
	      "example: reads 4 symbols and 6 events");
	check(same_text("example", example_report, r.out), "example: report equals section 9");
	free(r.out);
	r = run_report(b.p, b.n, &lo);
	check(same_text("leak-only", strstr(example_report, "HEAP SUMMARY:"), r.out),
	      "example: --leak-only prints HEAP SUMMARY only");
	free(r.out);

	/* Every proper prefix is a truncated stream (or an error if empty),
	 * never a crash, and the report still prints. */
	{
		int ok = 1;
		for (size_t n = 0; n < b.n; n++) {
			r = run_report(b.p, n, NULL);
			ok &= n == 0 ? r.status == MPR_ERROR : r.status == MPR_TRUNC;
			ok &= strstr(r.diag, "t.bin: offset ") == r.diag;
			ok &= r.out && !strncmp(r.out, "ALLOCATIONS\n", 12);
			free(r.out);
		}
		check(ok, "truncation: all %zu prefixes give TRUNC + a report", b.n);
	}
	r = run_report(b.p, b.n - 1, NULL);
	check(r.status == MPR_TRUNC && r.nevents == 6 &&
		      strstr(r.diag, "end of file before the epilogue") &&
		      strstr(r.diag, "offset 162:"), /* 163-byte stream */
	      "truncation: missing epilogue keeps all events, offset of the missing byte (%s)",
	      r.diag);
	free(r.out);
	r = run_report(b.p, b.n - 3, NULL);
	check(r.status == MPR_TRUNC && r.nevents == 5 && strstr(r.diag, "offset 155:") /* the last 7-byte FREE */ &&
		      strstr(r.diag, "inside an event record"),
	      "truncation: EOF mid-event reports the record start (%s)", r.diag);
	free(r.out);
	r = run_report(b.p, 12, NULL);
	check(r.status == MPR_TRUNC && strstr(r.diag, "offset 7:") &&
		      strstr(r.diag, "symtab record"),
	      "truncation: EOF mid-symbol (%s)", r.diag);
	free(r.out);
	free(b.p);
}

static void expect_error(const void *p, size_t n, const char *want, const char *name)
{
	struct run r = run_report(p, n, NULL);
	check(r.status == MPR_ERROR && strstr(r.diag, want), "hostile: %s (%s)", name, r.diag);
	free(r.out);
}

static void test_hostile(void)
{
	struct bytes b = { 0 };
	expect_error("ljx\x03\0\0\0\x80", 8, "offset 0: bad symtab magic \"ljx\"", "bad symtab magic");
	expect_error("\x7f" "ELF", 4, "offset 0: bad symtab magic \"\\x7fEL\"",
		     "bad magic is escaped");
	expect_error("ljs\x02\0\0\0\x80", 8, "offset 3: unsupported symtab version 2", "bad version");
	expect_error("ljs\x03\0\0\0\x80ljn\x03\0\0\0\x80", 16, "offset 8: bad memprof magic",
		     "bad memprof magic");
	expect_error("ljs\x03\0\0\0\x80ljm\x04\0\0\0\x80", 16, "offset 11: unsupported memprof version 4",
		     "bad memprof version");
	expect_error("", 0, "offset 0: empty stream", "empty file");
	expect_error("ljs\x03\0\0\0\x03", 8, "offset 7: bad symtab record header 0x03",
		     "symtab type 3");
	expect_error("ljs\x03\0\0\0lj", 9, "offset 7: bad symtab record header 0x6c",
		     "missing symtab final byte");

	b_prologues(&b);
	b_byte(&b, 0x41);
	expect_error(b.p, b.n, "t.bin: offset 15: bad event header 0x41", "bad event header 0x41");
	b.n = 15;
	b_byte(&b, 0x02);
	expect_error(b.p, b.n, "offset 15: bad event header 0x02 (event without a source)",
		     "event without a source");
	b.n = 15;
	b_byte(&b, 0x81);
	expect_error(b.p, b.n, "offset 15: bad event header 0x81", "header 0x81");

	/* An 11-byte uleb, with data after it so the fast path sees it too. */
	b.n = 15;
	b_byte(&b, 0x05);
	b_put(&b, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11);
	b_put(&b, "\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01"
		  "\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01"
		  "\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05\x01\x01\x05"
		  "\x01\x80", 62);
	expect_error(b.p, b.n, "offset 16: bad uleb128: longer than 10 bytes", "overlong uleb (fast path)");
	b.n = 15 + 1 + 11;
	expect_error(b.p, b.n, "offset 16: bad uleb128: longer than 10 bytes", "overlong uleb (slow path)");
	b.n = 15;
	b_byte(&b, 0x05);
	b_put(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02\x01\x80", 12);
	expect_error(b.p, b.n, "offset 16: bad uleb128: value exceeds 64 bits", "uleb over 64 bits");

	/* A 2^40-byte string: refused before anything is allocated. */
	b.n = 0;
	b_put(&b, "ljs\x03\0\0\0", 7);
	b_byte(&b, 0x00);
	b_uleb(&b, 0x1000);
	b_uleb(&b, 1ull << 40);
	b_put(&b, "abc", 3);
	expect_error(b.p, b.n, "offset 10: string length 1099511627776 exceeds the limit of 64 MiB",
		     "huge string length");
	/* 60 MiB claimed, 3 bytes present: truncated, and (ASan would tell)
	 * the buffer grows with the data, not the claim. */
	b.n = 0;
	b_put(&b, "ljs\x03\0\0\0", 7);
	b_byte(&b, 0x00);
	b_uleb(&b, 0x1000);
	b_uleb(&b, 60u << 20);
	b_put(&b, "abc", 3);
	{
		struct run r = run_bytes(&b);
		check(r.status == MPR_TRUNC && strstr(r.diag, "offset 7:"),
		      "hostile: long string cut short is a truncation (%s)", r.diag);
		free(r.out);
	}

	/* No-op headers 0x00 and 0x04 are skipped; bytes after the epilogue
	 * are ignored. */
	b.n = 0;
	b_prologues(&b);
	b_put(&b, "\x00\x04\x05\x10\x14\x80garbage", 13);
	{
		struct run r = run_bytes(&b);
		check(r.status == MPR_END && r.nevents == 1, "reader: 0x00/0x04 no-ops, trailing bytes ignored");
		check(strstr(r.out, "INTERNAL: 1 events\t+20B\t-0B\n") != NULL,
		      "reader: INTERNAL alloc decoded after no-ops");
		free(r.out);
	}
	free(b.p);
}

/* Naming rules of symtab.lua demangle() and grouping by raw location. */
static void test_naming(void)
{
	struct bytes b = { 0 };
	struct run r;
	b_put(&b, "ljs\x03\0\0\0", 7);
	b_byte(&b, 0x00), b_uleb(&b, 0x100), b_str(&b, "@a.lua"), b_uleb(&b, 1);
	b_byte(&b, 0x01), b_uleb(&b, 0x1000), b_str(&b, "lj_cf_func");
	b_byte(&b, 0x02), b_uleb(&b, 1), b_uleb(&b, 0x100), b_uleb(&b, 7);
	b_byte(&b, 0x02), b_uleb(&b, 2), b_uleb(&b, 0x2000), b_uleb(&b, 3);
	b_byte(&b, 0x80);
	b_put(&b, "ljm\x03\0\0\0", 7);
	/* LFUNC known: chunk:line; two lines -> two groups. */
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 5), b_uleb(&b, 0xa0), b_uleb(&b, 10);
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 5), b_uleb(&b, 0xb0), b_uleb(&b, 10);
	/* CFUNC inside a C symbol: name:0x<symbol address>; two addresses
	 * give two groups with the same text. */
	b_byte(&b, 0x0d), b_uleb(&b, 0x1010), b_uleb(&b, 0xc0), b_uleb(&b, 7);
	b_byte(&b, 0x0d), b_uleb(&b, 0x1020), b_uleb(&b, 0xd0), b_uleb(&b, 7);
	/* Below every C symbol: CFUNC 0x<addr>. */
	b_byte(&b, 0x0d), b_uleb(&b, 0x800), b_uleb(&b, 0xe0), b_uleb(&b, 1);
	/* LFUNC with an unknown proto: C symbol, line dropped. */
	b_byte(&b, 0x09), b_uleb(&b, 0x1500), b_uleb(&b, 9), b_uleb(&b, 0xf0), b_uleb(&b, 2);
	/* Traces: known start proto, start at a C symbol, unknown trace. */
	b_byte(&b, 0x11), b_uleb(&b, 1), b_uleb(&b, 0x200), b_uleb(&b, 3);
	b_byte(&b, 0x11), b_uleb(&b, 2), b_uleb(&b, 0x210), b_uleb(&b, 3);
	b_byte(&b, 0x11), b_uleb(&b, 9), b_uleb(&b, 0x220), b_uleb(&b, 3);
	/* LFUNC with proto 0 is INTERNAL, and shares INTERNAL's group. */
	b_byte(&b, 0x09), b_uleb(&b, 0), b_uleb(&b, 0), b_uleb(&b, 0x230), b_uleb(&b, 4);
	b_byte(&b, 0x05), b_uleb(&b, 0x240), b_uleb(&b, 4);
	/* Proto redefined at 0x100: line 5 keeps the old group and name,
	 * line 6 gets the new chunk. */
	b_byte(&b, 0x08), b_uleb(&b, 0x100), b_str(&b, "@b.lua"), b_uleb(&b, 1);
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 5), b_uleb(&b, 0x250), b_uleb(&b, 10);
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 6), b_uleb(&b, 0x260), b_uleb(&b, 1);
	/* Chunk with newlines: alias; ALIASES skips empty lines. */
	b_byte(&b, 0x08), b_uleb(&b, 0x300), b_str(&b, "local x\n\nreturn x\n"), b_uleb(&b, 0);
	b_byte(&b, 0x09), b_uleb(&b, 0x300), b_uleb(&b, 2), b_uleb(&b, 0x270), b_uleb(&b, 5);
	/* free(NULL, 0) counts as an event. */
	b_byte(&b, 0x06), b_uleb(&b, 0), b_uleb(&b, 0);
	b_byte(&b, 0x80);
	r = run_bytes(&b);
	check(r.status == MPR_END, "naming: stream reads");
	check(same_text("naming", "ALLOCATIONS\n"
			"@a.lua:5: 3 events\t+30B\t-0B\n"
			"INTERNAL: 2 events\t+8B\t-0B\n"
			"lj_cf_func:0x1000: 1 events\t+7B\t-0B\n"
			"lj_cf_func:0x1000: 1 events\t+7B\t-0B\n"
			"function_alias_1:2: 1 events\t+5B\t-0B\n"
			"TRACE [1] started at @a.lua:7: 1 events\t+3B\t-0B\n"
			"TRACE [2] started at lj_cf_func:0x1000: 1 events\t+3B\t-0B\n"
			"TRACE [9]: 1 events\t+3B\t-0B\n"
			"lj_cf_func:0x1000: 1 events\t+2B\t-0B\n"
			"@b.lua:6: 1 events\t+1B\t-0B\n"
			"CFUNC 0x800: 1 events\t+1B\t-0B\n"
			"\n"
			"REALLOCATIONS\n"
			"\n"
			"DEALLOCATIONS\n"
			"INTERNAL: 1 events\t+0B\t-0B\n"
			"\n"
			"HEAP SUMMARY:\n"
			"@a.lua:5 holds 30B: 3 allocs, 0 frees\n"
			"lj_cf_func:0x1000 holds 16B: 3 allocs, 0 frees\n"
			"INTERNAL holds 8B: 2 allocs, 0 frees\n"
			"function_alias_1:2 holds 5B: 1 allocs, 0 frees\n"
			"TRACE [1] started at @a.lua:7 holds 3B: 1 allocs, 0 frees\n"
			"TRACE [2] started at lj_cf_func:0x1000 holds 3B: 1 allocs, 0 frees\n"
			"TRACE [9] holds 3B: 1 allocs, 0 frees\n"
			"@b.lua:6 holds 1B: 1 allocs, 0 frees\n"
			"CFUNC 0x800 holds 1B: 1 allocs, 0 frees\n"
			"\n"
			"ALIASES:\n"
			"function_alias_1:\n"
			"1\t| local x\n"
			"2\t| return x\n"
			"\n\n", r.out),
	      "naming: C floor, CFUNC, traces, INTERNAL, redefinition, aliases, free(NULL,0)");
	free(r.out);
	free(b.p);
}

/* process.lua's quirk: a realloc credits the old owner with the new size. */
static void test_heap_quirk(void)
{
	struct bytes b = { 0 };
	struct run r;
	b_put(&b, "ljs\x03\0\0\0", 7);
	b_byte(&b, 0x00), b_uleb(&b, 0x100), b_str(&b, "@t.lua"), b_uleb(&b, 0);
	b_byte(&b, 0x80);
	b_put(&b, "ljm\x03\0\0\0", 7);
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 1), b_uleb(&b, 0xa0), b_uleb(&b, 100);
	b_byte(&b, 0x0b), b_uleb(&b, 0x100), b_uleb(&b, 2), b_uleb(&b, 0xa0), b_uleb(&b, 100),
		b_uleb(&b, 0xb0), b_uleb(&b, 300);
	b_byte(&b, 0x06), b_uleb(&b, 0xb0), b_uleb(&b, 300);
	/* A block from before profiling: realloc credits nobody, its free
	 * debits the realloc's line. */
	b_byte(&b, 0x0b), b_uleb(&b, 0x100), b_uleb(&b, 3), b_uleb(&b, 0xf0), b_uleb(&b, 8),
		b_uleb(&b, 0xf8), b_uleb(&b, 16);
	b_byte(&b, 0x06), b_uleb(&b, 0xf8), b_uleb(&b, 16);
	b_byte(&b, 0x80);
	r = run_bytes(&b);
	check(same_text("quirk", "HEAP SUMMARY:\n@t.lua:1 holds 300B: 2 allocs, 1 frees\n\n",
			strstr(r.out, "HEAP SUMMARY:")),
	      "heap summary: realloc credits the old owner (false leak at line 1)");
	check(strstr(r.out, "INTERNAL: 2 events\t+0B\t-316B\n\tOverrides:\n\t\t@t.lua:2\n\t\t@t.lua:3\n\n") != NULL,
	      "overrides: sorted owner names of a FREE group");
	free(r.out);
	free(b.p);
}

static void test_escaping(void)
{
	struct bytes b = { 0 };
	struct run r;
	b_put(&b, "ljs\x03\0\0\0", 7);
	b_byte(&b, 0x00), b_uleb(&b, 0x100), b_str(&b, "@a\tb\x1b[31m.lua"), b_uleb(&b, 0);
	b_byte(&b, 0x00), b_uleb(&b, 0x200), b_str(&b, "x\n\ty\r\x1b\n"), b_uleb(&b, 0);
	b_byte(&b, 0x01), b_uleb(&b, 0x1000), b_str(&b, "c\x7f;f");
	b_byte(&b, 0x80);
	b_put(&b, "ljm\x03\0\0\0", 7);
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 1), b_uleb(&b, 0xa0), b_uleb(&b, 3);
	b_byte(&b, 0x09), b_uleb(&b, 0x200), b_uleb(&b, 1), b_uleb(&b, 0xb0), b_uleb(&b, 2);
	b_byte(&b, 0x0d), b_uleb(&b, 0x1001), b_uleb(&b, 0xc0), b_uleb(&b, 1);
	b_byte(&b, 0x80);
	r = run_bytes(&b);
	check(strstr(r.out, "@a\\tb\\x1b[31m.lua:1: 1 events\t+3B") != NULL,
	      "escaping: control bytes in chunk names");
	check(strstr(r.out, "c\\x7f;f:0x1000: 1 events") != NULL, "escaping: DEL in C names");
	check(strstr(r.out, "function_alias_1:\n1\t| x\n2\t| \ty\\r\\x1b\n\n\n") != NULL,
	      "escaping: ALIASES keeps TAB, escapes the rest");
	free(r.out);
	{
		struct report_opts fo = { .format = REPORT_FOLDED };
		r = run_report(b.p, b.n, &fo);
		check(same_text("folded", "@a\\tb\\x1b[31m.lua:1 3\nc\\x7f,f:0x1000 1\nfunction_alias_1:1 2\n",
				r.out),
		      "folded: ';' in names replaced, one escaped line per location");
		free(r.out);
	}
	free(b.p);
}

static void test_folded(void)
{
	struct bytes b = { 0 };
	struct run r;
	struct report_opts o = { .format = REPORT_FOLDED };
	build_example(&b);
	r = run_report(b.p, b.n, &o);
	check(same_text("folded bytes", "@ex.lua:5 56\n@ex.lua:6 20\n@ex.lua:8 32\n@ex.lua:9 64\n",
			r.out),
	      "folded: weight=bytes (alloc + realloc nsize)");
	free(r.out);
	o.weight = REPORT_W_EVENTS;
	r = run_report(b.p, b.n, &o);
	check(same_text("folded events", "@ex.lua:5 1\n@ex.lua:6 1\n@ex.lua:8 1\n@ex.lua:9 2\n",
			r.out),
	      "folded: weight=events (allocating events)");
	free(r.out);
	o.weight = REPORT_W_LIVE;
	r = run_report(b.p, b.n, &o);
	check(same_text("folded live", "@ex.lua:6 20\n@ex.lua:8 32\n@ex.lua:9 40\n", r.out),
	      "folded: weight=live (bytes still allocated, by owner)");
	free(r.out);
	free(b.p);
}

static void test_human_and_top(void)
{
	struct report *rp = report_new();
	struct mp_sym s = msym(MP_SYM_LFUNC, 0x100, "@t.lua", 0, 0);
	static const uint64_t sizes[] = { 117, 2048, 1536, 3u << 20, 68736, 5ull << 30 };
	char *buf;
	size_t len;
	FILE *out;
	report_sym(rp, &s);
	for (unsigned i = 0; i < 6; i++) {
		struct mp_event e = mev(MP_ALLOC, MP_SRC_LFUNC, 0x100, i + 1, 0, 0, 0x1000 * (i + 1),
					sizes[i]);
		for (unsigned k = 0; k <= i; k++) {
			e.naddr += 8;
			report_event(rp, &e);
		}
	}
	out = open_memstream(&buf, &len);
	report_print(rp, out, &(struct report_opts){ .format = REPORT_LEAK_ONLY, .human = 1 });
	fclose(out);
	check(same_text("human", "HEAP SUMMARY:\n"
			"@t.lua:6 holds 30GiB: 6 allocs, 0 frees\n"
			"@t.lua:4 holds 12MiB: 4 allocs, 0 frees\n"
			"@t.lua:5 holds 335.63KiB: 5 allocs, 0 frees\n"
			"@t.lua:3 holds 4.50KiB: 3 allocs, 0 frees\n"
			"@t.lua:2 holds 4KiB: 2 allocs, 0 frees\n"
			"@t.lua:1 holds 117B: 1 allocs, 0 frees\n\n", buf),
	      "human-readable: B/KiB/MiB/GiB, %%d when whole, %%.2f otherwise");
	free(buf);
	{
		/* 68736 B = 67.125 KiB: LuaJIT rounds half up. */
		struct report *r2 = report_new();
		struct mp_event e = mev(MP_ALLOC, MP_SRC_INTERNAL, 0, 0, 0, 0, 8, 68736);
		report_event(r2, &e);
		out = open_memstream(&buf, &len);
		report_print(r2, out, &(struct report_opts){ .format = REPORT_LEAK_ONLY, .human = 1 });
		fclose(out);
		check(strstr(buf, "INTERNAL holds 67.13KiB") != NULL,
		      "human-readable: 67.125KiB prints as 67.13KiB like LuaJIT");
		free(buf);
		report_free(r2);
	}
	out = open_memstream(&buf, &len);
	report_print_top(rp, out, 2, 0);
	fclose(out);
	check(same_text("top", "  top allocation sites (first lines of ALLOCATIONS in "
			"'luamemtrace report'):\n"
			"  @t.lua:6: 6 events\t+32212254720B\t-0B\n"
			"  @t.lua:5: 5 events\t+343680B\t-0B\n", buf),
	      "top: the first N lines of ALLOCATIONS, in report's order");
	free(buf);
	for (int h = 0; h <= 1; h++) {
		char *rb, *want, *w, *l;
		size_t rl;
		out = open_memstream(&rb, &rl);
		report_print(rp, out, &(struct report_opts){ .human = h });
		fclose(out);
		out = open_memstream(&buf, &len);
		report_print_top(rp, out, 3, h);
		fclose(out);
		/* The heading, then ALLOCATIONS' first 3 lines after two spaces. */
		w = want = malloc(rl + 200);
		w += sprintf(w, "  top allocation sites (first lines of ALLOCATIONS in "
				"'luamemtrace report%s'):\n", h ? " --human-readable" : "");
		l = rb + strlen("ALLOCATIONS\n");
		for (int k = 0; k < 3; k++) {
			const char *nl = strchr(l, '\n');
			w += sprintf(w, "  %.*s\n", (int)(nl - l), l);
			l += nl - l + 1;
		}
		check(!strncmp(rb, "ALLOCATIONS\n", 12) && same_text("top vs report", want, buf),
		      "top: report's own ALLOCATIONS lines (human %d)", h);
		free(want);
		free(rb);
		free(buf);
	}
	report_free(rp);
}

static int stop_after_sym(void *ud, const struct mp_sym *s)
{
	++*(int *)ud;
	return 42;
}

static void test_run_callbacks(void)
{
	struct bytes b = { 0 };
	FILE *f;
	struct mpr *r;
	int nsym = 0;
	build_example(&b);
	f = file_of(b.p, b.n);
	r = mpr_open_file(f, "t");
	check(mpr_run(r, stop_after_sym, NULL, &nsym) == 42 && nsym == 1,
	      "mpr_run: a callback's non-zero return stops the run");
	check(mpr_run(r, NULL, NULL, NULL) == MPR_END && mpr_nevents(r) == 6,
	      "mpr_run: resumes to the end");
	mpr_close(r);
	fclose(f);
	free(b.p);
}

/* Found by the fuzzer: an empty name as the very first string made
 * sb_put memcpy to a NULL buffer (UB even for 0 bytes). */
static void test_empty_names(void)
{
	struct bytes b = { 0 };
	struct run r;
	b_put(&b, "ljs\x03\0\0\0", 7);
	b_byte(&b, 0x01), b_uleb(&b, 0x1000), b_str(&b, "");
	b_byte(&b, 0x00), b_uleb(&b, 0x100), b_str(&b, ""), b_uleb(&b, 0);
	b_byte(&b, 0x80);
	b_put(&b, "ljm\x03\0\0\0", 7);
	b_byte(&b, 0x0d), b_uleb(&b, 0x1008), b_uleb(&b, 0xa0), b_uleb(&b, 3);
	b_byte(&b, 0x09), b_uleb(&b, 0x100), b_uleb(&b, 2), b_uleb(&b, 0xb0), b_uleb(&b, 4);
	b_byte(&b, 0x80);
	r = run_bytes(&b);
	check(r.status == MPR_END && strstr(r.out, "\n:0x1000: 1 events\t+3B") &&
		      strstr(r.out, "\n:2: 1 events\t+4B"),
	      "empty C and chunk names");
	free(r.out);
	free(b.p);
}

/* report_events (staged, prefetching batches) must equal report_event one
 * by one, with colliding addresses and locations inside one batch. */
static void test_batches(void)
{
	struct report *one = report_new(), *bat = report_new();
	struct mp_event ev[5000];
	uint64_t x = 12345;
	char *a, *b;
	size_t la, lb;
	FILE *fa, *fb;
	int ok = 1;
	for (int i = 0; i < 3; i++) {
		struct mp_sym s = msym(MP_SYM_LFUNC, 0x100 * (i + 1), i == 1 ? "@b.lua" : "@a.lua", 0, 0);
		report_sym(one, &s);
		report_sym(bat, &s);
	}
	for (int i = 0; i < 5000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		const unsigned r = (unsigned)(x >> 33);
		ev[i] = mev((uint8_t)(1 + r % 3), (uint8_t)(1 + (r >> 2) % 4), 0x100 * (1 + (r >> 4) % 4),
			    (r >> 6) % 3, 0x10 * ((r >> 8) % 16), (r >> 12) % 100, 0x10 * ((r >> 16) % 16),
			    1 + (r >> 20) % 100);
		if (ev[i].src == MP_SRC_TRACE)
			ev[i].loc = (r >> 4) % 3;
		report_event(one, &ev[i]);
	}
	for (size_t i = 0, k; i < 5000; i += k) {
		k = 1 + (i * 7919) % 150;
		if (k > 5000 - i)
			k = 5000 - i;
		report_events(bat, ev + i, k);
	}
	for (int f = 0; f < 3; f++) {
		const struct report_opts o = { .format = (enum report_format)(f == 2 ? REPORT_FOLDED
										   : REPORT_STANDARD),
					       .weight = REPORT_W_LIVE, .human = f == 1 };
		fa = open_memstream(&a, &la);
		fb = open_memstream(&b, &lb);
		report_print(one, fa, &o);
		report_print(bat, fb, &o);
		fclose(fa);
		fclose(fb);
		ok &= la > 20 && same_text("batches", a, b);
		free(a);
		free(b);
	}
	check(ok, "report_events in batches equals report_event one by one");
	report_free(one);
	report_free(bat);
}

int main(void)
{
	test_uleb();
	test_roundtrip();
	test_writer_errors();
	test_example();
	test_hostile();
	test_naming();
	test_heap_quirk();
	test_escaping();
	test_folded();
	test_human_and_top();
	test_run_callbacks();
	test_batches();
	test_empty_names();
	return failures ? 1 : 0;
}
