/* Which processes a trace follows (session/select.c): -p's, --all's with
 * --exe, and the lock that tells two tracers of one process about each
 * other. */
#ifndef LMT_SELECT_H
#define LMT_SELECT_H

#include "session/session.h"

/* Does the file open at fd (an executable mapping) hold LuaJIT? */
int is_luajit(int fd);
/* --all: every process running now that maps LuaJIT, attached; the
 * LuaJIT files found are watched for new VMs. 0, or -1 having said why. */
int select_all(struct tr *t);
/* Calls fn for every process of /proc but ours and skip (0: none): 0, or
 * -1 having said why not. */
int select_each(pid_t skip, void (*fn)(void *ctx, pid_t pid), void *ctx);
/* --exe: is a process of executable exe (as its maps or /proc/PID/exe
 * name it) or comm one of names? */
int select_named(const char *exe, const char *comm, const char *const *names, unsigned n);
/* --all, once a second: processes new since the last listing that map a
 * LuaJIT file no probe watches for every process (a container's private
 * copy, a file not root's) are considered as select_all does: the file
 * watched, the process attached if its VM runs (its allocations before
 * that are not seen). A PID reused between two listings is missed. */
void select_rescan(struct tr *t);
/* What the rescans keep, freed. */
void select_free(void);
/* Its running VMs: 0, or -1 having said why not (quiet: for --all). */
int proc_find_vms(struct tr *t, struct tproc *p, struct vmscan *scan, int quiet);
/* lua_newstate returned where user space must register the new VM: in
 * a traced process with a new allocator, or with --all in a process not
 * seen before (stopped meanwhile), which --exe may leave out
 * (capture_ops.newvm). */
void select_newvm(struct tr *t, const struct lmt_newvm *n);
/* New VMs select_newvm found no layout variant for (each said). */
unsigned select_unmatched(void);

#endif
