# LuaJIT builds of other layouts, built in the tests from Debian's own
# source package (tests/variants.bats), kept in build/variants (a build
# takes ~1 min on 2 busy cores; once per clone).

VARIANTS="${VARIANTS_DIR:-$BATS_TEST_DIRNAME/../build/variants}"

# variant_source NAME SRCPKG: Debian's source package SRCPKG unpacked in
# $VARIANTS/NAME/src (apt-get source, through a private apt configuration
# holding one deb-src line: the machine's own sources, lists and caches
# stay as they are), once. The log: $VARIANTS/NAME.log.
variant_source() {
	local d=$VARIANTS/$1 log=$VARIANTS/$1.log pkg=$2
	local -a a
	[ -e "$d/src/.lmt-unpacked" ] && return 0
	rm -rf "$d"
	mkdir -p "$d/apt/lists/partial" "$d/apt/cache/archives/partial" "$d/dl"
	. /etc/os-release
	echo "deb-src http://deb.debian.org/debian $VERSION_CODENAME main" > "$d/apt/sources.list"
	a=(-o "Dir::Etc::SourceList=$d/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	   -o "Dir::State::Lists=$d/apt/lists" -o "Dir::Cache=$d/apt/cache")
	{ apt-get "${a[@]}" update &&
	  (cd "$d/dl" && apt-get "${a[@]}" source --download-only "$pkg") &&
	  dpkg-source -x "$d"/dl/"$pkg"_*.dsc "$d/src" && rm -rf "$d/dl" &&
	  touch "$d/src/.lmt-unpacked"; } > "$log" 2>&1 || {
		tail -20 "$log"
		return 1
	}
}

# variant_build NAME SRCPKG: variant_source's tree built with
# LUAJIT_DISABLE_GC64 (32-bit GC references, as Tarantool's fork and older
# OpenResty builds) in $VARIANTS/NAME; only the luajit executable
# ($VARIANTS/NAME/src/src/luajit, LuaJIT statically linked, as Debian's).
# A build takes ~1 min on 2 busy cores; once per clone.
variant_build() {
	local d=$VARIANTS/$1 log=$VARIANTS/$1.log
	[ -x "$d/src/src/luajit" ] && return 0
	variant_source "$1" "$2" || return 1
	make -C "$d/src/src" -j2 BUILDMODE=static XCFLAGS=-DLUAJIT_DISABLE_GC64 luajit >> "$log" 2>&1 || {
		tail -20 "$log"
		return 1
	}
	[ -x "$d/src/src/luajit" ]
}

# variant_gc64off: upstream LuaJIT 2.1 (Debian's luajit) with GC64 off.
variant_gc64off() {
	variant_build gc64off luajit
}

# variant_lj2gc64off: OpenResty's luajit2 (Debian's luajit2, the source
# of the libluajit2-5.1-2 nginx's Lua module loads) with GC64 off, as older
# OpenResty, Kong and APISIX deployments run it.
variant_lj2gc64off() {
	variant_build lj2gc64off luajit2
}

# variant_tarantool: Debian's tarantool source (its LuaJIT fork in
# $VARIANTS/tarantool/src/third_party/luajit), for its headers only.
variant_tarantool() {
	variant_source tarantool tarantool
}

# layout_check ENTRY TREE [CFLAG...]: tests/tools/ljoffsets.c compiled
# against LuaJIT source TREE with CFLAGs prints every number of the layout
# table's ENTRY that the headers define (tests/tools/ljfields.h); each the
# same as the entry's (build/layoutdump), none missing. The differences,
# if any, on stdout.
layout_check() {
	local entry=$1 tree=$2 o
	shift 2
	o=$BATS_TEST_TMPDIR/ljoffsets.$$
	cc -w -I "$tree/src" "$@" -o "$o" "$BATS_TEST_DIRNAME/tools/ljoffsets.c" || return 1
	"$o" > "$o.h" || return 1
	"$BATS_TEST_DIRNAME/../build/layoutdump" "$entry" > "$o.t" || return 1
	[ "$(wc -l < "$o.h")" -gt 100 ] || return 1
	diff "$o.h" "$o.t"
}

# gated_trace LJ OUT [TRACER OPTION...] -- ARG...: runs LJ ARG... here,
# held before the script's first line (an -e chunk reading a
# line) until the tracer is attached with -p; traced into OUT until it
# exits. Its stdout in OUT.stdout (after a "ready" line), the tracer's
# stderr in OUT.err; the tracer's status in GATED_STATUS.
gated_trace() {
	local lj=$1 out=$2 pid tpid
	local -a opts=() gate=(-e "io.stdout:write('ready\n') io.stdout:flush() io.stdin:read('*l')")
	shift 2
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	[ -z "${GATED_SELF:-}" ] || gate=()
	rm -f "$out.in"
	mkfifo "$out.in"
	"$lj" "${gate[@]}" "$@" \
		< "$out.in" > "$out.stdout" 3>&- &
	pid=$!
	exec 9> "$out.in"
	wait_for "$out.stdout" ready || { kill "$pid"; return 1; }
	"$LMT" -p "$pid" -o "$out" "${opts[@]}" 2> "$out.err" 3>&- &
	tpid=$!
	wait_for "$out.err" "tracing PID $pid" || { kill "$pid" "$tpid"; return 1; }
	echo go >&9
	exec 9>&-
	wait "$pid" || return 1
	GATED_STATUS=0
	wait "$tpid" || GATED_STATUS=$?
	rm -f "$out.in"
}

