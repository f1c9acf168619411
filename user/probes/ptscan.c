/* A process's own page table entries for their soft-dirty bits
 * (probes/ptscan.h; the program: bpf/ptscan.bpf.c). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscan_def.h"
#include "ptscan.skel.h"
#include "probes/physmem.h"
#include "probes/ptscan.h"
#include "target/proc.h"

#define PM_PFN ((1ull << 55) - 1)
#define PM_PRESENT (1ull << 63)

struct ptscan {
	struct ptscan_bpf *skel;
	struct bpf_link *link;
	int pm;            /* its pagemap: the walk's check */
	uint64_t claimed;
	char why[160];     /* off: why */
};

static int quiet(enum libbpf_print_level l, const char *f, va_list a)
{
	return 0;
}

/* A number at the start of a small file, 0 if none. */
static long first_number(int fd)
{
	char b[32];
	ssize_t n = fd < 0 ? -1 : read(fd, b, sizeof(b) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	return strtol(b, NULL, 10);
}

static int sysctl_on(const char *path)
{
	return first_number(open(path, O_RDONLY | O_CLOEXEC)) != 0;
}

/* KSM has merged pages of pid (/proc/PID/ksm_merging_pages, 6.1). */
static int ksm_merged(pid_t pid)
{
	return first_number(proc_openat(pid, "ksm_merging_pages", O_RDONLY)) > 0;
}

/* Reads the iterator of link l to its end: 0 or -errno. */
static int run_link(struct bpf_link *l)
{
	char buf[64];
	ssize_t r;
	int fd = bpf_iter_create(bpf_link__fd(l));

	if (fd < 0)
		return -errno;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return r < 0 ? -EIO : 0;
}

/* The iterator over the mappings of thread tid (6.1), or NULL (errno). */
static struct bpf_link *attach_tid(struct ptscan_bpf *skel, pid_t tid)
{
	union bpf_iter_link_info li = { .task.tid = (uint32_t)tid };
	LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &li, .link_info_len = sizeof(li));

	return bpf_program__attach_iter(skel->progs.pt_scan, &o);
}

/* The direct map's base, found once on our own tables (bpf/po.h): the
 * base must read, through them, a word of ours. 0, 1 (not found), or
 * -errno (the iterator over our own thread could not run). */
static int find_base(struct ptscan_bpf *skel)
{
	volatile uint64_t word = 0x6c6d74707473ULL << 16 ^ (uint64_t)getpid() << 1 ^ 1;
	struct bpf_link *l;
	int e;

	skel->bss->pt_self = (uint32_t)getpid();
	skel->bss->pt_cva = (uint64_t)(uintptr_t)&word;
	skel->bss->pt_cword = word;
	if (!(l = attach_tid(skel, getpid())))
		return -errno;
	e = run_link(l);
	bpf_link__destroy(l);
	skel->bss->pt_self = 0;
	return e ? e : !skel->bss->pt_po;
}

struct ptscan *ptscan_open(pid_t pid, char *why, size_t len)
{
	const unsigned bits = physmem_bits();
	const uint64_t top = physmem_top();
	libbpf_print_fn_t old;
	struct ptscan *p;
	int err;

