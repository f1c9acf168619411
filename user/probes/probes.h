/* Probes' part of a trace (struct probes) and of a traced process (struct
 * probe_proc): what probes/ keeps of them. The session embeds them (struct
 * tr's and struct tproc's probes, in session/session.h) and fills in what
 * they are (the loaded object, the options, a process's PID); the
 * functions of probes/hooks.c take these, never the session's structs.
 * Issue 42: alloc.c's and object.c's parts (the allocator probes, shared
 * links, the BPF object's configuration) are still in the session's
 * structs (tests/tools/layers.pending). */
#ifndef LMT_PROBES_H
#define LMT_PROBES_H

#include <sys/types.h>

#include "probes/links.h"
#include "util/u64set.h"

struct luamemtrace_bpf;

/* A trace, for its probes. */
struct probes {
	struct luamemtrace_bpf *skel; /* the loaded object (probes/object.c) */
	int verbose;          /* -v: each probe said */
	int all;              /* --all: lua_newstate and lua_close watched
			       * for every process (watch_file) */
	struct links links;   /* the trace's own: exec, fork, --all's hooks */
	struct u64set watched; /* --all: LuaJIT files watched (dev ^ inode) */
};

/* A traced process, for its probes. */
struct probe_proc {
	pid_t pid;
	struct links links;   /* its probes */
	struct u64set hooked; /* files whose hooks it has (dev ^ inode) */
};

#endif
