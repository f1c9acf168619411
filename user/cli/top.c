/* luamemtrace top: the tracer with a live terminal view instead of a
 * stream (it writes to /dev/null), redrawn every second by ncurses from the
 * stream's live report (report.h: report_sites): allocation rate and held
 * bytes by site, or with --stacks by full stack; events per second, heap
 * growth, lost events. q or Ctrl-C detaches as the tracer does: no probe
 * left, no process left stopped. */
#define _GNU_SOURCE
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"

#include "format/exitcode.h"
#include "report/report.h"
#include "util/hash.h"
#include "util/numfmt.h"
#include "session/tracer.h"
#include "util/u64set.h"
#include "session/summary.h"

static const char usage_text[] =
	"usage: luamemtrace top -p PID [--stacks] [-d SECS]\n"
	"\n"
	"A live view of a running LuaJIT process's memory, redrawn every second:\n"
	"allocation rate and held bytes by site (or, with --stacks, by full Lua\n"
	"stack), events per second, heap growth, lost events. Keys: r sort by\n"
	"allocation rate, n by allocations per second, h by held bytes, t by\n"
	"bytes allocated since the start, s sites or stacks, q quit. Quitting\n"
	"(or Ctrl-C) detaches: no probe or stopped process is left behind.\n"
	"\n"
	"  -p, --pid PID      the process\n"
	"      --stacks       record stacks (the s key shows them)\n"
	"  -d, --duration S   quit after S seconds\n";

/* A row's values at the last redraw, for its rates. */
struct prev {
	uint64_t alloc, nalloc;
};

static struct {
	int on;               /* curses started */
	double next, last;    /* the next redraw, the last one */
	char sort;            /* r, n, h or t */
	int stacks;           /* the stacks view */
	struct u64map prev[2]; /* per view: name hash -> struct prev */
	uint64_t held_last, ek_last[4];
	pid_t pid;
} T = { .sort = 'r' };

static uint64_t name_hash(const char *s, size_t n)
{
	return hash_bytes64(s, n) | 1;
}

struct row {
	const struct report_site *s;
	double rate, nrate;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double dx, dy;

	switch (T.sort) {
	case 'n':
		dx = x->nrate, dy = y->nrate;
		break;
	case 'h':
		dx = (double)x->s->held, dy = (double)y->s->held;
		break;
	case 't':
		dx = (double)x->s->alloc, dy = (double)y->s->alloc;
		break;
	default:
		dx = x->rate, dy = y->rate;
		break;
	}
	if (dx != dy)
		return dx < dy ? 1 : -1;
	return x->s->held < y->s->held ? 1 : x->s->held > y->s->held ? -1 : 0;
}

/* A stack, innermost first (the end of its folded name), cut to w. */
static void put_name(const struct report_site *s, int w)
{
	char buf[1024];
	size_t n = 0;

	if (!T.stacks) {
		addnstr(s->name, (int)(s->name_len < (size_t)w ? s->name_len : (size_t)w));
		return;
	}
	for (size_t end = s->name_len; end > 0 && n + 4 < sizeof(buf);) {
		size_t b = end;
		while (b > 0 && s->name[b - 1] != ';')
			b--;
		if (n) {
			memcpy(buf + n, " < ", 3);
			n += 3;
		}
		for (size_t i = b; i < end && n < sizeof(buf) - 1; i++)
			buf[n++] = s->name[i];
		end = b ? b - 1 : 0;
	}
	addnstr(buf, (int)(n < (size_t)w ? n : (size_t)w));
}

/* The rows of sites[0..*n), each with its rates since the last draw
 * (dt seconds ago), its counts kept for the next; *held their held
 * bytes. NULL with *n 0 if there is no memory. */
static struct row *rows_of(struct report_site *sites, size_t *n, double dt, uint64_t *held)
{
	struct row *rows = *n ? calloc(*n, sizeof(*rows)) : NULL;

	if (!rows)
		*n = 0;
	for (size_t i = 0; i < *n; i++) {
		const uint64_t hk = name_hash(sites[i].name, sites[i].name_len);
		struct prev *p = u64map_get(&T.prev[T.stacks], hk);
		int err;

		rows[i].s = &sites[i];
		if (p && dt > 0) {
			rows[i].rate = (double)(sites[i].alloc - p->alloc) / dt;
			rows[i].nrate = (double)(sites[i].nalloc - p->nalloc) / dt;
		}
		if (!p && (p = malloc(sizeof(*p)))) {
			u64map_put(&T.prev[T.stacks], hk, p, &err);
			if (err) {
				free(p);
				p = NULL;
			}
		}
		if (p)
			*p = (struct prev){ .alloc = sites[i].alloc, .nalloc = sites[i].nalloc };
		*held += sites[i].held;
	}
	if (*n)
		qsort(rows, *n, sizeof(*rows), cmp_row);
	return rows;
}

