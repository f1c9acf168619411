-- Outlives a short trace (tests/faults.bats). Usage:
--   luajit sleep_exit.lua SECS STATUS FILE
-- writes its PID to FILE, makes 300 tables (line 14), sleeps SECS, makes
-- 300 more (line 18), writes "done" to FILE.done, exits with STATUS.
jit.off()
local ffi = require("ffi")
ffi.cdef[[
int getpid(void);
int poll(void *fds, unsigned long nfds, int timeout);
]]
local f = io.open(arg[3], "w")
f:write(ffi.C.getpid(), "\n") f:close()
for i = 1, 300 do
  local t = {}
end
ffi.C.poll(nil, 0, tonumber(arg[1]) * 1000)
for i = 1, 300 do
  local t = {}
end
f = io.open(arg[3] .. ".done", "w") f:write("done\n") f:close()
os.exit(tonumber(arg[2]))
