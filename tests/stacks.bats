#!/usr/bin/env bats
# --stacks: the Lua call stack of every event (tests/lua/stacks.lua makes
# one table at line 4 through known call chains), its companion file, and
# the report's views of it.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# folded FILE [WEIGHT]: report --folded of FILE, the workload's chunk
# written L, the luajit binary's C frame (its pmain: the root of every
# main-chunk stack) written HOST, the frames' function names left out
# (tests/fnames.bats has them).
folded() {
	"$LMT" report --folded --weight="${2:-events}" "$1" | unnamed |
		sed -E 's#@lua/stacks\.lua:#L#g; s#^\[C\] luajit\+0x[0-9a-f]+;#HOST;#'
}

# rec_line J: the stack of the table made at recursion level J of rec(70).
rec_line() {
	local s="HOST;L37" i
	for ((i = 0; i < $1; i++)); do s+=";L18"; done
	echo "$s;L17;L4"
}

# The stacks of the seven chains, one per line, as both JIT modes give
# them (N = 100 iterations: 100 tables per chain and level).
chains() {
	cat <<'X'
HOST;L27;L7;L4 100
HOST;L28;L11;L4 100
HOST;L29;pcall;L4 100
HOST;L31;L14;L4 100
HOST;L32;L4 100
L33;L4 100
HOST;L36;table.sort;L21;L4 100
X
}

# has FOLDED LINE: LINE is one of FOLDED's lines, exactly.
has() {
	grep -qFx -- "$2" "$1" && return 0
	echo "no line '$2' in $1:"
	grep -v ';L18;L18;L18' "$1" | head -40
	return 1
}

# all_chains FOLDED: the seven chains' exact stacks and counts in FOLDED,
# recursion past the default depth of 64 included.
all_chains() {
	while IFS= read -r l; do has "$1" "$l"; done < <(chains)
	# rec(70): levels 0-60 fit the default depth of 64 (HOST, main chunk,
	# J + 1 rec frames, make); level 61 loses HOST, 62-70 lose the main
	# chunk and outer rec frames too and read the same.
	for j in 0 1 2 3 4 30 59 60; do has "$1" "$(rec_line $j) 100"; done
	has "$1" "[truncated];$(rec_line 61 | sed 's/^HOST;//') 100"
	has "$1" "[truncated];$(rec_line 62 | sed 's/^HOST;L37;//') 900"
	# Every table of line 4 has its stack: 7 chains + 71 levels.
	[ "$(awk '/;L4 [0-9]+$/ { n += $NF } END { print n }' "$1")" = 7800 ]
}

@test "stacks, JIT off: exact stacks and counts of every chain (direct, pcall, metamethod, tail call, coroutine, sort comparator, recursion past the depth)" {
	cd "$BATS_TEST_DIRNAME"
	run "$LMT" -q -o "$T/s.bin" --stacks -- luajit -joff lua/stacks.lua 100
	[ "$status" -eq 0 ]
	[ -s "$T/s.bin.stacks" ]
	folded "$T/s.bin" > "$T/s.f"
	all_chains "$T/s.f"
	# The same weights by bytes: a table is 96 bytes here (GC64).
	folded "$T/s.bin" bytes > "$T/b.f"
	has "$T/b.f" "HOST;L27;L7;L4 9600"
}

@test "stacks, JIT on: the same stacks through compiled code (inlined frames and unrolled recursion from the snapshots)" {
	cd "$BATS_TEST_DIRNAME"
	run "$LMT" -o "$T/s.bin" --stacks -- luajit -jon lua/stacks.lua 100
	[ "$status" -eq 0 ]
	# compiled: the loop, and rec's up-recursive trace, which inlines
	# make and unrolls two more levels of rec
	[[ "$output" =~ symbols:\ +[0-9]+\ prototypes,\ ([0-9]+)\ traces ]]
	[ "${BASH_REMATCH[1]}" -ge 2 ]
	[[ "$output" != *"without their stack"* ]]
	folded "$T/s.bin" > "$T/s.f"
	all_chains "$T/s.f"
	"$LMT" report "$T/s.bin" > "$T/s.txt"
	count_is ALLOCATIONS @lua/stacks.lua:4 "$T/s.txt" "7800"
}

