#!/usr/bin/env bats
# luamemtrace heap --with TRACE: a heap joined with a trace
# (tests/lua/heap_join.lua: M tables built before the tracer attaches, N
# at line 12 while traced, their holder and its array part at line 11).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# traced JIT STACKS [LJ]: heap_join.lua 1000 300 (JIT on or off) under LJ
# (luajit by default) traced from after its "ready" (-p; --stacks if
# STACKS is 1) until it has built; snapshotted into $T/s.lmh while traced,
# then the trace ended: the target waits on (PID in PID, its stdin on fd
# 8).
traced() {
	cd "$LUA_DIR"
	rm -f "$T/in" "$T/p.bin"* "$T/s.lmh"
	mkfifo "$T/in"
	"${3:-luajit}" heap_join.lua 1000 300 "$1" < "$T/in" > "$T/out" 3>&- &
	PID=$!
	exec 8> "$T/in"
	wait_for "$T/out" ready
	local st=()
	[ "$2" = 1 ] && st=(--stacks)
	"$LMT" -p "$PID" "${st[@]}" -o "$T/p.bin" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing PID $PID"
	echo go >&8
	wait_for "$T/out" built
	"$LMT" heap -p "$PID" -o "$T/s.lmh" > /dev/null
	kill -INT "$tpid"
	wait "$tpid"
	no_lost "$T/err"
}

ends() {
	echo bye >&8
	exec 8>&-
	wait "$PID"
}

# row SECTION LINE: lines of the join's SECTION ("top retainers",
# "sites", "stacks") equal to LINE once their spaces are squeezed.
row() {
	awk -v sec="$1" '
		/^top retainers, retained bytes by when/ { s = "top retainers"; next }
		/^sites of reachable objects allocated while traced/ { s = "sites"; next }
		/^stacks of reachable objects allocated while traced/ { s = "stacks"; next }
		/^$/ { s = "" }
		s == sec { $1 = $1; print }' "$T/j.out" | grep -cxF -- "$2" || true
}

# The exact answers: the N=1000 tables, 64 bytes each (a GCtab), at line
# 12; their holder x at line 11 (a GCtab and its array part of N+1 slots,
# 8072 bytes) holds them all (retained 72072, all traced); BEFORE (its
# GCtab, array part of 301 slots, M=300 tables) is all before.
exact() {
	[ "$(row sites "1000 64000 table @heap_join.lua:12")" = 1 ]
	[ "$(row sites "1 8072 table @heap_join.lua:11")" = 1 ]
	[ "$(row "top retainers" "72072 72072 0 table package.loaded.joined")" = 1 ]
	[ "$(row "top retainers" "$((64 + 301 * 8 + 300 * 64)) 0 $((64 + 301 * 8 + 300 * 64)) table BEFORE")" = 1 ]
	# nothing else at those lines
	[ "$(awk '/^sites of/ { s = 1; next } /^$/ { s = 0 } s && /heap_join.lua:1[12]$/' \
		"$T/j.out" | wc -l)" = 2 ]
}

@test "heap --with: N tables allocated while traced at their line, exact bytes; M before; JIT off and on" {
	local jit
	for jit in off on; do
		traced "$jit" 0
		"$LMT" heap --top 40 --with "$T/p.bin" "$T/s.lmh" > "$T/j.out"
		ends
		cat "$T/j.out"
		exact
		grep -q "^joined with the trace $T/p.bin: " "$T/j.out"
		! grep -q '^stacks of' "$T/j.out"
	done
}

