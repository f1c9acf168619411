#!/usr/bin/env bash
# make bench, attach: how long luamemtrace takes to find the VMs of a
# process (vm_scan reads its writable memory) and to start tracing it,
# against the size of its Lua heap. BENCH_ATTACH_SIZES: tables, in millions
# (about 120 MB each).
set -u
cd "$(dirname "$0")/../.." || exit 1
LMT=$PWD/luamemtrace
TMP=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
now() { date +%s.%N; }

echo "== attach time against heap size: luajit with N million tables, allocating (tests/bench/bigheap.lua)"
printf '%-10s %10s %10s %12s %12s\n' tables rss-MiB read-MiB find-VMs-ms to-tracing-ms
for m in ${BENCH_ATTACH_SIZES:-0 2 9 32}; do
	luajit tests/bench/bigheap.lua "${m}e6" > "$TMP/out" &
	PID=$!
	until grep -q ready "$TMP/out" 2>/dev/null; do sleep 0.1; done
	rss=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$PID/status")
	rm -f "$TMP/err" # not the last size's "tracing"
	t0=$(now)
	"$LMT" -v -p "$PID" -o /dev/null 2> "$TMP/err" &
	T=$!
	until grep -q "^luamemtrace: tracing" "$TMP/err" 2>/dev/null; do
		kill -0 "$T" 2>/dev/null || { cat "$TMP/err"; exit 1; }
		sleep 0.005
	done
	t1=$(now)
	kill -INT "$T"
	wait "$T"
	kill -9 "$PID"
	wait "$PID" 2>/dev/null
	PID=
	read -r found mib <<< "$(sed -n 's/.* found in \([0-9]*\) ms (\([0-9.]*\) MiB read).*/\1 \2/p' "$TMP/err" | head -1)"
	printf '%-10s %10s %10s %12s %12.0f\n' "${m}M" "$rss" "$mib" "$found" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) * 1000 }')"
done
