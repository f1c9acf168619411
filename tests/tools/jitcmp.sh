#!/bin/bash
# jitcmp.sh DIR SCRIPT [ARG...]: traces `luajit SCRIPT ARG...` with
# --stacks twice, JIT on (-jon) and JIT off (-joff), and compares the
# two: per Lua line, the allocating events (ALLOCATIONS + REALLOCATIONS
# of the standard report), and per full stack (report --folded
# --weight=events, addresses blanked: ASLR). Run from SCRIPT's directory
# (chunk names are as luajit is given them).
#
# Prints one summary line
#   lines W/N within 1%; stacks E/T equal
# (W of the N Lua lines with the JIT on within 1% of the JIT-off count,
# or 2 events: the Lua stack's resizes legitimately move between lines,
# lj_snap_restore growing it at a trace exit where the interpreter grows
# it at the call that needs it, and lj_state_shrinkstack never shrinking
# a running trace's;
# E of the T JIT-off events whose stack the JIT-on run has as often),
# then each line outside 1% and the stacks that differ most. Exit 0 when
# every line is within 1% and E >= 99% of T, 1 otherwise, 2 when a run
# failed. Files: DIR/{on,off}.{bin,txt,f,lines}.
# LMT: the tracer (default: the repository's); LUAJIT: the VM.
set -u
dir=$1
shift
mkdir -p "$dir" || exit 2
here=$(cd "$(dirname "$0")/../.." && pwd)
LMT=${LMT:-$here/luamemtrace}
LUAJIT=${LUAJIT:-luajit}

for m in on off; do
	if ! "$LMT" -q -f --stacks -o "$dir/$m.bin" -- "$LUAJIT" "-j$m" "$@" \
		> "$dir/$m.out" 2> "$dir/$m.err"; then
		echo "jitcmp: the JIT-$m run failed:"; cat "$dir/$m.err"; exit 2
	fi
	"$LMT" report "$dir/$m.bin" > "$dir/$m.txt" || exit 2
	"$LMT" report --folded --weight=events "$dir/$m.bin" |
		sed -E 's/0x[0-9a-f]+/0x/g' > "$dir/$m.f" || exit 2
	# "CHUNK:LINE COUNT", Lua lines only (chunks start with @ or =)
	awk '
		/^(ALLOCATIONS|REALLOCATIONS|DEALLOCATIONS)$/ { s = $0; next }
		/^HEAP SUMMARY:/ { s = "" }
		(s == "ALLOCATIONS" || s == "REALLOCATIONS") && /^[@=].*:[0-9]+: [0-9]+ events\t/ {
			n = $0; sub(/ events\t.*/, "", n); k = n
			sub(/.*: /, "", n); sub(/: [0-9]+$/, "", k); c[k] += n
		}
		END { for (k in c) print k, c[k] }' "$dir/$m.txt" | sort > "$dir/$m.lines"
done
if ! cmp -s "$dir/on.out" "$dir/off.out"; then
	echo "jitcmp: the program's output differs between JIT on and off"
	diff "$dir/on.out" "$dir/off.out" | head -5
	exit 2
fi

awk -v dir="$dir" '
	FILENAME ~ /off\.lines$/ { off[$1] = $2; k[$1] = 1; next }
	FILENAME ~ /on\.lines$/ { on[$1] = $2; k[$1] = 1; next }
	FILENAME ~ /off\.f$/ { w = $NF; sub(/ [0-9]+$/, ""); sf[$0] += w; sk[$0] = 1; next }
	FILENAME ~ /on\.f$/ { w = $NF; sub(/ [0-9]+$/, ""); sn[$0] += w; sk[$0] = 1; next }
	END {
		for (l in k) {
			n++; d = on[l] - off[l]; if (d < 0) d = -d
			if (100 * d <= off[l] || d <= 2) ok++
			else bad = bad sprintf("line %s: on %d off %d\n", l, on[l], off[l])
		}
		for (s in sk) {
			t += sf[s]; e += (sn[s] < sf[s] ? sn[s] : sf[s])
			d = sn[s] - sf[s]; if (d < 0) d = -d
			if (d) diff[s] = d
		}
		printf "lines %d/%d within 1%%; stacks %d/%d equal\n", ok, n, e, t
		printf "%s", bad
		for (i = 0; i < 8; i++) {
			m = 0; ms = ""
			for (s in diff) if (diff[s] > m) { m = diff[s]; ms = s }
			if (m == 0) break
			printf "stack %s: on %d off %d\n", ms, sn[ms], sf[ms]
			delete diff[ms]
		}
		exit !(ok == n && 100 * e >= 99 * t)
	}' "$dir/off.lines" "$dir/on.lines" "$dir/off.f" "$dir/on.f"
