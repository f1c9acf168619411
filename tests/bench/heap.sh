#!/usr/bin/env bash
# make bench, heap: what luamemtrace heap -p costs a process with a large
# Lua heap that keeps changing (tests/lua/heap_churn.lua: BENCH_HEAP_MB of
# 1 KiB strings in tables, one replaced every 16 rounds of a loop that
# allocates without end). Per run: how long the target was stopped (the
# longest stop, and all stops), how it was copied (soft-dirty bits or not),
# the whole command's time, the tracer's peak RSS against the heap's size
# (gc.total). Each mode BENCH_HEAP_REPS times: the default (a
# copy-on-write fork where one may be made), nofork (--no-fork: soft-dirty
# bits where the kernel keeps them) and stopped (--stopped: the whole copy
# with the target stopped); BENCH_HEAP_MODES picks them.
# In a Debian kernel's guest (make bench-heap-guest): build/rusage, as the
# guest has no compiler.
set -u
cd "$(dirname "$0")/../.." || exit 1
LMT=${LMT:-$PWD/luamemtrace}
MB=${BENCH_HEAP_MB:-1024}
REPS=${BENCH_HEAP_REPS:-3}
MODES=${BENCH_HEAP_MODES:-default nofork stopped}
# microseconds the workload sleeps every 1000 rounds (0: never)
PACE=${BENCH_HEAP_PACE:-0}
TMP=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
RUSAGE=$TMP/rusage
if [ -x build/rusage ]; then
	RUSAGE=$PWD/build/rusage
else
	${CC:-cc} -O2 -std=gnu11 -o "$RUSAGE" tests/bench/rusage.c || exit 1
fi

echo "== heap snapshot of a ${MB} MiB Lua heap under load (tests/lua/heap_churn.lua, pace ${PACE} us a 1000 rounds), kernel $(uname -r), $(nproc) CPUs"
t0=$(date +%s.%N)
luajit tests/lua/heap_churn.lua 0 $((MB << 20)) "$TMP/ready" "$PACE" &
PID=$!
until grep -q ready "$TMP/ready" 2>/dev/null; do
	kill -0 "$PID" 2>/dev/null || { echo "heap bench: the workload ended"; exit 1; }
	sleep 0.2
done
echo "workload built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s, RSS $(awk '/^VmRSS:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$PID/status")"
# pause: the longest stop; final: the copy's stop (a fork's: the fork);
# tgt+MiB: the target's RSS at its peak while copied, less before (a
# fork's copy-on-write: the pages it wrote while the child lived); passes: the passes made
# (soft-dirty bits) and the pages they read again while it ran; re-read:
# the pages the final stop read again of those kept, in how many reads.
printf '%-8s %8s %8s %6s %8s %16s %6s %7s %8s %8s %6s %8s  %s\n' mode pause-ms final-ms passes pass-pg \
	re-read reads total-s heap-MiB rss-MiB ratio tgt+MiB path
for r in $(seq 1 "$REPS"); do
	for mode in $MODES; do
		flag=
		[ "$mode" = stopped ] && flag=--stopped
		[ "$mode" = nofork ] && flag=--no-fork
		# the target's RSS before, and its peak while copied (a fork's
		# copy-on-write costs it the pages it writes meanwhile)
		rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status")
		( peak=$rss0
		  while [ ! -e "$TMP/done" ]; do
			r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status")
			[ "${r:-0}" -gt "$peak" ] && peak=$r
			sleep 0.05
		  done
		  echo "$peak" > "$TMP/peak" ) &
		rm -f "$TMP/done"
		"$RUSAGE" "$LMT" heap $flag -p "$PID" > "$TMP/out" 2> "$TMP/err"
		touch "$TMP/done"
		wait $!
		grow=$(( ($(cat "$TMP/peak") - rss0) / 1024 ))
		read -r wall rss rc <<< "$(tail -1 "$TMP/err")"
		line=$(grep '^luamemtrace heap: PID' "$TMP/err" | grep -v 'not forked' | tail -1)
		f() { sed -n "s/.*$1.*/\\1/p" <<< "$line"; }
		if grep -q 'to fork a copy-on-write copy' <<< "$line"; then
			path="fork: $(f 'read \([0-9.]*\) MB of the copy') MB of the copy read in $(f 'of the copy in \([0-9]*\) ms') ms, reaped in a $(f 'then stopped \([0-9.]*\) ms to reap') ms stop"
			final=$(f 'stopped \([0-9.]*\) ms to fork')
			pause=$(f 'longest stop \([0-9.]*\) ms')
			passes=0 ppg=0 reread=- reads=-
		elif grep -q 'pages written meanwhile' <<< "$line"; then
			path=soft-dirty
			grep -q 'copied from that image' <<< "$line" && path="soft-dirty, copied after it ran on"
			grep -q 'pages written since: copied stopped' <<< "$line" && path="soft-dirty, image stale: copied stopped"
			final=$(f ', then stopped \([0-9.]*\) ms')
			pause=$(f 'longest stop \([0-9.]*\) ms')
			passes=$(f '; \([0-9]*\) passes read again')
			ppg=$(f 'passes read again \([0-9]*\) pages')
			reread=$(f ': \([0-9]* of [0-9]*\) pages written')+$(f 'and \([0-9]*\) outside the copy')
			reads=$(f 'outside the copy (\([0-9]*\) reads)')
		else
			path="full re-read stopped ($(f 'no soft-dirty bits (\(.*\))$'))"
			final=$(f 'copied stopped \([0-9.]*\) ms')
			pause=$final passes=0 ppg=0 reread=all reads=-
		fi
		grep -q '^incomplete' "$TMP/out" && path="$path; incomplete (rc $rc): $(sed -n '/^incomplete/,/^$/p' "$TMP/out" | sed -n 2p | sed 's/^ *//')"
		total=$(awk '/^  gc.total/ { print $NF }' "$TMP/out")
		printf '%-8s %8s %8s %6s %8s %16s %6s %7.1f %8.0f %8.0f %6.2f %8s  %s\n' "$mode" "${pause:--}" \
			"${final:--}" "${passes:-0}" "${ppg:-0}" "${reread:--}" "${reads:--}" "$wall" \
			"$(( ${total:-0} >> 20 ))" "$((rss / 1024))" \
			"$(awk -v a="$rss" -v b="${total:-0}" 'BEGIN { print b ? a * 1024 / b : 0 }')" "$grow" "$path"
	done
done
