-- The bench workloads' timing. run(loop, n, pairs): without pairs, prints
-- the CPU seconds of loop(n). With pairs (luamemtrace --ab), runs loop(n)
-- 2 * pairs + 2 times, each run after the allocation that switches
-- luamemtrace between doing nothing (odd runs: the floor) and tracing (even
-- runs), and prints their CPU seconds on one line; the first two are
-- warm-up. CPU time includes the probes' kernel time in this process.
local tnew = require("table.new")

local function clock(loop, n)
  local t0 = os.clock()
  loop(n)
  return os.clock() - t0
end

local function paired(loop, n, pairs)
  local t = {}
  for k = 1, 2 * pairs + 2 do
    -- Every run starts from a collected heap: left alone, a GC cycle can
    -- span two runs and make every second one dearer (mixed.lua does).
    collectgarbage()
    -- The switch: an array of exactly LMT_AB_MARK bytes (bpf/luamemtrace.h).
    local mark = tnew(99991, 0)
    mark[1] = k
    t[k] = string.format("%.6f", clock(loop, n))
    mark = nil
  end
  print(table.concat(t, " "))
end
-- Never compiled, so the switch's allocation is never sunk or hoisted.
jit.off(paired)

return function(loop, n, pairs)
  if pairs then
    paired(loop, n, pairs)
  else
    print(string.format("%.6f", clock(loop, n)))
  end
end
