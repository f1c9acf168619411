-- luagen.lua 147 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  keep[(x + 1) % 64 + 1] = string.format("%d:1", bump())
  for j = 1, 3 do keep[(x + 2) % 64 + 1] = { j, x } end
  keep[(x + 3) % 64 + 1] = { x, 3 }
  keep[(x + 4) % 64 + 1] = { x, 4 }
  return "r1_" .. bump()
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  keep[(x + 5) % 64 + 1] = string.format("%d:5", bump())
  keep[(x + 6) % 64 + 1] = string.format("%d:6", bump())
  keep[(x + 7) % 64 + 1] = f1(x + 7)
  for j = 1, 3 do keep[(x + 8) % 64 + 1] = { j, x } end
  if x % 3 == 0 then
    keep[(x + 9) % 64 + 1] = { 9 }
  end
  return { x }
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  keep[(x + 10) % 64 + 1] = m2[x]
  keep[(x + 11) % 64 + 1] = f1(x + 3)
  return { x }
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f4(x)
  keep[(x + 12) % 64 + 1] = f1(x + 7)
  keep[(x + 13) % 64 + 1] = "s13_" .. bump()
  return "r4_" .. bump()
end
local m4 = setmetatable({}, { __index = function(t, k) return f4(k) end })
local function v4(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  keep[(x + 14) % 64 + 1] = m1[x]
  keep[(x + 15) % 64 + 1] = f4(x)
  keep[(x + 16) % 64 + 1] = m2[x]
end
print(#keep)
