/* /proc parsing and target memory reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "proc.h"

int pmaps_load(pid_t pid, struct pmaps *m)
{
	char fn[64], *line = NULL;
	size_t cap = 0, lcap = 0;
	FILE *f;

	m->v = NULL;
	m->n = 0;
	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
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

void pmap_file_path(pid_t pid, const struct pmap *m, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->lo, m->hi);
}

int pmap_is_file(const struct pmap *m)
{
	return m->inode != 0 && m->path[0] == '/';
}

int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

	return n < 0 ? -errno : n;
}

int proc_exists(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}
