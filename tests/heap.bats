#!/usr/bin/env bats
# luamemtrace heap: a running LuaJIT heap copied from outside, with exact
# counts (tests/lua/heap_known.lua builds a heap of known shape, its GC
# stopped; its in-VM oracle counts what Lua can reach).

load helpers

bats_require_minimum_version 1.5.0
load variants

setup() {
	T="$BATS_TEST_TMPDIR"
}

# snap JITFLAG N M U K C Y G [P]: runs heap_known.lua with those counts
# (under $LJ, Debian's luajit by default; another script of tests/lua in
# SNAP_LUA), snapshots it into $T/heap.out (status in HEAP_RC; more
# options to heap in SNAP_OPTS), lets it end; its output in
# $T/target.out.
snap() {
	local jit=$1
	shift
	rm -f "$T/in"
	mkfifo "$T/in"
	LUA_CPATH="$BATS_TEST_DIRNAME/../build/?.so" \
		"${LJ:-luajit}" "$jit" "$LUA_DIR/${SNAP_LUA:-heap_known.lua}" "$@" < "$T/in" \
		> "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/target.out" ready
	HEAP_RC=0
	"$LMT" heap -p "$TARGET" ${SNAP_OPTS:-} > "$T/heap.out" 2> "$T/heap.err" || HEAP_RC=$?
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

# The in-VM oracle (heap_known.lua's oracle()) walks from Lua what
# lj_gc.c marks: the registry (luaL_ref slots too), the globals, the main
# thread's frames, the strings' metatable, every table's metatable and
# entries (__mode honoured), functions' env and upvalues (open ones too),
# coroutines' frames and locals, userdata's metatable and env, and the
# traces' GC constants (jit.util.tracek). It cannot see, so counts no
# strings (prototypes' constants, gcroot's metamethod names), prototypes,
# upvalue objects, traces, cdata; nor a table only a prototype holds (a
# constructor's template: heap_known.lua has none) or only C holds.
@test "heap: reachable tables, functions, threads and userdata are the in-VM oracle's, JIT off and on, more shapes" {
	[ -f "$BATS_TEST_DIRNAME/../build/lmtmod.so" ] # make build/lmtmod.so (make test does)
	local jit p
	for jit in -joff -jon; do
		for p in "" 4; do
			snap "$jit" 100 50 3 4 2 5 7 $p
			cat "$T/heap.out"
			[ "$HEAP_RC" -eq 0 ]
			[ "$TARGET_STATE" = S ]
			grep -q '^done$' "$T/target.out"
			[ "$(col table 4)" = "$(oracle table)" ]
			[ "$(col function 4)" = "$(oracle function)" ]
			[ "$(col thread 4)" = "$(oracle thread)" ]
			[ "$(col userdata 4)" = "$(oracle userdata)" ]
			# the main thread, C=2 coroutines, P more
			[ "$(oracle thread)" = $((3 + ${p:-0})) ]
		done
	done
}

# The more shapes (P=4) against none, JIT off and on: reachable tables
# 5P + 13 (P udata envs, their shared metatable and one table in it, UDS;
# WEAKV, its metatable, STRONG and its P tables; OPEN, P pairs, P
# coroutine locals; VIAMT, its metatable, the __index table and a table in
# it; REFS and P tables held by luaL_ref; the lmtmod module), functions
# 2P + 2 (coroutine bodies, closures with an open upvalue, lmtmod.make and
# .ref), threads P, userdata P + 1 (the C module's handle); garbage tables
# P (only WEAKV's values) + 16 (the oracle's debug.getinfo results: 2 per
# frame, 2 frames of each of P coroutines).
@test "heap: the more shapes' exact counts (udata with env and metatable, weak values, open upvalues, __index, luaL_ref), JIT off and on" {
	[ -f "$BATS_TEST_DIRNAME/../build/lmtmod.so" ]
	local jit
	for jit in -joff -jon; do
		snap "$jit" 100 50 3 4 2 5 7
		record base
		snap "$jit" 100 50 3 4 2 5 7 4
		record full
		[ "$(delta table 4)" = 33 ]
		[ "$(delta function 4)" = 10 ]
		[ "$(delta thread 4)" = 4 ]
		[ "$(delta userdata 4)" = 5 ]
		[ "$(delta table 6)" = 20 ]
	done
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
	stopped_now "$pid"
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

# known_rows TAB KEYS FN: the retainers of heap_known.lua 100 50 3 4 2 5 7
# in $T/heap.out, at a build's sizes: sizeof(GCtab) TAB, the cache's key
# strings it alone holds KEYS bytes in all (key_bytes), a Lua closure of
# one upvalue FN bytes (a Node is 24 bytes, a TValue 8, either way).
known_rows() {
	local tab=$1 fn=$3
	local cache=$(($1 + 128 * 24)) x=$(($1 + 2 * 24)) inst=$(($1 + 65 * 8)) r
	# the cache: its 128 nodes (its hash part); each of the 100 entries a
	# table with an array part of 3 slots, and their keys' strings
	r=$((cache + 100 * (tab + 24) + $2))
	[ "$(has_row $r $cache table package.loaded.x.cache)" = 1 ]
	# x: 2 nodes (hmask 1)
	[ "$(has_row $((x + r)) $x table package.loaded.x)" = 1 ]
	# INST: 65 array slots, and its 50 instances (the class is held by
	# package.loaded too: not retained by INST)
	[ "$(has_row $((inst + 50 * tab)) $inst table INST)" = 1 ]
	# a table held only by an upvalue, three times
	[ "$(has_row $tab $tab table "upvalue held of function $LUA_DIR/heap_known.lua:35")" = 3 ]
	# a coroutine's local, by its name (the prototype's varinfo), twice
	[ "$(has_row $tab $tab table "local mine in coroutine at $LUA_DIR/heap_known.lua:45")" = 2 ]
	# tables by metatable: the class, named where the program keeps it
	grep -qE "^ +50 +$((50 * tab))  package\.loaded\[\"app\.models\"\]\.User\$" "$T/heap.out"
	# functions by prototype: the three upvalue holders
	grep -qE "^ +3 +$((3 * fn))  $LUA_DIR/heap_known.lua:35\$" "$T/heap.out"
}

# key_bytes STR: the cache's keys "u1".."u100" at sizeof(GCstr) STR,
# lj_str_size's (the length and its NUL rounded up to 4): "u1".."u99"
# STR + 4, "u100" STR + 8.
key_bytes() {
	echo $((99 * ($1 + 4) + $1 + 8))
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
		# GC64: sizeof(GCtab) 64, sizeof(GCstr) 24, a closure of one
		# upvalue 40 + 8
		known_rows 64 "$(key_bytes 24)" 48
		# a main chunk's local, in the frame below the one that reads
		# stdin (the top frame's PC is not kept: its slots keep their
		# numbers), a closure of one upvalue and its upvalue
		[ "$(has_row 96 48 function "local oracle of function $LUA_DIR/heap_known.lua:0 in main thread")" = 1 ]
	done
}

# cont_local LJ...: heap_cont.lua under each LJ (-joff, -jon: jit.off(),
# jit.on()): the coroutine's table named by its local, the body's PC read
# from the continuation frame above it (frame_contpc); without it, a stack
# slot's number.
cont_local() {
	local lj jit
	for lj in "$@"; do
		for jit in -joff -jon; do
			LJ=$lj SNAP_LUA=heap_cont.lua SNAP_OPTS="--top 100000" snap "$jit"
			[ "$HEAP_RC" -eq 0 ]
			[ "$(grep -cE "^ +[0-9]+ +[0-9]+  table     local kept in coroutine at $LUA_DIR/heap_cont.lua:7\$" "$T/heap.out")" = 1 ]
		done
	done
}

@test "heap: a local of a coroutine suspended inside a metamethod named (its PC from the continuation frame), GC64 on and off, Tarantool's fork, JIT off and on" {
	lj32
	local up=$LJ32
	tarantool_lj
	cont_local luajit "$up" "$LJ32"
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

# hostile LJ [stray]: heap_hostile.lua under LJ (with HOSTILE_J's options)
# snapshotted (the report in output, status in status, its state in
# HOSTILE_STATE), then killed.
hostile() {
	rm -f "$T/in"
	mkfifo "$T/in"
	"$1" ${HOSTILE_J:-} "$LUA_DIR/heap_hostile.lua" ${2:-} < "$T/in" > "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/target.out" ready
	run "$LMT" heap -p "$TARGET" --top 1000
	HOSTILE_STATE=$(awk '{print $3}' "/proc/$TARGET/stat")
	kill -9 "$TARGET" # lua_close would loop in its gc.root
	wait "$TARGET" 2>/dev/null || true
	exec 5>&-
	echo "$output"
}

@test "heap: a heap that lies (a table's array part, a looping gc.root): counted, said, exit 3, the target unharmed" {
	HOSTILE_J=-joff hostile luajit
	[ "$status" -eq 3 ]
	[ "$HOSTILE_STATE" = S ]
	[[ "$output" == *"  objects copied in part (a cap, or unreadable): 1"* ]]
	[[ "$output" == *"  object lists cut (a repeat, or the cap): 1"* ]]
	# the walk ended at the loop: the two tables, newest first, and no more
	[ "$(printf '%s\n' "$output" | awk '$1 == "table" { print $2 }')" = 2 ]
}

# churn_snap N [OPTION]: heap_churn.lua with N items, snapshotted 5 times
# while it allocates and writes its heap (heap's OPTION, --no-fork: the
# copy made while it runs, then the pages it wrote read again stopped);
# each report in $T/churn.I.
churn_snap() {
	luajit "$LUA_DIR/heap_churn.lua" "$1" 0 "$T/churn.ready" 3>&- &
	TARGET=$!
	wait_for "$T/churn.ready" ready
	local i
	for i in 1 2 3 4 5; do
		"$LMT" heap ${2:-} -p "$TARGET" > "$T/churn.$i" 2> "$T/churn.$i.err" || echo "rc $?" >> "$T/churn.$i"
	done
	CHURN_STATE=$(awk '{print $3}' "/proc/$TARGET/stat")
	kill "$TARGET"
	wait "$TARGET" 2>/dev/null || true
}

# churn_ok I: snapshot I of churn_snap 500 adds up: remainder 0, whole,
# the 500 items exact.
churn_ok() {
	cat "$T/churn.$1.err" "$T/churn.$1"
	[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/churn.$1")" = 0 ]
	! grep -q '^incomplete\|^rc ' "$T/churn.$1"
	grep -qE '^ +500 +32000  package\.loaded\["app\.cache"\]\.Item$' "$T/churn.$1"
}

@test "heap: a target that allocates and writes its heap during the copy: one instant from a fork (remainder 0, the items exact), left running" {
	churn_snap 500
	[ "$CHURN_STATE" = R ]
	local i
	for i in 1 2 3 4 5; do
		churn_ok "$i"
		grep -qE "^luamemtrace heap: PID $TARGET: stopped [0-9.]+ ms to fork a copy-on-write copy of it( \([0-9]+ forks: a copy that did not add up taken again\))?, read [0-9.]+ MB of the copy in [0-9]+ ms as it ran on, then stopped [0-9.]+ ms to reap the copy; longest stop [0-9.]+ ms$" "$T/churn.$i.err"
	done
}

@test "heap --no-fork: a target that allocates and writes its heap during the copy: one instant (remainder 0, the items exact), left running" {
	churn_snap 500 --no-fork
	[ "$CHURN_STATE" = R ]
	local i
	for i in 1 2 3 4 5; do
		churn_ok "$i"
		# how it was copied, and the pause, said: with soft-dirty bits, or
		# without them only because the kernel keeps none
		grep -qE "^luamemtrace heap: PID $TARGET: copied (while it ran \([0-9]+ ms(; [0-9]+ passes read again [0-9]+ pages it wrote, stopped [0-9.]+ ms in all to find them)?\), then stopped [0-9.]+ ms.*: [0-9]+ of [0-9]+ pages written meanwhile, read again \([0-9]+ reads\); longest stop [0-9.]+ ms|stopped [0-9.]+ ms.*: no soft-dirty bits \(the kernel keeps no soft-dirty bits \(CONFIG_MEM_SOFT_DIRTY\)\))$" "$T/churn.$i.err"
	done
}

# The reading of a process's own page table entries (probes/ptscan.c,
# bpf/ptscan.bpf.c) on pages whose state is known (tests/tools/ptcheck.c):
# here, a kernel without soft-dirty bits, the write-protected pages of
# the writable mapping are unwritten for the walk, the read-only mapping,
# the zero page and an absent page no claim; a walk that disagreed with
# pagemap's frames would be "off".
@test "heap: a process's own page table entries read (present, write-protected, not soft-dirty, in a writable mapping: unwritten; a read-only mapping, the zero page, absent: no claim)" {
	run --separate-stderr "$BATS_TEST_DIRNAME/../build/ptcheck"
	echo "$output"
	echo "$stderr"
	# a machine with NUMA balancing on: not read at all, said
	if [ "$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo 0)" != 0 ]; then
		[ "$status" -eq 1 ]
		[[ "$output" == *"off: NUMA balancing is on (kernel.numa_balancing)" ]]
		return
	fi
	[ "$status" -eq 0 ]
	case $output in
	sd\ *) [ "$output" = "sd 00110100 3 claimed" ] ;;
	*) [ "$output" = "nosd 00111100 4 claimed" ] ;;
	esac
}

# About 1 stop in 6 meets heap_churn.lua inside an allocation or a sweep
# step (its string table rehashed, a string chain's head kept in a local
# while it is swept, gc.total not yet updated: docs/heap.md); with 3 stops
# 2 ms apart, 1 snapshot of 80 here did not add up (and 4 of 200 took 4
# stops or more with the retries now). And the lock taken
# before the guardian's fork once kept the next snapshot out ("another
# luamemtrace heap is copying it") when the guardian had not yet run.
@test "heap: 40 snapshots in a row of a target that only allocates: each adds up (remainder 0, the items exact), none refused" {
	luajit "$LUA_DIR/heap_churn.lua" 200 0 "$T/churn3.ready" 3>&- &
	local pid=$! i
	wait_for "$T/churn3.ready" ready
	for i in $(seq 1 40); do
		"$LMT" heap -p "$pid" > "$T/c.$i" 2> "$T/c.$i.err" || echo "rc $?" >> "$T/c.$i"
	done
	kill "$pid"
	for i in $(seq 1 40); do
		echo "$i: $(cat "$T/c.$i.err")"
		[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/c.$i")" = 0 ]
		! grep -q '^incomplete\|^rc ' "$T/c.$i"
		! grep -q 'no copy added up\|one at a time' "$T/c.$i.err"
		grep -qE '^ +200 +12800  package\.loaded\["app\.cache"\]\.Item$' "$T/c.$i"
	done
}

@test "heap --stopped: the whole copy with the target stopped, said" {
	luajit "$LUA_DIR/heap_churn.lua" 100 0 "$T/churn2.ready" 3>&- &
	local pid=$!
	wait_for "$T/churn2.ready" ready
	"$LMT" heap --stopped -p "$pid" > "$T/out" 2> "$T/err"
	kill "$pid"
	cat "$T/err" "$T/out"
	# (a copy that did not add up, the target stopped mid-allocation, is
	# taken again: said in the parenthesis)
	grep -qE "^luamemtrace heap: PID $pid: copied stopped [0-9.]+ ms( \([0-9]+ stops, [0-9.]+ ms in all: a copy that did not add up taken again\))?: no soft-dirty bits \(--stopped\)$" "$T/err"
	[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/out")" = 0 ]
	grep -qE '^ +100 +6400  package\.loaded\["app\.cache"\]\.Item$' "$T/out"
}

# named NAME N: heap_churn.lua with N items, run as NAME (a link to luajit:
# its comm, which --exe matches; other engineers' luajit left alone); its
# PID appended to NAMED.
named() {
	ln -sf "$(command -v luajit)" "$T/$1"
	"$T/$1" "$LUA_DIR/heap_churn.lua" "$2" 0 "$T/$1.$2.ready" 3>&- &
	NAMED="${NAMED:-} $!"
	wait_for "$T/$1.$2.ready" ready
}

@test "heap --all --exe NAME -o DIR: every matching process, one snapshot each by PID, each left running" {
	local name=lmth$$ p n
	named "$name" 30
	named "$name" 70
	run "$LMT" heap --all --exe "$name" -o "$T/snaps" --top 3
	local states=$(for p in $NAMED; do awk '{print $3}' "/proc/$p/stat"; done | sort -u)
	kill $NAMED
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$states" = R ]
	[ "$(ls "$T/snaps" | wc -l)" = 2 ]
	[[ "$output" == *"luamemtrace heap: 2 processes snapshotted, 0 failed"* ]]
	n=0
	for p in $NAMED; do
		n=$((n + 1))
		[ "$(stat -c %a "$T/snaps/$p.lmh")" = 600 ]
		[[ "$output" == *"== PID $p"* ]]
		# the file's report: the items of that process, exactly
		"$LMT" heap "$T/snaps/$p.lmh" > "$T/f.out"
		local want=$([ $n = 1 ] && echo 30 || echo 70)
		grep -qE "^ +$want +$((want * 64))  package\.loaded\[\"app\.cache\"\]\.Item$" "$T/f.out"
	done
}

@test "heap --all: a process that fails is said in one line and counted, exit 1; none found is said" {
	local name=lmtf$$
	named "$name" 5
	named "$name" 6
	# a layout that is not theirs: no VM found in either
	run "$LMT" heap --all --exe "$name" --variant "OpenResty LuaJIT 2.1 GC64"
	kill $NAMED
	echo "$output"
	[ "$status" -eq 1 ]
	local p
	for p in $NAMED; do
		[ "$(printf '%s\n' "$output" | grep -c "process $p\$")" = 1 ]
	done
	[[ "$output" == *"luamemtrace heap: 0 processes snapshotted, 2 failed"* ]]
	run "$LMT" heap --all --exe "nosuch$$"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: no process running LuaJIT by that name" ]
	run "$LMT" heap --exe luajit -p 1
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "luamemtrace heap: --exe narrows --all" ]
}

