/* Writes a synthetic memprof stream with the project's writer.
 *
 *   gen_memprof [-n EVENTS] [-y PROTOS] [-s SEED] [-c] OUT|-
 *
 * Default: a realistic mix for benchmarks (a few thousand symbols, about
 * 55% allocs, 10% reallocs, 35% frees, a bounded live set, sources mostly
 * Lua lines, some INTERNAL/GC, C functions and traces).
 * -c: "chaos" for differential tests against the reference parser: tiny
 * address and line spaces so blocks, groups and names collide; protos and
 * traces redefined mid-stream; unknown protos; C symbols below protos;
 * chunk names with '\n' (aliases); free(NULL, 0); double frees.
 * -C N: chaos with N C symbol slots (many symbols interleaved with events).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/memprof_write.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }

struct blk {
	uint64_t addr, size;
	uint64_t loc, line; /* where it was last allocated or grown */
	unsigned src;
};

static struct mpw w;

static void sym(uint8_t kind, uint64_t addr, const char *name, uint64_t proto, uint64_t line)
{
	struct mp_sym s = { .kind = kind, .addr = addr, .name = name,
			    .name_len = name ? strlen(name) : 0, .proto = proto, .line = line };
	mpw_sym(&w, &s);
}

static void ev(uint8_t kind, uint8_t src, uint64_t loc, uint64_t line, uint64_t oaddr,
	       uint64_t osize, uint64_t naddr, uint64_t nsize)
{
	struct mp_event e = { .kind = kind, .src = src, .loc = loc, .line = line, .oaddr = oaddr,
			      .osize = osize, .naddr = naddr, .nsize = nsize };
	mpw_event(&w, &e);
}

#define PROTO_BASE 0x40000000ull
#define CFUNC_BASE 0x555500000000ull
#define HEAP_BASE 0x7f0000000000ull

static void realistic(uint64_t nev, unsigned nproto)
{
	const unsigned ncfunc = 2000, ntrace = 60, maxlive = 200000;
	struct blk *live = calloc(maxlive, sizeof(*live));
	unsigned nlive = 0;
	uint64_t brk = HEAP_BASE;
	char name[64];

	for (unsigned i = 0; i < nproto; i++) {
		snprintf(name, sizeof(name), "@app/module_%u.lua", i / 40);
		sym(MP_SYM_LFUNC, PROTO_BASE + i * 0x100, name, 0, 1 + (i % 40) * 25);
	}
	for (unsigned i = 0; i < ncfunc; i++) {
		snprintf(name, sizeof(name), "lj_cf_func_%u", i);
		sym(MP_SYM_CFUNC, CFUNC_BASE + i * 0x40, name, 0, 0);
	}
	for (unsigned i = 1; i <= ntrace; i++)
		sym(MP_SYM_TRACE, i, NULL, PROTO_BASE + below(nproto) * 0x100, 1 + below(1000));
	mpw_begin_events(&w);

	for (uint64_t n = 0; n < nev; n++) {
		const unsigned r = (unsigned)below(100);
		unsigned src = MP_SRC_LFUNC;
		uint64_t loc, line = 0;
		const unsigned p = (unsigned)(below(nproto) * below(nproto) / nproto); /* skewed */
		const unsigned s = (unsigned)below(100);
		if (s < 70) {
			loc = PROTO_BASE + p * 0x100;
			line = 1 + (p % 40) * 25 + below(1 + p % 8);
		} else if (s < 80) {
			src = MP_SRC_INTERNAL;
			loc = 0;
		} else if (s < 88) {
			src = MP_SRC_CFUNC;
			loc = CFUNC_BASE + below(ncfunc / 10) * 0x40; /* a few hot builtins */
		} else {
			src = MP_SRC_TRACE;
			loc = 1 + below(ntrace);
		}
		if (n % 100000 == 99999) /* protos loaded while profiling: new addresses */
			sym(MP_SYM_LFUNC, PROTO_BASE + (nproto + n / 100000) * 0x100, "@app/late.lua", 0, 1);
		if ((r < 55 || nlive == 0) && nlive < maxlive) {
			uint64_t size = 16 + below(8) * 8 + (below(50) == 0 ? below(8192) : 0);
			live[nlive] = (struct blk){ brk, size, loc, line, src };
			brk += (size + 15) & ~15ull;
			ev(MP_ALLOC, src, loc, line, 0, 0, live[nlive].addr, size);
			nlive++;
		} else if (r < 65) {
			struct blk *b = &live[below(nlive)];
			const uint64_t nsize = b->size * 2;
			uint64_t naddr = b->addr;
			if (below(2)) {
				naddr = brk;
				brk += (nsize + 15) & ~15ull;
			}
			/* Tables and buffers grow where they were made or a few
			 * lines further down (a fill loop); the rest is VM
			 * internal growth, or any site for blocks of other sources. */
			{
				const unsigned k = (unsigned)below(10);
				src = k < 9 ? b->src : MP_SRC_INTERNAL;
				loc = k < 9 ? b->loc : 0;
				line = k < 9 ? b->line : 0;
				if (k >= 6 && k < 9 && src == MP_SRC_LFUNC)
					line += 1 + below(3);
			}
			ev(MP_REALLOC, src, loc, line, b->addr, b->size, naddr, nsize);
			*b = (struct blk){ naddr, nsize, loc, line, src };
		} else {
			const unsigned i = (unsigned)below(nlive);
			/* Most frees come from the GC, the rest are temporary
			 * buffers freed where they were made. */
			if (below(10) < 8)
				ev(MP_FREE, MP_SRC_INTERNAL, 0, 0, live[i].addr, live[i].size, 0, 0);
			else
				ev(MP_FREE, (uint8_t)live[i].src, live[i].loc, live[i].line,
				   live[i].addr, live[i].size, 0, 0);
			live[i] = live[--nlive];
		}
	}
	free(live);
}

