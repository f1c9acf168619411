#!/usr/bin/env bats
# Builds of other layouts, from Debian's own source (tests/variants.bash).
# LuaJIT with GC64 off (32-bit references, its entry of the layout table),
# upstream's and OpenResty's luajit2: traced with -p and -- COMMAND, exactly
# with the JIT off. Tarantool 2.6 (its fork, GC64 off) the same.

load helpers
load variants

setup_file() {
	variant_gc64off
	variant_lj2gc64off
}

setup() {
	T="$BATS_TEST_TMPDIR"
	LJ32="$VARIANTS/gc64off/src/src/luajit"
	LJ2_32="$VARIANTS/lj2gc64off/src/src/luajit"
}

# The layout table (user/target/layout.c) against the headers of the
# sources it was measured on: every offset, size, opcode and field number
# of each entry the same (tests/tools/ljfields.h lists them).
@test "the layout table: each entry's every number as its LuaJIT's headers define it (Debian's luajit and luajit2, GC64 on and off; Tarantool's fork)" {
	variant_tarantool
	layout_check "LuaJIT 2.1 GC64" "$VARIANTS/gc64off/src"
	layout_check "LuaJIT 2.1 GC64 off" "$VARIANTS/gc64off/src" -DLUAJIT_DISABLE_GC64
	layout_check "OpenResty LuaJIT 2.1 GC64" "$VARIANTS/lj2gc64off/src"
	layout_check "OpenResty LuaJIT 2.1 GC64 off" "$VARIANTS/lj2gc64off/src" -DLUAJIT_DISABLE_GC64
	# as its cmake/luajit.cmake builds it
	layout_check "Tarantool 2.6 LuaJIT 2.1 GC64 off" "$VARIANTS/tarantool/src/third_party/luajit" \
		-DLUAJIT_DISABLE_GC64 -DLUAJIT_SMART_STRINGS=1 -DLJOFF_OLD21
	# and it would tell: luajit2's IR field numbers are not upstream's
	! layout_check "OpenResty LuaJIT 2.1 GC64" "$VARIANTS/gc64off/src" > /dev/null
}

# below4g LJ: LJ's objects lie below 4 GiB (32-bit references hold them:
# tostring({}) prints 8 hex digits), Debian's GC64 luajit's do not.
below4g() {
	run "$1" -e 'print(tostring({}))'
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^"table: 0x"[0-9a-f]{8}$ ]]
	run luajit -e 'print(tostring({}))'
	[[ ! "$output" =~ ^"table: 0x"[0-9a-f]{8}$ ]]
}

@test "GC64 off, built from Debian's source: what it is (LuaJIT 2.1.0-beta3; every GC object below 4 GiB)" {
	run "$LJ32" -e 'print(jit.version, jit.arch)'
	[ "$status" -eq 0 ]
	[ "$output" = "LuaJIT 2.1.0-beta3	x64" ]
	below4g "$LJ32"
}

@test "OpenResty luajit2 GC64 off, built from Debian's luajit2 source: what it is (LuaJIT 2.1.0-beta3, OpenResty's table.isempty; every GC object below 4 GiB)" {
	run "$LJ2_32" -e 'print(jit.version, jit.arch)'
	[ "$status" -eq 0 ]
	[ "$output" = "LuaJIT 2.1.0-beta3	x64" ]
	# OpenResty's own builtin, which upstream's build has not
	run "$LJ2_32" -e 'print(require("table.isempty")({}))'
	[ "$status" -eq 0 ]
	[ "$output" = "true" ]
	run "$LJ32" -e 'require("table.isempty")'
	[ "$status" -eq 1 ]
	below4g "$LJ2_32"
}

# alloc_counts STREAM [AT12]: alloc.lua's per-line counts (tests/tracer.bats
# says why each is what it is; AT12 50 by default: with -p the string
# table grew before, not at line 12).
alloc_counts() {
	"$LMT" report "$1" > "$1.txt"
	count_is ALLOCATIONS @alloc.lua:4 "$1.txt" "1,1000"
	count_is ALLOCATIONS @alloc.lua:8 "$1.txt" "600"
	count_is ALLOCATIONS @alloc.lua:12 "$1.txt" "${2:-50}"
	count_is REALLOCATIONS @alloc.lua:5 "$1.txt" "9"
}

