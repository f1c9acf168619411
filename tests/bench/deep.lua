-- Deep stacks: one table per iteration, made 40 Lua calls down (the
-- calls are not tail calls), so each event's stack is 40-odd frames.
-- Prints the loop's CPU seconds. Usage: luajit deep.lua N on|off [PAIRS]
if arg[2] == "off" then jit.off() end
local run = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua")

local function down(d, i)
  if d == 0 then return { i } end
  return (down(d - 1, i))
end

local function loop(n)
  local keep
  for i = 1, n do keep = down(40, i) end
  return keep
end

run(loop, tonumber(arg[1]), tonumber(arg[3]))
