#!/usr/bin/env bats
# luamemtrace heap's views of snapshot files: groups (cdata by C type,
# largest tables), leak suspects, --diff, several processes at once,
# --flamegraph. tests/lua/heap_views.lua holds a known heap (GC stopped),
# then adds exactly N instances of a class; sizes are LuaJIT's: a GCtab is
# 64 bytes, an array slot 8, a cdata of two int32_t 16 + 8.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# snaps N F DIR NAME: runs heap_views.lua N F, snapshots it before
# (DIR/NAME-a.lmh) and after (DIR/NAME-b.lmh) it adds N instances; its
# PID in SNAP_PID.
snaps() {
	mkdir -p "$3"
	rm -f "$T/in" "$T/target.out"
	mkfifo "$T/in"
	luajit -joff "$LUA_DIR/heap_views.lua" "$1" "$2" < "$T/in" > "$T/target.out" 3>&- &
	SNAP_PID=$!
	exec 5> "$T/in"
	wait_for "$T/target.out" "ready 1"
	"$LMT" heap -p "$SNAP_PID" -o "$3/$4-a.lmh" > /dev/null
	echo go >&5
	wait_for "$T/target.out" "ready 2"
	"$LMT" heap -p "$SNAP_PID" -o "$3/$4-b.lmh" > /dev/null
	echo go >&5
	exec 5>&-
	wait "$SNAP_PID"
}

# section TITLE FILE: the lines of a report's section, its title excluded.
section() {
	awk -v t="$1" '$0 == t || index($0, t) == 1 { on = 1; next } on && /^$/ { exit } on' "$2"
}

# reachable FILE: the reachable bytes of a report's summary ("all" row).
reachable() {
	awk '$1 == "all" && NF == 7 { print $5; exit }' "$1"
}

@test "heap: cdata grouped by C type (named from the FFI's type table), largest tables with their array and hash sizes" {
	snaps 100 10 "$T/s" v
	"$LMT" heap --top 100000 "$T/s/v-b.lmh" > "$T/r.out"
	cat "$T/r.out"
	# 10 struct lmt_point: 16 (GCcdata) + 8 each
	[ "$(section 'cdata by C type' "$T/r.out" | sed 1d)" = "$(printf '%10d %12d  %s' 10 240 'struct lmt_point')" ]
	# items: table.new(100, 0), an array of 101 slots, no hash part:
	# 64 + 101 * 8 = 872; points: table.new(10, 0): 64 + 11 * 8 = 152 (colocated)
	section 'largest tables' "$T/r.out" | grep -qxF "$(printf '%12d %10d %10d  %s' 872 101 0 package.loaded.views.items)"
	section 'largest tables' "$T/r.out" | grep -qxF "$(printf '%12d %10d %10d  %s' 152 11 0 package.loaded.views.points)"
	# the class's 100 instances, the class named where the program keeps it
	section 'tables by metatable' "$T/r.out" | grep -qxF "$(printf '%10d %12d  %s' 100 6400 'package.loaded["app.models"].Item')"
}

@test "heap: leak suspects: the object where a large share of the reachable bytes accumulates, with its path and retained size" {
	snaps 1000 0 "$T/s" v
	"$LMT" heap "$T/s/v-b.lmh" > "$T/r.out"
	cat "$T/r.out"
	local total=$(reachable "$T/r.out")
	# items: 64 + 1001 slots * 8, and its 1000 instances of 64 bytes; not
	# package.loaded.views above it (items retains the share too)
	local items=$((64 + 1001 * 8 + 1000 * 64))
	[ "$(section 'leak suspects' "$T/r.out" | sed 1d | awk '{ print $1, $3, $4 }')" = "$items table package.loaded.views.items" ]
	grep -qx "leak suspects (an object, not a root, retaining >= 20% of the $total reachable bytes)" "$T/r.out"
	# its share of the reachable bytes
	[ "$(section 'leak suspects' "$T/r.out" | sed 1d | awk '{ print $2 }')" = "$(awk -v a="$items" -v t="$total" 'BEGIN { printf "%.1f%%", 100 * a / t }')" ]
}

