/* One stream written by several VMs (-o FILE, a process of several VMs):
 * their batches arrive apart, each in its own VM's order, and every event
 * and symbol record carries the process's sequence number (struct
 * lmt_slot). What a VM's records make (events, and the symbols an event
 * needs ahead of it) is held in that VM's queue under its record's key,
 * and written in key order once every key up to it is known to be in
 * (merge_release: user/capture/ring.c's merge_round finds that point).
 *
 * Keys: a record's number. A record of key 0 (not numbered: sent before
 * the stream had a second VM, or made while reading a record kept at key
 * 0, as a stack record is) stays behind what its source holds, if
 * anything, else it is written at once, as are keys already passed (a
 * prototype's or stack's record is numbered just before it is sent, so it
 * may come late; it never comes after an event that names it). A
 * process's C symbols are written at once (streams/out.c: proc_sym). Memory:
 * what arrives between two releases.
 */
#ifndef LMT_MERGE_H
#define LMT_MERGE_H
#include <stddef.h>
#include <stdint.h>

#include "format/memprof.h"

/* Where held records go when their turn comes. */
struct merge_out {
	void (*event)(void *ctx, const struct mp_event *e, uint32_t sid);
	void (*sym)(void *ctx, const struct mp_sym *s);
	void *ctx;
};

struct merge;

struct merge *merge_new(const struct merge_out *out);
/* Writes what it holds, in order, then frees it. */
void merge_free(struct merge *m);
/* The record of key from source src (a VM; NULL: the process) is held:
 * 1. 0: write it now (key 0 or passed). -1: out of memory (said once by
 * the caller; it is written now, out of order). */
int merge_event(struct merge *m, const void *src, uint64_t key,
		const struct mp_event *e, uint32_t sid);
int merge_sym(struct merge *m, const void *src, uint64_t key, const struct mp_sym *s);
/* Every key up to upto is in: what is held up to it goes, in order. */
void merge_release(struct merge *m, uint64_t upto);
/* Records held now. */
size_t merge_held(const struct merge *m);

#endif
