-- luamemtrace --ab=MS: tables made for a second of CPU time; their count.
jit.off()
local t0, n = os.clock(), 0
while os.clock() - t0 < 1 do
  local t = {}
  n = n + 1
end
print(n)
