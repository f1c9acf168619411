-- luamemtrace test workload: allocations at known lines (jit off).
jit.off()
local keep = {}
local function mk(i) return {} end
for i = 1, 1000 do keep[i] = mk(i) end
local function outer()
  local n = 0
  return function() n = n + 1; return n end
end
for i = 1, 300 do keep[i] = outer() end
local s = {}
for i = 1, 50 do s[i] = string.rep("ab", i) end
keep = nil
s = nil
collectgarbage()
collectgarbage()
print("alloc.lua done")
