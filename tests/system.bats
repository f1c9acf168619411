#!/usr/bin/env bats
# System-wide (issue 19): several processes in one trace, every LuaJIT
# process (--all, --exe), a stream per VM (-o DIR), the children traced
# processes fork, processes that end or exec while others go on.

load helpers

HOST="$BATS_TEST_DIRNAME/../build/host"

setup() {
	T="$BATS_TEST_TMPDIR"
}

# waiter NAME [PROGRAM]: tests/lua/wait.lua run by PROGRAM (default
# luajit) with stdin on the FIFO $T/NAME.in (fd: the caller's exec),
# stdout in $T/NAME.out; its PID in $T/NAME.pid once it said "ready".
waiter() {
	cd "$LUA_DIR"
	mkfifo "$T/$1.in"
	"${2:-luajit}" wait.lua < "$T/$1.in" > "$T/$1.out" 3>&- &
	echo $! > "$T/$1.pid"
}

# a_ends PID STREAM: waiter a (PID, its FIFO on fd 7) runs its workload
# and exits; back once STREAM is complete (the tracer going on), or ~5 s.
a_ends() {
	local i
	echo go >&7
	wait_for "$T/a.out" "wait.lua done"
	echo bye >&7
	exec 7>&-
	wait "$1"
	for i in $(seq 1 100); do
		[ "$(info_val "$2.info" state 2>/dev/null)" = complete ] && break
		sleep 0.05
	done
}

# report_of FILE: its report in FILE.txt (exit status checked: 0).
report_of() {
	local st=0
	"$LMT" report "$1" > "$1.txt" || st=$?
	[ "$st" -eq 0 ]
}

@test "-o DIR -- a program that forks: the child's stream is its own (its line only), the parent's its own; sidecars say which" {
	cd "$LUA_DIR"
	run "$LMT" -o "$T/d/" -- luajit fork.lua
	echo "$output" # shown if the test fails
	[ "$status" -eq 0 ]
	[[ "$output" == *"fork.lua done"* ]]
	local files parent child
	files=$(cd "$T/d" && ls *.bin)
	[ "$(echo "$files" | wc -l)" -eq 2 ]
	for f in $files; do
		[[ "$f" =~ ^luajit\.[0-9]+\.vm0\.bin$ ]]
		[ "$(info_val "$T/d/$f.info" state)" = complete ]
		if [ -n "$(info_val "$T/d/$f.info" parent)" ]; then child=$f; else parent=$f; fi
	done
	[ -n "$parent" ] && [ -n "$child" ]
	[ "$(info_val "$T/d/$child.info" parent)" = "$(info_val "$T/d/$parent.info" pid)" ]
	[ "$(info_val "$T/d/$child.info" vm)" = 0 ]
	report_of "$T/d/$parent"
	report_of "$T/d/$child"
	# 200 (parent) or 300 (child) tables and keep's array part
	count_is ALLOCATIONS @fork.lua:16 "$T/d/$parent.txt" 201
	absent '^@fork.lua:11:' "$T/d/$parent.txt"
	count_is ALLOCATIONS @fork.lua:11 "$T/d/$child.txt" 301
	absent '^@fork.lua:16:' "$T/d/$child.txt"
	[[ "$output" == *"a child of PID $(info_val "$T/d/$parent.info" pid)"* ]]
	no_probes_of "$T/"
}

@test "-p A,B -o DIR: one tracer, a stream per process, exact counts; A exits first, its stream ends well formed while B is traced on" {
	waiter a
	exec 7> "$T/a.in"
	waiter b
	exec 6> "$T/b.in"
	wait_for "$T/a.out" ready
	wait_for "$T/b.out" ready
	local a b
	a=$(cat "$T/a.pid")
	b=$(cat "$T/b.pid")
	"$LMT" -p "$a,$b" -o "$T/d" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing 2 processes"
	# A's stream is complete while the tracer goes on with B
	a_ends "$a" "$T/d/luajit.$a.vm0.bin"
	[ "$(info_val "$T/d/luajit.$a.vm0.bin.info" end)" = exited ]
	kill -0 "$tpid"
	echo go >&6
	wait_for "$T/b.out" "wait.lua done"
	echo bye >&6
	exec 6>&-
	wait "$b"
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	grep -q "traced 2 processes, 2 VMs" "$T/err"
	for p in "$a" "$b"; do
		report_of "$T/d/luajit.$p.vm0.bin"
		count_is ALLOCATIONS @wait.lua:8 "$T/d/luajit.$p.vm0.bin.txt" 700
	done
	no_probes_of "$T/"
}

