-- luagen.lua 9 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  keep[(x + 1) % 64 + 1] = "s1_" .. bump()
  keep[(x + 2) % 64 + 1] = "s2_" .. bump()
  keep[(x + 3) % 64 + 1] = "s3_" .. bump()
  keep[(x + 4) % 64 + 1] = string.format("%d:4", bump())
  return "r1_" .. bump()
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  keep[(x + 5) % 64 + 1] = m1[x]
  for j = 1, 2 do keep[(x + 6) % 64 + 1] = { j, x } end
  return { x }
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  do local ok, v = pcall(f2, x) keep[(x + 7) % 64 + 1] = v end
  keep[(x + 8) % 64 + 1] = m1[x]
  keep[(x + 9) % 64 + 1] = v2(x, 9, f2(x))
  for j = 1, 2 do keep[(x + 10) % 64 + 1] = { j, x } end
  return "r3_" .. bump()
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f4(x)
  if x % 5 == 0 then
    keep[(x + 11) % 64 + 1] = { 11 }
  end
  keep[(x + 12) % 64 + 1] = "s12_" .. bump()
  return f2(x + 1)
end
local m4 = setmetatable({}, { __index = function(t, k) return f4(k) end })
local function v4(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f5(x)
  keep[(x + 13) % 64 + 1] = string.format("%d:13", bump())
  do local ok, e = pcall(error, { x }) keep[(x + 14) % 64 + 1] = e end
  keep[(x + 15) % 64 + 1] = m1[x]
  keep[(x + 16) % 64 + 1] = m4[x]
  return { x }
end
local m5 = setmetatable({}, { __index = function(t, k) return f5(k) end })
local function v5(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f6(x)
  keep[(x + 17) % 64 + 1] = m1[x]
  do local ok, e = pcall(error, { x }) keep[(x + 18) % 64 + 1] = e end
  return f2(x + 1)
end
local m6 = setmetatable({}, { __index = function(t, k) return f6(k) end })
local function v6(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  do local ok, v = pcall(f6, x) keep[(x + 19) % 64 + 1] = v end
  keep[(x + 20) % 64 + 1] = f5(x)
end
print(#keep)
