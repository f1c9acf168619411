#!/bin/bash
# jitdiff.sh DIR FIRST LAST [N]: the differential test of compiled code's
# attribution. For each seed FIRST..LAST, tests/tools/luagen.lua writes a
# random program (N iterations, default 2000) to DIR/gSEED.lua, and
# jitcmp.sh traces it with the JIT on and off and compares per-line
# counts and stacks. Prints each seed's summary line; exit 1 if any seed
# disagreed (its files stay in DIR/SEED/), 2 if a run failed.
set -u
dir=$1 first=$2 last=$3 n=${4:-2000}
tools=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=jitfold.sh
. "$tools/jitfold.sh"
st=0
for ((s = first; s <= last; s++)); do
	mkdir -p "$dir/$s"
	luajit "$tools/luagen.lua" "$s" "$n" > "$dir/g$s.lua" || exit 2
	r=0
	out=$(cd "$dir" && "$tools/jitcmp.sh" "$dir/$s" "g$s.lua") || r=$?
	echo "seed $s: $out"
	jit_fold "$dir/$s" "$r"
done
exit "$st"
