#!/usr/bin/env bats
# A traced process that is an adversary (issue 41): LuaJIT scripts that
# corrupt their own VM through the FFI, or feed the tracer what no real
# program would. Each asserts the tracer survives, says what it skipped
# (the caps of user/target/caps.h), keeps its memory within its budget, and
# the process's normal lines keep their exact counts.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# The tracer's peak memory (KiB) from /usr/bin/time's report in FILE:
# under 256 MiB (LMT_PROC_TRACE_BYTES_MAX and the tracer's own ~50).
rss_ok() {
	local kb
	kb=$(awk '/^maxrss / { print $2 }' "$1")
	[ -n "$kb" ] && [ "$kb" -lt 262144 ] && return 0
	echo "peak memory '$kb' KiB"
	return 1
}

# forged_trace LINK: hostile_trace.lua with its frame link LINK, traced:
# the trace counted cut, said, in the sidecar; the tracer's memory within
# its budget; the loop after it counted exactly.
forged_trace() {
	cd "$LUA_DIR"
	run /usr/bin/time -o "$T/time" -f "maxrss %M" "$LMT" -f -o "$T/t.bin" -- \
		luajit hostile_trace.lua "$1"
	[ "$status" -eq 0 ]
	[[ "$output" == *"hostile_trace.lua done"* ]]
	[[ "$output" == *"over caps: 1 traces cut or refused"* ]]
	grep -qx "lost_symbols: 1" "$T/t.bin.info"
	grep -qx "state: complete" "$T/t.bin.info"
	rss_ok "$T/time"
	# the report says the stream is incomplete: 1 symbol record lost
	local rc=0
	"$LMT" report "$T/t.bin" > "$T/t.txt" 2> "$T/t.err" || rc=$?
	[ "$rc" -eq 3 ]
	grep -q "0 events, 1 symbol records and 0 new VMs or dlopens were lost" "$T/t.err"
	count_is ALLOCATIONS @hostile_trace.lua:75 "$T/t.txt" 100
	no_probes_of "$T"
}

@test "a forged GCtrace whose frame link is 1 (a C frame of no slots): the trace counted cut, the tracer lives" {
	forged_trace 1
}

@test "a forged GCtrace whose frame link is 2 (a continuation of no slots): the trace counted cut, the tracer lives" {
	forged_trace 2
}

@test "load(source) without a name, 200 functions, 2 MiB each's chunk name: each cut to 4096 bytes, said" {
	cd "$LUA_DIR"
	run /usr/bin/time -o "$T/time" -f "maxrss %M" "$LMT" -f -o "$T/n.bin" -- luajit hostile_names.lua
	[ "$status" -eq 0 ]
	[[ "$output" == *"hostile_names.lua done	200"* ]]
	# the 200 functions and the chunk itself
	[[ "$output" == *"201 chunk names over 4096 bytes cut to it (ending in ...)"* ]]
	# 201 names of 4096 bytes and the events: not 201 x 2 MiB
	[ "$(stat -c %s "$T/n.bin")" -lt $((2 * 1024 * 1024)) ]
	rss_ok "$T/time"
	"$LMT" report "$T/n.bin" > "$T/n.txt"
	count_is ALLOCATIONS @hostile_names.lua:10 "$T/n.txt" 101
	no_probes_of "$T"
}

# iter [loaded]: hostile_iter.lua traced with -v: its walks of
# package.loaded and nodes read into WALKS and NODES; the tracer's memory
# within its budget; lmtmod.make's and the last loop's counts exact, the
# C function by the name it had before.
iter() {
	local re='^  names: *\([0-9]*\) walks of package.loaded, \([0-9]*\) nodes read$' loc
	cd "$LUA_DIR"
	LMT_MODDIR="$BATS_TEST_DIRNAME/../build" run /usr/bin/time -o "$T/time" -f "maxrss %M" \
		"$LMT" -v -f -o "$T/i.bin" -- luajit hostile_iter.lua "$@"
	[ "$status" -eq 0 ]
	[[ "$output" == *"hostile_iter.lua done	29786"* ]]
	[[ "$output" == *"lost:    0 events, 0 symbol records"* ]]
	WALKS=$(sed -n "s/$re/\1/p" <<< "$output")
	NODES=$(sed -n "s/$re/\2/p" <<< "$output")
	[ -n "$WALKS" ] && [ -n "$NODES" ]
	rss_ok "$T/time"
	"$LMT" report "$T/i.bin" > "$T/i.txt"
	loc=$(grep -Eo '^lmtmod_make:0x[0-9a-f]+' "$T/i.txt" | head -1)
	count_is ALLOCATIONS "$loc" "$T/i.txt" 2000
	count_is ALLOCATIONS @hostile_iter.lua:25 "$T/i.txt" 101
	no_probes_of "$T"
}

