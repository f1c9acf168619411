-- Corpus (tests/jitexact.bats): builtins the JIT does not compile
-- (gsub with a function, os.date, tostring of a table) in a compiled
-- loop: the trace stops at them and another starts after (stitching).
local N = tonumber(arg[1]) or 20000
local keep = {}
local up = function(c) return c:upper() end
for i = 1, N do
  local s = ("k" .. i):gsub("k", up)
  local t = { s }
  keep[i % 64] = t
  keep[i % 64 + 64] = tostring(i % 10) .. "/" .. i
  keep[i % 64 + 128] = { os.date("!%Y", 0), i }
end
print(#keep)
