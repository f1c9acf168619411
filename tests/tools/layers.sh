#!/usr/bin/env bash
# The rooms of user/ call down only (docs/how-it-works.md: the house).
# Each room has a rank; a file may include headers of its own room or of
# rooms ranked below it, and call (from the object files: a symbol it
# uses that another file defines) only the same. Within a room, no circle
# of files calling each other. Prints every breach and exits 1; 0 if none.
#
#   tests/tools/layers.sh [BUILD_DIR]   (default: build)
set -u
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build}

declare -A rank=(
	[util]=0 [format]=1 [target]=2 [report]=2 [streams]=3 [convert]=4
	[capture]=5 [probes]=5 [session]=6 [heap]=7 [cli]=8
)
bad=0
found=$(mktemp)
trap 'rm -f "$found"' EXIT
say() { echo "$1" >> "$found"; }
room_of() { local r=${1#user/}; echo "${r%%/*}"; }

# -- Includes ----------------------------------------------------------------
for f in user/*/*.[ch]; do
	a=$(room_of "$f")
	[ -n "${rank[$a]:-}" ] || { echo "no rank for room $a ($f)"; bad=1; continue; }
	while read -r h; do
		b=${h%%/*}
		[ "$b" = "$h" ] && continue # the room's own, or bpf/ and build/
		[ -n "${rank[$b]:-}" ] || continue
		if [ "$a" != "$b" ] && [ "${rank[$b]}" -ge "${rank[$a]}" ]; then
			say "include up: $f -> user/$h"
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done

# -- Calls -------------------------------------------------------------------
declare -A def
objs=$(ls "$build"/*/*.o 2>/dev/null | grep -v -e '/unit/' -e '/npm/' -e 'pb-c')
[ -n "$objs" ] || { echo "no objects under $build: run make first"; exit 2; }
for o in $objs; do
	while read -r s; do def[$s]=$o; done < <(nm --defined-only -g "$o" | awk '$2 ~ /[TDBR]/ {print $3}')
done
edges=$(mktemp)
trap 'rm -f "$edges" "$found"' EXIT
for o in $objs; do
	a=$(room_of "${o#"$build"/}")
	while read -r s; do
		d=${def[$s]:-}
		[ -n "$d" ] && [ "$d" != "$o" ] || continue
		b=$(room_of "${d#"$build"/}")
		if [ "$a" != "$b" ] && [ "${rank[$b]}" -ge "${rank[$a]}" ]; then
			say "call up: ${o#"$build"/} -> ${d#"$build"/} ($s)"
		fi
		[ "$a" = "$b" ] && echo "${o#"$build"/} ${d#"$build"/}" >> "$edges"
	done < <(nm -u "$o" | awk '{print $2}')
done
# A circle inside a room: tsort says so.
sort -u "$edges" | tsort >/dev/null 2>"$edges.err" || true
if [ -s "$edges.err" ]; then
	grep -v 'input contains a loop' "$edges.err" | sed -n 's/^tsort: /circle: /p' >> "$found"
fi
rm -f "$edges.err"
sort -u "$found" -o "$found"
cat "$found"
[ -s "$found" ] && exit 1
exit $bad
