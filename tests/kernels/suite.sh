#!/usr/bin/env bash
# The guest suite (tests/kernels/init runs it on each kernel): the host
# suites' own tests of what the kernel decides, picked by name, run as
# they run on the host. One bats run, one plan.
cd "$(dirname "$0")/../.." || exit 1
tests=(
	# tracer.bats: exact per-line counts, -- COMMAND and -p, the JIT
	'-- CMD: exact event counts per chunk:line \(jit off\)'
	'-- CMD: chunk names, C function names, INTERNAL frees'
	'-p: attach to a waiting process, exact counts, Ctrl-C ends it'
	'JIT on: per-line counts equal to the JIT-off run'
	'JIT on: sunk tables made at a side exit'
	'a C function by the name Lua gives it'
	'the stream follows the format'
	'traced output is the same as untraced output'
	'SIGKILL of the tracer: target runs on, no probe left'
	'one VM per thread \(sysbench-style\)'
	# system.bats: a forked child, several processes, --all
	'-o DIR -- a program that forks'
	'-p A,B -o DIR: one tracer, a stream per process'
	'--all --exe NAME: running and later processes of that name traced'
	# faults.bats: never a process left stopped, --no-loss
	'a traced process forks: the child.s allocations are not in the stream'
	'--no-loss: a consumer stopped for a second'
	'a C module loaded just before the exit'
	# duty.bats: the links each kernel has
	'--duty 20 over 4 s, perf links'
	# hosts.bats: nginx with OpenResty's Lua module under load
	'nginx \+ OpenResty.s Lua module: master and 2 workers under wrk'
)
# stacks.bats, where the kernel's verifier takes the stack walk (6.1's
# does not: tests/kernels/guest.bats says what it gets there).
case $(uname -r) in
6.1.*) tests+=('6.1: --stacks refused') ;;
*) tests+=(
	'stacks, JIT off: exact stacks and counts of every chain'
	'stacks, JIT on: the same stacks through compiled code'
	'stacks match LuaJIT.s own debug.traceback'
	# fnames.bats: names read before the process is gone (exit())
	'frame names of a process that exits at once') ;;
esac
tests+=('--check: the paths this kernel takes' 'heap on Debian.s kernel: copied while the target ran'
	'heap on Debian.s kernel: a heap whose mapping grows' 'heap on Debian.s kernel: a process.s own page table entries'
	# heap_cow.bats: the fork's copy, the target's call as without us,
	# and the guardian's part, on this kernel's ptrace
	'heap, a fork.s copy: a target blocked in read' 'heap, a fork.s copy: a target in nanosleep'
	'heap, a fork.s copy: the tracer killed at each instant' 'heap, a fork.s copy: a tracer stalled'
	'heap, a fork.s copy: not made for a target under seccomp'
	# variants.bats: Tarantool (its fork's layout, GC64 off) on this kernel
	'Tarantool, -p: ' 'Tarantool, -- COMMAND: ')
re=$(IFS='|'; echo "^(${tests[*]})")
exec bats --tap -f "$re" tests/tracer.bats tests/stacks.bats tests/fnames.bats tests/system.bats \
	tests/faults.bats tests/duty.bats tests/hosts.bats tests/variants.bats tests/heap_cow.bats \
	tests/kernels/guest.bats
