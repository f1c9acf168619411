#!/usr/bin/env bats
# Real hosts from Debian's packages, traced as they run. nginx with
# OpenResty's Lua module needs OpenResty's libluajit2, which conflicts with
# Debian's luajit: it is unpacked beside the module in build/hosts (a
# private LuaJIT deployment), with lua-resty-core and lua-resty-lrucache.

load helpers

HOSTS="$BATS_TEST_DIRNAME/../build/hosts"

setup_file() {
	local d="$BATS_TEST_DIRNAME/../build/hosts" f
	if [ ! -e "$d/root/usr/lib/nginx/modules/ngx_http_lua_module.so" ]; then
		mkdir -p "$d/deb"
		(cd "$d/deb" && apt-get download libnginx-mod-http-lua \
			libnginx-mod-http-ndk libluajit2-5.1-2 lua-resty-core \
			lua-resty-lrucache) > "$d/download.log" 2>&1 || return 1
		for f in "$d"/deb/*.deb; do
			dpkg-deb -x "$f" "$d/root" || return 1
		done
	fi
}

setup() {
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
	local p
	for p in $(jobs -p); do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# nginx_start: one worker on a free port ($PORT), JIT off, /t runs
# handler.lua (10 tables at line 3, the keep table at line 1).
nginx_start() {
	PORT=$((20000 + RANDOM % 20000))
	mkdir -p "$T/logs"
	cat > "$T/handler.lua" <<'LUA'
local keep = {}
for i = 1, 10 do
  keep[i] = { i }
end
ngx.say("ok ", #keep)
LUA
	cat > "$T/nginx.conf" <<CONF
load_module $HOSTS/root/usr/lib/nginx/modules/ndk_http_module.so;
load_module $HOSTS/root/usr/lib/nginx/modules/ngx_http_lua_module.so;
user root; # the worker reads files in the test's private directory
worker_processes 1;
pid $T/nginx.pid;
error_log $T/logs/error.log;
events { worker_connections 64; }
http {
  access_log off;
  lua_package_path "$HOSTS/root/usr/share/lua/5.1/?.lua;;";
  init_by_lua_block { jit.off() }
  server {
    listen 127.0.0.1:$PORT;
    location /t { content_by_lua_file $T/handler.lua; }
  }
}
CONF
	LD_LIBRARY_PATH="$HOSTS/root/usr/lib/x86_64-linux-gnu" \
		nginx -p "$T" -c "$T/nginx.conf" 3>&-
	local i
	for i in $(seq 1 100); do
		WORKER=$(pgrep -P "$(cat "$T/nginx.pid" 2>/dev/null)" 2>/dev/null | head -1)
		[ -n "$WORKER" ] && curl -sf "http://127.0.0.1:$PORT/t" > /dev/null && return 0
		sleep 0.05
	done
	tail -3 "$T/logs/error.log" >&2
	return 1
}

@test "nginx + OpenResty's Lua module (libluajit2): a worker traced with -p, exact per-line counts (jit off), nginx unharmed" {
	nginx_start
	"$LMT" -p "$WORKER" -o "$T/w.bin" 2> "$T/err" 3>&- &
	local tpid=$! i
	wait_for "$T/err" "tracing PID $WORKER"
	grep -q 'OpenResty LuaJIT 2.1 GC64' "$T/err"
	for i in $(seq 1 50); do
		[ "$(curl -sf "http://127.0.0.1:$PORT/t")" = "ok 10" ]
	done
	kill -INT "$tpid"
	wait "$tpid"
	no_probes_left
	# still serving, the same worker
	[ "$(curl -sf "http://127.0.0.1:$PORT/t")" = "ok 10" ]
	[ "$(pgrep -P "$(cat "$T/nginx.pid")" | head -1)" = "$WORKER" ]
	"$LMT" report "$T/w.bin" > "$T/w.txt"
	# 50 requests: 10 tables and keep's array part at line 3, keep at line 1
	[ "$(counts ALLOCATIONS @"$T"/handler.lua:3 "$T/w.txt")" = 550 ]
	[ "$(counts ALLOCATIONS @"$T"/handler.lua:1 "$T/w.txt")" = 50 ]
}
