-- Corpus (tests/jitexact.bats): objects with methods through a
-- metatable's __index, a constructor, __tostring, __concat and __call.
local N = tonumber(arg[1]) or 20000
local Buf = {}
Buf.__index = Buf
function Buf.new(cap)
  return setmetatable({ n = 0, cap = cap, parts = {} }, Buf)
end
function Buf:add(s)
  self.n = self.n + 1
  self.parts[self.n] = s
  return self
end
function Buf:flush()
  local s = table.concat(self.parts, "", 1, self.n)
  self.n = 0
  return s
end
Buf.__tostring = function(b) return "Buf(" .. b.n .. ")" end
Buf.__concat = function(a, b) return tostring(a) .. tostring(b) end
local Router = setmetatable({ routes = {} }, {
  __call = function(self, path) return { path = path, handler = self.routes[path] } end,
})
local keep = {}
for i = 1, N do
  local b = Buf.new(4)
  b:add("a" .. i):add("b"):add(i % 10)
  keep[i % 100] = b:flush()
  keep[i % 100 + 100] = b .. "!"
  keep[i % 100 + 200] = Router("/r" .. (i % 20))
end
print(#keep)
