#!/usr/bin/env bats
# Faults a production tracer must survive (issue 14): output paths it must
# not trust, a tracer killed at any instant, concurrent VM creation, a
# process that execs, a module loaded just before the exit, bad numbers,
# -- COMMAND's exit status, a stream's facts beside it, a full disk, the
# decoder under a bounded fuzz run. Real processes throughout.

load helpers

HOST="$BATS_TEST_DIRNAME/../build/host"

setup() {
	T="$BATS_TEST_TMPDIR"
	umask 022
}

# What a test leaves behind: its jobs (helpers' teardown), the processes it
# listed in $T/pids (orphans a broken tracer left: continued, then killed),
# the small tmpfs of the disk-full test.
teardown() {
	local p
	end_listed
	for p in $(jobs -p); do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if mountpoint -q "$T/full" 2>/dev/null; then
		umount "$T/full" || umount -l "$T/full"
	fi
}

one_line() {
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ] && [ -n "$output" ]
}

# pstate PID: PID's state letter (R, S, T, Z...), empty once it is gone.
pstate() {
	local s
	read -r s 2>/dev/null < "/proc/$1/stat" || return 0
	s=${s##*) }
	echo "${s%% *}"
}

# wait_gone PID SECS: until PID has exited (gone or a zombie); 1 if it
# still runs (or is stopped) after SECS seconds.
wait_gone() {
	local i s
	for i in $(seq 1 $(($2 * 20))); do
		s=$(pstate "$1")
		[ -z "$s" ] || [ "$s" = Z ] && return 0
		sleep 0.05
	done
	return 1
}

# pids_with_arg ARG: the processes one of whose arguments is ARG.
pids_with_arg() {
	local d x
	local -a a
	for d in /proc/[0-9]*; do
		mapfile -d '' a 2>/dev/null < "$d/cmdline" || continue
		for x in "${a[@]}"; do
			if [ "$x" = "$1" ]; then
				echo "${d#/proc/}"
				break
			fi
		done
	done
}


# ---------------------------------------------------------------- output

@test "-o naming a symlink to an existing file: refused, one line, the target unchanged" {
	printf 'precious\n' > "$T/victim"
	ln -s "$T/victim" "$T/link.bin"
	run "$LMT" -o "$T/link.bin" -- luajit -e 'local t = {}'
	[ "$status" -ne 0 ]
	one_line
	[ "$(cat "$T/victim")" = precious ]
	[ "$(readlink "$T/link.bin")" = "$T/victim" ]
}

@test "-o naming a dangling symlink: refused, one line, its target not created" {
	ln -s "$T/planted" "$T/dangling.bin"
	run "$LMT" -o "$T/dangling.bin" -- luajit -e 'local t = {}'
	[ "$status" -ne 0 ]
	one_line
	[ ! -e "$T/planted" ]
	[ ! -e "$T/planted.info" ]
}

@test "-f does not make a symlinked -o (existing or dangling target) write through the link" {
	printf 'precious\n' > "$T/victim"
	ln -s "$T/victim" "$T/link.bin"
	ln -s "$T/planted" "$T/dangling.bin"
	"$LMT" -q -f -o "$T/link.bin" -- luajit -e 'local t = {}' 2>/dev/null || true
	"$LMT" -q -f -o "$T/dangling.bin" -- luajit -e 'local t = {}' 2>/dev/null || true
	[ "$(cat "$T/victim")" = precious ]
	[ ! -e "$T/planted" ]
}

@test "a symlink planted at FILE.info is not followed" {
	printf 'precious\n' > "$T/victim"
	ln -s "$T/victim" "$T/x.bin.info"
	"$LMT" -q -o "$T/x.bin" -- luajit -e 'local t = {}' 2>/dev/null || true
	[ "$(cat "$T/victim")" = precious ]
}

@test "a new stream and its FILE.info are created mode 0600" {
	umask 000
	run "$LMT" -q -o "$T/m.bin" -- luajit -e 'local t = {}'
	[ "$status" -eq 0 ]
	[ "$(stat -c %a "$T/m.bin")" = 600 ]
	[ "$(stat -c %a "$T/m.bin.info")" = 600 ]
}

@test "an existing -o file is not overwritten without -f: error, one line, file unchanged" {
	printf 'old stream\n' > "$T/old.bin"
	cp "$T/old.bin" "$T/want"
	run "$LMT" -q -o "$T/old.bin" -- luajit -e 'local t = {}'
	[ "$status" -ne 0 ]
	one_line
	cmp "$T/old.bin" "$T/want"
}

@test "-f and --force overwrite an existing -o file with a complete stream" {
	printf 'old stream\n' > "$T/old.bin"
	run "$LMT" -q -f -o "$T/old.bin" -- luajit -e 'local t = {}'
	[ "$status" -eq 0 ]
	[ "$(head -c 7 "$T/old.bin" | od -An -tx1 | tr -d ' \n')" = "6c6a7303000000" ]
	"$LMT" report "$T/old.bin" > /dev/null
	printf 'old stream\n' > "$T/old2.bin"
	run "$LMT" -q --force -o "$T/old2.bin" -- luajit -e 'local t = {}'
	[ "$status" -eq 0 ]
	[ "$(head -c 7 "$T/old2.bin" | od -An -tx1 | tr -d ' \n')" = "6c6a7303000000" ]
}

@test "-o old.bin -p 999999 (with or without -f): old.bin unchanged, a new -o not created" {
	[ ! -e /proc/999999 ]
	head -c 4096 /dev/urandom > "$T/old.bin"
	cp "$T/old.bin" "$T/want"
	run "$LMT" -o "$T/old.bin" -p 999999
	[ "$status" -ne 0 ]
	cmp "$T/old.bin" "$T/want"
	run "$LMT" -f -o "$T/old.bin" -p 999999
	[ "$status" -ne 0 ]
	cmp "$T/old.bin" "$T/want"
	run "$LMT" -o "$T/new.bin" -p 999999
	[ "$status" -ne 0 ]
	[ ! -e "$T/new.bin" ]
	[ ! -e "$T/new.bin.info" ]
}

@test "-o old.bin -- /nonexistent-cmd (with or without -f): old.bin unchanged" {
	head -c 4096 /dev/urandom > "$T/old.bin"
	cp "$T/old.bin" "$T/want"
	run "$LMT" -o "$T/old.bin" -- /nonexistent-cmd
	[ "$status" -ne 0 ]
	cmp "$T/old.bin" "$T/want"
	run "$LMT" -f -o "$T/old.bin" -- /nonexistent-cmd
	[ "$status" -ne 0 ]
	cmp "$T/old.bin" "$T/want"
	run "$LMT" -o "$T/new.bin" -- /nonexistent-cmd
	[ "$status" -ne 0 ]
	[ ! -e "$T/new.bin" ]
}

@test "-o new.bin -- a command that runs no LuaJIT: refused, one line, nothing created" {
	run "$LMT" -o "$T/new.bin" -- /bin/true
	[ "$status" -eq 1 ]
	one_line
	[[ "$output" == *"does not export lua_newstate"* ]]
	[ ! -e "$T/new.bin" ] && [ ! -e "$T/new.bin.info" ]
}

@test "-o in a world-writable directory without the sticky bit (0777): refused, one line, nothing created" {
	mkdir "$T/d"
	chmod 0777 "$T/d"
	run "$LMT" -o "$T/d/x.bin" -- luajit -e 'local t = {}'
	[ "$status" -ne 0 ]
	one_line
	[ -z "$(ls -A "$T/d")" ]
}

@test "-o in a directory of the user who ran sudo (SUDO_UID): traced, the files theirs (0600)" {
	mkdir "$T/home"
	chown 4242:4242 "$T/home"
	cd "$LUA_DIR"
	SUDO_UID=4242 SUDO_GID=4242 run "$LMT" -q -o "$T/home/p.bin" -- luajit alloc.lua
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u:%g %a' "$T/home/p.bin")" = "4242:4242 600" ]
	[ "$(stat -c '%u:%g %a' "$T/home/p.bin.info")" = "4242:4242 600" ]
	# without sudo's word for it, another user's directory is refused
	run "$LMT" -q -o "$T/home/q.bin" -- luajit alloc.lua
	[ "$status" -eq 1 ]
	[[ "$output" == *"belongs to another user"* ]]
}

@test "a FIFO planted at -o or FILE.info: never written, never a hang" {
	mkdir -m 1777 "$T/st"
	mkfifo "$T/st/x.bin"
	chown 4242 "$T/st/x.bin"
	cd "$LUA_DIR"
	run timeout 20 "$LMT" -f -o "$T/st/x.bin" -- luajit alloc.lua
	[ "$status" -eq 1 ]
	[[ "$output" == *"of another user"* ]]
	mkfifo "$T/st/y.bin.info"
	run timeout 20 "$LMT" -o "$T/st/y.bin" -- luajit alloc.lua
	[ "$status" -eq 1 ]
	[[ "$output" == *"a sidecar is a file"* ]]
	[ ! -e "$T/st/y.bin" ]
	# report: a FIFO beside a stream is not read (no hang), said in one line
	"$LMT" -q -o "$T/z.bin" -- luajit alloc.lua
	rm -f "$T/z.bin.info"
	mkfifo "$T/z.bin.info"
	run timeout 20 "$LMT" report "$T/z.bin"
	[ "$status" -eq 0 ]
	[[ "$output" == *"z.bin.info is unreadable or not a luamemtrace sidecar"* ]]
}

@test "-o in a sticky world-writable directory (1777, like /tmp): traced" {
	mkdir "$T/s"
	chmod 1777 "$T/s"
	run "$LMT" -q -o "$T/s/x.bin" -- luajit -e 'local t = {}'
	[ "$status" -eq 0 ]
	"$LMT" report "$T/s/x.bin" > /dev/null
}

# --------------------------------------------------------------- sidecar

@test "FILE.info beside the stream: key: value lines, pid, vms, duration, lost, in_flight, version, state complete" {
	cd "$LUA_DIR"
	"$LMT" -o "$T/a.bin" -- luajit alloc.lua > /dev/null 2> "$T/err"
	local pid ver
	pid=$(sed -n 's/^luamemtrace: traced PID \([0-9]*\),.*/\1/p' "$T/err")
	[ -n "$pid" ]
	[ -f "$T/a.bin.info" ]
	[ ! -L "$T/a.bin.info" ]
	[ "$(stat -c %a "$T/a.bin.info")" = 600 ]
	# each fact a "key: value" line
	local k
	for k in pid vms duration lost in_flight version state; do
		grep -Eq "^$k: [^ ]" "$T/a.bin.info"
	done
	[ "$(info_val "$T/a.bin.info" pid)" = "$pid" ]
	[[ "$(info_val "$T/a.bin.info" vms)" =~ ^1([^0-9]|$) ]]
	[[ "$(info_val "$T/a.bin.info" duration)" =~ ^[0-9]+(\.[0-9]+)? ]]
	[[ "$(info_val "$T/a.bin.info" lost)" =~ ^0([^0-9]|$) ]]
	[[ "$(info_val "$T/a.bin.info" in_flight)" =~ ^[0-9]+ ]]
	ver=$("$LMT" -V | awk '{ print $2 }')
	[ -n "$ver" ]
	[[ "$(info_val "$T/a.bin.info" version)" == *"$ver"* ]]
	[ "$(info_val "$T/a.bin.info" state)" = complete ]
	# the stream itself stays a standard one: report reads it, exit 0
	"$LMT" report "$T/a.bin" > /dev/null
}

@test "report on a stream whose FILE.info says lost > 0: the report, a 'lost' warning on stderr, exit 3; without the .info: exit 0" {
	lossy_trace "$T/l.bin"
	[ "$ST" -eq 3 ]
	[ "$(info_val "$T/l.bin.info" lost | grep -o '^[0-9]*')" -gt 0 ]
	local st=0
	"$LMT" report "$T/l.bin" > "$T/r1.out" 2> "$T/r1.err" || st=$?
	[ "$st" -eq 3 ]
	grep -q lost "$T/r1.err"
	grep -qx ALLOCATIONS "$T/r1.out"
	grep -q '^=(command line):1: [0-9]* events' "$T/r1.out"
	rm "$T/l.bin.info"
	st=0
	"$LMT" report "$T/l.bin" > "$T/r2.out" 2> "$T/r2.err" || st=$?
	[ "$st" -eq 0 ]
	absent lost "$T/r2.err"
	cmp "$T/r1.out" "$T/r2.out"
}

# ------------------------------------------------------- numbers refused

@test "-d nan: exit 2, one line, nothing created" {
	run "$LMT" -p 999999 -o "$T/x.bin" -d nan
	[ "$status" -eq 2 ]
	one_line
	[ ! -e "$T/x.bin" ]
}

@test "-d -nan: exit 2, one line, nothing created" {
	run "$LMT" -p 999999 -o "$T/x.bin" -d -nan
	[ "$status" -eq 2 ]
	one_line
	[ ! -e "$T/x.bin" ]
}

@test "-d -1: exit 2, one line, nothing created" {
	run "$LMT" -p 999999 -o "$T/x.bin" -d -1
	[ "$status" -eq 2 ]
	one_line
	[ ! -e "$T/x.bin" ]
}

@test "-d inf: exit 2, one line, nothing created" {
	run "$LMT" -p 999999 -o "$T/x.bin" -d inf
	[ "$status" -eq 2 ]
	one_line
	[ ! -e "$T/x.bin" ]
}

@test "-d 1e400 (overflow): exit 2, one line, nothing created" {
	run "$LMT" -p 999999 -o "$T/x.bin" -d 1e400
	[ "$status" -eq 2 ]
	one_line
	[ ! -e "$T/x.bin" ]
}

@test "-b nan: exit 2, one line, nothing created" {
	run "$LMT" -p 999999 -o "$T/x.bin" -b nan
	[ "$status" -eq 2 ]
	one_line
	[ ! -e "$T/x.bin" ]
}

# ----------------------------------------------------- -- COMMAND status

@test "-- COMMAND: luamemtrace exits with the command's status (os.exit(7): 7)" {
	run "$LMT" -q -o "$T/x.bin" -- luajit -e 'local t = {} os.exit(7)'
	[ "$status" -eq 7 ]
	"$LMT" report "$T/x.bin" > /dev/null
}

@test "-- COMMAND killed by a signal N: luamemtrace exits 128+N (SIGKILL: 137, SIGTERM: 143)" {
	local k='local ffi = require("ffi")
ffi.cdef("int getpid(void); int kill(int pid, int sig);")
local t = {}
ffi.C.kill(ffi.C.getpid(), SIG)'
	run "$LMT" -q -o "$T/k.bin" -- luajit -e "${k/SIG/9}"
	[ "$status" -eq 137 ]
	run "$LMT" -q -o "$T/t.bin" -- luajit -e "${k/SIG/15}"
	[ "$status" -eq 143 ]
}

@test "-- COMMAND with -d 1, command runs 2 s: tracing stops at 1 s, luamemtrace returns after the command, with its status" {
	cd "$LUA_DIR"
	run "$LMT" -d 1 -o "$T/d.bin" -- luajit sleep_exit.lua 2 5 "$T/cmd"
	local pid
	pid=$(cat "$T/cmd")
	echo "$pid" >> "$T/pids"
	# never orphaned: the command had finished when luamemtrace returned
	[ -e "$T/cmd.done" ]
	local s
	s=$(pstate "$pid")
	[ -z "$s" ] || [ "$s" = Z ]
	[ "$status" -eq 5 ]
	# the stream ended at 1 s, complete: the 300 tables before the
	# command's 2 s sleep, none of the 300 after
	"$LMT" report "$T/d.bin" > "$T/d.txt"
	count_is ALLOCATIONS @sleep_exit.lua:14 "$T/d.txt" 300
	count_is ALLOCATIONS @sleep_exit.lua:18 "$T/d.txt" ""
}

@test "-- COMMAND with loss, no --strict: exit status is the command's (0), the loss said on stderr" {
	lossy_command "$T/l.bin"
	grep -q "churn_for.lua done" "$T/out"
	grep -Eq 'lost: +[1-9][0-9]* events' "$T/err"
	[ "$ST" -eq 0 ]
}

@test "--strict: a lossy -- COMMAND trace exits 3" {
	lossy_command "$T/l.bin" --strict
	grep -q "churn_for.lua done" "$T/out"
	grep -Eq 'lost: +[1-9][0-9]* events' "$T/err"
	[ "$ST" -eq 3 ]
}

@test "--strict without loss: exit 0" {
	cd "$LUA_DIR"
	run "$LMT" -q --strict -o "$T/x.bin" -- luajit alloc.lua
	[ "$status" -eq 0 ]
	[ "$output" = "alloc.lua done" ]
}

# ------------------------------------------------------ never left stopped

@test "tracer SIGKILLed at random instants (25+ runs, inside the new-VM stop too): the command never stays stopped, no probe left" {
	# host -t 4: the first VM's allocator is not probed yet, so that VM
	# stops the process for the few ms it takes to probe it. Three ways to
	# pick the instant, in turn: as soon as the command is seen stopped;
	# 0-30 ms after the command started; 0-800 ms after the tracer started
	# (startup, the command's start, tracing).
	cd "$LUA_DIR"
	local i mode tpid c kids k comm s p t_end caught=0
	for i in $(seq 1 27); do
		mode=$((i % 3))
		cp alloc.lua "$T/k$i.lua"
		"$LMT" -q -o "$T/k$i.bin" -- "$HOST" -t 4 "$T/k$i.lua" > "$T/k$i.out" 2>&1 3>&- &
		tpid=$!
		c=
		if [ "$mode" -eq 2 ]; then
			sleep "0.$(printf %03d $((RANDOM % 800)))"
		else
			# the command: the tracer's child once it runs build/host
			t_end=$((${EPOCHREALTIME/./} + 10000000))
			while [ -z "$c" ] && [ "${EPOCHREALTIME/./}" -lt "$t_end" ]; do
				kids=
				read -r kids 2>/dev/null < "/proc/$tpid/task/$tpid/children" || true
				for k in $kids; do
					comm=
					read -r comm 2>/dev/null < "/proc/$k/comm" || true
					[ "$comm" = host ] && c=$k
				done
			done
			if [ -z "$c" ]; then
				echo "run $i: the command did not start"
				return 1
			fi
			if [ "$mode" -eq 0 ]; then
				t_end=$((${EPOCHREALTIME/./} + 3000000))
				while [ "${EPOCHREALTIME/./}" -lt "$t_end" ]; do
					s=
					read -r s 2>/dev/null < "/proc/$c/stat" || break
					s=${s##*) }
					s=${s%% *}
					case $s in
					T | t) caught=$((caught + 1)); break ;;
					Z | X) break ;;
					esac
				done
			else
				sleep "0.0$(printf %02d $((RANDOM % 30)))"
			fi
		fi
		kill -9 "$tpid" 2>/dev/null || true
		wait "$tpid" 2>/dev/null || true
		# whatever was started (the command, or the tracer's child that
		# waits to exec it) finishes by itself
		for p in $(pids_with_arg "$T/k$i.lua"); do
			echo "$p" >> "$T/pids"
			if ! wait_gone "$p" 5; then
				echo "run $i (mode $mode): PID $p still there after 5 s, state $(pstate "$p")"
				return 1
			fi
		done
		# a command that had started ran to its end: 4 VMs, 4 lines
		# (its threads' lines may interleave: counted, not lines)
		if [ -n "$c" ] && [ "$(grep -o 'alloc.lua done' "$T/k$i.out" | wc -l)" -ne 4 ]; then
			echo "run $i (mode $mode): the command did not complete:"
			cat "$T/k$i.out"
			return 1
		fi
		if ! no_probes_of "$T/k"; then
			echo "run $i (mode $mode): probes left"
			return 1
		fi
	done
	echo "# SIGKILL while the command was seen stopped: $caught of 9 runs" >&3
}

