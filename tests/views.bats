#!/usr/bin/env bats
# report --flamegraph: one self-contained HTML page (d3 and d3-flame-graph
# inlined), its data exact for a known workload (tests/lua/flame.lua: a
# heap that peaks, then drops), rendered by headless Chromium.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

# page_data HTML: the page's JSON data, pretty enough for node.
page_data() {
	node -e '
		const h = require("fs").readFileSync(process.argv[1], "utf8");
		const m = h.match(/<script id="lmt-data" type="application\/json">([\s\S]*?)<\/script>/);
		process.stdout.write(m[1]);' "$1"
}

# samples: the values of go tool pprof -raw's samples, sorted.
samples() {
	awk '/^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ { print $1, $2, $3, $4 }' | sort
}

# chrome ARGS...: headless Chromium with no network of its own.
chrome() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$T/chrome" --virtual-time-budget=5000 "$@" 2>/dev/null
}

@test "report --flamegraph: a page with every asset inline and the exact data of a heap that peaks and drops" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/f.bin" --stacks -- luajit -joff lua/flame.lua
	"$LMT" report --flamegraph "$T/f.bin" > "$T/f.html"
	# self-contained: no script, style or link fetched from anywhere
	! grep -Eiq '<script[^>]+src=|<link[^>]+href=|@import' "$T/f.html"
	grep -q 'd3-flame-graph' "$T/f.html"
	page_data "$T/f.html" > "$T/d.json"
	node -e '
		const D = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const key = re => { const k = D.keys.findIndex(s => re.test(s)); if (k < 0) throw new Error("no key " + re); return k; };
		const eq = (a, b, what) => { if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(what + ": " + JSON.stringify(a) + " != " + JSON.stringify(b)); };
		// the 1000 tables of line 6 (88 bytes each, through burst called at 8):
		// allocated, all gone at the end, all held at the peak
		const b = key(/;@lua\/flame\.lua:8;@lua\/flame\.lua:6 local \x27burst\x27$/);
		eq(D.v[b], [88000, 1000, 0, 0, 88000, 1000], "line 6");
		// line 12: 10 tables and tail array (14 allocating events: its
		// part grows 4 times), held at the end as 11 blocks, none at the peak
		const t = key(/;@lua\/flame\.lua:12$/);
		eq([D.v[t][1], D.v[t][3], D.v[t][4], D.v[t][5]], [14, 11, 0, 0], "line 12");
		// the peak: what the peak weight holds in all, and it came after
		// line 6 last allocated and before line 12 first did
		eq(D.v.reduce((s, v) => s + v[4], 0), D.peak.bytes, "peak total");
		eq(D.v.reduce((s, v) => s + v[2], 0), D.totals[2], "end total");
		// over time: line 6 blocks all die before the end, line 12 ones live
		const sum = (k, f) => D.t.filter(c => c[0] === k && f(c)).reduce((s, c) => s + c[4], 0);
		eq(sum(b, c => c[2] < D.nb), 1000, "line 6 freed");
		eq(sum(t, c => c[2] === D.nb), 11, "line 12 live");
		eq(D.series.max.length, D.nb, "series");
		eq(Math.max(...D.series.max), D.peak.bytes, "series peak");
	' "$T/d.json"
}

