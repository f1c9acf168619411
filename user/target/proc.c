/* /proc parsing and target memory reads. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "target/caps.h"
#include "target/proc.h"
#include "util/hash.h"
#include "util/u64set.h"

int pmaps_load(pid_t pid, struct pmaps *m)
{
	char *line = NULL;
	size_t cap = 0, lcap = 0;
	int fd = proc_openat(pid, "maps", O_RDONLY), err;
	FILE *f;

	m->v = NULL;
	m->n = 0;
	if (fd < 0)
		return fd;
	if (!(f = fdopen(fd, "re"))) {
		err = -errno;
		close(fd);
		return err;
	}
	/* getline: a line is as long as its path (over 4 KiB in a deep
	 * directory), and a fixed buffer would parse its rest as a line */
	while (getline(&line, &lcap, f) > 0) {
		struct pmap p = { 0 };
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &p.lo, &p.hi, p.perms, &p.off, &p.dev_major,
			   &p.dev_minor, &p.inode, &pos) < 7)
			continue;
		if (pos > 0) {
			size_t l = strcspn(line + pos, "\n");
			if (l >= sizeof(p.path))
				l = sizeof(p.path) - 1;
			memcpy(p.path, line + pos, l);
		}
		if (m->n == cap) {
			struct pmap *nv;
			cap = cap ? 2 * cap : 64;
			nv = realloc(m->v, cap * sizeof(*nv));
			if (!nv) {
				free(line);
				fclose(f);
				pmaps_free(m);
				return -ENOMEM;
			}
			m->v = nv;
		}
		m->v[m->n++] = p;
	}
	free(line);
	fclose(f);
	/* Its process exited while it was read: what was read is not its
	 * whole map, nor anyone's now. */
	if (!proc_bound_alive(pid)) {
		pmaps_free(m);
		return -ESRCH;
	}
	return 0;
}

void pmaps_free(struct pmaps *m)
{
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct pmap *pmaps_find(const struct pmaps *m, uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++)
		if (addr >= m->v[i].lo && addr < m->v[i].hi)
			return &m->v[i];
	return NULL;
}

int pmap_file_open(pid_t pid, const struct pmap *m, int flags)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "map_files/%" PRIx64 "-%" PRIx64, m->lo, m->hi);
	return proc_openat(pid, rel, flags);
}

int pmap_is_file(const struct pmap *m)
{
	return m->inode != 0 && m->path[0] == '/';
}

uint64_t pmap_key(const struct pmap *m)
{
	const uint64_t k = hash_u64(m->inode ^ hash_u64((uint64_t)m->dev_major << 32 |
							m->dev_minor));

	return k ? k : 1;
}

/* -- Identity ------------------------------------------------------------- */

