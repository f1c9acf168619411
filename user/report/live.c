/* The live stage: live blocks and their owners, linking a realloc or free
 * to its block's previous owner ("Overrides"); on a second thread where
 * there is a CPU for it. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <unistd.h>

#include "keys.h"
#include "live.h"
#include "util/hash.h"

static void block_gone(struct report *rp, const struct block *blk, uint32_t dead);

/* -- Block map: addr -> live block; linear probing, backward-shift delete - */

static inline uint64_t blk_home(const struct report *rp, uint64_t addr)
{
	return hash_u64(addr) & rp->bmask;
}

static struct block *blk_find(struct report *rp, uint64_t addr)
{
	if (!rp->blk)
		return NULL;
	for (uint64_t i = blk_home(rp, addr);; i = (i + 1) & rp->bmask) {
		struct block *s = &rp->blk[i];
		if (!s->loc1)
			return NULL;
		if (s->addr == addr)
			return s;
	}
}

static void blk_del(struct report *rp, struct block *s)
{
	uint64_t i = (uint64_t)(s - rp->blk), j = i;
	for (;;) {
		uint64_t home;
		j = (j + 1) & rp->bmask;
		if (!rp->blk[j].loc1)
			break;
		home = blk_home(rp, rp->blk[j].addr);
		/* Move j back into the hole if the hole lies on j's probe path. */
		if (((j - home) & rp->bmask) >= ((j - i) & rp->bmask)) {
			rp->blk[i] = rp->blk[j];
			i = j;
		}
	}
	rp->blk[i].loc1 = 0;
	rp->nblk--;
}

static int blk_put(struct report *rp, uint64_t addr, uint64_t size, uint32_t loc, uint32_t name,
		    uint32_t key, uint32_t born)
{
	uint64_t i;
	if (!rp->blk || (rp->nblk + 1) * 8 > (rp->bmask + 1) * 5) {
		const uint64_t ns = rp->blk ? (rp->bmask + 1) * 2 : 1024;
		struct block *t = big_calloc(ns, sizeof(*t)), *old = rp->blk;
		const uint64_t omask = rp->bmask;
		if (!t)
			return -1;
		rp->blk = t;
		rp->bmask = ns - 1;
		for (uint64_t k = 0; old && k <= omask; k++) {
			if (!old[k].loc1)
				continue;
			for (i = blk_home(rp, old[k].addr); t[i].loc1; i = (i + 1) & rp->bmask)
				;
			t[i] = old[k];
		}
		big_free(old, old ? omask + 1 : 0, sizeof(*t));
	}
	for (i = blk_home(rp, addr); rp->blk[i].loc1; i = (i + 1) & rp->bmask) {
		if (rp->blk[i].addr == addr)
			break;
	}
	if (!rp->blk[i].loc1)
		rp->nblk++;
	else
		block_gone(rp, &rp->blk[i], born); /* an address given twice */
	rp->blk[i] = (struct block){ .addr = addr, .size = size, .loc1 = loc + 1, .name = name,
				     .key = key, .born = born };
	rp->held += size;
	return 0;
}

static inline uint64_t own_home(const struct report *rp, uint32_t g, uint32_t loc)
{
	return hash_u64(((uint64_t)g << 32) | loc) & rp->omask;
}

static int own_grow(struct report *rp)
{
	const uint64_t ns = rp->otab ? (rp->omask + 1) * 2 : 1024;
	struct oslot *t = big_calloc(ns, sizeof(*t)), *old = rp->otab;
	const uint64_t omask = rp->omask;
	if (!t)
		return -1;
	rp->otab = t;
	rp->omask = ns - 1;
	rp->oepoch++;
	for (uint64_t k = 0; old && k <= omask; k++) {
		uint64_t i;
		if (!old[k].g1)
			continue;
		for (i = own_home(rp, old[k].g1 - 1, old[k].loc); t[i].g1; i = (i + 1) & rp->omask)
			;
		t[i] = old[k];
	}
	big_free(old, old ? omask + 1 : 0, sizeof(*t));
	return 0;
}

/* parse.lua link_to_previous(). */
static struct gown *gown_of(struct report *rp, uint32_t g)
{
	const uint32_t old = rp->gown_cap;
	if (g < old)
		return &rp->gown[g];
	if (grow(&rp->gown, &rp->gown_cap, (size_t)g + 1, sizeof(*rp->gown)))
		return NULL;
	for (uint32_t k = old; k < rp->gown_cap; k++)
		rp->gown[k] = (struct gown){ .last_loc = NONE };
	return &rp->gown[g];
}

uint32_t nowners(const struct report *rp, uint32_t g)
{
	return g < rp->gown_cap ? rp->gown[g].nowners : 0;
}

