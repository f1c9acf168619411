#!/usr/bin/env bash
# make bench, real hosts: what tracing costs nginx with OpenResty's Lua
# module (master and two workers, JIT on as in production, loaded with wrk
# on the same two cores) and sysbench (two threads, a VM each, JIT on),
# untraced, under the floor (the same probes with programs that do
# nothing: the allocator's entry, and an allocation's return), under the
# entry's probes alone (--floor=entry: no address can be had so; the
# lowest a tracer's probes can go), the event path alone (--floor=events:
# every event sent, none attributed, no read of the target) and traced,
# every host process covered by one luamemtrace (-o DIR). Modes interleave, their order
# rotating, REPS rounds; ratios per round, then medians. Installs nothing:
# `make deps` did (tests/hosts.bash unpacks nginx's private LuaJIT once).
set -u
cd "$(dirname "$0")/../.." || exit 1
LMT=$PWD/luamemtrace
REPS=${BENCH_HOST_REPS:-5}
SECS=${BENCH_HOST_SECS:-3}
# nginx's rate moves more between rounds (single floor/traced pairs of 4 s
# ranged 1.10-1.26 around a median of 1.11): more, longer rounds
NREPS=${BENCH_NGX_REPS:-7}
NSECS=${BENCH_NGX_SECS:-5}
TMP=$(mktemp -d)
BATS_TEST_DIRNAME=$PWD/tests
# shellcheck source=../helpers.bash
. tests/helpers.bash
# shellcheck source=../hosts.bash
. tests/hosts.bash
cleanup() {
	[ -n "${NGX_MASTER:-}" ] && kill -9 "$NGX_MASTER" $(pgrep -P "$NGX_MASTER") 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

for c in nginx wrk sysbench; do
	command -v "$c" > /dev/null || { echo "bench hosts: $c missing (make deps)"; exit 1; }
done
hosts_unpack || { echo "bench hosts: cannot unpack nginx's Lua module"; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

# tracer MODE PIDS: starts luamemtrace over PIDS (untraced: nothing);
# TPID is its PID. Waits until it traces.
tracer() {
	TPID=
	case $1 in
	untraced) return 0 ;;
	floor) "$LMT" --floor -p "$2" -o "$TMP/f$RANDOM/" 2> "$TMP/terr" & ;;
	entry) "$LMT" --floor=entry -p "$2" -o "$TMP/f$RANDOM/" 2> "$TMP/terr" & ;;
	events) rm -rf "$TMP/e"; "$LMT" -t 0 --floor=events -p "$2" -o "$TMP/e/" 2> "$TMP/terr" & ;;
	traced) rm -rf "$TMP/d"; "$LMT" -t 0 -p "$2" -o "$TMP/d/" 2> "$TMP/terr" & ;;
	duty) rm -rf "$TMP/du"; "$LMT" -t 0 --duty 5 -p "$2" -o "$TMP/du/" 2> "$TMP/terr" & ;;
	esac
	TPID=$!
	wait_for "$TMP/terr" "tracing " && return 0
	cat "$TMP/terr" >&2
	return 1
}

# untracer: stops the tracer (not in a subshell: it waits for it); UT is
# its lost events and consumer ns per event.
untracer() {
	UT="- -"
	[ -z "$TPID" ] && return
	kill -INT "$TPID"
	wait "$TPID"
	UT="$(sed -n 's/^  lost:    \([0-9]*\) events.*/\1/p' "$TMP/terr" | head -1) $(sed -n 's/^  consumer: \([0-9]*\) ns.*/\1/p' "$TMP/terr")"
}

MODES=(untraced floor entry events traced)

