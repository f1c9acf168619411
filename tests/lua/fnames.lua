-- Frame names as LuaJIT's debug library gives them (tests/fnames.bats):
-- each function allocates a table at its own line; with LMT_FNAMES set it
-- prints "LINE NAMEWHAT NAME" as debug.getinfo says of it. Lines matter.
local keep, say = {}, os.getenv("LMT_FNAMES")
local function tell(line)
  local i = debug.getinfo(2, "n")
  io.write(line, " ", i.namewhat, " ", tostring(i.name), "\n")
end
function render(n) keep[#keep + 1] = { n } if say then tell(9) end end
local Obj = {}
Obj.__index = Obj
function Obj:add(n) keep[#keep + 1] = { n } if say then tell(12) end end
local handlers = {}
handlers.handler = function(n) keep[#keep + 1] = { n } if say then tell(14) end end
local function parse(n) keep[#keep + 1] = { n } if say then tell(15) end end
local function run(n)
  parse(n)
  local f = function(m) keep[#keep + 1] = { m } if say then tell(18) end end
  f(n)
end
local o = setmetatable({}, Obj)
local N = say and 1 or tonumber(arg[1]) or 100
for i = 1, N do
  render(i)
  o:add(i)
  handlers.handler(i)
  run(i)
  for k, v in ("k" .. i .. "=v" .. i):gmatch("(%w+)=(%w+)") do keep[k] = v end
end
