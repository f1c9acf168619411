#!/usr/bin/env bats
# Compiled code charged as the interpreter charges it (issue 44): each
# handler workload of tests/lua/corpus/ and the random programs of
# tests/tools/luagen.lua traced with the JIT on and off
# (tests/tools/jitcmp.sh): every Lua line's allocating events with the
# JIT on within 1% of the JIT-off count, and the JIT-off stacks for at
# least 99% of events.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# corpus W MISSES PERMILLE: tests/lua/corpus/W.lua compared; at most
# MISSES lines outside 1%, and at least PERMILLE of 1000 events with the
# JIT-off stack. A workload not yet exact has its measured floor here
# (docs/limits.md says which lines and why); an exact one has 0 990.
corpus() {
	cd "$LUA_DIR/corpus"
	compare "$@"
}

# compare W MISSES PERMILLE: the same for W.lua of the current directory.
compare() {
	local r=0 ok n e t out
	out=$("$BATS_TEST_DIRNAME/tools/jitcmp.sh" "$T" "$1.lua") || r=$?
	echo "$out"
	[ "$r" -le 1 ]
	[[ "$out" =~ ^lines\ ([0-9]+)/([0-9]+)\ within\ 1%\;\ stacks\ ([0-9]+)/([0-9]+)\ equal ]]
	ok=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} e=${BASH_REMATCH[3]} t=${BASH_REMATCH[4]}
	[ "$n" -gt 0 ] && [ "$t" -gt 0 ]
	[ $((n - ok)) -le "$2" ]
	[ $((1000 * e)) -ge $(($3 * t)) ]
	if [ "$2" -eq 0 ] && [ "$3" -ge 990 ]; then [ "$r" -eq 0 ]; fi
}

@test "JIT exact, corpus: closures made per request, calls through them" {
	corpus closures 0 990
}

@test "JIT exact, corpus: coroutines (producer and consumer, resume/yield)" {
	corpus coroutines 0 990
}

@test "JIT exact, corpus: side traces (branches at different rates)" {
	corpus sidetraces 0 990
}

@test "JIT exact, corpus: trace stitching (gsub with a function, os.date, tostring)" {
	corpus stitch 0 990
}

@test "JIT exact, corpus: pcall/xpcall/error around a constructor" {
	corpus errors 0 990
}

# ffi: lines 13 and 16 apart, legitimately: ffi.new("type") parses its
# type at every call in the interpreter (the C parser's buffer, made and
# freed), once when recording with the JIT; those are its 40% of events
# (docs/limits.md). 604 of 1000 on 6 runs of 6: held at 2, 600.
@test "JIT exact, corpus: FFI buffers and structs, ffi.string" {
	corpus ffi 2 600
}

@test "JIT exact, corpus: small inlined helpers returning tables, a ring of records" {
	corpus helpers 0 990
}

# methods: line 7 apart, legitimately: the JIT sinks Buf.new's table
# (the table and its hash part not made), 22% of its events; 780 of 1000
# on 6 runs of 6. Line 19's strings are interned or not as the GC ran
# (a line more, sometimes): held at 2, 770.
@test "JIT exact, corpus: methods through metatables (__index, __call, __concat, __tostring)" {
	corpus methods 2 770
}

# text: line 14 may be apart, legitimately: its two interned strings are
# made again only after the collector freed them, as often as it ran,
# which differs with the JIT (4 to 82 events, JIT on or off). Stacks
# 99.95% on 10 runs.
@test "JIT exact, corpus: gmatch, gsub, string.format, table.concat" {
	corpus text 1 990
}

# varargs: line 7 apart, legitimately: the JIT makes { level, n, ... } a
# TNEW of 4 array slots and two NEWREFs (the table, then its array part
# allocated and reallocated), the interpreter a TNEW and TSETM's array:
# 3 events a call against 2, at that line with that stack.
@test "JIT exact, corpus: varargs (select, unpack, forwarding)" {
	corpus varargs 1 990
}

# Programs of tests/tools/luagen.lua (the seed in the name) on which the
# differential run found JIT on and off to disagree, kept as they were
# generated (tests/lua/jitdiff/). Which traces the JIT makes first varies
# between runs (a case shows in some runs only): each was measured on 10
# runs; exact on all but where a floor says (docs/limits.md).
# Seed 1: every line on 10 runs of 10, stacks 99.0% on 1 (a builtin's
# frame): held at 98%.
@test "JIT exact, differential regressions: a return from an inlined callee into its caller's allocation, a pcall'd function's entry (seed 1)" {
	cd "$LUA_DIR/jitdiff"
	compare g1 0 980
}

