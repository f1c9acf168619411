-- luamemtrace test workload: allocations of every size class (jit off):
-- 4000 tables at line 8, strings of 1 to 1000 bytes at line 9, arrays of
-- 1 to 400 slots at line 12 (the tree bins' sizes too), most freed by the
-- GC as they go.
jit.off()
local tnew = require("table.new")
local keep, s, t = {}, {}, {}
for i = 1, 4000 do keep[i % 2000 + 1] = {}
  s[i % 2000 + 1] = string.rep("x", i % 1000 + 1) end
collectgarbage()
for i = 1, 2000 do
  t[i % 300 + 1] = tnew(i % 400 + 1, 0)
end
collectgarbage()
print("sizes.lua done")