# Processes that share their allocator's file (nginx's workers) share
# one session link where no other process maps it: a link by PID would
# have each process's probe hijack the others' returns (docs/costs.md).
# A private copy of luajit (and of its libluajit, where it links one):
# only this test's processes map it.
private_luajit() {
	local lib
	cp "$(command -v luajit)" "$T/lj"
	lib=$(ldd "$T/lj" | awk '/libluajit/ { print $3 }')
	if [ -n "$lib" ]; then
		cp "$lib" "$T/"
		export LD_LIBRARY_PATH="$T"
	fi
}

@test "-p A,B,C sharing their allocator's file, no other process mapping it: one session link; A ends, B and C go on with it, exact counts; a process not traced that maps it since is said, once, its output unchanged" {
	private_luajit
	local w
	for w in a b c; do
		waiter "$w" "$T/lj"
	done
	exec 7> "$T/a.in" 6> "$T/b.in" 5> "$T/c.in"
	for w in a b c; do
		wait_for "$T/$w.out" ready
	done
	local a b c x
	a=$(cat "$T/a.pid")
	b=$(cat "$T/b.pid")
	c=$(cat "$T/c.pid")
	"$T/lj" -e 'local n = 0 for i = 1, 200000 do local t = { i } n = n + #t end print(n)' > "$T/x0.out"
	"$LMT" -v -p "$a,$b,$c" -o "$T/d" 2> "$T/err" 7>&- 6>&- 5>&- &
	local tpid=$!
	wait_for "$T/err" "tracing 3 processes"
	grep -q "^luamemtrace: 3 processes' allocator in $T/.*: one session link for them (every process that maps it is traced)\$" "$T/err"
	[ "$(multi_links "$tpid")" -eq 1 ]
	# A ends; the link stays for B and C
	a_ends "$a" "$T/d/lj.$a.vm0.bin"
	[ "$(multi_links "$tpid")" -eq 1 ]
	# not traced, it maps the file since: the shared probe is in it
	"$T/lj" -e 'local n = 0 for i = 1, 200000 do local t = { i } n = n + #t end print(n)' > "$T/x.out" 7>&- 6>&- 5>&- &
	x=$!
	wait "$x"
	diff "$T/x0.out" "$T/x.out"
	wait_for "$T/err" "warning: PID $x (lj), not traced, maps an allocator whose probe the traced processes share"
	echo go >&6
	echo go >&5
	wait_for "$T/b.out" "wait.lua done"
	wait_for "$T/c.out" "wait.lua done"
	echo bye >&6
	echo bye >&5
	exec 6>&- 5>&-
	wait "$b"
	wait "$c"
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	[ "$(grep -c "not traced, maps an allocator" "$T/err")" -eq 1 ]
	for p in "$a" "$b" "$c"; do
		report_of "$T/d/lj.$p.vm0.bin"
		count_is ALLOCATIONS @wait.lua:8 "$T/d/lj.$p.vm0.bin.txt" 700
	done
}

