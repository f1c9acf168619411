#!/usr/bin/env bats
# luamemtrace heap's copy-on-write copy (heap/cow.c, target/inject.c): the
# target forked once under a stop, the copy read from the child, the
# child killed and reaped by a wait4 the target makes. The target is left
# exactly as it was (its call restarted or not as without us, no child,
# not traced, running), whatever happens to the tracer: the guardian puts
# back what it held of ours. Where no fork may be made, it is said and
# the copy made the other way. tests/lua/heap_calls.lua is the target.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	[ -n "${TARGET:-}" ] && kill -9 "$TARGET" 2>/dev/null || true
	[ -n "${CG:-}" ] && rmdir "$CG" 2>/dev/null || true
}

# calls KIND [seccomp]: heap_calls.lua of KIND in the background
# ($TARGET), its stdin a fifo held open on descriptor 5, ready.
calls() {
	mkfifo "$T/in"
	luajit "$LUA_DIR/heap_calls.lua" "$1" "$T" ${2:-} < "$T/in" > "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/ready" ready
}

# clean: the target is left running (alive), traced by no one, with no child
# (a zombie is one too): waits for it a while (the guardian's part ends
# after the tracer's), then says what is not so.
clean() {
	local i s tr ch
	for i in $(seq 1 100); do
		s=$(awk '{print $3}' "/proc/$TARGET/stat")
		tr=$(awk '/^TracerPid:/ {print $2}' "/proc/$TARGET/status")
		ch=$(cat /proc/"$TARGET"/task/*/children)
		[ "$s" != T ] && [ "$s" != t ] && [ "$s" != Z ] && [ -n "$s" ] && [ "$tr" = 0 ] &&
			[ -z "$ch" ] && return 0
		sleep 0.05
	done
	echo "PID $TARGET: state $s, tracer $tr, children '$ch'" >&2
	return 1
}

# die_at AT KIND [OPTION]: a fresh target (calls KIND OPTION) and heap
# on it with the tracer killing itself at instant AT (LMT_TEST_INJ_DIE).
die_at() {
	local at=$1
	shift
	rm -f "$T/in" "$T/ready" "$T/stop"
	calls "$@"
	run env LMT_TEST_INJ_DIE="$at" "$LMT" heap -p "$TARGET"
	[ "$status" = 137 ]
}

# own_child_only: as clean, but the target's one child is its own (made
# first, a zombie: calls ... child).
own_child_only() {
	local i s ch own
	own=$(pgrep -P "$TARGET" | head -1)
	for i in $(seq 1 100); do
		s=$(awk '{print $3}' "/proc/$TARGET/stat")
		ch=$(cat /proc/"$TARGET"/task/*/children | tr -s ' ' | sed 's/ $//')
		[ "$s" != T ] && [ "$s" != t ] && [ "$s" != Z ] && [ -n "$s" ] && [ "$ch" = "$own" ] &&
			[ -n "$own" ] && return 0
		sleep 0.05
	done
	echo "PID $TARGET: state $s, children '$ch', its own '$own'" >&2
	return 1
}

# finish: ends the target (the stop file, EOF on its stdin) and waits.
finish() {
	touch "$T/stop"
	exec 5>&-
	wait "$TARGET"
	TARGET=
}

# snap_ok I: heap -p $TARGET into $T/s.I(.err): copied from a fork, the
# 300 items exact (their metatable named by the main chunk's local; by
# its slot where the chunk was stopped running, its PC not saved),
# remainder 0.
snap_ok() {
	"$LMT" heap -p "$TARGET" > "$T/s.$1" 2> "$T/s.$1.err"
	cat "$T/s.$1.err"
	grep -qE "^luamemtrace heap: PID $TARGET: stopped [0-9.]+ ms to fork a copy-on-write copy of it( \([0-9]+ forks: a copy that did not add up taken again\))?, read [0-9.]+ MB of the copy in [0-9]+ ms as it ran on, then stopped [0-9.]+ ms to reap the copy; longest stop [0-9.]+ ms$" "$T/s.$1.err"
	grep -qE '^ +300 +19200  (local Item of function .*/heap_calls\.lua:0 in main thread|stack slot 16 of main thread)$' "$T/s.$1"
	[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/s.$1")" = 0 ]
}

