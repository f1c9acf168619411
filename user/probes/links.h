/* Probe links: a set kept by its owner (a process, an allocator, the
 * trace), destroyed newest first (an allocation's entry probe before its
 * return probe), or later on a thread of their own (an ended process's:
 * removing a uprobe waits for RCU grace periods). The files the probes
 * name (as /proc/self/fd/N, target/tfile.h) are held as long as they. */
#ifndef LMT_LINKS_H
#define LMT_LINKS_H

#include "target/tfile.h"

struct bpf_link;

/* A set of probe links. */
struct links {
	struct bpf_link **v;
	unsigned n, cap;
	/* descriptors of the files its probes name as /proc/self/fd/N
	 * (target/tfile.h), open as long as they are: the name tells the file */
	int *fds;
	unsigned nfd;
};

/* Descriptors of uprobe_multi links, taken from their owners (who keep
 * fd + 1) to be closed elsewhere (session/duty.c: on threads). */
struct fdv {
	int *v;
	unsigned n, cap;
};

/* l into ls: 0, or -errno (l NULL: the attach's error; l destroyed if
 * it cannot be kept). */
int link_add(struct links *ls, struct bpf_link *l);
void links_free(struct links *ls);
/* The same, on a thread of its own; links_join waits until all are gone. */
void links_free_later(struct links *ls);
void links_join(void);
/* f's descriptor kept open with ls's links (closed by links_free); f is
 * left without it. */
void links_hold(struct links *ls, struct tfile *f);

#endif
