-- A tail call inside compiled code (tests/stacks.bats): the trace enters
-- tail's frame (its guard on n), which make's frame then replaces.
local keep = {}
local function make(n) return { n } end
local function tail(n)
  if n > 0 then return make(n) end
end
local function caller(n)
  local t = tail(n)
  return t
end
for i = 1, 1000 do keep[i] = caller(i) end
