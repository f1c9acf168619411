-- A heap of 300 forged GG_States (tests/hostile.bats): each main
-- lua_State's glref names its global_State, whose mainthref names it back;
-- a sane vmstate, the real VM's allocator, its own cur_L. Then allocates
-- until killed (the tracer attaches with -p).
local ffi = require("ffi")
jit.off()
local u64 = ffi.typeof("uint64_t *")
local function at(a) return ffi.cast(u64, a) end
local L = tonumber(tostring(coroutine.create(function() end)):match("0x%x+"))
local g = tonumber(at(L + 16)[0]) -- L->glref
local allocf = at(g)[0]
local N, STRIDE = 300, 1024
local buf = ffi.new("uint8_t[?]", N * STRIDE + 64)
local base = tonumber(ffi.cast("uintptr_t", buf))
base = base + 64 - base % 64
for i = 0, N - 1 do
	local l = base + i * STRIDE
	ffi.cast("uint8_t *", l)[9] = 6           -- LJ_TTHREAD
	at(l + 16)[0] = l + 96                    -- L->glref
	at(l + 96 + 192)[0] = l                   -- g->mainthref
	ffi.cast("int32_t *", l + 96 + 184)[0] = -1 -- g->vmstate: INTERP
	at(l + 96)[0] = allocf                    -- g->allocf
	at(l + 96 + 8)[0] = l                     -- g->allocd
	at(l + 96 + 368)[0] = l                   -- g->cur_L
end
local f = io.open(os.getenv("READY"), "w") f:write("ready") f:close()
local keep = {}
while true do
	for i = 1, 100 do keep[i] = {} end
end
