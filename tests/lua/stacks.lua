-- Known call chains to one constructor (tests/stacks.bats): line numbers matter.
local keep = {}
local function make(n)
  return { n, n, n }
end
local function caller_a(n)
  local t = make(n)
  return t
end
local function caller_b(n)
  local t = make(n)
  return t
end
local mt = { __index = function(t, k) local x = make(k) return x end }
local function tail(n) return make(n) end
local function rec(d)
  keep[#keep + 1] = make(d)
  if d > 0 then rec(d - 1) end
end
local function cmp(a, b)
  keep[#keep + 1] = make(a)
  return a < b
end
local N = tonumber(arg and arg[1]) or 100
local arr = { 2, 1 }
for i = 1, N do
  keep[#keep + 1] = caller_a(i)
  keep[#keep + 1] = caller_b(i)
  local ok, v = pcall(make, i)
  keep[#keep + 1] = v
  keep[#keep + 1] = setmetatable(arr, mt)[i + 2]
  keep[#keep + 1] = tail(i)
  local co = coroutine.wrap(function() coroutine.yield(make(i)) end)
  keep[#keep + 1] = co()
  arr[1], arr[2] = 2, 1
  table.sort(arr, cmp)
  rec(70)
  if i == N and os.getenv("LMT_TRACEBACKS") then
    -- What LuaJIT's own debug library says of the same chains.
    local tb = debug.traceback
    make = function(n) io.write(tb("", 2):gsub("\n", "|"), "\n") return {} end
    caller_a(i); caller_b(i); pcall(make, i); local _ = setmetatable({}, mt)[1]
    tail(i); coroutine.wrap(function() make(i) end)(); table.sort({ 2, 1 }, cmp)
  end
end
