/* A target's file, held by identity: opened once, through the mapping
 * that names it (/proc/PID/map_files/LO-HI), and checked to be the file
 * that mapping's maps entry names (device and inode). Everything read of
 * it (symbols, code) is read from that descriptor, and probes go on it
 * through /proc/self/fd/N, which the kernel resolves to that very file:
 * a target that maps another file over the range meanwhile changes
 * nothing of what the tracer reads or probes.
 *
 * The caps on what is read of such files (ELF parsing, user/target/elfsym.c)
 * are here too, one place. */
#ifndef LMT_TFILE_H
#define LMT_TFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target/proc.h"

/* -- Caps on target files ------------------------------------------------ */

/* Section headers an ELF object may have: real objects have < 100; debug
 * files and -ffunction-sections objects a few thousand. libelf allocates
 * per section at elf_begin, before anything can be checked. */
#define LMT_ELF_SHNUM_MAX 65536u
/* Program headers: real objects have < 20. */
#define LMT_ELF_PHNUM_MAX 256u
/* A symbol table section's bytes (read into memory whole): 2.8M symbols,
 * above any shared object's (libxul's .symtab: ~1.2M). A sparse file can
 * claim gigabytes for nothing. */
#define LMT_ELF_SYMTAB_MAX (64u << 20)
/* Its string table's bytes, read whole as well. */
#define LMT_ELF_STRTAB_MAX (64u << 20)
/* One function name: long C++ names stay below 4 KiB. */
#define LMT_ELF_NAME_MAX 4096u
/* Function symbols taken from one object: each is a record of every
 * stream and kept for later streams (convert/symbols.c). */
#define LMT_ELF_FUNCS_MAX (1u << 20)
/* Their names' bytes together: what one object may cost in copies. */
#define LMT_ELF_NAMES_MAX (32u << 20)
/* PT_INTERP's and a DT_NEEDED entry's length: a path. */
#define LMT_ELF_PATH_MAX 4096u
/* .dynamic's bytes (DT_NEEDED): a few hundred entries at most. */
#define LMT_ELF_DYNAMIC_MAX (1u << 20)

/* -- The file ------------------------------------------------------------ */

struct tfile {
	int fd;          /* -1: none */
	uint64_t dev, ino; /* st_dev, st_ino: the maps entry's (on btrfs,
			    * maps give another device: the inode's checked) */
	uid_t uid;
	mode_t mode;
	uint64_t size;
	char path[32];   /* "/proc/self/fd/N": opens this very file */
};

/* Opens the file of pid's mapping m and checks it is the one m names:
 * 0; -ESTALE if the mapping now holds another file (replaced since maps
 * were read), -EINVAL if it is not a regular file, or -errno. */
int tfile_open(struct tfile *f, pid_t pid, const struct pmap *m);
/* Opens a file the operator named (a command, a known LuaJIT path): 0
 * or -errno. */
int tfile_open_path(struct tfile *f, const char *path);
/* May a probe with no PID filter go on it? Only a file owned by root and
 * writable by nobody else: any other could be a target's making. */
int tfile_trusted(const struct tfile *f);
/* Its path now, for messages only (readlink of f->path). Returns buf. */
char *tfile_name(const struct tfile *f, char *buf, size_t len);
/* A key of its identity for sets (never 0). */
uint64_t tfile_key(const struct tfile *f);
void tfile_close(struct tfile *f);

#endif