@test "-p A,B sharing their allocator's file that a process not traced maps too, or LMT_NO_SHARED=1: a link each, exact counts, nothing said" {
	private_luajit
	local m
	for m in other LMT_NO_SHARED; do
		waiter "a$m" "$T/lj"
		exec 7> "$T/a$m.in"
		waiter "b$m" "$T/lj"
		exec 6> "$T/b$m.in"
		wait_for "$T/a$m.out" ready
		wait_for "$T/b$m.out" ready
		if [ "$m" = other ]; then
			waiter c "$T/lj"
			exec 5> "$T/c.in"
			wait_for "$T/c.out" ready
		fi
		local a b
		a=$(cat "$T/a$m.pid")
		b=$(cat "$T/b$m.pid")
		env "$m=1" "$LMT" -v -p "$a,$b" -o "$T/d$m" 2> "$T/err$m" 7>&- 6>&- 5>&- &
		local tpid=$!
		wait_for "$T/err$m" "tracing 2 processes"
		[ "$(multi_links "$tpid")" -eq 2 ]
		echo go >&7
		echo go >&6
		wait_for "$T/a$m.out" "wait.lua done"
		wait_for "$T/b$m.out" "wait.lua done"
		echo bye >&7
		echo bye >&6
		exec 7>&- 6>&-
		wait "$a"
		wait "$b"
		local st=0
		wait "$tpid" || st=$?
		[ "$st" -eq 0 ]
		[ "$m" = other ] && exec 5>&-
		no_lost "$T/err$m"
		absent "one session link for them" "$T/err$m"
		if [ "$m" = other ]; then
			grep -q "^luamemtrace: 2 processes share the allocator in .*: a link each (PID $(cat "$T/c.pid"), not traced, maps it)\$" "$T/err$m"
		fi
		absent "not traced, maps an allocator" "$T/err$m"
		grep -q "allocator probes as a session" "$T/err$m"
		for p in "$a" "$b"; do
			report_of "$T/d$m/lj.$p.vm0.bin"
			count_is ALLOCATIONS @wait.lua:8 "$T/d$m/lj.$p.vm0.bin.txt" 700
		done
	done
}

@test "-p A,B or --all with -o naming an existing file: refused in one line, the file unchanged (a new name is a directory)" {
	echo old > "$T/x.bin"
	run "$LMT" -p "$$,$PPID" -o "$T/x.bin"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace: $T/x.bin: several processes write several streams: give a directory (-o DIR/)" ]
	run "$LMT" --all -f -o "$T/x.bin"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace: $T/x.bin: several processes write several streams: give a directory (-o DIR/)" ]
	[ "$(cat "$T/x.bin")" = old ]
}

@test "-o DIR holding streams of an earlier trace: refused without -f, nothing changed" {
	mkdir "$T/d"
	echo old > "$T/d/old.bin"
	cd "$LUA_DIR"
	run "$LMT" -o "$T/d" -- luajit alloc.lua
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace: $T/d holds streams already (-f to replace them, or another directory)" ]
	[ "$(cat "$T/d/old.bin")" = old ]
	[ "$(ls "$T/d")" = old.bin ]
}

@test "--all --exe NAME: running and later processes of that name traced, exact; another LuaJIT process left out, unharmed" {
	cp "$(command -v luajit)" "$T/lmt-a"
	waiter a "$T/lmt-a"
	exec 7> "$T/a.in"
	wait_for "$T/a.out" ready
	"$LMT" --all --exe lmt-a -o "$T/d/" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing 1 LuaJIT process"
	# started after the tracer: one of that name, one not
	waiter b "$T/lmt-a"
	exec 6> "$T/b.in"
	waiter c
	exec 5> "$T/c.in"
	wait_for "$T/b.out" ready
	wait_for "$T/c.out" ready
	wait_for "$T/err" "tracing PID $(cat "$T/b.pid") (lmt-a)"
	echo go >&7
	echo go >&6
	echo go >&5
	wait_for "$T/a.out" "wait.lua done"
	wait_for "$T/b.out" "wait.lua done"
	wait_for "$T/c.out" "wait.lua done"
	echo bye >&7
	echo bye >&6
	echo bye >&5
	exec 7>&- 6>&- 5>&-
	wait "$(cat "$T/a.pid")" "$(cat "$T/b.pid")" "$(cat "$T/c.pid")"
	kill -INT "$tpid"
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	for n in a b; do
		report_of "$T/d/lmt-a.$(cat "$T/$n.pid").vm0.bin"
		count_is ALLOCATIONS @wait.lua:8 "$T/d/lmt-a.$(cat "$T/$n.pid").vm0.bin.txt" 700
	done
	[ "$(ls "$T/d" | grep -c '\.bin$')" -eq 2 ]
	[ "$(cat "$T/c.out")" = "$(printf 'ready\nwait.lua done')" ]
	no_probes_of "$T/"
}

