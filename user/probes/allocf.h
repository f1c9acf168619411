/* A probed allocator of a process (struct allocf), and a session link
 * shared by the traced processes that map one allocator's file (struct
 * shl): data only, kept in a process (struct tproc) and the trace; their
 * probes are probes/alloc.c's. */
#ifndef LMT_ALLOCF_H
#define LMT_ALLOCF_H

#include <stdint.h>

#include "probes/links.h"
#include "probes/placement.h"
#include "target/tfile.h"

/* A probed allocator: its probes, kept apart from the process's other
 * links so that --duty can take them off and put them back (path: the
 * file they are in); return probes apart, to go after the entries. */
/* One session link for the traced processes that share an allocator's
 * file, where no other process maps it (alloc_probes_on): a
 * link by PID would have each process's probe hijack the others'
 * returns. Its file (device, inode), its offsets, the link as fd + 1. */
struct shl {
	uint64_t dev, ino, off[2];
	unsigned n;    /* offsets */
	int mfd;
	unsigned refs; /* allocators on it */
};
#define LMT_SHL_MAX 16

struct allocf {
	uint64_t addr;
	struct probe_plan plan;
	/* its file, held open from the mapping maps named (target/tfile.h): read
	 * and probed through f.path, whatever the process maps since */
	struct tfile f;
	struct links links, rets;
	/* --duty where the kernel has uprobe_multi links, and sessions
	 * (probes/alloc.c): the entries' link and the return's, as fd + 1 (0:
	 * none); or the link it shares with other processes */
	int mfd[2];
	struct shl *sh;
	uint64_t dev, ino; /* its file, as the process's maps name it */
};

#endif
