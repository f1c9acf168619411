/* luamemtrace: command line. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/knobs.h"
#include "target/layout.h"
#include "report/report.h"
#include "session/tracer.h"
#include "heap/heap.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage[] =
	"Usage: luamemtrace -p PID[,PID...] -o FILE|DIR [options]\n"
	"       luamemtrace --all [--exe NAME] -o DIR [options]\n"
	"       luamemtrace -o FILE|DIR [options] -- COMMAND [ARG...]\n"
	"       luamemtrace report [--leak-only] [--human-readable] [--folded [--weight=W]]\n"
	"                          [--pprof] [--flamegraph] FILE|DIR...\n"
	"       luamemtrace top -p PID [--stacks] [-d SECS]\n"
	"       luamemtrace heap -p PID [-o FILE] [--top N] | heap FILE  (docs/heap.md)\n"
	"\n"
	"Traces every allocation, reallocation and free of the LuaJIT VMs of a\n"
	"running process (or of COMMAND, from its first VM on) and writes them as\n"
	"a standard memprof stream (symtab v3 + events v3).\n"
	"\n"
	"  -p, --pid PID[,PID...] attach to running processes\n"
	"      --all              every process that runs a LuaJIT luamemtrace\n"
	"                         knows, and those that start later\n"
	"      --exe NAME         with --all: only programs named NAME (the\n"
	"                         executable's file name or the process name;\n"
	"                         repeat it, or NAME,NAME)\n"
	"  -o, --output FILE      write the stream to FILE (mode 0600; never\n"
	"                         through a symbolic link), and its facts to\n"
	"                         FILE.info (process, duration, lost events):\n"
	"                         one process; its VMs share the stream\n"
	"  -o, --output DIR/      a stream per VM in DIR (made if missing; an\n"
	"                         existing directory or a name ending in /),\n"
	"                         named COMM.PID.vmN.bin, and the children\n"
	"                         traced processes fork are traced too\n"
	"  -f, --force            replace FILE if it exists\n"
	"  -d, --duration SECS    stop after SECS seconds (default: Ctrl-C,\n"
	"                         SIGTERM, or the end of the target)\n"
	"  -b, --buffer-size MIB  ring buffer size in MiB, a power of 2 (default 16)\n"
	"      --duty PERCENT     sample: the allocator probed only in windows\n"
	"                         covering PERCENT% of the time, one at a random\n"
	"                         place in each 10 s or more; the summary and\n"
	"                         reports scale what they saw to estimates\n"
	"      --no-loss          never drop events: a process whose events find the\n"
	"                         ring over half full waits, stopped, until it is\n"
	"                         drained (default: drop, count, exit 3)\n"
	"  -t, --top N            allocation sites in the summary (default 10, 0: none)\n"
	"      --jit MODE         what compiled code's allocations are charged to:\n"
	"                         line (default: the Lua line, through the trace's\n"
	"                         snapshots) or trace (the trace, as the in-VM\n"
	"                         profiler does)\n"
	"      --stacks           record the Lua call stack of every event in\n"
	"                         FILE.stacks (see report --folded, --by-stack)\n"
	"      --stack-depth N    frames per stack at most (1-" STR(LMT_STK_MAX) ", default "
	STR(LMT_STK_DEFAULT) ");\n"
	"                         implies --stacks\n"
	"      --heap-at-end      as tracing ends, each process's heap copied into\n"
	"                         FILE.lmh (-o DIR/: DIR/COMM.PID.lmh), for\n"
	"                         luamemtrace heap --with FILE\n"
	"      --variant NAME     use only this layout variant (see --list-variants)\n"
	"      --list-variants    print the LuaJIT layouts luamemtrace knows\n"
	"      --check            what this kernel offers, the path each feature\n"
	"                         takes there, and whether the BPF object loads\n"
	"      --probes MODE      auto (default), single or entry: where to probe\n"
	"      --floor[=WHAT]     attach do-nothing programs (benchmark floor): at the\n"
	"                         allocator's entry and an allocation's return;\n"
	"                         entry: at its entry only (no address can be had);\n"
	"                         events: send every event, charged to the VM\n"
	"                         without a read of the target (the event path)\n"
	"      --ab               benchmark: each allocation of " STR(LMT_AB_MARK) " bytes (the\n"
	"                         array of table.new(99991, 0)) switches between\n"
	"                         doing nothing and tracing (the first one: nothing)\n"
	"      --ab=MS            benchmark: the same switch every MS ms, each said on\n"
	"                         stderr with the wall clock (tracing first); an\n"
	"                         allocation a switch to the floor cuts in two loses\n"
	"                         its address (counted lost)\n"
	"      --ab-without PARTS benchmark, with --ab: instead of the floor, trace\n"
	"                         without PARTS (comma-separated): search (of the\n"
	"                         stack in a trace), attribution (every event the\n"
	"                         VM's, no read), ring (full batches dropped, counted\n"
	"                         lost), told (addresses told at entry: every\n"
	"                         return probed); each part's cost is the windows'\n"
	"                         ratio\n"
	"  -q, --quiet            no summary\n"
	"  -v, --verbose          say where probes go and what was found\n"
	"  -h, --help             this text\n"
	"  -V, --version          print the version\n"
	"\n"
	"  -u, --user USER        with -- COMMAND: run it as USER (its IDs and\n"
	"                         groups, as strace -u does); without -u COMMAND\n"
	"                         runs as luamemtrace does: as root\n"
	"      --strict           with -- COMMAND: exit 3 on lost events and 1 on\n"
	"                         a tracer error, rather than the command's status\n"
	"\n"
	"Exit status: 0 complete stream, 1 error, 2 bad usage, 3 stream written\n"
	"but events were lost (see the summary). With -- COMMAND, luamemtrace\n"
	"waits for the command and exits with its status (128+N if signal N\n"
	"killed it), like time and strace; errors and loss are said on stderr.\n";

static int bad_usage(const char *fmt, const char *arg)
{
	fputs("luamemtrace: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (luamemtrace --help)\n", stderr);
	return LMT_USAGE;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* !(in range) rather than (out of range): NaN compares false. */
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

