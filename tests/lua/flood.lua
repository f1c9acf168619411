-- A flood of allocations (tests/faults.bats, --no-loss): N tables at
-- line 5, as fast as the VM makes them; "ready" on stderr once it flows.
local keep = {}
for i = 1, tonumber(arg[1]) do
  keep[i % 100] = { i }
  if i == 1000 then io.stderr:write("ready\n") end
end
