-- A realistic mix: parse a request into a table, render it back through a
-- sorted buffer, keep a bounded cache.
-- Usage: luajit mixed.lua N on|off [PAIRS] (see timing.lua)
if arg[2] == "off" then jit.off() end
local run = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua")
local cache, ncache = {}, 0

local function parse(req)
  local t = {}
  for k, v in req:gmatch("(%w+)=(%w+)") do t[k] = v end
  return t
end

local function render(t)
  local parts = {}
  for k, v in pairs(t) do parts[#parts + 1] = k .. ":" .. v end
  table.sort(parts)
  return table.concat(parts, ",")
end

local i0 = 0
local function loop(n)
  for i = i0 + 1, i0 + n do
    local req = "user=u" .. (i % 500) .. "&page=p" .. i .. "&lang=en"
    cache[req] = render(parse(req))
    ncache = ncache + 1
    if ncache == 1000 then cache, ncache = {}, 0 end
  end
  i0 = i0 + n
end

run(loop, tonumber(arg[1]), tonumber(arg[3]))
