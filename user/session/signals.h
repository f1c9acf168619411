/* Signals that end tracing (SIGINT, SIGTERM, SIGHUP): they set stop_req,
 * which the loop reads; one sent to us alone (SI_USER, SI_QUEUE: not by
 * the terminal to the whole foreground group, -- COMMAND included) is
 * passed on to -- COMMAND (forward_sig, session/spawn.c). SIGPIPE is
 * ignored: a write error is said by the writer. */
#ifndef LMT_SIGNALS_H
#define LMT_SIGNALS_H

#include <signal.h>

extern volatile sig_atomic_t stop_req;
extern volatile sig_atomic_t forward_sig;

void signals_catch(void);

#endif
