#!/usr/bin/env bash
# Include cycles in a folder of C: prints each cycle and exits 1 if there
# is one, else says how many nodes and edges it read and exits 0.
#
#   tests/tools/include-cycles.sh [--files] [--graph] DIR
#
# Reads the #include "..." lines of DIR's *.c and *.h files (DIR and the
# folders below it). An include resolves as the compiler resolves a quoted
# one: beside the including file, then from DIR; one that names no file of
# DIR (a system header, another folder's) is no edge.
#
# A node is a module: foo.c and foo.h are one node (foo), so the graph is
# the files' graph: a .c that calls another module includes its header,
# and two modules that call each other make a cycle. --files: a node per
# file (only headers that include each other make a cycle). --graph: the
# edges ("a -> b", a includes b) first. Nodes are paths below DIR. The
# cycles are found by tsort (coreutils).
set -euo pipefail

files=0 graph=0
while [ $# -gt 1 ]; do
	case $1 in
	--files) files=1 ;;
	--graph) graph=1 ;;
	*) break ;;
	esac
	shift
done
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: include-cycles.sh [--files] [--graph] DIR" >&2
	exit 2
fi
dir=${1%/}

# node PATH: PATH (below DIR) less .c/.h, unless --files.
node() {
	if [ "$files" = 1 ]; then printf '%s\n' "$1"; else printf '%s\n' "${1%.[ch]}"; fi
}

edges=$(
	find "$dir" -type f -name '*.[ch]' | LC_ALL=C sort | while IFS= read -r f; do
		a=$(node "$(realpath -m --relative-to="$dir" "$f")")
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while IFS= read -r inc; do
			for t in "$(dirname "$f")/$inc" "$dir/$inc"; do
				[ -f "$t" ] || continue
				t=$(realpath -m --relative-to="$dir" "$t")
				case $t in ../*) break ;; esac # outside DIR
				b=$(node "$t")
				[ "$a" = "$b" ] || printf '%s %s\n' "$a" "$b"
				break
			done
		done
	done | LC_ALL=C sort -u
)

if [ "$graph" = 1 ] && [ -n "$edges" ]; then
	printf '%s\n' "$edges" | sed 's/ / -> /'
fi
nodes=$(find "$dir" -type f -name '*.[ch]' | while IFS= read -r f; do
	node "$(realpath -m --relative-to="$dir" "$f")"; done | sort -u | wc -l)
nedges=$(printf '%s' "$edges" | grep -c . || true)

# tsort names a loop's members in order, each including the next; each
# step is checked against the edges before it is printed as one.
loops=$( { printf '%s\n' "$edges" | tsort >/dev/null; } 2>&1 || true)
if [ -z "$loops" ]; then
	echo "no include cycles: $nodes nodes, $nedges edges"
	exit 0
fi
printf '%s\n' "$loops" | awk -v edges="$edges" '
	BEGIN { n = split(edges, e, "\n"); for (i = 1; i <= n; i++) E[e[i]] = 1 }
	function flush(   i, s, ok) {
		if (!m) return
		ok = 1; s = v[1]
		for (i = 2; i <= m + 1; i++) {
			w = i <= m ? v[i] : v[1]
			if (!((v[i - 1] " " w) in E)) ok = 0
			s = s " -> " w
		}
		if (ok) print "include cycle: " s
		else { s = v[1]; for (i = 2; i <= m; i++) s = s " " v[i]; print "include cycle among: " s }
		m = 0
	}
	/input contains a loop:/ { flush(); next }
	{ sub(/^tsort: /, ""); v[++m] = $0 }
	END { flush() }'
exit 1
