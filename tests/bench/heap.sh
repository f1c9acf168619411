#!/usr/bin/env bash
# make bench, heap: what luamemtrace heap -p costs a process with a large
# Lua heap that keeps changing (tests/lua/heap_churn.lua: BENCH_HEAP_MB of
# 1 KiB strings in tables, one replaced every 16 rounds of a loop that
# allocates without end). Per run: how long the target was stopped (the
# longest stop, and all stops), how it was copied (soft-dirty bits or not),
# the whole command's time, the tracer's peak RSS against the heap's size
# (gc.total). Each mode BENCH_HEAP_REPS times: the default, and --stopped
# (the whole copy with the target stopped).
set -u
cd "$(dirname "$0")/../.." || exit 1
LMT=$PWD/luamemtrace
MB=${BENCH_HEAP_MB:-1024}
REPS=${BENCH_HEAP_REPS:-3}
TMP=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
CC=${CC:-cc}
$CC -O2 -std=gnu11 -o "$TMP/rusage" tests/bench/rusage.c || exit 1

echo "== heap snapshot of a ${MB} MiB Lua heap under load (tests/lua/heap_churn.lua)"
t0=$(date +%s.%N)
luajit tests/lua/heap_churn.lua 0 $((MB << 20)) "$TMP/ready" &
PID=$!
until grep -q ready "$TMP/ready" 2>/dev/null; do
	kill -0 "$PID" 2>/dev/null || { echo "heap bench: the workload ended"; exit 1; }
	sleep 0.2
done
echo "workload built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s, RSS $(awk '/^VmRSS:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$PID/status")"
printf '%-9s %9s %9s %6s %9s %10s %10s %9s  %s\n' mode pause-ms stops-ms stops total-s gc.total-MiB tracer-MiB ratio copied
for r in $(seq 1 "$REPS"); do
	for mode in default stopped; do
		flag=
		[ "$mode" = stopped ] && flag=--stopped
		"$TMP/rusage" "$LMT" heap $flag -p "$PID" > "$TMP/out" 2> "$TMP/err"
		read -r wall rss rc <<< "$(tail -1 "$TMP/err")"
		line=$(grep '^luamemtrace heap: PID' "$TMP/err")
		pause=$(sed -n 's/.*stopped \([0-9.]*\) ms.*/\1/p' <<< "$line")
		all=$(sed -n 's/.*stops, \([0-9.]*\) ms in all.*/\1/p' <<< "$line")
		stops=$(sed -n 's/.*(\([0-9]*\) stops,.*/\1/p' <<< "$line")
		how=$(sed -n 's/.*: copied \(while it ran\|stopped\).*/\1/p' <<< "$line")
		[ -n "$(grep -o 'pages written meanwhile' <<< "$line")" ] &&
			how="$how ($(sed -n 's/.*: \([0-9]* of [0-9]*\) pages.*/\1/p' <<< "$line") pages read again)"
		grep -q '^incomplete' "$TMP/out" && how="$how; incomplete (rc $rc): $(sed -n '/^incomplete/,/^$/p' "$TMP/out" | sed -n 2p | sed 's/^ *//')"
		total=$(awk '/^  gc.total/ { print $NF }' "$TMP/out")
		printf '%-9s %9s %9s %6s %9.1f %10.0f %10.0f %9.2f  %s\n' "$mode" "${pause:--}" "${all:-${pause:--}}" \
			"${stops:-1}" "$wall" "$(( ${total:-0} >> 20 ))" "$((rss / 1024))" \
			"$(awk -v a="$rss" -v b="${total:-0}" 'BEGIN { print b ? a * 1024 / b : 0 }')" "$how"
	done
done
