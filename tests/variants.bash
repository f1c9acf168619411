# LuaJIT builds of other layouts, built in the tests from Debian's own
# source package (tests/variants.bats), kept in build/variants (a build
# takes ~5 min on 2 busy cores; once per clone).

VARIANTS="$BATS_TEST_DIRNAME/../build/variants"

# variant_gc64off: Debian's luajit source (apt-get source, through a
# private apt configuration holding one deb-src line: the machine's own
# sources, lists and caches stay as they are), built with
# LUAJIT_DISABLE_GC64: 32-bit GC references, as Tarantool's fork and older
# OpenResty builds. Its luajit is $VARIANTS/gc64off/src/src/luajit (LuaJIT
# statically linked, as Debian's). The log: $VARIANTS/gc64off.log.
variant_gc64off() {
	local d=$VARIANTS/gc64off log=$VARIANTS/gc64off.log
	local -a a
	[ -x "$d/src/src/luajit" ] && return 0
	rm -rf "$d"
	mkdir -p "$d/apt/lists/partial" "$d/apt/cache/archives/partial" "$d/dl"
	. /etc/os-release
	echo "deb-src http://deb.debian.org/debian $VERSION_CODENAME main" > "$d/apt/sources.list"
	a=(-o "Dir::Etc::SourceList=$d/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	   -o "Dir::State::Lists=$d/apt/lists" -o "Dir::Cache=$d/apt/cache")
	{ apt-get "${a[@]}" update &&
	  (cd "$d/dl" && apt-get "${a[@]}" source --download-only luajit) &&
	  dpkg-source -x "$d"/dl/luajit_*.dsc "$d/src" &&
	  make -C "$d/src" -j2 XCFLAGS=-DLUAJIT_DISABLE_GC64; } > "$log" 2>&1 || {
		tail -20 "$log"
		return 1
	}
	[ -x "$d/src/src/luajit" ]
}