@test "heap --diff A B: growth by path and by group, A's objects still live in B, of one process before and after it adds 100 tables" {
	snaps 100 10 "$T/s" v
	"$LMT" heap --top 100000 --diff "$T/s/v-a.lmh" "$T/s/v-b.lmh" > "$T/d.out"
	cat "$T/d.out"
	[ "$(head -1 "$T/d.out")" = "A: process $SNAP_PID, 1 VM(s); B: process $SNAP_PID, 1 VM(s)" ]
	# by type: exactly 100 tables more, 64 bytes each
	[ "$(section 'reachable by type' "$T/d.out" | awk '$1 == "table" { print $4, $7 }')" = "+100 +6400" ]
	# by path: items grew by its 100 instances, each a new path of 64
	section 'growth by path' "$T/d.out" | grep -qxF "$(printf '%+12d %12d %12d  %-9s %s' 6400 872 7272 table package.loaded.views.items)"
	[ "$(section 'growth by path' "$T/d.out" | grep -c "^ *+64 *0 *64  table     package.loaded.views.items\[[0-9]*\]$")" = 100 ]
	# by group: the class's instances, 0 then 100; nothing else grew
	[ "$(section 'growth by group' "$T/d.out" | sed 1d)" = "$(printf '%10d %10d %12d %12d  %s' 0 100 0 6400 'table of package.loaded["app.models"].Item')" ]
	# every reachable table of A is still live in B (GC stopped)
	local ta=$(section 'reachable by type' "$T/d.out" | awk '$1 == "table" { print $2 }')
	[ "$(section 'objects of A still live in B' "$T/d.out" | awk '$1 == "table" { print $2, $3 }')" = "$ta $ta" ]
	[ "$(section 'objects of A still live in B' "$T/d.out" | awk '$1 == "cdata" { print $2, $3, $4 }')" = "10 10 240" ]
}

@test "heap --diff takes two files; a bad one is one line of error" {
	snaps 1 1 "$T/s" v
	run "$LMT" heap --diff "$T/s/v-a.lmh"
	[ "$status" -eq 2 ]
	[ "$output" = "luamemtrace heap: --diff takes two snapshot files" ]
	run "$LMT" heap --diff "$T/s/v-a.lmh" /etc/passwd
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: /etc/passwd: not a heap snapshot (luamemtrace heap -o)" ]
	run "$LMT" heap --diff -p 1
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "luamemtrace heap: --flamegraph, --diff and --chrome read snapshot files (-o FILE)" ]
}

