/* mpdump: prints a memprof stream one record per line, for tests:
 *   sym lfunc ADDR FIRSTLINE NAME     sym cfunc ADDR NAME
 *   sym trace NO PROTO LINE           EVENT SRC LOC LINE OADDR OSIZE NADDR NSIZE
 * (EVENT: alloc|free|realloc; SRC: int|lfunc|cfunc|trace; hex addresses).
 * Names are printed raw up to the first newline. Exit 0 only for a
 * complete, well-formed stream.
 *   mpdump --rewrite IN OUT   decodes IN and encodes every record again
 *                             with luamemtrace's writer into OUT. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "format/memprof_read.h"
#include "format/memprof_write.h"

static int rewrite(const char *in, const char *out)
{
	static struct mpw w;
	struct mp_sym s;
	struct mp_event e;
	struct mpr *r;
	FILE *f = fopen(in, "rb");
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), st;

	if (!f || fd < 0) {
		fprintf(stderr, "mpdump: cannot open %s or %s\n", in, out);
		return 2;
	}
	r = mpr_open_file(f, in);
	mpw_init(&w, fd);
	while ((st = mpr_next(r, &s, &e)) > 0) {
		if (!w.in_events && mpr_in_events(r))
			mpw_begin_events(&w);
		if (st == MPR_SYM)
			mpw_sym(&w, &s);
		else
			mpw_event(&w, &e);
	}
	if (!w.in_events)
		mpw_begin_events(&w);
	if (st != MPR_END)
		fprintf(stderr, "%s\n", mpr_diag(r));
	mpr_close(r);
	fclose(f);
	return mpw_finish(&w) || close(fd) || st != MPR_END;
}

int main(int argc, char **argv)
{
	static const char *const kind[] = { "?", "alloc", "free", "realloc" };
	static const char *const src[] = { "?", "int", "lfunc", "cfunc", "trace" };
	struct mp_sym s;
	struct mp_event e;
	struct mpr *r;
	FILE *f;
	int st;

	if (argc == 4 && !strcmp(argv[1], "--rewrite"))
		return rewrite(argv[2], argv[3]);
	if (argc != 2 || !(f = fopen(argv[1], "rb"))) {
		fprintf(stderr, "usage: mpdump FILE\n");
		return 2;
	}
	r = mpr_open_file(f, argv[1]);
	while ((st = mpr_next(r, &s, &e)) > 0) {
		if (st == MPR_SYM) {
			size_t n = 0;
			while (n < s.name_len && s.name[n] != '\n')
				n++;
			if (s.kind == MP_SYM_LFUNC)
				printf("sym lfunc %" PRIx64 " %" PRId64 " %.*s\n", s.addr,
				       (int64_t)s.line, (int)n, s.name);
			else if (s.kind == MP_SYM_CFUNC)
				printf("sym cfunc %" PRIx64 " %.*s\n", s.addr, (int)n, s.name);
			else
				printf("sym trace %" PRIu64 " %" PRIx64 " %" PRIu64 "\n",
				       s.addr, s.proto, s.line);
		} else {
			printf("%s %s %" PRIx64 " %" PRIu64 " %" PRIx64 " %" PRIu64
			       " %" PRIx64 " %" PRIu64 "\n", kind[e.kind & 3],
			       src[e.src <= 4 ? e.src : 0], e.loc, e.line, e.oaddr,
			       e.osize, e.naddr, e.nsize);
		}
	}
	if (st != MPR_END)
		fprintf(stderr, "%s\n", mpr_diag(r));
	mpr_close(r);
	fclose(f);
	return st == MPR_END ? 0 : 1;
}