@test "stacks, two VMs in one stream (-o FILE, merged in order): every chain's exact stack, from both" {
	# host -t 2: two threads, a VM each, running stacks.lua at once (N =
	# 100, JIT on); the main chunk is each stack's root
	cd "$BATS_TEST_DIRNAME"
	run "$LMT" --stacks -o "$T/t2.bin" -- "$BATS_TEST_DIRNAME/../build/host" -t 2 lua/stacks.lua
	[ "$status" -eq 0 ]
	[[ "$output" == *"2 VMs (LuaJIT 2.1 GC64)"* ]]
	[[ "$output" != *"without their stack"* ]]
	folded "$T/t2.bin" > "$T/t2.f"
	chains | sed 's/^HOST;//; s/ 100$/ 200/' | grep -v '^L33;L4 ' > "$T/want"
	while IFS= read -r l; do has "$T/t2.f" "$l"; done < "$T/want"
	has "$T/t2.f" "$(rec_line 0 | sed 's/^HOST;//') 200"
	has "$T/t2.f" "$(rec_line 40 | sed 's/^HOST;//') 200"
}

@test "stacks, JIT on: a tail call the trace makes from the frame it entered replaces that frame; a process gone before its events are read keeps its stacks" {
	cd "$BATS_TEST_DIRNAME"
	run "$LMT" -o "$T/t.bin" --stacks -- luajit -jon lua/stacks_tail.lua
	[ "$status" -eq 0 ]
	[[ "$output" =~ symbols:\ +[0-9]+\ prototypes,\ ([1-9][0-9]*)\ traces ]]
	"$LMT" report --folded --weight=events "$T/t.bin" |
		unnamed | sed -E 's#@lua/stacks_tail\.lua:#L#g; s#^\[C\] luajit\+0x[0-9a-f]+;#HOST;#' > "$T/t.f"
	# the main chunk's call at 12, caller's at 9, make's table at 4;
	# tail's frame is gone, as in debug.traceback
	has "$T/t.f" "HOST;L12;L9;L4 1000"
}

@test "stacks: an FFI cdata metamethod is named as LuaJIT names it (ffi.meta.__index), even in a process of a few milliseconds" {
	cd "$BATS_TEST_DIRNAME"
	run "$LMT" -q -o "$T/f.bin" --stacks -- luajit -joff lua/stacks_ffi.lua
	[ "$status" -eq 0 ]
	"$LMT" report --folded --weight=events "$T/f.bin" |
		unnamed | sed -E 's#@lua/stacks_ffi\.lua:#L#g; s#^\[C\] luajit\+0x[0-9a-f]+;#HOST;#' > "$T/f.f"
	has "$T/f.f" "HOST;L6;ffi.meta.__index 100"
}

@test "stacks match LuaJIT's own debug.traceback for the same calls" {
	cd "$BATS_TEST_DIRNAME"
	# The last iteration replaces make by one that prints the traceback
	# of its caller and makes a table at line 41; the tracer sees it.
	LMT_TRACEBACKS=1 run "$LMT" -q -o "$T/t.bin" --stacks -- luajit -joff lua/stacks.lua 3
	[ "$status" -eq 0 ]
	tracebacks_seen "$T/t.bin" <(printf '%s\n' "$output")
}

