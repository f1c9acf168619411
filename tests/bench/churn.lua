-- Table churn: one table per iteration, all garbage. Prints the loop's CPU
-- seconds. Usage: luajit churn.lua N on|off [PAIRS] (see timing.lua)
if arg[2] == "off" then jit.off() end
local run = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua")

local function loop(n)
  local keep
  for i = 1, n do keep = { i } end
  return keep
end

run(loop, tonumber(arg[1]), tonumber(arg[3]))
