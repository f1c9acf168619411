#!/usr/bin/env bash
# run.sh [-k SERIES]... [-r suite|bench|shell] [-c CMD]: boots Debian's
# own kernel packages (the newest linux-image-SERIES*-cloud-amd64-unsigned
# in the archive; SERIES 6.1 and 6.12 by default) under QEMU's software
# emulation with the initramfs of mkroot.sh, and prints what the guest
# printed, each line of a suite's TAP prefixed by the kernel's release.
# The packages are fetched with apt-get download into build/kernels/.
# LMT_GUEST_MB: the guest's memory (3072 MiB; make bench-heap-guest: more),
# LMT_GUEST_TIMEOUT: its hang guard in seconds (1500).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
K="$top/build/kernels"
series=() run=suite cmd=
while getopts k:r:c: o; do
	case $o in
	k) series+=("$OPTARG") ;;
	r) run=$OPTARG ;;
	c) cmd=$OPTARG ;;
	*) exit 2 ;;
	esac
done
[ ${#series[@]} -gt 0 ] || series=(6.1 6.12)
mkdir -p "$K"

# kernel SERIES: the path of the newest such kernel's vmlinuz, fetched
# and unpacked once.
kernel() {
	local s=$1 pat pkg d
	case $s in
	6.1) pat='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
	*) pat="^linux-image-${s//./\\.}\\.[0-9]+\\+deb[0-9]+-cloud-amd64-unsigned\$" ;;
	esac
	pkg=$(apt-cache pkgnames linux-image- | grep -E "$pat" | sort -V | tail -1)
	[ -n "$pkg" ] || { echo "no Debian package for kernel $s (apt-get update?)" >&2; return 1; }
	d="$K/$pkg"
	if [ ! -e "$d/vmlinuz" ]; then
		rm -rf "$d" && mkdir -p "$d"
		(cd "$d" && apt-get download -q "$pkg" > /dev/null 2>&1 && dpkg-deb -x ./*.deb x &&
		 cp x/boot/vmlinuz-* vmlinuz && rm -rf x ./*.deb) ||
			{ echo "cannot fetch $pkg" >&2; return 1; }
	fi
	echo "$d/vmlinuz"
}

root="$K/root.cpio"
# LMT_GUEST_ROOT=keep (by hand, between boots of one build): the last root.
if [ "${LMT_GUEST_ROOT:-}" != keep ] || [ ! -e "$root" ]; then
# nginx's Lua module for the guest's hosts test, as the host suite has it.
(BATS_TEST_DIRNAME="$top/tests"; . "$top/tests/hosts.bash"; hosts_unpack) ||
	echo "# cannot unpack OpenResty's Lua module: the guests' nginx test will fail"
bash "$top/tests/kernels/mkroot.sh" "$root" || exit 1
fi
rc=0
for s in "${series[@]}"; do
	vm=$(kernel "$s") || { echo "not ok 1 kernel $s: no kernel to boot"; rc=1; continue; }
	log=$(mktemp) con=$(mktemp)
	append="console=ttyS0 panic=-1 quiet lmt.run=$run"
	[ -n "$cmd" ] && append="$append lmt.cmd=$(printf '%s' "$cmd" | base64 -w0)"
	# A hang guard, not a timing: a guest that never ends is a failure.
	# One host thread for both vCPUs (thread=single): with a thread each
	# (multi), the guest kernel's own code patching (a static key's
	# text_poke_bp, as a BPF program's attach flips one) was seen twice to
	# leave another vCPU running the patch's int3 after it was done:
	# "Oops: int3" in __schedule, a panic mid-suite (6.12, two fresh-clone
	# runs of about eight).
	timeout "${LMT_GUEST_TIMEOUT:-1500}" qemu-system-x86_64 \
		-accel "tcg,thread=${LMT_GUEST_TCG_THREAD:-single}" -smp 2 \
		-m "${LMT_GUEST_MB:-3072}" \
		-cpu max,la57=off -nographic -no-reboot -monitor none \
		-kernel "$vm" -initrd "$root" -append "$append" \
		-serial "file:$con" -serial "file:$log" > /dev/null 2>&1
	st=$?
	rel=$(sed -n 's/^LMT-GUEST-BEGIN //p' "$log" | tr -d '\r')
	if [ -z "$rel" ]; then
		echo "not ok 1 kernel $s: the guest did not start the suite (qemu status $st)"
		tail -30 "$con"
		rc=1
	else
		tr -d '\r' < "$log" | sed -e '/^LMT-GUEST-/d' |
			sed -E "s/^(ok|not ok) ([0-9]+) /\\1 \\2 [$rel] /"
		# A guest that died before every test reported: the rest failed.
		if [ "$run" = suite ]; then
			plan=$(tr -d '\r' < "$log" | sed -n 's/^1\.\.\([0-9]*\)$/\1/p' | head -1)
			got=$(tr -d '\r' < "$log" | grep -cE '^(ok|not ok) ')
			if [ -z "$plan" ] || [ "$got" -lt "$plan" ]; then
				echo "not ok 0 [$rel] the guest suite ended after $got of ${plan:-?} tests"
				# what the kernel said last (a panic, an oops, init gone)
				tr -d '\r' < "$con" | tail -40 | sed 's/^/# console: /'
				rc=1
			fi
		fi
		grep -q '^LMT-GUEST-END 0' "$log" || rc=1
		[ $st -eq 0 ] || { echo "# qemu ended with status $st"; rc=1; }
	fi
	rm -f "$log" "$con"
done
exit $rc
