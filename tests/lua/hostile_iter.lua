-- Two C functions Lua names nowhere, alternating: io.lines' iterator and
-- lmtmod.make, its module gone from package.loaded (tests/hostile.bats).
-- With "loaded": package.loaded holds one table of 4096 keys, each the
-- table itself, 4096 times.
jit.off()
package.cpath = os.getenv("LMT_MODDIR") .. "/?.so;" .. package.cpath
local make = require("lmtmod").make
package.loaded.lmtmod = nil
if arg[1] == "loaded" then
	local t = {}
	for i = 1, 4096 do t["k" .. i] = t end
	for i = 1, 4096 do package.loaded["m" .. i] = t end
end
local path = os.tmpname()
local f = assert(io.open(path, "w"))
for i = 1, 2000 do f:write(("line%d word%d\n"):format(i, i)) end
f:close()
local n = 0
for l in io.lines(path) do
	for w in l:gmatch("%S+") do n = n + #w end
	make(1)
end
os.remove(path)
local keep = {}
for i = 1, 100 do keep[i] = {} end
print("hostile_iter.lua done", n)
