-- Allocation-bound loop: N table constructors, half of the allocator
-- calls are frees. Usage: luajit churn.lua N [on|off]
if arg[2] ~= "on" then jit.off() end
local N = tonumber(arg[1]) or 1000000
local keep
for i = 1, N do keep = { i } end
print(N)
