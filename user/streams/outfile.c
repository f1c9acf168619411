/* Output files created safely (see streams/outfile.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "streams/outfile.h"

static int fail(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

#define ERR(...) fail(err, len, __VA_ARGS__)

/* Who may own what we write through: root, us, and under sudo the user
 * who asked (SUDO_UID, set by sudo itself), whose files these become. */
static uid_t invoker(void)
{
	const char *s = getenv("SUDO_UID");
	char *e;
	unsigned long v;

	if (geteuid() != 0 || !s || !*s)
		return 0;
	v = strtoul(s, &e, 10);
	return *e || v > 0x7fffffffUL ? 0 : (uid_t)v;
}

static int trusted_uid(uid_t u)
{
	return u == 0 || u == geteuid() || u == invoker();
}

/* dir (resolved) and each directory above it: owned by a trusted user, and
 * writable by nobody else unless sticky. */
static int dir_trusted(const char *dir, char *err, size_t len)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (;;) {
		struct stat st;
		char *slash;

		if (stat(p, &st))
			return ERR("cannot use directory %s: %s", p, strerror(errno));
		if (!trusted_uid(st.st_uid))
			return ERR("directory %s belongs to another user (uid %u): "
				   "not writing there", p, (unsigned)st.st_uid);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return ERR("directory %s is writable by other users and not "
				   "sticky: not writing there (a file could be "
				   "swapped under us)", p);
		if (!strcmp(p, "/"))
			return 0;
		slash = strrchr(p, '/');
		if (slash == p)
			slash[1] = 0;
		else
			*slash = 0;
	}
}

/* The resolved directory of path and its last component. */
static int split(const char *path, char *dir, char *base, char *err,
		 size_t len)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (!*path)
		return ERR("empty output file name");
	if (strlen(path) >= PATH_MAX)
		return ERR("output file name too long");
	if (path[strlen(path) - 1] == '/')
		return ERR("%s is a directory name, not a file", path);
	strcpy(a, path);
	strcpy(b, path);
	if (!realpath(dirname(a), dir))
		return ERR("cannot write %s: %s", path, strerror(errno));
	snprintf(base, NAME_MAX + 1, "%s", basename(b));
	if (!strcmp(base, ".") || !strcmp(base, ".."))
		return ERR("%s is a directory name, not a file", path);
	return 0;
}

/* What is at dir/base now: 0 nothing, 1 a regular file, 2 a device or
 * FIFO to write as it is; -1 with err for what is refused. */
static int existing(int dfd, const char *path, const char *base, int force,
		    int dev_ok, char *err, size_t len)
{
	struct stat st;

	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : ERR("cannot write %s: %s", path,
						  strerror(errno));
	if (S_ISLNK(st.st_mode))
		return ERR("%s is a symbolic link: not followed", path);
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
		/* Another user's FIFO in /tmp would read the stream. */
		if (!dev_ok || !trusted_uid(st.st_uid))
			return ERR("%s is a %s %s: not writing there", path,
				   trusted_uid(st.st_uid) ? "device or FIFO, not a file" :
							    "device or FIFO of another user,",
				   dev_ok ? "" : "(a sidecar is a file)");
		return 2;
	}
	if (S_ISDIR(st.st_mode))
		return ERR("%s is a directory", path);
	if (!S_ISREG(st.st_mode))
		return ERR("%s exists and is not a regular file", path);
	if (!force)
		return ERR("%s exists (-f to overwrite it)", path);
	return 1;
}

static int open_dir(const char *path, char *dir, char *base, char *err,
		    size_t len)
{
	int dfd;

	if (split(path, dir, base, err, len) || dir_trusted(dir, err, len))
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ERR("cannot write %s: %s", path, strerror(errno));
	return dfd;
}

int outfile_check(const char *path, int force, int dev_ok, char *err,
		  size_t len)
{
	char dir[PATH_MAX], base[NAME_MAX + 1];
	int dfd = open_dir(path, dir, base, err, len), r;

	if (dfd < 0)
		return -1;
	r = existing(dfd, path, base, force, dev_ok, err, len);
	if (r >= 0 && r != 2 && faccessat(dfd, ".", W_OK, AT_EACCESS))
		r = ERR("cannot write %s: %s", path, strerror(errno));
	close(dfd);
	return r < 0 ? -1 : 0;
}

/* Is the directory the invoker's own (their home, a clone of theirs)? */
static int dir_owner_is_invoker(int dfd)
{
	struct stat st;

	return !fstat(dfd, &st) && st.st_uid == invoker();
}

