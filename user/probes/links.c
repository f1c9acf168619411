/* Probe links (probes/links.h): kept, destroyed, and destroyed later on
 * a thread of their own. Every probe is a perf-event or multi link owned
 * by this process, so the kernel removes them when we exit or die; nothing
 * is pinned. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>

#include "probes/links.h"

/* -- Links --------------------------------------------------------------- */

int link_add(struct links *ls, struct bpf_link *l)
{
	if (!l)
		return -errno ? -errno : -EINVAL;
	if (ls->n == ls->cap) {
		unsigned cap = ls->cap ? 2 * ls->cap : 16;
		struct bpf_link **nv = realloc(ls->v, cap * sizeof(*nv));
		if (!nv) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
		ls->v = nv;
		ls->cap = cap;
	}
	ls->v[ls->n++] = l;
	return 0;
}

/* Newest first: an allocation's entry probe goes before its return probe. */
void links_free(struct links *ls)
{
	while (ls->n)
		bpf_link__destroy(ls->v[--ls->n]);
	free(ls->v);
	while (ls->nfd)
		close(ls->fds[--ls->nfd]);
	free(ls->fds);
	memset(ls, 0, sizeof(*ls));
}

void links_hold(struct links *ls, struct tfile *f)
{
	int *nv = realloc(ls->fds, (ls->nfd + 1) * sizeof(*nv));

	if (!nv)
		return; /* closed by its owner: the probes stay */
	ls->fds = nv;
	ls->fds[ls->nfd++] = f->fd;
	f->fd = -1;
}

/* -- Links of ended processes ---------------------------------------------- */

/* Removing a uprobe waits for the kernel's RCU grace periods: tens of
 * milliseconds each, hundreds for a process's set, during which the ring
 * would fill. The probes of a process that has ended fire no more, so they
 * go on a thread of their own (links_join waits for it). */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct links q;
	pthread_t th;
	int started, busy, quit;
} reaper = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *reap_links(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&reaper.mu);
	for (;;) {
		while (!reaper.q.n && !reaper.quit)
			pthread_cond_wait(&reaper.cv, &reaper.mu);
		if (!reaper.q.n)
			break;
		struct bpf_link *l = reaper.q.v[--reaper.q.n];
		reaper.busy = 1;
		pthread_mutex_unlock(&reaper.mu);
		bpf_link__destroy(l);
		pthread_mutex_lock(&reaper.mu);
		reaper.busy = 0;
		pthread_cond_broadcast(&reaper.cv);
	}
	pthread_mutex_unlock(&reaper.mu);
	return NULL;
}

void links_free_later(struct links *ls)
{
	pthread_mutex_lock(&reaper.mu);
	if (!reaper.started)
		reaper.started = !pthread_create(&reaper.th, NULL, reap_links, NULL);
	/* Oldest first here: the queue is taken from its end. */
	while (reaper.started && ls->n) {
		struct bpf_link *l = ls->v[0];
		memmove(ls->v, ls->v + 1, --ls->n * sizeof(*ls->v));
		if (link_add(&reaper.q, l))
			break; /* link_add destroyed it */
	}
	pthread_cond_signal(&reaper.cv);
	pthread_mutex_unlock(&reaper.mu);
	links_free(ls); /* what could not be queued */
}

void links_join(void)
{
	pthread_mutex_lock(&reaper.mu);
	if (!reaper.started) {
		pthread_mutex_unlock(&reaper.mu);
		return;
	}
	reaper.quit = 1;
	pthread_cond_broadcast(&reaper.cv);
	pthread_mutex_unlock(&reaper.mu);
	pthread_join(reaper.th, NULL);
	reaper.started = 0;
	reaper.quit = 0;
	free(reaper.q.v);
	memset(&reaper.q, 0, sizeof(reaper.q));
}
