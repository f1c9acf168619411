-- heap --with: M tables built before the tracer attaches, N while traced,
-- each on a line of its own. Arguments: N M, and "off" for the JIT off.
-- Says "ready" and waits for a line (the tracer attaches), builds, says
-- "built" and waits for a line (the snapshot), then ends.
if arg[3] == "off" then jit.off() end
local N, M = tonumber(arg[1]), tonumber(arg[2])
local new = require("table.new")
BEFORE = new(M, 0)
for i = 1, M do BEFORE[i] = {} end
local function build()
  local x = new(N, 0)            -- line 11: x, its array part
  for i = 1, N do x[i] = {} end  -- line 12: N tables
  package.loaded.joined = x
end
io.stdout:write("ready\n")
io.stdout:flush()
io.read("*l")
build()
io.stdout:write("built\n")
io.stdout:flush()
io.read("*l")
print("done")
