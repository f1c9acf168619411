#!/usr/bin/env bash
# mkroot.sh OUT.cpio: the initramfs the kernel guests boot (tests/kernels/
# run.sh): busybox for /init, the host's own bash, bats, coreutils and
# the programs the guest suite runs (luajit, nginx with the Lua module,
# wrk, curl, bpftool), each with the libraries ldd names, at the host's
# paths; the built tracer, its test helpers and tests/ under /lmt.
# Everything comes from this machine: the guest runs what the host suite
# runs, on another kernel.
set -euo pipefail
out=$(realpath -m "$1")
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$(mktemp -d)
trap 'rm -rf "$R"' EXIT
# Debian's merged /usr.
mkdir -p "$R/usr/bin" "$R/usr/sbin" "$R/usr/lib" "$R/usr/lib64"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$R/$d"; done

# add FILE...: the file at its own path (its directory without links:
# /bin is /usr/bin here and there), symlinks as links with their targets;
# ELF files are listed for the libraries ldd names (libs, at the end).
declare -A realdir
elfs=()
add() {
	local f d
	for f in "$@"; do
		[ -e "$f" ] || { echo "mkroot: no $f" >&2; exit 1; }
		d=${f%/*}
		[ -n "${realdir[$d]:-}" ] || realdir[$d]=$(realpath "${d:-/}")
		f="${realdir[$d]%/}/${f##*/}"
		[ -e "$R$f" ] || [ -L "$R$f" ] && continue
		mkdir -p "$R${f%/*}"
		cp -a "$f" "$R$f"
		if [ -L "$f" ]; then
			# its target as the link names it: a chain of links
			# (/usr/bin/awk, /etc/alternatives/awk) kept whole
			local t
			t=$(readlink "$f")
			[[ "$t" == /* ]] || t="${f%/*}/$t"
			add "$t"
		elif [ -f "$f" ] && [ -x "$f" ] || [[ "$f" == *.so* ]]; then
			elfs+=("$f")
		fi
	done
}

# libs: every library ldd names for the files added (one ldd run).
libs() {
	local l
	elfs=()
	for l in $(ldd "$@" 2>/dev/null | grep -o '/[^ ]*' | grep -v ':$' | sort -u); do
		add "$l"
	done
}

# Commands the guest suite and bats use, as the host has them.
cmds="bash bats cat cp mv rm ln ls mkdir rmdir mktemp touch chmod chown
	head tail sort uniq paste cut tr wc seq sleep date env tee
	basename dirname realpath readlink stat od dd truncate yes nproc id expr
	grep sed awk mawk find xargs cmp diff ps pgrep pkill kill timeout
	setsid unshare prlimit flock mount umount nsenter chroot ss gzip
	luajit bpftool wrk curl nginx tarantool"
for c in $cmds; do
	p=$(type -P "$c") || { echo "mkroot: no command $c here" >&2; exit 1; }
	add "$p"
done
# Whole packages of small commands the suites and bats call.
for pkg in coreutils procps findutils diffutils util-linux; do
	for f in $(dpkg -L "$pkg" | grep -E '^/usr/s?bin/|^/s?bin/'); do
		[ -f "$f" ] && add "$f"
	done
done
add /usr/lib/bats-core /usr/libexec/bats-core
add /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2
# nginx's Lua module and OpenResty's luajit2, where the host has them
# (tests/hosts.bash unpacks them; the guest suite says if they are absent).
for f in /usr/lib/nginx/modules/ndk_http_module.so \
	/usr/lib/nginx/modules/ngx_http_lua_module.so; do
	[ -e "$f" ] && add "$f"
done
add /etc/nginx/mime.types 2>/dev/null || true
# OpenResty's Lua module and libluajit2 as tests/hosts.bash unpacks them
# (run.sh unpacks them first), at the guest's path of build/.
if [ -d "$top/build/hosts/root" ]; then
	mkdir -p "$R/lmt/build/hosts"
	cp -a "$top/build/hosts/root" "$R/lmt/build/hosts/"
	for l in $(LD_LIBRARY_PATH="$top/build/hosts/root/usr/lib/x86_64-linux-gnu" ldd \
			"$top"/build/hosts/root/usr/lib/x86_64-linux-gnu/*.so* \
			"$top"/build/hosts/root/usr/lib/nginx/modules/*.so 2>/dev/null |
			grep -o '/[^ ]*' | grep -v ":$\|^$top" | sort -u); do
		add "$l"
	done
fi
mkdir -p "$R/etc" "$R/var/lib/nginx" "$R/var/log/nginx" "$R/run"
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n' > "$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\nwww-data:x:33:\n' > "$R/etc/group"
echo 'hosts: files' > "$R/etc/nsswitch.conf"
echo '127.0.0.1 localhost' > "$R/etc/hosts"

# busybox for /init and the commands the host copies do not cover.
cp /bin/busybox "$R/usr/sbin/busybox"
for a in sh mount poweroff ip hostname dmesg insmod; do
	[ -e "$R/usr/bin/$a" ] || [ -e "$R/usr/sbin/$a" ] || ln -s busybox "$R/usr/sbin/$a"
done

# The tracer, its test helpers, the suites.
mkdir -p "$R/lmt/build"
cp "$top/luamemtrace" "$R/lmt/"
for b in mpdump host collapse lmtmod.so rusage ptcheck; do
	[ -e "$top/build/$b" ] && cp "$top/build/$b" "$R/lmt/build/"
done
cp -r "$top/tests" "$R/lmt/"
# The GC64-off luajits tests/variants.bats built, if they are (static but
# libc): the guest's variants.bats finds them built.
for b in gc64off lj2gc64off; do
	v=build/variants/$b/src/src/luajit
	if [ -x "$top/$v" ]; then
		mkdir -p "$R/lmt/${v%/*}" && cp "$top/$v" "$R/lmt/$v" && libs "${elfs[@]}" "$top/$v"
	fi
done
# Their libraries, and those of everything added.
libs "${elfs[@]}" "$top/luamemtrace" "$top"/build/host "$top"/build/lmtmod.so
libs "${elfs[@]}"
cp "$top/tests/kernels/init" "$R/init"
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet) > "$out"
