-- make bench, attach: a heap of N two-slot tables (about 120 bytes each
-- with their array parts), then an allocation loop, as a live server.
local n = tonumber(arg[1]) or 0
local keep = {}
for i = 1, n do keep[i] = { i, i + 1 } end
io.stdout:write("ready\n")
io.stdout:flush()
local t = {}
for i = 1, 1e15 do t[i % 1000] = {} end
