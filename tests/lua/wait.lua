-- Waits for a line on stdin, then runs a workload with known allocations.
jit.off()
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
local keep = {}
for i = 1, 700 do
  local t = {}
  keep[i] = t
end
LEAKED = keep
collectgarbage()
print("wait.lua done")
io.stdout:flush()
io.read("*l")