static void own_by_invoker(int fd)
{
	const char *g = getenv("SUDO_GID");
	gid_t gid = g && *g ? (gid_t)strtoul(g, NULL, 10) : (gid_t)-1;

	if (fchown(fd, invoker(), gid))
		return; /* stays root's: readable with sudo */
}

int outfile_is_device(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

int outfile_create(const char *path, int force, int dev_ok, int *regular,
		   char *err, size_t len)
{
	char dir[PATH_MAX], base[NAME_MAX + 1];
	int dfd = open_dir(path, dir, base, err, len), fd = -1, r;

	if (dfd < 0)
		return -1;
	r = existing(dfd, path, base, force, dev_ok, err, len);
	if (r == 2) {
		/* Non-blocking: a FIFO with no reader is an error, not a hang;
		 * then what was opened is checked again, in case it changed. */
		struct stat st;

		fd = openat(dfd, base, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || !(S_ISCHR(st.st_mode) ||
						    S_ISFIFO(st.st_mode)) ||
				!trusted_uid(st.st_uid) ||
				fcntl(fd, F_SETFL, 0))) {
			close(fd);
			fd = -1;
			errno = EPERM;
		}
		*regular = 0;
	} else if (r >= 0) {
		/* A new inode: never written through a link to another. */
		if (r == 1 && unlinkat(dfd, base, 0) && errno != ENOENT) {
			close(dfd);
			return ERR("cannot replace %s: %s", path, strerror(errno));
		}
		fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, 0600);
		*regular = 1;
		/* Under sudo, the profile is the asking user's to read. */
		if (fd >= 0 && invoker() && dir_owner_is_invoker(dfd))
			own_by_invoker(fd);
	}
	if (r >= 0 && fd < 0)
		ERR("cannot write %s: %s", path,
		    errno == EEXIST ? "it appeared while we created it" :
		    errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
	close(dfd);
	return fd;
}

int outfile_replace(const char *path, const void *data, size_t n, char *err,
		    size_t len)
{
	char dir[PATH_MAX], base[NAME_MAX + 1], tmp[NAME_MAX + 32];
	int dfd = open_dir(path, dir, base, err, len), fd = -1, r = -1;
	const char *p = data;

	if (dfd < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), ".%.*s.%d.tmp", NAME_MAX - 20, base,
		 (int)getpid());
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0) {
		ERR("cannot write %s/%s: %s", dir, tmp, strerror(errno));
		goto out;
	}
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ERR("cannot write %s: %s", path,
			    w < 0 ? strerror(errno) : "short write");
			goto out;
		}
		p += w;
		n -= (size_t)w;
	}
	if (invoker() && dir_owner_is_invoker(dfd))
		own_by_invoker(fd);
	if (fsync(fd) || renameat(dfd, tmp, dfd, base)) {
		ERR("cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (r)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return r;
}

int outfile_dir(const char *path, int create, char *err, size_t len)
{
	char p[PATH_MAX], dir[PATH_MAX], base[NAME_MAX + 1];
	struct stat st;
	size_t l = strlen(path);
	int dfd;

	if (!l || l >= PATH_MAX)
		return ERR("bad output directory name");
	snprintf(p, sizeof(p), "%s", path);
	while (l > 1 && p[l - 1] == '/')
		p[--l] = 0;
	if (!lstat(p, &st)) {
		if (S_ISLNK(st.st_mode))
			return ERR("%s is a symbolic link: not followed", p);
		if (!S_ISDIR(st.st_mode))
			return ERR("%s is not a directory", p);
		if (!realpath(p, dir) || dir_trusted(dir, err, len))
			return realpath(p, dir) ? -1 :
			       ERR("cannot use directory %s: %s", p, strerror(errno));
		if (access(dir, W_OK | X_OK))
			return ERR("cannot write in %s: %s", p, strerror(errno));
		return 0;
	}
	if (errno != ENOENT)
		return ERR("cannot use directory %s: %s", p, strerror(errno));
	/* A new directory: where it goes must be trusted, as for a file. */
	dfd = open_dir(p, dir, base, err, len);
	if (dfd < 0)
		return -1;
	if (faccessat(dfd, ".", W_OK, AT_EACCESS)) {
		close(dfd);
		return ERR("cannot create %s: %s", p, strerror(errno));
	}
	if (create) {
		if (mkdirat(dfd, base, 0700)) {
			close(dfd);
			return ERR("cannot create %s: %s", p, strerror(errno));
		}
		if (invoker() && dir_owner_is_invoker(dfd)) {
			int fd = openat(dfd, base, O_RDONLY | O_DIRECTORY |
					O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0) {
				own_by_invoker(fd);
				close(fd);
			}
		}
	}
	close(dfd);
	return 0;
}