@test "two unnamed C functions alternating (io.lines' iterator, a module's function): package.loaded walked a bounded number of times, the names as before" {
	iter
	# 4000 events alternating between them: a walk each was 4000 walks
	[ "$WALKS" -lt 100 ]
}

@test "package.loaded holding one self-referencing table 4096 times: each walk bounded, the tracer keeps up" {
	iter loaded
	# a walk reads package.loaded (8192 nodes) and the table once at each
	# of two depths (4096 each), not 4096^3; at most LMT_NAMES_NODES_MAX
	[ "$WALKS" -lt 100 ]
	[ "$NODES" -le $((WALKS * 131072)) ]
}

@test "a heap of 300 forged GG_States: 256 VMs at most, the rest counted and said once" {
	READY="$T/ready" luajit "$LUA_DIR/hostile_vms.lua" 3>&- &
	local pid=$!
	wait_for "$T/ready" ready
	run "$LMT" -d 1 -o "$T/v.bin" -p "$pid"
	kill "$pid"
	wait "$pid" || true
	# the VMs over the cap make the trace incomplete (lost_vms)
	[ "$status" -eq 3 ]
	[[ "$output" == *"tracing PID $pid (256 VMs, "* ]]
	[ "$(grep -c "more than 256 VMs: [0-9]* more candidates not checked, not traced" <<< "$output")" -eq 1 ]
	# how many were dropped (the heap's other self-references vary): one
	# number in the warning, the summary and the sidecar
	local n
	n=$(sed -n 's/.*more than 256 VMs: \([0-9]*\) more candidates not checked.*/\1/p' <<< "$output")
	[ "$n" -gt 0 ]
	[[ "$output" == *"  over caps: $n VM candidates past 256 VMs a process: not checked, not traced"* ]]
	[ "$(info_val "$T/v.bin.info" vm_candidates_unchecked)" = "$n" ]
	[ "$(info_val "$T/v.bin.info" lost_vms)" = "$n" ]
	[ "$(info_val "$T/v.bin.info" vms_refused)" = 0 ]
	no_probes_of "$T"
}

@test "lua_newstate 300 times (every other VM closed), beside another traced process: 256 VMs a process at most, streams included; the rest refused, counted, said once; both processes exact" {
	cd "$LUA_DIR"
	mkfifo "$T/a" "$T/b"
	luajit wait.lua < "$T/a" > "$T/aout" 3>&- &
	local a=$! b st=0
	luajit hostile_newvms.lua 300 < "$T/b" > "$T/bout" 3>&- &
	b=$!
	exec 8> "$T/a" 9> "$T/b"
	wait_for "$T/aout" ready
	wait_for "$T/bout" ready
	mkdir "$T/d"
	"$LMT" -p "$a,$b" -o "$T/d/" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "Ctrl-C to stop"
	echo go >&8
	echo go >&9
	wait_for "$T/aout" "wait.lua done"
	wait_for "$T/bout" "hostile_newvms.lua done"
	echo bye >&8
	echo bye >&9
	exec 8>&- 9>&-
	wait "$tpid" || st=$?
	wait "$a" "$b"
	# the refused VMs' events are not in any stream: incomplete (lost_vms)
	[ "$st" -eq 3 ]
	# its own VM and 300 made: 256 traced, 45 refused
	grep -q "^luamemtrace: traced 2 processes, 257 VMs," "$T/err"
	grep -qx "  over caps: 45 VMs refused past 256 VMs a process (closed ones count): not traced" "$T/err"
	[ "$(grep -c "warning: PID $b: more than 256 VMs: the ones it makes from now on are not traced (counted)" "$T/err")" -eq 1 ]
	grep -qx "  lost:    0 events, 0 symbol records" "$T/err"
	[ "$(ls "$T/d" | grep -c "^luajit\.$b\.vm[0-9]*\.bin$")" -eq 256 ]
	[ "$(ls "$T/d" | grep -c "^luajit\.$b\.vm[0-9]*\.bin\.info$")" -eq 256 ]
	[ "$(ls "$T/d" | grep -c "^luajit\.$a\.vm[0-9]*\.bin$")" -eq 1 ]
	[ "$(info_val "$T/d/luajit.$b.vm0.bin.info" vms_refused)" = 45 ]
	[ "$(info_val "$T/d/luajit.$a.vm0.bin.info" vms_refused)" = 45 ]
	# both processes' own VMs exact
	"$LMT" report "$T/d/luajit.$a.vm0.bin" > "$T/a.txt" 2> /dev/null || true
	count_is ALLOCATIONS @wait.lua:8 "$T/a.txt" 700
	"$LMT" report "$T/d/luajit.$b.vm0.bin" > "$T/b.txt" 2> /dev/null || true
	count_is ALLOCATIONS @hostile_newvms.lua:25 "$T/b.txt" 300
	no_probes_of "$T"
}
