/* Signals that end tracing (session/signals.h). */
#include <signal.h>
#include <stddef.h>

#include "session/signals.h"

volatile sig_atomic_t stop_req;
volatile sig_atomic_t forward_sig;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_req = sig;
	if (si->si_code == SI_USER || si->si_code == SI_QUEUE)
		forward_sig = sig;
}

void signals_catch(void)
{
	struct sigaction sa = { .sa_sigaction = on_stop_signal,
				.sa_flags = SA_SIGINFO };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
