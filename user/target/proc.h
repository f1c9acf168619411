/* The target process seen through /proc: mappings and memory.
 *
 * Memory is read only through a descriptor bound to the process itself
 * (proc_bind): a read never reaches another process that was given the
 * PID after an exit, nor the program the process executed since. */
#ifndef LMT_PROC_H
#define LMT_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pmap {
	uint64_t lo, hi, off;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	char perms[5];
	char path[256]; /* as shown in maps; may end in " (deleted)" */
};

struct pmaps {
	struct pmap *v;
	size_t n;
};

/* 0, or -errno (ESRCH: no such process). */
int pmaps_load(pid_t pid, struct pmaps *m);
void pmaps_free(struct pmaps *m);
const struct pmap *pmaps_find(const struct pmaps *m, uint64_t addr);
/* A path that opens the mapping's file even if it was deleted or lives in
 * another mount namespace: /proc/PID/map_files/LO-HI. */
void pmap_file_path(pid_t pid, const struct pmap *m, char *buf, size_t len);
/* Is this mapping backed by a regular file? */
int pmap_is_file(const struct pmap *m);

/* Binds pid's memory to the process pidfd names: /proc/PID/mem opened,
 * then pidfd checked alive (so the open reached that process). Reads of
 * pid go there until proc_unbind; a later bind of pid replaces it. 0, or
 * -errno (ESRCH: the process is gone). pidfd stays the caller's. */
int proc_bind(pid_t pid, int pidfd);
/* Closes pid's binding if it was made with pidfd (else leaves it). */
void proc_unbind(pid_t pid, int pidfd);
/* Reads len bytes of pid at addr. 0 or -errno: ESRCH if pid is not bound
 * or its process (or the program it ran when bound) is gone. */
int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* As much as is readable from addr on: bytes read, or -errno. */
ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Field 22 of /proc/PID/stat: when it started, in clock ticks since
 * boot; 0 if unknown. */
uint64_t proc_start(pid_t pid);

/* A small file of /proc (stat, fdinfo) into buf, NUL-terminated: its
 * bytes (at most size - 1), or -1 if it cannot be read or is empty. */
ssize_t proc_small(const char *path, char *buf, size_t size);

/* Is pidfd's process alive (not yet reaped)? */
int proc_alive(int pidfd);
/* Sends sig to pidfd's process: 0 or -errno (ESRCH: it is gone). */
int proc_signal(int pidfd, int sig);

/* A process's key in the tracer's maps and sets of processes (never 0,
 * which util/u64set.h keeps for an empty place). */
static inline uint64_t proc_key(uint32_t tgid)
{
	return (uint64_t)tgid | 1ULL << 32;
}

#endif