/* One screen: the totals, then the rows that fit, by the chosen sort. */
static void draw(struct tr *t)
{
	const double dt = T.last ? now() - T.last : 0;
	struct lmt_stats st;
	struct report_site *sites = NULL;
	struct row *rows;
	size_t n = 0;
	uint64_t ev = 0, ek[4] = { 0 }, held = 0;
	char a[32], b[32], c[32];
	int y = 0, h = LINES, w = COLS;

	sum_stats(t, &st);
	for (unsigned i = 0; i < t->st.nouts; i++) {
		struct tout *o = t->st.outs[i];
		struct report_site *v;
		size_t k;

		for (int j = 1; j < 4; j++) {
			ek[j] += o->n[j];
			ev += o->n[j];
		}
		if (!(v = report_sites(o->rep, T.stacks, &k)))
			continue;
		/* one stream: -p PID writes one */
		free(sites);
		sites = v;
		n = k;
	}
	rows = rows_of(sites, &n, dt, &held);

	erase();
	mvprintw(y++, 0, "luamemtrace top - PID %d - %.0f s", (int)T.pid,
		 t->st.nouts ? now() - t->st.outs[0]->t0 : 0.0);
#define RATE(k) (dt > 0 ? (double)(ek[k] - T.ek_last[k]) / dt : 0.0)
	mvprintw(y++, 0, "events/s: %.0f (alloc %.0f, realloc %.0f, free %.0f)   events: %" PRIu64
		 "   lost: %" PRIu64,
		 RATE(1) + RATE(2) + RATE(3), RATE(1), RATE(3), RATE(2), ev,
		 (uint64_t)(st.lost + st.missed));
#undef RATE
	fmt_size_short(a, sizeof(a), (double)held);
	fmt_size_short(b, sizeof(b), dt > 0 ? ((double)held - (double)T.held_last) / dt : 0.0);
	mvprintw(y++, 0, "held: %s (%s%s/s)   sites: %zu   view: %s, by %s", a,
		 held >= T.held_last ? "+" : "-", b[0] == '-' ? b + 1 : b, n,
		 T.stacks ? "stacks" : "sites",
		 T.sort == 'n' ? "allocations/s" : T.sort == 'h' ? "held bytes" :
		 T.sort == 't' ? "bytes allocated" : "allocation rate");
	mvprintw(y++, 0, "keys: r n h t sort, s sites/stacks, q quit");
	y++;
	attron(A_BOLD);
	mvprintw(y++, 0, "%10s %10s %10s %8s  %s", "ALLOC/s", "ALLOCS/s", "HELD", "BLOCKS",
		 T.stacks ? "STACK (innermost first)" : "SITE");
	attroff(A_BOLD);
	for (size_t i = 0; i < n && y < h; i++, y++) {
		fmt_size_short(a, sizeof(a), rows[i].rate);
		fmt_size_short(c, sizeof(c), (double)rows[i].s->held);
		mvprintw(y, 0, "%10s %10.0f %10s %8" PRIu64 "  ", a, rows[i].nrate, c,
			 rows[i].s->nheld);
		if (w > 44)
			put_name(rows[i].s, w - 44);
	}
	refresh();
	T.held_last = held;
	memcpy(T.ek_last, ek, sizeof(ek));
	T.last = now();
	free(rows);
	free(sites);
}

/* The tracer's loop, every turn (topts.live). */
static void tick(struct tr *t)
{
	int c;

	if (!T.on) {
		/* Attached: the screen is ours from here. */
		initscr();
		cbreak();
		noecho();
		nodelay(stdscr, TRUE);
		keypad(stdscr, TRUE);
		curs_set(0);
		T.on = 1;
		T.next = 0;
	}
	while ((c = getch()) != ERR) {
		if (c == 'q' || c == 'Q')
			stop_req = 1;
		else if (c == 'r' || c == 'n' || c == 'h' || c == 't')
			T.sort = (char)c;
		else if (c == 's' && t->o->stacks)
			T.stacks = !T.stacks;
		else
			continue;
		T.next = 0; /* at once */
	}
	if (now() < T.next)
		return;
	T.next = now() + 1;
	draw(t);
}

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("luamemtrace top: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try 'luamemtrace top --help')\n", stderr);
	return LMT_USAGE;
}

static void free_prev(void *p)
{
	free(p);
}

int top_main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "stacks", no_argument, NULL, 'S' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct topts o = { .out = "/dev/null", .quiet = 1, .live = tick };
	pid_t pid = 0;
	char *end;
	int c, rc;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:p:d:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			const long v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 1 << 22)
				return usage_error("bad PID '%s' (one PID)", optarg);
			pid = (pid_t)v;
			break;
		}
		case 'S':
			o.stacks = LMT_STK_DEFAULT;
			break;
		case 'd':
			o.duration = strtod(optarg, &end);
			if (*end || !(o.duration > 0) || o.duration > 1e9)
				return usage_error("bad duration '%s'", optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return LMT_OK;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!pid)
		return usage_error("no process: give -p PID");
	if (!isatty(0) || !isatty(1))
		return usage_error("needs a terminal (to record a trace: luamemtrace -p PID -o FILE)");
	setlocale(LC_ALL, "");
	o.pids = &pid;
	o.npids = 1;
	T.pid = pid;
	rc = trace_run(&o);
	if (T.on)
		endwin();
	u64map_free(&T.prev[0], free_prev);
	u64map_free(&T.prev[1], free_prev);
	if (T.on)
		fprintf(stderr, "luamemtrace top: detached from PID %d\n", (int)pid);
	return rc;
}
