-- A heap that peaks, then drops (tests/views.bats): 1000
-- tables made at line 6 are held until line 9 lets them go, then 10 tables
-- at line 12 are kept to the end.
local keep = {}
local function burst(i)
  return { i }
end
for i = 1, 1000 do keep[i] = burst(i) end
keep = nil
collectgarbage()
local tail = {}
for i = 1, 10 do tail[i] = { i } end
