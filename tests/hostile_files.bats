#!/usr/bin/env bats
# Hostile files (issue 41, item 2): a traced process maps files it crafted
# to turn its root tracer against the host: a path over 4 KiB whose tail
# reads as a mapping of its choosing, a file replaced under its mapping
# while --all reads it, a LuaJIT file not root's, symbol tables that cost
# gigabytes or hours, a file cut short while it is read. Each test: the
# tracer survives within a memory bound, no probe lands outside the
# traced processes' own files, no other process is stopped, and the
# traced process is traced exactly (tests/lua/wait.lua's 700 tables).

load helpers

# The tracer's peak resident memory may not pass this (KiB): ~30 MiB
# when nothing is hostile; the crafted files would cost gigabytes.
MEM_MAX_KIB=262144

setup_file() {
	local d="$BATS_FILE_TMPDIR"
	gcc -O2 -Wall -Werror -o "$d/hostile" "$BATS_TEST_DIRNAME/c/hostile.c" -ldl
	gcc -O2 -Wall -Werror -shared -fPIC -o "$d/fakelj.so" "$BATS_TEST_DIRNAME/c/fakelj.c"
	gcc -O2 -Wall -Werror -shared -fPIC -DVIC -o "$d/vic.so" "$BATS_TEST_DIRNAME/c/fakelj.c"
	chmod 0644 "$d/fakelj.so" "$d/vic.so"
}

setup() {
	T="$BATS_TEST_TMPDIR"
	H="$BATS_FILE_TMPDIR/hostile"
	chmod 0755 "$T"
}

# target ARGS...: tests/lua/hostile.lua ARGS run by $T/lmt-h (a copy of
# luajit: --all --exe traces it, and no LuaJIT process of others) with
# stdin on the FIFO $T/in (fd 8), stdout in $T/out; PID its PID once it
# said "ready".
target() {
	cp "$(command -v luajit)" "$T/lmt-h"
	cd "$LUA_DIR"
	mkfifo "$T/in"
	"$T/lmt-h" hostile.lua "$@" < "$T/in" > "$T/out" 3>&- &
	PID=$!
	exec 8> "$T/in"
	wait_for "$T/out" ready
}

# traced_exact OUT: the target runs its workload and exits; the tracer
# (TPID, alive: its peak memory within MEM_MAX_KIB) is stopped, exit 0;
# OUT's report counts the workload exactly.
traced_exact() {
	local hwm st=0
	echo go >&8
	wait_for "$T/out" "wait.lua done"
	echo bye >&8
	exec 8>&-
	wait "$PID"
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$TPID/status")
	echo "tracer's peak memory: $hwm KiB"
	[ "$hwm" -lt "$MEM_MAX_KIB" ]
	kill -INT "$TPID"
	wait "$TPID" || st=$?
	[ "$st" -eq 0 ]
	"$LMT" report "$1" > "$1.txt"
	count_is ALLOCATIONS @wait.lua:8 "$1.txt" 700
}

