/* ELF reading, all through libelf (elfutils). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"

struct eobj {
	int fd;
	Elf *e;
};

static int eopen(const char *path, struct eobj *o)
{
	static int inited;

	if (!inited) {
		if (elf_version(EV_CURRENT) == EV_NONE)
			return -1;
		inited = 1;
	}
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0)
		return -1;
	o->e = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!o->e || elf_kind(o->e) != ELF_K_ELF) {
		if (o->e)
			elf_end(o->e);
		close(o->fd);
		return -1;
	}
	return 0;
}

static void eclose(struct eobj *o)
{
	elf_end(o->e);
	close(o->fd);
}

static Elf_Scn *find_scn(Elf *e, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *s = NULL;

	while ((s = elf_nextscn(e, s)))
		if (gelf_getshdr(s, sh) && sh->sh_type == type)
			return s;
	return NULL;
}

static int is_func(const GElf_Sym *s)
{
	int t = GELF_ST_TYPE(s->st_info);
	return (t == STT_FUNC || t == STT_GNU_IFUNC) &&
	       s->st_shndx != SHN_UNDEF && s->st_value != 0;
}

/* Iterates the function symbols of the best symbol table. */
static long each_func(struct eobj *o, int (*fn)(void *, const GElf_Sym *,
					       const char *), void *ctx)
{
	GElf_Shdr sh;
	Elf_Scn *s = find_scn(o->e, SHT_SYMTAB, &sh);
	Elf_Data *d;
	long n = 0;

	if (!s)
		s = find_scn(o->e, SHT_DYNSYM, &sh);
	if (!s || !(d = elf_getdata(s, NULL)) || !sh.sh_entsize)
		return 0;
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

struct funcs_ctx {
	uint64_t bias;
	elfsym_cb cb;
	void *ctx;
};

static int funcs_one(void *c, const GElf_Sym *s, const char *name)
{
	struct funcs_ctx *f = c;
	f->cb(f->ctx, s->st_value + f->bias, name);
	return 0;
}

long elfsym_funcs(const char *path, uint64_t bias, elfsym_cb cb, void *ctx)
{
	struct funcs_ctx f = { bias, cb, ctx };
	struct eobj o;
	long n;

	if (eopen(path, &o))
		return -1;
	n = each_func(&o, funcs_one, &f);
	eclose(&o);
	return n;
}

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

int elfsym_bias(const char *path, uint64_t lo, uint64_t off, uint64_t *bias)
{
	struct eobj o;
	GElf_Phdr ph;
	int r;

	if (eopen(path, &o))
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

int elfsym_offset(const char *path, const char *name, uint64_t *off)
{
	struct find_ctx f = { name, 0, 0 };
	struct eobj o;
	size_t n;
	int r = -1;

	if (eopen(path, &o))
		return -1;
	each_func(&o, find_one, &f);
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

int elfsym_needed(const char *path, elfsym_cb cb, void *ctx)
{
	GElf_Shdr sh;
	struct eobj o;
	Elf_Scn *s;
	Elf_Data *d;

	if (eopen(path, &o))
		return -1;
	s = find_scn(o.e, SHT_DYNAMIC, &sh);
	if (s && (d = elf_getdata(s, NULL)) && sh.sh_entsize) {
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *nm;
			if (!gelf_getdyn(d, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			nm = elf_strptr(o.e, sh.sh_link, dyn.d_un.d_val);
			if (nm)
				cb(ctx, 0, nm);
		}
	}
	eclose(&o);
	return 0;
}

int elfsym_interp(const char *path, char *buf, size_t len)
{
	struct eobj o;
	size_t n, sz;
	int r = -1;

	if (eopen(path, &o))
		return -1;
	if (!elf_getphdrnum(o.e, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			const char *raw;
			if (!gelf_getphdr(o.e, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			raw = elf_rawfile(o.e, &sz);
			if (raw && ph.p_offset < sz && ph.p_filesz <= sz - ph.p_offset &&
			    ph.p_filesz && ph.p_filesz <= len &&
			    memchr(raw + ph.p_offset, 0, ph.p_filesz)) {
				memcpy(buf, raw + ph.p_offset, ph.p_filesz);
				r = 0;
			}
			break;
		}
	}
	eclose(&o);
	return r;
}
