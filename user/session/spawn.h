/* -- COMMAND (session/spawn.c): started once the tracer is ready, waited
 * for, its signals passed on. */
#ifndef LMT_SPAWN_H
#define LMT_SPAWN_H

#include "session/session.h"

/* name's path as execvp would find it (PATH), into out (PATH_MAX): 0, or
 * -1 if none is executable. */
int resolve_cmd(const char *name, char *out);
/* The program that runs when exe is executed, into bin (PATH_MAX): exe,
 * or the interpreter its #! line names (through /usr/bin/env too). */
void cmd_program(const char *exe, char *bin);
pid_t start_child(const struct topts *o, int *gate);
/* Passes on to -- COMMAND a signal sent to us alone (forward_sig). */
void forward_signal(struct tr *t);
void wait_child(struct tr *t);
int child_rc(const struct tr *t);

#endif
