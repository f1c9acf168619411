/* ELF objects through elfutils' libelf: function symbols, load bias,
 * dependencies. */
#ifndef LMT_ELFSYM_H
#define LMT_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Called per defined function symbol; addr is st_value + bias. */
typedef void (*elfsym_cb)(void *ctx, uint64_t addr, const char *name);

/* Iterates .symtab, or .dynsym when the object is stripped. Returns the
 * number of symbols, or -1 if the file is not a readable ELF object. */
long elfsym_funcs(const char *path, uint64_t bias, elfsym_cb cb, void *ctx);
/* Load bias of the object mapped at lo from file offset off. 0 or -1. */
int elfsym_bias(const char *path, uint64_t lo, uint64_t off, uint64_t *bias);
/* File offset of a defined function symbol. 0 or -1. */
int elfsym_offset(const char *path, const char *name, uint64_t *off);
/* The program interpreter (PT_INTERP: the dynamic linker) into buf,
 * NUL-terminated. 0, or -1 if there is none. */
int elfsym_interp(const char *path, char *buf, size_t len);
/* Calls cb(ctx, 0, soname) for each DT_NEEDED entry. 0 or -1. */
int elfsym_needed(const char *path, elfsym_cb cb, void *ctx);

#endif
