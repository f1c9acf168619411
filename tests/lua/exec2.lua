-- What exec.lua becomes: 20000 tables at line 4, then "exec2.lua done".
jit.off()
for i = 1, 20000 do
  local t = {}
end
print("exec2.lua done")
