#!/usr/bin/env bats
# The fuzzers (tests/fuzz, libFuzzer under ASan and UBSan), bounded: each
# runs its committed corpus (seeds, and every input a fuzzer found a fault
# with) and then a fixed number of new inputs from a fixed seed. A crash,
# a leak, undefined behaviour or an input over the memory limit fails.
# `make fuzz` runs them for longer.

load helpers

setup_file() {
	make -s -C "$BATS_TEST_DIRNAME/.." fuzz-build > /dev/null
}

setup() {
	T="$BATS_TEST_TMPDIR"
	FUZZ="$BATS_TEST_DIRNAME/../build"
}

# fuzz NAME CORPUS RUNS ARGS...: the fuzzer over a scratch corpus (new
# inputs) and CORPUS; its log in $T/NAME.log.
fuzz() {
	local name=$1 corpus=$2 runs=$3
	shift 3
	mkdir -p "$T/new-$name"
	"$FUZZ/$name" -runs="$runs" -seed=1 -rss_limit_mb=1024 -artifact_prefix="$T/" "$@" \
		"$T/new-$name" "$corpus" > "$T/$name.log" 2>&1
}

@test "fuzz_memprof (stream reader, writer round trip, every text format): the corpus and 2000 new inputs, no fault" {
	run fuzz fuzz_memprof "$BATS_TEST_DIRNAME/fuzz/corpus" 2000 -max_len=4096
	[ "$status" -eq 0 ] || { tail -40 "$T/fuzz_memprof.log"; false; }
	grep -q '^Done 2000 runs' "$T/fuzz_memprof.log"
	[ -z "$(ls "$T" | grep -E '^(crash|leak|oom|timeout)-')" ]
}

@test "fuzz_report (report as run: streams, stacks companions, sidecars; every output format; merges of 1 to 3 streams): the corpus and 200 new inputs, no fault" {
	run fuzz fuzz_report "$BATS_TEST_DIRNAME/fuzz/report" 200 -max_len=4096 -close_fd_mask=3
	[ "$status" -eq 0 ] || { tail -40 "$T/fuzz_report.log"; false; }
	grep -q '^Done 200 runs' "$T/fuzz_report.log"
	[ -z "$(ls "$T" | grep -E '^(crash|leak|oom|timeout)-')" ]
}
