/* Hooks (probes/hooks.c): the probes that tell us a traced process
 * changed while we trace it: lua_newstate's return (a new VM), lua_close,
 * the dynamic linker's _dl_debug_state (a dlopen: C names read while the
 * module is mapped), and libc's exit() (its last names read while it
 * exists). */
#ifndef LMT_HOOKS_H
#define LMT_HOOKS_H

#include <sys/types.h>

#include "probes/probes.h"
#include "target/proc.h"
#include "target/tfile.h"

/* The hooks of a process's objects (lua_newstate, lua_close, dlopen,
 * exit); with --all only dlopen and exit: the rest is watched for every process at once. */
void proc_hooks(struct probes *t, struct probe_proc *p, const struct pmaps *m);
/* --all: lua_newstate and lua_close of LuaJIT file f, for every process
 * if f is root's and writable by no one else (tfile_trusted), else for
 * process pid only (none if pid <= 0). 0, or -errno said. f's descriptor
 * stays with the probes (links_hold). */
int watch_file(struct probes *t, struct tfile *f, pid_t pid);
/* -- COMMAND's hooks, before it runs: lua_newstate in its program bin (the
 * interpreter of a #! script: session/spawn.c) and in a libluajit it
 * links against, dlopen in its dynamic linker, as process c's (NULL: none).
 * 0, or -1 if none. */
int cmd_probes(struct probes *t, struct probe_proc *c, const char *bin);

#endif
