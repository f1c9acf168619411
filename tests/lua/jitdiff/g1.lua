-- luagen.lua 1 2000
local keep = {}
for i = 1, 64 do keep[i] = false end
local c = 0
local function bump() c = c + 1 return c end
local function f1(x)
  keep[(x + 1) % 64 + 1] = { x, 1 }
  keep[(x + 2) % 64 + 1] = "s2_" .. bump()
  keep[(x + 3) % 64 + 1] = "s3_" .. bump()
  do local ok, e = pcall(error, { x }) keep[(x + 4) % 64 + 1] = e end
  return "r1_" .. bump()
end
local m1 = setmetatable({}, { __index = function(t, k) return f1(k) end })
local function v1(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f2(x)
  if x % 4 == 0 then
    keep[(x + 5) % 64 + 1] = { 5 }
  end
  keep[(x + 6) % 64 + 1] = function() return x end
  keep[(x + 7) % 64 + 1] = m1[x]
  return f1(x + 1)
end
local m2 = setmetatable({}, { __index = function(t, k) return f2(k) end })
local function v2(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f3(x)
  keep[(x + 8) % 64 + 1] = function() return x end
  do local ok, e = pcall(error, { x }) keep[(x + 9) % 64 + 1] = e end
  if x % 8 == 0 then
    keep[(x + 10) % 64 + 1] = { 10 }
  end
  keep[(x + 11) % 64 + 1] = f1(x + 4)
  return f2(x + 1)
end
local m3 = setmetatable({}, { __index = function(t, k) return f3(k) end })
local function v3(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f4(x)
  keep[(x + 12) % 64 + 1] = function() return x end
  for j = 1, 1 do keep[(x + 13) % 64 + 1] = { j, x } end
  keep[(x + 14) % 64 + 1] = m2[x]
  return f3(x + 1)
end
local m4 = setmetatable({}, { __index = function(t, k) return f4(k) end })
local function v4(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f5(x)
  if x % 8 == 0 then
    keep[(x + 15) % 64 + 1] = { 15 }
  end
  if x % 6 == 0 then
    keep[(x + 16) % 64 + 1] = { 16 }
  end
  keep[(x + 17) % 64 + 1] = "s17_" .. bump()
  keep[(x + 18) % 64 + 1] = "s18_" .. bump()
  return { x }
end
local m5 = setmetatable({}, { __index = function(t, k) return f5(k) end })
local function v5(...)
  local n = select("#", ...)
  return { n, ... }
end
local function f6(x)
  do local ok, v = pcall(f5, x) keep[(x + 19) % 64 + 1] = v end
  do local ok, v = pcall(f1, x) keep[(x + 20) % 64 + 1] = v end
  keep[(x + 21) % 64 + 1] = function() return x end
  return "r6_" .. bump()
end
local m6 = setmetatable({}, { __index = function(t, k) return f6(k) end })
local function v6(...)
  local n = select("#", ...)
  return { n, ... }
end
for x = 1, 2000 do
  do local ok, v = pcall(f6, x) keep[(x + 22) % 64 + 1] = v end
  do local ok, v = pcall(f4, x) keep[(x + 23) % 64 + 1] = v end
  do local ok, v = pcall(f6, x) keep[(x + 24) % 64 + 1] = v end
  keep[(x + 25) % 64 + 1] = f4(x)
end
print(#keep)