@test "heap, a fork's copy: a target blocked in read gets each line as without us; no child, tracer or stop left" {
	calls read
	for i in 1 2 3; do
		snap_ok "$i"
		clean
		echo "l$i" >&5
		wait_for "$T/target.out" "got l$i"
	done
	finish
	cat "$T/target.out"
	[ "$(cat "$T/target.out")" = "$(printf 'got l1\ngot l2\ngot l3\nread calls=4 bad=0')" ]
}

@test "heap, a fork's copy: a target in nanosleep, in poll, or in its own code runs on as without us (every call returns 0)" {
	for kind in sleep poll spin; do
		rm -f "$T/in" "$T/ready" "$T/stop"
		calls "$kind"
		for i in 1 2 3; do
			snap_ok "$kind.$i"
			clean
		done
		finish
		cat "$T/target.out"
		grep -qE "^$kind calls=[1-9][0-9]* bad=0$" "$T/target.out"
	done
}

# The tracer killed at each instant of a fork's copy (LMT_TEST_INJ_DIE,
# target/inject.h's points): the thread holding our registers before the
# fork (1), the fork made (2), returned (3); the copy being read, the
# target running (4); the child killed, not reaped (5). The guardian puts
# the thread's own state back, kills and reaps the child: the target,
# blocked in read, then reads the next line as if nothing happened, and
# a snapshot after is whole. It has a child of its own, a zombie all
# along: that one's status is still its own to take (only ours is
# reaped).
@test "heap, a fork's copy: the tracer killed at each instant; the guardian leaves the target as it was (its read, its own child, no other)" {
	for at in 1 2 3 4 5; do
		die_at "$at" read child
		own_child_only
		echo "after $at" >&5
		wait_for "$T/target.out" "got after $at"
		snap_ok "after.$at"
		own_child_only
		finish
		cat "$T/target.out"
		[ "$(cat "$T/target.out")" = "$(printf 'got after %s\nread calls=2 bad=0\nchild=7' "$at")" ]
	done
}

# Killed while the copy is read (4) or before the reap (5), the target
# running its own code meanwhile: the guardian's reap takes the thread's
# registers as they are then, not as they were at the fork (put back,
# those make the target crash, or its count in a register and in memory
# disagree: bad > 0).
@test "heap, a fork's copy: the tracer killed while the target runs its own code; the guardian's reap leaves it running on" {
	# three times each: registers of the fork's instant put back show
	# only where the thread then was (a count in a register)
	for at in 4 5 4 5 4 5; do
		die_at "$at" spin
		clean
		snap_ok "spin.$at"
		finish
		cat "$T/target.out"
		grep -qE '^spin calls=[1-9][0-9]* bad=0$' "$T/target.out"
	done
}

# The same with SIGCHLD blocked in the target: none is ever sent to it
# (our child has no exit signal, and never stops on its own).
@test "heap, a fork's copy: the tracer killed at each instant; no SIGCHLD reaches the target" {
	for at in 1 2 3 4 5; do
		die_at "$at" read nochld
		clean
		grep -E '^(SigPnd|ShdPnd|SigBlk):' "/proc/$TARGET/status"
		[ $(( 0x$(awk '/^SigBlk:/ {print $2}' "/proc/$TARGET/status") & 0x10000 )) != 0 ]
		[ $(( 0x$(awk '/^SigPnd:/ {print $2}' "/proc/$TARGET/status") & 0x10000 )) = 0 ]
		[ $(( 0x$(awk '/^ShdPnd:/ {print $2}' "/proc/$TARGET/status") & 0x10000 )) = 0 ]
		finish
	done
}

