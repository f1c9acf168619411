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
			"usage: luamemtrace heap -p PID [-o FILE [-f]] [--stopped] [--variant NAME] [--top N]\n"
			"       luamemtrace heap --all [--exe NAME]... [-o DIR [-f]] [--stopped] [--top N]\n"
			"                        [--with TRACE]\n"
			"       luamemtrace heap [--top N] [--with TRACE] FILE\n"
			"       luamemtrace heap [--top N] FILE|DIR...\n"
			"       luamemtrace heap --flamegraph FILE|DIR... > heap.html\n"
			"       luamemtrace heap [--top N] --diff A B\n"
			"       luamemtrace heap --chrome FILE|DIR... > heap.heapsnapshot\n", msg);
	return LMT_USAGE;
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
		{ "all", no_argument, NULL, 'a' },
		{ "exe", required_argument, NULL, 'e' },
		{ "with", required_argument, NULL, 'w' },
		{ "flamegraph", no_argument, NULL, 'F' },
		{ "diff", no_argument, NULL, 'D' },
		{ "chrome", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct hopts o = { .view = { .top = 10 } };
	const char *out = NULL;
	pid_t pid = 0;
	int c, mode = HEAP_TEXT;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:t:o:f", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT32_MAX)
				return usage("-p takes a process ID");
			pid = (pid_t)v;
			break;
		}
		case 't': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > 100000)
				return usage("--top takes 1 to 100000");
			o.view.top = (int)v;
			break;
		}
		case 'V':
			o.variant = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'f':
			o.force = 1;
			break;
		case 'S':
			o.stopped = 1;
			break;
		case 'a':
			o.all = 1;
			break;
		case 'e': /* NAME[,NAME...], as the tracer's */
			for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ",")) {
				if (o.nexes == HEAP_EXES_MAX)
					return usage("--exe: at most 16 names");
				o.exes[o.nexes++] = t;
			}
			break;
		case 'w':
			o.trace = optarg;
			break;
		case 'F':
		case 'D':
		case 'C':
			if (mode != HEAP_TEXT)
				return usage("one of --flamegraph, --diff, --chrome");
			mode = c == 'F' ? HEAP_FLAME : c == 'D' ? HEAP_DIFF : HEAP_CHROME;
			break;
		default:
			return usage("unknown option");
		}
	}
	if (o.nexes && !o.all)
		return usage("--exe narrows --all");
	if (o.all) {
		if (pid || optind != argc || o.trace || mode != HEAP_TEXT)
			return usage("--all takes no -p, no FILE and no --with");
		return heap_all(&o, out);
	}
	if (!pid && optind == argc - 1 && !out && o.trace && mode == HEAP_TEXT)
		return heap_file_with(argv[optind], &o);
	if (!pid && optind < argc && !out && !o.trace)
		return heap_files_main(mode, argv + optind, argc - optind, &o.view);
	if (mode != HEAP_TEXT)
		return usage("--flamegraph, --diff and --chrome read snapshot files (-o FILE)");
	if (!pid || optind != argc)
		return usage("one process: -p PID, or a snapshot FILE");
	if (out) {
		char bad[256];

		if (outfile_check(out, o.force, 1, bad, sizeof(bad)))
			return usage(bad);
	}
	return heap_snap(pid, &o, out, NULL);
}
