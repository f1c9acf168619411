#!/usr/bin/env bash
# make bench: what luamemtrace costs the traced process, against the same
# workload untraced and against the floor (the same probes running BPF
# programs that do nothing, sleepable like luamemtrace's: the cheapest kind).
# Allocation-bound LuaJIT workloads, JIT on and off, modes interleaved and
# repeated; medians. Then real hosts (tests/bench/hosts.sh), attach time
# against heap size (tests/bench/attach.sh), luamemtrace heap's pause on a
# ~1 GB heap under load (tests/bench/heap.sh), then the decoder's speed.
#
# Per workload and mode: us per allocator call (the workload's own loop CPU
# time, which includes the uprobe time spent in its context, divided by the
# allocator calls the tracer counted), ratios to untraced and to the floor
# (per repetition, then the median), events/s, lost events, BPF user-memory
# reads per event, consumer CPU per event. And the ratio to the floor paired
# in one process (luamemtrace --ab, tests/bench/timing.lua): runs of a tenth
# of the iterations alternate between the floor and tracing, which cancels
# the host noise that moves whole processes by 5-12% here; the median over
# all pairs. The summary at the end says what the runs show of the overhead
# issue's points (near the floor: the paired ratios; a lower floor; no loss).
set -u
cd "$(dirname "$0")/../.." || exit 1
LMT=./luamemtrace
REPS=${BENCH_REPS:-9}
# iterations per run, per workload (mixed makes ~25 allocator calls each)
declare -A ITERS=([churn]=${BENCH_N:-200000} [strings]=${BENCH_N:-200000} [mixed]=$(( ${BENCH_N:-200000} / 10 ))
	[deep]=$(( ${BENCH_N:-200000} / 10 )))
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (uprobes)" >&2; exit 1; }

# mode -> command prefix
declare -A PRE=(
	[untraced]=""
	[floor]="$LMT -q --floor -o /dev/null --"
	[floor-1ret]="$LMT -q --floor --probes=single -o /dev/null --"
	[devnull]="$LMT -t 0 -o /dev/null --"
	[file]="$LMT -t 0 -f -o $TMP/bench.bin --"
	[single-ret]="$LMT -t 0 --probes=single -o /dev/null --"
	[naive]="$LMT -t 0 --probes=entry -o /dev/null --"
)
MODES=(untraced floor floor-1ret devnull file single-ret naive)

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

run_one() { # workload jit mode -> appends "secs events lost reads cns" to $TMP/w.j.mode
	local w=$1 j=$2 m=$3 n=${ITERS[$1]} out err
	[ "$m" = naive ] && n=$((n / 20))
	out=$(${PRE[$m]} luajit "tests/bench/$w.lua" "$n" "$j" 2> "$TMP/err")
	err=$(cat "$TMP/err")
	local ev lost reads cns
	ev=$(sed -n 's/^  events:  \([0-9]*\) .*/\1/p' <<< "$err")
	lost=$(sed -n 's/^  lost:    \([0-9]*\) events.*/\1/p' <<< "$err")
	reads=$(sed -n 's/^  cost:    \([0-9.]*\) target memory.*/\1/p' <<< "$err")
	cns=$(sed -n 's/^  consumer: \([0-9]*\) ns.*/\1/p' <<< "$err")
	echo "$(tail -1 <<< "$out") ${ev:--} ${lost:--} ${reads:--} ${cns:--} $n" >> "$TMP/$w.$j.$m"
}

