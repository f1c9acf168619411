/* The BPF object (probes/object.c): opened, configured (the options, the
 * kernel's features, the knobs) and loaded; what it keeps of a process
 * purged when the process ends. */
#ifndef LMT_OBJECT_H
#define LMT_OBJECT_H

#include <stdint.h>

struct probes;

/* Opens and loads the object into t->skel, with the kernel-stack reader
 * (kst: the kernel has task works, 6.18+, and alloc_enter's reads can land
 * on its stack: struct gq in bpf/read.h) or the compatible one: 0, or -1
 * (said, but for a kst object: the caller tries the other). */
int open_load(struct probes *t, int kst);
/* What BPF holds of process tgid, removed (it has ended). */
void forget_proc(struct probes *t, uint32_t tgid);
/* --all: BPF leaves process tgid alone until it ends (--exe left it out). */
void bpf_ignore(struct probes *t, uint32_t tgid);

#endif