@test "report --flamegraph: headless Chromium renders it; each weight and a range give the known totals" {
	cd "$BATS_TEST_DIRNAME"
	"$LMT" -q -o "$T/f.bin" --stacks -- luajit -joff lua/flame.lua
	"$LMT" report --flamegraph "$T/f.bin" > "$T/f.html"
	page_data "$T/f.html" > "$T/d.json"
	want() { node -e "const D = JSON.parse(require('fs').readFileSync('$T/d.json', 'utf8')); console.log($1)"; }
	total() { chrome --dump-dom "file://$T/f.html$1" | grep -o '<body [^>]*>'; }
	[ "$(total '')" = "<body data-weight=\"bytes\" data-total=\"$(want 'D.totals[0]')\">" ]
	[ "$(total '?weight=allocs')" = "<body data-weight=\"allocs\" data-total=\"$(want 'D.totals[1]')\">" ]
	[ "$(total '?weight=live')" = "<body data-weight=\"live\" data-total=\"$(want 'D.totals[2]')\">" ]
	[ "$(total '?weight=peak')" = "<body data-weight=\"peak\" data-total=\"$(want 'D.peak.bytes')\">" ]
	# a range over the whole stream: what it allocated and was held at its
	# end is what was held at the end
	[ "$(total "?range=0-$(want 'D.nb - 1')")" = "<body data-weight=\"range\" data-total=\"$(want 'D.totals[2]')\">" ]
	# the frames are drawn, named as the report names them
	chrome --dump-dom "file://$T/f.html?weight=peak" | grep -q '@lua/flame.lua:6'
	# and a screenshot of it
	chrome --window-size=1300,800 --screenshot="$T/f.png" "file://$T/f.html?weight=peak" > /dev/null
	[ "$(head -c 8 "$T/f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
	[ "$(stat -c %s "$T/f.png")" -gt 20000 ]
}

# A chunk named with markup (a target's name is its own to choose).
HOSTILE_CHUNK='@<img src=x onerror="document.title=1,window.lmtPwned=1"></script><b id=lmtInjected>b</b>'

@test "report --flamegraph: a chunk named with HTML is text only; hovering its frame changes nothing else in the page" {
	cat > "$T/h.lua" <<-'EOF'
		local f = load("local t = {} for i = 1, 2000 do t[i] = {i} end return t", arg[1])
		keep = f()
	EOF
	"$LMT" -q -o "$T/h.bin" -- luajit -joff "$T/h.lua" "$HOSTILE_CHUNK"
	"$LMT" report --flamegraph "$T/h.bin" > "$T/h.html"
	# the page, then a probe: hover the frame of the chunk (mouseover on
	# its element), then tell what changed in the document
	cat "$T/h.html" - > "$T/p.html" <<-'EOF'
		<script>
		setTimeout(() => {
			const all = () => document.getElementsByTagName('*').length;
			const n0 = all(), title0 = document.title;
			const g = [...document.querySelectorAll('g.frame')]
				.find(e => (e.getAttribute('name') || '').includes('<img src=x'));
			if (g)
				g.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
			setTimeout(() => {
				const tip = document.querySelector('.d3-flame-graph-tip');
				const name = g ? g.getAttribute('name') : '?';
				const r = [
					'frame=' + (g ? 1 : 0),
					'elements=' + (all() === n0 ? 'same' : n0 + '->' + all()),
					'img=' + document.getElementsByTagName('img').length,
					'injected=' + (document.getElementById('lmtInjected') ? 1 : 0),
					'title=' + (document.title === title0 ? 'same' : 'changed'),
					'pwned=' + (window.lmtPwned ? 1 : 0),
					'tip=' + (tip && tip.textContent.startsWith(name) ? 'text' : 'no'),
					'details=' + (document.getElementById('details').textContent.startsWith(name) ? 'text' : 'no'),
				];
				document.body.dataset.hover = r.join(' ');
			}, 1500);
		}, 1500);
		</script>
	EOF
	run chrome --dump-dom "file://$T/p.html"
	[[ "$output" == *'data-hover="frame=1 elements=same img=0 injected=0 title=same pwned=0 tip=text details=text"'* ]] ||
		{ echo "$output" | grep -o 'data-hover="[^"]*"'; false; }
	# the chunk's name is shown as the report names it
	node -e '
		const h = require("fs").readFileSync(process.argv[1], "utf8");
		const D = JSON.parse(h.match(/<script id="lmt-data" type="application\/json">([\s\S]*?)<\/script>/)[1]);
		if (!D.keys.some(k => k.startsWith(process.argv[2] + ":"))) throw new Error("no key " + JSON.stringify(D.keys));
	' "$T/h.html" "$HOSTILE_CHUNK"
}

@test "report --flamegraph: stdin or with another format says so in one line, exit 2" {
	run "$LMT" report --flamegraph - < /dev/null
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	run "$LMT" report --flamegraph --pprof "$FIXTURES/alloc.bin"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
}

@test "several streams (files or a directory): --folded and --flamegraph give each its root frame, --pprof a process label, the text report one section each" {
	cd "$BATS_TEST_DIRNAME"
	mkdir "$T/d"
	"$LMT" -q -o "$T/d/a.bin" --stacks -- luajit -joff lua/flame.lua
	"$LMT" -q -o "$T/d/b.bin" --stacks -- luajit -joff lua/stacks.lua 100
	# folded: each stream's stacks under its name, as alone
	"$LMT" report --folded --weight=events "$T/d" > "$T/m.f"
	for s in a b; do
		"$LMT" report --folded --weight=events "$T/d/$s.bin" | sed "s/^/$s;/" > "$T/$s.f"
	done
	cat "$T/a.f" "$T/b.f" | diff - "$T/m.f"
	grep -Eq "^a;[^;]*;@lua/flame\.lua:8;@lua/flame\.lua:6 local 'burst' 1000\$" "$T/m.f"
	grep -Eq "^b;[^;]*;@lua/stacks\.lua:27;@lua/stacks\.lua:7 local 'caller_a';@lua/stacks\.lua:4 upvalue 'make' 100\$" "$T/m.f"
	# pprof: a "process" label per stream, the values as alone
	"$LMT" report --pprof "$T/d/a.bin" "$T/d/b.bin" > "$T/m.pb.gz"
	HOME="$T" go tool pprof -tags -sample_index=alloc_objects "$T/m.pb.gz" > "$T/tags.txt"
	grep -Eq '^ +[0-9.]+ \(.*\): a$' "$T/tags.txt"
	grep -Eq '^ +[0-9.]+ \(.*\): b$' "$T/tags.txt"
	for s in a b; do
		"$LMT" report --pprof "$T/d/$s.bin" > "$T/$s.pb.gz"
		HOME="$T" go tool pprof -raw "$T/$s.pb.gz" | samples > "$T/$s.raw"
		HOME="$T" go tool pprof -raw -tagfocus=process=$s "$T/m.pb.gz" | samples > "$T/m$s.raw"
		[ -s "$T/$s.raw" ]
		diff "$T/$s.raw" "$T/m$s.raw"
	done
	# flame graph: two streams, each key under its stream's root frame
	"$LMT" report --flamegraph "$T/d/" > "$T/m.html"
	node -e '
		const h = require("fs").readFileSync(process.argv[1], "utf8");
		const D = JSON.parse(h.match(/<script id="lmt-data" type="application\/json">([\s\S]*?)<\/script>/)[1]);
		if (D.streams !== 2) throw new Error("streams " + D.streams);
		const k = D.keys.findIndex(s => /^a;[^;]*;@lua\/flame\.lua:8;@lua\/flame\.lua:6 local \x27burst\x27$/.test(s));
		if (k < 0 || JSON.stringify(D.v[k]) !== "[88000,1000,0,0,88000,1000]") throw new Error("a: " + D.v[k]);
		if (!D.keys.every(s => /^[ab];/.test(s))) throw new Error("a key without its stream");
	' "$T/m.html"
	# text: one section per stream, each its report alone
	"$LMT" report --leak-only "$T/d/a.bin" "$T/d/b.bin" > "$T/m.txt"
	{ echo "==> $T/d/a.bin <=="; "$LMT" report --leak-only "$T/d/a.bin"; echo; echo "==> $T/d/b.bin <=="; "$LMT" report --leak-only "$T/d/b.bin"; } | diff - "$T/m.txt"
	# an empty directory says so
	mkdir "$T/e"
	run "$LMT" report --folded "$T/e"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no streams (*.bin) in it"* ]]
}

# screen: what the tmux session lmt-$$ shows now.
screen() {
	tmux -L "lmt$$" capture-pane -p -t lmt
}

# screen_has RE: waits up to 10 s for a line of the screen matching RE.
screen_has() {
	local i
	for i in $(seq 1 100); do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.1
	done
	echo "no line matching '$1' on the screen:"
	screen
	return 1
}

@test "luamemtrace top -p PID in a real terminal (tmux): the known site and its stack live, sorting keys, q detaches and leaves the process running, no probe left" {
	cd "$BATS_TEST_DIRNAME"
	luajit -joff lua/top.lua 3>&- &
	local pid=$!
	tmux -L "lmt$$" new-session -d -s lmt -x 160 -y 30 -c "$PWD" \
		"$LMT top --stacks -p $pid; echo EXIT=\$? > $T/exit; sleep 60"
	# the site of line 6, allocating all the time, 2 blocks of it each turn
	screen_has "^ +[0-9.]+[KMG]?i?B +[1-9][0-9]* +[0-9.]+[KMG]?i?B +[0-9]+  @lua/top\.lua:6$"
	screen_has "^events/s: [1-9][0-9]* .*lost: 0$"
	# by held bytes, then the stacks view: make's line, its caller's
	tmux -L "lmt$$" send-keys -t lmt h
	screen_has "view: sites, by held bytes"
	tmux -L "lmt$$" send-keys -t lmt s
	screen_has "  @lua/top\.lua:6 local 'make' < @lua/top\.lua:10 < \[C\] luajit\+0x"
	tmux -L "lmt$$" send-keys -t lmt q
	for i in $(seq 1 100); do [ -s "$T/exit" ] && break; sleep 0.1; done
	[ "$(cat "$T/exit")" = EXIT=0 ]
	screen_has "luamemtrace top: detached from PID $pid"
	# the workload runs on, not stopped, and nothing of the tracer is left
	kill -0 "$pid"
	[ "$(awk '{ print $3 }' "/proc/$pid/stat")" != T ]
	no_probes_of "$LMT top"
	tmux -L "lmt$$" kill-server
	kill "$pid"
}

@test "luamemtrace top: without a terminal, or without -p, one line and exit 2" {
	run "$LMT" top -p 1 < /dev/null
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"needs a terminal"* ]]
	run "$LMT" top
	[ "$status" -eq 2 ]
	[[ "$output" == *"give -p PID"* ]]
}