# probe_files: the files of the tracer's (TPID) uprobes, one a line: the
# name each was made with resolved (/proc/self/fd/N: the tracer's
# descriptor N, held as long as the probe).
probe_files() {
	local f
	bpftool perf show 2>/dev/null | awk -v p="$TPID" '$2 == p && /uprobe/ {
		for (i = 1; i < NF; i++) if ($i == "filename") print $(i + 1) }' |
	while read -r f; do
		case $f in
		/proc/self/fd/*) readlink "/proc/$TPID/fd/${f#/proc/self/fd/}" ||
			echo "$f (not held: its file unknown)" ;;
		*) readlink -f "$f" || echo "$f (gone)" ;;
		esac
	done
}

# all_started: the target, then --all (narrowed to it and to the hostile
# processes: no LuaJIT process of others) started, TPID, stderr in
# $T/err; back once the processes running are attached.
all_started() {
	target
	"$LMT" --all --exe lmt-h,hostile -v -o "$T/d/" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/err" "LuaJIT process.*Ctrl-C to stop"
}

@test "a path over 4 KiB whose tail reads as a line of maps: the allocator probed where it is, exact" {
	local base
	base=$(realpath "$T")
	target longpath "$base"
	"$LMT" -v -p "$PID" -o "$T/p.bin" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/err" "tracing PID $PID"
	# the allocator is in luajit's own file, at its own offset
	grep -q "PID $PID: allocator 0x[0-9a-f]* in $T/lmt-h$" "$T/err"
	traced_exact "$T/p.bin"
	no_probes_of "$T/"
}

@test "symbol tables that cost gigabytes (20k names of 64 KiB) or hours (a sparse 64 GiB .symtab): skipped, said, counted; the tracer bounded, exact" {
	"$H" names "$T/names.elf" 20000 65536
	"$H" sparse "$T/sparse.elf" $((64 << 30))
	target map "$T/names.elf" "$T/sparse.elf"
	"$LMT" -p "$PID" -o "$T/p.bin" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/err" "tracing PID $PID"
	traced_exact "$T/p.bin"
	grep -q "warning: PID $PID: no C names from names.elf: a name over 4 KiB" "$T/err"
	grep -q "warning: PID $PID: no C names from sparse.elf: a symbol table or its names over 64 MiB" "$T/err"
	grep -q "^  skipped: 2 objects' C names, over the caps on symbol tables or not the file maps names (said above)$" "$T/err"
	[ "$(info_val "$T/p.bin.info" files_skipped)" = 2 ]
	# the stream holds no record of theirs
	[ "$(stat -c %s "$T/p.bin")" -lt 1048576 ]
}

@test "one ELF file over the caps (a sparse 64 GiB .symtab): files_skipped 1 in the summary and the sidecar; a sidecar without the key reads as 0" {
	"$H" sparse "$T/sparse.elf" $((64 << 30))
	target map "$T/sparse.elf"
	"$LMT" -p "$PID" -o "$T/p.bin" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/err" "tracing PID $PID"
	traced_exact "$T/p.bin"
	grep -qx "  skipped: 1 object's C names, over the caps on symbol tables or not the file maps names (said above)" "$T/err"
	[ "$(info_val "$T/p.bin.info" files_skipped)" = 1 ]
	# report reads a sidecar of before the key (and the other new ones)
	sed -i '/^files_skipped: /d; /^vms_refused: /d; /^vm_candidates_unchecked: /d; /^traces_over_budget: /d' "$T/p.bin.info"
	run "$LMT" report "$T/p.bin"
	[ "$status" -eq 0 ]
	absent "not a luamemtrace sidecar" <(echo "$output")
}

@test "a mapped ELF cut short and grown back while the tracer reads it: no SIGBUS, exact" {
	# a 48 MiB .symtab of zeros; the file cut to its first page and
	# grown back, over and over
	"$H" sparse "$T/cut.elf" $((48 << 20))
	"$H" trunc "$T/cut.elf" 4096 3>&- &
	local cutter=$!
	target map "$T/cut.elf"
	"$LMT" -p "$PID" -o "$T/p.bin" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/err" "tracing PID $PID"
	traced_exact "$T/p.bin"
	kill "$cutter"
	wait "$cutter" || true
	no_probes_of "$T/"
}

@test "--all: a LuaJIT file of root's replaced by another under its mapping, over and over: no probe on the other, a process calling it never stopped; the traced process exact" {
	local i b
	# fakelj.so says it is LuaJIT; vic.so (libc's stand-in) has the same
	# code at the same offsets under other names. Each replacer has a
	# copy of its own: a file --all reads anew.
	for i in 1 2 3 4 5 6; do
		cp "$BATS_FILE_TMPDIR/fakelj.so" "$T/lj$i.so"
		"$H" swap "$T/lj$i.so" "$BATS_FILE_TMPDIR/vic.so" "$T/sw$i.ready" 3>&- &
	done
	for i in 1 2 3 4 5 6; do
		wait_for "$T/sw$i.ready" ready
	done
	all_started
	probe_files > "$T/probes"
	absent vic.so "$T/probes"
	# a process that calls the replacing file (as any calls libc)
	"$H" call "$BATS_FILE_TMPDIR/vic.so" vic_newstate 1000 > "$T/call.out" 3>&- &
	b=$!
	wait "$b"
	[ "$(cat "$T/call.out")" = "called 1000" ]
	for i in $(jobs -p); do
		[ "$i" = "$PID" ] || [ "$i" = "$TPID" ] || kill "$i"
	done
	absent "PID $b" "$T/err"
	probe_files > "$T/probes"
	absent vic.so "$T/probes"
	traced_exact "$T/d/lmt-h.$PID.vm0.bin"
	no_probes_of "$T/"
}

# stopped PID: waits until process PID is stopped (state T).
stopped() {
	local i
	for i in $(seq 1 200); do
		[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
		sleep 0.05
	done
	echo "PID $1 never stopped" >&2
	return 1
}

@test "--all: a LuaJIT file of root's replaced under its mapping right after the tracer opened it (a stop point): the probe on the file opened, none on the other; a process calling the other never stopped; the traced process exact" {
	local sw b
	cp "$BATS_FILE_TMPDIR/fakelj.so" "$T/lj.so"
	"$H" swapon "$T/lj.so" "$BATS_FILE_TMPDIR/vic.so" "$T/sw.ready" 3>&- &
	sw=$!
	wait_for "$T/sw.ready" ready
	target
	# the tracer stops itself once it has opened lj.so's mapping
	LMT_TEST_STOP_AT=lj.so "$LMT" --all --exe lmt-h,hostile -v -o "$T/d/" 2> "$T/err" 3>&- &
	TPID=$!
	stopped "$TPID"
	# ... then the mapping holds vic.so, before the tracer reads or
	# probes anything of it
	kill -USR1 "$sw"
	wait_for "$T/sw.ready" swapped
	grep -q "$BATS_FILE_TMPDIR/vic.so" "/proc/$sw/maps"
	absent "$T/lj.so" "/proc/$sw/maps"
	kill -CONT "$TPID"
	wait_for "$T/err" "LuaJIT process.*Ctrl-C to stop"
	grep -q "watching lua_newstate in $T/lj.so (every process)" "$T/err"
	probe_files > "$T/probes"
	grep -q "^$T/lj.so$" "$T/probes"
	absent vic.so "$T/probes"
	"$H" call "$BATS_FILE_TMPDIR/vic.so" vic_newstate 1000 > "$T/call.out" 3>&- &
	b=$!
	wait "$b"
	[ "$(cat "$T/call.out")" = "called 1000" ]
	absent "PID $b" "$T/err"
	kill "$sw"
	wait "$sw" || true
	traced_exact "$T/d/lmt-h.$PID.vm0.bin"
	no_probes_of "$T/"
}

@test "--all: a LuaJIT file not root's is watched for the process that maps it only: another that maps it later is never stopped; the traced process exact" {
	local b
	cp "$BATS_FILE_TMPDIR/fakelj.so" "$T/own.so"
	chown nobody "$T/own.so"
	"$H" swap "$T/own.so" "$T/own.so" "$T/sw.ready" 3>&- &
	local sw=$!
	wait_for "$T/sw.ready" ready
	all_started
	"$H" call "$T/own.so" lua_newstate 1000 > "$T/call.out" 3>&- &
	b=$!
	wait "$b"
	[ "$(cat "$T/call.out")" = "called 1000" ]
	kill "$sw"
	wait "$sw" || true
	absent "PID $b" "$T/err"
	grep -q "watching lua_newstate in $T/own.so (PID $sw only: the file is not root's" "$T/err"
	probe_files > "$T/probes"
	grep -q "^$T/own.so$" "$T/probes"
	traced_exact "$T/d/lmt-h.$PID.vm0.bin"
	no_probes_of "$T/"
}
