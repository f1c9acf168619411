/* bpflines PROG_ID: where a loaded BPF program's JIT code came from, for
 * attributing perf samples to source lines (tests/bench/bpfprof.sh), on
 * machines whose bpftool cannot dump JIT code (no libbfd). Prints
 *   func ADDR LEN                 each function's image (the program, then
 *                                 its subprograms), kernel address in hex
 *   line ADDR FILE:LINE SOURCE    each line-info record: the JIT address
 *                                 where that source line's code begins
 * Exit 0, or 1 having said why on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

static const char *base_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "?";
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info), nk, nf, nl, njl;
	__u64 *ks, *jl;
	__u32 *fl;
	struct bpf_line_info *li;
	struct btf *btf;
	char *end;
	long id;
	int fd;

	id = argc == 2 ? strtol(argv[1], &end, 10) : -1;
	if (argc != 2 || *end || id <= 0) {
		fprintf(stderr, "usage: bpflines PROG_ID\n");
		return 1;
	}
	fd = bpf_prog_get_fd_by_id((__u32)id);
	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "bpflines: program %ld: %s\n", id, strerror(errno));
		return 1;
	}
	nk = info.nr_jited_ksyms;
	nf = info.nr_jited_func_lens;
	nl = info.nr_line_info;
	njl = info.nr_jited_line_info;
	ks = calloc(nk + 1, sizeof(*ks));
	fl = calloc(nf + 1, sizeof(*fl));
	li = calloc(nl + 1, sizeof(*li));
	jl = calloc(njl + 1, sizeof(*jl));
	if (!ks || !fl || !li || !jl) {
		fprintf(stderr, "bpflines: out of memory\n");
		return 1;
	}
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = nk;
	info.jited_ksyms = (__u64)(unsigned long)ks;
	info.nr_jited_func_lens = nf;
	info.jited_func_lens = (__u64)(unsigned long)fl;
	info.nr_line_info = nl;
	info.line_info = (__u64)(unsigned long)li;
	info.line_info_rec_size = sizeof(*li);
	info.nr_jited_line_info = njl;
	info.jited_line_info = (__u64)(unsigned long)jl;
	info.jited_line_info_rec_size = sizeof(*jl);
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "bpflines: program %ld: %s\n", id, strerror(errno));
		return 1;
	}
	if (!nk || !njl || njl != nl) {
		fprintf(stderr, "bpflines: program %ld has no JIT line info (not JITed, "
			"or without BTF, or kernel.kptr_restrict hides it)\n", id);
		return 1;
	}
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf) {
		fprintf(stderr, "bpflines: program %ld: its BTF: %s\n", id, strerror(errno));
		return 1;
	}
	for (__u32 i = 0; i < nk && i < nf; i++)
		printf("func %llx %u\n", (unsigned long long)ks[i], fl[i]);
	for (__u32 i = 0; i < nl; i++) {
		const char *src = btf__name_by_offset(btf, li[i].line_off);

		printf("line %llx %s:%u %s\n", (unsigned long long)jl[i],
		       base_of(btf__name_by_offset(btf, li[i].file_name_off)),
		       BPF_LINE_INFO_LINE_NUM(li[i].line_col), src ? src : "");
	}
	btf__free(btf);
	return 0;
}
