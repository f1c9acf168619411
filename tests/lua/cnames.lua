-- C functions by the names Lua gives them (tests/tracer.bats): the module
-- lmtmod's make, reached as lmtmod.make, makes 100 tables from C.
jit.off()
package.cpath = os.getenv("LMT_MODDIR") .. "/?.so;" .. package.cpath
local m = require("lmtmod")
m.make(100)
-- alive a while: the tracer reads the names from the running process
local t0 = os.clock()
while os.clock() - t0 < 0.3 do end
print("cnames.lua done")
