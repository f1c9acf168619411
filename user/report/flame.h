/* The flame graph page (flame.c). An output: reads the aggregate, calls
 * no other output. */
#ifndef LMT_REPORT_FLAME_H
#define LMT_REPORT_FLAME_H

#include <stdio.h>

#include "model.h"

/* The flame graph page (REPORT_FLAMEGRAPH), titled title; of several
 * reports: flame_new, flame_add each (label: its root frame), flame_write. */
int flame_print(struct report *rp, FILE *out, const char *title);
struct fl *flame_new(void);
int flame_add(struct fl *f, struct report *rp, const char *label);
int flame_write(struct fl *f, FILE *out, const char *title);
void flame_free(struct fl *f);
/* Another producer's page (the heap's, user/heap/view_flame.c): a key
 * (frames root first, split by ';') and its six values, added to any it
 * had; flame_heap marks the page a heap's, summary its line of text. */
int flame_key(struct fl *f, const char *key, size_t len, const uint64_t v[6]);
int flame_heap(struct fl *f, const char *summary);

#endif
