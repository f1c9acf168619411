-- An FFI cdata metamethod, a builtin only the cdata metatable holds
-- (tests/stacks.bats): each p[0] makes a pointer cdata.
local ffi = require("ffi")
local keep = {}
local p = ffi.new("int *[1]")
for i = 1, 100 do keep[i] = p[0] end
