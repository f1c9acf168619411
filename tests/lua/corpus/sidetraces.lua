-- Corpus (tests/jitexact.bats): branches taken at different rates, each
-- rarer one a side trace, each allocating differently.
local N = tonumber(arg[1]) or 20000
local keep = {}
for i = 1, N do
  local r
  if i % 3 == 0 then
    r = { kind = "a", i }
  elseif i % 5 == 0 then
    r = "b" .. i
  elseif i % 7 == 0 then
    r = { kind = "c", tag = "t" .. i }
  else
    r = { i }
  end
  keep[i % 128] = r
  if i % 11 == 0 then
    keep[i % 128 + 128] = { r, i }
  end
end
print(#keep)
