-- luagen.lua 8 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  keep[(x + 1) % 64 + 1] = string.format("%d:1", bump())
  keep[(x + 2) % 64 + 1] = "s2_" .. bump()
  return "r1_" .. bump()
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  keep[(x + 3) % 64 + 1] = f1(x + 3)
  do local ok, v = pcall(f1, x) keep[(x + 4) % 64 + 1] = v end
  do local ok, v = pcall(f1, x) keep[(x + 5) % 64 + 1] = v end
  return f1(x + 1)
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  keep[(x + 6) % 64 + 1] = function() return x end
  if x % 8 == 0 then
    keep[(x + 7) % 64 + 1] = { 7 }
  end
  return f2(x + 1)
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  do local ok, v = pcall(f3, x) keep[(x + 8) % 64 + 1] = v end
  keep[(x + 9) % 64 + 1] = f3(x)
  keep[(x + 10) % 64 + 1] = m3[x]
  do local ok, v = pcall(f3, x) keep[(x + 11) % 64 + 1] = v end
end
print(#keep)
