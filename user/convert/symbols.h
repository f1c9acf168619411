/* C symbols of a traced process, as memprof symbol records. (Prototype and
 * trace records come from BPF; see convert/events.c.) */
#ifndef LMT_SYMBOLS_H
#define LMT_SYMBOLS_H

#include <sys/types.h>

#include "format/memprof.h"
#include "util/u64set.h"

typedef void (*sym_emit_fn)(void *ctx, const struct mp_sym *s);

struct cobj {
	uint64_t dev, inode;
	uint64_t lo, hi; /* executable range */
	uint64_t bias;
	char name[64];   /* basename, for synthetic names */
};

struct csym {
	uint64_t addr;
	char *name;
};

struct syms {
	pid_t pid;
	sym_emit_fn emit;
	void *ctx;
	struct cobj *obj;
	size_t nobj;
	struct u64set named; /* addresses some record names exactly */
	unsigned long nsyms;
	unsigned long skipped; /* objects over elfsym's caps, or whose file
				* tfile_open refused: no names */
	struct csym *log; /* every record emitted, in order */
	size_t nlog, caplog;
	struct u64map byaddr; /* address -> its last name in log (index + 1) */
};

void syms_init(struct syms *s, pid_t pid, sym_emit_fn emit, void *ctx);
/* Emits records for executable objects mapped since the last scan. */
int syms_scan(struct syms *s);
/* Makes sure a record names addr exactly (a C function about to be used
 * as an event location): the stripped objects' dynamic symbols miss the
 * VM's static functions, and the standard parser would otherwise name
 * them after the nearest lower symbol. Such addresses get "object+0xVADDR"
 * (usable with addr2line and a debug file). */
void syms_cfunc(struct syms *s, uint64_t addr);
/* Emits again, to fn, every record emitted so far (a stream that starts
 * after them). */
void syms_replay(const struct syms *s, sym_emit_fn fn, void *ctx);
/* The name the stream gives addr (an ELF name, object+0xVADDR), or NULL. */
const char *syms_name(const struct syms *s, uint64_t addr);
void syms_free(struct syms *s);

#endif