static void link_owner(struct report *rp, uint32_t g, const struct block *blk, uint64_t nsize)
{
	const uint32_t oloc = blk->loc1 - 1;
	struct gown *gp = gown_of(rp, g);
	struct oslot *o;
	uint64_t i;
	if (!gp) {
		rp->blk_oom = 1;
		return;
	}
	/* Blocks mostly die where they were made: try the last owner first. */
	if (gp->last_loc == oloc && gp->last_epoch == rp->oepoch) {
		o = &rp->otab[gp->last_own];
		goto hit;
	}
	if ((!rp->otab || (rp->on + 1) * 4 > (rp->omask + 1) * 3) && own_grow(rp)) {
		rp->blk_oom = 1;
		return;
	}
	for (i = own_home(rp, g, oloc); rp->otab[i].g1; i = (i + 1) & rp->omask)
		if (rp->otab[i].g1 == g + 1 && rp->otab[i].loc == oloc)
			break;
	o = &rp->otab[i];
	if (!o->g1) {
		*o = (struct oslot){ .g1 = g + 1, .loc = oloc, .name = blk->name };
		rp->on++;
		gp->nowners++;
	}
	gp->last_loc = oloc;
	gp->last_own = (uint32_t)i;
	gp->last_epoch = rp->oepoch;
hit:
	o->allocated += nsize;
	o->freed += blk->size;
	o->count++;
}

/* -- Over time (report_temporal) ------------------------------------------ */

static inline uint32_t bucket_of(const struct report *rp, uint32_t seq)
{
	const uint64_t b = (uint64_t)seq * rp->nb / (rp->tn ? rp->tn : 1);
	return b < rp->nb ? (uint32_t)b : rp->nb - 1;
}

/* A block of key, allocated in bucket born, gone in bucket dead. */
static int tcell_add(struct report *rp, const struct block *blk, uint32_t dead)
{
	const uint64_t k = (uint64_t)blk->key << 32 | (uint64_t)blk->born << 16 | dead;
	uint64_t *i;
	int isnew;

	if (grow(&rp->tcv, &rp->tc_cap, (size_t)rp->ntc + 1, sizeof(*rp->tcv)) ||
	    !(i = kvmap_put(&rp->tidx, k, rp->ntc, &isnew)))
		return -1;
	if (isnew)
		rp->tcv[rp->ntc++] = (struct tcell){ .key = blk->key, .born = blk->born,
						     .dead = dead };
	rp->tcv[*i].bytes += blk->size;
	rp->tcv[*i].n++;
	return 0;
}

/* Block blk ends (freed, or moved by a realloc) at bucket dead. */
static void block_gone(struct report *rp, const struct block *blk, uint32_t dead)
{
	rp->held -= blk->size;
	if (rp->nb && tcell_add(rp, blk, dead))
		rp->blk_oom = 1;
}

int temporal_end(struct report *rp)
{
	if (!rp->nb || rp->tdone)
		return 0;
	rp->tdone = 1;
	for (uint64_t i = 0; rp->blk && i <= rp->bmask; i++)
		if (rp->blk[i].loc1 && tcell_add(rp, &rp->blk[i], rp->nb))
			return -1;
	return 0;
}

/* After event e: the held bytes' maximum, the bucket's, the peak's live
 * blocks. */
static void held_after(struct report *rp, const struct lev *e, uint32_t b)
{
	if (rp->held > rp->held_max) {
		rp->held_max = rp->held;
		rp->held_at = e->seq;
	}
	if (!rp->nb)
		return;
	if (rp->bmax[b] == UINT64_MAX || rp->held > rp->bmax[b])
		rp->bmax[b] = rp->held;
	rp->bend[b] = rp->held;
	if (!rp->peak_done && e->seq >= rp->peak_seq) {
		rp->peak_done = 1;
		live_by_key(rp, &rp->peak);
	}
}

void live_event(struct report *rp, const struct lev *e)
{
	const uint32_t b = rp->nb ? bucket_of(rp, e->seq) : 0;
	struct block *blk;
	if (e->kind & MP_FREE && (blk = blk_find(rp, e->oaddr))) {
		link_owner(rp, e->g, blk, e->kind == MP_REALLOC ? e->nsize : 0);
		block_gone(rp, blk, b);
		if (e->kind == MP_REALLOC && e->naddr == e->oaddr) {
			/* In place: one probe, not three. */
			*blk = (struct block){ .addr = e->naddr, .size = e->nsize,
					       .loc1 = e->li + 1, .name = e->name,
					       .key = e->key, .born = b };
			rp->held += e->nsize;
			held_after(rp, e, b);
			return;
		}
		blk_del(rp, blk);
	}
	if (e->kind & MP_ALLOC && blk_put(rp, e->naddr, e->nsize, e->li, e->name, e->key, b))
		rp->blk_oom = 1;
	held_after(rp, e, b);
}

static inline void blk_prefetch(const struct report *rp, uint64_t addr)
{
	/* A probe run often crosses into the next line. */
	const char *p = (const char *)&rp->blk[blk_home(rp, addr)];
	__builtin_prefetch(p);
	__builtin_prefetch(p + 64);
}

