-- String building: concatenation, formatting and buffers, all garbage.
if arg[2] == "off" then jit.off() end
local N = tonumber(arg[1])
local s
local t0 = os.clock()
for i = 1, N do
  s = "key:" .. i
  if i % 4 == 0 then s = string.format("%s=%d", s, i) end
end
print(string.format("%.6f", os.clock() - t0))
