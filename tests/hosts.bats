#!/usr/bin/env bats
# Real hosts from Debian's packages, traced as they run under load, each by
# one luamemtrace covering all its processes (issue 19): nginx with
# OpenResty's Lua module (master and two workers, loaded with wrk, and the
# workers a reload forks), sysbench (a VM per thread), knot-resolver under
# dnsperf, and --all over two of them. Per-line counts exact (JIT off)
# against each host's own count of the handler's runs (tests/hosts.bash).

load helpers
load hosts

setup_file() {
	hosts_unpack
}

setup() {
	T="$BATS_TEST_TMPDIR"
	NGX_MASTER=
	KR_PID=
}

teardown() {
	local p
	[ -n "$NGX_MASTER" ] && kill -9 "$NGX_MASTER" $(pgrep -P "$NGX_MASTER") 2>/dev/null
	[ -n "$KR_PID" ] && kill -9 "$KR_PID" 2>/dev/null
	for p in $(jobs -p); do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# sb_lines D STREAMS...: the line-6 counts of sysbench's streams, sorted,
# and what they must be: the main VM none, each thread's VM 10 per event.
sb_lines() {
	local d=$1 f
	shift
	for f in "$@"; do line_of "$f" "@$d/alloc.lua:6"; done | sort -n | tr '\n' ' '
	echo
	{ echo 0; for f in "$d"/count.*; do echo $((10 * $(cat "$f"))); done; } |
		sort -n | tr '\n' ' '
	echo
}

@test "nginx + OpenResty's Lua module: master and 2 workers under wrk (-p), then a reload's new workers (followed), per-worker counts exact (jit off), nginx unharmed" {
	ngx_conf "$T"
	ngx_start "$T"
	local m=$NGX_MASTER w1 w2 w3 w4 w n f
	read -r w1 w2 <<< "$NGX_WORKERS"
	"$LMT" -p "$m,$w1,$w2" -o "$T/d/" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing 3 processes"
	ngx_load 2
	# A reload: the master makes a new VM and forks new workers.
	kill -HUP "$m"
	ngx_workers "$T" "$w1 $w2"
	read -r w3 w4 <<< "$NGX_WORKERS"
	wait_for "$T/err" "tracing PID $w3 (nginx), a child of PID $m"
	wait_for "$T/err" "tracing PID $w4 (nginx), a child of PID $m"
	ngx_load 2
	[ "$(curl -sf "http://127.0.0.1:$NGX_PORT/t")" = "ok 10" ]
	ngx_stop "$T"
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	no_probes_left
	for w in "$w1" "$w2" "$w3" "$w4"; do
		n=$(ngx_count "$T" "$w")
		[ "$n" -gt 0 ]
		local l1=0 l3=0
		for f in "$T"/d/nginx."$w".vm*.bin; do
			l1=$((l1 + $(line_of "$f" "@$T/handler.lua:1")))
			l3=$((l3 + $(line_of "$f" "@$T/handler.lua:3")))
			[ "$(info_val "$f.info" state)" = complete ]
		done
		echo "worker $w: $n requests, line 1: $l1, line 3: $l3"
		[ "$l1" -eq "$n" ]
		[ "$l3" -eq $((11 * n)) ]
	done
	# the master ran no handler
	for f in "$T"/d/nginx."$m".vm*.bin; do
		[ "$(line_of "$f" "@$T/handler.lua:3")" -eq 0 ]
	done
}

@test "nginx, --duty 20 over master and 2 workers (-p, -o DIR): a window across the three, each worker's sample exact per request but at its edges, its report estimates, nginx unharmed" {
	ngx_conf "$T"
	ngx_start "$T"
	local m=$NGX_MASTER w1 w2 w f l1 l3 n=0 st=0
	read -r w1 w2 <<< "$NGX_WORKERS"
	"$LMT" -v --duty 20 -d 5 -p "$m,$w1,$w2" -o "$T/d/" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing 3 processes"
	ngx_load 6
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	grep -q 'window 1 opened' "$T/err"
	grep -q '^  duty:    20% asked; windows recorded ' "$T/err"
	no_lost "$T/err"
	no_probes_left
	[ "$(curl -sf "http://127.0.0.1:$NGX_PORT/t")" = "ok 10" ]
	for w in "$w1" "$w2"; do
		for f in "$T"/d/nginx."$w".vm*.bin; do
			[ "$(info_val "$f.info" duty)" = 20 ]
			"$LMT" report "$f" 2> /dev/null | grep -q '^ESTIMATES: a --duty sample'
			# the sample itself: the stream without its sidecar
			cp "$f" "$T/raw.bin"
			l1=$(line_of "$T/raw.bin" "@$T/handler.lua:1")
			l3=$(line_of "$T/raw.bin" "@$T/handler.lua:3")
			echo "worker $w: line 1 $l1, line 3 $l3"
			n=$((n + l1))
			# 1 and 11 a request; a worker runs one at a time, so the
			# window's two edges cut one request each at most
			[ $((l3 - 11 * l1)) -le 22 ] && [ $((11 * l1 - l3)) -le 22 ]
		done
	done
	[ "$n" -gt 100 ]
	# the master ran no handler
	for f in "$T"/d/nginx."$m".vm*.bin; do
		cp "$f" "$T/raw.bin"
		[ "$(line_of "$T/raw.bin" "@$T/handler.lua:3")" -eq 0 ]
	done
	ngx_stop "$T"
}

@test "sysbench, 2 threads, from its start (-- COMMAND, -o DIR): a stream per VM of the one process, exact per-thread counts" {
	sb_script "$T"
	cd "$T"
	SB_COUNT_DIR=$T run "$LMT" -o "$T/d/" -- $(sb_cmd "$T" 20000)
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > "$T/err"
	no_lost "$T/err"
	grep -q "traced PID [0-9]*, 3 VMs" "$T/err"
	[ $(($(cat "$T/count.0") + $(cat "$T/count.1"))) -eq 20000 ]
	local lines
	lines=$(sb_lines "$T" "$T"/d/sysbench.*.vm*.bin)
	echo "$lines"
	[ "$(echo "$lines" | sed -n 1p)" = "$(echo "$lines" | sed -n 2p)" ]
	[ "$(ls "$T"/d/*.bin | wc -l)" -eq 3 ]
}

@test "knot-resolver under dnsperf, -p from outside its network namespace: exact per-query counts" {
	kr_conf "$T"
	kr_start "$T"
	"$LMT" -p "$KR_PID" -o "$T/d/" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing PID $KR_PID"
	kr_load "$T" 20000
	kr_stop "$T"
	KR_PID=
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	[ "$KR_COUNT" -eq 20000 ]
	# its count, and where the rest went when it is not exact (one
	# fresh-clone run of about ten had it otherwise, not seen again in
	# 12 runs, 6 of them under CPU load)
	local s n
	s=$(ls "$T"/d/kresd.*.vm0.bin)
	n=$(line_of "$s" "@$T/kresd.conf:12")
	echo "line 12: $n"
	[ "$n" -eq 200000 ] || { "$LMT" report "$s" | sed -n '/^ALLOCATIONS$/,/^$/p' | head -20; false; }
}

@test "--all --exe kresd,sysbench: a running knot-resolver and a sysbench started after the tracer, both exact; nothing else traced" {
	kr_conf "$T/k"
	kr_start "$T/k"
	"$LMT" --all --exe kresd,sysbench -o "$T/d/" 2> "$T/err" 3>&- &
	local tpid=$!
	wait_for "$T/err" "tracing 1 LuaJIT process"
	sb_script "$T/s"
	(cd "$T/s" && SB_COUNT_DIR=$T/s $(sb_cmd "$T/s" 20000) > /dev/null 3>&-)
	kr_load "$T/k" 10000
	kr_stop "$T/k"
	local kr=$KR_PID
	KR_PID=
	kill -INT "$tpid"
	local st=0
	wait "$tpid" || st=$?
	[ "$st" -eq 0 ]
	no_lost "$T/err"
	[ "$KR_COUNT" -eq 10000 ]
	[ "$(line_of "$T/d/kresd.$kr.vm0.bin" "@$T/k/kresd.conf:12")" -eq 100000 ]
	local lines
	lines=$(sb_lines "$T/s" "$T"/d/sysbench.*.vm*.bin)
	echo "$lines"
	[ "$(echo "$lines" | sed -n 1p)" = "$(echo "$lines" | sed -n 2p)" ]
	[ -z "$(ls "$T/d" | grep '\.bin$' | grep -v '^kresd\.\|^sysbench\.')" ]
}
