#!/usr/bin/env bats
# luamemtrace heap: a running LuaJIT heap copied from outside, with exact
# counts (tests/lua/heap_known.lua builds a heap of known shape, its GC
# stopped; its in-VM oracle counts what Lua can reach).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# snap JITFLAG N M U K C Y G: runs heap_known.lua with those counts,
# snapshots it into $T/heap.out (status in HEAP_RC), lets it end;
# its output in $T/target.out.
snap() {
	local jit=$1
	shift
	rm -f "$T/in"
	mkfifo "$T/in"
	luajit "$jit" "$LUA_DIR/heap_known.lua" "$@" < "$T/in" > "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/target.out" ready
	HEAP_RC=0
	"$LMT" heap -p "$TARGET" > "$T/heap.out" 2> "$T/heap.err" || HEAP_RC=$?
	# never left stopped: it runs on (S: asleep on its stdin)
	TARGET_STATE=$(awk '{print $3}' "/proc/$TARGET/stat")
	echo go >&5
	exec 5>&-
	wait "$TARGET"
}

# col TYPE N: column N of TYPE's row of the summary (2 objects, 3 bytes,
# 4 reachable, 5 their bytes, 6 garbage, 7 its bytes).
col() {
	awk -v t="$1" -v n="$2" '$1 == t { print $n; exit }' "$T/heap.out"
}

# oracle TYPE: the in-VM oracle's reachable count of TYPE.
oracle() {
	awk -v t="$1" '$1 == "oracle" { for (i = 2; i < NF; i += 2) if ($i == t) print $(i + 1) }' \
		"$T/target.out"
}

remainder() {
	awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/heap.out"
}

# The counts of a baseline (all 0) and of N=100 M=50 U=3 K=4 C=2 Y=5 G=7,
# per type and column, as TYPE:COL=value lines in $T/$1.
record() {
	local t c
	for t in table function thread userdata upvalue string; do
		for c in 2 4 6; do
			echo "$t:$c=$(col "$t" "$c")"
		done
	done > "$T/$1"
}

delta() { # delta TYPE COL: full minus base
	local a b
	a=$(awk -F= -v k="$1:$2" '$1 == k { print $2 }' "$T/base")
	b=$(awk -F= -v k="$1:$2" '$1 == k { print $2 }' "$T/full")
	echo $(( ${b:-0} - ${a:-0} ))
}

@test "heap, JIT off: reachable tables, functions, threads and userdata are the in-VM oracle's" {
	snap -joff 100 50 3 4 2 5 7
	cat "$T/heap.out"
	[ "$HEAP_RC" -eq 0 ]
	[ "$TARGET_STATE" = S ]
	grep -q '^done$' "$T/target.out"
	[ "$(col table 4)" = "$(oracle table)" ]
	[ "$(col function 4)" = "$(oracle function)" ]
	[ "$(col thread 4)" = "$(oracle thread)" ]
	[ "$(col userdata 4)" = "$(oracle userdata)" ]
	[ "$(oracle thread)" = 3 ]  # the main thread and C=2 coroutines
}

@test "heap: every byte of gc.total accounted for (remainder 0), JIT off and on" {
	snap -joff 100 50 3 4 2 5 7
	cat "$T/heap.out"
	[ "$(remainder)" = 0 ]
	! grep -q '^incomplete' "$T/heap.out"
	snap -jon 100 50 3 4 2 5 7
	cat "$T/heap.out"
	[ "$(remainder)" = 0 ]
	! grep -q '^incomplete' "$T/heap.out"
	[ "$(col trace 2)" -gt 0 ]  # traces walked (in gc.root)
}

# known_deltas JITFLAG: the counts of N=100 M=50 U=3 K=4 C=2 Y=5 G=7
# against a baseline (all 0): reachable tables N + M + U (upvalue-held) + C
# (coroutine locals) = 155; functions U holders + C coroutine bodies;
# threads C; closed upvalues reachable U (held); no userdata.
known_deltas() {
	snap "$1" 0 0 0 0 0 0 0
	record base
	snap "$1" 100 50 3 4 2 5 7
	record full
	[ "$(delta table 4)" = 155 ]
	[ "$(delta function 4)" = 5 ]
	[ "$(delta thread 4)" = 2 ]
	[ "$(delta upvalue 4)" = 3 ]
	[ "$(delta userdata 2)" = 0 ]
}

