# Shared by the bats suites.
LMT="$BATS_TEST_DIRNAME/../luamemtrace"
LUA_DIR="$BATS_TEST_DIRNAME/lua"
FIXTURES="${LMT_FIXTURES:-$BATS_TEST_DIRNAME/../../shared/fixtures/memprof}"

# counts SECTION LOC FILE: the event counts of the groups named LOC in
# SECTION (ALLOCATIONS, REALLOCATIONS, DEALLOCATIONS) of a standard
# report, ascending and comma-separated ("" if none).
counts() {
	awk -v sec="$1" -v loc="$2" '
		/^(ALLOCATIONS|REALLOCATIONS|DEALLOCATIONS)$/ { s = $0; next }
		/^HEAP SUMMARY:/ { s = ""; next }
		s == sec && index($0, loc ": ") == 1 {
			rest = substr($0, length(loc) + 3)
			split(rest, a, " "); print a[1]
		}' "$3" | sort -n | paste -sd, -
}

# count_is SECTION LOC FILE WANT: counts is WANT; otherwise says what it
# got and shows the report, so a failure in CI can be read from its log.
count_is() {
	local got
	got=$(counts "$1" "$2" "$3")
	[ "$got" = "$4" ] && return 0
	echo "counts $1 $2 in $3: got '$got', want '$4'"
	head -60 "$3"
	return 1
}

# alloc_lines PREFIX [REPORT]: the sites of REPORT's (default: stdin)
# ALLOCATIONS section that start with PREFIX, "SITE: N" a line, sorted.
alloc_lines() {
	sed -n '/^ALLOCATIONS$/,/^$/p' "${2:--}" | grep "^$1" | cut -d' ' -f1,2 | sort
}

# Starts a traced command's stand-in: waits until FILE contains TEXT.
wait_for() {
	local file=$1 text=$2 i
	for i in $(seq 1 200); do
		grep -q "$text" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "timed out waiting for '$text' in $file" >&2
	cat "$file" >&2
	return 1
}

# stopped_now PID: waits until PID is stopped (its state T): a SIGSTOP
# lands only once the process next runs, later on a busy host.
stopped_now() {
	local i s
	for i in $(seq 1 200); do
		s=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
		[ "$s" = T ] && return 0
		sleep 0.05
	done
	echo "PID $1: state '$s', not stopped" >&2
	return 1
}

# spin CODE: luajit running CODE (a loop that never ends) in the
# background; returns once its VM runs (it says so in a file first), its
# PID in SPIN.
spin() {
	luajit -e "local f = io.open('$T/spin.ready', 'w') f:write('ready') f:close() $1" 3>&- &
	SPIN=$!
	wait_for "$T/spin.ready" ready
	rm -f "$T/spin.ready"
}

