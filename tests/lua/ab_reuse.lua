-- luamemtrace --ab: chunks collected while tracing is off, their
-- prototypes' addresses reused by chunks run once it is on again. Each
-- chunk makes one table at its line 1; the switch (table.new's array)
-- comes after every 20th chunk: traced 1-20, 41-60, 81-100, ...
jit.off()
local tnew = require("table.new")
local m
for i = 1, 200 do
  local f = load("return {}", "=chunk" .. i)
  f()
  if i % 20 == 0 then m = tnew(99991, 0) end
  f = nil
  collectgarbage()
end
print("ab_reuse.lua done")
