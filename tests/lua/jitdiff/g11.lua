-- luagen.lua 11 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  keep[(x + 1) % 64 + 1] = { x, 1 }
  keep[(x + 2) % 64 + 1] = string.format("%d:2", bump())
  keep[(x + 3) % 64 + 1] = "s3_" .. bump()
  do local ok, e = pcall(error, { x }) keep[(x + 4) % 64 + 1] = e end
  return { x }
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  do local ok, e = pcall(error, { x }) keep[(x + 5) % 64 + 1] = e end
  keep[(x + 6) % 64 + 1] = f1(x + 1)
  keep[(x + 7) % 64 + 1] = m1[x]
  for j = 1, 1 do keep[(x + 8) % 64 + 1] = { j, x } end
  if x % 3 == 0 then
    keep[(x + 9) % 64 + 1] = { 9 }
  end
  return f1(x + 1)
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  keep[(x + 10) % 64 + 1] = v1(x, 10, f1(x))
  keep[(x + 11) % 64 + 1] = m2[x]
  return f1(x + 1)
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f4(x)
  keep[(x + 12) % 64 + 1] = { x, 12 }
  for j = 1, 2 do keep[(x + 13) % 64 + 1] = { j, x } end
  for j = 1, 2 do keep[(x + 14) % 64 + 1] = { j, x } end
  return { x }
end
local m4 = setmetatable({}, { __index = function(t, k) return f4(k) end })
local function v4(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  do local ok, v = pcall(f3, x) keep[(x + 15) % 64 + 1] = v end
  do local ok, v = pcall(f1, x) keep[(x + 16) % 64 + 1] = v end
  keep[(x + 17) % 64 + 1] = m2[x]
  keep[(x + 18) % 64 + 1] = f3(x)
end
print(#keep)