# -- GC64 off (32-bit references) ---------------------------------------------

# lj32 [BUILD]: a GC64-off build of tests/variants.bash (built once per
# clone): upstream's luajit (gc64off, the default) or OpenResty's luajit2
# (lj2gc64off); its executable in LJ32, its layout entry's name in
# LJ32_NAME.
lj32() {
	local b=${1:-gc64off}
	case $b in
	gc64off) variant_gc64off; LJ32_NAME="LuaJIT 2.1 GC64 off" ;;
	lj2gc64off) variant_lj2gc64off; LJ32_NAME="OpenResty LuaJIT 2.1 GC64 off" ;;
	*) return 1 ;;
	esac
	LJ32="$VARIANTS/$b/src/src/luajit"
}

# counts: each type's objects, reachable and garbage of $T/heap.out.
counts() {
	awk '/^type / { on = 1; next } on && NF == 7 { print $1, $2, $4, $6 } on && $1 == "all" { exit }' \
		"$T/heap.out"
}

# paths: the top retainers' types and paths, but strings' and userdata's
# (a string key of two tables, or an upvalue of two functions, found at
# the same depth: named by whichever the hash order visits first, which
# the strings' hash seed makes each run's); stack slot numbers as N.
paths() {
	awk '/^top retainers/ { on = 1; next } /^largest objects/ { on = 0 }
	     on && $1 ~ /^[0-9]+$/ && $3 != "string" && $3 != "userdata" { $1 = ""; $2 = ""; print }' \
		"$T/heap.out" | sed -E 's/stack slot [0-9]+/stack slot N/' | sort
}

