/* The machine's physical memory, as the page-table readers need it
 * (bpf/direct.h's direct reads, probes/ptscan.c's scan of a process's
 * page tables): a table entry's frame bits and where RAM ends. Root
 * reads both; neither is the target's. */
#ifndef LMT_PROBES_PHYSMEM_H
#define LMT_PROBES_PHYSMEM_H

#include <stdint.h>

/* The CPU's physical address bits, from /proc/cpuinfo; 0 where the
 * page-table readers do not apply (5-level page tables: la57). */
unsigned physmem_bits(void);
/* The end of RAM's physical addresses: the highest end of a top-level
 * "System RAM" range of /proc/iomem (root sees the addresses); 0 if
 * unknown. */
uint64_t physmem_top(void);

#endif
