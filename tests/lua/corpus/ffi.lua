-- Corpus (tests/jitexact.bats): FFI buffers and structs per request,
-- read back with ffi.string.
local ffi = require("ffi")
ffi.cdef("typedef struct { int id; double t; } lmt_req;")
local N = tonumber(arg[1]) or 20000
local keep = {}
local function fill(buf, i)
  local s = "id=" .. i
  ffi.copy(buf, s, #s)
  return #s
end
for i = 1, N do
  local buf = ffi.new("char[?]", 64)
  local n = fill(buf, i)
  keep[i % 64] = ffi.string(buf, n)
  local r = ffi.new("lmt_req", i, i / 2)
  keep[i % 64 + 64] = r
end
print(#keep)
