-- String building: concatenation, formatting and buffers, all garbage.
-- Usage: luajit strings.lua N on|off [PAIRS] (see timing.lua)
if arg[2] == "off" then jit.off() end
local run = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua")

local i0 = 0
local function loop(n)
  local s
  for i = i0 + 1, i0 + n do
    s = "key:" .. i
    if i % 4 == 0 then s = string.format("%s=%d", s, i) end
  end
  i0 = i0 + n -- fresh numbers, so fresh strings, on every run
  return s
end

run(loop, tonumber(arg[1]), tonumber(arg[3]))
