-- A realistic mix: parse a request into a table, render it back through a
-- sorted buffer, keep a bounded cache.
if arg[2] == "off" then jit.off() end
local N = tonumber(arg[1])
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

local t0 = os.clock()
for i = 1, N do
  local req = "user=u" .. (i % 500) .. "&page=p" .. i .. "&lang=en"
  cache[req] = render(parse(req))
  ncache = ncache + 1
  if ncache == 1000 then cache, ncache = {}, 0 end
end
print(string.format("%.6f", os.clock() - t0))
