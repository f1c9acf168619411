-- lua_newstate in a loop, through the FFI (tests/hostile.bats): waits for
-- a line on stdin, makes N VMs (every other one closed at once; each
-- allocates a table), then 300 tables in its own VM; says so, and waits
-- for another line before it exits.
local ffi = require("ffi")
ffi.cdef [[
typedef struct lua_State lua_State;
lua_State *luaL_newstate(void);
void lua_close(lua_State *L);
void lua_createtable(lua_State *L, int narr, int nrec);
]]
jit.off()
local N = tonumber(arg[1])
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
local open = {}
for i = 1, N do
	local L = ffi.C.luaL_newstate()
	ffi.C.lua_createtable(L, 0, 4)
	if i % 2 == 0 then ffi.C.lua_close(L) else open[#open + 1] = L end
end
local keep = require("table.new")(300, 0) -- its array once, here
for i = 1, 300 do
	keep[i] = {}
end
print("hostile_newvms.lua done")
io.stdout:flush()
io.read("*l")
for _, L in ipairs(open) do ffi.C.lua_close(L) end