WORKLOADS=(churn strings mixed deep)
# Paired: the floor and luamemtrace (writing /dev/null or a file) alternate
# in one process (luamemtrace --ab, tests/bench/timing.lua), PAIRS pairs of
# runs of 1/10 of the iterations.
PAIRS=${BENCH_PAIRS:-16}
run_ab() { # workload jit mode -> appends one ratio per pair to $TMP/w.j.mode
	local w=$1 j=$2 n=$((${ITERS[$1]} / 10)) o=/dev/null out jm=line st=
	[ "$3" = file-ab ] && o=$TMP/bench.bin
	[ "$3" = jittrace-ab ] && jm=trace
	# --stacks writes its companion beside a file
	[ "$3" = stacks-ab ] && o=$TMP/bench.bin && st=--stacks
	out=$($LMT -t 0 --ab --jit=$jm $st -f -o "$o" -- luajit "tests/bench/$w.lua" "$n" "$j" "$PAIRS" 2> "$TMP/err")
	# runs 1, 3, ... are the floor, 2, 4, ... traced; 1 and 2 warm up.
	# Each traced run against the mean of the floor runs around it.
	tail -1 <<< "$out" | awk '{for (c = 4; c <= NF; c += 2) {
		f = c < NF ? ($(c - 1) + $(c + 1)) / 2 : $(c - 1)
		if (f > 0) print $c / f }}' >> "$TMP/$w.$j.$3"
	local lost
	lost=$(sed -n 's/^  lost:    \([0-9]*\) events.*/\1/p' "$TMP/err")
	echo "${lost:--}" >> "$TMP/$w.$j.$3.lost"
}
echo "luamemtrace bench: iterations per run: churn ${ITERS[churn]}, strings ${ITERS[strings]}, mixed ${ITERS[mixed]} (naive: 1/20), $REPS repetitions, medians"
for r in $(seq 1 "$REPS"); do
	for w in "${WORKLOADS[@]}"; do
		for j in off on; do
			# rotate the mode order so no mode always runs first
			for k in $(seq 0 $((${#MODES[@]} - 1))); do
				m=${MODES[$(((k + r) % ${#MODES[@]}))]}
				run_one "$w" "$j" "$m"
			done
			run_ab "$w" "$j" devnull-ab
			run_ab "$w" "$j" file-ab
			run_ab "$w" "$j" stacks-ab
			# JIT on: the in-VM granularity (--jit=trace), against which
			# the line attribution inside traces is measured
			[ "$j" = on ] && run_ab "$w" "$j" jittrace-ab
		done
	done
done

# Ratios are taken per repetition, between runs made minutes apart at most
# (a repetition runs every mode in turn), then their median: the machine's
# slow drifts cancel, not the noise that moves whole processes (+-0.03 and
# more here), which the paired ratio cancels. Per-call times of one
# workload: seconds per iteration.
ratio() { paste "$1" "$2" | awk -v n=$(awk 'END {print NF}' "$1") \
	'{a = $1 / $(n); b = $(n + 1) / $(2 * n); if (b > 0) print a / b}' | median; }
col() { awk -v c="$1" '{print $c}' "$2" | median; }
# paired FILE: median and middle half of the pair ratios in FILE
paired() { sort -g "$1" | awk '{a[NR] = $1} END {
	if (NR) printf "%.2f %.2f %.2f %d", a[int((NR + 1) / 2)], a[int(NR / 4) + 1], a[int(3 * NR / 4)], NR
	else print "nan nan nan 0" }'; }
for w in "${WORKLOADS[@]}"; do
	for j in off on; do
		echo
		echo "== $w, jit $j"
		# allocator calls per iteration, from the tracer's own count
		calls=$(awk '{print $2 / $6}' "$TMP/$w.$j.devnull" | median)
		printf '%-11s %9s %9s %8s %8s %10s %6s %8s %12s\n' mode us/call x-untraced x-floor paired events/s lost reads/ev consumer-ns
		for m in "${MODES[@]}"; do
			f="$TMP/$w.$j.$m"
			us=$(awk -v c="$calls" '{print $1 / ($6 * c) * 1e6}' "$f" | median)
			evs=$(awk '$2 != "-" {print $2 / $1}' "$f" | median)
			pr=-
			[ -s "$f-ab" ] && pr=$(paired "$f-ab" | cut -d' ' -f1)
			printf '%-11s %9.3f %9.1f %8.2f %8s %10s %6s %8s %12s\n' "$m" "$us" \
				"$(ratio "$f" "$TMP/$w.$j.untraced")" "$(ratio "$f" "$TMP/$w.$j.floor")" "$pr" \
				"$([ "$evs" = nan ] && echo - || printf '%.0f' "$evs")" \
				"$(col 3 "$f")" "$(col 4 "$f")" "$(col 5 "$f")"
		done
		for m in devnull file stacks jittrace; do
			[ -s "$TMP/$w.$j.$m-ab" ] || continue
			read -r med lo hi n <<< "$(paired "$TMP/$w.$j.$m-ab")"
			echo "paired in one process: $m ${med}x the floor (median of $n pairs of runs of $((${ITERS[$w]} / 10)) iterations; middle half $lo-$hi)"
			# JIT on, the floor rule holds at the in-VM granularity;
			# lines inside traces have a budget of their own (below)
			if [ "$m" != stacks ] && { [ "$j" = off ] || [ "$m" = jittrace ]; }; then
				echo "$med $w/jit-$j/$m" >> "$TMP/verdict.paired"
			fi
		done
		if [ "$j" = on ]; then
			a=$(paired "$TMP/$w.$j.devnull-ab" | cut -d' ' -f1)
			b=$(paired "$TMP/$w.$j.jittrace-ab" | cut -d' ' -f1)
			echo "$a $b $w" | awk '{printf "%.1f %s\n", ($1 / $2 - 1) * 100, $3}' >> "$TMP/verdict.lines"
			echo "lines inside traces: $(tail -1 "$TMP/verdict.lines" | cut -d' ' -f1)% more per allocator call than --jit=trace (paired medians)"
		fi
		a=$(paired "$TMP/$w.$j.file-ab" | cut -d' ' -f1)
		b=$(paired "$TMP/$w.$j.stacks-ab" | cut -d' ' -f1)
		echo "$a $b $w/jit-$j" | awk '{printf "%.1f %s\n", ($2 / $1 - 1) * 100, $3}' >> "$TMP/verdict.stacks"
		echo "stacks (--stacks): $(tail -1 "$TMP/verdict.stacks" | cut -d' ' -f1)% more per allocator call than without (paired medians, both writing a file)"
		r1=$(ratio "$TMP/$w.$j.floor" "$TMP/$w.$j.floor-1ret")
		fewer=$(awk -v r="$r1" 'BEGIN {printf "%.1f", (1 - r) * 100}')
		echo "floor without a return probe for frees: $fewer% fewer ns per call than with one return probe per call"
		[ "$w" = churn ] && echo "$fewer jit-$j" >> "$TMP/verdict.fewer"
	done
done

# The issue's points, as these runs measured them.
echo
echo "== summary"
worst=$(sort -g "$TMP/verdict.paired" | tail -1)
awk -v w="$worst" 'BEGIN { split(w, a, " ")
	printf "near the floor: worst paired ratio %.2fx (%s; JIT on at --jit=trace); at most 1.25x: %s\n", a[1], a[2], (a[1] <= 1.25 ? "holds" : "DOES NOT HOLD") }'
awk '{ s = s sep $1 "% (" $2 ")"; sep = ", "; if ($1 > m || NR == 1) m = $1 }
	END { printf "lines inside traces (JIT on) cost %s more than --jit=trace; at most 10%%: %s\n", s, (m <= 10 ? "holds" : "DOES NOT HOLD") }' "$TMP/verdict.lines"
awk '{ s = s sep $1 "% (" $2 ")"; sep = ", "; if ($1 < m || NR == 1) m = $1 }
	END { printf "a lower floor, table churn: %s fewer ns per call without a return probe for frees; at least 15%%: %s\n", s, (m >= 15 ? "holds" : "DOES NOT HOLD") }' "$TMP/verdict.fewer"
awk '{ s = s sep $1 "% (" $2 ")"; sep = ", "; if ($1 > m || NR == 1) m = $1 }
	END { printf "stacks cost %s more per allocator call; under 15%% (then on by default): %s\n", s, (m < 15 ? "holds" : "does not hold: opt-in") }' "$TMP/verdict.stacks"
lost=$(cat "$TMP"/*.devnull "$TMP"/*.file | awk '{s += ($3 == "-" ? 0 : $3)} END {print s + 0}')
lost_ab=$(cat "$TMP"/*-ab.lost | awk '{s += ($1 == "-" ? 0 : $1)} END {print s + 0}')
runs=$(cat "$TMP"/*.devnull "$TMP"/*.file "$TMP"/*-ab.lost | wc -l)
echo "lossless: $((lost + lost_ab)) events lost in $runs traced runs (default settings); $([ $((lost + lost_ab)) -eq 0 ] && echo holds || echo "DOES NOT HOLD")"

echo
bash tests/bench/hosts.sh

echo
bash tests/bench/attach.sh

echo
bash tests/bench/heap.sh

echo
[ -x tests/bench/decode.sh ] && bash tests/bench/decode.sh