@test "heap FILE... or DIR: each process with its PID, then the totals of all" {
	snaps 100 10 "$T/d" one
	local p1=$SNAP_PID
	snaps 200 5 "$T/d" two
	local p2=$SNAP_PID
	rm "$T/d/one-a.lmh" "$T/d/two-a.lmh"
	"$LMT" heap "$T/d/one-b.lmh" > "$T/1.out"
	"$LMT" heap "$T/d/two-b.lmh" > "$T/2.out"
	"$LMT" heap "$T/d" > "$T/all.out"
	cat "$T/all.out"
	[ "$(grep '^== ' "$T/all.out")" = "== process $p1 ($T/d/one-b.lmh)
== process $p2 ($T/d/two-b.lmh)
== all 2 processes" ]
	local r1=$(reachable "$T/1.out") r2=$(reachable "$T/2.out")
	[ "$(awk -v p="$p1" '$1 == p { print $2, $6 }' "$T/all.out")" = "1 $r1" ]
	[ "$(awk -v p="$p2" '$1 == p { print $2, $6 }' "$T/all.out")" = "1 $r2" ]
	[ "$(section '== all 2 processes' "$T/all.out" | awk '$1 == "all" { print $2, $6 }')" = "2 $((r1 + r2))" ]
	# the same as naming the files
	"$LMT" heap "$T/d/one-b.lmh" "$T/d/two-b.lmh" > "$T/files.out"
	diff "$T/all.out" "$T/files.out"
	# a directory without snapshots
	mkdir "$T/empty"
	run "$LMT" heap "$T/empty"
	[ "$status" -eq 1 ]
	[ "$output" = "luamemtrace heap: $T/empty: no snapshots (*.lmh) in it" ]
}

# page_data HTML: the page's JSON data.
page_data() {
	node -e '
		const h = require("fs").readFileSync(process.argv[1], "utf8");
		const m = h.match(/<script id="lmt-data" type="application\/json">([\s\S]*?)<\/script>/);
		process.stdout.write(m[1]);' "$1"
}

@test "heap --flamegraph: the tracer's page, frames the dominator tree's paths, weights exactly the retained bytes" {
	snaps 100 10 "$T/s" v
	"$LMT" heap --top 100000 "$T/s/v-b.lmh" > "$T/r.out"
	"$LMT" heap --flamegraph "$T/s/v-b.lmh" > "$T/f.html"
	! grep -Eiq '<script[^>]+src=|<link[^>]+href=|@import' "$T/f.html"
	page_data "$T/f.html" > "$T/d.json"
	local total=$(reachable "$T/r.out")
	# items' retained size as the report gives it
	local items=$(awk '/^top retainers/ { on = 1 } on && $3 == "table" && $4 == "package.loaded.views.items" { print $1; exit }' "$T/r.out")
	[ "$items" = $((64 + 101 * 8 + 100 * 64)) ]
	node -e '
		const D = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const eq = (a, b, what) => { if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(what + ": " + JSON.stringify(a) + " != " + JSON.stringify(b)); };
		const sum = re => D.keys.reduce((s, k, i) => s + (re.test(k) ? D.v[i][0] : 0), 0);
		const count = re => D.keys.reduce((s, k, i) => s + (re.test(k) ? D.v[i][1] : 0), 0);
		// every reachable byte once
		eq(D.v.reduce((s, v) => s + v[0], 0), +process.argv[2], "total");
		// items: its own 872 bytes, and a frame per instance under it
		const it = /^package\.loaded \(table\);\.views \(table\);\.items \(table\)(;|$)/;
		eq(sum(it), +process.argv[3], "items retained");
		eq(count(it), 101, "items objects");
		const one = D.keys.indexOf("package.loaded (table);.views (table);.items (table);[7] (table)");
		eq(D.v[one], [64, 1, 64, 1, 64, 1], "items[7]");
		// points: its 152 bytes and its 10 cdata of 24
		eq(sum(/;\.views \(table\);\.points \(table\)(;|$)/), 152 + 240, "points retained");
		eq(typeof D.heap, "string", "a heap page");
	' "$T/d.json" "$total" "$items"
}

chrome() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$T/chrome" --virtual-time-budget=5000 "$@" 2>/dev/null
}

@test "heap --flamegraph: headless Chromium draws it: the total is the reachable bytes, the frames named by path" {
	snaps 100 10 "$T/s" v
	"$LMT" heap "$T/s/v-b.lmh" > "$T/r.out"
	"$LMT" heap --flamegraph "$T/s/v-b.lmh" > "$T/f.html"
	chrome --dump-dom "file://$T/f.html" > "$T/dom.html"
	[ "$(grep -o '<body [^>]*>' "$T/dom.html")" = "<body data-weight=\"bytes\" data-total=\"$(reachable "$T/r.out")\">" ]
	grep -q '\.items (table)' "$T/dom.html"
	grep -q '<option value="bytes">retained bytes</option>' "$T/dom.html"
	# by objects
	[ "$(chrome --dump-dom "file://$T/f.html?weight=allocs" | grep -o '<body [^>]*>')" = \
		"<body data-weight=\"allocs\" data-total=\"$(awk '$1 == "all" && NF == 7 { print $4; exit }' "$T/r.out")\">" ]
}

# structure FILE: checks a .heapsnapshot's arrays against its counts (each
# node's edge_count summing to the edges given, every edge to a node);
# prints its nodes less the root, and their self sizes' sum.
structure() {
	node -e '
		const S = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const nf = S.snapshot.meta.node_fields.length, ef = S.snapshot.meta.edge_fields.length;
		const n = S.nodes.length / nf, e = S.edges.length / ef;
		let ec = 0, self = 0;
		for (let i = 0; i < n; i++) { ec += S.nodes[i * nf + 4]; self += S.nodes[i * nf + 3]; }
		if (n !== S.snapshot.node_count || e !== S.snapshot.edge_count || ec !== e)
			throw new Error("counts " + [n, S.snapshot.node_count, e, S.snapshot.edge_count, ec]);
		for (let i = 0; i < e; i++)
			if (S.edges[i * ef + 2] % nf || S.edges[i * ef + 2] >= S.nodes.length)
				throw new Error("edge " + i);
		console.log(n - 1, self);' "$1"
}

