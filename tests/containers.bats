#!/usr/bin/env bats
# LuaJIT in a container, as the host sees it: a process in its own mount
# and PID namespaces (unshare), its root an overlayfs whose lower layer the
# test builds (a private copy of luajit, named ctluajit, and the objects it
# needs; chroot), no container runtime. Traced from the host: by -p with
# its host PID, by --all whether it started before the tracer or after.
# Streams name it by its host PID and say its namespace PID (nspid: 1);
# chunk names are the paths it sees (@/app/wait.lua).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	ct_root "$T/ct"
}

# The container's process too (PID 1 of its namespace: the namespace ends
# with it, and its mounts), whatever a failed test left.
teardown() {
	end_listed
	kill_jobs
}

# ct_root D: D/lower, a minimal root: /usr/bin/ctluajit (Debian's luajit,
# copied), the objects ldd lists, /app/wait.lua, an empty /proc.
ct_root() {
	local d=$1 f
	mkdir -p "$d/lower/usr/bin" "$d/lower/proc" "$d/lower/app" "$d/lower/tmp"
	cp -L /usr/bin/luajit "$d/lower/usr/bin/ctluajit"
	for f in $(ldd /usr/bin/luajit | grep -o '/[^ ]*'); do
		mkdir -p "$d/lower$(dirname "$f")"
		cp -L "$f" "$d/lower$f"
	done
	cp "$LUA_DIR/wait.lua" "$d/lower/app/wait.lua"
}

# ct_start D: wait.lua in a container over D/lower (overlay upper and work
# dirs in D), its stdin the fifo D/in, held open on fd 8, its stdout
# D/out; returns once it is ready, its host PID in CT_PID. The mounts are
# the namespace's own: they go with it.
ct_start() {
	local d=$1 u
	mkdir -p "$d/upper" "$d/work" "$d/merged"
	mkfifo "$d/in"
	unshare -m -p -f --mount-proc sh -c "mount -t overlay overlay \
		-o lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work $d/merged &&
		mount -t proc proc $d/merged/proc &&
		exec chroot $d/merged /usr/bin/ctluajit /app/wait.lua" \
		< "$d/in" > "$d/out" 2>&1 3>&- &
	u=$!
	exec 8> "$d/in"
	wait_for "$d/out" ready
	CT_PID=$(pgrep -P "$u")
	[ -n "$CT_PID" ]
	echo "$CT_PID" >> "$T/pids"
}

# ct_run D: the workload's 700 tables, then its end.
ct_run() {
	echo go >&8
	wait_for "$1/out" "wait.lua done"
	echo bye >&8
	exec 8>&-
}

# ct_exact STREAM: the container's process, named by its host PID, with
# its namespace PID, its allocations exact under the chunk name it sees.
ct_exact() {
	[ "$(info_val "$1.info" pid)" = "$CT_PID" ]
	[ "$(info_val "$1.info" nspid)" = 1 ]
	[ "$(info_val "$1.info" comm)" = ctluajit ]
	[ "$(info_val "$1.info" exe)" = "$T/ct/merged/usr/bin/ctluajit" ]
	"$LMT" report "$1" > "$T/r.txt"
	count_is ALLOCATIONS @/app/wait.lua:8 "$T/r.txt" 700
}

# ct_all_end TRACER: the workload run under --all's TRACER (-o $T/d/),
# stopped by Ctrl-C: one stream, the container's, exact.
ct_all_end() {
	ct_run "$T/ct"
	kill -INT "$1"
	wait "$1"
	[ "$(ls "$T/d")" = "ctluajit.$CT_PID.vm0.bin
ctluajit.$CT_PID.vm0.bin.info" ]
	ct_exact "$T/d/ctluajit.$CT_PID.vm0.bin"
	no_probes_of "$T"
}

@test "container: -p with its host PID: exact, chunk names as it sees them, its namespace PID in the sidecar" {
	ct_start "$T/ct"
	[ "$(awk '/^NSpid:/ { print $NF }' "/proc/$CT_PID/status")" = 1 ]
	"$LMT" -p "$CT_PID" -o "$T/c.bin" 2> "$T/err" 3>&- &
	local tp=$!
	wait_for "$T/err" "Ctrl-C to stop"
	grep -qx "luamemtrace: tracing PID $CT_PID (1 VM, LuaJIT 2.1 GC64); Ctrl-C to stop" "$T/err"
	ct_run "$T/ct"
	wait "$tp"
	ct_exact "$T/c.bin"
	no_probes_of "$T"
}

@test "container: --all finds one running before it: exact, named by its host PID" {
	ct_start "$T/ct"
	mkdir "$T/d"
	"$LMT" --all --exe ctluajit -o "$T/d/" 2> "$T/err" 3>&- &
	local tp=$!
	wait_for "$T/err" "Ctrl-C to stop"
	ct_all_end "$tp"
}

# Its ctluajit is a file no probe of the tracer's watches (not a known
# path, mapped by nothing when it started): the rescan of /proc finds it.
@test "container: --all finds one started after it (a LuaJIT file it did not know): exact, its namespace PID said" {
	mkdir "$T/d"
	"$LMT" --all --exe ctluajit -o "$T/d/" 2> "$T/err" 3>&- &
	local tp=$!
	wait_for "$T/err" "Ctrl-C to stop"
	ct_start "$T/ct"
	wait_for "$T/err" "tracing PID $CT_PID (ctluajit), PID 1 in its namespace"
	ct_all_end "$tp"
}