/* A,B,... split at its commas, in a copy of arg (items[0] is its start):
 * the items and their count, or NULL for an empty list or item. */
static char **split_list(const char *arg, unsigned *n)
{
	const size_t l = strlen(arg);
	char *copy, *save = NULL, *tok, **v = NULL, **nv;

	*n = 0;
	if (!l || *arg == ',' || arg[l - 1] == ',' || strstr(arg, ",,") ||
	    !(copy = strdup(arg)))
		return NULL;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!(nv = realloc(v, (*n + 1) * sizeof(*nv)))) {
			free(v);
			free(copy);
			return NULL;
		}
		v = nv;
		v[(*n)++] = tok;
	}
	return v;
}

/* PID[,PID...] appended to o->pids; -1 if one is bad or twice. */
static int add_pids(struct topts *o, const char *arg)
{
	unsigned n;
	char **items = split_list(arg, &n);
	pid_t *nv = items ? realloc(o->pids, (o->npids + n) * sizeof(*nv)) : NULL;
	int r = nv ? 0 : -1;

	if (nv)
		o->pids = nv;
	for (unsigned k = 0; k < n && !r; k++) {
		double v;

		if (parse_num(items[k], 1, 4194304, &v) || v != (int)v)
			r = -1;
		for (unsigned i = 0; i < o->npids && !r; i++)
			if (o->pids[i] == (pid_t)v)
				r = -1;
		if (!r)
			o->pids[o->npids++] = (pid_t)v;
	}
	if (items)
		free(items[0]);
	free(items);
	return r;
}

/* NAME[,NAME...] appended to o->exes (the names kept for the whole run). */
static int add_exes(struct topts *o, const char *arg)
{
	unsigned n;
	char **items = split_list(arg, &n);
	const char **nv = items ? realloc(o->exes, (o->nexes + n) * sizeof(*nv)) : NULL;

	if (!nv) {
		free(items);
		return -1;
	}
	o->exes = nv;
	for (unsigned k = 0; k < n; k++) {
		if (strchr(items[k], '/') || strlen(items[k]) > 255) {
			free(items);
			return -1;
		}
		o->exes[o->nexes++] = items[k];
	}
	free(items); /* the names stay in items[0]'s copy */
	return 0;
}

/* --ab-without's PARTS into o: the LMT_AB_W_* bits and the name of the
 * windows without them ("without-search,ring"). -1 if a part is unknown. */
static int ab_parts(const char *arg, struct topts *o)
{
	static const struct { const char *name; int bit; } parts[] = {
		{ "search", LMT_AB_W_SEARCH },
		{ "attribution", LMT_AB_W_ATTR },
		{ "ring", LMT_AB_W_RING },
		{ "told", LMT_AB_W_TOLD },
	};
	const unsigned nparts = sizeof(parts) / sizeof(parts[0]);
	char buf[64], *save = NULL, *at = o->ab_name;
	int bits = 0;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		unsigned i = 0;

		while (i < nparts && strcmp(p, parts[i].name))
			i++;
		if (i == nparts)
			return -1;
		bits |= parts[i].bit;
	}
	if (!bits)
		return -1;
	o->ab_without = bits;
	/* the parts in the table's order: fits, the names being known */
	for (unsigned i = 0; i < nparts; i++)
		if (bits & parts[i].bit)
			at += sprintf(at, "%s%s", at == o->ab_name ? "without-" : ",",
				      parts[i].name);
	return 0;
}

/* -- Options -- */

