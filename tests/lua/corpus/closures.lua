-- Corpus (tests/jitexact.bats): closures made per request (callbacks,
-- counters over upvalues), and calls through them.
local N = tonumber(arg[1]) or 20000
local keep = {}
local function counter()
  local c = 0
  return function() c = c + 1 return c end
end
local function on_done(i)
  return function(res) return { i = i, res = res } end
end
local hits = counter()
local function apply(f, x) return f(x) end
for i = 1, N do
  local cb = on_done(i)
  keep[i % 64] = apply(cb, hits())
  keep[i % 64 + 64] = cb
end
print(#keep)
