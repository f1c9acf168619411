#!/usr/bin/env bash
# bpfprof.sh [PROG [SECONDS]]: where a program of luamemtrace spends its
# time, by source line: sysbench (two threads, JIT on, allocation-bound, as
# tests/bench/hosts.sh runs it) traced, `perf record -a` over SECONDS
# (default 3), each sample in PROG (default alloc_enter) or its subprograms
# put on the BPF source line whose JIT code holds it (tests/tools/bpflines).
# Shares of PROG's samples, largest first. A sample lands a few
# instructions after what stalled (skid): read a line's share with its
# neighbours'. Needs root and perf.
set -u
cd "$(dirname "$0")/../.." || exit 1
PROG=${1:-alloc_enter}
SECS=${2:-3}
[ "$(id -u)" -eq 0 ] || { echo "bpfprof: needs root" >&2; exit 1; }
command -v perf > /dev/null || { echo "bpfprof: needs perf (linux-perf)" >&2; exit 1; }
make -s luamemtrace build/bpflines || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BATS_TEST_DIRNAME=$PWD/tests
. tests/helpers.bash
. tests/hosts.bash
SB_JIT=on sb_script "$TMP/sb"
SB_COUNT_DIR=$TMP/sb ./luamemtrace -t 0 -o "$TMP/o/" -- sysbench "$TMP/sb/alloc.lua" \
	--threads=2 --time=$((SECS + 3)) run > /dev/null 2> "$TMP/err" &
sleep 2
perf record -a -F 20000 -o "$TMP/perf.data" -- sleep "$SECS" > /dev/null 2>&1
id=$(bpftool prog show | awk -v p="$PROG" '$3 == "name" && $4 == p {sub(":", "", $1); id = $1} END {print id}')
[ -n "$id" ] && build/bpflines "$id" > "$TMP/lines" || { echo "bpfprof: no program $PROG" >&2; wait; exit 1; }
wait
perf script -i "$TMP/perf.data" -F ip 2> /dev/null |
	awk -v lines="$TMP/lines" '
	# The low 32 bits: awk numbers are doubles, and the images lie
	# within 4 GiB of each other.
	function hex(s,  i, c, v) { v = 0; s = tolower(substr(s, length(s) - 7))
		for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
		return v }
	BEGIN {
		while ((getline l < lines) > 0) {
			split(l, f, " ")
			if (f[1] == "func") { fa[++nf] = hex(f[2]); fe[nf] = fa[nf] + f[3] }
			else { la[++nl] = hex(f[2]); lk[nl] = f[3]; sub(/^line [0-9a-f]+ [^ ]+ ?/, "", l); lt[nl] = l }
		}
	}
	{
		ip = hex($1); inside = 0
		for (i = 1; i <= nf; i++) if (ip >= fa[i] && ip < fe[i]) inside = 1
		if (!inside) next
		best = 0
		for (i = 1; i <= nl; i++) if (la[i] <= ip && (!best || la[i] > la[best])) best = i
		if (!best) next
		n[lk[best]]++; txt[lk[best]] = lt[best]; tot++
	}
	END {
		printf "%d samples in '"$PROG"' and its subprograms\n", tot
		for (k in n) printf "%5.1f%% %-24s %s\n", 100 * n[k] / tot, k, substr(txt[k], 1, 90) | "sort -rn | head -40"
	}'
