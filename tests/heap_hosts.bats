#!/usr/bin/env bats
# luamemtrace heap on a real host under load: nginx with OpenResty's Lua
# module (tests/hosts.bash's setup), two workers, each holding a known
# cache, snapshotted all at once with heap --all while wrk loads them.

load helpers
load hosts

setup_file() {
	hosts_unpack
}

setup() {
	T="$BATS_TEST_TMPDIR"
	NGX_MASTER=
}

teardown() {
	local p
	[ -n "$NGX_MASTER" ] && kill -9 "$NGX_MASTER" $(pgrep -P "$NGX_MASTER") 2>/dev/null
	for p in $(jobs -p); do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

@test "heap --all --exe: nginx's master and both workers under load, each with its known cache exact" {
	# Each worker builds package.loaded["app.cache"]: 40 tables of class Item
	# (64 bytes each); a request makes garbage (11 tables) and says ok.
	NGX_HANDLER='local keep = {}
for i = 1, 10 do keep[i] = { i } end
ngx.say("ok ", #keep)'
	ngx_conf "$T"
	sed -i 's|^  init_by_lua_block.*|&\n  init_worker_by_lua_block { local Item = {} Item.__index = Item local c = { Item = Item, items = {} } for i = 1, 40 do c.items[i] = setmetatable({}, Item) end package.loaded["app.cache"] = c }|' \
		"$T/nginx.conf"
	grep -q init_worker_by_lua_block "$T/nginx.conf"
	# run as its own name: --exe picks these and no other nginx on the host
	local name=lmtngx$$
	ln -sf "$(command -v nginx)" "$T/$name"
	rm -f "$T/nginx.pid"
	LD_LIBRARY_PATH="$HOSTS/root/usr/lib/x86_64-linux-gnu" \
		"$T/$name" -e "$T/logs/error.log" -p "$T" -c "$T/nginx.conf" 3>&-
	ngx_workers "$T"
	ngx_load 4 3>&- &
	local load=$!
	sleep 1
	run "$LMT" heap --all --exe "$name" -o "$T/snaps" --top 5
	local st=$(for p in $NGX_WORKERS; do awk '{print $3}' "/proc/$p/stat"; done | tr -d '\n')
	wait "$load"
	# the workers served requests around the snapshots
	local served=$(wc -l < "$T/logs/t.log")
	ngx_stop
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"luamemtrace heap: 3 processes snapshotted, 0 failed"* ]]
	[ "$served" -gt 0 ]
	[[ "$st" != *T* ]]
	local p
	for p in $NGX_WORKERS; do
		[ -s "$T/snaps/$p.lmh" ]
		"$LMT" heap --top 20 "$T/snaps/$p.lmh" > "$T/w.out"
		cat "$T/w.out"
		grep -qE '^ +40 +2560  package\.loaded\["app\.cache"\]\.Item$' "$T/w.out"
		grep -qE ' table +package\.loaded\["app\.cache"\]\.items$' "$T/w.out"
		[ "$(awk '/remainder \(gc.total - sum\)/ { print $NF }' "$T/w.out")" = 0 ]
		grep -q "^VM 0x[0-9a-f]* (OpenResty LuaJIT 2.1 GC64)$" "$T/w.out"
	done
	# the master: no worker's cache (init_worker runs in the workers only)
	[ -s "$T/snaps/$NGX_MASTER.lmh" ]
	"$LMT" heap "$T/snaps/$NGX_MASTER.lmh" > "$T/m.out"
	! grep -q 'app\.cache' "$T/m.out"
}
