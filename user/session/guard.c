/* The guardian (see session/guard.h). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/knobs.h"
#include "util/clock.h"
#include "session/guard.h"
#include "target/inject.h"
#include "target/proc.h"
#include "luamemtrace.h"

/* The map's stops in state (all but expired ones if state is 0), their
 * values read if keep, else zeroed. */
static size_t stops_in(int stops_fd, int state, int keep, struct held **v)
{
	struct held *a = NULL, *na;
	struct lmt_stop k, prev;
	struct lmt_hold h;
	size_t n = 0, cap = 0;
	int first = 1;

	while (!bpf_map_get_next_key(stops_fd, first ? NULL : &prev, &k)) {
		first = 0;
		prev = k;
		if (bpf_map_lookup_elem(stops_fd, &k, &h))
			memset(&h, 0, sizeof(h)); /* going: as before */
		if (state ? h.state != state : h.state == LMT_STOP_EXPIRED)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(na = realloc(a, cap * sizeof(*a))))
				break;
			a = na;
		}
		if (keep)
			a[n].h = h;
		else
			memset(&a[n].h, 0, sizeof(a[n].h));
		a[n++].k = k;
	}
	*v = a;
	return n;
}

size_t guard_stops(int stops_fd, struct held **v)
{
	return stops_in(stops_fd, 0, 0, v);
}

size_t guard_expired(int stops_fd, struct held **v)
{
	size_t n = stops_in(stops_fd, LMT_STOP_EXPIRED, 1, v);

	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(stops_fd, &(*v)[i].k);
	return n;
}

/* -- A process by its identity --------------------------------------------- */

/* The boot-time offset of our time namespace, in ns (/proc/PID/stat
 * shows start times with it added). */
int64_t guard_boot_offset(void)
{
	static int done;
	static int64_t off;
	char line[128];
	FILE *f;

	if (done)
		return off;
	done = 1;
	if (!(f = fopen("/proc/self/timens_offsets", "re")))
		return off;
	while (fgets(line, sizeof(line), f)) {
		long long sec;
		long nsec;

		if (sscanf(line, "boottime %lld %ld", &sec, &nsec) == 2)
			off = (int64_t)sec * 1000000000 + nsec;
	}
	fclose(f);
	return off;
}

int guard_cont(const struct held *s)
{
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)s->k.tgid, 0), r = -1;
	long hz = sysconf(_SC_CLK_TCK);

	if (fd < 0)
		return -1;
	/* Opened first, then its start read: a process started since our
	 * stop (the PID given again) shows a later start. */
	if (!s->h.start || hz <= 0 ||
	    proc_start((pid_t)s->k.tgid, fd) ==
		    (uint64_t)((int64_t)s->h.start + guard_boot_offset()) /
			    (uint64_t)(1000000000 / hz))
		r = syscall(SYS_pidfd_send_signal, fd, SIGCONT, NULL, 0) ? -1 : 0;
	close(fd);
	return r;
}

/* -- Stops of other tracers ------------------------------------------------ */

/* Each tracer's guardian, which holds its stops map at descriptor 3 as
 * long as any stop of it may be held, is named by a record only root can
 * write: LMT_PEERS/GUARDIAN_PID holds the map's ID. A peer's map is one a
 * record names and its guardian holds (/proc/PID/fdinfo/3): a map merely
 * named lmt_stops (anyone may make one where unprivileged BPF is allowed)
 * is never one. */
#define LMT_PEERS_TOP "/run/luamemtrace"
#define LMT_PEERS "peers"

static struct {
	__u32 own; /* our map's ID */
} peers;

static int is_stops(const struct bpf_map_info *in)
{
	return in->type == BPF_MAP_TYPE_HASH &&
	       in->key_size == sizeof(struct lmt_stop) &&
	       in->value_size == sizeof(struct lmt_hold);
}

/* held[i] = 1 where map fd holds a stop of v[i]'s process. */
static void held_in(int fd, const struct held *v, size_t n, uint8_t *held)
{
	struct lmt_stop k, prev;
	struct lmt_hold h;
	int first = 1;

	while (!bpf_map_get_next_key(fd, first ? NULL : &prev, &k)) {
		first = 0;
		prev = k;
		if (bpf_map_lookup_elem(fd, &k, &h) || h.state != LMT_STOP_HELD)
			continue;
		for (size_t i = 0; i < n; i++)
			held[i] |= v[i].k.tgid == k.tgid;
	}
}

