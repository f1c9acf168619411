-- Table churn: one table per iteration, all garbage. Prints the loop's CPU
-- seconds. Usage: luajit churn.lua N on|off
if arg[2] == "off" then jit.off() end
local N = tonumber(arg[1])
local keep
local t0 = os.clock()
for i = 1, N do keep = { i } end
print(string.format("%.6f", os.clock() - t0))
