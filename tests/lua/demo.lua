-- Demo workload: a toy request handler with a cache that never forgets.
local cache = {}

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

local function handle(i)
  local req = "user=u" .. (i % 500) .. "&page=p" .. i .. "&lang=en"
  local body = render(parse(req))
  cache[req] = body            -- the leak: every request is kept
  return #body
end

local total = 0
for i = 1, 20000 do total = total + handle(i) end
print("handled 20000 requests, " .. total .. " bytes of output")