/* fd's first size - 1 bytes into buf, NUL-terminated; fd closed. */
static ssize_t small_of(int fd, char *buf, size_t size)
{
	ssize_t n;

	if (fd < 0)
		return -1;
	n = size < 2 ? -1 : read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

ssize_t proc_small(const char *path, char *buf, size_t size)
{
	return small_of(open(path, O_RDONLY | O_CLOEXEC), buf, size);
}

ssize_t proc_small_at(int dir, const char *rel, char *buf, size_t size)
{
	return small_of(openat(dir, rel, O_RDONLY | O_CLOEXEC), buf, size);
}

int proc_dir(pid_t pid, int pidfd)
{
	char fn[32];
	int d;

	snprintf(fn, sizeof(fn), "/proc/%d", (int)pid);
	if ((d = open(fn, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	/* Alive after the open: the PID was still its own when it was
	 * opened (a PID is not given again before its process is reaped),
	 * and what is opened from d stays that process's. */
	if (!proc_alive(pidfd)) {
		close(d);
		return -ESRCH;
	}
	return d;
}

uint64_t proc_start(pid_t pid, int pidfd)
{
	char st[1024];
	const char *c;
	unsigned long long v = 0;
	int d = proc_dir(pid, pidfd);

	if (d < 0)
		return 0;
	if (proc_small_at(d, "stat", st, sizeof(st)) < 0 ||
	    !proc_alive(pidfd)) {
		close(d);
		return 0;
	}
	close(d);
	c = strrchr(st, ')'); /* the name may hold anything */
	if (!c || sscanf(c + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) != 1)
		return 0;
	return v;
}

/* -- Memory, by descriptor ------------------------------------------------ */

/* A bound process: its /proc directory and memory, open since it was
 * bound, and its pidfd (not ours: its tracer closes it). */
struct pbound {
	int dirfd, memfd, pidfd;
};

static struct u64map bound; /* PID -> struct pbound */

int proc_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

int proc_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) ? -errno : 0;
}

int proc_bind(pid_t pid, int pidfd)
{
	struct pbound *b = malloc(sizeof(*b)), *old;
	int err = 0;

	if (!b)
		return -ENOMEM;
	b->pidfd = pidfd;
	if ((b->dirfd = proc_dir(pid, pidfd)) < 0) {
		err = b->dirfd;
		free(b);
		return err;
	}
	if ((b->memfd = openat(b->dirfd, "mem", O_RDONLY | O_CLOEXEC)) < 0) {
		err = -errno;
		close(b->dirfd);
		free(b);
		return err;
	}
	old = u64map_put(&bound, (uint64_t)pid, b, &err);
	if (err) {
		close(b->memfd);
		close(b->dirfd);
		free(b);
		return -ENOMEM;
	}
	if (old) {
		close(old->memfd);
		close(old->dirfd);
		free(old);
	}
	return 0;
}

int proc_openat(pid_t pid, const char *rel, int flags)
{
	const struct pbound *b = pid > 0 ? u64map_get(&bound, (uint64_t)pid) : NULL;
	char fn[96];
	int fd;

	if (b)
		fd = openat(b->dirfd, rel, flags | O_CLOEXEC);
	else if (snprintf(fn, sizeof(fn), "/proc/%d/%s", (int)pid, rel) >= (int)sizeof(fn))
		return -ENAMETOOLONG;
	else /* not bound yet: a process being looked at */
		fd = open(fn, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

ssize_t proc_readlinkat(pid_t pid, const char *rel, char *buf, size_t len)
{
	const struct pbound *b = pid > 0 ? u64map_get(&bound, (uint64_t)pid) : NULL;
	ssize_t n;

	if (!b || len < 1)
		return -ESRCH;
	n = readlinkat(b->dirfd, rel, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return n;
}

int proc_bound_alive(pid_t pid)
{
	const struct pbound *b = pid > 0 ? u64map_get(&bound, (uint64_t)pid) : NULL;

	return !b || proc_alive(b->pidfd);
}

void proc_forget_all(void)
{
	for (size_t i = 0; i < bound.cap; i++)
		if (bound.k[i] && bound.v[i]) {
			free(bound.v[i]);
			bound.v[i] = NULL;
		}
	memset(bound.k, 0, bound.cap * sizeof(*bound.k));
	bound.n = bound.dead = 0;
}

void proc_unbind(pid_t pid, int pidfd)
{
	struct pbound *b = u64map_get(&bound, (uint64_t)pid);

	if (!b || b->pidfd != pidfd)
		return;
	u64map_del(&bound, (uint64_t)pid);
	close(b->memfd);
	close(b->dirfd);
	free(b);
}

/* Reads through the process's own descriptor: an exited process's reads
 * fail (its memory is gone), whoever has its PID now. */
ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	const struct pbound *b = pid > 0 ? u64map_get(&bound, (uint64_t)pid) : NULL;
	ssize_t n;

	if (!b)
		return -ESRCH; /* never by a bare PID */
	if (addr > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - addr)
		return -EFAULT;
	n = pread(b->memfd, buf, len, (off_t)addr);
	if (n < 0)
		return errno == EIO ? -EFAULT : -errno;
	return n == 0 && len ? -ESRCH : n; /* 0: its memory is gone */
}

ssize_t proc_readv(pid_t pid, uint64_t addr, const struct iovec *iov, int n)
{
	const struct pbound *b = pid > 0 ? u64map_get(&bound, (uint64_t)pid) : NULL;
	ssize_t got;

	if (!b)
		return -ESRCH;
	if (addr > (uint64_t)INT64_MAX)
		return -EFAULT;
	got = preadv(b->memfd, iov, n, (off_t)addr);
	if (got < 0)
		return errno == EIO ? -EFAULT : -errno;
	return got;
}

int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = proc_read_some(pid, addr, buf, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The state letter of a stat text, 0 if none. */
static char stat_state(const char *st)
{
	const char *c = strrchr(st, ')'); /* the name may hold anything */

	return c && c[1] == ' ' ? c[2] : 0;
}

ssize_t proc_text(pid_t pid, const char *rel, char *buf, size_t size)
{
	int fd = proc_openat(pid, rel, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 && size > 1 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

char proc_state(pid_t pid, const char *rel)
{
	char st[512];

	return proc_text(pid, rel, st, sizeof(st)) > 0 ? stat_state(st) : 0;
}

int proc_stopped(pid_t pid)
{
	char st[512];
	struct dirent *de;
	unsigned n = 0;
	int running = 0, fd = proc_openat(pid, "task", O_RDONLY | O_DIRECTORY);
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -ESRCH;
	}
	while (!running && (de = readdir(d)) && n++ < LMT_PROC_THREADS_MAX) {
		char q[48], c;

		if (de->d_name[0] == '.')
			continue;
		snprintf(q, sizeof(q), "%.32s/stat", de->d_name);
		if (proc_small_at(dirfd(d), q, st, sizeof(st)) < 0)
			continue; /* a thread gone meanwhile */
		c = stat_state(st);
		running = c && !strchr("TtZXx", c);
	}
	closedir(d);
	return !running;
}

pid_t proc_nspid(pid_t pid)
{
	char buf[4096], *l, *e;
	long last = 0, v;
	int k = 0;

	if (proc_text(pid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	if (!(l = strstr(buf, "\nNSpid:")))
		return 0;
	/* one PID a namespace, ours first, the innermost last */
	for (l += 7; *l != '\n' && *l; l = e, k++) {
		v = strtol(l, &e, 10);
		if (e == l || v <= 0 || v > INT32_MAX)
			break;
		last = v;
	}
	return k > 1 ? (pid_t)last : 0;
}
