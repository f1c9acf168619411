#!/usr/bin/env bats
# The source tree's layout: no include cycles (tests/tools/include-cycles.sh)
# and, in user/report/, outputs that are leaves. Needs no root.

bats_require_minimum_version 1.5.0

setup() {
	ROOT="$BATS_TEST_DIRNAME/.."
	CYCLES="$BATS_TEST_DIRNAME/tools/include-cycles.sh"
	T="$BATS_TEST_TMPDIR"
}

@test "include-cycles: user/report/ has no include cycle" {
	run "$CYCLES" "$ROOT/user/report"
	[ "$status" -eq 0 ]
	[[ "$output" == "no include cycles: "*" nodes, "*" edges" ]]
}

@test "include-cycles: a cycle of modules, of headers, and none, as the tool says" {
	mkdir -p "$T/d/sub"
	# a.c calls b, b.c calls a: modules a and b are a cycle, their files not
	printf '#include "b.h"\n' > "$T/d/a.c"
	printf '#include "a.h"\n' > "$T/d/b.c"
	printf '#include <stdio.h>\n' > "$T/d/a.h"
	printf '#include "sub/c.h"\n#include "../outside.h"\n' > "$T/d/b.h"
	: > "$T/d/sub/c.h"
	: > "$T/outside.h"
	run "$CYCLES" "$T/d"
	[ "$status" -eq 1 ]
	[ "$output" = "include cycle: a -> b -> a" ]
	run "$CYCLES" --files --graph "$T/d"
	[ "$status" -eq 0 ]
	[ "$output" = "a.c -> b.h
b.c -> a.h
b.h -> sub/c.h
no include cycles: 5 nodes, 3 edges" ]
	# headers that include each other; "x.h" beside sub/y.h first
	printf '#include "x.h"\n' > "$T/d/sub/y.h"
	printf '#include "y.h"\n' > "$T/d/sub/x.h"
	printf 'int decoy;\n' > "$T/d/x.h"
	run "$CYCLES" --files "$T/d"
	[ "$status" -eq 1 ]
	[ "$output" = "include cycle: sub/x.h -> sub/y.h -> sub/x.h" ]
	run "$CYCLES" "$T/nope"
	[ "$status" -eq 2 ]
}

# The public functions of user/report/FILE.c, one a line.
entries() {
	sed -n -E '/^static/d; s/^[a-z][a-z0-9_ ]*[ *]([a-z_][a-z0-9_]*)\(.*/\1/p' \
		"$ROOT/user/report/$1.c" | LC_ALL=C sort
}

@test "report: outputs are leaves: no file but the dispatcher (cli.c) calls an output" {
	local outputs="flame folded pprof sites text" o f names hits
	# the entry points, as they are today: a rename must be seen here
	[ "$(entries flame | tr '\n' ' ')" = "flame_add flame_free flame_heap flame_key flame_new flame_print flame_write " ]
	[ "$(entries folded | tr '\n' ' ')" = "folded_print " ]
	[ "$(entries pprof | tr '\n' ' ')" = "pprof_add pprof_free pprof_new pprof_print pprof_write " ]
	[ "$(entries sites | tr '\n' ' ')" = "report_sites " ]
	[ "$(entries text | tr '\n' ' ')" = "report_print_top text_print " ]
	for o in $outputs; do
		names=$(entries "$o" | paste -sd'|')
		for f in "$ROOT"/user/report/*.c; do
			case ${f##*/} in "$o.c" | cli.c) continue ;; esac
			hits=$(grep -nE "(^|[^A-Za-z0-9_])($names)[[:space:]]*\(" "$f" || true)
			if [ -n "$hits" ]; then
				echo "${f##*/} calls $o: $hits"
				return 1
			fi
		done
	done
}

# -- The rooms of user/ (tests/tools/layers.sh) ---------------------------------

@test "include-cycles: user/ has no include cycle, module by module" {
	run "$CYCLES" "$ROOT/user"
	[ "$status" -eq 0 ]
	[[ "$output" == "no include cycles: "*" nodes, "*" edges" ]]
}

@test "layers: includes and calls in user/ go down the rooms, and no room has a circle" {
	run "$BATS_TEST_DIRNAME/tools/layers.sh" "$ROOT/build"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# A tree of three rooms the tool is run on: util/up.c includes a header
# of session/ and calls a function of it, util/a.c and util/b.c call
# each other, format/ok.c calls util/ (down: fine).
@test "layers: the tool finds an include up, a call up and a circle in a room, and nothing else" {
	local d="$BATS_TEST_TMPDIR/tree" f
	mkdir -p "$d/tests/tools" "$d/user/util" "$d/user/session" "$d/user/format" \
		"$d/build/util" "$d/build/session" "$d/build/format"
	cp "$BATS_TEST_DIRNAME/tools/layers.sh" "$d/tests/tools/"
	echo 'int sess_fn(void);' > "$d/user/session/s.h"
	printf '#include "session/s.h"\nint up(void) { return sess_fn(); }\n' > "$d/user/util/up.c"
	printf 'int b(int);\nint a(int n) { return n ? b(n - 1) : 0; }\n' > "$d/user/util/a.c"
	printf 'int a(int);\nint b(int n) { return n ? a(n - 1) : 1; }\n' > "$d/user/util/b.c"
	printf 'int sess_fn(void) { return 1; }\n' > "$d/user/session/s.c"
	printf 'int a(int);\nint ok(void) { return a(2); }\n' > "$d/user/format/ok.c"
	for f in util/up util/a util/b session/s format/ok; do
		cc -c -I"$d/user" "$d/user/$f.c" -o "$d/build/$f.o"
	done
	run "$d/tests/tools/layers.sh" "$d/build"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "call up: util/up.o -> session/s.o (sess_fn)" ]
	[ "${lines[1]}" = "circle: util/a.o" ]
	[ "${lines[2]}" = "circle: util/b.o" ]
	[ "${lines[3]}" = "include up: user/util/up.c -> user/session/s.h" ]
	[ "${#lines[@]}" -eq 4 ]
}
