-- Forks (FFI): the child makes 300 tables at line 11 and exits; the parent
-- waits for it, then makes 200 tables at line 15. Only the parent is traced.
jit.off()
local ffi = require "ffi"
ffi.cdef[[int fork(void); int waitpid(int pid, int *status, int options);
void _exit(int status);]]
local keep = {}
local pid = ffi.C.fork()
if pid == 0 then
  for i = 1, 300 do
    keep[i] = {}
  end
  ffi.C._exit(0)
end
ffi.C.waitpid(pid, nil, 0)
for i = 1, 200 do keep[i] = {} end
print("fork.lua done")
