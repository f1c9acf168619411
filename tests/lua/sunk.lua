-- JIT on: the table of line 8 escapes on 1 iteration in 100 only, so the
-- JIT sinks it: made at the side exit (lj_snap_restore) until the exit is
-- hot, then by the side trace (replayed from the exit). After a full
-- collection exactly the 200 kept tables are live, all made at line 8.
local keep = {}
local n = 0
for i = 1, 20000 do
  local t = { i, i + 1 }
  if i % 100 == 0 then
    n = n + 1
    keep[n] = t
  end
end
collectgarbage()
print(n)
