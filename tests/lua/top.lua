-- A steady workload for luamemtrace top (tests/views.bats): line 6 makes
-- a table per iteration, kept in a ring of 1000; runs until killed.
local ring = {}
local i = 0
local function make(n)
  return { n, n }
end
while true do
  i = i + 1
  ring[i % 1000] = make(i)
  if i % 1000 == 0 then os.execute("sleep 0.01") end
end
