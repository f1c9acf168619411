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

# add FILE...: the file at its own path, and (for ELF files) every
# library ldd names; symlinks copied as links with their targets.
add() {
	local f l
	for f in "$@"; do
		[ -e "$f" ] || { echo "mkroot: no $f" >&2; exit 1; }
		# its directory without links (/bin is /usr/bin here and there)
		f="$(realpath "$(dirname "$f")")/$(basename "$f")"
		mkdir -p "$R$(dirname "$f")"
		cp -a "$f" "$R$f"
		if [ -L "$f" ]; then add "$(realpath "$f")"; continue; fi
		if [ -f "$f" ] && head -c4 "$f" | grep -q ELF; then
			for l in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
				[ -e "$R$l" ] || add "$l"
			done
		fi
	done
}

# Commands the guest suite and bats use, as the host has them.
cmds="bash bats cat cp mv rm ln ls mkdir rmdir mktemp touch chmod chown
	head tail sort uniq paste cut tr wc seq sleep date env tee
	basename dirname realpath readlink stat od dd truncate yes nproc id expr
	grep sed awk mawk find xargs cmp diff ps pgrep pkill kill timeout
	setsid unshare prlimit flock mount umount nsenter chroot
	luajit bpftool wrk curl nginx"
for c in $cmds; do
	p=$(type -P "$c") || { echo "mkroot: no command $c here" >&2; exit 1; }
	add "$p"
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
for b in mpdump host collapse lmtmod.so; do
	[ -e "$top/build/$b" ] && cp "$top/build/$b" "$R/lmt/build/"
done
cp -r "$top/tests" "$R/lmt/"
add /usr/lib/x86_64-linux-gnu/libcapstone.so.4 2>/dev/null || true
add "$top/luamemtrace" >/dev/null; rm -rf "${R:?}$top"
add "$top/build/host" >/dev/null 2>&1 || true; rm -rf "${R:?}$top"
cp "$top/tests/kernels/init" "$R/init"
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet) > "$out"