	if (!bits || !top) {
		snprintf(why, len, "%s", !bits ? "5-level page tables, or no address sizes "
			 "in /proc/cpuinfo" : "no System RAM in /proc/iomem");
		return NULL;
	}
	/* NUMA balancing's hinting faults make entries of a flagged mapping
	 * writable without the bit, all along; KSM's merges drop it */
	if (sysctl_on("/proc/sys/kernel/numa_balancing")) {
		snprintf(why, len, "NUMA balancing is on (kernel.numa_balancing)");
		return NULL;
	}
	if (ksm_merged(pid)) {
		snprintf(why, len, "KSM merged pages of it");
		return NULL;
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		snprintf(why, len, "%s", strerror(ENOMEM));
		return NULL;
	}
	p->pm = proc_openat(pid, "pagemap", O_RDONLY);
	old = libbpf_set_print(quiet);
	p->skel = ptscan_bpf__open();
	err = p->skel ? 0 : errno;
	if (p->skel) {
		p->skel->rodata->pt_mask = ((1ULL << bits) - 1) & ~4095ULL;
		p->skel->rodata->pt_top = top;
		if ((err = -ptscan_bpf__load(p->skel))) {
			ptscan_bpf__destroy(p->skel);
			p->skel = NULL;
		}
	}
	if (p->skel) {
		p->skel->bss->pt_gib = (uint32_t)((top >> 30) + 1);
		p->skel->bss->pt_tgid = (uint32_t)pid;
	}
	if (p->skel && (err = find_base(p->skel)))
		snprintf(why, len, "%s", err > 0 ? "the direct map not found" :
			 "the task iterator by thread could not run (6.1)");
	else if (p->skel && !(p->link = attach_tid(p->skel, pid)))
		snprintf(why, len, "the task iterator by thread: %s (6.1)", strerror(errno));
	else if (!p->skel)
		snprintf(why, len, "its BPF object did not load: %s", strerror(err));
	else if (p->pm < 0)
		snprintf(why, len, "its pagemap: %s", strerror(-p->pm));
	libbpf_set_print(old);
	if (!p->link || p->pm < 0) {
		ptscan_close(p);
		return NULL;
	}
	return p;
}

/* Off for good, said. */
static int off(struct ptscan *p, int err, const char *what)
{
	snprintf(p->why, sizeof(p->why), "%s", what);
	return err;
}

/* One run over [addr, addr + n pages): 0 (the answers in the object's
 * pt_out), 1 if its first claim's frame is not pagemap's, or -errno. */
static int run(struct ptscan *p, uint64_t addr, size_t n)
{
	struct ptscan_bpf__bss *b = p->skel->bss;
	uint64_t f;
	int e;

	b->pt_start = addr;
	b->pt_n = (uint32_t)n;
	b->pt_status = PT_NOTASK;
	b->pt_claimed = 0;
	memset(b->pt_out, 0, n);
	if ((e = run_link(p->link)))
		return off(p, e, "the iterator could not be run");
	switch (b->pt_status) {
	case PT_OK:
		break;
	case PT_MOVED:
		return -ESTALE;
	case PT_NOTASK:
	case PT_NOMM:
		return -ESRCH;
	case PT_NOPO:
		return off(p, -ENODEV, "the direct map not found");
	default:
		return off(p, -ENODEV, "no TLB generation in this kernel's mm");
	}
	if (!b->pt_claimed)
		return 0;
	/* the walk checked: the first page it claims is the frame pagemap
	 * gives (root sees frames); a page moved meanwhile (the target runs
	 * during hpages_verify) differs once */
	if (pread(p->pm, &f, 8, (off_t)(b->pt_addr0 / 4096 * 8)) != 8 || !(f & PM_PRESENT) ||
	    (f & PM_PFN) != b->pt_frame0 / 4096)
		return 1;
	return 0;
}

int ptscan_unwritten(struct ptscan *p, uint64_t addr, size_t n, uint8_t *unw)
{
	struct ptscan_bpf__bss *b;
	int r;

	if (p->why[0])
		return -ENODEV;
	if (!n || n > PT_RUN || (addr & 4095) || addr >= (1ULL << 47) ||
	    n > ((1ULL << 47) - addr) / 4096)
		return -EINVAL;
	if ((r = run(p, addr, n)) == 1 && (r = run(p, addr, n)) == 1)
		return off(p, -ENODEV, "its walk disagreed with pagemap");
	if (r)
		return r;
	b = p->skel->bss;
	for (size_t i = 0; i < n; i++)
		if (b->pt_out[i] == PT_UNWRITTEN)
			unw[i] = 1;
	p->claimed += b->pt_claimed;
	return 0;
}

uint64_t ptscan_claimed(const struct ptscan *p)
{
	return p ? p->claimed : 0;
}

const char *ptscan_why(const struct ptscan *p)
{
	return p->why;
}

void ptscan_close(struct ptscan *p)
{
	if (!p)
		return;
	bpf_link__destroy(p->link);
	ptscan_bpf__destroy(p->skel);
	if (p->pm >= 0)
		close(p->pm);
	free(p);
}