@test "heap --chrome: a .heapsnapshot Chrome DevTools' own model reads: its totals, classes and retained sizes are ours" {
	make -s -C "$BATS_TEST_DIRNAME/.." build/npm-devtools/node_modules/heap-snapshot-toolkit/index.js
	local toolkit="$BATS_TEST_DIRNAME/../build/npm-devtools/node_modules/heap-snapshot-toolkit/index.js"
	snaps 100 10 "$T/s" v
	"$LMT" heap --top 100000 "$T/s/v-b.lmh" > "$T/r.out"
	"$LMT" heap --chrome "$T/s/v-b.lmh" > "$T/h.heapsnapshot"
	node "$BATS_TEST_DIRNAME/heap/devtools/check.mjs" "$toolkit" "$T/h.heapsnapshot" \
		registry/_LOADED/views/items registry/_LOADED/views/points > "$T/dt.out"
	cat "$T/dt.out"
	# every reachable byte, once
	grep -qx "total $(reachable "$T/r.out")" "$T/dt.out"
	# items: 64 + 101 slots; DevTools' dominator tree gives our retained size
	grep -qxF "node registry/_LOADED/views/items \"table\" 872 $((872 + 100 * 64)) 100" "$T/dt.out"
	grep -qxF "node registry/_LOADED/views/points \"table\" 152 $((152 + 10 * 24)) 10" "$T/dt.out"
	# DevTools' Summary: tables by their class, cdata by C type
	grep -qxF 'class "package.loaded[\"app.models\"].Item" 100 6400' "$T/dt.out"
	grep -qxF 'class "cdata struct lmt_point" 10 240' "$T/dt.out"
	# structure: as many nodes as reachable objects and the root, each
	# node's edge_count summing to the edges given
	structure "$T/h.heapsnapshot" > "$T/st.out"
	[ "$(cat "$T/st.out")" = "$(awk '$1 == "all" && NF == 7 { print $4, $5; exit }' "$T/r.out")" ]
}

# vms_reachable FILE: the reachable bytes of each VM of a report, in order
# (not the processes' table at its end).
vms_reachable() {
	awk '/^== all / { exit } $1 == "all" && NF == 7 { print $5 }' "$1"
}