# p_counts LJ ENTRY: alloc.lua run by LJ, traced with -p: found as ENTRY,
# nothing lost, its per-line counts exact (JIT off), every line's the same
# as Debian's GC64 luajit's (sizes differ).
p_counts() {
	cd "$LUA_DIR"
	gated_trace "$1" "$T/a32.bin" -- alloc.lua
	[ "$GATED_STATUS" -eq 0 ]
	grep -q "traced PID [0-9]*, 1 VM ($2)" "$T/a32.bin.err"
	grep -q "lost:    0 events, 0 symbol records" "$T/a32.bin.err"
	alloc_counts "$T/a32.bin"
	gated_trace luajit "$T/a64.bin" -- alloc.lua
	grep -q "traced PID [0-9]*, 1 VM (LuaJIT 2.1 GC64)" "$T/a64.bin.err"
	alloc_counts "$T/a64.bin"
	for w in 32 64; do
		grep -E '^(@alloc|=)' "$T/a$w.bin.txt" | cut -d' ' -f1,2 | sort > "$T/l$w"
	done
	[ "$(wc -l < "$T/l32")" -ge 9 ]
	diff "$T/l64" "$T/l32"
	no_probes_of "$T"
}

@test "GC64 off, -p: traced (its entry, 32-bit references), per-line counts exact with the JIT off and equal to GC64's" {
	p_counts "$LJ32" "LuaJIT 2.1 GC64 off"
}

@test "OpenResty luajit2 GC64 off, -p: traced (its own entry), per-line counts exact with the JIT off and equal to GC64's" {
	p_counts "$LJ2_32" "OpenResty LuaJIT 2.1 GC64 off"
}

# stacks_exact LJ: the seven chains of tests/lua/stacks.lua
# (tests/stacks.bats), N = 3, run by LJ with the JIT off and traced with
# --stacks, folded with the host's C frame (these builds are not stripped:
# pmain is named by address) written HOST; each traceback LuaJIT printed is
# a stack the tracer saw; its frames named as on GC64 (the same bytecode
# and builtins, target/vmdef.c's lists), e.g. caller_a's chain.
stacks_exact() {
	cd "$BATS_TEST_DIRNAME"
	LMT_TRACEBACKS=1 gated_trace "$1" "$T/s.bin" --stacks -- -joff lua/stacks.lua 3
	[ "$GATED_STATUS" -eq 0 ]
	"$LMT" report --folded --weight=events "$T/s.bin" |
		sed -E 's#@lua/stacks\.lua:#L#g; s#^(CFUNC 0x|luajit\+0x)[0-9a-f:x]+;#HOST;#' > "$T/s.named"
	grep -qFx -- "HOST;L27;L7 local 'caller_a';L4 upvalue 'make' 3" "$T/s.named"
	grep -qFx -- "HOST;L31;L14 metamethod '__index';L4 upvalue 'make' 3" "$T/s.named"
	unnamed < "$T/s.named" > "$T/s.f"
	for l in "HOST;L27;L7;L4 3" "HOST;L28;L11;L4 3" "HOST;L29;pcall;L4 3" \
		 "HOST;L31;L14;L4 3" "HOST;L32;L4 3" "L33;L4 3" \
		 "HOST;L36;table.sort;L21;L4 3" "HOST;L37;L17;L4 3" \
		 "HOST;L37;L18;L18;L17;L4 3"; do
		grep -qFx -- "$l" "$T/s.f" || { echo "no '$l'"; cat "$T/s.f"; false; }
	done
	tracebacks_seen "$T/s.bin" "$T/s.bin.stdout"
	no_probes_of "$T"
}

@test "GC64 off, --stacks (JIT off): the chains' exact stacks and counts, equal to debug.traceback's" {
	stacks_exact "$LJ32"
}

@test "OpenResty luajit2 GC64 off, --stacks (JIT off): the chains' exact stacks and counts, equal to debug.traceback's" {
	stacks_exact "$LJ2_32"
}

# Debian's tarantool 2.6: its LuaJIT fork (GC64 off, an older 2.1 with
# fields of its own) linked into the stripped executable; fibers are
# coroutines of its one VM.
@test "Tarantool, -p: its entry, a fiber workload's per-line counts exact (JIT off), its C functions by their Lua names" {
	cd "$LUA_DIR"
	GATED_SELF=1 gated_trace tarantool "$T/t.bin" -- tarantool_fibers.lua
	[ "$GATED_STATUS" -eq 0 ]
	grep -qx "fibers done	1000" "$T/t.bin.stdout"
	grep -q "traced PID [0-9]*, 1 VM (Tarantool 2.6 LuaJIT 2.1 GC64 off)" "$T/t.bin.err"
	grep -q "lost:    0 events, 0 symbol records" "$T/t.bin.err"
	"$LMT" report "$T/t.bin" > "$T/t.txt"
	# 4 fibers x 250 tables at line 8, and mk's closure
	count_is ALLOCATIONS @tarantool_fibers.lua:8 "$T/t.txt" "1,1000"
	# keep's array part grows at line 10: 2^0 .. 2^10 slots
	count_is REALLOCATIONS @tarantool_fibers.lua:10 "$T/t.txt" "9"
	# its C function by its Lua name, read before the process is gone
	# (it waits at exit(): bpf exit_enter), beside its ELF name
	grep -q '^fiber\.create (lbox_fiber_create):0x[0-9a-f]*: ' "$T/t.txt"
	no_probes_of "$T"
}

