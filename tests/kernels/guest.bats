#!/usr/bin/env bats
# Guest-only tests (tests/kernels/suite.sh adds them): what a kernel's
# limits make the tracer say, on the kernels that have them.

load ../helpers

bats_require_minimum_version 1.5.0
# helpers.bash names them from its own suites' directory, one above.
LMT="$BATS_TEST_DIRNAME/../../luamemtrace"
LUA_DIR="$BATS_TEST_DIRNAME/../lua"

setup() {
	T="$BATS_TEST_TMPDIR"
}

@test "--check: the paths this kernel takes, and the BPF object loads" {
	run "$LMT" --check
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "kernel $(uname -r): supported (6.1 or later, BTF)" ]
	case $(uname -r) in
	6.1.*)
		[[ "$output" == *"reads of the target:  through bpf_probe_read_user"* ]]
		[[ "$output" == *"allocator probes:     perf links"* ]]
		[[ "$output" == *"--duty windows:       perf links"* ]]
		[[ "$output" == *"a forked child:       stops itself"* ]] ;;
	6.12.*)
		[[ "$output" == *"reads of the target:  through its page tables"* ]]
		[[ "$output" == *"allocator probes:     perf links"* ]]
		[[ "$output" == *"--duty windows:       uprobe_multi links"* ]]
		[[ "$output" == *"a forked child:       stops itself"* ]] ;;
	esac
	[[ "$output" == *"the BPF object:       loads (alloc_enter_compat)"* ]]
}

# Run on 6.1 only (tests/kernels/suite.sh): 6.12's verifier takes the walk.
@test "6.1: --stacks refused in one line naming the kernel; nothing created, the command not run" {
	cd "$LUA_DIR"
	run "$LMT" --stacks -o "$T/s.bin" -- luajit alloc.lua
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "luamemtrace: --stacks: this kernel's verifier refuses the stack walk's programs ("*"kernel $(uname -r): 6.12 takes them); trace without --stacks" ]]
	[ ! -e "$T/s.bin" ]
}

# On a Debian kernel (soft-dirty bits), without a fork (--no-fork; the
# fork's copy: heap_cow.bats, run here too), the target is copied while it runs,
# then stopped only to read again the pages it wrote meanwhile (and those
# it wrote outside the copy); the copy is then made from that image as it
# runs on, what the image lacked checked unwritten since the stop
# (user/heap/capture.c). The snapshot is still one instant: remainder 0
# and the items exact, on a target that allocates and writes all along,
# whichever way each copy went; and at least one of the four went the
# image's way (a copy that read pages written since the stop is taken
# again, then stopped: said).
@test "heap on Debian's kernel: copied while the target ran, the pages written meanwhile read again stopped; one instant (--no-fork)" {
	luajit "$LUA_DIR/heap_churn.lua" 300 0 "$T/c.ready" 3>&- &
	local pid=$! i
	wait_for "$T/c.ready" ready
	for i in 1 2 3 4; do
		"$LMT" heap --no-fork -p "$pid" > "$T/c.$i" 2> "$T/c.$i.err" || echo "rc $?" >> "$T/c.$i"
	done
	kill "$pid"
	for i in 1 2 3 4; do
		cat "$T/c.$i.err"
		grep -qE "^luamemtrace heap: PID $pid: copied while it ran \([0-9]+ ms(; [0-9]+ passes read again [0-9]+ pages it wrote, stopped [0-9.]+ ms in all to find them)?\), then stopped [0-9.]+ ms.*: [0-9]+ of [0-9]+ pages written meanwhile, read again, and [0-9]+ outside the copy \([0-9]+ reads\); (copied from that image as it ran on \([0-9]+ ms, [0-9]+ reads of it checked unwritten since\)( \([0-9]+ pages written since an earlier stop: taken again\))?|the copies from the image read [0-9]+ pages written since: copied stopped); longest stop [0-9.]+ ms$" "$T/c.$i.err"
		[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/c.$i")" = 0 ]
		! grep -q '^incomplete\|^rc ' "$T/c.$i"
		grep -qE '^ +300 +19200  package\.loaded\["app\.cache"\]\.Item$' "$T/c.$i"
	done
	grep -l 'copied from that image as it ran on' "$T"/c.?.err
}

# A mapping that is new or grew since the soft-dirty bits were cleared is
# written whole for pagemap (the kernel's VM_SOFTDIRTY); LuaJIT's
# allocator maps each large string next to the last, so such a heap had
# every kept page of that mapping read again at each pass and at the stop.
# The pages' own entries tell which were written (bpf/ptscan.bpf.c): here
# every snapshot has pages pagemap called written that their entries say
# were not, and is still one instant (remainder 0, the items exact);
# without them (LMT_NO_PTSCAN=1) pagemap's word alone, said.
@test "heap on Debian's kernel: a heap whose mapping grows while copied: pages pagemap calls written read by their own entries; one instant" {
	luajit "$LUA_DIR/heap_grow.lua" 300 "$T/g.ready" 3>&- &
	local pid=$! i n
	wait_for "$T/g.ready" ready
	for i in 1 2 3; do
		"$LMT" heap --no-fork -p "$pid" > "$T/g.$i" 2> "$T/g.$i.err" || echo "rc $?" >> "$T/g.$i"
	done
	LMT_NO_PTSCAN=1 "$LMT" heap --no-fork -p "$pid" > "$T/g.off" 2> "$T/g.off.err" || echo "rc $?" >> "$T/g.off"
	kill "$pid"
	for i in 1 2 3 off; do
		cat "$T/g.$i.err"
		[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/g.$i")" = 0 ]
		! grep -q '^incomplete\|^rc ' "$T/g.$i"
		grep -qE '^ +300 +19200  package\.loaded\["app\.cache"\]\.Item$' "$T/g.$i"
	done
	for i in 1 2 3; do
		n=$(sed -n 's/.* (\([0-9]*\) pages pagemap called written, of mappings new or grown, unwritten by their own entries): .*/\1/p' "$T/g.$i.err")
		[ "${n:-0}" -gt 0 ]
	done
	grep -q "then stopped [0-9.]* ms.* (pagemap's word alone: LMT_NO_PTSCAN=1): " "$T/g.off.err"
}

# The same reading on pages whose state is known (tests/tools/ptcheck.c):
# page 4, written since the clear and write-protected again by a fork,
# keeps its soft-dirty bit: no claim.
@test "heap on Debian's kernel: a process's own page table entries read: write-protected and not soft-dirty since the clear, unwritten" {
	run --separate-stderr "$BATS_TEST_DIRNAME/../../build/ptcheck"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "sd 00110100 3 claimed" ]
}
