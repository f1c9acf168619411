# jitfold.sh (sourced by jitdiff.sh and jitorders.sh): jit_fold DIR R
# after a jitcmp.sh run whose exit status was R: its files in DIR go if it
# agreed; the caller's st becomes 1 on a disagreement, 2 on a failed run,
# and never goes down.
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
