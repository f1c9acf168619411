#!/usr/bin/env bats
# luamemtrace heap on a real host under load: nginx with OpenResty's Lua
# module (tests/hosts.bash's setup), two workers, each holding a known
# cache, snapshotted all at once with heap --all while wrk loads them; a
# Tarantool instance, a fiber writing while it is copied.

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
	# notices too: a SIGCHLD nginx got would be one
	sed -i 's|^error_log \(.*\);$|error_log \1 notice;|' "$T/nginx.conf"
	grep -q '^error_log .* notice;$' "$T/nginx.conf"
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
	# each copied from a fork of it, which nginx never heard of: no child
	# of a worker's exit logged (its SIGCHLD handler would say one)
	[ "$(grep -cE "^luamemtrace heap: PID [0-9]+: stopped [0-9.]+ ms to fork a copy-on-write copy of it" <<< "$output")" = 3 ]
	cat "$T/logs/error.log"
	! grep -qE "exited on signal|SIGCHLD" "$T/logs/error.log"
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

# A real Tarantool 2.6 instance (Debian's: its LuaJIT fork, GC64 off, in the
# executable): box.cfg{} with a space a fiber writes to without end, three
# fibers sleeping, and CACHE, 1000 records { id = i, name = "user" .. i }:
# GCtab 32 bytes and 2 nodes (48) each, CACHE's array 1025 slots, the names
# unrounded strings (sizestring: 16 + len + 1; user1..user9 22 bytes,
# user10..user99 23, user100..user999 24, user1000 25): CACHE retains
# 32 + 1025 * 8 + 1000 * 80 + 23893 = 112125 bytes.
@test "heap on a real Tarantool 2.6 instance (box.cfg, a fiber writing, its fork GC64 off): remainder 0, its known cache exact, left running" {
	mkdir -p "$T/tt"
	cat > "$T/tt/box.lua" <<'LUA'
box.cfg{ work_dir = os.getenv('TT_DIR'), log = 'tt.log', listen = box.NULL }
local s = box.schema.space.create('kv', { if_not_exists = true })
s:create_index('pk', { if_not_exists = true })
CACHE = {}
for i = 1, 1000 do CACHE[i] = { id = i, name = 'user' .. i } end
local fiber = require('fiber')
N = 0
fiber.create(function()
  while true do
    N = N + 1
    s:replace({ N % 100, string.rep('x', N % 50) })
    if N % 100 == 0 then fiber.sleep(0.001) end
  end
end)
for i = 1, 3 do fiber.create(function() local mine = { i } while true do fiber.sleep(0.05) end end) end
io.stdout:write('ready\n') io.stdout:flush()
fiber.sleep(0.5)
io.stdout:write('before ', N, '\n') io.stdout:flush()
while not io.open(os.getenv('TT_DIR') .. '/go') do fiber.sleep(0.01) end
io.stdout:write('after ', N, '\n') io.stdout:flush()
os.exit(0)
LUA
	(cd "$T/tt" && TT_DIR="$T/tt" exec tarantool box.lua) > "$T/tt.out" 2>&1 3>&- &
	local tt=$!
	wait_for "$T/tt.out" before
	run "$LMT" heap -p "$tt" --top 100000
	local st=$(awk '{print $3}' "/proc/$tt/stat")
	touch "$T/tt/go"
	wait "$tt"
	printf '%s\n' "$output" | head -40
	[ "$status" -eq 0 ]
	[[ "$st" != T ]]
	printf '%s\n' "$output" | grep -qx 'VM 0x[0-9a-f]\{8\} (Tarantool 2.6 LuaJIT 2.1 GC64 off)'
	[ "$(printf '%s\n' "$output" | awk '/remainder \(gc.total - sum\)/ { print $NF }')" = 0 ]
	! printf '%s\n' "$output" | grep -q '^incomplete'
	printf '%s\n' "$output" | grep -qE '^ +112125 +8232  table     CACHE$'
	# the writer ran on after the snapshot
	local before=$(awk '$1 == "before" { print $2 }' "$T/tt.out")
	local after=$(awk '$1 == "after" { print $2 }' "$T/tt.out")
	[ "$after" -gt "$before" ]
}