# ------------------------------------------------------- no silent loss

# every_call NAME THREADS RUNS [VAR=VALUE...]: host -c THREADS vmcount.lua
# traced RUNS times (with the environment given): each run exits 0, loses
# nothing, and its stream has every allocator call the host counted, each
# allocation with its address (none failed: one at 0 was completed by
# another call's return).
every_call() {
	local name=$1 threads=$2 runs=$3 i want got
	shift 3
	for i in $(seq 1 "$runs"); do
		run env "$@" "$LMT" -o "$T/$name$i.bin" -- "$HOST" -c "$threads" vmcount.lua
		printf '%s\n' "$output" > "$T/$name$i.err"
		[ "$status" -eq 0 ]
		want=$(sed -n 's/^calls: \([0-9]*\) alloc \([0-9]*\) realloc \([0-9]*\) free$/\1 \2 \3/p' "$T/$name$i.err")
		[ -n "$want" ]
		no_lost "$T/$name$i.err"
		"$LMT" report "$T/$name$i.bin" > "$T/$name$i.txt"
		"$BATS_TEST_DIRNAME/../build/mpdump" "$T/$name$i.bin" |
			awk '($1 == "alloc" || $1 == "realloc") && $7 == "0"' > "$T/$name$i.at0"
		if [ -s "$T/$name$i.at0" ]; then
			echo "run $i: allocations without an address:"
			head -3 "$T/$name$i.at0"
			return 1
		fi
		got=$(totals "$T/$name$i.txt")
		if [ "$got" != "$want" ]; then
			echo "run $i: host counted $want (alloc realloc free), stream has $got"
			grep -E 'VM|lost|missed' "$T/$name$i.err"
			return 1
		fi
	done
}

