-- Replaces itself in place (FFI execv) with /usr/bin/luajit exec2.lua
-- (tests/faults.bats). "luajit exec.lua wait": first says "ready" and
-- waits for a line on stdin. Line 14: exactly 500 tables.
jit.off()
local ffi = require("ffi")
ffi.cdef[[int execv(const char *path, char *const argv[]);]]
local argv = ffi.new("const char *[3]", { "luajit", "exec2.lua" })
if arg[1] == "wait" then
  io.stdout:write("ready\n")
  io.stdout:flush()
  io.read("*l")
end
for i = 1, 500 do
  local t = {}
end
io.stdout:write("exec.lua execs\n")
io.stdout:flush()
ffi.C.execv("/usr/bin/luajit", ffi.cast("char *const *", argv))
error("execv failed: " .. ffi.errno())
