-- One of several VMs of one process (build/host -t N heap_vms.lua), for
-- tests/heap_views.bats. GC stopped first: nothing is swept. Each VM takes
-- the first free slot K (1, 2, ...: a directory made under $HEAP_VMS_DIR,
-- mkdir being atomic), holds 10 * K instances of a class Item (64 bytes
-- each) in package.loaded["app.cache"].items (an array of 10 * K slots
-- made with table.new), writes "ready" to $HEAP_VMS_DIR/ready.K, and
-- waits until $HEAP_VMS_DIR/go exists. No table constructor has contents.
local tnew = require("table.new")
collectgarbage("collect")
collectgarbage("stop")
local dir = os.getenv("HEAP_VMS_DIR")

local function ok(r)
  return r == 0 or r == true
end

local function build()
  local k = 1
  while not ok(os.execute("mkdir " .. dir .. "/slot." .. k .. " 2>/dev/null")) do
    k = k + 1
  end
  local Item = {}
  Item.__index = Item
  local cache = {}
  cache.Item = Item
  package.loaded["app.cache"] = cache
  local items = tnew(10 * k, 0)
  cache.items = items
  for i = 1, 10 * k do items[i] = setmetatable({}, Item) end
  return k
end

local k = build()
local f = io.open(dir .. "/ready." .. k, "w")
f:write("ready\n")
f:close()
while true do
  local g = io.open(dir .. "/go")
  if g then g:close() break end
  os.execute("sleep 0.05")
end