# An allocation leaves at its entry and its return writes its address in
# (bpf/await.h), unless its entry told it (bpf/lja.h). Test knobs take the
# return's other paths on every call, no address told (LMT_NO_PREDICT): no
# note of its entry (its thread moved to another CPU), so it searches
# the batches (1); and its event sent ahead, so that its address goes
# alone and user space pairs the two (2); and the same without a session
# (LMT_NO_SESSION: a free's entry leaves a note no return takes). The
# reports, their heap summaries (which pair every free with its
# allocation) included, are those of the addresses told at entry.
@test "an allocation's return without its entry's note (host -c 4): every call, lost 0, none in flight; the report, leaks included, as with the note" {
	cd "$LUA_DIR"
	every_call aw0 4 1
	every_call aw1 4 2 LMT_NO_PREDICT=1 LMT_TEST_AWAIT=1
	every_call aw2 4 2 LMT_NO_PREDICT=1 LMT_TEST_AWAIT=2
	every_call aw3 4 1 LMT_NO_SESSION=1 LMT_TEST_AWAIT=1
	for f in aw01 aw11 aw12 aw21 aw22 aw31; do
		absent 'in flight' "$T/$f.err"
		"$LMT" report "$T/$f.bin" | sed 's/0x[0-9a-f]*//g' > "$T/$f.txt"
	done
	for f in aw11 aw12 aw21 aw22 aw31; do
		diff "$T/aw01.txt" "$T/$f.txt"
	done
	grep -q '^HEAP SUMMARY' "$T/aw01.txt"
	# the host's own allocator (its ud a counter) fails its trial at each
	# VM's first address told: none used, each checked once
	grep -qx "  returns: 0 allocation addresses told at entry (their return not probed), 4 checked at it; an allocator not LuaJIT's own: its returns probed" "$T/aw01.err"
	absent WRONG "$T/aw01.err"
}

