#!/bin/bash
# jitorders.sh DIR SCRIPT [N]: the differential test (jitcmp.sh) of
# SCRIPT once per order the JIT makes its traces in. LuaJIT draws a
# random penalty when a trace aborts, so its traces and their order
# differ from run to run, and an attribution exact in one order may not
# be in another. With address randomisation off (setarch -R) and its
# random seed fixed (LJSEED, tests/tools/ljseed.c preloaded), a run is
# repeated exactly: the seeds 1..N (default 40) are run without the
# tracer (-jv lists the traces), and one seed per distinct list is traced
# JIT on against JIT off. Run from SCRIPT's directory. Prints a line per
# order (its seed, how many seeds made it, jitcmp's summary); exit 1 if
# any order disagreed (its files stay in DIR/SEED/), 2 if a run failed.
# LJSEED_SO: the shim (default build/ljseed.so); LMT, LUAJIT: jitcmp's.
set -u
dir=$1 script=$2 n=${3:-40}
tools=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=jitfold.sh
. "$tools/jitfold.sh"
LUAJIT=${LUAJIT:-luajit}
case $n in '' | *[!0-9]*) echo "jitorders: N must be a number"; exit 2 ;; esac
# -jv=FILE splits at commas
case $dir in *[,:\ ]*) echo "jitorders: DIR must not hold ',', ':' or ' '"; exit 2 ;; esac
jit_shim jitorders
mkdir -p "$dir" || exit 2
declare -A first count
for ((s = 1; s <= n; s++)); do
	jit_pinned "$s" "$LUAJIT" -jon -jv="$dir/jv" "$script" \
		> /dev/null 2>&1 || { echo "jitorders: seed $s: $script failed"; exit 2; }
	# the traces made, not the attempts aborted ("[TRACE --- ...")
	t=$(grep -v '^\[TRACE ---' "$dir/jv") ||
		{ echo "jitorders: seed $s: no trace made"; exit 2; }
	h=$(md5sum <<< "$t" | cut -c1-8)
	[ -n "${first[$h]:-}" ] || first[$h]=$s
	count[$h]=$((${count[$h]:-0} + 1))
done
st=0
for h in "${!first[@]}"; do
	s=${first[$h]} r=0
	out=$(jit_pinned "$s" "$tools/jitcmp.sh" "$dir/$s" "$script") || r=$?
	echo "order $h (seed $s, ${count[$h]} of $n): ${out%%$'\n'*}"
	[ "$r" -eq 0 ] || sed 1d <<< "$out"
	jit_fold "$dir/$s" "$r"
done
exit "$st"
