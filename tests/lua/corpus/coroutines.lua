-- Corpus (tests/jitexact.bats): a producer and a consumer as
-- coroutines, each request a yielded table.
local N = tonumber(arg[1]) or 20000
local keep = {}
local function producer(n)
  return coroutine.wrap(function()
    for i = 1, n do
      coroutine.yield({ id = i, path = "/p" .. (i % 10) })
    end
  end)
end
local function consume(req)
  return { status = 200, path = req.path }
end
local next_req = producer(N)
for i = 1, N do
  keep[i % 64] = consume(next_req())
end
local co = coroutine.create(function(a)
  while true do a = coroutine.yield({ a }) end
end)
for i = 1, N / 4 do
  local _, t = coroutine.resume(co, i)
  keep[i % 64 + 64] = t
end
print(#keep)
