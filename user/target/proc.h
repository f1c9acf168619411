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

/* Its maps (proc_openat): 0, or -errno (ESRCH: no such process, or a
 * bound one exited while they were read: what was read is dropped). */
int pmaps_load(pid_t pid, struct pmaps *m);
void pmaps_free(struct pmaps *m);
const struct pmap *pmaps_find(const struct pmaps *m, uint64_t addr);
/* Opens the mapping's file even if it was deleted or lives in another
 * mount namespace: /proc/PID/map_files/LO-HI (proc_openat). fd or -errno. */
int pmap_file_open(pid_t pid, const struct pmap *m, int flags);
/* Is this mapping backed by a regular file? */
int pmap_is_file(const struct pmap *m);
/* A key of the file m names, as maps name it (device and inode: an
 * overlay's, where tfile_key has the file opened), for sets; never 0. */
uint64_t pmap_key(const struct pmap *m);

/* Binds pid's memory to the process pidfd names: /proc/PID/mem opened,
 * then pidfd checked alive (so the open reached that process). Reads of
 * pid go there until proc_unbind; a later bind of pid replaces it. 0, or
 * -errno (ESRCH: the process is gone). pidfd stays the caller's. */
int proc_bind(pid_t pid, int pidfd);
/* Closes pid's binding if it was made with pidfd (else leaves it). */
void proc_unbind(pid_t pid, int pidfd);
/* Forgets every binding without closing its descriptors: a process
 * forked from ours that closed them (the guardian), so that a binding it
 * makes never closes a number it has given out since. */
void proc_forget_all(void);
/* Reads len bytes of pid at addr. 0 or -errno: ESRCH if pid is not bound
 * or its process (or the program it ran when bound) is gone. */
int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* As much as is readable from addr on: bytes read, or -errno. */
ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len);
/* The same from addr into n buffers in turn (one system call): bytes read
 * (fewer: the rest unreadable), or -errno. */
struct iovec;
ssize_t proc_readv(pid_t pid, uint64_t addr, const struct iovec *iov, int n);

/* The /proc/PID directory of pidfd's process: opened, then pidfd checked
 * alive (pidfd_send_signal 0), so the directory is that process's and
 * whatever is opened from it stays so, whoever has the PID later. A
 * directory descriptor, or -errno (ESRCH: the process is gone). The one
 * way to a process's /proc files once it is selected (proc_bind keeps
 * one; proc_openat opens from it). */
int proc_dir(pid_t pid, int pidfd);
/* Opens rel ("maps", "task", "map_files/LO-HI") in pid's /proc directory:
 * the one bound to it (proc_bind) if pid is bound, else by name (a
 * process not selected yet). fd or -errno. */
int proc_openat(pid_t pid, const char *rel, int flags);
/* readlink of rel in pid's bound /proc directory, NUL-terminated: its
 * length, or -errno (ESRCH: pid is not bound). */
ssize_t proc_readlinkat(pid_t pid, const char *rel, char *buf, size_t len);
/* Is bound pid's process alive (1 if pid is not bound)? A read from its
 * directory that it ends before is dropped, not taken as its. */
int proc_bound_alive(pid_t pid);

/* Field 22 of /proc/PID/stat of pidfd's process (proc_dir): when it
 * started, in clock ticks since boot; 0 if unknown or gone. */
uint64_t proc_start(pid_t pid, int pidfd);

/* pid's PID in its own (innermost) PID namespace, from the NSpid line of
 * its status (Linux 4.1+); 0 if it is in ours, or unknown. */
pid_t proc_nspid(pid_t pid);

/* A small file of /proc (stat, fdinfo) into buf, NUL-terminated: its
 * bytes (at most size - 1), or -1 if it cannot be read or is empty. */
ssize_t proc_small(const char *path, char *buf, size_t size);
/* The same, of rel under directory dir (proc_dir's, proc_openat's). */
ssize_t proc_small_at(int dir, const char *rel, char *buf, size_t size);

/* rel of pid's /proc directory (proc_openat: the bound one, else by
 * name) read into buf, NUL-terminated: its bytes (at most size - 1; 0 if
 * empty), or -1. */
ssize_t proc_text(pid_t pid, const char *rel, char *buf, size_t size);
/* The state letter of stat file rel ("stat", "task/TID/stat") of pid's
 * /proc directory (as proc_text), 0 if unknown. */
char proc_state(pid_t pid, const char *rel);

/* Is every thread of pid stopped (or a zombie)? 1 if so, 0 if one runs,
 * -ESRCH if the process is gone; through its bound /proc directory
 * (proc_openat), its first LMT_PROC_THREADS_MAX threads. A thread runs
 * BPF's programs only until it stops: once all have, every record the
 * process sent before stopping is in the ring. */
int proc_stopped(pid_t pid);

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
