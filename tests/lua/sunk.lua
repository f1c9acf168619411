-- A table that escapes only on a rare path (JIT on): the compiled loop
-- sinks it, and each side exit through the rare path restores it, in the
-- VM's exit handler (tests/tracer.bats). JIT off: 1000 tables at line 6.
local keep = {}
for i = 1, 1000 do
  local t = { i, i + 1 }
  if i % 100 == 0 then
    keep[#keep + 1] = t
  end
end
print(#keep)
