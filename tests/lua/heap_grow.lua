-- A heap whose mappings grow while it is copied, and little else written,
-- for tests/kernels/guest.bats. Arguments: N (items kept), FILE ("ready"
-- written there). N tables of class Item under
-- package.loaded["app.cache"].items, never dropped; then, forever, every
-- 10 ms a string of 200 KiB made (LuaJIT's allocator maps it on its own,
-- next to the last: a mapping that grows) and the fifth before it dropped.
local function build(N)
  local Item = {}
  Item.__index = Item
  local cache = { Item = Item, items = {} }
  package.loaded["app.cache"] = cache
  for i = 1, N do cache.items[i] = setmetatable({}, Item) end
  local out = io.open(arg[2], "w")
  out:write("ready\n")
  out:close()
end

local function grow()
  local ffi = require("ffi")
  ffi.cdef("int usleep(unsigned int)")
  local ring, pad, k = {}, string.rep("x", 200 * 1024), 0
  while true do
    k = k + 1
    ring[k % 5] = pad .. k
    ffi.C.usleep(10000)
  end
end

build(tonumber(arg[1]))
grow()
