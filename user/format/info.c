/* The stream's sidecar (see format/info.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/esc.h"
#include "format/info.h"

/* Keys and values are one line each, escaped (util/esc.h): a name the target
 * chose (comm, exe) can neither break a line nor drive a terminal that
 * shows the file. Escaped text escapes to itself, so a value read back
 * (or a sidecar someone else wrote) goes through the same rule. */
static void clean(char *dst, size_t cap, const char *s)
{
	esc_cstr(dst, cap, s);
}

size_t info_format(const struct info *in, char *buf, size_t len)
{
	char exe[ESC_MAX(sizeof(in->exe))], state[ESC_MAX(sizeof(in->state))];
	char end[ESC_MAX(sizeof(in->end))], comm[ESC_MAX(sizeof(in->comm))], when[64] = "", vm[16] = "all", parent[16] = "";
	const time_t t = (time_t)in->start;
	struct tm tm;
	int n;

	clean(exe, sizeof(exe), in->exe);
	clean(state, sizeof(state), in->state);
	clean(end, sizeof(end), in->end);
	clean(comm, sizeof(comm), in->comm);
	if (in->vm >= 0)
		snprintf(vm, sizeof(vm), "%d", in->vm);
	if (in->parent > 0)
		snprintf(parent, sizeof(parent), "%d", in->parent);
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(buf, len,
		     INFO_MAGIC "\n"
		     "version: %s\n"
		     "pid: %d\n"
		     "parent: %s\n"
		     "comm: %s\n"
		     "exe: %s\n"
		     "vm: %s\n"
		     "vms: %u\n"
		     "start: %.6f %s\n"
		     "duration: %.6f\n"
		     "state: %s\n"
		     "end: %s\n"
		     "events: %" PRIu64 "\n"
		     "lost: %" PRIu64 "\n"
		     "lost_symbols: %" PRIu64 "\n"
		     "lost_vms: %" PRIu64 "\n"
		     "in_flight: %" PRIu64 "\n"
		     "vms_refused: %" PRIu64 "\n"
		     "vm_candidates_unchecked: %" PRIu64 "\n"
		     "files_skipped: %" PRIu64 "\n"
		     "traces_over_budget: %" PRIu64 "\n",
		     in->version, in->pid, parent, comm, exe, vm, in->vms,
		     in->start, when,
		     in->duration, state, end, in->events, in->lost, in->lost_sym,
		     in->lost_vm, in->in_flight, in->vms_refused, in->vms_unchecked,
		     in->files_skipped, in->traces_budget);
	if (n >= 0 && in->nspid > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "nspid: %d\n", in->nspid);
	if (n >= 0 && in->duty > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "duty: %g\nsampled: %.6f\n", in->duty,
			      in->sampled);
	return n < 0 ? 0 : (size_t)n;
}

static int u64_of(const char *v, uint64_t *out)
{
	char *e;

	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &e, 10);
	return errno || *e ? -1 : 0;
}

/* One line's key (line) and value v into out: 0, or -1 if the value is
 * not one the key takes. Keys this luamemtrace does not know are passed
 * over (a later version's). */
static int info_field(struct info *out, const char *line, const char *v)
{
	uint64_t x = 0;

#define U(key, field) else if (!strcmp(line, key)) { if (u64_of(v, &x)) return -1; out->field = x; }
#define S(key, field) else if (!strcmp(line, key)) clean(out->field, sizeof(out->field), v);
	if (0) {}
	U("events", events) U("lost", lost)
	U("lost_symbols", lost_sym) U("lost_vms", lost_vm)
	U("in_flight", in_flight)
	U("vms_refused", vms_refused)
	U("vm_candidates_unchecked", vms_unchecked)
	U("files_skipped", files_skipped)
	U("traces_over_budget", traces_budget)
	S("version", version) S("exe", exe) S("state", state)
	S("end", end) S("comm", comm)
	else if (!strcmp(line, "vm")) {
		if (!strcmp(v, "all"))
			out->vm = -1;
		else if (u64_of(v, &x) || x > INT_MAX)
			return -1;
		else
			out->vm = (int)x;
	} else if (!strcmp(line, "parent")) {
		if (!*v)
			out->parent = 0;
		else if (u64_of(v, &x) || x > INT_MAX)
			return -1;
		else
			out->parent = (int)x;
	}
	else if (!strcmp(line, "pid") || !strcmp(line, "nspid")) {
		if (u64_of(v, &x) || x > INT_MAX)
			return -1;
		*(line[0] == 'p' ? &out->pid : &out->nspid) = (int)x;
	} else if (!strcmp(line, "vms")) {
		if (u64_of(v, &x) || x > UINT32_MAX)
			return -1;
		out->vms = (unsigned)x;
	} else if (!strcmp(line, "duty") || !strcmp(line, "sampled")) {
		double d = strtod(v, NULL);
		if (!(d >= 0 && d < 1e12))
			return -1;
		*(line[0] == 'd' ? &out->duty : &out->sampled) = d;
	} else if (!strcmp(line, "start") ||
		   !strcmp(line, "duration")) {
		/* !(in range): NaN compares false. */
		double d = strtod(v, NULL);
		if (!(d >= 0 && d < 1e12))
			return -1;
		*(line[0] == 's' ? &out->start : &out->duration) = d;
	}
#undef U
#undef S
	return 0;
}

int info_parse(const char *text, size_t n, struct info *out)
{
	const char *p = text, *end = text + n;
	size_t ml = strlen(INFO_MAGIC);

	memset(out, 0, sizeof(*out));
	out->vm = -1;
	if (n < ml || memcmp(text, INFO_MAGIC, ml) || (n > ml && text[ml] != '\n'))
		return -1;
	p += ml;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[INFO_LINE_MAX], *v;

		if (l >= sizeof(line))
			return -1;
		if (l) {
			memcpy(line, p, l);
			line[l] = 0;
			v = strstr(line, ": ");
			if (v) {
				*v = 0;
				v += 2;
				if (info_field(out, line, v))
					return -1;
			}
		}
		p += l + 1;
	}
	/* The scale, checked here, before any use: finite, at most the cap. */
	if (out->duty > 100 || (out->duty > 0 && out->sampled > 0 &&
				out->duration > out->sampled * INFO_SCALE_MAX))
		return -1;
	return out->state[0] ? 0 : -1;
}

int info_load(const char *stream, struct info *out)
{
	char path[PATH_MAX], buf[INFO_FILE_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s" INFO_SUFFIX, stream) >= (int)sizeof(path))
		return 0;
	/* A FIFO planted there must not hang the reader: a file or nothing. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n == (ssize_t)sizeof(buf))
		return -1;
	return info_parse(buf, (size_t)n, out) ? -1 : 1;
}
