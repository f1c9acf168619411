-- A heap that lies (tests/heap.bats), written through the FFI at the
-- offsets of user/target/layout.c's entry for this build (GC64, or GC64
-- off: 32-bit references): a table whose array part claims 2^31-1 slots
-- at an unmapped address and an object whose nextgc is itself (gc.root
-- loops there); with the argument "stray", only a table (held by _G)
-- whose metatable reference points outside the heap. The GC is stopped:
-- the VM never walks them; the test kills this process (lua_close would
-- loop).
local ffi = require("ffi")
collectgarbage("collect")
collectgarbage("stop")
local gc64 = ffi.abi("gc64")
-- a GCRef/MRef, and GCtab's array, metatable and asize
local ref = gc64 and "uint64_t *" or "uint32_t *"
local ARRAY, META, ASIZE = 16, 32, 48
if not gc64 then ARRAY, META, ASIZE = 8, 16, 24 end
local function at(o)
  return ffi.cast("uint8_t *", ffi.cast("uintptr_t", tonumber(string.format("%p", o))))
end
if arg[1] == "stray" then
  STRAY = {} -- its metatable: no object (below 4 GiB, unmapped)
  ffi.cast(ref, at(STRAY) + META)[0] = 0xdead0000
else
  LOOP = {}
  local q = at(LOOP)
  ffi.cast(ref, q)[0] = ffi.cast("uintptr_t", q) -- nextgc
  LIAR = {} -- newer: gc.root reaches it before LOOP
  local p = at(LIAR)
  ffi.cast("uint32_t *", p + ASIZE)[0] = 0x7fffffff -- asize
  ffi.cast(ref, p + ARRAY)[0] = 0x1000               -- array
end
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