/* On big profiles the block map outgrows the caches: prefetch a chunk's
 * slots, then do its live-block work in order. */
void live_batch(struct report *rp, const struct lev *e, size_t n)
{
	enum { CHUNK = 64 };
	while (n) {
		const size_t k = n < CHUNK ? n : CHUNK;
		for (size_t i = 0; rp->blk && i < k; i++) {
			if (e[i].kind & MP_FREE)
				blk_prefetch(rp, e[i].oaddr);
			if (e[i].kind & MP_ALLOC && e[i].naddr != e[i].oaddr)
				blk_prefetch(rp, e[i].naddr);
		}
		for (size_t i = 0; i < k; i++)
			live_event(rp, &e[i]);
		e += k;
		n -= k;
	}
}

static void *pipe_main(void *arg)
{
	struct report *rp = arg;
	struct lpipe *hp = rp->pipe;
	pthread_mutex_lock(&hp->mu);
	for (;;) {
		unsigned t;
		while (hp->tail == hp->head && !hp->quit)
			pthread_cond_wait(&hp->cv, &hp->mu);
		if (hp->tail == hp->head)
			break;
		t = hp->tail % NHB;
		pthread_mutex_unlock(&hp->mu);
		live_batch(rp, hp->buf[t], hp->n[t]);
		pthread_mutex_lock(&hp->mu);
		hp->tail++;
		pthread_cond_broadcast(&hp->cv);
	}
	pthread_mutex_unlock(&hp->mu);
	return NULL;
}

/* Starts the live thread; NULL (work stays inline) on one CPU or failure. */
struct lpipe *pipe_start(struct report *rp)
{
	struct lpipe *hp;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !(hp = calloc(1, sizeof(*hp))))
		return NULL;
	for (int i = 0; i < NHB; i++) {
		if (!(hp->buf[i] = malloc(HB * sizeof(struct lev))))
			goto fail;
	}
	pthread_mutex_init(&hp->mu, NULL);
	pthread_cond_init(&hp->cv, NULL);
	rp->pipe = hp;
	if (!pthread_create(&hp->th, NULL, pipe_main, rp))
		return hp;
	rp->pipe = NULL;
	pthread_cond_destroy(&hp->cv);
	pthread_mutex_destroy(&hp->mu);
fail:
	for (int i = 0; i < NHB; i++)
		free(hp->buf[i]);
	free(hp);
	return NULL;
}

/* Hands the batch being filled to the live thread; waits for a free one. */
void pipe_push(struct lpipe *hp)
{
	pthread_mutex_lock(&hp->mu);
	hp->n[hp->head % NHB] = hp->fill;
	hp->head++;
	hp->fill = 0;
	pthread_cond_broadcast(&hp->cv);
	while (hp->head - hp->tail >= NHB)
		pthread_cond_wait(&hp->cv, &hp->mu);
	pthread_mutex_unlock(&hp->mu);
}

/* Waits until the live stage has caught up with every event given. */
void report_sync(struct report *rp)
{
	struct lpipe *hp = rp->pipe;
	if (!hp)
		return;
	if (hp->fill)
		pipe_push(hp);
	pthread_mutex_lock(&hp->mu);
	while (hp->tail != hp->head)
		pthread_cond_wait(&hp->cv, &hp->mu);
	pthread_mutex_unlock(&hp->mu);
}

void pipe_stop(struct report *rp)
{
	struct lpipe *hp = rp->pipe;
	if (!hp)
		return;
	report_sync(rp);
	pthread_mutex_lock(&hp->mu);
	hp->quit = 1;
	pthread_cond_broadcast(&hp->cv);
	pthread_mutex_unlock(&hp->mu);
	pthread_join(hp->th, NULL);
	pthread_cond_destroy(&hp->cv);
	pthread_mutex_destroy(&hp->mu);
	for (int i = 0; i < NHB; i++)
		free(hp->buf[i]);
	free(hp);
	rp->pipe = NULL;
}

/* -- Blocks live at the end (report.h: report_block_at) ------------------ */

int report_block_at(struct report *rp, uint64_t addr, struct report_block *b)
{
	const struct block *s;

	report_sync(rp);
	if (!(s = blk_find(rp, addr)))
		return 0;
	*b = (struct report_block){ .addr = s->addr, .size = s->size, .site_id = s->name,
				    .stack_id = NONE, .site = "?", .site_len = 1 };
	if (s->name != NONE) {
		b->site = str_ptr(&rp->sp, s->name);
		b->site_len = rp->sp.s[s->name].len;
	}
	if (rp->has_stacks && s->key != NONE) {
		b->stack_id = s->key;
		b->stack = str_ptr(&rp->sp, s->key);
		b->stack_len = rp->sp.s[s->key].len;
	}
	return 1;
}

uint64_t report_nblocks(struct report *rp)
{
	report_sync(rp);
	return rp->nblk;
}
