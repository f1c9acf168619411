-- --duty (tests/duty.bats): every turn allocates 5 tables at line 7, 3 at
-- line 8 and 2 at line 9, until killed: shares of 50, 30 and 20%.
local keep = {}
io.stdout:write("ready\n")
io.stdout:flush()
for i = 1, 1e15 do
  for k = 1, 5 do keep[k] = {} end
  for k = 6, 8 do keep[k] = {} end
  for k = 9, 10 do keep[k] = {} end
end
