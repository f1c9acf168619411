-- Hot loops, compiled into traces (JIT on).
local acc = {}
for i = 1, 20000 do
  acc[i] = { i, i * 2 }
end
local strs = {}
for i = 1, 5000 do
  strs[i] = "k" .. i
end
print(#acc + #strs)
