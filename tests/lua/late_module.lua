-- A C module loaded just before the process exits (tests/faults.bats):
-- its 100 tables are made by the C function lmtmod_make (line 6).
jit.off()
package.cpath = os.getenv("LMT_MODDIR") .. "/?.so;" .. package.cpath
local m = require("lmtmod")
m.make(100)
os.exit(0)