enum { OPT_VARIANT = 256, OPT_LIST, OPT_PROBES, OPT_FLOOR, OPT_AB,
       OPT_STRICT, OPT_ALL, OPT_EXE, OPT_JIT, OPT_STACKS, OPT_DEPTH, OPT_NOLOSS,
       OPT_DUTY, OPT_AB_WITHOUT, OPT_CHECK, OPT_HEAPEND };

static const struct option opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "exe", required_argument, NULL, OPT_EXE },
	{ "jit", required_argument, NULL, OPT_JIT },
	{ "stacks", no_argument, NULL, OPT_STACKS },
	{ "heap-at-end", no_argument, NULL, OPT_HEAPEND },
	{ "no-loss", no_argument, NULL, OPT_NOLOSS },
	{ "duty", required_argument, NULL, OPT_DUTY },
	{ "stack-depth", required_argument, NULL, OPT_DEPTH },
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'f' },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "duration", required_argument, NULL, 'd' },
	{ "buffer-size", required_argument, NULL, 'b' },
	{ "top", required_argument, NULL, 't' },
	{ "variant", required_argument, NULL, OPT_VARIANT },
	{ "list-variants", no_argument, NULL, OPT_LIST },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "probes", required_argument, NULL, OPT_PROBES },
	{ "floor", optional_argument, NULL, OPT_FLOOR },
	{ "ab", optional_argument, NULL, OPT_AB },
	{ "ab-without", required_argument, NULL, OPT_AB_WITHOUT },
	{ "user", required_argument, NULL, 'u' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The index of arg in the NULL-ended names, or -1. */
static int word_of(const char *arg, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(arg, names[i]))
			return i;
	return -1;
}

/* -u USER into o: 0, or -1 if there is no such user. */
static int opt_user(struct topts *o, const char *arg)
{
	const struct passwd *pw = getpwnam(arg);

	if (!pw)
		return -1;
	o->user = arg;
	o->uid = pw->pw_uid;
	o->gid = pw->pw_gid;
	return 0;
}

/* --floor[=entry|events] into o (the last one given counts): 0, or -1. */
static int opt_floor(struct topts *o, const char *arg)
{
	o->floor_entry = arg && !strcmp(arg, "entry");
	o->floor = !arg || o->floor_entry;
	o->floor_events = arg && !strcmp(arg, "events");
	return arg && !o->floor_events && !o->floor_entry ? -1 : 0;
}

/* --variant NAME: 0 if luamemtrace knows the variant, else -1. */
static int known_variant(const char *name)
{
	for (unsigned i = 0; i < lj_nvariants; i++)
		if (!strcmp(lj_variants[i].name, name))
			return 0;
	return -1;
}

/* The option c getopt_long read, with its argument arg, into o: -1 to
 * read on, or the exit status (a bad value, or an option that is the
 * whole run: --check, --list-variants, --help, --version). */