# A tracer that stalls with the thread holding its registers (after the
# fork): past the guardian's deadline, the guardian ends it, puts the
# thread back and continues the target.
@test "heap, a fork's copy: a tracer stalled with the target holding its registers is ended at the deadline; the target is put back" {
	calls read
	run env LMT_TEST_INJ_STALL=2 LMT_TEST_DEADLINE=300 "$LMT" heap -p "$TARGET"
	[ "$status" = 137 ]
	clean
	echo again >&5
	wait_for "$T/target.out" "got again"
	finish
	[ "$(cat "$T/target.out")" = "$(printf 'got again\nread calls=2 bad=0')" ]
}

@test "heap, a fork's copy: not made for a target under seccomp, said; the copy made the other way, exact" {
	calls read seccomp
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$TARGET/status"
	"$LMT" heap -p "$TARGET" > "$T/s" 2> "$T/s.err"
	cat "$T/s.err"
	grep -qx "luamemtrace heap: PID $TARGET: not forked for a copy-on-write copy: it runs under seccomp (mode 2)" "$T/s.err"
	grep -qE "^luamemtrace heap: PID $TARGET: copied " "$T/s.err"
	grep -qE '^ +300 +19200  local Item of function .*/heap_calls\.lua:0 in main thread$' "$T/s"
	clean
	finish
}

# A PID namespace made for the target's next child (unshare --pid, no
# fork yet): our child would be its init. No fork, said.
@test "heap, a fork's copy: not made for a target whose next child would start a PID namespace, said; the copy made the other way, exact" {
	mkfifo "$T/in"
	unshare --pid luajit "$LUA_DIR/heap_calls.lua" read "$T" < "$T/in" > "$T/target.out" 3>&- &
	TARGET=$!
	exec 5> "$T/in"
	wait_for "$T/ready" ready
	[ "$(readlink "/proc/$TARGET/ns/pid")" != "$(readlink "/proc/$TARGET/ns/pid_for_children" || true)" ]
	"$LMT" heap -p "$TARGET" > "$T/s" 2> "$T/s.err"
	cat "$T/s.err"
	grep -qx "luamemtrace heap: PID $TARGET: not forked for a copy-on-write copy: a namespace is pending for its next child" "$T/s.err"
	grep -qE '^ +300 +19200  local Item of function .*/heap_calls\.lua:0 in main thread$' "$T/s"
	clean
	finish
}

# A memory limit that leaves less room than the target's writes could
# copy while the child lives (its anonymous memory and 64 MB): no fork.
# The cgroup is made where this machine keeps the memory controller (v2,
# or v1's hierarchy); a process's charges stay where they were when it
# moves, so the new cgroup's room is its limit.
@test "heap, a fork's copy: not made where the target's cgroup lacks room for what the fork could copy, said; --no-fork said nothing" {
	calls read
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		CG=/sys/fs/cgroup/lmt-cow-$$
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
			echo +memory > /sys/fs/cgroup/cgroup.subtree_control
		mkdir "$CG"
		echo $((48 << 20)) > "$CG/memory.max"
	else
		CG=/sys/fs/cgroup/memory/lmt-cow-$$
		mkdir "$CG"
		echo $((48 << 20)) > "$CG/memory.limit_in_bytes"
	fi
	echo "$TARGET" > "$CG/cgroup.procs"
	"$LMT" heap -p "$TARGET" > "$T/s" 2> "$T/s.err"
	cat "$T/s.err"
	grep -qE "^luamemtrace heap: PID $TARGET: not forked for a copy-on-write copy: [0-9]+ MB under its cgroup's memory limit, its writes could copy [0-9]+ MB$" "$T/s.err"
	grep -qE '^ +300 +19200  local Item of function .*/heap_calls\.lua:0 in main thread$' "$T/s"
	"$LMT" heap --no-fork -p "$TARGET" > "$T/s2" 2> "$T/s2.err"
	! grep -q "fork" "$T/s2.err"
	grep -qE '^ +300 +19200  local Item of function .*/heap_calls\.lua:0 in main thread$' "$T/s2"
	clean
	finish
}