@test "threads creating VMs at the same moment (host -c 8, 5 runs): every allocator call in the stream, lost 0" {
	cd "$LUA_DIR"
	every_call c 8 5
}

# Two tracers of one process each stop it for their own ends, and one
# SIGCONT ends every stop: each continues it only when no tracer's stops
# map holds it still (bpf/luamemtrace.h, struct lmt_hold). host -c 4
# makes its first VM with an allocator of its own: the tracer of the
# command stops it there to probe that allocator, and an --all tracer
# whose --exe names it, to probe it as well (one whose --exe leaves it
# out does not stop it: its BPF tells). The command's tracer handles its
# stops 300 ms late (LMT_TEST_HOLD): a release of the --all tracer's that
# ended its stop would let the VMs run unprobed (and be said).
@test "two tracers of one process, one --all (its --exe leaving the process out, then naming it): neither ends the other's stop; every allocator call in each stream" {
	cd "$LUA_DIR"
	local pass tpid want sum=(0 0 0) f x i
	for pass in out in; do
		x=lmt-nothing
		[ "$pass" = in ] && x=host
		"$LMT" --all --exe "$x" -o "$T/$pass/" 2> "$T/$pass.err" 3>&- &
		tpid=$!
		wait_for "$T/$pass.err" "Ctrl-C to stop"
		every_call "$pass" 4 3 LMT_TEST_HOLD=300
		kill -INT "$tpid"
		wait "$tpid"
		no_lost "$T/$pass.err"
	done
	for x in out.err out1.err out2.err out3.err in.err in1.err in2.err in3.err; do
		absent 'ran while stopped' "$T/$x"
	done
	[ "$(ls "$T/out" | grep -c '\.bin$')" -eq 0 ]
	# the --all tracer's own streams of the 3 runs: 4 VMs each, their
	# sum every allocator call of the 3
	[ "$(ls "$T/in" | grep -c '^host\..*\.bin$')" -eq 12 ]
	for f in "$T"/in/host.*.bin; do
		"$LMT" report "$f" > "$f.txt"
		read -r -a x <<< "$(totals "$f.txt")"
		sum=($((sum[0] + x[0])) $((sum[1] + x[1])) $((sum[2] + x[2])))
	done
	for i in 1 2 3; do
		read -r -a x <<< "$(sed -n 's/^calls: \([0-9]*\) alloc \([0-9]*\) realloc \([0-9]*\) free$/\1 \2 \3/p' "$T/in$i.err")"
		sum=($((sum[0] - x[0])) $((sum[1] - x[1])) $((sum[2] - x[2])))
	done
	[ "${sum[*]}" = "0 0 0" ]
}

