/* Target files, by identity (target/tfile.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "target/tfile.h"
#include "util/hash.h"
#include "util/knobs.h"

static int from_fd(struct tfile *f, int fd)
{
	struct stat st;

	if (fstat(fd, &st)) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	f->fd = fd;
	f->dev = (uint64_t)st.st_dev;
	f->ino = (uint64_t)st.st_ino;
	f->uid = st.st_uid;
	f->mode = st.st_mode;
	f->size = (uint64_t)st.st_size;
	snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", fd);
	return 0;
}

/* btrfs: maps give a file's filesystem's device, stat its subvolume's
 * (both anonymous, major 0); the inode alone is checked there. */
static int btrfs_subvolume(const struct tfile *f, const struct pmap *m)
{
	struct statfs sf;

	return m->dev_major == 0 && major(f->dev) == 0 && !fstatfs(f->fd, &sf) &&
	       sf.f_type == BTRFS_SUPER_MAGIC;
}

/* A stop point for tests (tests/hostile_files.bats): with LMT_TEST_STOP_AT
 * set to a file's name, the tracer stops itself (SIGSTOP) once, right
 * after it opened a mapping of that file, so that a test can replace the
 * mapping between that open and every use of the file. */
static void test_stop(const struct pmap *m)
{
	static int done;
	const char *name = knobs.test_stop_at, *b = strrchr(m->path, '/');

	if (!name || done || !b || strcmp(b + 1, name))
		return;
	done = 1;
	raise(SIGSTOP);
}

int tfile_open(struct tfile *f, pid_t pid, const struct pmap *m)
{
	int fd, r;

	f->fd = -1;
	fd = pmap_file_open(pid, m, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if ((r = from_fd(f, fd)))
		return r;
	if (f->ino != m->inode || (f->dev != (uint64_t)makedev(m->dev_major, m->dev_minor) &&
				   !btrfs_subvolume(f, m))) {
		tfile_close(f);
		return -ESTALE;
	}
	test_stop(m);
	return 0;
}

int tfile_open_path(struct tfile *f, const char *path)
{
	int fd;

	f->fd = -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return fd < 0 ? -errno : from_fd(f, fd);
}

int tfile_trusted(const struct tfile *f)
{
	return f->fd >= 0 && f->uid == 0 && !(f->mode & (S_IWGRP | S_IWOTH));
}

uint64_t tfile_key(const struct tfile *f)
{
	/* mixed, not "| 1": inodes 2n and 2n + 1 stay apart */
	const uint64_t k = hash_u64(f->ino ^ (uint64_t)f->dev << 40);

	return k ? k : 1;
}

void tfile_close(struct tfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->path[0] = 0;
}

char *tfile_name(const struct tfile *f, char *buf, size_t len)
{
	ssize_t n = len ? readlink(f->path, buf, len - 1) : -1;

	if (n <= 0)
		snprintf(buf, len, "%s", f->path);
	else
		buf[n] = 0;
	return buf;
}