static unsigned ncsym = 16; /* chaos: C symbol address slots (-C) */

static const char *const chunks[] = {
	"@a.lua", "@b.lua", "=chunk", "return 1\n", "local x = 1\n\nreturn x\n",
	"@c.lua", "x;y.lua",  "@d d.lua",
};
#define NCHUNK (sizeof(chunks) / sizeof(chunks[0]))

static void chaos_sym(void)
{
	char name[32];
	switch (below(3)) {
	case 0:
		sym(MP_SYM_LFUNC, 0x1000 + below(8) * 0x100, chunks[below(NCHUNK)], 0, below(5));
		break;
	case 1:
		snprintf(name, sizeof(name), "cf_%u", (unsigned)below(6));
		sym(MP_SYM_CFUNC, 0x800 + below(ncsym) * 0x80, name, 0, 0);
		break;
	default:
		sym(MP_SYM_TRACE, 1 + below(4), NULL, below(4) ? 0x1000 + below(10) * 0x100 : 0,
		    below(6));
		break;
	}
}

static void chaos(uint64_t nev, unsigned nsym)
{
	for (unsigned i = 0; i < nsym; i++)
		chaos_sym();
	mpw_begin_events(&w);
	for (uint64_t n = 0; n < nev; n++) {
		unsigned src = 1 + (unsigned)below(4);
		const unsigned kind = 1 + (unsigned)below(3);
		uint64_t loc = 0, line = 0;
		if (below(8) == 0)
			chaos_sym();
		if (src == MP_SRC_LFUNC) {
			loc = below(12) ? 0x1000 + below(10) * 0x100 : 0;
			line = below(4);
		} else if (src == MP_SRC_CFUNC) {
			loc = below(10) ? 0x700 + below(ncsym * 0x100) : 0x1000 + below(8) * 0x100;
		} else if (src == MP_SRC_TRACE) {
			loc = below(6);
		}
		const uint64_t oaddr = below(10) ? 0x10 * (1 + below(24)) : 0;
		const uint64_t naddr = 0x10 * (1 + below(24));
		ev((uint8_t)kind, (uint8_t)src, loc, line, oaddr, oaddr ? 1 + below(200) : 0, naddr,
		   1 + below(3000));
	}
}

int main(int argc, char **argv)
{
	uint64_t nev = 1000;
	unsigned nproto = 2000;
	int c, fd, is_chaos = 0;
	while ((c = getopt(argc, argv, "n:y:s:cC:")) != -1) {
		switch (c) {
		case 'n':
			nev = strtoull(optarg, NULL, 0);
			break;
		case 'y':
			nproto = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			rng ^= strtoull(optarg, NULL, 0) * 0x9e3779b97f4a7c15ull;
			if (!rng)
				rng = 1;
			break;
		case 'c':
			is_chaos = 1;
			break;
		case 'C':
			ncsym = (unsigned)strtoul(optarg, NULL, 0);
			if (!ncsym)
				ncsym = 1;
			break;
		default:
			fprintf(stderr, "usage: gen_memprof [-n EVENTS] [-y PROTOS] [-s SEED] [-c] OUT|-\n");
			return 2;
		}
	}
	if (optind != argc - 1 || !nproto) {
		fprintf(stderr, "usage: gen_memprof [-n EVENTS] [-y PROTOS] [-s SEED] [-c] OUT|-\n");
		return 2;
	}
	fd = strcmp(argv[optind], "-") ? open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC, 0644) : 1;
	if (fd < 0) {
		perror(argv[optind]);
		return 1;
	}
	for (int i = 0; i < 4; i++)
		rnd();
	mpw_init(&w, fd);
	if (is_chaos)
		chaos(nev, nproto);
	else
		realistic(nev, nproto);
	if (mpw_finish(&w)) {
		fprintf(stderr, "gen_memprof: write failed\n");
		return 1;
	}
	return fd == 1 ? 0 : close(fd) ? 1 : 0;
}
