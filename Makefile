# luamemtrace: build, test, bench, fuzz.
#
#   make            build ./luamemtrace
#   make test       C unit tests + bats suites (root needed for the tracer suites)
#   make bench      tests/bench: overhead and decode speed (KERNELS=1: and
#                   in the 6.1 and 6.12 guests, tests/kernels)
#   make fuzz       bounded libFuzzer run of the stream decoder, and the
#                   JIT on/off differential run (tests/tools/jitdiff.sh,
#                   then jitorders.sh: each kept program in every trace order)
#   make asan       build with AddressSanitizer + UBSan (used by the tests)

CC      ?= cc
CLANG   ?= clang
BPFTOOL ?= bpftool
OUT     := build
SAN     ?=

ARCH_DEFINE := -D__TARGET_ARCH_x86

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS  ?= -O2 -g
ALL_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -I$(OUT) -Iuser -Ibpf $(SAN)
LDLIBS  := -lbpf -lelf -lcapstone -lprotobuf-c -lncursesw -lz -lpthread
ALL_LDFLAGS := $(LDFLAGS) $(SAN)

BPF_SRC  := $(wildcard bpf/*.bpf.c)
BPF_OBJ  := $(patsubst bpf/%.bpf.c,$(OUT)/%.bpf.o,$(BPF_SRC))
BPF_SKEL := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRC))

# pprof's profile.proto, compiled by protoc-c (user/report/pprof.c).
PB_C     := $(OUT)/profile.pb-c.c
PB_H     := $(OUT)/profile.pb-c.h
REPORT_SRC := $(wildcard user/report/*.c) $(PB_C)
USER_SRC := $(wildcard user/*/*.c)
# The flame graph's page inlines d3 and d3-flame-graph, from the npm
# registry at the versions user/report/flame/package-lock.json pins.
NPM_DIR  := $(OUT)/npm
NPM_MOD  := $(NPM_DIR)/node_modules
FG_ASSETS := $(NPM_MOD)/d3/dist/d3.min.js $(NPM_MOD)/d3-flame-graph/dist/d3-flamegraph.min.js \
	$(NPM_MOD)/d3-flame-graph/dist/d3-flamegraph-tooltip.min.js \
	$(NPM_MOD)/d3-flame-graph/dist/d3-flamegraph.css
