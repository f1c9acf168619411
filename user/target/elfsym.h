/* ELF objects through elfutils' libelf, read from a descriptor with
 * pread (ELF_C_READ: no mapping a target could truncate under us, so no
 * SIGBUS), within target/tfile.h's caps: function symbols, load bias,
 * dependencies. */
#ifndef LMT_ELFSYM_H
#define LMT_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Called per defined function symbol; addr is st_value + bias. */
typedef void (*elfsym_cb)(void *ctx, uint64_t addr, const char *name);

/* elfsym_funcs: the object breaks a cap (its symbols all skipped). */
#define ELFSYM_OVER_CAP (-2)

/* Iterates the function symbols of .symtab, or of .dynsym when the object
 * is stripped. Returns their number; -1 if fd is not a readable ELF
 * object; ELFSYM_OVER_CAP, cb never called and *why saying which cap, if
 * the table, its names or their number is over target/tfile.h's caps. */
long elfsym_funcs(int fd, uint64_t bias, elfsym_cb cb, void *ctx, const char **why);
/* Load bias of the object mapped at lo from file offset off. 0 or -1. */
int elfsym_bias(int fd, uint64_t lo, uint64_t off, uint64_t *bias);
/* File offset of a defined function symbol. 0 or -1. */
int elfsym_offset(int fd, const char *name, uint64_t *off);
/* The program interpreter (PT_INTERP: the dynamic linker) into buf,
 * NUL-terminated. 0, or -1 if there is none. */
int elfsym_interp(int fd, char *buf, size_t len);
/* Calls cb(ctx, 0, soname) for each DT_NEEDED entry. 0 or -1. */
int elfsym_needed(int fd, elfsym_cb cb, void *ctx);

#endif