# Anyone may send a traced process SIGCONT (a shell's fg, another tool)
# while it is stopped for the tracer: it runs before the tracer has done
# what it stopped it for. The stop is held longer here (LMT_TEST_HOLD)
# while SIGCONTs come every 50 ms.
@test "a SIGCONT not the tracer's while it holds the process stopped: said, the stream marked incomplete, the command unharmed" {
	cd "$LUA_DIR"
	LMT_TEST_HOLD=1500 "$LMT" -o "$T/h.bin" -- "$HOST" -c 4 vmcount.lua > "$T/h.err" 2>&1 3>&- &
	local tpid=$! c i sent=0 st=0
	for i in $(seq 1 100); do
		c=$(pgrep -P "$tpid" -x host) || true
		if [ -n "$c" ] && kill -CONT "$c" 2>/dev/null; then
			sent=$((sent + 1))
		fi
		kill -0 "$tpid" 2>/dev/null || break
		sleep 0.05
	done
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ] || { cat "$T/h.err"; false; }
	[ "$sent" -gt 0 ]
	grep -q "^luamemtrace: warning: PID [0-9]* ran while stopped for the tracer" "$T/h.err"
	grep -q "^  ran: *1 process ran while stopped for the tracer (said above): the stream is INCOMPLETE" "$T/h.err"
	grep -q '^calls: ' "$T/h.err"
	run "$LMT" report "$T/h.bin"
	[ "$status" -eq 3 ] # printed from an incomplete stream
	[[ "$output" == *"the report is incomplete"* ]]
	no_probes_of "$T/"
}

