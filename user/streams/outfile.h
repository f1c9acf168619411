/* Files the tracer writes (the stream, its .info sidecar), created so that
 * a tracer running as root cannot be turned against the machine:
 * - the last component is never followed if it is a symbolic link;
 * - every directory on the way belongs to root, to us, or under sudo to the
 *   user who asked (SUDO_UID), and none is writable by anyone else unless
 *   it is sticky (like /tmp), where a file we create stays ours;
 * - a new file is created mode 0600 (a stream holds addresses and the
 *   source of chunks loaded from strings);
 * - an existing file is replaced only when asked (force), by a new file,
 *   never written through (hard links, another owner's inode);
 * - an existing character device or FIFO (/dev/null, a named pipe) that
 *   belongs to a trusted user is written as it is (never a sidecar), and a
 *   FIFO with no reader is an error, not a hang;
 * - under sudo, a file made in the asking user's own directory is theirs
 *   (still 0600), so they can read their profile without sudo.
 * Checking creates nothing, so a command line is validated whole before
 * any file is touched.
 */
#ifndef LMT_OUTFILE_H
#define LMT_OUTFILE_H

#include <stddef.h>

/* 0 if path could be created now (with force: also replaced), or -1 with a
 * one-line reason in err. Creates nothing. dev_ok: an existing device or
 * FIFO is fine (the stream; not its sidecar). */
int outfile_check(const char *path, int force, int dev_ok, char *err,
		  size_t len);
/* Is path an existing character device or FIFO (written as it is, with
 * no sidecar)? */
int outfile_is_device(const char *path);
/* Creates path (see above) and returns its descriptor (O_CLOEXEC), or -1
 * with a one-line reason in err. *regular says whether it is a regular file
 * (a sidecar goes beside regular files only). */
int outfile_create(const char *path, int force, int dev_ok, int *regular,
		   char *err, size_t len);
/* Replaces path, a file this process created, with data, atomically (a
 * new file renamed over it): readers see the old or the new text. 0 or -1
 * with err. */
int outfile_replace(const char *path, const void *data, size_t n, char *err,
		    size_t len);

/* A directory of streams (-o DIR): 0 if path is one we may write in, or
 * could be created (create: it is, mode 0700), under the rules above; -1
 * with err. */
int outfile_dir(const char *path, int create, char *err, size_t len);

#endif
