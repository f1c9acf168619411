/* user/streams/merge.c: records of several sources written in key order, each
 * source's in its own; key 0 behind its source; passed keys at once. */
#include <string.h>

#include "check.h"
#include "streams/merge.h"

/* What was written, as "e<line>" and "s<addr>:<name>" tokens. */
static char out[16384];

static void ev(void *ctx, const struct mp_event *e, uint32_t sid)
{
	(void)ctx;
	snprintf(out + strlen(out), sizeof(out) - strlen(out), "e%llu/%u ",
		 (unsigned long long)e->line, sid);
}

static void sym(void *ctx, const struct mp_sym *s)
{
	(void)ctx;
	snprintf(out + strlen(out), sizeof(out) - strlen(out), "s%llu:%.*s ",
		 (unsigned long long)s->addr, (int)s->name_len, s->name);
}

/* Hands an event to m; writes it now if m says so, as streams/out.c does. */
static int event(struct merge *m, const void *src, uint64_t key, uint64_t line)
{
	struct mp_event e = { .kind = MP_ALLOC, .line = line };
	int r = merge_event(m, src, key, &e, (uint32_t)line);

	if (r <= 0)
		ev(NULL, &e, (uint32_t)line);
	return r;
}

static int symbol(struct merge *m, const void *src, uint64_t key, uint64_t addr,
		  const char *name)
{
	char buf[32];
	struct mp_sym s = { .kind = MP_SYM_LFUNC, .addr = addr, .name = buf,
			    .name_len = strlen(name) };
	int r;

	/* the caller's buffer is gone after the call: the merge keeps a copy */
	memcpy(buf, name, s.name_len);
	r = merge_sym(m, src, key, &s);
	memset(buf, 'X', sizeof(buf));
	if (r <= 0) {
		s.name = name;
		sym(NULL, &s);
	}
	return r;
}

int main(void)
{
	const struct merge_out o = { .event = ev, .sym = sym };
	int a, b, c; /* sources */
	struct merge *m = merge_new(&o);

	CHECK("merge_new", m != NULL);
	/* nothing merged (no merge): written at once */
	CHECK("no merge: at once", event(NULL, &a, 8, 1) == 0);
	/* A's batch arrives first, then B's: interleaved by key */
	event(m, &a, 4, 10);
	symbol(m, &a, 6, 100, "fa");
	event(m, &a, 6, 11);
	event(m, &a, 10, 12);
	event(m, &b, 2, 20);
	event(m, &b, 8, 21);
	event(m, &b, 12, 22);
	CHECK("held", merge_held(m) == 7);
	CHECK("key 0 of a source holding records: behind them", event(m, &b, 0, 23) == 1);
	merge_release(m, 2 * 4 + 1);
	CHECK("released up to 9 in key order, a symbol before its event",
	      !strcmp(out, "e1/1 e20/20 e10/10 s100:fa e11/11 e21/21 "));
	out[0] = 0;
	CHECK("a passed key: at once", event(m, &a, 8, 13) == 0);
	CHECK("key 0 of a source holding none: at once", event(m, &c, 0, 14) == 0);
	CHECK("a symbol of another source, held between two keys",
	      symbol(m, NULL, 2 * 5 + 1, 200, "mod") == 1);
	merge_release(m, 2 * 5 + 1);
	CHECK("written: the passed ones, then up to 11",
	      !strcmp(out, "e13/13 e14/14 e12/12 s200:mod "));
	out[0] = 0;
	/* many records: the queue grows and compacts */
	for (uint64_t k = 1; k <= 1000; k++)
		event(m, (k & 1) ? (void *)&a : (void *)&b, 100 + 2 * k, k);
	merge_release(m, 2 * 600);
	merge_free(m); /* the rest, in order */
	{
		char want[sizeof(out)] = "e22/22 e23/23 ";
		for (uint64_t k = 1; k <= 1000; k++)
			snprintf(want + strlen(want), sizeof(want) - strlen(want),
				 "e%llu/%u ", (unsigned long long)k, (unsigned)k);
		CHECK("a thousand, alternating, in key order; the rest at the end",
		      !strcmp(out, want));
	}
	return fails != 0;
}