/* Is dirfd/name, opened with flags, root's and writable by root alone
 * (no symlink followed)? Its descriptor, or -1. */
static int root_only(int dirfd, const char *name, int flags)
{
	struct stat st;
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & 022) ||
	    ((flags & O_DIRECTORY) ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The records' directory, made if need be: its descriptor, or -1 (errno). */
static int peers_dir(int make)
{
	int top, d;

	if (make)
		mkdir(LMT_PEERS_TOP, 0700);
	if ((top = root_only(AT_FDCWD, LMT_PEERS_TOP, O_RDONLY | O_DIRECTORY)) < 0)
		return -1;
	if (make)
		mkdirat(top, LMT_PEERS, 0700);
	d = root_only(top, LMT_PEERS, O_RDONLY | O_DIRECTORY);
	close(top);
	return d;
}

/* Does process pid hold map id at descriptor 3 (a guardian's)? */
static int holds_map(pid_t pid, __u32 id)
{
	char p[64], buf[1024], *m;

	snprintf(p, sizeof(p), "/proc/%d/fdinfo/3", (int)pid);
	if (proc_small(p, buf, sizeof(buf)) < 0)
		return 0;
	m = strstr(buf, "\nmap_id:");
	return m && strtoul(m + 8, NULL, 10) == id;
}

int guard_record(pid_t guardian, int stops_fd)
{
	struct bpf_map_info in;
	__u32 len = sizeof(in);
	char name[32], tmp[40], txt[32];
	int d, fd, ok;

	memset(&in, 0, sizeof(in));
	if (bpf_obj_get_info_by_fd(stops_fd, &in, &len) || (d = peers_dir(1)) < 0)
		return -1;
	snprintf(name, sizeof(name), "%d", (int)guardian);
	snprintf(tmp, sizeof(tmp), ".%d.tmp", (int)guardian);
	snprintf(txt, sizeof(txt), "%u\n", in.id);
	unlinkat(d, tmp, 0);
	fd = openat(d, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ok = fd >= 0 && write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt);
	if (fd >= 0)
		close(fd);
	ok = ok && !renameat(d, tmp, d, name);
	if (!ok)
		unlinkat(d, tmp, 0);
	close(d);
	return ok ? 0 : -1;
}

/* The guardian's record goes with it. */
static void record_drop(void)
{
	char name[32];
	int d = peers_dir(0);

	if (d < 0)
		return;
	snprintf(name, sizeof(name), "%d", (int)getpid());
	unlinkat(d, name, 0);
	close(d);
}

/* The map a record names, if its guardian holds it: its descriptor
 * (read-only), or -1. */
static int peer_open(int d, const char *name)
{
	LIBBPF_OPTS(bpf_get_fd_by_id_opts, o, .open_flags = BPF_F_RDONLY);
	struct bpf_map_info in;
	__u32 len = sizeof(in), id;
	char txt[32], *end;
	unsigned long pid;
	ssize_t n;
	int fd;

	pid = strtoul(name, &end, 10);
	if (*end || !pid || pid > INT32_MAX ||
	    (fd = root_only(d, name, O_RDONLY)) < 0)
		return -1;
	n = read(fd, txt, sizeof(txt) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	txt[n] = 0;
	id = (__u32)strtoul(txt, &end, 10);
	if (*end != '\n' || !id || id == peers.own || !holds_map((pid_t)pid, id))
		return -1;
	if ((fd = bpf_map_get_fd_by_id_opts(id, &o)) < 0)
		return -1;
	memset(&in, 0, sizeof(in));
	/* The guardian may have ended meanwhile, the ID is not given again:
	 * still the map it held. */
	if (bpf_obj_get_info_by_fd(fd, &in, &len) || in.id != id || !is_stops(&in)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The same for every other tracer's stops map: 0, or -1 (errno) if the
 * records could not be read. */
static int held_by_peers(int own_fd, const struct held *v, size_t n, uint8_t *held)
{
	struct bpf_map_info in;
	struct dirent *de;
	__u32 len;
	DIR *dir;
	int d, fd;

	if (!peers.own) {
		memset(&in, 0, sizeof(in));
		len = sizeof(in);
		if (bpf_obj_get_info_by_fd(own_fd, &in, &len))
			return -1;
		peers.own = in.id;
	}
	if ((d = peers_dir(0)) < 0)
		return errno == ENOENT ? 0 : -1; /* no tracer wrote one */
	if (!(dir = fdopendir(d))) {
		close(d);
		return -1;
	}
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.' || (fd = peer_open(d, de->d_name)) < 0)
			continue;
		held_in(fd, v, n, held);
		close(fd);
	}
	closedir(dir);
	return 0;
}

int guard_release(int stops_fd, struct held *v, size_t n)
{
	uint8_t *held = n ? calloc(n, 1) : NULL;
	int r = 0, err = 0;

	if (n && !held) { /* then nobody's stops are looked at */
		r = -1;
		err = ENOMEM;
	}

	/* Released first, then looked for: of two tracers releasing one
	 * process at once, the later to mark sees the other's mark, so at
	 * least one continues it. SIGCONT before the entry goes: a tracer
	 * killed in between leaves one SIGCONT too many (harmless), never one
	 * too few. v gets each stop's value as it was marked: its SIGCONTs
	 * counted until then, and none after. */
	for (size_t i = 0; i < n; i++) {
		struct lmt_hold h;

		if (bpf_map_lookup_elem(stops_fd, &v[i].k, &h))
			continue; /* gone: nothing to mark */
		v[i].h = h;
		h.state = LMT_STOP_RELEASED;
		bpf_map_update_elem(stops_fd, &v[i].k, &h, BPF_EXIST);
	}
	if (held) {
		held_in(stops_fd, v, n, held); /* ours made since v was read */
		r = held_by_peers(stops_fd, v, n, held);
		err = errno;
	}
	for (size_t i = 0; i < n; i++)
		if (held_first(v, i) && !(held && held[i]))
			guard_cont(&v[i]);
	free(held);
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(stops_fd, &v[i].k);
	errno = err;
	return r;
}

/* -- The watchdog ---------------------------------------------------------- */

/* The tracer's injected calls (target/inject.h), if it makes any. */
static struct inj_rec *inj;

/* The state letter of thread tid of tgid, 0 if unknown (by name: the
 * guardian forgot the tracer's bindings). */
static char thread_state(pid_t tgid, pid_t tid)
{
	char rel[48];

	snprintf(rel, sizeof(rel), "task/%d/stat", (int)tid);
	return proc_state(tgid, rel);
}

/* Does the target of a stop in v[0..n) hold the tracer's registers?
 * 2 if its thread waits on the tracer for them (a ptrace stop: the
 * tracer stalls), 1 if it is making the call (a fork takes long). */
static int inj_held(const struct held *v, size_t n)
{
	if (!inj || __atomic_load_n(&inj->phase, __ATOMIC_SEQ_CST) != INJ_SET)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].k.tgid == (__u32)inj->tgid)
			return thread_state(inj->tgid, inj->tid) == 't' ? 2 : 1;
	return 0;
}

/* The deadline of a stop, in ns (session/guard.h: LMT_HOLD_MAX_MS). */
static uint64_t hold_max_ns(void)
{
	uint64_t ms = LMT_HOLD_MAX_MS;

	if (knobs.test_deadline_ms)
		ms = knobs.test_deadline_ms;
	else
		ms += knobs.test_hold_ms;
	return ms * 1000000;
}

/* Stops held longer than max: marked expired, and their processes
 * continued unless a stop of them is held still (one of ours made later,
 * or a peer's: each ends by its own deadline). */
static void expire(int stops_fd, uint64_t max)
{
	struct held *v;
	size_t n = stops_in(stops_fd, LMT_STOP_HELD, 1, &v), k = 0;
	const uint64_t now = boot_ns();
	uint8_t *held;

	for (size_t i = 0; i < n; i++)
		if (v[i].h.since <= now && now - v[i].h.since > max)
			v[k++] = v[i];
	/* Continued now, the thread would run our registers. Waiting on
	 * the tracer for them, the tracer is ended first (descriptor 4, its
	 * pidfd; the watchdog's loop then puts them back before it
	 * continues it); making our call (a fork), it ends it, the tracer
	 * puts them back: held on. */
	if (k && inj) {
		int h = inj_held(v, k);
		uint64_t age = 0;

		for (size_t i = 0; i < k; i++)
			if (v[i].k.tgid == (__u32)inj->tgid && now - v[i].h.since > age)
				age = now - v[i].h.since;
		if (h == 2)
			syscall(SYS_pidfd_send_signal, 4, SIGKILL, NULL, 0);
		/* a call that lasts past LMT_HOLD_CALL_TIMES deadlines: the
		 * target continued (the thread stops at the call's end for
		 * the tracer, which finds the stop expired) */
		if (h == 2 || (h == 1 && age <= LMT_HOLD_CALL_TIMES * max)) {
			free(v);
			return;
		}
	}
	if (!k || !(held = calloc(k, 1))) {
		free(v);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		struct lmt_hold h = v[i].h;

		h.state = LMT_STOP_EXPIRED;
		bpf_map_update_elem(stops_fd, &v[i].k, &h, BPF_EXIST);
	}
	held_in(stops_fd, v, k, held);
	held_by_peers(stops_fd, v, k, held); /* one not looked at: as none */
	for (size_t i = 0; i < k; i++)
		if (held_first(v, i) && !held[i])
			guard_cont(&v[i]);
	free(held);
	free(v);
}

/* Moves fd to want (want < 3 + 2: the guardian's two). */
static int move_fd(int fd, int want)
{
	if (fd == want)
		return 0;
	return dup2(fd, want) < 0 ? -1 : 0;
}

/* The target of the tracer's injected calls, stopped under a stop of
 * ours in the map (descriptor 3), for inj_recover. */
static void recover_inj(void)
{
	struct lmt_stop k = { .tgid = (__u32)inj->tgid, .seq = UINT32_MAX };
	struct lmt_hold hv = { .state = LMT_STOP_HELD };
	long hz = sysconf(_SC_CLK_TCK);
	int fd;

	/* stopped by someone else: neither stopped nor continued by us */
	if (inj->others_stop) {
		inj_recover(inj);
		return;
	}
	if ((fd = (int)syscall(SYS_pidfd_open, inj->tgid, 0)) < 0)
		return;
	if (hz > 0 && proc_start(inj->tgid, fd) == inj->start) {
		hv.start = (uint64_t)((int64_t)(inj->start * (uint64_t)(1000000000 / hz)) -
				      guard_boot_offset());
		hv.since = boot_ns();
		if (!bpf_map_update_elem(3, &k, &hv, BPF_ANY) &&
		    !syscall(SYS_pidfd_send_signal, fd, SIGSTOP, NULL, 0)) {
			for (int t = 0; t < 1000 && proc_stopped(inj->tgid) == 0; t++)
				nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
			inj_recover(inj);
		}
	}
	close(fd);
}

static void guard_main(int stops_fd, int pidfd)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP,
				       SIGTTIN, SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2 };
	struct pollfd p = { .events = POLLIN };
	const uint64_t max = hold_max_ns();
	int nul;

	setsid(); /* out of the tracer's process group and terminal */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	prctl(PR_SET_NAME, "lmt-guardian");
	/* Keep the map and the pidfd, above 2, then drop everything else:
	 * a probe's descriptor kept here would keep the probe. */
	stops_fd = fcntl(stops_fd, F_DUPFD_CLOEXEC, 10);
	pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 10 + 1);
	if (stops_fd < 0 || pidfd < 0 || move_fd(stops_fd, 3) ||
	    move_fd(pidfd, 4))
		_exit(1);
	syscall(SYS_close_range, 5U, ~0U, 0U);
	proc_forget_all(); /* the tracer's bindings: their descriptors closed */
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > 2)
			close(nul);
	}
	/* A pidfd turns readable when the whole thread group has exited:
	 * its descriptors, and so its probes, are gone by then. Meanwhile,
	 * stops held too long are ended. */
	p.fd = 4;
	for (;;) {
		int r = poll(&p, 1, LMT_HOLD_TICK_MS);

		if (r > 0 || (r < 0 && errno != EINTR))
			break;
		if (!r)
			expire(3, max);
	}
	/* What the target holds of the tracer's, put back under a stop of
	 * ours, released with the tracer's. */
	if (inj && (inj->phase == INJ_SET || inj->child))
		recover_inj();
	/* A stop still held in our own map when we looked (made after we
	 * read it) is released on the next turn. */
	for (int turn = 0; turn < 100; turn++) {
		struct held *v;
		size_t n = guard_stops(3, &v);

		if (!n)
			break;
		guard_release(3, v, n);
		free(v);
	}
	record_drop();
	_exit(0);
}

pid_t guard_start(int stops_fd, struct inj_rec *rec)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	pid_t c;

	if (pidfd < 0)
		return -1;
	c = fork();
	if (c == 0) {
		inj = rec;
		guard_main(stops_fd, pidfd);
	}
	close(pidfd);
	return c;
}
