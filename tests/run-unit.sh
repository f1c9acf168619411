#!/usr/bin/env bash
# Runs the C unit test binaries given as arguments. Each prints TAP-style
# "ok - name" / "not ok - name" lines; prints "unit: N passed, N failed".
pass=0 fail=0
for t in "$@"; do
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out" | sed "s|^|$(basename "$t"): |"
	p=$(printf '%s\n' "$out" | grep -c '^ok ')
	f=$(printf '%s\n' "$out" | grep -c '^not ok ')
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$(basename "$t"): exited $rc"; fi
	pass=$((pass + p)); fail=$((fail + f))
done
echo "unit: $pass passed, $fail failed"
[ $fail -eq 0 ]
