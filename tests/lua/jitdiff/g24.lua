-- luagen.lua 24 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  for j = 1, 1 do keep[(x + 1) % 64 + 1] = { j, x } end
  keep[(x + 2) % 64 + 1] = "s2_" .. bump()
  keep[(x + 3) % 64 + 1] = string.format("%d:3", bump())
  keep[(x + 4) % 64 + 1] = { x, 4 }
  return "r1_" .. bump()
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  keep[(x + 5) % 64 + 1] = v1(x, 5, f1(x))
  do local ok, e = pcall(error, { x }) keep[(x + 6) % 64 + 1] = e end
  keep[(x + 7) % 64 + 1] = v1(x, 7, f1(x))
  keep[(x + 8) % 64 + 1] = m1[x]
  return f1(x + 1)
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  keep[(x + 9) % 64 + 1] = string.format("%d:9", bump())
  keep[(x + 10) % 64 + 1] = function() return x end
  keep[(x + 11) % 64 + 1] = f2(x + 7)
  keep[(x + 12) % 64 + 1] = m1[x]
  keep[(x + 13) % 64 + 1] = string.format("%d:13", bump())
  return "r3_" .. bump()
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  keep[(x + 14) % 64 + 1] = f1(x)
  keep[(x + 15) % 64 + 1] = m1[x]
  do local ok, v = pcall(f3, x) keep[(x + 16) % 64 + 1] = v end
  do local ok, v = pcall(f2, x) keep[(x + 17) % 64 + 1] = v end
end
print(#keep)