# ------------------------------------------------------------ exec in place

@test "pages moved under the tracer (the heap collapsed into huge pages while traced): counts exact, reads still through the page tables" {
	cd "$LUA_DIR"
	"$LMT" -o "$T/m.bin" -- luajit moved.lua 1000000 "$T/ready" > "$T/out" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/ready" ready
	# collapse returns 1 when the process is gone: it ran to its end
	run "$BATS_TEST_DIRNAME/../build/collapse" "$(cut -d' ' -f1 "$T/ready")" 60
	[ "$status" -eq 1 ] || { echo "$output"; false; }
	# huge pages, while it ran (which pages of the VM: not told)
	n=$(echo "$output" | sed -n 's/^collapsed [0-9]* huge //p')
	[ "$n" -ge 2048 ] || { echo "no huge page: $output"; false; }
	wait "$TPID"
	grep -qx "100000	1000000" "$T/out"
	no_lost "$T/err"
	# through the page tables, huge pages included
	pct=$(sed -n 's/.*per event (\([0-9]*\)% through the page tables).*/\1/p' "$T/err")
	[ "$pct" -ge 90 ] || { cat "$T/err"; false; }
	"$LMT" report "$T/m.bin" > "$T/m.txt"
	# 100000 tables and one 24-byte block the VM makes there (through
	# the helper too)
	count_is ALLOCATIONS @moved.lua:6 "$T/m.txt" "100001"
	count_is ALLOCATIONS @moved.lua:9 "$T/m.txt" "1000000"
}