@test "report --leak-only --by-stack: what is held at the end, by full stack, largest first" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/s.bin" --stacks -- luajit -joff lua/stacks.lua 100
	"$LMT" report --leak-only --by-stack "$T/s.bin" > "$T/l.txt"
	# the standard HEAP SUMMARY first, unchanged
	"$LMT" report --leak-only "$T/s.bin" > "$T/l0.txt"
	head -n "$(wc -l < "$T/l0.txt")" "$T/l.txt" | diff - "$T/l0.txt"
	# caller_a's 100 tables, 96 bytes each, all kept
	awk '/^HEAP SUMMARY BY STACK:/ { s = 1; next } s && /^9600B in 100 blocks/ { b = $0; getline a; getline c; getline d; print b; print a; print c; print d; exit }' "$T/l.txt" > "$T/b.txt"
	grep -qx $'\t@lua/stacks.lua:4 upvalue \'make\'' "$T/l.txt"
	awk '/^HEAP SUMMARY BY STACK:/ { s = 1 } s' "$T/l.txt" | grep -A3 -x '9600B in 100 blocks, allocated at:' | grep -q $'^\t@lua/stacks.lua:7 local \'caller_a\'$'
	# largest first: the 900 truncated recursion levels' tables lead
	awk '/^HEAP SUMMARY BY STACK:/ { getline; print; exit }' "$T/l.txt" | grep -qx '86400B in 900 blocks, allocated at:'
	"$LMT" report --leak-only --by-stack --human-readable "$T/s.bin" | grep -qx '84.38KiB in 900 blocks, allocated at:'
}

@test "--stack-depth N: stacks keep their innermost N frames" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/s.bin" --stack-depth 3 -- luajit -joff lua/stacks.lua 10
	folded "$T/s.bin" > "$T/s.f"
	# four frames and more lose their outer ones
	has "$T/s.f" "[truncated];L27;L7;L4 10"
	has "$T/s.f" "[truncated];table.sort;L21;L4 10"
	has "$T/s.f" "L33;L4 10"
	# rec(70): level 0 is four frames deep, the 70 others more
	has "$T/s.f" "[truncated];L37;L17;L4 10"
	has "$T/s.f" "[truncated];L18;L17;L4 700"
}

@test "stacks: the companion of a target killed mid-trace is whole; one cut short is read as far as it goes" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/k.bin" --stacks -- luajit -joff -e '
		local keep = {}
		local function make() return {} end
		for i = 1, 1e9 do keep[i % 1000] = make() if i == 20000 then os.execute("kill -9 " .. io.open("/proc/self/stat"):read("*n")) end end' || true
	run "$LMT" report --folded --weight=events "$T/k.bin"
	[ "$status" -eq 0 ]
	unnamed <<< "$output" | grep -Eq ';=\(command line\):4;=\(command line\):3 [0-9]+$'
	# cut the companion in half: a warning, exit 3, stacks as far as it goes
	head -c "$(( $(stat -c %s "$T/k.bin.stacks") / 2 ))" "$T/k.bin.stacks" > "$T/c.bin.stacks"
	cp "$T/k.bin" "$T/c.bin"
	cp "$T/k.bin.info" "$T/c.bin.info"
	run "$LMT" report --folded "$T/c.bin"
	[ "$status" -eq 3 ]
	grep -q 'c.bin.stacks: stacks file cut short' <<< "$output"
}

@test "stacks: the standard stream is unchanged by --stacks (the standard report reads it the same)" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/a.bin" -- luajit -joff lua/alloc.lua > /dev/null
	"$LMT" -q -o "$T/b.bin" --stacks -- luajit -joff lua/alloc.lua > /dev/null
	"$BATS_TEST_DIRNAME/../build/mpdump" "$T/b.bin" > /dev/null
	"$LMT" report "$T/a.bin" | sed -E 's/0x[0-9a-f]+/ADDR/g' > "$T/a.txt"
	mv "$T/b.bin.stacks" "$T/b.stk"
	"$LMT" report "$T/b.bin" | sed -E 's/0x[0-9a-f]+/ADDR/g' > "$T/b.txt"
	diff "$T/a.txt" "$T/b.txt"
}

@test "stacks: bad options and a missing companion say so in one line" {
	run "$LMT" --stack-depth 0 -o /dev/null -- true
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	run "$LMT" --stack-depth 300 -o /dev/null -- true
	[ "$status" -eq 2 ]
	run "$LMT" report --by-stack "$FIXTURES/alloc.bin"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--by-stack goes with --leak-only"* ]]
	cp "$(ls "$FIXTURES"/*.bin | head -1)" "$T/x.bin"
	run "$LMT" report --leak-only --by-stack "$T/x.bin"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"x.bin.stacks: No such file or directory (trace with --stacks)"* ]]
}
