/* --duty PERCENT (session/duty.c): the allocator probed in windows. */
#ifndef LMT_DUTY_H
#define LMT_DUTY_H

struct tr;

/* Before the loop: the first window's place. */
void duty_start(struct tr *t);
/* Each turn of the loop: opens or closes a window when due. */
void duty_turn(struct tr *t);
/* A poll's timeout (ms), cut so the next change is on time. */
int duty_wait_ms(const struct tr *t, int ms);
/* Tracing ends: an open window is closed (finish destroys its probes),
 * a closing one waited for. */
void duty_end(struct tr *t);
/* Seconds the allocator was probed so far. */
double duty_sampled(const struct tr *t);

#endif
