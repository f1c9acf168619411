-- A forged GCtrace (tests/hostile.bats): put in a free slot of J->trace,
-- and a compiled loop that stores its number in g->vmstate before each
-- allocation, so the tracer reads it as the running trace. Its one
-- snapshot, at victim's second instruction, has a frame link of LINK (1:
-- a C frame of no slots; 2: a continuation of none) over a C
-- function's frame. Offsets: LuaJIT 2.1 GC64 (user/target/layout.c).
local ffi = require("ffi")
local LINK = tonumber(arg[1] or "1")
local u64 = ffi.typeof("uint64_t *")
local function at(a) return ffi.cast(u64, a) end
local function addr(o) return tonumber(tostring(o):match("0x%x+")) end
local function ptr(c) return tonumber(ffi.cast("uintptr_t", c)) end

local function victim() local a = 1 local b = 2 return a + b end
victim()
local L = addr(coroutine.create(victim))
local g = tonumber(at(L + 16)[0])    -- L->glref
local J = g - 96 + 824               -- GG_State's jit_State
local vmstate = ffi.cast("int32_t *", g + 184)
local bc = tonumber(at(addr(victim) + 32)[0]) -- victim's bytecode
local pt = bc - 104                  -- its GCproto

-- The forged trace: its IR constants (nk = REF_BIAS - 6), one snapshot.
local REF_BIAS, SNAP_FRAME, SNAP_CONT = 0x8000, 0x10000, 0x20000
local nk, nins = REF_BIAS - 6, REF_BIAS + 1
local ir = ffi.new("uint64_t[?]", nins - nk)
ir[1] = bc + 8                       -- slot 3: a continuation's PC
ir[3] = addr(package.loaders[2])     -- slot 4: a C function
ir[5] = LINK                         -- slot 5: the frame link
local map = ffi.new("uint32_t[5]")
map[0] = bit.bor(bit.lshift(3, 24), SNAP_CONT, nk)
map[1] = bit.bor(bit.lshift(4, 24), nk + 2)
map[2] = bit.bor(bit.lshift(5, 24), SNAP_FRAME, nk + 4)
ffi.cast(u64, map + 3)[0] = (bc + 4) * 256 + 4 -- PC << 8 | base slot 6 - 2
local snap = ffi.new("uint8_t[12]")
ffi.cast("uint16_t *", snap + 4)[0] = REF_BIAS -- ref
snap[10] = 3                                    -- nent
local T = ffi.new("uint8_t[256]")
local t = ptr(T)
ffi.cast("uint16_t *", t + 10)[0] = 1           -- nsnap
ffi.cast("uint32_t *", t + 12)[0] = nins
at(t + 32)[0] = ptr(ir) - nk * 8                -- ir, biased
ffi.cast("uint32_t *", t + 40)[0] = nk
ffi.cast("uint32_t *", t + 44)[0] = 5           -- nsnapmap
at(t + 48)[0] = ptr(snap)
at(t + 56)[0] = ptr(map)
at(t + 64)[0] = pt                              -- startpt
at(t + 72)[0] = bc                              -- startpc

-- The loop, compiled first with the VM's own state stored; then a free
-- slot of J->trace holds the forged trace while it runs. Its own number
-- is back in vmstate before anything that can exit the trace (LuaJIT's
-- exit handler reads it); keep's slots exist (no bounds exit).
local keep = {}
for i = 1, 64 do keep[i] = false end
local function run(n, st)
	for i = 1, n do
		local cur = vmstate[0]
		vmstate[0] = st or cur
		keep[i % 64 + 1] = {}
		vmstate[0] = cur
	end
end
run(200)
local arr = tonumber(at(J + 384)[0])
local slot
for k = 7, 2, -1 do
	if at(arr + 8 * k)[0] == 0 then slot = k break end
end
assert(slot, "no free trace slot")
at(arr + 8 * slot)[0] = t
run(200, slot)
at(arr + 8 * slot)[0] = 0
jit.off()
for i = 1, 100 do keep[i] = {} end
print("hostile_trace.lua done")
