#!/usr/bin/env bats
# `luamemtrace report` against the reference parser's reports of the
# fixtures, plus folded output, error handling and escaping. Needs no root.
#
# The reference parser prints entries with equal event counts (and equal
# HEAP SUMMARY bytes) in random order, so reports are compared after
# tests/canon-report.sh sorts each such run; everything else is compared
# byte for byte.

bats_require_minimum_version 1.5.0

setup() {
	LMT="$BATS_TEST_DIRNAME/../luamemtrace"
	FIX="${LMT_FIXTURES:-$BATS_TEST_DIRNAME/../../shared/fixtures/memprof}"
	CANON="$BATS_TEST_DIRNAME/canon-report.sh"
	T="$BATS_TEST_TMPDIR"
}

# The worked example of the format spec, section 9 (symtab cut short).
example_stream() {
	printf 'ljs\x03\x00\x00\x00'
	printf '\x00\xa8\xae\xb1\x85\x04\x07@ex.lua\x00'
	printf '\x00\xc0\xab\xb1\x85\x04\x07@ex.lua\x04'
	printf '\x80ljm\x03\x00\x00\x00'
	printf '\x09\xa8\xae\xb1\x85\x04\x06\xe8\xf9\xaf\x85\x04\x14'
	printf '\x09\xc0\xab\xb1\x85\x04\x05\x88\xe9\xaf\x85\x04\x38'
	printf '\x09\xa8\xae\xb1\x85\x04\x08\xc0\x99\xb0\x85\x04\x20'
	printf '\x09\xa8\xae\xb1\x85\x04\x09\x98\xb9\xb0\x85\x04\x18'
	printf '\x0b\xa8\xae\xb1\x85\x04\x09\x98\xb9\xb0\x85\x04\x18\xa0\xa3\xb0\x85\x04\x28'
	printf '\x06\x88\xe9\xaf\x85\x04\x38'
	printf '\x80'
}

