-- A heap of known shape for tests/heap.bats. Args: N M U K C Y G [P] (counts; all 0: the
-- baseline; P: more()'s). Traces made before it (Tarantool's startup, 1 run in 12) flushed
-- (the oracle makes a table per trace, its constants hold objects), GC stopped: nothing is
-- swept, garbage stays, counted apart. Prints the in-VM oracle's reachable counts (a Lua
-- walker over the GC's roots), then "ready", then waits for a line on stdin while it is
-- snapshotted. No table constructor has contents: one with constant keys has a template
-- table, a prototype's constant, that the GC reaches and Lua cannot see.
jit.flush() collectgarbage("collect")
collectgarbage("stop")
local N, M, U, K, C, Y, G, P = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]),
  tonumber(arg[4]), tonumber(arg[5]), tonumber(arg[6]), tonumber(arg[7]), tonumber(arg[8])

local function build()
  -- N tables under package.loaded.x.cache["uI"]
  local x, cache = {}, {}
  x.cache = cache
  package.loaded.x = x
  for i = 1, N do
    local t = {}
    t[1] = i
    cache["u" .. i] = t
  end
  -- a class and M instances of it
  local User = {}
  User.__index = User
  local models = {}
  models.User = User
  package.loaded["app.models"] = models
  INST = {}
  for i = 1, M do INST[i] = setmetatable({}, User) end
  -- U tables held only by an upvalue of a function
  HOLDERS = {}
  for i = 1, U do
    local held = {}
    HOLDERS[i] = function() return held end
  end
  -- a weak-keyed table whose K keys nothing else holds: garbage
  local wmt = {}
  wmt.__mode = "k"
  WEAK = setmetatable({}, wmt)
  for i = 1, K do WEAK[{}] = i end
  -- C coroutines, each holding a table in a local
  COS = {}
  for i = 1, C do
    local co = coroutine.create(function()
      local mine = {}
      coroutine.yield()
      return mine
    end)
    coroutine.resume(co)
    COS[i] = co
  end
  -- Y cycles of two tables, dropped: garbage
  for i = 1, Y do
    local a, b = {}, {}
    a.b = b
    b.a = a
  end
  -- G tables dropped: garbage
  for i = 1, G do local t = {} end
end

-- P of each more shape: userdata (newproxy) sharing a metatable, each
-- with an env table of its own; a weak-valued table holding P tables
-- only it holds (garbage) and P also held strongly; P coroutines, each
-- suspended with a closure over its local table (an open upvalue); a
-- table reached only through a metatable's __index; P tables held by the
-- registry through luaL_ref (lmtmod.ref, if LUA_CPATH finds lmtmod.so).
local function more()
  UDS = {}
  for i = 1, P do
    local u = newproxy(UDS[1] or true)
    debug.setfenv(u, {})
    UDS[i] = u
  end
  if P > 0 then getmetatable(UDS[1]).hidden = {} end
  local vmt = {}
  vmt.__mode = "v"
  WEAKV = setmetatable({}, vmt)
  STRONG = {}
  for i = 1, P do
    WEAKV[i] = {}
    local t = {}
    STRONG[i] = t
    WEAKV[P + i] = t
  end
  OPEN = {}
  for i = 1, P do
    local co = coroutine.create(function()
      local mine = {}
      local function see() return mine end
      coroutine.yield(see)
    end)
    local _, see = coroutine.resume(co)
    OPEN[i] = { co, see }
  end
  local base = {}
  base.deep = {}
  local imt = {}
  imt.__index = base
  VIAMT = setmetatable({}, imt)
  local ok, mod = pcall(require, "lmtmod")
  if ok then
    REFS = {}
    for i = 1, P do REFS[i] = mod.ref({}) end
  end
end

local util = require("jit.util") -- the oracle reads the traces' constants

-- The oracle: tables, functions, threads and userdata reachable from the
-- registry, the main thread (its env, and the stack frames above this
-- one), the base metatable of strings, honouring __mode. Light userdata
-- (no env) are no objects.
local function oracle()
  local seen, n, queue = {}, {}, {}
  n.table, n["function"], n.thread, n.userdata = 0, 0, 1, 0 -- 1: the main thread
  local function push(v)
    local t = type(v)
    if t == "userdata" and debug.getfenv(v) == nil then return end
    if n[t] and not seen[v] then
      seen[v] = true
      n[t] = n[t] + 1
      queue[#queue + 1] = v
    end
  end
  push(debug.getregistry())
  push(debug.getfenv(print) and _G)
  push(debug.getmetatable(""))
  -- what compiled traces hold (lj_gc.c's gc_traverse_trace): their GC
  -- constants; every trace here is of a prototype still reachable
  for tr = 1, 65535 do
    local info = util.traceinfo(tr)
    if info then
      for idx = -1, -info.nk, -1 do push((util.tracek(tr, idx))) end
    end
  end
  -- the main thread's frames below this one (levels 2 and up)
  local level = 2
  while debug.getinfo(level, "f") do
    push(debug.getinfo(level, "f").func)
    local i = 1
    while true do
      local name, v = debug.getlocal(level, i)
      if not name then break end
      push(v)
      i = i + 1
    end
    level = level + 1
  end
  local q = 1
  while q <= #queue do
    local v = queue[q]
    q = q + 1
    local t = type(v)
    if t == "table" then
      local mt = debug.getmetatable(v)
      local mode = mt and rawget(mt, "__mode")
      local wk = type(mode) == "string" and mode:find("k")
      local wv = type(mode) == "string" and mode:find("v")
      push(mt)
      for k, x in next, v do
        if not wk then push(k) end
        if not wv then push(x) end
      end
    elseif t == "function" then
      push(debug.getfenv(v))
      local i = 1
      while true do
        local name, x = debug.getupvalue(v, i)
        if name == nil then break end
        push(x)
        i = i + 1
      end
    elseif t == "thread" then
      push(debug.getfenv(v))
      local lv = 0
      while debug.getinfo(v, lv, "f") do
        push(debug.getinfo(v, lv, "f").func)
        local i = 1
        while true do
          local name, x = debug.getlocal(v, lv, i)
          if not name then break end
          push(x)
          i = i + 1
        end
        lv = lv + 1
      end
    elseif t == "userdata" then
      push(debug.getmetatable(v))
      push(debug.getfenv(v))
    end
  end
  return n.table, n["function"], n.thread, n.userdata
end

-- Not compiled: a trace of the oracle would keep its closures, and so
-- its visited set (strong keys: every object), alive as a constant.
jit.off(oracle, true)
build()
if P then more() end
local tables, functions, threads, userdata = oracle()
io.stdout:write(string.format("oracle table %d function %d thread %d userdata %d\n",
  tables, functions, threads, userdata))
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
print("done")