FG_OBJ   := $(OUT)/flame_assets.o
USER_OBJ := $(patsubst user/%.c,$(OUT)/%.o,$(USER_SRC)) $(OUT)/profile.pb-c.o $(FG_OBJ)
USER_H   := $(wildcard user/*/*.h) $(PB_H)
# Objects that need neither BPF nor libbpf: shared with unit tests and fuzzers.
LIB_SRC  := user/streams/merge.c user/format/memprof_write.c user/format/memprof_read.c user/format/stacks_write.c \
	user/format/stacks_read.c $(REPORT_SRC) user/util/esc.c user/util/numfmt.c user/format/info.c

UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(OUT)/unit/%,$(UNIT_SRC))

# Debian packages needed to build, run and test (one list: CI uses it too).
DEPS := make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev \
	libcapstone-dev luajit libluajit-5.1-dev bats util-linux libclang-rt-14-dev \
	protobuf-c-compiler libprotobuf-c-dev golang-go chromium libncurses-dev tmux \
	nginx-core curl procps wrk sysbench knot-resolver dnsperf iproute2 tarantool \
	qemu-system-x86 busybox-static cpio dpkg-dev

.PHONY: all clean test unit bats bench bench-heap-guest fuzz fuzz-build fuzz-decoders fuzz-jit asan demo deps
all: luamemtrace

luamemtrace: $(USER_OBJ)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS)

$(OUT):
	mkdir -p $(OUT) $(OUT)/unit $(OUT)/report

$(OUT)/%.bpf.o: bpf/%.bpf.c bpf/*.h vmlinux/vmlinux.h | $(OUT)
	$(CLANG) -g -O2 -target bpf -mcpu=v3 $(ARCH_DEFINE) -Wall -Werror -Ivmlinux -Ibpf -Iuser -c $< -o $@
	llvm-strip -g $@ 2>/dev/null || true

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(OUT)/%.o: user/%.c $(USER_H) bpf/*.h $(BPF_SKEL) | $(OUT)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(PB_C) $(PB_H) &: user/report/profile.proto | $(OUT)
	protoc-c --c_out=$(OUT) --proto_path=user/report $<

$(FG_ASSETS) &: user/report/flame/package.json user/report/flame/package-lock.json | $(OUT)
	mkdir -p $(NPM_DIR)
	cp user/report/flame/package.json user/report/flame/package-lock.json $(NPM_DIR)/
	cd $(NPM_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(FG_ASSETS)

$(FG_OBJ): user/report/flame_assets.S user/report/flame/page.html user/report/flame/page.js $(FG_ASSETS) | $(OUT)
	$(CC) -c -Wa,-I,$(NPM_MOD) -Wa,-I,user/report/flame $< -o $@

# Generated code: not held to the project's warnings.
$(OUT)/profile.pb-c.o: $(PB_C) $(PB_H)
	$(CC) $(CFLAGS) $(SAN) -I$(OUT) -c $< -o $@

$(OUT)/unit/%: tests/unit/%.c tests/unit/check.h tests/unit/arena.h $(LIB_SRC) $(FG_OBJ) user/probes/placement.c user/target/layout.c user/target/vmdef.c $(USER_H) bpf/*.h | $(OUT)
	@mkdir -p $(OUT)/unit
	$(CC) $(ALL_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all \
		-o $@ $< $(UNIT_EXTRA) $(LIB_SRC) $(FG_OBJ) user/probes/placement.c user/target/layout.c user/target/vmdef.c -lcapstone -lprotobuf-c -lz -lm -lpthread

# tests/heap_views.bats reads heap --chrome's output with Chrome DevTools'
# own heap snapshot model, from the npm registry at the version
# tests/heap/devtools/package-lock.json pins.
HEAP_DEVTOOLS := $(OUT)/npm-devtools/node_modules/heap-snapshot-toolkit/index.js
$(HEAP_DEVTOOLS): tests/heap/devtools/package.json tests/heap/devtools/package-lock.json | $(OUT)
	mkdir -p $(OUT)/npm-devtools
	cp $^ $(OUT)/npm-devtools/
	cd $(OUT)/npm-devtools && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# The heap copy's model and analysis, fed forged objects (no target).
HEAP_MODEL := user/heap/model.c user/heap/sizes.c user/heap/edges.c user/heap/mark.c \
	user/heap/dom.c user/heap/paths.c user/heap/snapfile.c user/heap/view_text.c user/heap/join.c \
	user/heap/groups.c user/heap/suspects.c user/heap/view_diff.c user/util/u64set.c
HEAP_UNITS := $(OUT)/unit/test_heap $(OUT)/unit/test_heap_snap $(OUT)/unit/test_heap_join \
	$(OUT)/unit/test_heap_views $(OUT)/unit/test_heap32 $(OUT)/unit/test_heap_locals
$(HEAP_UNITS): UNIT_EXTRA := $(HEAP_MODEL)
$(HEAP_UNITS): $(HEAP_MODEL) tests/unit/heap_forge.h

# The readers of a target's memory, fed forged structures: the test reads
# its own memory (it defines proc_read).
READERS := user/convert/jit.c user/convert/jit_read.c user/convert/jit_walk.c user/convert/jit_sunk.c user/convert/jit_ir.c user/convert/jit_frames.c \
	user/convert/luanames.c user/target/vmscan.c user/convert/lines.c user/util/u64set.c
$(OUT)/unit/test_forged: UNIT_EXTRA := $(READERS)
$(OUT)/unit/test_forged: $(READERS) $(BPF_SKEL)
$(OUT)/unit/test_jit32: UNIT_EXTRA := $(READERS)
$(OUT)/unit/test_jit32: $(READERS) $(BPF_SKEL)

# Function names from forged prototypes (it defines proc_read too).
FNAMES := user/convert/fnames.c user/convert/lines.c user/convert/luanames.c user/util/u64set.c
$(OUT)/unit/test_fnames: UNIT_EXTRA := $(FNAMES)
$(OUT)/unit/test_fnames: $(FNAMES)

# The heap copy's block cache against a target and soft-dirty bits the
# test makes (it defines proc_read*, hdirty_*).
$(OUT)/unit/test_heap_pages: UNIT_EXTRA := user/heap/pages.c user/util/u64set.c user/util/clock.c
# Which written pages the heap copy asks of their own entries (it defines
# proc_openat, ptscan_*).
$(OUT)/unit/test_hdirty: UNIT_EXTRA := user/heap/dirty.c
$(OUT)/unit/test_hdirty: user/heap/dirty.c
$(OUT)/unit/test_heap_pages: user/heap/pages.c

$(OUT)/unit/test_seen: UNIT_EXTRA := user/target/seen.c
$(OUT)/unit/test_seen: user/target/seen.c

# bpf/lja.h against the real allocator: Debian's libluajit.
$(OUT)/unit/test_lja: tests/unit/test_lja.c tests/unit/check.h bpf/lja.h | $(OUT)
	@mkdir -p $(OUT)/unit
	$(CC) $(ALL_CFLAGS) -I/usr/include/luajit-2.1 -fsanitize=address,undefined \
		-fno-sanitize-recover=all -o $@ $< -lluajit-5.1

unit: $(UNIT_BIN)
	@bash tests/run-unit.sh $(UNIT_BIN)

bats: luamemtrace
	bats tests/*.bats

# The README's test command.
test: luamemtrace $(UNIT_BIN) $(OUT)/mpdump $(OUT)/host $(OUT)/lmtmod.so $(OUT)/collapse $(OUT)/layoutdump $(OUT)/ljseed.so $(OUT)/ptcheck $(HEAP_DEVTOOLS)
	@bash tests/run-all.sh $(UNIT_BIN)

asan:
	$(MAKE) clean
	$(MAKE) SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# KERNELS=1: also the allocator workloads in Debian's 6.1 and 6.12 kernels
# under QEMU (tests/kernels/bench.sh: ratios to the floor in each guest).
bench: luamemtrace
	@bash tests/bench/run.sh
	@if [ "$(KERNELS)" = 1 ]; then bash tests/kernels/run.sh -r bench; fi

# The heap snapshot's bench (tests/bench/heap.sh) in a Debian kernel's
# guest (GUEST_KERNEL, 6.12), whose kernel keeps soft-dirty bits: the
# copy made while the target runs, the stop re-reading what it wrote.
# Under software emulation: its times inflated, its ratios and counts kept.
GUEST_KERNEL ?= 6.12
bench-heap-guest: luamemtrace $(OUT)/rusage
	LMT_GUEST_MB=$${LMT_GUEST_MB:-4096} LMT_GUEST_TIMEOUT=$${LMT_GUEST_TIMEOUT:-5400} \
		bash tests/kernels/run.sh -k $(GUEST_KERNEL) -r shell -c \
		"BENCH_HEAP_MB=$${BENCH_HEAP_MB:-1024} BENCH_HEAP_REPS=$${BENCH_HEAP_REPS:-2} \
		BENCH_HEAP_PACE=$${BENCH_HEAP_PACE:-0} \
		BENCH_HEAP_MODES='$${BENCH_HEAP_MODES:-default stopped}' bash tests/bench/heap.sh"
$(OUT)/rusage: tests/bench/rusage.c | $(OUT)
	$(CC) -O2 -std=gnu11 -o $@ $<

# The fuzzers (tests/fuzz/fuzz_*.c), each with its corpus tests/fuzz/NAME/
# (fuzz_memprof: tests/fuzz/corpus/); tests/hostile_report_fuzz.bats runs
# each over its corpus and a bounded number of new inputs.
FUZZERS := $(patsubst tests/fuzz/%.c,$(OUT)/%,$(wildcard tests/fuzz/fuzz_*.c))
$(OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(FG_OBJ) | $(OUT)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -Iuser -Ibpf \
		-I$(OUT) -o $@ $< $(LIB_SRC) $(FG_OBJ) -lprotobuf-c -lz -lm -lpthread
fuzz-build: $(FUZZERS)
fuzz: fuzz-decoders fuzz-jit
# the decoders' fuzzers (tests/faults.bats runs them for 20 s each)
fuzz-decoders: $(FUZZERS) luamemtrace
	mkdir -p $(OUT)/fuzz-corpus $(OUT)/fuzz-corpus-report
	$(OUT)/fuzz_memprof -max_total_time=$${FUZZ_SECONDS:-60} -rss_limit_mb=2048 \
		$(OUT)/fuzz-corpus tests/fuzz/corpus
	$(OUT)/fuzz_report -max_total_time=$${FUZZ_SECONDS:-60} -rss_limit_mb=2048 \
		-close_fd_mask=1 $(OUT)/fuzz-corpus-report tests/fuzz/report
# the differential run of compiled code's attribution (root): random
# programs JIT on against JIT off (tests/tools/jitdiff.sh), then each kept
# regression program once per order the JIT made its traces in over
# JITORDER_SEEDS seeds of its random generator (tests/tools/jitorders.sh)
fuzz-jit: luamemtrace $(OUT)/ljseed.so
	mkdir -p $(OUT)/jitdiff $(OUT)/jitorders
	tests/tools/jitdiff.sh $(OUT)/jitdiff 1 $${JITDIFF_SEEDS:-200}
	cd tests/lua/jitdiff && st=0 && for f in g*.lua; do echo "$$f:"; \
		../../tools/jitorders.sh $(CURDIR)/$(OUT)/jitorders/$${f%.lua} $$f \
			$${JITORDER_SEEDS:-40} || st=1; done; exit $$st
$(OUT)/ljseed.so: tests/tools/ljseed.c | $(OUT)
	$(CC) $(CFLAGS) $(WARN) -shared -fPIC -o $@ $< -ldl

# Package scripts must not start services here (nginx): a policy-rc.d
# that says no, unless the machine has one of its own.
deps:
	apt-get update -qq
	@if [ ! -e /usr/sbin/policy-rc.d ]; then \
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; \
		chmod +x /usr/sbin/policy-rc.d; touch /tmp/.lmt-policy-rc; fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEPS)
	@# npm fetches the flame graph's d3 (user/report/flame): Debian's, unless
	@# the machine has its own Node.js (whose npm Debian's would conflict with).
	@command -v npm > /dev/null || DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends npm
	@if [ -e /tmp/.lmt-policy-rc ]; then \
		rm -f /usr/sbin/policy-rc.d /tmp/.lmt-policy-rc; fi

demo: luamemtrace
	@bash tests/demo.sh

clean:
	rm -rf $(OUT) luamemtrace

# Test helpers built from tests/ (not installed).
MPDUMP_SRC := user/format/memprof_read.c user/format/memprof_write.c user/util/esc.c
$(OUT)/mpdump: tests/tools/mpdump.c $(MPDUMP_SRC) $(USER_H) | $(OUT)
	$(CC) $(ALL_CFLAGS) -o $@ tests/tools/mpdump.c $(MPDUMP_SRC)

$(OUT)/host: tests/c/host.c | $(OUT)
	$(CC) $(ALL_CFLAGS) -I/usr/include/luajit-2.1 -o $@ $< -lluajit-5.1 -lpthread

# probes/ptscan.c on pages whose state is known (tests/heap.bats)
$(OUT)/ptcheck: tests/tools/ptcheck.c $(OUT)/probes/ptscan.o $(OUT)/probes/physmem.o $(OUT)/target/proc.o \
		$(OUT)/util/u64set.o | $(OUT)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lbpf -lelf -lz

$(OUT)/collapse: tests/tools/collapse.c | $(OUT)
	$(CC) $(ALL_CFLAGS) -o $@ $<

$(OUT)/bpflines: tests/tools/bpflines.c | $(OUT)
	$(CC) $(ALL_CFLAGS) -o $@ $< -lbpf

# A Lua C module (tests/faults.bats: a module loaded just before the exit).
$(OUT)/lmtmod.so: tests/c/lmtmod.c | $(OUT)
	$(CC) $(ALL_CFLAGS) -I/usr/include/luajit-2.1 -shared -fPIC -o $@ $<

.SECONDARY:
# A recipe that fails leaves no half-built target for the next make to trust.
.DELETE_ON_ERROR:

# The layout table's numbers, for tests/layout.bats to compare with a
# LuaJIT source tree's (tests/tools/ljoffsets.c).
$(OUT)/layoutdump: tests/tools/layoutdump.c tests/tools/ljfields.h user/target/layout.c user/target/vmdef.c $(USER_H) | $(OUT)
	$(CC) $(ALL_CFLAGS) -o $@ tests/tools/layoutdump.c user/target/layout.c user/target/vmdef.c