@test "JIT exact, differential regressions: a metamethod (__index) the trace inlined, walked into from its table access (seed 2)" {
	cd "$LUA_DIR/jitdiff"
	compare g2 0 990
}

@test "JIT exact, differential regressions: a builtin compiled into the trace keeps its frame (seed 3)" {
	cd "$LUA_DIR/jitdiff"
	compare g3 0 990
}

# Seed 7: one line may be off by the VM's string buffer (g->tmpbuf), which
# the collector halves (lj_buf_shrink, INTERNAL) and the next concatenation
# grows back to 16 KiB: with the JIT on the collector runs at other times
# (~135 shrinks against 3), so a concatenation line gets more of those
# regrowths (measured: 1 run in 6, +13 to +100 events of 16384 bytes at
# one of lines 7, 8 or 39). Every stack still has its JIT-off count.
@test "JIT exact, differential regressions: a stretch between two snapshots at one PC (an inlined function called again) runs its way round (seed 7)" {
	cd "$LUA_DIR/jitdiff"
	compare g7 1 990
}

@test "JIT exact, differential regressions: a builtin the IR guards on once keeps its frame when called again in a later stretch (seed 8)" {
	cd "$LUA_DIR/jitdiff"
	compare g8 0 990
}

@test "JIT exact, differential regressions: an __index metamethod's allocations on its own lines, a caller's after an inlined callee's return (seed 9)" {
	cd "$LUA_DIR/jitdiff"
	compare g9 0 990
}

# Seed 11: 77% of its stacks in 2 runs of 20 at an earlier stop; exact
# on 40 runs and in each of the 19 orders the JIT made its traces in over
# 300 seeds of its random generator (the traces differ from run to run:
# LuaJIT draws a random penalty when a trace aborts).
@test "JIT exact, differential regressions: a builtin called after a function read from an upvalue keeps its frame (seed 11)" {
	cd "$LUA_DIR/jitdiff"
	compare g11 0 990
}

# Seed 24: as seed 7, a string.format line (35 or 36) may get the string
# buffer's regrowths (+22 events of 2000 in 1 run of 3): held at 1, 990.
@test "JIT exact, differential regressions: string.format lines beside the collector's shrinking of the string buffer (seed 24)" {
	cd "$LUA_DIR/jitdiff"
	compare g24 1 990
}

# Seed 62: 98.0% of its stacks before (a call whose callee the IR did not
# guard, a closure read from an upvalue, taken for the function the IR
# guards next, which it calls: f2's frame lost under f4), 100% on 6 runs.
# Then 98.1% in 1 run of ~140 (CI's): a trace returning into pcall's C
# frame ends at a snapshot whose PC is a C function's, inside GG_State,
# and the scan back from it took other words for a prototype's header
# (test_forged's test_nopc); none in 300 runs since.
@test "JIT exact, differential regressions: a call the IR did not guard, whose callee calls the one it guards, keeps both frames (seed 62)" {
	cd "$LUA_DIR/jitdiff"
	compare g62 0 990
}

# Seed 147: in about 1 run of 3 (every run with address randomisation
# off) the trace that runs f2 (under m2's __index) ends at the entry of a
# function with a trace of its own, and string.format's events at line
# 20 lost their builtin frame (3.2% of its events): that last snapshot
# did not end the stretch. Now it does, at the call whose return PC the
# snapshot's frame has as its link (an earlier call of the same function
# from the same slot is not it: test_forged's test_entry).
@test "JIT exact, differential regressions: a trace that links to another at a function's entry, string.format before it (seed 147)" {
	cd "$LUA_DIR/jitdiff"
	compare g147 0 990
}

# Each in one trace order, the same every run (JITDIFF_PIN): a program
# whose string buffer the collector may shrink between two of its lines
# (seeds 7 and 24 above) would otherwise pass or fail by when it runs;
# make fuzz-jit runs many more programs, and every order of the kept ones.
@test "JIT exact, differential: fresh programs from seeds 4 5 6 10 12, each in one trace order (make fuzz runs many more)" {
	local s
	for s in 4 5 6 10 12; do
		JITDIFF_PIN=1 "$BATS_TEST_DIRNAME/tools/jitdiff.sh" "$T" "$s" "$s"
	done
}