@test "heap, JIT off: the known graph's exact counts, against a baseline" {
	known_deltas -joff
	# garbage tables: K weak keys + 2Y cycle members + G dropped = 4 + 10 + 7,
	# and the oracle's debug.getinfo results: 2 per frame of the C=2
	# coroutines (2 frames each) = 8
	[ "$(delta table 6)" = 29 ]
}

@test "heap, JIT on: the same deltas; traces' constants keep objects alive as lj_gc.c does" {
	known_deltas -jon
}

@test "heap: exact bytes of M instances (64 bytes each: a GCtab, no array or hash part)" {
	snap -joff 0 0 0 0 0 0 0
	record base
	local b0=$(col table 5)
	snap -joff 0 50 0 0 0 0 0
	local b1=$(col table 5)
	# 50 * sizeof(GCtab) = 3200, plus INST's array part grown to 64 slots
	# (lj_tab_resize: asize 65 with slot 0, 8 bytes each) = 520
	[ "$((b1 - b0))" = $((50 * 64 + 65 * 8)) ]
}

@test "heap: no such process" {
	run "$LMT" heap -p 4000000
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: no such process: No such process" ]
}

@test "heap: a process without LuaJIT: said, and not left stopped" {
	sleep 30 3>&- &
	local pid=$!
	run "$LMT" heap -p "$pid"
	local st=$(awk '{print $3}' "/proc/$pid/stat")
	kill "$pid"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: no LuaJIT VM in process $pid" ]
	[ "$st" = S ]
}

@test "heap: a bad command line" {
	run "$LMT" heap
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "luamemtrace heap: one process: -p PID, or a snapshot FILE" ]
	run "$LMT" heap -p 12x
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "luamemtrace heap: -p takes a process ID" ]
}

@test "heap: a target stopped by someone else is read as it is and left stopped" {
	spin 'local t = {} while true do t[1] = 1 end'
	local pid=$SPIN
	kill -STOP "$pid"
	run "$LMT" heap -p "$pid"
	local st=$(awk '{print $3}' "/proc/$pid/stat")
	kill -CONT "$pid"
	kill "$pid"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$st" = T ]
	[[ "$output" == *"target was stopped already: read as it was, left stopped"* ]]
	[ "$(printf '%s\n' "$output" | awk '/remainder/ { print $NF }')" = 0 ]
}

@test "heap: a running target is stopped, copied and continued (it keeps running)" {
	spin 'local n = 0 while true do n = n + 1 end'
	local pid=$SPIN
	run "$LMT" heap -p "$pid"
	local st=$(awk '{print $3}' "/proc/$pid/stat")
	kill "$pid"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$st" = R ]
	[[ "$output" == *"target stopped "*" ms"* ]]
}

# row RETAINED SHALLOW TYPE PATH: a line of the report's top retainers
# (heap --top 100000 lists every reachable object) with exactly these.
has_row() {
	awk -v r="$1" -v s="$2" -v t="$3" -v p="$4" '
		/^top retainers/ { on = 1; next }
		/^largest objects/ { on = 0 }
		on && $1 == r && $2 == s && $3 == t {
			line = $0; sub(/^ *[0-9]+ +[0-9]+ +[a-z]+ +/, "", line)
			if (line == p) found++
		}
		END { print found + 0 }' "$T/heap.out"
}

