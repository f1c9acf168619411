#!/usr/bin/env bats
# The tracer's end-of-trace summary: its top allocation sites are the first
# lines of `luamemtrace report`'s ALLOCATIONS for the same stream, and the
# names in it are escaped like every output's. Traces a real luajit (root).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

HEADING="  top allocation sites (first lines of ALLOCATIONS in 'luamemtrace report --human-readable'):"

# top ERR: the summary's top-site lines in the tracer's stderr ERR, less
# their two-space indent.
top() {
	awk -v h="$HEADING" '$0 == h { f = 1; next } f && /^  wrote / { exit } f' "$1" |
		sed 's/^  //'
}

# allocations BIN: the ALLOCATIONS section of BIN's report --human-readable.
allocations() {
	"$LMT" report --human-readable "$1" | awk 'NR == 1 { if ($0 != "ALLOCATIONS") exit 1; next } /^$/ { exit } 1'
}

@test "summary: top sites are the first lines of report's ALLOCATIONS, -t N of them" {
	cd "$LUA_DIR"
	"$LMT" -o "$T/a.bin" -- luajit alloc.lua > /dev/null 2> "$T/err"
	grep -qxF "$HEADING" "$T/err"
	allocations "$T/a.bin" > "$T/all"
	# more sites than the default 10, or the test proves little
	[ "$(wc -l < "$T/all")" -gt 10 ]
	top "$T/err" > "$T/top"
	head -10 "$T/all" | diff - "$T/top"
	# ALLOC and REALLOC are not added: line 5's table reallocations are
	# in REALLOCATIONS only, and line 4 keeps its own 1000 events
	grep -qx $'@alloc.lua:4: 1000 events\t+62.50KiB\t-0B' "$T/top"

	"$LMT" -t 3 -o "$T/b.bin" -- luajit alloc.lua > /dev/null 2> "$T/err3"
	top "$T/err3" > "$T/top3"
	[ "$(wc -l < "$T/top3")" -eq 3 ]
	allocations "$T/b.bin" | head -3 | diff - "$T/top3"

	# -t above the number of sites: the whole section
	"$LMT" -t 1000 -o "$T/c.bin" -- luajit alloc.lua > /dev/null 2> "$T/errall"
	allocations "$T/c.bin" | diff - <(top "$T/errall")
}

@test "summary: hostile chunk names are escaped in the top sites" {
	cd "$T"
	# chunk name "@" U+009B (CSI) "x" 0x9b, an overlong '/', ".lua"
	"$LMT" -o "$T/h.bin" -- luajit -e 'jit.off()
		local f = loadstring("local t = {} for i = 1, 2000 do t[i] = {} end",
				     "@\194\155x\155\192\175.lua")
		f()' > /dev/null 2> "$T/err"
	top "$T/err" > "$T/top"
	[[ "$(head -1 "$T/top")" == '@\xc2\x9bx\x9b\xc0\xaf.lua:1: 20'[0-9][0-9]' events'$'\t'* ]]
	allocations "$T/h.bin" | head -1 | diff - <(head -1 "$T/top")
	# nothing but printable ASCII, TAB and LF on the tracer's stderr
	[ -z "$(LC_ALL=C tr -d '\t\n\040-\176' < "$T/err")" ]
}

@test "summary, -o DIR: a lone stream's top sites; several streams, none (the summary's tally is not kept for them)" {
	cd "$LUA_DIR"
	"$LMT" -o "$T/d/" -- luajit alloc.lua > /dev/null 2> "$T/err"
	set -- "$T"/d/*.bin
	[ "$#" -eq 1 ]
	grep -qxF "$HEADING" "$T/err"
	allocations "$1" | head -10 | diff - <(top "$T/err")
	"$LMT" -o "$T/e/" -- "$BATS_TEST_DIRNAME/../build/host" -t 2 alloc.lua > /dev/null 2> "$T/err2"
	grep -q '^  wrote [0-9]* streams in ' "$T/err2"
	! grep -qF "$HEADING" "$T/err2"
}
