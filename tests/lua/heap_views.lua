-- A heap of known shape for tests/heap_views.bats. Arguments: N F. GC
-- stopped first: nothing is swept. Holds F cdata of struct lmt_point (two
-- int32_t: 24 bytes each with their GCcdata) under
-- package.loaded.views.points, a class Item at package.loaded["app.models"],
-- and package.loaded.views.items, an array of N slots made with table.new
-- (its size fixed). Prints "ready 1"; at a line on stdin it adds N
-- instances of Item (64 bytes each) to items, prints "ready 2"; at another
-- line it ends. No table constructor has contents (see heap_known.lua).
local ffi = require("ffi")
local tnew = require("table.new")
collectgarbage("collect")
collectgarbage("stop")
local N, F = tonumber(arg[1]), tonumber(arg[2])
ffi.cdef("struct lmt_point { int32_t x, y; };")

-- In functions: their locals are gone from the stack when they return.
local function build()
  local views = {}
  package.loaded.views = views
  local points = tnew(F, 0)
  views.points = points
  for i = 1, F do points[i] = ffi.new("struct lmt_point") end
  local Item = {}
  Item.__index = Item
  local models = {}
  models.Item = Item
  package.loaded["app.models"] = models
  local items = tnew(N, 0)
  views.items = items
end

local function grow()
  local items, Item = package.loaded.views.items, package.loaded["app.models"].Item
  for i = 1, N do items[i] = setmetatable({}, Item) end
end

build()
io.stdout:write("ready 1\n")
io.stdout:flush()
io.read("*l")
grow()
io.stdout:write("ready 2\n")
io.stdout:flush()
io.read("*l")
print("done")