# --exe's names are in BPF too: a process they leave out is not stopped
# at its first VM for user space to read its name. Seen through the stop
# itself: held longer (LMT_TEST_HOLD), a process stopped meanwhile sent
# SIGCONTs is said to have run while stopped. A name BPF cannot hold
# whole (64 characters and more) leaves the choice to user space, which
# stops the process: then it is said.
@test "--all --exe NAME: a process it leaves out is not stopped at its first VM (with a name BPF cannot hold, it is: said)" {
	cd "$LUA_DIR"
	local long pass ex tpid hpid st
	long=lmt-$(printf 'x%.0s' $(seq 1 64))
	for pass in bpf user; do
		ex=lmt-nothing
		[ "$pass" = user ] && ex="lmt-nothing,$long"
		LMT_TEST_HOLD=1500 "$LMT" --all --exe "$ex" -o "$T/$pass/" 2> "$T/$pass.err" 3>&- &
		tpid=$!
		wait_for "$T/$pass.err" "Ctrl-C to stop"
		"$HOST" -c 4 vmcount.lua > "$T/$pass.host" 2>&1 3>&- &
		hpid=$!
		while kill -CONT "$hpid" 2>/dev/null; do
			sleep 0.05
		done
		wait "$hpid"
		kill -INT "$tpid"
		st=0
		wait "$tpid" || st=$?
		# a trace with a process that ran while stopped is incomplete: 3
		[ "$st" -eq "$([ "$pass" = bpf ] && echo 0 || echo 3)" ]
		grep -q '^calls: 19616 alloc 84 realloc 13740 free$' "$T/$pass.host"
		[ "$(ls "$T/$pass" | grep -c '\.bin$')" -eq 0 ]
	done
	absent 'ran while stopped' "$T/bpf.err"
	grep -q "^luamemtrace: warning: PID $hpid ran while stopped for the tracer" "$T/user.err"
}

@test "-o DIR, threads creating VMs at the same moment (host -c 8): a stream per VM, batched, their sum every allocator call" {
	cd "$LUA_DIR"
	run "$LMT" -o "$T/d/" -- "$HOST" -c 8 vmcount.lua
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > "$T/err"
	no_lost "$T/err"
	local want got=(0 0 0) f a r x
	want=$(sed -n 's/^calls: \([0-9]*\) alloc \([0-9]*\) realloc \([0-9]*\) free$/\1 \2 \3/p' "$T/err")
	[ -n "$want" ]
	[ "$(ls "$T/d" | grep -c '\.bin$')" -eq 8 ]
	for f in "$T"/d/*.bin; do
		report_of "$f"
		read -r a r x <<< "$(totals "$f.txt")"
		got=($((got[0] + a)) $((got[1] + r)) $((got[2] + x)))
	done
	[ "${got[*]}" = "$want" ]
}

@test "-o FILE on a process with several VMs: said in one line, the VMs share the stream" {
	cd "$LUA_DIR"
	run "$LMT" -q -o "$T/x.bin" -- "$HOST" -t 2 alloc.lua
	[ "$status" -eq 0 ]
	[[ "$output" == *"has several VMs: they share the one stream $T/x.bin (-o DIR/ writes a stream per VM)"* ]]
}

@test "-o DIR: a traced process that execs another program: its stream ends there, well formed, each event once" {
	cd "$LUA_DIR"
	local st=0
	"$LMT" -o "$T/d/" -- luajit exec.lua > "$T/out" 2> "$T/err" || st=$?
	[ "$st" -eq 0 ]
	grep -q "exec2.lua done" "$T/out"
	[ "$(ls "$T/d" | grep -c '\.bin$')" -eq 1 ]
	f=$(ls "$T"/d/*.bin)
	[ "$(info_val "$f.info" end)" = exec ]
	report_of "$f"
	count_is ALLOCATIONS @exec.lua:14 "$f.txt" 500
	absent 'exec2\.lua' "$f.txt"
}
