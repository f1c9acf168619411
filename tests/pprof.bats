#!/usr/bin/env bats
# report --pprof: a gzipped pprof heap profile, read back by Go's own
# pprof (go tool pprof, from Debian's golang-go) with exact values for
# tests/lua/stacks.lua's known chains (see tests/stacks.bats).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	export HOME="$T" # pprof keeps its settings there
}

# traces PROFILE INDEX: Go pprof's samples of PROFILE for sample type
# INDEX as folded lines, root first, exact values: a Lua frame as its
# file:line (workload lines as L, the luajit binary's C frame as HOST),
# another by its name.
traces() {
	go tool pprof -traces -lines -unit=B -sample_index="$2" "$1" 2>/dev/null | awk '
		function emit(  out, i) {
			out = fr[n - 1]
			for (i = n - 2; i >= 0; i--) out = out ";" fr[i]
			print out, v
		}
		/^-+\+-+$/ { if (n) emit(); n = 0; on = 1; next }
		!on { next }
		{
			l = $0; sub(/^ +/, "", l)
			# the function name beside a Lua frame (tests/fnames.bats has them)
			gsub(/ (function|method|field|upvalue|local|metamethod) \047[^\047]*\047/, "", l)
			if (!n) { v = l; sub(/ .*/, "", v); sub(/B$/, "", v); sub(/^[^ ]+ +/, "", l) }
			if (l ~ /^[^ ]+:[0-9]+ [^ ]+:[0-9]+$/) sub(/^[^ ]+ /, "", l)
			fr[n++] = l
		}
		END { if (n) emit() }' |
		sed -E 's#lua/stacks\.lua:#L#g; s#^\[C\] luajit\+0x[0-9a-f]+;#HOST;#'
}

# has FILE LINE: LINE is one of FILE's lines, exactly.
has() {
	grep -qFx -- "$2" "$1" && return 0
	echo "no line '$2' in $1:"
	head -30 "$1"
	return 1
}

@test "report --pprof: Go's pprof reads Go's four heap sample types, in Go's order, with each stack's exact values" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/s.bin" --stacks -- luajit -joff lua/stacks.lua 100
	"$LMT" report --pprof "$T/s.bin" > "$T/s.pb.gz"
	# gzip, as pprof's own files
	gzip -t "$T/s.pb.gz"
	go tool pprof -raw "$T/s.pb.gz" > "$T/raw.txt"
	grep -qx 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes' "$T/raw.txt"
	for i in alloc_objects alloc_space inuse_objects inuse_space; do
		traces "$T/s.pb.gz" $i > "$T/$i.f"
	done
	# caller_a's 100 tables of 96 bytes, all still held
	has "$T/alloc_objects.f" "HOST;L27;L7;L4 100"
	has "$T/alloc_space.f" "HOST;L27;L7;L4 9600"
	has "$T/inuse_objects.f" "HOST;L27;L7;L4 100"
	has "$T/inuse_space.f" "HOST;L27;L7;L4 9600"
	# through pcall, the sort comparator, a truncated recursion
	has "$T/alloc_objects.f" "HOST;L29;pcall;L4 100"
	has "$T/alloc_objects.f" "HOST;L36;table.sort;L21;L4 100"
	has "$T/inuse_space.f" "[truncated];$(printf 'L18;%.0s' $(seq 1 62))L17;L4 86400"
	# make, defined at line 3, is a Function of that name and start line,
	# its table a Location at line 4
	grep -Eq '^ +[0-9]+: 0x0 M=1 lua/stacks\.lua:3 lua/stacks\.lua:4 s=3$' "$T/raw.txt"
}

@test "report --pprof without the companion: a sample per location, the same totals" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/s.bin" -- luajit -joff lua/stacks.lua 100
	[ ! -e "$T/s.bin.stacks" ]
	"$LMT" report --pprof "$T/s.bin" > "$T/s.pb.gz"
	traces "$T/s.pb.gz" alloc_objects > "$T/o.f"
	traces "$T/s.pb.gz" inuse_space > "$T/i.f"
	# the 7800 tables of line 4, all held
	has "$T/o.f" "L4 7800"
	has "$T/i.f" "L4 748800"
}

@test "report --pprof: with another format, or to a terminal, one line and exit 2" {
	run "$LMT" report --pprof --folded "$FIXTURES/alloc.bin"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	run script -qec "$LMT report --pprof $FIXTURES/alloc.bin" /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"redirect stdout to a file"* ]]
}
