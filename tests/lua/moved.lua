-- Pages moved under the tracer (tests/faults.bats): a heap of some MiB,
-- then N tables at line 9 while the heap is collapsed into huge pages.
-- Usage: luajit moved.lua N READYFILE (it writes its PID there first).
jit.off()
local big = {}
for i = 1, 100000 do big[i] = { i } end
local f = io.open(arg[2], "w") f:write(io.open("/proc/self/stat"):read("*n"), " ready") f:close()
local N, keep = tonumber(arg[1])
for i = 1, N do keep = { i } end
print(#big, N)
