/* Spawn: -- COMMAND, started once the tracer is ready, and waited for
 * like strace and time do: never left behind, its status ours. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <grp.h>
#include <sys/wait.h>

#include "session/session.h"

/* What execvp would run: the first PATH entry with an executable file. */
/* out: PATH_MAX bytes, as realpath wants. */
int resolve_cmd(const char *name, char *out)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(name, '/'))
		return realpath(name, out) && !access(out, X_OK) ? 0 : -1;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t l = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, path, name);
		if (!access(buf, X_OK) && realpath(buf, out))
			return 0;
		path += l + (path[l] == ':');
	}
	return -1;
}

/* The command runs as the tracer does (root), as under strace, perf and
 * gdb, unless -u USER names another: then it runs with USER's IDs and
 * groups (initgroups), as strace -u does. */
pid_t start_child(const struct topts *o, int *gate)
{
	char **cmd = o->cmd;
	int p[2];
	pid_t c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	c = fork();
	if (c < 0)
		return -1;
	if (c == 0) {
		char b;
		close(p[1]);
		/* Wait until the tracer is ready; EOF means it gave up. */
		if (read(p[0], &b, 1) != 1)
			_exit(127);
		if (o->user && (initgroups(o->user, o->gid) || setgid(o->gid) ||
				setuid(o->uid))) {
			err1("cannot run %s as %s: %s", cmd[0], o->user, strerror(errno));
			_exit(127);
		}
		execvp(cmd[0], cmd);
		err1("cannot run %s: %s", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*gate = p[1];
	return c;
}

void forward_signal(struct tr *t)
{
	if (forward_sig && t->o->cmd && !t->child_done) {
		kill(t->probes.cmd_pid, forward_sig);
		forward_sig = 0;
	}
}

/* Waits for the command, passing on the signals sent to us alone, like
 * strace and time: it is never left behind. */
void wait_child(struct tr *t)
{
	while (!t->child_done) {
		int status;
		pid_t r;

		forward_signal(t);
		/* Not a blocking wait: a signal that came just before it would
		 * be passed on only when the command ended by itself. */
		r = waitpid(t->probes.cmd_pid, &status, WNOHANG);
		if (r == t->probes.cmd_pid) {
			t->child_done = 1;
			t->child_status = status;
		} else if (r < 0 && errno != EINTR) {
			break;
		} else {
			usleep(20000);
		}
	}
}

/* The command's status as a shell gives it: its exit code, or 128 + the
 * signal that killed it. */
int child_rc(const struct tr *t)
{
	if (WIFEXITED(t->child_status))
		return WEXITSTATUS(t->child_status);
	if (WIFSIGNALED(t->child_status))
		return 128 + WTERMSIG(t->child_status);
	return LMT_ERR;
}

void cmd_program(const char *exe, char *bin)
{
	char line[PATH_MAX];
	FILE *f = fopen(exe, "re");
	int r = -1;

	if (f && fgets(line, sizeof(line), f) && !strncmp(line, "#!", 2)) {
		char *s = line + 2;
		s += strspn(s, " \t");
		s[strcspn(s, " \t\n")] = 0;
		if (!strcmp(s, "/usr/bin/env")) {
			char *a = s + strlen(s) + 1;
			a += strspn(a, " \t");
			a[strcspn(a, " \t\n")] = 0;
			s = a;
		}
		r = resolve_cmd(s, bin);
	}
	if (f)
		fclose(f);
	if (r)
		snprintf(bin, PATH_MAX, "%s", exe);
}
