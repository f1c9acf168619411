-- load(source) without a chunk name: each of its 200 functions has the
-- whole 2 MiB source as its chunk name (tests/hostile.bats).
jit.off()
local parts = { "local fs = {}\n" }
for i = 1, 200 do parts[#parts + 1] = ("fs[%d] = function() return {} end\n"):format(i) end
parts[#parts + 1] = "--" .. string.rep("x", 2 * 1024 * 1024) .. "\nreturn fs\n"
local fs = assert(load(table.concat(parts)))()
for i = 1, 200 do fs[i]() end
local keep = {}
for i = 1, 100 do keep[i] = {} end
-- alive a while: the tracer reads the names from the running process
local t0 = os.clock()
while os.clock() - t0 < 0.5 do end
print("hostile_names.lua done", #fs)
