/* ELF reading, all through libelf (elfutils), from a descriptor. The
 * header is checked before libelf sees the file (it allocates by the
 * section count at elf_begin), and every section is checked against the
 * file's size and target/tfile.h's caps before libelf reads it into memory. */
#define _GNU_SOURCE
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/elfsym.h"
#include "target/tfile.h"

struct eobj {
	Elf *e;
	uint64_t size; /* the file's, when opened */
};

/* Is the header sane and within the caps? pread only. */
static int head_ok(int fd, uint64_t size)
{
	Elf64_Ehdr h;
	uint64_t shnum;

	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.e_ident, ELFMAG, SELFMAG) || h.e_ident[EI_CLASS] != ELFCLASS64 ||
	    h.e_phnum > LMT_ELF_PHNUM_MAX)
		return 0;
	if (h.e_phnum && (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phoff > size ||
			  (uint64_t)h.e_phnum * sizeof(Elf64_Phdr) > size - h.e_phoff))
		return 0;
	if (!h.e_shoff)
		return 1;
	shnum = h.e_shnum;
	if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shoff > size)
		return 0;
	if (!shnum) { /* extended: section 0's sh_size */
		Elf64_Shdr s0;
		if (pread(fd, &s0, sizeof(s0), (off_t)h.e_shoff) != (ssize_t)sizeof(s0))
			return 0;
		shnum = s0.sh_size;
	}
	return shnum <= LMT_ELF_SHNUM_MAX &&
	       shnum * sizeof(Elf64_Shdr) <= size - h.e_shoff;
}

static int eopen(int fd, struct eobj *o)
{
	static int inited;
	struct stat st;

	if (!inited) {
		if (elf_version(EV_CURRENT) == EV_NONE)
			return -1;
		inited = 1;
	}
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !head_ok(fd, (uint64_t)st.st_size))
		return -1;
	o->size = (uint64_t)st.st_size;
	o->e = elf_begin(fd, ELF_C_READ, NULL);
	if (!o->e || elf_kind(o->e) != ELF_K_ELF) {
		if (o->e)
			elf_end(o->e);
		return -1;
	}
	return 0;
}

static void eclose(struct eobj *o)
{
	elf_end(o->e);
}

/* Is the section within the file and at most cap bytes? (NOBITS has no
 * bytes in the file: never read.) */
static int scn_ok(const struct eobj *o, const GElf_Shdr *sh, uint64_t cap)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size <= cap &&
	       sh->sh_offset <= o->size && sh->sh_size <= o->size - sh->sh_offset;
}

static Elf_Scn *find_scn(Elf *e, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *s = NULL;

	while ((s = elf_nextscn(e, s)))
		if (gelf_getshdr(s, sh) && sh->sh_type == type)
			return s;
	return NULL;
}

/* Its string table (section link), if within the caps: 0 or -1. */
static int strtab_ok(struct eobj *o, size_t link)
{
	GElf_Shdr sh;
	Elf_Scn *s = elf_getscn(o->e, link);

	return s && gelf_getshdr(s, &sh) && sh.sh_type == SHT_STRTAB &&
	       scn_ok(o, &sh, LMT_ELF_STRTAB_MAX) ? 0 : -1;
}

static int is_func(const GElf_Sym *s)
{
	int t = GELF_ST_TYPE(s->st_info);
	return (t == STT_FUNC || t == STT_GNU_IFUNC) &&
	       s->st_shndx != SHN_UNDEF && s->st_value != 0;
}

/* Iterates the function symbols of the best symbol table: their number,
 * or -1 (no readable table), or ELFSYM_OVER_CAP with *why. */
static long each_func(struct eobj *o, int (*fn)(void *, const GElf_Sym *,
					       const char *), void *ctx, const char **why)
{
	GElf_Shdr sh;
	Elf_Scn *s = find_scn(o->e, SHT_SYMTAB, &sh);
	Elf_Data *d;
	long n = 0;

	if (!s)
		s = find_scn(o->e, SHT_DYNSYM, &sh);
	if (!s || sh.sh_entsize != sizeof(Elf64_Sym))
		return 0;
	if (!scn_ok(o, &sh, LMT_ELF_SYMTAB_MAX) || strtab_ok(o, sh.sh_link)) {
		*why = "a symbol table or its names over 64 MiB, or past the file's end";
		return ELFSYM_OVER_CAP;
	}
	/* a file cut short meanwhile: libelf's pread falls short, no data */
	if (!(d = elf_getdata(s, NULL)) || d->d_size < sh.sh_size)
		return -1;
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(d, (int)i, &sym) || !is_func(&sym))
			continue;
		name = elf_strptr(o->e, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		n++;
		if (fn(ctx, &sym, name))
			break;
	}
	return n;
}

/* -- Function symbols ---------------------------------------------------- */

