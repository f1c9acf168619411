/* One stream from several VMs, in the process's sequence (streams/merge.h). */
#include <stdlib.h>
#include <string.h>

#include "streams/merge.h"

struct mitem {
	uint64_t key;
	uint32_t sid;
	uint8_t is_sym;
	struct mp_event e;
	struct mp_sym s; /* name: malloc'd */
};

/* A source's records in arrival order, which is key order: head..n. */
struct mqueue {
	const void *src;
	struct mitem *v;
	size_t head, n, cap;
};

struct merge {
	struct merge_out out;
	struct mqueue *q;
	unsigned nq;
	uint64_t done; /* keys up to it are written */
	size_t held;
};

struct merge *merge_new(const struct merge_out *out)
{
	struct merge *m = calloc(1, sizeof(*m));

	if (m)
		m->out = *out;
	return m;
}

void merge_free(struct merge *m)
{
	if (!m)
		return;
	merge_release(m, UINT64_MAX);
	for (unsigned i = 0; i < m->nq; i++)
		free(m->q[i].v);
	free(m->q);
	free(m);
}

size_t merge_held(const struct merge *m)
{
	return m ? m->held : 0;
}

static struct mqueue *queue_find(struct merge *m, const void *src)
{
	for (unsigned i = 0; i < m->nq; i++)
		if (m->q[i].src == src)
			return &m->q[i];
	return NULL;
}

static struct mqueue *queue_of(struct merge *m, const void *src)
{
	struct mqueue *nq = queue_find(m, src);

	if (nq)
		return nq;
	if (!(nq = realloc(m->q, (m->nq + 1) * sizeof(*nq))))
		return NULL;
	m->q = nq;
	m->q[m->nq] = (struct mqueue){ .src = src };
	return &m->q[m->nq++];
}

/* The key a record is held under: its own, or with none (0), the last
 * its source holds, so that it stays behind what that source sent. */
static uint64_t key_of(struct merge *m, const void *src, uint64_t key)
{
	const struct mqueue *q;

	if (key || !m || !(q = queue_find(m, src)) || q->head == q->n)
		return key;
	return q->v[q->n - 1].key;
}

/* Is a record of key held, or written now? */
static int holds(const struct merge *m, uint64_t key)
{
	return m && key && key > m->done;
}

/* A new item at the tail of src's queue; NULL: write now (or no memory). */
static struct mitem *hold(struct merge *m, const void *src, uint64_t key, int *err)
{
	struct mqueue *q;

	*err = 0;
	if (!holds(m, key))
		return NULL;
	if (!(q = queue_of(m, src)))
		goto oom;
	if (q->head == q->n)
		q->head = q->n = 0;
	if (q->n == q->cap) {
		if (q->head) { /* what went leaves room at the front */
			memmove(q->v, q->v + q->head, (q->n - q->head) * sizeof(*q->v));
			q->n -= q->head;
			q->head = 0;
		} else {
			size_t cap = q->cap ? 2 * q->cap : 256;
			struct mitem *nv = realloc(q->v, cap * sizeof(*nv));
			if (!nv)
				goto oom;
			q->v = nv;
			q->cap = cap;
		}
	}
	m->held++;
	q->v[q->n].key = key;
	return &q->v[q->n++];
oom:
	*err = -1;
	return NULL;
}

int merge_event(struct merge *m, const void *src, uint64_t key,
		const struct mp_event *e, uint32_t sid)
{
	int err;
	struct mitem *it = hold(m, src, key_of(m, src, key), &err);

	if (!it)
		return err;
	it->is_sym = 0;
	it->e = *e;
	it->sid = sid;
	return 1;
}

int merge_sym(struct merge *m, const void *src, uint64_t key, const struct mp_sym *s)
{
	char *name = NULL;
	struct mitem *it;
	int err;

	key = key_of(m, src, key);
	if (!holds(m, key))
		return 0;
	if (s->name_len && !(name = malloc(s->name_len)))
		return -1;
	if (!(it = hold(m, src, key, &err))) {
		free(name);
		return err;
	}
	if (name)
		memcpy(name, s->name, s->name_len);
	it->is_sym = 1;
	it->s = *s;
	it->s.name = name;
	return 1;
}

void merge_release(struct merge *m, uint64_t upto)
{
	if (!m)
		return;
	for (;;) {
		struct mqueue *best = NULL;
		struct mitem *it;

		for (unsigned i = 0; i < m->nq; i++) {
			struct mqueue *q = &m->q[i];
			if (q->head < q->n && q->v[q->head].key <= upto &&
			    (!best || q->v[q->head].key < best->v[best->head].key))
				best = q;
		}
		if (!best)
			break;
		it = &best->v[best->head++];
		m->held--;
		if (it->is_sym) {
			m->out.sym(m->out.ctx, &it->s);
			free((char *)it->s.name);
		} else {
			m->out.event(m->out.ctx, &it->e, it->sid);
		}
	}
	if (upto > m->done)
		m->done = upto;
}
