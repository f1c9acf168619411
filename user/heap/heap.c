/* luamemtrace heap ...: the command line, dispatched to one process's
 * snapshot (snap.c), every process's (all.c) or views of snapshot files
 * (files.c). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/exitcode.h"
#include "heap/heap.h"
#include "streams/outfile.h"

static int usage(const char *msg)
{
	fprintf(stderr, "luamemtrace heap: %s\n"
			"usage: luamemtrace heap -p PID [-o FILE [-f]] [--no-fork|--stopped] [--variant NAME]\n"
			"                        [--top N]\n"
			"       luamemtrace heap --all [--exe NAME]... [-o DIR [-f]] [--no-fork|--stopped]\n"
			"                        [--top N]\n"
			"                        [--with TRACE]\n"
			"       luamemtrace heap [--top N] [--with TRACE] FILE\n"
			"       luamemtrace heap [--top N] FILE|DIR...\n"
			"       luamemtrace heap --flamegraph FILE|DIR... > heap.html\n"
			"       luamemtrace heap [--top N] --diff A B\n"
			"       luamemtrace heap --chrome FILE|DIR... > heap.heapsnapshot\n", msg);
	return LMT_USAGE;
}


/* The command line's words, as parsed. */
struct hcmd {
	struct hopts o;
	const char *out;
	pid_t pid;
	int mode; /* HEAP_TEXT, _FLAME, _DIFF, _CHROME */
};

/* Option c (getopt_long's) with its argument into h: 0, or usage's. */
static int heap_opt(int c, char *arg, struct hcmd *h)
{
	char *end;
	long v;

	switch (c) {
	case 'p':
		v = strtol(arg, &end, 10);
		if (*end || v <= 0 || v > INT32_MAX)
			return usage("-p takes a process ID");
		h->pid = (pid_t)v;
		return 0;
	case 't':
		v = strtol(arg, &end, 10);
		if (*end || v <= 0 || v > 100000)
			return usage("--top takes 1 to 100000");
		h->o.view.top = (int)v;
		return 0;
	case 'V':
		h->o.variant = arg;
		return 0;
	case 'o':
		h->out = arg;
		return 0;
	case 'f':
		h->o.force = 1;
		return 0;
	case 'S':
		h->o.stopped = 1;
		return 0;
	case 'N':
		h->o.nofork = 1;
		return 0;
	case 'a':
		h->o.all = 1;
		return 0;
	case 'e': /* NAME[,NAME...], as the tracer's */
		for (char *t = strtok(arg, ","); t; t = strtok(NULL, ",")) {
			if (h->o.nexes == HEAP_EXES_MAX)
				return usage("--exe: at most 16 names");
			h->o.exes[h->o.nexes++] = t;
		}
		return 0;
	case 'w':
		h->o.trace = arg;
		return 0;
	case 'F':
	case 'D':
	case 'C':
		if (h->mode != HEAP_TEXT)
			return usage("one of --flamegraph, --diff, --chrome");
		h->mode = c == 'F' ? HEAP_FLAME : c == 'D' ? HEAP_DIFF : HEAP_CHROME;
		return 0;
	default:
		return usage("unknown option");
	}
}

int heap_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "variant", required_argument, NULL, 'V' },
		{ "top", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "stopped", no_argument, NULL, 'S' },
		{ "no-fork", no_argument, NULL, 'N' },
		{ "all", no_argument, NULL, 'a' },
		{ "exe", required_argument, NULL, 'e' },
		{ "with", required_argument, NULL, 'w' },
		{ "flamegraph", no_argument, NULL, 'F' },
		{ "diff", no_argument, NULL, 'D' },
		{ "chrome", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct hcmd h = { .o = { .view = { .top = 10 } }, .mode = HEAP_TEXT };
	const struct hopts *o = &h.o;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:t:o:f", opts, NULL)) != -1)
		if ((r = heap_opt(c, optarg, &h)))
			return r;
	if (o->nexes && !o->all)
		return usage("--exe narrows --all");
	if (o->all) {
		if (h.pid || optind != argc || o->trace || h.mode != HEAP_TEXT)
			return usage("--all takes no -p, no FILE and no --with");
		return heap_all(o, h.out);
	}
	if (!h.pid && optind == argc - 1 && !h.out && o->trace && h.mode == HEAP_TEXT)
		return heap_file_with(argv[optind], o);
	if (!h.pid && optind < argc && !h.out && !o->trace)
		return heap_files_main(h.mode, argv + optind, argc - optind, &o->view);
	if (h.mode != HEAP_TEXT)
		return usage("--flamegraph, --diff and --chrome read snapshot files (-o FILE)");
	if (!h.pid || optind != argc)
		return usage("one process: -p PID, or a snapshot FILE");
	if (h.out) {
		char bad[256];

		if (outfile_check(h.out, o->force, 1, bad, sizeof(bad)))
			return usage(bad);
	}
	return heap_snap(h.pid, o, h.out, NULL);
}