# Without GC64 on x86-64, luaL_newstate makes its VM without lua_newstate
# (lj_state_newstate; lua_newstate refuses): its return is probed too.
# cmd_counts LJ AT12: alloc.lua run by LJ under the tracer: one VM, its
# per-line counts exact (JIT off), AT12 at line 12.
cmd_counts() {
	cd "$LUA_DIR"
	run "$LMT" -q -o "$T/c.bin" -- "$1" alloc.lua
	[ "$status" -eq 0 ]
	[ "$output" = "alloc.lua done" ]
	[ "$(info_val "$T/c.bin.info" vms)" = 1 ]
	alloc_counts "$T/c.bin" "$2"
	no_probes_of "$T"
}

@test "GC64 off, -- COMMAND: its VM from luaL_newstate, per-line counts exact (JIT off)" {
	# as tests/tracer.bats's first test: the string table grows at 12
	cmd_counts "$LJ32" 51
	count_is DEALLOCATIONS @alloc.lua:12 "$T/c.bin.txt" "1"
}

@test "OpenResty luajit2 GC64 off, -- COMMAND: its VM from luaL_newstate, per-line counts exact (JIT off)" {
	# 50: luajit2's libraries intern more names (table.isempty, ...):
	# its string table grew while alloc.lua was parsed (pmain's)
	cmd_counts "$LJ2_32" 50
	count_is DEALLOCATIONS @alloc.lua:12 "$T/c.bin.txt" ""
}

@test "Tarantool, -- COMMAND: its VM from luaL_newstate, the fibers' per-line counts exact (JIT off)" {
	cd "$LUA_DIR"
	echo go | "$LMT" -q -o "$T/t.bin" -- tarantool tarantool_fibers.lua > "$T/out" 2> "$T/err"
	grep -qx "fibers done	1000" "$T/out"
	[ "$(info_val "$T/t.bin.info" vms)" = 1 ]
	"$LMT" report "$T/t.bin" > "$T/t.txt"
	count_is ALLOCATIONS @tarantool_fibers.lua:8 "$T/t.txt" "1,1000"
	count_is REALLOCATIONS @tarantool_fibers.lua:10 "$T/t.txt" "9"
	no_probes_of "$T"
}

# -- The JIT on ---------------------------------------------------------------

# jit_lines LJ ENTRY: tests/lua/jit.lua (two hot loops, compiled) run by LJ
# with the JIT on and off: found as ENTRY, no trace cut or refused, every
# line's allocations with the JIT on those of the JIT-off run, and the
# known counts (tests/tracer.bats says why each is what it is), none
# charged to a trace.
jit_lines() {
	local m
	cd "$LUA_DIR"
	for m in on off; do
		"$LMT" -o "$T/$m.bin" -- "$1" "-j$m" jit.lua > "$T/$m.out" 2> "$T/$m.err"
		[ "$(cat "$T/$m.out")" = 25000 ]
		grep -q "traced PID [0-9]*, 1 VM ($2)" "$T/$m.err"
		[ "$(info_val "$T/$m.bin.info" lost_symbols)" = 0 ]
		"$LMT" report "$T/$m.bin" > "$T/$m.txt"
		alloc_lines @jit "$T/$m.txt" > "$T/$m.lines"
	done
	cat "$T/on.lines"
	diff "$T/on.lines" "$T/off.lines"
	count_is ALLOCATIONS @jit.lua:4 "$T/on.txt" 20001
	count_is ALLOCATIONS @jit.lua:8 "$T/on.txt" 5006
	absent '^TRACE' "$T/on.txt"
	no_probes_of "$T"
}

@test "GC64 off, JIT on: compiled loops' allocations charged to their lines through the snapshots (no FR2), as with the JIT off and as GC64's" {
	jit_lines "$LJ32" "LuaJIT 2.1 GC64 off"
}

@test "OpenResty luajit2 GC64 off, JIT on: compiled loops' allocations charged to their lines through the snapshots (no FR2), as with the JIT off and as GC64's" {
	jit_lines "$LJ2_32" "OpenResty LuaJIT 2.1 GC64 off"
}

