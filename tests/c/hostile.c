/* tests/hostile_files.bats: crafted ELF files and the processes that play
 * with them (a target may map any file, replace it under its mapping,
 * truncate it while the tracer reads it).
 *
 *   hostile names OUT N LEN    an ELF object with N function symbols, all
 *                              named by one LEN-byte name
 *   hostile sparse OUT BYTES   an ELF object whose .symtab claims BYTES
 *                              (a sparse file: nothing written)
 *   hostile trunc FILE SMALL   FILE cut to SMALL bytes and grown back, over
 *                              and over, until killed
 *   hostile swap REAL OTHER READY
 *                              maps REAL, says so in READY, then maps OTHER
 *                              and REAL over the same range in turn, until
 *                              killed
 *   hostile swapon REAL OTHER READY
 *                              maps REAL, says "ready" in READY; at SIGUSR1
 *                              maps OTHER over the same range, says
 *                              "swapped", and waits until killed
 *   hostile call SO SYM N      calls SO's function SYM N times, says "called N"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";

/* Page 0: header, one PT_LOAD (the page, r-x), a ret at 0x100, section
 * names at 0x200 and headers at 0x400; then .strtab (strsz bytes, written
 * by the caller) at 0x1000 and .symtab (symsz bytes) after it. */
static FILE *elf_out(const char *path, uint64_t strsz, uint64_t symsz, uint64_t *symoff)
{
	Elf64_Ehdr h = { 0 };
	Elf64_Phdr ph = { 0 };
	Elf64_Shdr sh[5] = { { 0 } };
	uint8_t page[4096] = { 0 };
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	*symoff = (0x1000 + strsz + 7) & ~7ULL;
	memcpy(h.e_ident, ELFMAG, SELFMAG);
	h.e_ident[EI_CLASS] = ELFCLASS64;
	h.e_ident[EI_DATA] = ELFDATA2LSB;
	h.e_ident[EI_VERSION] = EV_CURRENT;
	h.e_type = ET_DYN;
	h.e_machine = EM_X86_64;
	h.e_version = EV_CURRENT;
	h.e_phoff = sizeof(h);
	h.e_shoff = 0x400;
	h.e_ehsize = sizeof(h);
	h.e_phentsize = sizeof(ph);
	h.e_phnum = 1;
	h.e_shentsize = sizeof(Elf64_Shdr);
	h.e_shnum = 5;
	h.e_shstrndx = 4;
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_filesz = ph.p_memsz = 0x1000;
	ph.p_align = 0x1000;
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_addr = 0x100, .sh_offset = 0x100, .sh_size = 1 };
	sh[2] = (Elf64_Shdr){ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = *symoff, .sh_size = symsz,
			      .sh_link = 3, .sh_info = 1, .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8 };
	sh[3] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = 0x1000, .sh_size = strsz };
	sh[4] = (Elf64_Shdr){ .sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = 0x200, .sh_size = sizeof(shstr) };
	memcpy(page, &h, sizeof(h));
	memcpy(page + sizeof(h), &ph, sizeof(ph));
	page[0x100] = 0xc3;
	memcpy(page + 0x200, shstr, sizeof(shstr));
	memcpy(page + 0x400, sh, sizeof(sh));
	if (fwrite(page, sizeof(page), 1, f) != 1)
		die(path);
	return f;
}

static void names(const char *path, long n, long len)
{
	uint64_t symoff;
	FILE *f = elf_out(path, (uint64_t)len + 2, (uint64_t)(n + 1) * sizeof(Elf64_Sym), &symoff);
	Elf64_Sym s = { .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			.st_shndx = 1, .st_value = 0x100, .st_size = 1 };
	Elf64_Sym zero = { 0 };

	fputc(0, f);
	for (long i = 0; i < len; i++)
		fputc('n', f);
	fputc(0, f);
	while ((uint64_t)ftell(f) < symoff)
		fputc(0, f);
	fwrite(&zero, sizeof(zero), 1, f);
	for (long i = 0; i < n; i++)
		fwrite(&s, sizeof(s), 1, f);
	if (fclose(f))
		die(path);
}

static void sparse(const char *path, uint64_t bytes)
{
	uint64_t symoff;
	FILE *f = elf_out(path, 2, bytes, &symoff);

	fputc(0, f);
	fputc(0, f);
	fflush(f);
	if (ftruncate(fileno(f), (off_t)(symoff + bytes)))
		die(path);
	fclose(f);
}

static void trunc_loop(const char *path, off_t small)
{
	struct stat st;
	int fd = open(path, O_RDWR);

	if (fd < 0 || fstat(fd, &st))
		die(path);
	for (;;) {
		if (ftruncate(fd, small) || ftruncate(fd, st.st_size))
			die("ftruncate");
	}
}

static void swap(const char *real, const char *other, const char *ready)
{
	int a = open(real, O_RDONLY), b = open(other, O_RDONLY);
	struct stat st;
	void *at;
	FILE *r;

	if (a < 0 || b < 0 || fstat(a, &st))
		die("open");
	at = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, a, 0);
	if (at == MAP_FAILED)
		die("mmap");
	if (!(r = fopen(ready, "w")) || fputs("ready\n", r) < 0 || fclose(r))
		die(ready);
	for (;;) {
		if (mmap(at, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, b, 0) != at ||
		    mmap(at, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, a, 0) != at)
			die("mmap");
	}
}

static void say(const char *path, const char *what)
{
	FILE *r = fopen(path, "a");

	if (!r || fputs(what, r) < 0 || fclose(r))
		die(path);
}

static void swapon(const char *real, const char *other, const char *ready)
{
	int a = open(real, O_RDONLY), b = open(other, O_RDONLY), sig;
	struct stat st;
	sigset_t usr1;
	void *at;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (a < 0 || b < 0 || fstat(a, &st) || sigprocmask(SIG_BLOCK, &usr1, NULL))
		die("open");
	at = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, a, 0);
	if (at == MAP_FAILED)
		die("mmap");
	say(ready, "ready\n");
	if (sigwait(&usr1, &sig) ||
	    mmap(at, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, b, 0) != at)
		die("mmap");
	say(ready, "swapped\n");
	for (;;)
		pause();
}

static void call(const char *so, const char *sym, long n)
{
	void *h = dlopen(so, RTLD_NOW);
	void *(*fn)(void *, void *);
	long i;

	if (!h || !(*(void **)&fn = dlsym(h, sym))) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	for (i = 0; i < n; i++)
		fn(NULL, NULL);
	printf("called %ld\n", i);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "names"))
		names(argv[2], atol(argv[3]), atol(argv[4]));
	else if (argc == 4 && !strcmp(argv[1], "sparse"))
		sparse(argv[2], strtoull(argv[3], NULL, 0));
	else if (argc == 4 && !strcmp(argv[1], "trunc"))
		trunc_loop(argv[2], (off_t)atol(argv[3]));
	else if (argc == 5 && !strcmp(argv[1], "swap"))
		swap(argv[2], argv[3], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "swapon"))
		swapon(argv[2], argv[3], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "call"))
		call(argv[2], argv[3], atol(argv[4]));
	else {
		fprintf(stderr, "usage: see tests/c/hostile.c\n");
		return 2;
	}
	return 0;
}
