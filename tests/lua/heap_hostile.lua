-- A heap that lies (tests/heap.bats), written through the FFI at LuaJIT
-- 2.1 GC64's offsets (user/layout.c): a table whose array part claims
-- 2^31-1 slots at an unmapped address, and an object whose nextgc is
-- itself (gc.root loops there). The GC is stopped: the VM never walks
-- them; the test kills this process (lua_close would loop).
local ffi = require("ffi")
collectgarbage("collect")
collectgarbage("stop")
local function at(o)
  return ffi.cast("uint8_t *", ffi.cast("uintptr_t", tonumber(string.format("%p", o))))
end
LOOP = {}
local q = at(LOOP)
ffi.cast("uint64_t *", q)[0] = ffi.cast("uint64_t", ffi.cast("uintptr_t", q)) -- nextgc
LIAR = {} -- newer: gc.root reaches it before LOOP
local p = at(LIAR)
ffi.cast("uint32_t *", p + 48)[0] = 0x7fffffff -- asize
ffi.cast("uint64_t *", p + 16)[0] = 0x1000     -- array
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
