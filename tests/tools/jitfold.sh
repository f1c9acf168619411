# jitfold.sh (sourced by jitdiff.sh and jitorders.sh, which set tools):
# jit_fold DIR R after a jitcmp.sh run whose exit status was R: its files
# in DIR go if it agreed; the caller's st becomes 1 on a disagreement, 2
# on a failed run, and never goes down.
jit_fold() {
	if [ "$2" -eq 0 ]; then
		rm -rf "${1:?}"
	elif [ "$2" -eq 1 ]; then
		[ "$st" -eq 0 ] && st=1
	else
		st=2
	fi
	return 0
}

# jit_shim WHO: the shim that fixes LuaJIT's random seed
# (tests/tools/ljseed.c) in so: LJSEED_SO, default build/ljseed.so; one
# that LD_PRELOAD would split (':' or ' ') or that is not there is said as
# WHO's, exit 2.
jit_shim() {
	so=${LJSEED_SO:-$tools/../../build/ljseed.so}
	case $so in *[:\ ]*) echo "$1: LJSEED_SO must not hold ':' or ' '"; exit 2 ;; esac
	[ -r "$so" ] || { echo "$1: $so: not built (make test and make fuzz-jit build it)"; exit 2; }
}

# jit_pinned SEED CMD...: CMD in one trace order, the same every time:
# LuaJIT's seed SEED (jit_shim's so), no address randomisation.
jit_pinned() {
	local seed=$1
	shift
	LJSEED=$seed LD_PRELOAD=$so setarch -R "$@"
}
