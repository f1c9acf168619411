#!/usr/bin/env bash
# The allocator workloads in a kernel guest (tests/kernels/run.sh -r
# bench, `make bench KERNELS=1`): luamemtrace against the floor paired in
# one process (--ab: runs alternate between the floor's do-nothing
# programs and tracing, tests/bench/timing.lua), which is all that
# travels from software emulation: a ratio in one run, never a time.
# What each kernel's fallbacks cost shows as its ratios beside 6.18's.
set -u
cd "$(dirname "$0")/../.." || exit 1
LMT=${LMT:-./luamemtrace}
PAIRS=${BENCH_PAIRS:-8}
declare -A N=([churn]=20000 [mixed]=2000)
"$LMT" --check 2>/dev/null | sed 's/^/# /'
printf '%-8s %-4s %-9s %s\n' workload jit mode "traced/floor (median of pairs; middle half)"
for w in churn mixed; do
	for j in on off; do
		for m in devnull stacks; do
			o=/dev/null st=
			[ "$m" = stacks ] && o=$(mktemp) && st=--stacks
			out=$($LMT -t 0 --ab $st -f -o "$o" -- luajit "tests/bench/$w.lua" \
				"${N[$w]}" "$j" "$PAIRS" 2> /tmp/bench.err)
			# runs 1, 3, ... the floor; 2, 4, ... traced; 1 and 2 warm up
			tail -1 <<< "$out" | awk '{for (c = 4; c <= NF; c += 2) {
				f = c < NF ? ($(c - 1) + $(c + 1)) / 2 : $(c - 1)
				if (f > 0) print $c / f }}' | sort -g |
				awk -v w="$w" -v j="$j" -v m="$m" '{a[NR] = $1}
				END { if (!NR) { printf "%-8s %-4s %-9s no pairs\n", w, j, m; exit }
				      printf "%-8s %-4s %-9s %.3f (%.3f-%.3f, %d pairs)\n", w, j, m,
					a[int((NR + 1) / 2)], a[int(NR / 4) + 1], a[int(3 * NR / 4) + (NR < 4)], NR }'
			grep -E '^ *lost: *[1-9]|--stacks: this kernel' /tmp/bench.err | sed 's/^/# /'
			[ "$m" = stacks ] && rm -f "$o" "$o.stacks" "$o.info"
		done
	done
done
