-- A heap that changes while it is copied, for tests/heap.bats, the nginx
-- test's shape and make bench. Arguments: N (items kept), S (bytes of
-- strings kept besides: make bench's ~1 GB), FILE ("ready" written there),
-- PACE (optional: microseconds slept every 1000 rounds, a load that
-- leaves the CPU idle between requests; 0 or none: without a pause).
-- N tables of class Item under package.loaded["app.cache"].items, each an
-- empty table (64 bytes), never dropped; then, forever, tables and strings
-- allocated and dropped and 64 scratch slots replaced (pages written, the
-- GC running), never touching the items; with S, one kept string in 16
-- rounds replaced.
local function build(N, S)
  local Item = {}
  Item.__index = Item
  local cache = { Item = Item, items = {} }
  package.loaded["app.cache"] = cache
  for i = 1, N do cache.items[i] = setmetatable({}, Item) end
  -- S bytes of strings, 1 KiB each, in tables of 1024
  local blob, pad = {}, string.rep("x", 1000)
  for i = 1, math.floor(S / 1024 / 1024) do
    local t = {}
    for j = 1, 1024 do t[j] = pad .. i .. ":" .. j end
    blob[i] = t
  end
  BLOB, PAD = blob, pad
  local out = io.open(arg[3], "w")
  out:write("ready\n")
  out:close()
end

local function churn(pace)
  local scratch, blob, pad, k = {}, BLOB, PAD, 0
  local usleep
  if pace > 0 then
    local ffi = require("ffi")
    ffi.cdef("int usleep(unsigned int)")
    usleep = ffi.C.usleep
  end
  while true do
    k = k + 1
    if usleep and k % 1000 == 0 then usleep(pace) end
    scratch[k % 64] = { k, tostring(k) }
    if #blob > 0 and k % 16 == 0 then
      local t = blob[k % #blob + 1]
      t[k % 1024 + 1] = pad .. k
    end
  end
end

build(tonumber(arg[1]), tonumber(arg[2]))
churn(tonumber(arg[4]) or 0)
