/* The page-table scan's shared facts (bpf/ptscan.bpf.c, user/probes/ptscan.c):
 * data only. */
#ifndef LMT_BPF_PTSCAN_DEF_H
#define LMT_BPF_PTSCAN_DEF_H

/* Pages one run of the scan looks at (a power of two: 128 MiB of 4 KiB
 * pages); its answer is one byte a page. */
#define PT_RUN (1u << 15)

/* A page's answer. */
#define PT_UNCLAIMED 0  /* nothing said (not present, a special or zero
			 * page, writable, soft-dirty, or not looked at) */
#define PT_UNWRITTEN 1  /* present, write-protected and not soft-dirty:
			 * not written since the bits were last cleared */

/* A run's status (pt_status). */
#define PT_OK 0
#define PT_NOTASK 1     /* the iterator met no task of the process */
#define PT_NOMM 2       /* the task has no mm (it is exiting) */
#define PT_NOPO 3       /* the direct map's base not found */
#define PT_MOVED 4      /* the mm's TLB generation moved during the run:
			 * its answers are void */
#define PT_NOGEN 5      /* no TLB generation in this kernel's mm */

#endif