@test "heap --chrome of several VMs (one process with three, and another file): one .heapsnapshot, a synthetic root per VM, each VM's retained size its reachable bytes" {
	make -s -C "$BATS_TEST_DIRNAME/.." build/npm-devtools/node_modules/heap-snapshot-toolkit/index.js
	[ -x "$BATS_TEST_DIRNAME/../build/host" ] # make build/host (make test does)
	local toolkit="$BATS_TEST_DIRNAME/../build/npm-devtools/node_modules/heap-snapshot-toolkit/index.js"
	local k
	# three VMs in one process: 10, 20 and 30 Items, one each
	mkdir "$T/vms"
	HEAP_VMS_DIR="$T/vms" "$BATS_TEST_DIRNAME/../build/host" -t 3 "$LUA_DIR/heap_vms.lua" 3>&- &
	local pid=$!
	for k in 1 2 3; do wait_for "$T/vms/ready.$k" ready; done
	"$LMT" heap -p "$pid" -o "$T/m.lmh" > /dev/null
	touch "$T/vms/go"
	wait "$pid"
	snaps 100 10 "$T/s" v
	"$LMT" heap "$T/m.lmh" "$T/s/v-b.lmh" > "$T/r.out"
	[ "$(grep -c '^VM 0x' "$T/r.out")" = 4 ]
	"$LMT" heap --chrome "$T/m.lmh" "$T/s/v-b.lmh" > "$T/h.heapsnapshot"
	node "$BATS_TEST_DIRNAME/heap/devtools/check.mjs" "$toolkit" "$T/h.heapsnapshot" \
		"VM 1" "VM 2" "VM 3" "VM 4" \
		"VM 1/registry/_LOADED/app.cache/items" "VM 2/registry/_LOADED/app.cache/items" \
		"VM 3/registry/_LOADED/app.cache/items" "VM 4/registry/_LOADED/views/items" > "$T/dt.out"
	cat "$T/dt.out"
	# every reachable byte of the four VMs, once
	[ "$(grep '^total ' "$T/dt.out")" = "total $(vms_reachable "$T/r.out" | awk '{ s += $1 } END { print s }')" ]
	# a node per VM, named by process and VM, in the files' order; its
	# retained size (DevTools' dominator tree) its VM's reachable bytes
	paste -d ' ' <(grep -E '^node VM [1-4] ' "$T/dt.out" |
			awk '{ match($0, /0x[0-9a-f]+/); print $3, substr($0, RSTART, RLENGTH), $(NF - 1) }') \
		<(grep '^VM 0x' "$T/r.out" | awk '{ print $2 }') <(vms_reachable "$T/r.out") > "$T/vm.out"
	cat "$T/vm.out"
	[ "$(awk '$1 == NR && $2 == $4 && $3 == $5 { n++ } END { print n }' "$T/vm.out")" = 4 ]
	[ "$(grep -cE "^node VM [1-3] \"process $pid VM 0x[0-9a-f]+\" 0 " "$T/dt.out")" = 3 ]
	[ "$(grep -cE "^node VM 4 \"process $SNAP_PID VM 0x[0-9a-f]+\" 0 " "$T/dt.out")" = 1 ]
	# the three caches: 10, 20 and 30 Items, in some order (each VM took
	# its slot when it ran); an array of 10k + 1 slots
	grep -E '^node VM [1-3]/registry/_LOADED/app.cache/items ' "$T/dt.out" | awk '{ print $(NF - 2), $(NF - 1), $NF }' |
		sort -n > "$T/items.out"
	[ "$(cat "$T/items.out")" = "$(for k in 1 2 3; do
		echo "$((64 + (10 * k + 1) * 8)) $((64 + (10 * k + 1) * 8 + 10 * k * 64)) $((10 * k))"; done)" ]
	grep -qxF "node VM 4/registry/_LOADED/views/items \"table\" 872 $((872 + 100 * 64)) 100" "$T/dt.out"
	# DevTools' Summary: the VMs' classes together
	grep -qxF 'class "package.loaded[\"app.cache\"].Item" 60 3840' "$T/dt.out"
	grep -qxF 'class "package.loaded[\"app.models\"].Item" 100 6400' "$T/dt.out"
	# nodes: a VM's four and every reachable object
	[ "$(structure "$T/h.heapsnapshot")" = "$(awk '/^== all / { exit } $1 == "all" && NF == 7 {
		n += $4; b += $5 } END { print n + 4, b }' "$T/r.out")" ]
	# a directory of snapshots (heap --all -o DIR) the same
	mkdir "$T/d"
	cp "$T/m.lmh" "$T/s/v-b.lmh" "$T/d/"
	"$LMT" heap --chrome "$T/d" > "$T/d.heapsnapshot"
	node "$BATS_TEST_DIRNAME/heap/devtools/check.mjs" "$toolkit" "$T/d.heapsnapshot" > "$T/dd.out"
	[ "$(grep '^total ' "$T/dd.out")" = "$(grep '^total ' "$T/dt.out")" ]
}

@test "heap views of changed snapshot files: a report or one line of error, never a crash or a hang" {
	snaps 20 3 "$T/s" v
	local i bad=0 seen=""
	for i in $(seq 1 60); do
		# a copy of B with 8 bytes changed, at places a seed picks
		python3 - "$T/s/v-b.lmh" "$T/x.lmh" "$i" <<'PY'
import random, sys
b = bytearray(open(sys.argv[1], "rb").read())
r = random.Random(int(sys.argv[3]))
for _ in range(8):
    b[r.randrange(len(b))] = r.randrange(256)
open(sys.argv[2], "wb").write(bytes(b))
PY
		for v in "" --flamegraph --chrome; do
			rc=0
			timeout 60 "$LMT" heap $v "$T/x.lmh" > /dev/null 2> "$T/err" || rc=$?
			case $rc in
			0|3) ;;
			1) [ "$(wc -l < "$T/err")" = 1 ] || bad=$((bad + 1)) ;;
			*) echo "heap $v seed $i: exit $rc"; bad=$((bad + 1)) ;;
			esac
			seen="$seen $rc"
		done
		rc=0
		timeout 60 "$LMT" heap --diff "$T/s/v-a.lmh" "$T/x.lmh" > /dev/null 2> "$T/err" || rc=$?
		case $rc in
		0|1|3) ;;
		*) echo "heap --diff seed $i: exit $rc"; bad=$((bad + 1)) ;;
		esac
	done
	[ "$bad" = 0 ]
	# some were read and reported, some refused
	[[ "$seen" == *" 0"* || "$seen" == *" 3"* ]]
	[[ "$seen" == *" 1"* ]]
}