# Background jobs close bats' fd 3 (3>&-): one left running by a failed
# test would otherwise hold the suite open forever. Every suite's teardown
# kills what a test left running.
kill_jobs() {
	local p
	for p in $(jobs -p); do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

teardown() {
	kill_jobs
}

# end_listed: the processes a test listed in $T/pids (orphans a broken
# tracer may leave stopped), continued, then killed.
end_listed() {
	local p
	for p in $(cat "$T/pids" 2>/dev/null); do
		kill -CONT "$p" 2>/dev/null || true
		kill -9 "$p" 2>/dev/null || true
	done
}

# No uprobe-backed perf event with a BPF program is left on the system
# by luamemtrace (bpftool lists the live ones).
no_probes_left() {
	! bpftool perf show 2>/dev/null | grep -q uprobe
}

# no_probes_of TEXT: no_probes_left for the processes of one test: no
# process whose command line contains TEXT (a path of the test's own: the
# tracer, anything it forked, the command) holds a uprobe with a BPF
# program. Tracers of other suites running meanwhile do not count.
no_probes_of() {
	local p c
	for p in $(bpftool perf show 2>/dev/null | awk '/uprobe/ { print $2 }' | sort -u); do
		c=$(tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline") || continue
		if [[ "$c" == *"$1"* ]]; then
			echo "PID $p ($c) holds uprobes"
			return 1
		fi
	done
}

# multi_links PID: how many uprobe_multi links (session links too)
# process PID holds.
multi_links() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | grep -c '^link_type:[[:space:]]*uprobe_multi$' || true
}

# no_lost FILE: no "lost:" line of a summary counts anything.
no_lost() {
	if grep -E '^ *lost:' "$1" | grep -q '[1-9]'; then
		grep -E '^ *lost:' "$1"
		return 1
	fi
}

# absent REGEX FILE: no line of FILE matches REGEX (a mid-test "! grep"
# would not fail a bats test).
absent() {
	if grep -q -- "$1" "$2"; then
		echo "unexpected '$1' in $2:"
		grep -- "$1" "$2" | head -5
		return 1
	fi
}

# info_val FILE KEY: the value of "KEY: value" in a sidecar.
info_val() {
	sed -n "s/^$2: *//p" "$1" | head -1
}

# Starts tests/lua/wait.lua (it waits on fd 8 for "go", runs its workload,
# then waits for "bye") and attaches the tracer to it with -o FILE.
# Sets PID (the target) and TPID (the tracer); tracer stderr in $T/err.
attach_waiting() {
	cd "$LUA_DIR"
	mkfifo "$T/in"
	luajit wait.lua < "$T/in" > "$T/out" 3>&- &
	PID=$!
	exec 8> "$T/in"
	wait_for "$T/out" ready
	"$LMT" -p "$PID" -o "$1" 2> "$T/err" 3>&- &
	TPID=$!
	wait_for "$T/err" "tracing PID $PID"
}

# totals FILE: the summed event counts of every group of each section of a
# standard report, as "ALLOC REALLOC FREE" (the events of ALLOCATIONS,
# REALLOCATIONS and DEALLOCATIONS).
totals() {
	awk '
		/^(ALLOCATIONS|REALLOCATIONS|DEALLOCATIONS)$/ { s = $0; next }
		/^HEAP SUMMARY:/ { s = ""; next }
		s != "" && /: [0-9]+ events\t/ {
			n = $0; sub(/ events\t.*/, "", n); sub(/.*: /, "", n)
			t[s] += n
		}
		END { printf "%d %d %d\n", t["ALLOCATIONS"], t["REALLOCATIONS"], t["DEALLOCATIONS"] }' "$1"
}

# lossy_trace FILE [OPTION...]: traces a churning luajit with -p and a
# 1 MiB ring, the tracer stopped for a second so that the ring overflows,
# then Ctrl-C. Sets ST (the tracer's exit status); its stderr in $T/err.
lossy_trace() {
	local out=$1 pid tpid
	shift
	spin 'jit.off() local t while true do t = {} end'
	pid=$SPIN
	"$LMT" -p "$pid" -b 1 -o "$out" "$@" 2> "$T/err" 3>&- &
	tpid=$!
	wait_for "$T/err" "tracing PID $pid"
	kill -STOP "$tpid"
	sleep 1
	kill -CONT "$tpid"
	sleep 0.2
	kill -INT "$tpid"
	ST=0
	wait "$tpid" || ST=$?
	kill "$pid"
}

# lossy_command FILE [OPTION...]: the same with -- luajit churn_for.lua 3
# (it prints "ready", churns 3 s, prints "churn_for.lua done" to $T/out).
lossy_command() {
	local out=$1 tpid
	shift
	(cd "$LUA_DIR" && exec "$LMT" "$@" -b 1 -o "$out" -- luajit churn_for.lua 3) \
		> "$T/out" 2> "$T/err" 3>&- &
	tpid=$!
	wait_for "$T/out" ready
	kill -STOP "$tpid"
	sleep 1
	kill -CONT "$tpid"
	ST=0
	wait "$tpid" || ST=$?
}

# unnamed: folded lines without the function names beside Lua frames
# ("@x.lua:7 local 'f'" is "@x.lua:7"), lines that then read the same
# summed, in order: for the suites about stacks' shape (a frame a trace
# inlined may be named by its line, tests/fnames.bats).
unnamed() {
	sed -E "s/ (function|method|field|upvalue|local|metamethod) '[^']*'//g" | awk '
		{ w = $NF; k = $0; sub(/ [0-9]+$/, "", k); if (!(k in s)) o[n++] = k; s[k] += w }
		END { for (i = 0; i < n; i++) print o[i], s[o[i]] }'
}

# tracebacks_seen STREAM STDOUT: every debug.traceback tests/lua/stacks.lua
# printed (LMT_TRACEBACKS, one a line, '|' for newlines) is a stack of
# STREAM's report --folded, names left out (unnamed): "F:N: in ..." is
# @F:N, "[C]: in function 'f'" the builtin (sort is table.sort), "[C]: at
# 0xA" a C frame at A: ours is "[C] OBJECT+0xVADDR" (the stream's name),
# the traceback's its run-time address: the same page offset; or "[C]
# SYMBOL" where the object has one (a build not stripped), or "CFUNC 0xA"
# where it was not named (a C function attached to with -p). 7 of them.
tracebacks_seen() {
	local tb want re n=0
	while IFS= read -r tb; do
		want=$(printf '%s\n' "$tb" | tr '|' '\n' | awk '
			/^\t/ { sub(/^\t/, "")
				if (match($0, /^\[C\]: at 0x[0-9a-f]+/)) f = "C" substr($0, 9, RLENGTH - 8)
				else if (match($0, /^\[C\]: in function \047[^\047]+\047/)) {
					f = substr($0, 19, RLENGTH - 19); if (f == "sort") f = "table.sort" }
				else if (match($0, /^[^:]+:[0-9]+:/)) f = "@" substr($0, 1, RLENGTH - 1)
				else f = "?"
				fr[n++] = f }
			END { for (i = n - 1; i >= 0; i--) printf "%s;", fr[i]; print "@lua/stacks.lua:41" }')
		re=$(printf '%s' "$want" | sed -E 's/[.]/\\./g; s/@lua\/stacks\\.lua:/L/g; s/C0x[0-9a-f]*([0-9a-f]{3})/(\\[C\\] ([^;+]*|[^;]*\\+0x[0-9a-f]*\1)|CFUNC 0x[0-9a-f]*\1)/g')
		"$LMT" report --folded --weight=events "$1" | unnamed |
			sed -E 's#@lua/stacks\.lua:#L#g' | grep -Eq "^$re [0-9]+$" || {
			echo "traceback: $tb"; echo "want: $re"; return 1; }
		n=$((n + 1))
	done < <(grep -F 'stack traceback' "$2")
	[ "$n" -eq 7 ]
}
