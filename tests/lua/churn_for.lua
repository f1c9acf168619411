-- Allocation-bound loop for SECS wall-clock seconds (tests/faults.bats):
-- says "ready", makes tables (JIT off) until SECS have passed, then says
-- "churn_for.lua done". Usage: luajit churn_for.lua SECS
jit.off()
local ffi = require("ffi")
ffi.cdef[[
struct lmt_ts { long sec, nsec; };
int clock_gettime(int clk, struct lmt_ts *ts);
]]
local ts = ffi.new("struct lmt_ts")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.sec) + tonumber(ts.nsec) * 1e-9
end
local stop = now() + (tonumber(arg[1]) or 1)
io.stdout:write("ready\n")
io.stdout:flush()
local t
repeat
  for i = 1, 1000 do t = {} end
until now() >= stop
print("churn_for.lua done")