# compare_all MODE-SUFFIX [OPTION]: every fixture's report vs the reference.
compare_all() {
	local suffix=$1 opt=${2:-} n=0 bad=0 bin exp
	for bin in "$FIX"/*.bin; do
		[ -e "$bin" ] || continue
		exp=${bin%.bin}.report$suffix.txt
		[ -e "$exp" ] || continue
		n=$((n + 1))
		"$LMT" report $opt "$bin" > "$T/out" || { echo "exit $? on $bin"; bad=1; continue; }
		if ! diff -u <("$CANON" "$exp") <("$CANON" "$T/out"); then
			echo "mismatch: $bin $opt"
			bad=1
		fi
	done
	echo "compared $n fixtures"
	[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
}

@test "report: fixtures match the reference report" {
	run compare_all ""
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "report --leak-only: fixtures match the reference report" {
	run compare_all .leak-only --leak-only
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "report --human-readable: fixtures match the reference report" {
	run compare_all .human-readable --human-readable
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "canon-report: only ties are reordered" {
	# The helper must not hide real differences: swapping two entries
	# with different counts is caught, swapping tied ones is not.
	printf 'ALLOCATIONS\na: 2 events\t+1B\t-0B\nb: 1 events\t+1B\t-0B\nc: 1 events\t+2B\t-0B\n\n' > "$T/a"
	printf 'ALLOCATIONS\na: 2 events\t+1B\t-0B\nc: 1 events\t+2B\t-0B\nb: 1 events\t+1B\t-0B\n\n' > "$T/b"
	printf 'ALLOCATIONS\nb: 1 events\t+1B\t-0B\na: 2 events\t+1B\t-0B\nc: 1 events\t+2B\t-0B\n\n' > "$T/c"
	cmp <("$CANON" "$T/a") <("$CANON" "$T/b")
	if cmp -s <("$CANON" "$T/a") <("$CANON" "$T/c"); then false; fi
}

@test "report: section 9 example, exact output with the documented tie order" {
	example_stream > "$T/ex.bin"
	run "$LMT" report "$T/ex.bin"
	[ "$status" -eq 0 ]
	expected=$(printf '%s\n' \
		'ALLOCATIONS' \
		'@ex.lua:5: 1 events	+56B	-0B' \
		'@ex.lua:8: 1 events	+32B	-0B' \
		'@ex.lua:9: 1 events	+24B	-0B' \
		'@ex.lua:6: 1 events	+20B	-0B' \
		'' \
		'REALLOCATIONS' \
		'@ex.lua:9: 1 events	+40B	-24B' \
		'	Overrides:' \
		'		@ex.lua:9' \
		'' \
		'' \
		'DEALLOCATIONS' \
		'INTERNAL: 1 events	+0B	-56B' \
		'	Overrides:' \
		'		@ex.lua:5' \
		'' \
		'' \
		'HEAP SUMMARY:' \
		'@ex.lua:9 holds 40B: 2 allocs, 1 frees' \
		'@ex.lua:8 holds 32B: 1 allocs, 0 frees' \
		'@ex.lua:6 holds 20B: 1 allocs, 0 frees')
	[ "$output" = "$expected" ]
}

@test "report: FILE - reads stdin" {
	bin=$(ls "$FIX"/*.bin | head -1)
	"$LMT" report "$bin" > "$T/a"
	"$LMT" report - < "$bin" > "$T/b"
	cmp "$T/a" "$T/b"
}

@test "report --folded: weight=bytes, events, live on the example" {
	example_stream > "$T/ex.bin"
	run "$LMT" report --folded "$T/ex.bin"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '@ex.lua:5 56\n@ex.lua:6 20\n@ex.lua:8 32\n@ex.lua:9 64')" ]
	run "$LMT" report --folded --weight=events "$T/ex.bin"
	[ "$output" = "$(printf '@ex.lua:5 1\n@ex.lua:6 1\n@ex.lua:8 1\n@ex.lua:9 2')" ]
	run "$LMT" report --folded --weight=live "$T/ex.bin"
	[ "$output" = "$(printf '@ex.lua:6 20\n@ex.lua:8 32\n@ex.lua:9 40')" ]
	run "$LMT" report --folded --weight=bytes "$T/ex.bin"
	[ "$output" = "$(printf '@ex.lua:5 56\n@ex.lua:6 20\n@ex.lua:8 32\n@ex.lua:9 64')" ]
}

@test "report --folded: fixture weights agree with the standard report" {
	bin="$FIX/leaks.joff.bin"
	[ -e "$bin" ]
	run "$LMT" report --folded "$bin"
	[ "$status" -eq 0 ]
	# ALLOCATIONS +56000, +2624 (+2064 reallocated), +32.
	[ "$output" = "$(printf '@leaks.lua:3 32\n@leaks.lua:5 4688\n@leaks.lua:8 56000')" ]
	run "$LMT" report --folded --weight=events "$bin"
	[ "$output" = "$(printf '@leaks.lua:3 1\n@leaks.lua:5 107\n@leaks.lua:8 1000')" ]
	# Every line is "frames weight" with an integer weight (flamegraph.pl).
	run "$LMT" report --folded --weight=live "$bin"
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	[ -z "$(printf '%s\n' "$output" | grep -Ev '^[^;]+ [0-9]+$')" ]
}

@test "report: truncated stream prints the report, warns, exits 3" {
	example_stream | head -c -1 > "$T/noepi.bin"
	run --separate-stderr "$LMT" report "$T/noepi.bin"
	[ "$status" -eq 3 ]
	[[ "$stderr" == "luamemtrace report: warning: $T/noepi.bin: offset 123: truncated stream: end of file before the epilogue"* ]]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	example_stream > "$T/ex.bin"
	[ "$output" = "$("$LMT" report "$T/ex.bin")" ]
}

@test "report: fixture cut mid-record still reports the events read" {
	bin="$FIX/jit_traces.jon.bin"
	[ -e "$bin" ]
	size=$(stat -c %s "$bin")
	head -c $((size - 5)) "$bin" > "$T/cut.bin"
	run --separate-stderr "$LMT" report "$T/cut.bin"
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"truncated stream: end of file inside an event record"* ]]
	[[ "$output" == ALLOCATIONS* ]]
	[[ "$output" == *"HEAP SUMMARY:"* ]]
}

@test "report: malformed stream exits 1 with the byte offset" {
	{ printf 'ljs\x03\x00\x00\x00\x80ljm\x03\x00\x00\x00'; printf '\x41'; } > "$T/bad.bin"
	run --separate-stderr "$LMT" report "$T/bad.bin"
	[ "$status" -eq 1 ]
	[ "$stderr" = "luamemtrace report: $T/bad.bin: offset 15: bad event header 0x41" ]
	[ -z "$output" ]

	printf 'ljx\x03\x00\x00\x00\x80' > "$T/magic.bin"
	run --separate-stderr "$LMT" report "$T/magic.bin"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"offset 0: bad symtab magic"* ]]

	printf 'ljs\x07\x00\x00\x00\x80' > "$T/ver.bin"
	run --separate-stderr "$LMT" report "$T/ver.bin"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"offset 3: unsupported symtab version 7"* ]]

	# A string length of 2^47: refused, not allocated.
	printf 'ljs\x03\x00\x00\x00\x00\x01\x80\x80\x80\x80\x80\x80\x20' > "$T/str.bin"
	run --separate-stderr "$LMT" report "$T/str.bin"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"offset 9: string length 140737488355328 exceeds the limit"* ]]

	# An 11-byte uleb.
	{ printf 'ljs\x03\x00\x00\x00\x80ljm\x03\x00\x00\x00\x05'
	  printf '\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x01\x80'; } > "$T/uleb.bin"
	run --separate-stderr "$LMT" report "$T/uleb.bin"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"offset 16: bad uleb128: longer than 10 bytes" ]]

	: > "$T/empty.bin"
	run --separate-stderr "$LMT" report "$T/empty.bin"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"offset 0: empty stream"* ]]
}

@test "report: missing file exits 1 with one line" {
	run --separate-stderr "$LMT" report "$T/nope.bin"
	[ "$status" -eq 1 ]
	[ "$stderr" = "luamemtrace report: $T/nope.bin: No such file or directory" ]
}

@test "report: usage errors exit 2 with one line on stderr" {
	for args in "" "--bogus x.bin" "-x x.bin" "--pprof --folded x.bin" "--weight=live x.bin" \
		    "--folded --weight=heavy x.bin" "--folded --leak-only x.bin" \
		    "--folded --human-readable x.bin" "--folded --weight"; do
		run --separate-stderr "$LMT" report $args
		echo "args: $args -> $status: $stderr"
		[ "$status" -eq 2 ]
		[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
		[[ "$stderr" == "luamemtrace report: "* ]]
		[ -z "$output" ]
	done
	run --separate-stderr "$LMT" report --bogus x.bin
	[[ "$stderr" == *"unrecognized option '--bogus'"* ]]
}

@test "report --help: usage on stdout, exit 0" {
	run "$LMT" report --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--folded"* ]]
	[[ "$output" == *"3 report printed from an incomplete stream: truncated, or its FILE.info"* ]]
}

@test "report: control characters in names are escaped in every output" {
	{ printf 'ljs\x03\x00\x00\x00'
	  printf '\x00\x10\x0c@a\tb\x1b[1m.lua\x00'      # proto 0x10 "@a<TAB>b<ESC>[1m.lua"
	  printf '\x01\x80\x01\x05c\x7f;f\x0d'            # C symbol 0x80 "c<DEL>;f<CR>"
	  printf '\x80ljm\x03\x00\x00\x00'
	  printf '\x09\x10\x01\xa0\x01\x03'               # ALLOC proto 0x10 line 1, 3 bytes
	  printf '\x0d\x81\x01\xb0\x01\x02'               # ALLOC cfunc 0x81, 2 bytes
	  printf '\x80'; } > "$T/esc.bin"
	for opt in "" --leak-only --human-readable --folded; do
		run "$LMT" report $opt "$T/esc.bin"
		[ "$status" -eq 0 ]
		[ -z "$(printf '%s' "$output" | LC_ALL=C grep $'[\x1b\x7f\r]')" ]
		[[ "$output" == *'@a\tb\x1b[1m.lua:1'* ]]
	done
	run "$LMT" report "$T/esc.bin"
	[[ "$output" == *'c\x7f;f\r:0x80: 1 events'* ]]
	run "$LMT" report --folded "$T/esc.bin"
	[ "$output" = "$(printf '%s\n' '@a\tb\x1b[1m.lua:1 3' 'c\x7f,f\r:0x80 2')" ]
}

# Chunk and C names with C1 controls (raw and UTF-8-encoded CSI) and
# ill-formed UTF-8: escaped by util/esc.h's rule; é and NBSP pass unchanged.
hostile_stream() {
	printf 'ljs\x03\x00\x00\x00'
	# proto 0x10: "@a" U+009B "31m" 0x9b "1m", overlong '/', surrogate,
	# > U+10FFFF, "café" NBSP, a 3-byte sequence cut by the end of the name
	printf '\x00\x10\x1c@a\xc2\x9b31m\x9b1m\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80caf\xc3\xa9\xc2\xa0\xe2\x82\x00'
	printf '\x01\x80\x01\x07c\x9f;\xe0\x80\xaf\xff'    # C symbol 0x80
	printf '\x00\x20\x08x\n\t\xc2\x85y\x9b\n\x00'      # proto 0x20: aliased source
	printf '\x80ljm\x03\x00\x00\x00'
	printf '\x09\x10\x01\xa0\x01\x03'                  # ALLOC proto 0x10 line 1, 3 bytes
	printf '\x0d\x81\x01\xb0\x01\x02'                  # ALLOC cfunc 0x81, 2 bytes
	printf '\x09\x20\x02\xc0\x01\x05'                  # ALLOC proto 0x20 line 2, 5 bytes
	printf '\x80'
}

@test "report: C1 controls and ill-formed UTF-8 in names are escaped in every output" {
	hostile_stream > "$T/c1.bin"
	local a c
	a=$'@a\\xc2\\x9b31m\\x9b1m\\xc0\\xaf\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80caf\xc3\xa9\xc2\xa0\\xe2\\x82'
	c='c\x9f;\xe0\x80\xaf\xff'
	run "$LMT" report "$T/c1.bin"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s\n' \
		'ALLOCATIONS' \
		$'function_alias_1:2: 1 events\t+5B\t-0B' \
		"$a"$':1: 1 events\t+3B\t-0B' \
		"$c"$':0x80: 1 events\t+2B\t-0B' \
		'' 'REALLOCATIONS' '' 'DEALLOCATIONS' '' \
		'HEAP SUMMARY:' \
		'function_alias_1:2 holds 5B: 1 allocs, 0 frees' \
		"$a:1 holds 3B: 1 allocs, 0 frees" \
		"$c:0x80 holds 2B: 1 allocs, 0 frees" \
		'' 'ALIASES:' 'function_alias_1:' \
		$'1\t| x' \
		$'2\t| \t\\xc2\\x85y\\x9b')" ]
	run "$LMT" report --leak-only "$T/c1.bin"
	[ "$status" -eq 0 ]
	[[ "$output" == "HEAP SUMMARY:"*$'\n'"$a:1 holds 3B: 1 allocs, 0 frees"$'\n'"$c:0x80 holds 2B"* ]]
	run "$LMT" report --folded "$T/c1.bin"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s\n' "$a:1 3" 'c\x9f,\xe0\x80\xaf\xff:0x80 2' 'function_alias_1:2 5')" ]
	# Byte check of every output: without é and NBSP, printable ASCII,
	# TAB and LF only; and the whole is well-formed UTF-8 with no C1.
	for opt in "" --leak-only --human-readable --folded; do
		"$LMT" report $opt "$T/c1.bin" > "$T/out"
		[ -z "$(sed $'s/\xc3\xa9//g; s/\xc2\xa0//g' "$T/out" | LC_ALL=C tr -d '\t\n\040-\176')" ]
		iconv -f UTF-8 -t UTF-8 "$T/out" > /dev/null
		if LC_ALL=C.UTF-8 grep -qP '[\x{80}-\x{9f}]' "$T/out"; then false; fi
	done
	[[ "$(cat "$T/out")" == *"caf"$'\xc3\xa9\xc2\xa0'* ]]
}

@test "report: a bad magic is quoted with the same escaping, quote and backslash too" {
	printf '\xc2\x9b"\x03\x00\x00\x00\x80' > "$T/magic.bin"
	run --separate-stderr "$LMT" report "$T/magic.bin"
	[ "$status" -eq 1 ]
	[ "$stderr" = "luamemtrace report: $T/magic.bin: offset 0: bad symtab magic \"\\xc2\\x9b\\x22\" (want \"ljs\")" ]
	printf '\xc3\xa9\\\x03\x00\x00\x00\x80' > "$T/magic.bin"
	run --separate-stderr "$LMT" report "$T/magic.bin"
	[ "$status" -eq 1 ]
	[ "$stderr" = "luamemtrace report: $T/magic.bin: offset 0: bad symtab magic \""$'\xc3\xa9'"\\x5c\" (want \"ljs\")" ]
}

@test "report: chunk names with newlines become aliases" {
	{ printf 'ljs\x03\x00\x00\x00\x80ljm\x03\x00\x00\x00'
	  printf '\x08\x10\x12local x\n\nreturn x\n\x00'
	  printf '\x09\x10\x02\xa0\x01\x05'
	  printf '\x80'; } > "$T/alias.bin"
	run "$LMT" report --leak-only "$T/alias.bin"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'HEAP SUMMARY:\nfunction_alias_1:2 holds 5B: 1 allocs, 0 frees\n\nALIASES:\nfunction_alias_1:\n1\t| local x\n2\t| return x')" ]
}

@test "the writer encodes every in-VM fixture stream again byte for byte (so no event costs more bytes than in-VM)" {
	local n=0 f
	for f in "$FIX"/*.bin; do
		"$BATS_TEST_DIRNAME/../build/mpdump" --rewrite "$f" "$T/rw.bin"
		cmp "$f" "$T/rw.bin"
		n=$((n + 1))
	done
	[ "$n" -eq 5 ]
}
