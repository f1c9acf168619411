-- luagen.lua 3 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  do local ok, e = pcall(error, { x }) keep[(x + 1) % 64 + 1] = e end
  keep[(x + 2) % 64 + 1] = "s2_" .. bump()
  keep[(x + 3) % 64 + 1] = "s3_" .. bump()
  keep[(x + 4) % 64 + 1] = function() return x end
  return { x }
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  keep[(x + 5) % 64 + 1] = f1(x + 4)
  keep[(x + 6) % 64 + 1] = string.format("%d:6", bump())
  return "r2_" .. bump()
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  keep[(x + 7) % 64 + 1] = "s7_" .. bump()
  keep[(x + 8) % 64 + 1] = f1(x + 8)
  return { x }
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f4(x)
  keep[(x + 9) % 64 + 1] = string.format("%d:9", bump())
  keep[(x + 10) % 64 + 1] = v2(x, 10, f2(x))
  return f2(x + 1)
end
local m4 = setmetatable({}, { __index = function(t, k) return f4(k) end })
local function v4(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  do local ok, v = pcall(f2, x) keep[(x + 11) % 64 + 1] = v end
  keep[(x + 12) % 64 + 1] = f2(x)
  keep[(x + 13) % 64 + 1] = m4[x]
end
print(#keep)