static int take_opt(int c, const char *arg, struct topts *o)
{
	static const char *const jit_modes[] = { "line", "trace", NULL };
	static const char *const probe_modes[] = { "auto", "single", "entry", NULL };
	static const enum probe_mode probe_mode[] = { PROBES_AUTO, PROBES_SINGLE,
						      PROBES_ENTRY };
	double v;
	int w;

	switch (c) {
	case 'u':
		if (opt_user(o, arg))
			return bad_usage("no such user '%s' (-u USER)", arg);
		break;
	case 'p':
		if (add_pids(o, arg))
			return bad_usage("bad PID list '%s' (PID[,PID...])", arg);
		break;
	case OPT_ALL:
		o->all = 1;
		break;
	case OPT_JIT:
		if ((w = word_of(arg, jit_modes)) < 0)
			return bad_usage("bad --jit '%s' (line, trace)", arg);
		o->jit_trace = w;
		break;
	case OPT_NOLOSS:
		o->no_loss = 1;
		break;
	case OPT_HEAPEND:
		o->at_end = heap_at_end;
		break;
	case OPT_DUTY:
		if (parse_num(arg, 1, 99, &o->duty))
			return bad_usage("bad --duty '%s' (a percent, 1 to 99)", arg);
		break;
	case OPT_STACKS:
		if (!o->stacks)
			o->stacks = LMT_STK_DEFAULT;
		break;
	case OPT_DEPTH:
		if (parse_num(arg, 1, LMT_STK_MAX, &v) || v != (unsigned)v)
			return bad_usage("bad --stack-depth '%s' (1 to " STR(LMT_STK_MAX)
					 " frames)", arg);
		o->stacks = (unsigned)v;
		break;
	case OPT_EXE:
		if (add_exes(o, arg))
			return bad_usage("bad --exe '%s' (NAME[,NAME...])", arg);
		break;
	case 'o':
		o->out = arg;
		break;
	case 'f':
		o->force = 1;
		break;
	case OPT_STRICT:
		o->strict = 1;
		break;
	case 'd':
		if (parse_num(arg, 0.001, 1e9, &o->duration))
			return bad_usage("bad duration '%s'", arg);
		break;
	case 'b':
		if (parse_num(arg, 1, 2048, &v) || v != (unsigned)v ||
		    ((unsigned)v & ((unsigned)v - 1)))
			return bad_usage("bad buffer size '%s' (MiB, a power of 2)", arg);
		o->rb_bytes = (unsigned long)v << 20;
		break;
	case 't':
		if (parse_num(arg, 0, 1000, &v) || v != (int)v)
			return bad_usage("bad --top '%s'", arg);
		o->top = (int)v;
		break;
	case OPT_VARIANT:
		if (known_variant(arg))
			return bad_usage("unknown variant '%s' (see --list-variants)", arg);
		o->variant = arg;
		break;
	case OPT_CHECK:
		return trace_check(o);
	case OPT_LIST:
		for (unsigned i = 0; i < lj_nvariants; i++)
			printf("%s\n", lj_variants[i].name);
		return 0;
	case OPT_PROBES:
		if ((w = word_of(arg, probe_modes)) < 0)
			return bad_usage("bad --probes '%s' (auto, single, entry)", arg);
		o->probes = probe_mode[w];
		break;
	case OPT_FLOOR:
		if (opt_floor(o, arg))
			return bad_usage("bad --floor '%s' (give --floor, --floor=entry "
					 "or --floor=events)", arg);
		break;
	case OPT_AB_WITHOUT:
		if (ab_parts(arg, o))
			return bad_usage("bad --ab-without '%s' (search, attribution, "
					 "ring, told, comma-separated)", arg);
		break;
	case OPT_AB:
		o->ab = 1;
		o->ab_ms = 0;
		if (arg && parse_num(arg, 10, 60000, &o->ab_ms))
			return bad_usage("bad --ab '%s' (milliseconds between "
					 "switches, 10 to 60000)", arg);
		break;
	case 'q':
		o->quiet = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	case 'h':
		fputs(usage, stdout);
		return 0;
	case 'V':
		printf("luamemtrace " LMT_VERSION "\n");
		return 0;
	}
	return -1;
}

/* The tracer's command line into o: -1 to trace, or the exit status. */
static int read_args(int argc, char **argv, struct topts *o)
{
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:o:fd:b:t:u:qvhV", opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			if (optopt && optopt < 256 && strchr("podbt", optopt))
				return bad_usage("option -%s needs a value",
						 (char[]){ (char)optopt, 0 });
			return bad_usage("unknown option '%s'", argv[optind - 1]);
		}
		if ((r = take_opt(c, optarg, o)) >= 0)
			return r;
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			return bad_usage("unexpected argument '%s' (a command goes "
					 "after --)", argv[optind]);
		o->cmd = argv + optind;
	}
	return -1;
}

/* The options' combinations: -1 if they go together, else bad usage. */
static int check_args(struct topts *o)
{
	if (!!o->npids + !!o->cmd + o->all > 1)
		return bad_usage("%s", "give one of -p PID, --all and -- COMMAND");
	if (!o->npids && !o->cmd && !o->all)
		return bad_usage("%s", "nothing to trace: give -p PID, --all or "
				       "-- COMMAND");
	if (o->nexes && !o->all)
		return bad_usage("%s", "--exe narrows --all: give --all too");
	if (!o->out)
		return bad_usage("%s", "no output: give -o FILE or -o DIR/");
	if (o->user && !o->cmd)
		return bad_usage("%s needs -- COMMAND", "-u");
	if (o->strict && !o->cmd)
		return bad_usage("%s", "--strict is for -- COMMAND (with -p, loss "
				       "is exit 3 already)");
	if (o->ab && (o->floor || o->floor_events))
		return bad_usage("%s", "--ab already alternates with the floor: "
				       "not with --floor");
	if (o->ab_without && !o->ab)
		return bad_usage("%s", "--ab-without changes --ab's floor: give --ab "
				       "or --ab=MS");
	if (!o->ab_without)
		snprintf(o->ab_name, sizeof(o->ab_name), "floor");
	if (o->ab && o->duty)
		return bad_usage("%s", "--ab alternates full tracing with the floor: "
				       "not with --duty");
	if (o->floor_events && o->stacks)
		return bad_usage("%s", "--floor=events reads no stacks: not with "
				       "--stacks or --stack-depth");
	return -1;
}

/* -- Main -- */

int main(int argc, char **argv)
{
	struct topts o = { .top = 10 };
	int r;

	knobs_read();
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "top"))
		return top_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "heap"))
		return heap_main(argc - 1, argv + 1);
	if ((r = read_args(argc, argv, &o)) >= 0 || (r = check_args(&o)) >= 0)
		return r;
	return trace_run(&o);
}
