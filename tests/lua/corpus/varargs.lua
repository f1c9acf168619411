-- Corpus (tests/jitexact.bats): variadic helpers: a logger packing its
-- arguments, select('#'), unpack, forwarding with ....
local N = tonumber(arg[1]) or 20000
local logbuf = {}
local function log(level, ...)
  local n = select("#", ...)
  local t = { level, n, ... }
  logbuf[#logbuf % 128 + 1] = t
end
local function wrap(f, ...)
  return f(...)
end
local function sum(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + select(i, ...) end
  return { s }
end
local keep = {}
for i = 1, N do
  log("info", "req", i, i * 2)
  keep[i % 64] = wrap(sum, i, 1, 2)
  local a, b = unpack({ i, i + 1 })
  keep[i % 64 + 64] = { a, b }
end
print(#keep)
