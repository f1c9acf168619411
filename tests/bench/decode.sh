#!/usr/bin/env bash
# Decode speed of `luamemtrace report` on a synthetic stream.
#
#   tests/bench/decode.sh                      (from the repo top, after make)
#   LMT_BENCH_EVENTS=4000000                   events to generate (default 4M)
#   LMT_STD_PARSER="luajit /path/run-memprof.lua"
#                                              reference parser, for the speed ratio
#
# tarantool/luajit's tools/memprof.lua returns a function, so the reference
# parser needs a two-line wrapper (run-memprof.lua) next to its tools/ dir:
#   package.path = "/path/tools/?.lua;" .. package.path
#   require("memprof")(arg)
# The reports of both are also compared (ties as sets).
#
# Prints events/s (median of 3 runs) and peak RSS, and with LMT_STD_PARSER the ratio to the
# reference parser (goal: >= 20x). Generation takes ~1 s, our decode well
# under 1 s; the reference parser ~3 s per million events.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
events=${LMT_BENCH_EVENTS:-4000000}
CC=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x ./luamemtrace ] || { echo "decode.sh: build ./luamemtrace first (make)" >&2; exit 1; }
$CC -O2 -std=gnu11 -Iuser -o "$work/gen" tests/bench/gen_memprof.c user/format/memprof_write.c
$CC -O2 -std=gnu11 -o "$work/rusage" tests/bench/rusage.c

"$work/gen" -n "$events" -s 1 "$work/prof.bin"
sync # no writeback of the fresh stream competing with the runs
bytes=$(stat -c %s "$work/prof.bin")

# measure OUT CMD...: sets wall (s) and rss (KiB); the command's stdout goes to OUT.
measure() {
	local out=$1; shift
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %M %x' -o "$work/t" "$@" > "$out" 2> "$work/err" || true
	else
		"$work/rusage" "$@" > "$out" 2> "$work/t" || true
	fi
	read -r wall rss rc < <(tail -1 "$work/t")
	if grep -q 'terminated by signal' "$work/t"; then rc=signal; fi
	if [ "$rc" != 0 ]; then
		echo "decode.sh: '$*' exited $rc" >&2
		cat "$work/err" >&2 2>/dev/null || true
		exit 1
	fi
}

rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.0f", (t > 0 ? n / t : 0) }'; }

# Ours: the median of three runs (a run is well under a second).
runs=()
for _ in 1 2 3; do
	measure "$work/ours.txt" ./luamemtrace report "$work/prof.bin"
	runs+=("$wall $rss")
done
read -r ours rss < <(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
printf 'stream: %d events, %d bytes\n' "$events" "$bytes"
printf 'luamemtrace report: %.2f s, %s events/s, peak RSS %d KiB\n' "$ours" "$(rate "$events" "$ours")" "$rss"

if [ -n "${LMT_STD_PARSER:-}" ]; then
	# shellcheck disable=SC2086 # the variable is a command line
	measure "$work/std.txt" $LMT_STD_PARSER "$work/prof.bin"
	printf 'reference parser: %.2f s, %s events/s, peak RSS %d KiB\n' "$wall" "$(rate "$events" "$wall")" "$rss"
	ratio=$(awk -v a="$wall" -v b="$ours" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
	goal=$(awk -v r="$ratio" 'BEGIN { print ((r + 0 >= 20) ? "met" : "NOT met") }')
	printf 'speed ratio: %sx (goal >= 20x: %s)\n' "$ratio" "$goal"
	if ! diff -q <(tests/canon-report.sh "$work/std.txt") <(tests/canon-report.sh "$work/ours.txt") > /dev/null; then
		echo "decode.sh: reports differ from the reference parser" >&2
		exit 1
	fi
	echo "reports: identical to the reference (ties compared as sets)"
else
	echo "reference parser: not run (set LMT_STD_PARSER to compare)"
fi