# -- nginx --------------------------------------------------------------------
NGX_JIT_OFF='' ngx_conf "$TMP/ngx"
# each request's time, for the paired windows below
sed -i "s/log_format cnt .*/log_format cnt '\$msec';/" "$TMP/ngx/nginx.conf"
ngx_start "$TMP/ngx" || { echo "bench hosts: nginx did not start"; exit 1; }
read -r W1 W2 <<< "$NGX_WORKERS"
PIDS="$NGX_MASTER,$W1,$W2"
wrk -t2 -c32 -d1s "http://127.0.0.1:$NGX_PORT/t" > /dev/null # warm up
echo "luamemtrace bench, real hosts: modes interleaved, medians"
echo
echo "== nginx + OpenResty's Lua module, master + 2 workers, JIT on, wrk -t2 -c32 -d${NSECS}s (same 2 cores), $NREPS rounds"
for r in $(seq 1 "$NREPS"); do
	for k in $(seq 0 $((${#MODES[@]} - 1))); do
		m=${MODES[$(((k + r) % ${#MODES[@]}))]}
		tracer "$m" "$PIDS" || exit 1
		rps=$(wrk -t2 -c32 -d"${NSECS}s" "http://127.0.0.1:$NGX_PORT/t" | awk '/^Requests\/sec:/ {print $2}')
		untracer
		echo "$rps $UT" >> "$TMP/ngx.$m"
	done
done

# ratio A B: per round A's rate over B's, median
rounds() { paste "$1" "$2" | awk -v n="$(awk 'END {print NF}' "$1")" '{ if ($(n + 1) > 0) print $1 / $(n + 1) }'; }
ratio() { rounds "$1" "$2" | median; }
# spread A B: the least and the largest of the rounds' ratios (the noise)
spread() { rounds "$1" "$2" | sort -g | awk 'NR == 1 {a = $1} {b = $1} END {if (NR) printf "%.3f-%.3f", a, b}'; }
report() { # name unit
	printf '%-9s %12s %10s %10s %6s %12s\n' mode "$2" x-untraced x-traced lost consumer-ns
	for m in "${MODES[@]}"; do
		printf '%-9s %12.0f %10.2f %10.2f %6s %12s\n' "$m" \
			"$(awk '{print $1}' "$TMP/$1.$m" | median)" \
			"$(ratio "$TMP/$1.untraced" "$TMP/$1.$m")" "$(ratio "$TMP/$1.$m" "$TMP/$1.traced")" \
			"$(awk '{print $2}' "$TMP/$1.$m" | median)" "$(awk '{print $3}' "$TMP/$1.$m" | median)"
	done
	echo "$1: untraced/traced $(ratio "$TMP/$1.untraced" "$TMP/$1.traced")x, floor/traced $(ratio "$TMP/$1.floor" "$TMP/$1.traced")x (rounds $(spread "$TMP/$1.floor" "$TMP/$1.traced")), untraced/floor $(ratio "$TMP/$1.untraced" "$TMP/$1.floor")x"
	echo "$1: entry/traced $(ratio "$TMP/$1.entry" "$TMP/$1.traced")x (rounds $(spread "$TMP/$1.entry" "$TMP/$1.traced")): against the allocator's entry probes alone, no return probed at all; floor/entry $(ratio "$TMP/$1.floor" "$TMP/$1.entry")x: what the returns cost the floor"
	echo "$1: floor/events $(ratio "$TMP/$1.floor" "$TMP/$1.events")x (rounds $(spread "$TMP/$1.floor" "$TMP/$1.events")): the event path alone (every return probed, as the floor's); events/traced $(ratio "$TMP/$1.events" "$TMP/$1.traced")x: attribution (its reads of the target), less the returns that addresses told at entry save"
}
report ngx req/s

# -- nginx: the floor and tracing in paired windows -----------------------------
# The rounds above pair modes seconds apart, and over seconds the host's
# own rate moves by more than tracing costs (their rounds' spread). One
# tracer switches its programs between tracing and the floor (they return
# at once) every ABMS ms (--ab=MS); the access log's times give each
# window's requests, and each two adjacent windows pair (pairs.awk).
ABMS=${BENCH_AB_MS:-500}
ABSECS=${BENCH_AB_SECS:-30}
# ab_line NAME UNIT: point 1's figure, from $TMP/NAME.ab (pairs.awk)
ab_line() {
	local m q
	m=$(awk '$1 == "pair" {print $2}' "$TMP/$1.ab" | median)
	q=$(awk '$1 == "pair" {print $2}' "$TMP/$1.ab" | sort -g |
		awk '{a[NR] = $1} END {if (NR) printf "%.3f-%.3f", a[int((NR + 3) / 4)], a[int((3 * NR + 3) / 4)]}')
	echo "$1: floor/traced ${m}x in paired ${ABMS} ms windows (--ab=$ABMS: $(grep -c '^pair' "$TMP/$1.ab") pairs, middle half $q);" \
		"windows' medians: floor $(awk '$2 == "floor" {print $3}' "$TMP/$1.ab" | median | xargs printf '%.0f'), traced $(awk '$2 == "traced" {print $3}' "$TMP/$1.ab" | median | xargs printf '%.0f') $2"
}
# ab_flips: the switches the tracer said on $TMP/terr, for pairs.awk
ab_flips() { sed -n 's/.*--ab: \([a-z,-]*\) from \([0-9.]*\)$/\1 \2/p' "$TMP/terr"; }
# part_line NAME PARTS: what tracing without PARTS saves, from $TMP/NAME.ab
# (--ab-without: the floor's windows trace without them)
part_line() {
	echo "$1: without $2/traced $(awk '$1 == "pair" {print $2}' "$TMP/$1.ab" | median)x" \
		"in paired ${ABMS} ms windows ($(grep -c '^pair' "$TMP/$1.ab") pairs): what $2 costs"
}
# ngx_ab NAME [ARGS]: nginx under one tracer with --ab=ABMS and ARGS, into
# $TMP/NAME.ab
ngx_ab() {
	rm -rf "$TMP/ab"
	"$LMT" -t 0 --ab="$ABMS" "${@:2}" -p "$PIDS" -o "$TMP/ab/" 2> "$TMP/terr" &
	TPID=$!
	wait_for "$TMP/terr" "tracing " || { cat "$TMP/terr" >&2; exit 1; }
	: > "$TMP/ngx/logs/t.log"
	wrk -t2 -c32 -d"${ABSECS}s" "http://127.0.0.1:$NGX_PORT/t" > /dev/null
	kill -INT "$TPID"
	wait "$TPID" || true # --ab-without ring: batches dropped, counted lost
	ab_flips > "$TMP/$1.flips"
	sort -g "$TMP/ngx/logs/t.log" | awk 'NR % 50 == 0 {print $1, NR}' > "$TMP/$1.reqs"
	awk -v guard=0.1 -f tests/bench/pairs.awk "$TMP/$1.flips" "$TMP/$1.reqs" > "$TMP/$1.ab"
}
ngx_ab ngx
ab_line ngx req/s
# where traced's excess goes: the parts, each in windows of its own run
for part in search attribution ring told; do
	ngx_ab "ngx-$part" --ab-without "$part"
	part_line "ngx-$part" "$part"
done

# -- nginx, --duty 5 ----------------------------------------------------------
# A handler with sites of several weights (a request's own strings, so
# that they are made anew each time). Untraced and --duty interleaved, in
# runs long enough for a window or two (0.5 s at a random place in the
# first 10 s, then longer periods: docs/usage.md); then the shares of bytes of
# the five largest sites under --duty against a full trace's.
ngx_stop "$TMP/ngx" && NGX_MASTER=
# Rounds of two whole periods (two windows each: docs/usage.md), paired: the
# host's own rate drifts by more than --duty costs over minutes (three
# rounds of 30 s once read 82% where six paired 10 s rounds right after
# read 92-101%).
DSECS=${BENCH_DUTY_SECS:-20}
DREPS=${BENCH_DUTY_REPS:-5}
NGX_HANDLER='local id = ngx.var.request_id
local rows = {}
for i = 1, 8 do rows[i] = { i, id } end
local head = string.format("%s:%d", id, #rows)
local parts = {}
for i = 1, 5 do parts[i] = "<li>" .. id .. i .. "</li>" end
ngx.say(head, table.concat(parts))' NGX_JIT_OFF='' ngx_conf "$TMP/ngx2"
ngx_start "$TMP/ngx2" || { echo "bench hosts: nginx did not start"; exit 1; }
read -r W1 W2 <<< "$NGX_WORKERS"
PIDS="$NGX_MASTER,$W1,$W2"
wrk -t2 -c32 -d1s "http://127.0.0.1:$NGX_PORT/t" > /dev/null
echo
echo "== nginx, a handler of 7 lines, --duty 5 against untraced, wrk -t2 -c32 -d${DSECS}s, $DREPS rounds"
MODES=(untraced duty)
for r in $(seq 1 "$DREPS"); do
	for k in 0 1; do
		m=${MODES[$(((k + r) % 2))]}
		tracer "$m" "$PIDS" || exit 1
		rps=$(wrk -t2 -c32 -d"${DSECS}s" "http://127.0.0.1:$NGX_PORT/t" | awk '/^Requests\/sec:/ {print $2}')
		untracer
		[ "$m" = duty ] && grep '^  duty: ' "$TMP/terr" | tail -1 >> "$TMP/duty.windows"
		echo "$rps $UT" >> "$TMP/ngxd.$m"
	done
done
# the reference: a full trace of the same load
tracer traced "$PIDS" || exit 1
wrk -t2 -c32 -d5s "http://127.0.0.1:$NGX_PORT/t" > /dev/null
untracer
ngx_stop "$TMP/ngx2" && NGX_MASTER=
for m in untraced duty; do
	printf '%-9s %12.0f req/s\n' "$m" "$(awk '{print $1}' "$TMP/ngxd.$m" | median)"
done
sed 's/^ */  last: /' "$TMP/duty.windows" | tail -1
u_d=$(ratio "$TMP/ngxd.untraced" "$TMP/ngxd.duty")
echo "ngx --duty 5: untraced/duty ${u_d}x (rounds $(spread "$TMP/ngxd.untraced" "$TMP/ngxd.duty")): keeps $(awk -v r="$u_d" 'BEGIN { printf "%.1f", 100 / r }')% of the untraced rate (goal: at least 90%)"
# shares DIR: sites by their share of bytes, over every stream of DIR
shares() {
	"$LMT" report --folded --weight=bytes "$1" 2> /dev/null |
		awk '{ w = $NF; sub(/ [0-9]+$/, ""); sub(/^[^;]*;/, ""); s[$0] += w; t += w }
		     END { for (k in s) printf "%s\t%.2f\n", k, 100 * s[k] / t }' | sort -t"$(printf '\t')" -k2,2gr
}
shares "$TMP/d" | head -5 > "$TMP/sh.full"
shares "$TMP/du" > "$TMP/sh.duty"
printf '%-60s %8s %8s %6s\n' "site (top 5 of the full trace)" full duty diff
awk -F'\t' 'NR == FNR { d[$1] = $2; next } { x = ($1 in d) ? d[$1] : 0; printf "%-60s %7.2f%% %7.2f%% %6.2f\n", substr($1, length($1) > 60 ? length($1) - 59 : 1), $2, x, x - $2
	m = (x - $2 > m) ? x - $2 : (($2 - x > m) ? $2 - x : m) } END { printf "ngx --duty 5: the five largest sites'"'"' shares within %.2f percentage points of a full trace'"'"'s (goal: 3)\n", m }' \
	"$TMP/sh.duty" "$TMP/sh.full"

# -- sysbench -----------------------------------------------------------------
echo
echo "== sysbench, 2 threads (a VM each, and the main VM), JIT on, event(): 10 tables kept a while, --time=${SECS}, $REPS rounds"
SB_JIT=on sb_script "$TMP/sb"
# left-out: untraced while `luamemtrace --all --exe` traces other programs
# (what a process a filter leaves out pays); one-file: traced into one
# stream (-o FILE), the VMs' batches merged in the process's order
MODES=(untraced floor entry events traced left-out one-file)
for r in $(seq 1 "$REPS"); do
	for k in $(seq 0 $((${#MODES[@]} - 1))); do
		m=${MODES[$(((k + r) % ${#MODES[@]}))]}
		TPID=
		case $m in
		untraced) pre=() ;;
		left-out)
			pre=()
			"$LMT" --all --exe lmt-nothing -o "$TMP/l$RANDOM/" 2> "$TMP/lerr" &
			TPID=$!
			wait_for "$TMP/lerr" "tracing " ;;
		floor) pre=("$LMT" --floor -o "$TMP/f$RANDOM/" --) ;;
		entry) pre=("$LMT" --floor=entry -o "$TMP/f$RANDOM/" --) ;;
		events) rm -rf "$TMP/e"; pre=("$LMT" -t 0 --floor=events -o "$TMP/e/" --) ;;
		traced) rm -rf "$TMP/d"; pre=("$LMT" -t 0 -o "$TMP/d/" --) ;;
		one-file) pre=("$LMT" -t 0 -f -o "$TMP/one.bin" --) ;;
		esac
		eps=$(SB_COUNT_DIR=$TMP/sb "${pre[@]}" sysbench "$TMP/sb/alloc.lua" --threads=2 \
			--time="$SECS" run 2> "$TMP/terr" |
			awk '/total number of events:/ {e = $5} /total time:/ {t = $3 + 0} END {if (t > 0) printf "%.0f", e / t}')
		if [ -n "$TPID" ]; then
			kill -INT "$TPID"
			wait "$TPID"
			: > "$TMP/terr"
		fi
		echo "$eps $(sed -n 's/^  lost:    \([0-9]*\) events.*/\1/p' "$TMP/terr" | head -1) $(sed -n 's/^  consumer: \([0-9]*\) ns.*/\1/p' "$TMP/terr")" >> "$TMP/sb.$m"
	done
done
sed -i 's/ *$//; s/^\([0-9.]*\)$/\1 - -/' "$TMP/sb.untraced" "$TMP/sb.left-out"
report sb events/s

# -- sysbench: the floor and tracing in paired windows --------------------------
# As nginx's above; each thread stamps its count of events with the wall
# clock every 200 events.
mkdir -p "$TMP/sbab"
cat > "$TMP/sbab/alloc.lua" <<'LUA'
local ffi = require("ffi")
ffi.cdef[[ typedef struct { long s, ns; } lmt_ts; int clock_gettime(int, lmt_ts *); ]]
local ts = ffi.new("lmt_ts")
local n = 0
local keep = {} for i = 1, 1000 do keep[i] = false end
local st, sn = {}, {}
function event()
  for i = 1, 10 do keep[(n * 10 + i) % 1000 + 1] = {} end
  n = n + 1
  if n % 200 == 0 then
    ffi.C.clock_gettime(0, ts) -- CLOCK_REALTIME, as the tracer's switches
    st[#st + 1] = tonumber(ts.s) + tonumber(ts.ns) * 1e-9
    sn[#sn + 1] = n
  end
end
function thread_done(tid)
  local f = assert(io.open(os.getenv("SB_COUNT_DIR") .. "/stamps." .. tid, "w"))
  for i = 1, #st do f:write(string.format("%.6f %d\n", st[i], sn[i])) end
  f:close()
end
LUA
# sb_ab NAME [ARGS]: sysbench under --ab=ABMS and ARGS, into $TMP/NAME.ab
sb_ab() {
	rm -rf "$TMP/sab" "$TMP"/sbab/stamps.*
	SB_COUNT_DIR=$TMP/sbab "$LMT" -t 0 --ab="$ABMS" "${@:2}" -o "$TMP/sab/" -- \
		sysbench "$TMP/sbab/alloc.lua" --threads=2 --time="$ABSECS" run \
		> /dev/null 2> "$TMP/terr" || true # --ab-without ring: counted lost
	ab_flips > "$TMP/$1.flips"
	awk -v guard=0.1 -f tests/bench/pairs.awk "$TMP/$1.flips" "$TMP"/sbab/stamps.* > "$TMP/$1.ab"
}
sb_ab sb
ab_line sb events/s
for part in search attribution ring told; do
	sb_ab "sb-$part" --ab-without "$part"
	part_line "sb-$part" "$part"
done
echo "a process --all --exe leaves out: untraced/left-out $(ratio "$TMP/sb.untraced" "$TMP/sb.left-out")x"
echo "sb, one stream for its VMs (-o FILE): floor/one-file $(ratio "$TMP/sb.floor" "$TMP/sb.one-file")x, traced/one-file $(ratio "$TMP/sb.traced" "$TMP/sb.one-file")x"

# -- sysbench, --duty 5 -------------------------------------------------------
echo
echo "== sysbench, --duty 5 against untraced, --time=${DSECS}, $DREPS rounds"
MODES=(untraced duty)
for r in $(seq 1 "$DREPS"); do
	for k in 0 1; do
		m=${MODES[$(((k + r) % 2))]}
		case $m in
		untraced) pre=() ;;
		duty) rm -rf "$TMP/sdu"; pre=("$LMT" -t 0 --duty 5 -o "$TMP/sdu/" --) ;;
		esac
		eps=$(SB_COUNT_DIR=$TMP/sb "${pre[@]}" sysbench "$TMP/sb/alloc.lua" --threads=2 \
			--time="$DSECS" run 2> "$TMP/terr" |
			awk '/total number of events:/ {e = $5} /total time:/ {t = $3 + 0} END {if (t > 0) printf "%.0f", e / t}')
		echo "$eps" >> "$TMP/sbd.$m"
	done
done
for m in untraced duty; do
	printf '%-9s %12.0f events/s\n' "$m" "$(median < "$TMP/sbd.$m")"
done
u_d=$(ratio "$TMP/sbd.untraced" "$TMP/sbd.duty")
echo "sb --duty 5: untraced/duty ${u_d}x (rounds $(spread "$TMP/sbd.untraced" "$TMP/sbd.duty")): keeps $(awk -v r="$u_d" 'BEGIN { printf "%.1f", 100 / r }')% of the untraced rate"
