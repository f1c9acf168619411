-- A process that ends at once (tests/fnames.bats): its one named frame's
-- 100 tables are its last events, then exit() without lua_close.
local keep = {}
local function burst(i) return { i } end
for i = 1, 100 do keep[i] = burst(i) end
os.exit(0)
