/* A stream's facts, in a sidecar beside it (FILE.info): what the standard
 * stream has no room for, so that `report` can tell a lossy or unfinished
 * stream from a complete one, and views can label streams. Text, one
 * "key: value" per line after a first line naming the format; readers
 * ignore keys they do not know. The tracer writes it when tracing starts
 * (state: running) and replaces it when tracing ends, so a tracer that
 * died leaves "running" behind.
 */
#ifndef LMT_INFO_H
#define LMT_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "format/caps.h"

#define INFO_MAGIC "luamemtrace stream info 1"
#define INFO_SUFFIX ".info"


struct info {
	char version[16];
	int pid;
	int parent;        /* the traced process it forked from, 0 if none */
	int nspid;         /* its PID in its own PID namespace (a container),
			    * 0 if in the tracer's: then no nspid line */
	char comm[64];     /* the process's name (escaped: util/esc.h) */
	char exe[1024];    /* the target's executable (escaped) */
	unsigned vms;      /* VMs traced */
	int vm;            /* the VM's number (COMM.PID.vmN.bin); -1: the
			    * stream holds every VM of its process */
	double start;      /* wall clock, seconds since the epoch */
	double duration;   /* seconds */
	char state[16];    /* running, complete, incomplete */
	char end[256];     /* why tracing ended (escaped) */
	uint64_t events;   /* events written */
	uint64_t lost;     /* events lost (ring full, late returns, bad records) */
	uint64_t lost_sym; /* symbol records lost */
	uint64_t lost_vm;  /* new VMs or dlopens whose record was lost */
	uint64_t in_flight; /* allocations in flight when tracing stopped */
	/* Over the caps of docs/security.md, for the whole trace (0 from a
	 * sidecar older than these keys): VMs refused past LMT_VMS_MAX,
	 * candidates the memory scan left unchecked past it, ELF files whose
	 * C names were skipped (target/tfile.h's caps, or not the file maps name),
	 * traces not resolved over a process's budget of reads */
	uint64_t vms_refused, vms_unchecked, files_skipped, traces_budget;
	/* --duty: the percent asked, and the seconds its windows recorded
	 * while the stream was written: it is a sample (0: not sampled) */
	double duty, sampled;
};

/* A sampled stream's counts and bytes, to estimates for its whole run:
 * duration / sampled seconds, 1 if not sampled; at most INFO_SCALE_MAX
 * (info_parse refuses a sidecar saying more). */
static inline double info_scale(const struct info *in)
{
	return in->duty > 0 && in->sampled > 0 && in->duration > in->sampled ?
		       in->duration / in->sampled : 1;
}

/* The sidecar's text: bytes written to buf (NUL-terminated), or the length
 * it needs if len is too small. */
size_t info_format(const struct info *in, char *buf, size_t len);
/* Parses the text of a sidecar: 0, or -1 if it is not one. */
int info_parse(const char *text, size_t n, struct info *out);
/* Reads the sidecar of the stream at path: 1 read, 0 there is none,
 * -1 it is unreadable or malformed. */
int info_load(const char *stream, struct info *out);
/* Events, symbols or VMs were lost: the stream is incomplete. */
static inline int info_lossy(const struct info *in)
{
	return in->lost || in->lost_sym || in->lost_vm;
}

#endif
