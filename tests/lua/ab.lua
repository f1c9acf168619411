-- luamemtrace --ab: each table.new(99991, 0) allocates an array of the
-- switch's size, flipping between doing nothing and tracing.
jit.off()
local tnew = require("table.new")
local m = tnew(99991, 0)            -- header traced, array switches off
for i = 1, 100 do local t = {} end  -- not traced
m = tnew(99991, 0)                  -- header not traced, array switches on
for i = 1, 7 do local t = {} end    -- traced: 7
m = tnew(99991, 0)                  -- header traced, array switches off
for i = 1, 50 do local t = {} end   -- not traced
print("ab.lua done")
