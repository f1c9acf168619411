jit.off()
function step()
  local t = {}
  for i = 1, 7 do t[i] = {} end
  t = nil
  collectgarbage()
end