struct funcs_ctx {
	uint64_t bias;
	elfsym_cb cb;
	void *ctx;
	uint64_t n, bytes;
	const char *why; /* the first cap broken */
};

static int funcs_check(void *c, const GElf_Sym *s, const char *name)
{
	struct funcs_ctx *f = c;
	size_t l = strnlen(name, LMT_ELF_NAME_MAX + 1);

	(void)s;
	f->bytes += l;
	if (l > LMT_ELF_NAME_MAX)
		f->why = "a name over 4 KiB";
	else if (++f->n > LMT_ELF_FUNCS_MAX)
		f->why = "over 1M function symbols";
	else if (f->bytes > LMT_ELF_NAMES_MAX)
		f->why = "names over 32 MiB together";
	return f->why != NULL;
}

static int funcs_one(void *c, const GElf_Sym *s, const char *name)
{
	struct funcs_ctx *f = c;
	f->cb(f->ctx, s->st_value + f->bias, name);
	return 0;
}

long elfsym_funcs(int fd, uint64_t bias, elfsym_cb cb, void *ctx, const char **why)
{
	struct funcs_ctx f = { bias, cb, ctx, 0, 0, NULL };
	struct eobj o;
	long n;

	*why = NULL;
	if (eopen(fd, &o))
		return -1;
	/* checked whole before the first is given: all or none */
	n = each_func(&o, funcs_check, &f, why);
	if (n >= 0 && f.why) {
		*why = f.why;
		n = ELFSYM_OVER_CAP;
	}
	if (n >= 0)
		n = each_func(&o, funcs_one, &f, why);
	eclose(&o);
	return n;
}

/* -- Bias and offsets ---------------------------------------------------- */

/* The PT_LOAD segment holding file offset off. */
static int load_seg(Elf *e, uint64_t off, GElf_Phdr *out)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= (ph.p_offset & ~0xfffULL) &&
		    off < ph.p_offset + ph.p_filesz) {
			*out = ph;
			return 0;
		}
	}
	return -1;
}

int elfsym_bias(int fd, uint64_t lo, uint64_t off, uint64_t *bias)
{
	struct eobj o;
	GElf_Phdr ph;
	int r;

	if (eopen(fd, &o))
		return -1;
	r = load_seg(o.e, off, &ph);
	if (!r)
		*bias = lo - (ph.p_vaddr + (off - ph.p_offset));
	eclose(&o);
	return r;
}

struct find_ctx {
	const char *name;
	uint64_t value;
	int found;
};

static int find_one(void *c, const GElf_Sym *s, const char *name)
{
	struct find_ctx *f = c;
	if (strcmp(name, f->name))
		return 0;
	f->value = s->st_value;
	f->found = 1;
	return 1;
}

int elfsym_offset(int fd, const char *name, uint64_t *off)
{
	struct find_ctx f = { name, 0, 0 };
	const char *why;
	struct eobj o;
	size_t n;
	int r = -1;

	if (eopen(fd, &o))
		return -1;
	each_func(&o, find_one, &f, &why);
	if (f.found && !elf_getphdrnum(o.e, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(o.e, (int)i, &ph) ||
			    ph.p_type != PT_LOAD || f.value < ph.p_vaddr ||
			    f.value >= ph.p_vaddr + ph.p_filesz)
				continue;
			*off = f.value - ph.p_vaddr + ph.p_offset;
			r = 0;
			break;
		}
	}
	eclose(&o);
	return r;
}

/* -- Dependencies -------------------------------------------------------- */

int elfsym_needed(int fd, elfsym_cb cb, void *ctx)
{
	GElf_Shdr sh;
	struct eobj o;
	Elf_Scn *s;
	Elf_Data *d;

	if (eopen(fd, &o))
		return -1;
	s = find_scn(o.e, SHT_DYNAMIC, &sh);
	if (s && sh.sh_entsize == sizeof(Elf64_Dyn) && scn_ok(&o, &sh, LMT_ELF_DYNAMIC_MAX) &&
	    !strtab_ok(&o, sh.sh_link) && (d = elf_getdata(s, NULL))) {
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *nm;
			if (!gelf_getdyn(d, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			nm = elf_strptr(o.e, sh.sh_link, dyn.d_un.d_val);
			if (nm && strnlen(nm, LMT_ELF_PATH_MAX) < LMT_ELF_PATH_MAX)
				cb(ctx, 0, nm);
		}
	}
	eclose(&o);
	return 0;
}

int elfsym_interp(int fd, char *buf, size_t len)
{
	struct eobj o;
	size_t n;
	int r = -1;

	if (eopen(fd, &o))
		return -1;
	if (!elf_getphdrnum(o.e, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(o.e, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			if (ph.p_filesz && ph.p_filesz <= len &&
			    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz &&
			    memchr(buf, 0, ph.p_filesz))
				r = 0;
			break;
		}
	}
	eclose(&o);
	return r;
}
