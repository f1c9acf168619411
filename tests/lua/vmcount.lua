-- Run by every VM of "host -c N" (tests/faults.bats): tables, strings,
-- closures, growing arrays; the GC frees some of it.
jit.off()
local keep = {}
for i = 1, 2000 do
  keep[i % 300 + 1] = { i, tostring(i), string.rep("x", i % 50) }
end
local f = {}
for i = 1, 200 do f[i] = function() return i end end
local s = table.concat(keep[1], ",")
collectgarbage()
return s
