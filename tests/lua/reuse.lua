-- Prototypes collected during the trace and their addresses reused: each
-- chunk makes one table at its line 1 and is then collected.
jit.off()
for i = 1, 200 do
  local f = load("return {}", "=chunk" .. i)
  f()
  f = nil
  collectgarbage()
end
print("reuse.lua done")