@test "heap --with a trace with --stacks: the stack of each site, JIT off and on" {
	local jit
	for jit in off on; do
		traced "$jit" 1
		"$LMT" heap --top 40 --with "$T/p.bin" "$T/s.lmh" > "$T/j.out"
		ends
		cat "$T/j.out"
		exact
		# the innermost frame is the line, named as its caller (line 18)
		# calls it: local 'build'
		[ "$(awk '/^stacks of/ { s = 1; next } /^$/ { s = 0 }
			s && $1 == 1000 && $2 == 64000 && $3 == "table" &&
			$0 ~ /@heap_join\.lua:18;@heap_join\.lua:12 local \047build\047$/' \
			"$T/j.out" | wc -l)" = 1 ]
	done
}

# Tarantool 2.6 (its fork, GC64 off; JIT off: with it on, its compiled
# code is charged to its traces): the N tables of 32 bytes (its GCtab) at
# line 12, x at line 11 (32 + 1001 * 8), with their stacks, named as
# upstream's are (its own builtins' list: table.new).
@test "heap --with on Tarantool 2.6 (its fork, GC64 off), JIT off: the tables allocated while traced at their lines and stacks, exact bytes at its sizes" {
	traced off 1 tarantool
	"$LMT" heap --top 40 --with "$T/p.bin" "$T/s.lmh" > "$T/j.out"
	ends
	cat "$T/j.out"
	grep -qx 'VM 0x[0-9a-f]\{8\} (Tarantool 2.6 LuaJIT 2.1 GC64 off)' "$T/j.out"
	[ "$(row sites "1000 32000 table @heap_join.lua:12")" = 1 ]
	[ "$(row sites "1 8040 table @heap_join.lua:11")" = 1 ]
	[ "$(row stacks "1000 32000 table @heap_join.lua:18;@heap_join.lua:12 local 'build'")" = 1 ]
	[ "$(row stacks "1 8040 table @heap_join.lua:18;@heap_join.lua:11 local 'build';table.new")" = 1 ]
	[ "$(row "top retainers" "40040 40040 0 table package.loaded.joined")" = 1 ]
}

@test "heap -p PID --with: the finished trace of the process joined with it now" {
	traced off 0
	"$LMT" heap -p "$PID" --top 40 --with "$T/p.bin" > "$T/j.out"
	ends
	cat "$T/j.out"
	exact
}

@test "heap -p PID --with a trace of another process: one line, exit 2, the target not stopped" {
	traced off 0
	spin 'local n = 0 while true do n = n + 1 end'
	local other=$SPIN
	run "$LMT" heap -p "$other" --with "$T/p.bin"
	local st=$(awk '{print $3}' "/proc/$other/stat")
	kill "$other"
	ends
	[ "$status" -eq 2 ]
	[ "$output" = "luamemtrace heap: $T/p.bin is a trace of process $PID, not $other" ]
	[ "$st" = R ]
}

@test "heap --with a file that is no trace, or a trace cut short: said, exit 1 and 3" {
	traced off 0
	ends
	run "$LMT" heap --with /etc/passwd "$T/s.lmh"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = 'luamemtrace report: /etc/passwd: offset 0: bad symtab magic "roo" (want "ljs")' ]
	# cut: the events read so far are joined, and it says so
	head -c 4000 "$T/p.bin" > "$T/cut.bin"
	"$LMT" heap --with "$T/cut.bin" "$T/s.lmh" > "$T/j.out" 2> "$T/j.err" || rc=$?
	cat "$T/j.err"
	[ "$rc" -eq 3 ]
	grep -q "^luamemtrace report: warning: .*reporting the [0-9]* events read$" "$T/j.err"
	grep -q "^joined with the trace $T/cut.bin: " "$T/j.out"
}

# at_end JIT OUT: heap_join.lua traced as traced() does, with
# --heap-at-end -o OUT, ended once it has built; no snapshot of our own.
at_end() {
	cd "$LUA_DIR"
	rm -rf "$T/in" "$T/p.bin"* "$T/d"
	mkfifo "$T/in"
	luajit heap_join.lua 1000 300 "$1" < "$T/in" > "$T/out" 3>&- &
	PID=$!
	exec 8> "$T/in"
	wait_for "$T/out" ready
	"$LMT" -p "$PID" --heap-at-end -o "$2" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing PID $PID"
	echo go >&8
	wait_for "$T/out" built
	kill -INT "$tpid"
	wait "$tpid"
	no_lost "$T/err"
	TARGET_STATE=$(awk '{print $3}' "/proc/$PID/stat")
}

@test "--heap-at-end -o FILE: FILE.lmh (0600) taken as tracing ends, joined exactly, the target running on" {
	local jit
	for jit in off on; do
		at_end "$jit" "$T/p.bin"
		cat "$T/err"
		[ "$TARGET_STATE" = S ]
		grep -q "^luamemtrace: heap of PID $PID: $T/p.bin.lmh (target stopped [0-9.]* ms)\$" "$T/err"
		[ "$(stat -c %a "$T/p.bin.lmh")" = 600 ]
		"$LMT" heap --top 40 --with "$T/p.bin" "$T/p.bin.lmh" > "$T/j.out"
		ends
		exact
	done
}

@test "--heap-at-end -o DIR/: DIR/COMM.PID.lmh beside the process's streams" {
	at_end off "$T/d/"
	ends
	[ -f "$T/d/luajit.$PID.vm0.bin" ]
	[ -f "$T/d/luajit.$PID.lmh" ]
	# the copy made no fork the trace (following forks with -o DIR/)
	# could take for a child of the process: its files alone
	ls "$T/d"
	[ -z "$(ls "$T/d" | grep -v "^luajit\.$PID\.")" ]
	! grep -qi "fork" "$T/err"
	"$LMT" heap --top 40 --with "$T/d/luajit.$PID.vm0.bin" "$T/d/luajit.$PID.lmh" > "$T/j.out"
	exact
}

@test "--heap-at-end -- COMMAND that has exited: said, no snapshot, its status" {
	cd "$LUA_DIR"
	run "$LMT" -q --heap-at-end -o "$T/c.bin" -- luajit -e 'local t = {} for i = 1, 100 do t[i] = {} end'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"luamemtrace: --heap-at-end: PID "*" ended before tracing did: no heap"* ]]
	[ -f "$T/c.bin" ]
	[ ! -e "$T/c.bin.lmh" ]
}