@test "-- a #!/usr/bin/env luajit script: traced (its start execs are not the end)" {
	printf '#!/usr/bin/env luajit\njit.off()\nlocal t = {}\nfor i = 1, 400 do t[i] = {} end\nprint("env done")\n' > "$T/env.lua"
	chmod +x "$T/env.lua"
	run "$LMT" -o "$T/e.bin" -- "$T/env.lua"
	[ "$status" -eq 0 ]
	[[ "$output" == *"env done"* ]]
	absent 'executed a new program' <(printf '%s\n' "$output")
	"$LMT" report "$T/e.bin" > "$T/e.txt"
	# 400 tables and t's array part
	count_is ALLOCATIONS @"$T"/env.lua:4 "$T/e.txt" 401
}

# exec_stream_ends TXT: the report of exec.lua's stream holds its 500
# tables, nothing of exec2.lua, and no more frees than allocations.
exec_stream_ends() {
	local a r f
	count_is ALLOCATIONS @exec.lua:14 "$1" 500
	absent 'exec2\.lua' "$1"
	read -r a r f <<< "$(totals "$1")"
	[ "$f" -le $((a + r)) ]
}

@test "-- COMMAND that execs another LuaJIT program in place: the stream ends at the exec, each event once" {
	cd "$LUA_DIR"
	local st=0
	"$LMT" -o "$T/x.bin" -- luajit exec.lua > "$T/out" 2> "$T/err" || st=$?
	grep -q "exec2.lua done" "$T/out"
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	# the summary says the process executed a new program
	grep -v '^  wrote ' "$T/err" | grep -qi exec
	st=0
	"$LMT" report "$T/x.bin" > "$T/x.txt" || st=$?
	[ "$st" -eq 0 ]
	exec_stream_ends "$T/x.txt"
}

@test "-p on a process that execs another LuaJIT program in place: the stream ends at the exec, each event once" {
	cd "$LUA_DIR"
	mkfifo "$T/in"
	luajit exec.lua wait < "$T/in" > "$T/out" 3>&- &
	local pid=$!
	exec 8> "$T/in"
	wait_for "$T/out" ready
	"$LMT" -p "$pid" -o "$T/x.bin" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing PID $pid"
	echo go >&8
	exec 8>&-
	wait_for "$T/out" "exec2.lua done"
	wait "$pid"
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	grep -v '^  wrote ' "$T/err" | grep -v '^luamemtrace: tracing PID' | grep -qi exec
	"$LMT" report "$T/x.bin" > "$T/x.txt"
	exec_stream_ends "$T/x.txt"
}

# ----------------------------------------------------- what held, holds

@test "two tracers on one process: the second says so, both streams exact, no probe left" {
	attach_waiting "$T/a.bin"
	local pid=$PID tpid=$TPID
	"$LMT" -p "$pid" -o "$T/b.bin" 2> "$T/err2" 3>&- &
	local tpid2=$!
	wait_for "$T/err2" "tracing PID $pid"
	grep -qx "luamemtrace: PID $pid is traced by another luamemtrace too: each writes its whole streams (and the process pays both)" "$T/err2"
	absent "another luamemtrace" "$T/err"
	echo go >&8
	wait_for "$T/out" "wait.lua done"
	kill -INT "$tpid" "$tpid2"
	wait "$tpid"
	wait "$tpid2"
	echo bye >&8
	exec 8>&-
	wait "$pid"
	local f
	for f in a b; do
		"$LMT" report "$T/$f.bin" > "$T/$f.txt"
		count_is ALLOCATIONS @wait.lua:8 "$T/$f.txt" 700
	done
	no_probes_of "$T/"
}

