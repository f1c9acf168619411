/* Stops BPF made for us (session/stops.c): released once what their
 * processes sent before stopping is read (block: wait for them to stop,
 * up to 2 s; else try again next round); expiries and SIGCONTs not ours
 * said; the changes asked for meanwhile made (unbatch, symbol rescans). */
#ifndef LMT_STOPS_H
#define LMT_STOPS_H

#include "session/session.h"

void settle_stops(struct tr *t, int block);

#endif
