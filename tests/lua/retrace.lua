-- Trace numbers used again (tests/tracer.bats): one loop at two lines,
-- jit.flush() between, so that the second loop's trace takes the first
-- one's number and the same machine code, while the first one's GCtrace
-- lives on (the GC stopped); freed after, then the new trace runs again.
-- Every table is kept: none sunk.
if arg[1] == "off" then jit.off() end
local keep = {}
local function a(n) for i = 1, n do keep[#keep + 1] = { i } end end
local function b(n) for i = 1, n do keep[#keep + 1] = { i } end end
a(5000)
collectgarbage("stop")
jit.flush()
b(5000)
collectgarbage("restart")
collectgarbage()
b(100)
print(#keep)
