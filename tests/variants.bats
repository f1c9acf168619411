#!/usr/bin/env bats
# Builds of other layouts, from Debian's own source (tests/variants.bash).
# LuaJIT with GC64 off is not in the layout table yet (docs/variants.md
# says what it needs): refused in one line that says what was seen.

load helpers
load variants

setup_file() {
	variant_gc64off
}

setup() {
	T="$BATS_TEST_TMPDIR"
	LJ32="$VARIANTS/gc64off/src/src/luajit"
}

@test "GC64 off, built from Debian's source: what it is (LuaJIT 2.1.0-beta3; every GC object below 4 GiB)" {
	run "$LJ32" -e 'print(jit.version, jit.arch)'
	[ "$status" -eq 0 ]
	[ "$output" = "LuaJIT 2.1.0-beta3	x64" ]
	# its objects below 4 GiB: 32-bit references hold them
	run "$LJ32" -e 'print(tostring({}))'
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^"table: 0x"[0-9a-f]{8}$ ]]
	run luajit -e 'print(tostring({}))'
	[[ ! "$output" =~ ^"table: 0x"[0-9a-f]{8}$ ]]
}

@test "GC64 off, -p: refused, the line says its version and 32-bit references" {
	"$LJ32" -e "local f = io.open('$T/ready', 'w') f:write('ready') f:close() while true do end" 3>&- &
	local pid=$!
	wait_for "$T/ready" ready
	run "$LMT" -p "$pid" -o "$T/x.bin"
	kill "$pid"
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[[ "$output" == "luamemtrace: unrecognised LuaJIT layout in PID $pid: LuaJIT is loaded but no VM matched any known variant ("*"); seen: LuaJIT 2.1.0-beta3, 32-bit references (GC64 off)" ]]
	[ ! -e "$T/x.bin" ]
	no_probes_of "$T"
}

# Without GC64 on x86-64, luaL_newstate makes its VM without lua_newstate
# (lj_state_newstate; lua_newstate refuses): the command's VM is never
# seen, and the trace says so.
@test "GC64 off, -- COMMAND: nothing traced, said last, exit 1" {
	run "$LMT" -o "$T/x.bin" -- "$LJ32" -e 'local t = {}'
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "luamemtrace: nothing traced: $LJ32 (PID "*"): no LuaJIT VM appeared (lua_newstate returned none)" ]]
	[ "$(info_val "$T/x.bin.info" vms)" = 0 ]
	no_probes_of "$T"
}