@test "a traced process forks: the child's allocations are not in the stream, the child unharmed" {
	cd "$LUA_DIR"
	run "$LMT" -o "$T/f.bin" -- luajit fork.lua
	[ "$status" -eq 0 ]
	[[ "$output" == "fork.lua done"* ]]
	[[ "$output" == *"  not followed: 1 child of traced processes (-o DIR/ traces them too)"* ]]
	"$LMT" report "$T/f.bin" > "$T/f.txt"
	# 200 tables and keep's array part
	count_is ALLOCATIONS @fork.lua:16 "$T/f.txt" 201
	absent '^@fork.lua:11:' "$T/f.txt"
}

# ---------------------------------------------------------- late modules

# The process waits at exit() until its last events are read (bpf
# exit_enter): the Lua name is read from its tables while they exist.
@test "a C module loaded just before the exit: its function named (lmtmod.make, beside lmtmod_make: 100 ALLOC events), no [unknown]" {
	cd "$LUA_DIR"
	[ -f "$BATS_TEST_DIRNAME/../build/lmtmod.so" ]
	LMT_MODDIR="$BATS_TEST_DIRNAME/../build" run "$LMT" -q -o "$T/m.bin" -- luajit late_module.lua
	[ "$status" -eq 0 ]
	"$LMT" report "$T/m.bin" > "$T/m.txt"
	local loc
	loc=$(grep -Eo '^lmtmod\.make \(lmtmod_make\):0x[0-9a-f]+' "$T/m.txt" | head -1)
	[ -n "$loc" ]
	count_is ALLOCATIONS "$loc" "$T/m.txt" 100
	absent '\[unknown\]' "$T/m.txt"
}

# -------------------------------------------------------------- disk full

@test "disk full (256 KiB tmpfs): one line about the write error, non-zero exit, decodable prefix (report exit 3), target unharmed" {
	mkdir "$T/full"
	mount -t tmpfs -o size=256k tmpfs "$T/full"
	spin 'jit.off() local t while true do t = {} end'
	local pid=$SPIN
	echo "$pid" >> "$T/pids"
	run "$LMT" -p "$pid" -d 20 -o "$T/full/x.bin"
	[ "$status" -ne 0 ]
	# one line besides the banner ("tracing PID ..."), and it says why
	output=$(printf '%s\n' "$output" | grep -v "^luamemtrace: tracing PID $pid ")
	printf '%s\n' "$output"
	one_line
	[[ "$output" == *"No space left on device"* ]]
	# the target runs on, not stopped
	local s
	s=$(pstate "$pid")
	[ "$s" = R ] || [ "$s" = S ]
	kill "$pid"
	no_probes_of "$T/full/"
	local st=0
	"$LMT" report "$T/full/x.bin" > "$T/r.out" 2> "$T/r.err" || st=$?
	[ "$st" -eq 3 ]
	grep -qx ALLOCATIONS "$T/r.out"
	[ -s "$T/r.err" ]
}

# ---------------------------------------------------------------- fuzzing

# flood_paused OPT...: lua/flood.lua (3M tables at line 5) traced with a
# 1 MiB ring and OPT, its tracer stopped for a second once the flood runs
# (a consumer far behind): summary in $T/sum, report in $T/rep.
flood_paused() {
	"$LMT" -f -o "$T/f.bin" -b 1 "$@" -- luajit -joff lua/flood.lua 3000000 > "$T/sum" 2>&1 3>&- &
	local tp=$!
	wait_for "$T/sum" ready
	kill -STOP "$tp"
	sleep 1
	kill -CONT "$tp"
	wait "$tp" || true
	"$LMT" report "$T/f.bin" > "$T/rep" 2>/dev/null || true
}

@test "--no-loss: a consumer stopped for a second behind a 1 MiB ring loses nothing (the target waits, stopped, and goes on); without it events are lost and said so" {
	cd "$BATS_TEST_DIRNAME"
	flood_paused
	grep -Eq '^  lost: +[1-9][0-9]* events' "$T/sum"
	flood_paused --no-loss
	no_lost "$T/sum"
	grep -Eq '^  paused: +[1-9][0-9]* times?, the ring over half full' "$T/sum"
	# every table of line 5 and keep's array part, and the stream says
	# nothing was lost
	count_is ALLOCATIONS @lua/flood.lua:5 "$T/rep" 3000001
	grep -qx 'lost: 0' "$T/f.bin.info"
	no_probes_of "$T/f.bin"
}

@test "decoder fuzz: a bounded libFuzzer run (20 s) exits 0" {
	cd "$BATS_TEST_DIRNAME/.."
	local st=0
	make -s fuzz-decoders FUZZ_SECONDS=20 > "$T/fuzz.log" 2>&1 || st=$?
	if [ "$st" -ne 0 ]; then
		tail -40 "$T/fuzz.log"
		return 1
	fi
	grep -q '^Done [0-9]* runs' "$T/fuzz.log"
}
