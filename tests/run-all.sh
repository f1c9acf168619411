#!/usr/bin/env bash
# The README's test command: C unit tests, then every bats suite. Ends with
# the plain total "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
pass=0 fail=0

out=$(bash tests/run-unit.sh "$@" 2>&1)
printf '%s\n' "$out"
line=$(printf '%s\n' "$out" | tail -1)
p=$(echo "$line" | sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(echo "$line" | sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1}))

tap=$(bats --tap tests/*.bats 2>&1)
printf '%s\n' "$tap"
p=$(printf '%s\n' "$tap" | grep -c '^ok ')
f=$(printf '%s\n' "$tap" | grep -c '^not ok ')
plan=$(printf '%s\n' "$tap" | sed -n 's/^1\.\.\([0-9]*\)$/\1/p' | head -1)
# A suite that died before reporting every test counts the rest as failed.
if [ -n "$plan" ] && [ $((p + f)) -lt "$plan" ]; then f=$((plan - p)); fi
[ -z "$plan" ] && f=$((f + 1))
pass=$((pass + p)); fail=$((fail + f))

# Debian's 6.1 and 6.12 kernels under QEMU, the guest suite in each
# (tests/kernels). LMT_NO_KERNELS=1 (by hand, between runs of the host
# suites) leaves them out, and says so.
if [ "${LMT_NO_KERNELS:-}" = 1 ]; then
	echo "# kernel guests not run (LMT_NO_KERNELS=1)"
else
	tap=$(bash tests/kernels/run.sh 2>&1)
	printf '%s\n' "$tap"
	p=$(printf '%s\n' "$tap" | grep -c '^ok ')
	f=$(printf '%s\n' "$tap" | grep -c '^not ok ')
	pass=$((pass + p)); fail=$((fail + f))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
