-- A coroutine suspended inside a metamethod, for tests/heap.bats: its
-- body's frame lies below a continuation frame (lj_meta.c's mmcall: the
-- PC to resume the body at kept below the metamethod's function), and
-- holds a table in a local. Prints "ready", then waits for a line on stdin
-- while it is snapshotted.
local proxy = setmetatable({}, { __index = function() coroutine.yield() end })
CO = coroutine.create(function()
  local kept = { 1, 2, 3 }
  local v = proxy.missing
  return kept, v
end)
coroutine.resume(CO)
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
