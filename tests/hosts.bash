# Real hosts from Debian's packages, each with a Lua workload of known
# per-line allocations (JIT off) and an exact count of how often it ran
# (tests/hosts.bats). Installed by `make deps`; nginx's Lua module needs
# OpenResty's libluajit2, which conflicts with Debian's luajit: it is
# unpacked in build/hosts (a private LuaJIT deployment) by hosts_unpack.

HOSTS="$BATS_TEST_DIRNAME/../build/hosts"

hosts_unpack() {
	local d=$HOSTS f
	[ -e "$d/root/usr/lib/nginx/modules/ngx_http_lua_module.so" ] && return 0
	mkdir -p "$d/deb"
	(cd "$d/deb" && apt-get download libnginx-mod-http-lua libnginx-mod-http-ndk \
		libluajit2-5.1-2 lua-resty-core lua-resty-lrucache) > "$d/download.log" 2>&1 || return 1
	for f in "$d"/deb/*.deb; do
		dpkg-deb -x "$f" "$d/root" || return 1
	done
}

# gone PID: exited (a zombie counts: a daemon's parent may reap it late).
gone() {
	! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

# -- nginx + OpenResty's Lua module, two workers, wrk -------------------------

# ngx_conf T: T/nginx.conf and T/handler.lua on a free port (NGX_PORT);
# the JIT off, unless NGX_JIT_OFF is set (to "": the JIT on).
# handler.lua per request: line 1, 1 allocation; line 3, 11 allocations (10
# tables and keep's array part) and 3 reallocations. Each request that ran
# it writes "PID STATUS URI" to T/logs/t.log: the exact count, per worker.
ngx_conf() {
	local t=$1
	mkdir -p "$t/logs"
	while :; do
		NGX_PORT=$((20000 + RANDOM % 20000))
		# free on every address (a listener on 0.0.0.0 or [::] takes it too)
		[ -z "$(ss -Hltn "sport = :$NGX_PORT")" ] && break
	done
	if [ -n "${NGX_HANDLER:-}" ]; then
		printf '%s\n' "$NGX_HANDLER" > "$t/handler.lua"
	else
		cat > "$t/handler.lua" <<'LUA'
local keep = {}
for i = 1, 10 do
  keep[i] = { i }
end
ngx.say("ok ", #keep)
LUA
	fi
	cat > "$t/nginx.conf" <<CONF
load_module $HOSTS/root/usr/lib/nginx/modules/ndk_http_module.so;
load_module $HOSTS/root/usr/lib/nginx/modules/ngx_http_lua_module.so;
user root; # the workers read files in the test's private directory
worker_processes 2;
pid $t/nginx.pid;
error_log $t/logs/error.log;
events { worker_connections 256; }
http {
  log_format cnt '\$pid \$status \$uri';
  access_log off;
  lua_package_path "$HOSTS/root/usr/share/lua/5.1/?.lua;;";
  init_by_lua_block { ${NGX_JIT_OFF-jit.off(); jit.flush()} }
  server {
    listen 127.0.0.1:$NGX_PORT reuseport;
    location /t {
      access_log $t/logs/t.log cnt;
      content_by_lua_file $t/handler.lua;
    }
  }
}
CONF
}

# ngx_workers T: waits for the master's two workers (other than those in
# $2) and the port; sets NGX_MASTER and NGX_WORKERS.
ngx_workers() {
	local t=$1 old=" ${2:-} " i w n
	for i in $(seq 1 200); do
		NGX_MASTER=$(cat "$t/nginx.pid" 2>/dev/null)
		NGX_WORKERS=
		n=0
		for w in $(pgrep -P "${NGX_MASTER:-0}" 2>/dev/null); do
			[[ "$old" == *" $w "* ]] && continue
			NGX_WORKERS="$NGX_WORKERS $w"
			n=$((n + 1))
		done
		NGX_WORKERS=${NGX_WORKERS# }
		[ "$n" = 2 ] && ss -ltn | grep -q "127.0.0.1:$NGX_PORT " && return 0
		sleep 0.05
	done
	tail -5 "$t/logs/error.log" >&2
	return 1
}

# ngx_start T: nginx (it daemonizes), with the private LuaJIT on its own
# command line only (wrk must keep Debian's).
ngx_start() {
	local t=$1
	rm -f "$t/nginx.pid" "$t/logs/t.log"
	LD_LIBRARY_PATH="$HOSTS/root/usr/lib/x86_64-linux-gnu" \
		nginx -e "$t/logs/error.log" -p "$t" -c "$t/nginx.conf" 3>&- || return 1
	ngx_workers "$t"
}

# ngx_load SECS: wrk, 2 threads, 32 connections (reuseport spreads them).
ngx_load() {
	wrk -t2 -c32 -d"$1s" "http://127.0.0.1:$NGX_PORT/t" > /dev/null 2>&1
}

# ngx_stop T: graceful stop; waits for the master.
ngx_stop() {
	local i
	kill -QUIT "$NGX_MASTER" 2>/dev/null
	for i in $(seq 1 400); do
		gone "$NGX_MASTER" && return 0
		sleep 0.025
	done
	return 1
}

# ngx_count T PID: requests the worker PID ran the handler for.
ngx_count() {
	awk -v p="$2" '$1 == p && $3 == "/t"' "$1/logs/t.log" | wc -l
}

# -- sysbench, two threads (a VM per thread, and the main VM) ---------------

# sb_script D: D/alloc.lua; event() makes 10 tables at line 6 (JIT off
# unless SB_JIT=on; kept a while, so that the JIT cannot sink them); each
# thread writes how often its event() ran to D/count.TID.
sb_script() {
	mkdir -p "$1"
	{
	[ "${SB_JIT:-off}" = off ] && echo 'jit.off(); jit.flush()' || echo '-- jit on'
	cat <<'LUA'
local n = 0
local out = os.getenv("SB_COUNT_DIR")
local keep = {} for i = 1, 1000 do keep[i] = false end
function event()
  for i = 1, 10 do keep[(n * 10 + i) % 1000 + 1] = {} end
  n = n + 1
end
function thread_done(tid)
  local f = assert(io.open(out .. "/count." .. tid, "w"))
  f:write(n, "\n")
  f:close()
end
LUA
	} > "$1/alloc.lua"
}

# sb_cmd D N: the command line of a run of N events.
sb_cmd() {
	echo sysbench "$1/alloc.lua" --threads=2 --events="$2" --time=0 run
}

# -- knot-resolver, dnsperf -------------------------------------------------

# kr_conf D: D/kresd.conf (its line 12: 10 tables per query), answering
# every query itself; no module that would query the internet. The count
# of handler runs goes to D/count when the VM closes.
kr_conf() {
	local d=$1
	mkdir -p "$d/run"
	cat > "$d/kresd.conf" <<'LUA'
jit.off(); jit.flush()
local out = env.KR_OUT
for _, m in ipairs({'priming', 'detect_time_skew', 'detect_time_jump', 'ta_update', 'ta_signal_query', 'ta_sentinel', 'watchdog'}) do
  modules.unload(m)
end
trust_anchors.remove('.')
net.listen('127.0.0.1', 5353, { kind = 'dns' })
cache.size = 10 * MB
local answer = policy.ANSWER({ [kres.type.A] = { rdata = kres.str2ip('192.0.2.1'), ttl = 300 } }, true)
local n = 0
local function handler(state, req)
  for i = 1, 10 do local t = {} end
  n = n + 1
  return answer(state, req)
end
policy.add(policy.all(handler))
sentinel = newproxy(true)
getmetatable(sentinel).__gc = function()
  local f = io.open(out .. '/count', 'w'); f:write(n, '\n'); f:close()
end
LUA
	printf 'a.example A\n' > "$d/queries.txt"
}

# kr_start D: kresd in a network namespace of its own (loopback only);
# KR_PID is kresd's PID. Waits until it listens.
kr_start() {
	local d=$1 i
	rm -f "$d/count"
	KR_OUT=$d unshare -n sh -c 'ip link set lo up && exec kresd -n -c "$1/kresd.conf" "$1/run"' \
		sh "$d" > "$d/kresd.log" 2>&1 < /dev/null 3>&- &
	KR_PID=$!
	for i in $(seq 1 200); do
		if [ "$(readlink "/proc/$KR_PID/exe" 2>/dev/null)" = /usr/sbin/kresd ] &&
			nsenter -t "$KR_PID" -n ss -lun 2>/dev/null | grep -q '127.0.0.1:5353 '; then
			return 0
		fi
		sleep 0.05
	done
	cat "$d/kresd.log" >&2
	return 1
}

# kr_load D N: exactly N queries (a one-line data file), from inside its
# namespace.
kr_load() {
	nsenter -t "$KR_PID" -n dnsperf -s 127.0.0.1 -p 5353 -d "$1/queries.txt" \
		-n "$2" > "$1/dnsperf.out" 2>&1
}

# kr_stop D: SIGTERM; KR_COUNT is how often the handler ran.
kr_stop() {
	kill -TERM "$KR_PID"
	wait "$KR_PID"
	KR_COUNT=$(cat "$1/count")
}

# line_of STREAM LOC: ALLOCATIONS at LOC in STREAM's report (0 if none).
line_of() {
	local st=0 n
	"$LMT" report "$1" > "$1.txt" || st=$?
	[ "$st" -eq 0 ] || return 1
	n=$(counts ALLOCATIONS "$2" "$1.txt")
	echo "${n:-0}"
}