# plus_lib N: counts (on stdin) with N more reachable functions and N more
# reachable strings (N library functions, each reached by one name), and
# all's 2N more.
plus_lib() {
	awk -v n="$1" '$1 == "function" || $1 == "string" { $2 += n; $3 += n }
		$1 == "all" { $2 += 2 * n; $3 += 2 * n } { print }'
}

# like_ref REF [PATH...]: heap_known.lua 100 50 3 4 2 5 7 [4], JIT off and
# on, under REF then under $LJ32 (lj32), with one package.path (require
# "lmtmod" makes garbage strings of it: the source's default has 4
# templates, Debian's 6): $LJ32's walked whole by its own entry (remainder
# 0), its reachable tables, functions, threads and userdata the oracle's,
# its counts (every type's objects, reachable, garbage) and paths REF's;
# plus, for each PATH, a library function REF has not, at PATH, and the
# string that names it.
like_ref() {
	local ref=$1 jit p
	shift
	[ -f "$BATS_TEST_DIRNAME/../build/lmtmod.so" ]
	for jit in -joff -jon; do
		for p in "" 4; do
			LUA_PATH="$LUA_DIR/?.lua" LJ=$ref SNAP_OPTS="--top 100000" \
				snap "$jit" 100 50 3 4 2 5 7 $p
			[ "$HEAP_RC" -eq 0 ]
			counts | plus_lib $# > "$T/cref"
			{ paths; [ $# = 0 ] || printf '  function %s\n' "$@"; } | sort > "$T/pref"
			LUA_PATH="$LUA_DIR/?.lua" LJ=$LJ32 SNAP_OPTS="--top 100000" \
				snap "$jit" 100 50 3 4 2 5 7 $p
			cat "$T/heap.err" "$T/heap.out"
			[ "$HEAP_RC" -eq 0 ]
			[ "$TARGET_STATE" = S ]
			grep -qx "VM 0x[0-9a-f]\{8\} ($LJ32_NAME)" "$T/heap.out"
			[ "$(remainder)" = 0 ]
			! grep -q '^incomplete' "$T/heap.out"
			counts > "$T/c32"
			paths > "$T/p32"
			[ "$(col table 4)" = "$(oracle table)" ]
			[ "$(col function 4)" = "$(oracle function)" ]
			[ "$(col thread 4)" = "$(oracle thread)" ]
			[ "$(col userdata 4)" = "$(oracle userdata)" ]
			diff "$T/cref" "$T/c32"
			# every table, function, thread, upvalue, prototype named
			# alike (hundreds of them)
			[ "$(wc -l < "$T/p32")" -gt 400 ]
			diff "$T/pref" "$T/p32"
		done
	done
}

@test "heap, GC64 off: the known heaps' counts are GC64's, type by type (objects, reachable, garbage), JIT off and on; the oracle's; remainder 0; named alike" {
	lj32
	like_ref luajit
}

# luajit2's library against upstream's: jit.prngstate and six loaders in
# package.preload (named by the registry's _PRELOAD, the same table), each
# reached by one more string (its key).
@test "heap, OpenResty luajit2 GC64 off: the known heaps' counts are upstream GC64 off's but luajit2's 7 library functions (and their 7 keys), type by type, JIT off and on; the oracle's; remainder 0; named alike" {
	lj32
	local up=$LJ32
	lj32 lj2gc64off
	like_ref "$up" jit.prngstate \
		'registry._PRELOAD["table.clone"]' 'registry._PRELOAD["table.isarray"]' \
		'registry._PRELOAD["table.isempty"]' 'registry._PRELOAD["table.nkeys"]' \
		'registry._PRELOAD["thread.exdata"]' 'registry._PRELOAD["thread.exdata2"]'
}

# rows32 KEYS CACHE: heap_known.lua 100 50 3 4 2 5 7 under $LJ32, JIT
# off: its retainers named as on GC64, retained bytes exact at the 32-bit
# objects' sizes (KEYS: known_rows'), the cache retaining CACHE bytes; its
# snapshot file reported the same.
rows32() {
	LJ=$LJ32 SNAP_OPTS="--top 100000 -o $T/s.lmh" snap -joff 100 50 3 4 2 5 7
	cat "$T/heap.out"
	[ "$HEAP_RC" -eq 0 ]
	grep -qx "VM 0x[0-9a-f]\{8\} ($LJ32_NAME)" "$T/heap.out"
	# GCtab 32, a closure of one upvalue sizeLfunc(1) 20 + 4, locals
	# named by the one-slot frames' walk
	known_rows 32 "$1" 24
	[ "$(has_row "$2" 3104 table package.loaded.x.cache)" = 1 ]
	"$LMT" heap --top 100000 "$T/s.lmh" > "$T/file.out"
	diff "$T/heap.out" "$T/file.out"
}

# GCstr 20: the cache retains 11108 bytes (GC64: 14740)
@test "heap, GC64 off: retainers named as on GC64, retained bytes exact at the 32-bit objects' sizes; a snapshot file reported the same" {
	lj32
	rows32 "$(key_bytes 20)" 11108
}

@test "heap, OpenResty luajit2 GC64 off: retainers named as on GC64, retained bytes exact at the 32-bit objects' sizes; a snapshot file reported the same" {
	lj32 lj2gc64off
	rows32 "$(key_bytes 20)" 11108
}

# instances32: 50 instances under $LJ32 against none: 32 bytes each (a
# GCtab, no array or hash part), and INST's array part.
instances32() {
	LJ=$LJ32 snap -joff 0 0 0 0 0 0 0
	local b0=$(col table 5)
	LJ=$LJ32 snap -joff 0 50 0 0 0 0 0
	[ "$(($(col table 5) - b0))" = $((50 * 32 + 65 * 8)) ]
}

@test "heap, GC64 off: exact bytes of M instances (32 bytes each: a GCtab, no array or hash part)" {
	lj32
	instances32
}

@test "heap, OpenResty luajit2 GC64 off: exact bytes of M instances (32 bytes each: a GCtab, no array or hash part)" {
	lj32 lj2gc64off
	instances32
}

# hostile32 LJ...: heap_hostile.lua under $LJ32 (a looping gc.root, an
# array part that lies), and with "stray" under each LJ and $LJ32: counted,
# said, exit 3, the lie not followed, the target unharmed.
hostile32() {
	hostile "$LJ32"
	[ "$status" -eq 3 ]
	[ "$HOSTILE_STATE" = S ]
	[[ "$output" == *"  objects copied in part (a cap, or unreadable): 1"* ]]
	[[ "$output" == *"  object lists cut (a repeat, or the cap): 1"* ]]
	[ "$(printf '%s\n' "$output" | awk '$1 == "table" { print $2 }')" = 2 ]
	local l
	for l in "$@" "$LJ32"; do
		hostile "$l" stray
		[ "$status" -eq 3 ]
		[ "$HOSTILE_STATE" = S ]
		# the one reference to no object, counted; the rest whole
		[[ "$output" == *$'incomplete:\n  references to no walked object: 1\n'* ]]
		[ "$(printf '%s\n' "$output" | awk '/remainder \(gc.total - sum\)/ { print $NF }')" = 0 ]
		# STRAY retains itself alone: its metatable not followed
		local sz=$([ "$l" = luajit ] && echo 64 || echo 32)
		[[ "$output" == *$'\n'"          $sz         $sz  table     STRAY"$'\n'* ]]
	done
}

@test "heap, GC64 off: a heap that lies at 32 bits (an array part, a looping gc.root; a metatable reference outside the heap): counted, said, exit 3, not followed" {
	lj32
	hostile32 luajit
}

@test "heap, OpenResty luajit2 GC64 off: a heap that lies at 32 bits (an array part, a looping gc.root; a metatable reference outside the heap): counted, said, exit 3, not followed" {
	lj32 lj2gc64off
	hostile32
}

# -- Tarantool 2.6 (its LuaJIT fork in the executable, GC64 off) ------------

# tarantool_lj: Debian's tarantool as snap's $LJ ($T/tarantool-lj: -joff,
# -jon as jit.off(), jit.on() before the script), in LJ32; its layout
# entry's name in LJ32_NAME.
tarantool_lj() {
	printf '%s\n' '#!/bin/sh' \
		'case $1 in -joff) j="jit.off()" ;; -jon) j="jit.on()" ;; *) exit 2 ;; esac' \
		'shift' 'exec tarantool -e "$j" "$@"' > "$T/tarantool-lj"
	chmod +x "$T/tarantool-lj"
	LJ32=$T/tarantool-lj
	LJ32_NAME="Tarantool 2.6 LuaJIT 2.1 GC64 off"
}

# Its older 2.1's global_State (g->strhash, an SBuf of MRefs, no
# lightuserdata segments) and unrounded strings: every byte of gc.total
# walked, the known graph's deltas upstream's (its own library holds
# tables Lua cannot see, constructors' templates: no oracle of all).
@test "heap, Tarantool 2.6 (its fork, GC64 off): the known graph's exact counts against a baseline, JIT off and on; remainder 0" {
	tarantool_lj
	local jit
	for jit in -joff -jon; do
		LJ=$LJ32 known_deltas "$jit"
		cat "$T/heap.out"
		[ "$HEAP_RC" -eq 0 ]
		[ "$TARGET_STATE" = S ]
		grep -qx "VM 0x[0-9a-f]\{8\} ($LJ32_NAME)" "$T/heap.out"
		[ "$(remainder)" = 0 ]
		! grep -q '^incomplete' "$T/heap.out"
		[ "$jit" = -jon ] || [ "$(delta table 6)" = 29 ]
	done
}

# Its strings: GCstr 16, the length and its NUL unrounded (sizestring):
# "u1".."u9" 19 bytes, "u10".."u99" 20, "u100" 21; but its own msgpack
# code holds "u16", "u32" and "u64" (reg.u16 ...), not the cache's alone:
# 9 * 19 + 87 * 20 + 21 = 1932, the cache retaining 10636 bytes.
@test "heap, Tarantool 2.6 (its fork, GC64 off): retainers named as on GC64, retained bytes exact at its sizes; a snapshot file reported the same" {
	tarantool_lj
	rows32 1932 10636
}

# One snapshot of a process at a time (user/heap/capture.c: another's
# clear_refs would erase the bits a copy made while it runs relies on):
# while another holds PID's lock, heap -p PID says so in one line, exit 1,
# and the target runs on; once it is let go, the snapshot is taken.
@test "heap: one snapshot of a process at a time (another holding it: one line, exit 1, the target untouched)" {
	luajit -e 'io.stdout:write("ready\n") io.stdout:flush() io.stdin:read("*l")' \
		< <(sleep 60) > "$T/w.out" 3>&- &
	local pid=$!
	wait_for "$T/w.out" ready
	mkdir -p /run/luamemtrace
	exec 6> "/run/luamemtrace/heap.$pid"
	flock -n 6
	run "$LMT" heap -p "$pid"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" = "luamemtrace heap: PID $pid: another luamemtrace heap is copying it; one at a time" ]
	[ "$(awk '{print $3}' "/proc/$pid/stat")" = S ]
	exec 6>&-
	"$LMT" heap -p "$pid" > "$T/h.out" 2> "$T/h.err"
	[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/h.out")" = 0 ]
	kill "$pid"
}