@test "heap: retainers named as Lua writes them, retained bytes exact (dominator tree), JIT off and on" {
	local jit
	for jit in -joff -jon; do
		rm -f "$T/in"
		mkfifo "$T/in"
		luajit "$jit" "$LUA_DIR/heap_known.lua" 100 50 3 4 2 5 7 < "$T/in" > "$T/target.out" 3>&- &
		TARGET=$!
		exec 5> "$T/in"
		wait_for "$T/target.out" ready
		"$LMT" heap -p "$TARGET" --top 100000 > "$T/heap.out"
		echo go >&5
		exec 5>&-
		wait "$TARGET"
		# the cache: 64 + 128 nodes of 24 (its hash part); each of the 100
		# entries a table with an array part of 3 slots (64 + 24) and its
		# key's string: "u1".."u99" 24 + 4, "u100" 24 + 8
		[ "$(has_row $((3136 + 100 * 88 + 99 * 28 + 32)) 3136 table package.loaded.x.cache)" = 1 ]
		# x: 64 + 2 nodes (hmask 1)
		[ "$(has_row $((112 + 14740)) 112 table package.loaded.x)" = 1 ]
		# INST: 64 + 65 array slots, and its 50 instances (the class is
		# held by package.loaded too: not retained by INST)
		[ "$(has_row $((584 + 50 * 64)) 584 table INST)" = 1 ]
		# a table held only by an upvalue, three times
		[ "$(has_row 64 64 table "upvalue held of function $LUA_DIR/heap_known.lua:35")" = 3 ]
		# a coroutine's local (its stack slot), twice
		[ "$(has_row 64 64 table "stack slot 4 of coroutine at $LUA_DIR/heap_known.lua:45")" = 2 ]
		# tables by metatable: the class, named where the program keeps it
		grep -qE '^ +50 +3200  package\.loaded\["app\.models"\]\.User$' "$T/heap.out"
		# functions by prototype: the three upvalue holders
		grep -qE "^ +3 +144  $LUA_DIR/heap_known.lua:35\$" "$T/heap.out"
	done
}

@test "heap -o FILE: a snapshot file, reported later the same (mode 0600)" {
	rm -f "$T/in"
	mkfifo "$T/in"
	luajit -joff "$LUA_DIR/heap_known.lua" 100 50 3 4 2 5 7 < "$T/in" > "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/target.out" ready
	"$LMT" heap -p "$TARGET" -o "$T/s.lmh" --top 50 > "$T/live.out"
	echo go >&5
	exec 5>&-
	wait "$TARGET"
	[ "$(stat -c %a "$T/s.lmh")" = 600 ]
	"$LMT" heap --top 50 "$T/s.lmh" > "$T/file.out"
	diff "$T/live.out" "$T/file.out"
	grep -q 'package.loaded.x.cache$' "$T/file.out"
	# an existing file is kept unless -f
	run "$LMT" heap -p "$TARGET" -o "$T/s.lmh"
	[ "$status" -eq 2 ]
}

@test "heap FILE: a cut or foreign file is one line of error" {
	run "$LMT" heap /etc/passwd
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: /etc/passwd: not a heap snapshot (luamemtrace heap -o)" ]
	printf 'LMHEAP\0\0\1\0\0\0\1\0\0\0\17LuaJIT 2.1 GC64' > "$T/cut.lmh"
	run "$LMT" heap "$T/cut.lmh"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: $T/cut.lmh: truncated" ]
	printf 'LMHEAP\0\0\3\0\0\0' > "$T/v3.lmh"
	run "$LMT" heap "$T/v3.lmh"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: $T/v3.lmh: snapshot version 3 (this luamemtrace reads 1 to 2)" ]
}

@test "heap: a heap that lies (a table's array part, a looping gc.root): counted, said, exit 3, the target unharmed" {
	rm -f "$T/in"
	mkfifo "$T/in"
	luajit -joff "$LUA_DIR/heap_hostile.lua" < "$T/in" > "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/target.out" ready
	run "$LMT" heap -p "$TARGET"
	local st=$(awk '{print $3}' "/proc/$TARGET/stat")
	kill -9 "$TARGET" # lua_close would loop in its gc.root
	wait "$TARGET" 2>/dev/null || true
	exec 5>&-
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$st" = S ]
	[[ "$output" == *"  objects copied in part (a cap, or unreadable): 1"* ]]
	[[ "$output" == *"  object lists cut (a repeat, or the cap): 1"* ]]
	# the walk ended at the loop: the two tables, newest first, and no more
	[ "$(printf '%s\n' "$output" | awk '$1 == "table" { print $2 }')" = 2 ]
}
