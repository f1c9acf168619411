/* A process's own page table entries, read for their soft-dirty bits
 * (bpf/ptscan.bpf.c): which pages were not written since the bits were
 * last cleared, where /proc/PID/pagemap calls a whole mapping written
 * because it is new or grew (VM_SOFTDIRTY). Used by heap snapshots
 * (heap/dirty.c). x86-64, 4-level page tables, a kernel with the task
 * iterator's tid (6.1) and the mm's TLB generation; elsewhere it says why
 * not and the caller keeps pagemap's word. */
#ifndef LMT_PROBES_PTSCAN_H
#define LMT_PROBES_PTSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ptscan;

/* The scan of pid's tables, or NULL with why (the BPF object not loaded,
 * the direct map not found, the kernel without what it needs). */
struct ptscan *ptscan_open(pid_t pid, char *why, size_t len);
/* From addr (page-aligned), n pages (at most PT_RUN): unw[i] set to 1
 * for each page whose entry says unwritten since the last clear (present,
 * not special, write-protected, not soft-dirty), else left as it is. The
 * first claimed page's frame is checked against pagemap's: a walk that
 * disagrees turns the scan off for good. 0, -ESTALE (the tables changed
 * during the run: nothing claimed), or -errno (off: p->why says). */
int ptscan_unwritten(struct ptscan *p, uint64_t addr, size_t n, uint8_t *unw);
/* Pages claimed unwritten so far (0 for NULL). */
uint64_t ptscan_claimed(const struct ptscan *p);
const char *ptscan_why(const struct ptscan *p); /* "" while on */
void ptscan_close(struct ptscan *p);

#endif
