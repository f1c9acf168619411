#!/usr/bin/env bats
# What a target (or whoever wrote the files) chooses must not turn `report`
# or the tracer's messages against the operator: a stacks companion that
# would fold into a 16 GB key, a sidecar whose scale leaves the integers, a
# FIFO planted at FILE.stacks, a process name and file names made of
# escape sequences. Caps: user/format/caps.h.

load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export S="$BATS_FILE_TMPDIR/s.bin"
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$S" -- luajit lua/alloc.lua > /dev/null
}

setup() {
	T="$BATS_TEST_TMPDIR"
}

# raw FILE...: the lines of FILE... with a raw control byte (C0 but TAB and
# newline, DEL, a C1 byte alone or UTF-8 encoded); none: status 1.
raw() {
	LC_ALL=C grep -naP '[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]' "$@"
}

# bounded CMD...: CMD with at most 512 MiB of address space; timeout only
# guards a hang (its expiry, status 124, fails the test that checks).
bounded() {
	timeout 60 prlimit --as=$((512 << 20)) -- "$@"
}

# companion FILE LUA: writes the stacks companion FILE, the bytes LUA's
# chunk returns (a string) after the magic.
companion() {
	luajit -e "
		local function uleb(n) local t = {} repeat local b = n % 128 n = (n - b) / 128
			t[#t + 1] = string.char(b + (n > 0 and 128 or 0)) until n == 0 return table.concat(t) end
		local body = (function() $2 end)()
		local f = assert(io.open('$1', 'wb')) f:write('lmtstk\1', body) f:close()"
}

@test "report: a 128 KiB companion of one 64 KiB name and a stack of 65536 references to it: the key cut to 64 KiB, said in one line, exit 3, memory bounded" {
	cp "$S" "$T/k.bin"
	# frame 1: a builtin named by 65536 'A'; stack 1: 65536 times frame 1;
	# the first event has stack 1
	companion "$T/k.bin.stacks" "
		return '\1\5' .. uleb(65536) .. string.rep('A', 65536) ..
			'\2\0' .. uleb(65536) .. string.rep('\1', 65536) ..
			'\3\1\1\4'"
	[ "$(stat -c %s "$T/k.bin.stacks")" -gt 131072 ]
	run --separate-stderr bounded "$LMT" report --folded --weight=events "$T/k.bin"
	[ "$status" -eq 3 ]
	[ "$stderr" = "luamemtrace report: warning: $T/k.bin.stacks: 1 stacks cut to their innermost 1024 frames or 65536 bytes (under a [cut] root)" ]
	# the one event of stack 1: its key the root, then what fits of the
	# innermost frame (65536 bytes less the root's 6)
	[ "$(printf '%s\n' "$output" | grep -c '^\[cut\];A')" -eq 1 ]
	[ "$(printf '%s\n' "$output" | grep '^\[cut\];A' | cut -d' ' -f1 | wc -c)" -eq $((65536 + 1)) ]
	[[ "$(printf '%s\n' "$output" | grep '^\[cut\];A')" == *"A 1" ]]
}

@test "report: a companion of 2000 frames in a stack: its innermost 1024 kept under [cut], exit 3" {
	cp "$S" "$T/f.bin"
	# frames 1..2000 named f1..f2000; a stack of them, innermost first
	companion "$T/f.bin.stacks" "
		local t = {}
		for i = 1, 2000 do t[#t + 1] = '\1\5' .. uleb(#('f' .. i)) .. 'f' .. i end
		t[#t + 1] = '\2\0' .. uleb(2000)
		for i = 1, 2000 do t[#t + 1] = uleb(i) end
		return table.concat(t) .. '\3\1\1\4'"
	run --separate-stderr bounded "$LMT" report --folded --weight=events "$T/f.bin"
	[ "$status" -eq 3 ]
	[ "$stderr" = "luamemtrace report: warning: $T/f.bin.stacks: 1 stacks cut to their innermost 1024 frames or 65536 bytes (under a [cut] root)" ]
	local want
	want="[cut];$(seq 1024 -1 1 | sed 's/^/f/' | paste -sd';') 1"
	[ "$(printf '%s\n' "$output" | grep '^\[cut\]')" = "$want" ]
}

@test "report: a companion whose distinct stacks fold to more than 256 MiB of names is refused in one line, exit 1, memory bounded" {
	cp "$S" "$T/b.bin"
	# 8 frames of 8000 bytes; 9000 stacks of 8 of them, each its own order:
	# each a 64007-byte key from 11 bytes of companion, 576 MB in all
	companion "$T/b.bin.stacks" "
		local t = {}
		for f = 1, 8 do t[#t + 1] = '\1\5' .. uleb(8000) .. string.char(96 + f):rep(8000) end
		for i = 1, 9000 do
			t[#t + 1] = '\2\0\8'
			local x = i
			for d = 1, 8 do t[#t + 1] = string.char(x % 8 + 1) x = math.floor(x / 8) end
		end
		return table.concat(t) .. '\3\1\1\4'"
	run --separate-stderr timeout 60 prlimit --as=$((1024 << 20)) -- "$LMT" report --folded "$T/b.bin"
	[ "$status" -eq 1 ]
	[ "$stderr" = "luamemtrace report: $T/b.bin.stacks: its stacks' names pass 256 MiB: refused" ]
	[ -z "$output" ]
}

@test "report: a sidecar whose scale is 1e300 (sampled: 1e-300) is refused in one line, nothing scaled, exit 0" {
	cp "$S" "$T/d.bin"
	"$LMT" report "$T/d.bin" > "$T/want.txt"
	printf 'luamemtrace stream info 1\nduration: 1.000000\nstate: complete\nduty: 5\nsampled: 1e-300\n' > "$T/d.bin.info"
	bounded "$LMT" report "$T/d.bin" > "$T/got.txt" 2> "$T/err"
	[ "$(cat "$T/err")" = "luamemtrace report: warning: $T/d.bin.info is unreadable or not a luamemtrace sidecar: ignored" ]
	diff "$T/want.txt" "$T/got.txt"
}

@test "report: a FIFO planted at FILE.stacks is not opened for reading: one line, exit 1, no hang" {
	cp "$S" "$T/p.bin"
	mkfifo "$T/p.bin.stacks"
	run --separate-stderr timeout 60 "$LMT" report --folded "$T/p.bin"
	[ "$status" -eq 1 ]
	[ "$stderr" = "luamemtrace report: $T/p.bin.stacks: not a regular file: not read" ]
	[ -z "$output" ]
}

@test "report over files named with escape sequences, C1 bytes and a newline: every name escaped, no raw control byte on stdout or stderr" {
	local n=$'x\e]0;pwned\a\xc2\x9b\x9b\ny'
	cp "$S" "$T/$n.bin"
	cp "$S" "$T/b.bin"
	printf 'luamemtrace stream info 1\nstate: running\n' > "$T/$n.bin.info"
	"$LMT" report "$T/$n.bin" "$T/b.bin" > "$T/out" 2> "$T/err" || [ "$?" -eq 3 ]
	"$LMT" report --folded "$T/$n.bin" "$T/b.bin" >> "$T/out" 2>> "$T/err" || [ "$?" -eq 3 ]
	"$LMT" report "$T/$n.bin.missing" >> "$T/out" 2>> "$T/err" || true
	# the name as util/esc.h writes it, where each message and heading has it
	local e='x\x1b]0;pwned\x07\xc2\x9b\x9b\ny'
	grep -qxF "==> $T/$e.bin <==" "$T/out"
	grep -qF "$(printf '%s' "$e" | sed 's/;/,/g');" "$T/out"
	grep -qxF "luamemtrace report: warning: $T/$e.bin.info says tracing never ended (the tracer died?): the stream may be incomplete" "$T/err"
	grep -qxF "luamemtrace report: $T/$e.bin.missing: No such file or directory" "$T/err"
	! raw "$T/out" "$T/err"
}

@test "a traced process names itself with ESC, C1 bytes and a newline (prctl): its name escaped on stderr, in the sidecar and the summary; no raw control byte" {
	cat > "$T/comm.lua" <<-'EOF'
		jit.off()
		local ffi = require "ffi"
		ffi.cdef[[int prctl(int option, const char *arg2); int fork(void);
		int waitpid(int pid, int *status, int options); void _exit(int status);]]
		ffi.C.prctl(15, "x\27]0;pw\7\194\155\155\n")
		local keep = {}
		local pid = ffi.C.fork()
		if pid == 0 then
		  for i = 1, 300 do keep[i] = {} end
		  ffi.C._exit(0)
		end
		ffi.C.waitpid(pid, nil, 0)
		for i = 1, 200 do keep[i] = {} end
	EOF
	"$LMT" -o "$T/d/" -- luajit "$T/comm.lua" > "$T/out" 2> "$T/err"
	# the child's name, as /proc has it (the kernel's comm up to its
	# newline), escaped
	grep -qE "^luamemtrace: tracing PID [0-9]+ \(x\\\\x1b\]0;pw\\\\x07\\\\xc2\\\\x9b\\\\x9b\), a child of PID [0-9]+$" "$T/err"
	local info
	info=$(ls "$T"/d/x*.info)
	grep -qxF 'comm: x\x1b]0;pw\x07\xc2\x9b\x9b' "$info"
	"$LMT" report "$T"/d/x*.bin > "$T/rep" 2>> "$T/err"
	! raw "$T/out" "$T/err" "$T/rep" "$T"/d/*.info
}