# Tarantool's older 2.1 keeps no machine code offsets in its snapshots
# (SnapShot.mcofs, lj_trace_unwind's): what its traces allocate is charged
# to the trace, as its own in-VM memprof charges it ("TRACE [N] started
# at LINE"), never to a line guessed; the interpreter's lines stay exact.
@test "Tarantool, JIT on: compiled code's events charged to their trace, said in one line; with the interpreter's, each loop's count exact" {
	local m n
	cd "$LUA_DIR"
	for m in on off; do
		"$LMT" -o "$T/$m.bin" -- tarantool -e "jit.$m()" jit.lua > "$T/$m.out" 2> "$T/$m.err"
		[ "$(cat "$T/$m.out")" = 25000 ]
		grep -q "traced PID [0-9]*, 1 VM (Tarantool 2.6 LuaJIT 2.1 GC64 off)" "$T/$m.err"
		"$LMT" report "$T/$m.bin" > "$T/$m.txt"
	done
	cat "$T/on.err"
	grep '^TRACE' "$T/off.txt" || true
	count_is ALLOCATIONS @jit.lua:4 "$T/off.txt" 20001
	count_is ALLOCATIONS @jit.lua:8 "$T/off.txt" 5002
	# JIT off: the workload's loops never compiled. Tarantool's own
	# startup code runs before -e's jit.off() and, in about 1 run of 12
	# (its hot counters are hashed by bytecode address), compiles a
	# trace of its own: what that trace allocates is charged to it, as
	# it should be, so only a trace of jit.lua is wrong here
	absent '^TRACE .* started at @jit\.lua' "$T/off.txt"
	# JIT on: each loop's events, its line's and its traces', as many
	# (whatever the traces' numbers: a startup trace may take the first)
	a() { sed -n '/^ALLOCATIONS$/,/^$/p' "$T/on.txt" | awk -v k="$1" '
		{ l = $0; if (l ~ /^TRACE \[[0-9]+\] /) sub(/^TRACE \[[0-9]+\] /, "TRACE ", l) }
		index(l, k) == 1 { s += $(NF - 3) } END { print s + 0 }'; }
	[ $(($(a "@jit.lua:4: ") + $(a "TRACE started at @jit.lua:3: "))) -eq 20001 ]
	[ $(($(a "@jit.lua:8: ") + $(a "TRACE started at @jit.lua:7: "))) -eq 5002 ]
	[ "$(a "TRACE started at @jit.lua:3: ")" -gt 0 ]
	# every event of compiled code said: the traces' (and their frees')
	n=$(grep -o 'compiled code: [0-9]* events charged to their trace' "$T/on.err" | grep -o '[0-9]*')
	[ "$n" -eq "$(awk '/^TRACE \[.*: [0-9]+ events/ { s += $(NF - 3) } END { print s }' "$T/on.txt")" ]
	no_probes_of "$T"
}

# jit_exact LJ W...: tests/lua/corpus/W.lua run by LJ with the JIT on and
# off (tests/tools/jitcmp.sh, as tests/jitexact.bats compares Debian's
# GC64 luajit): every line's count within 1% of the JIT-off run's (or 2
# events: the Lua stack's resizes), at least 99% of the JIT-off events
# with the same stack, no trace cut or refused.
jit_exact() {
	local lj=$1 w out r ok n e t
	shift
	cd "$LUA_DIR/corpus"
	for w in "$@"; do
		r=0
		out=$(LUAJIT=$lj "$BATS_TEST_DIRNAME/tools/jitcmp.sh" "$T/$w" "$w.lua") || r=$?
		echo "$w: $out"
		[ "$r" -eq 0 ]
		[[ "$out" =~ ^lines\ ([0-9]+)/([0-9]+)\ within\ 1%\;\ stacks\ ([0-9]+)/([0-9]+)\ equal ]]
		ok=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} e=${BASH_REMATCH[3]} t=${BASH_REMATCH[4]}
		[ "$n" -gt 0 ] && [ "$ok" -eq "$n" ]
		[ "$t" -gt 0 ] && [ $((100 * e)) -ge $((99 * t)) ]
		[ "$(info_val "$T/$w/on.bin.info" lost_symbols)" = 0 ]
	done
	no_probes_of "$T"
}

@test "GC64 off, JIT on: corpus helpers.lua and closures.lua (inlined calls, closures), every line and stack as with the JIT off" {
	jit_exact "$LJ32" helpers closures
}

@test "OpenResty luajit2 GC64 off, JIT on: corpus helpers.lua and closures.lua (inlined calls, closures), every line and stack as with the JIT off" {
	jit_exact "$LJ2_32" helpers closures
}
