-- luagen.lua SEED [N]: prints a small random Lua program made from SEED
-- (the same seed gives the same program on every machine: its own LCG,
-- not math.random), for tests/tools/jitdiff.sh. The program runs a loop
-- of N iterations (default 2000) over functions that call each other
-- (inlined by the JIT at depth), through pcall, metamethods, tail calls
-- and varargs, with branches (side traces); every allocation is on a line
-- of its own and escapes into a ring (so the JIT sinks none: with the JIT
-- on, each line must allocate as often as with it off).
local seed = tonumber(arg[1]) or error("usage: luagen.lua SEED [N]")
local N = tonumber(arg[2]) or 2000
local st = seed % 2147483647
if st <= 0 then st = st + 2147483646 end
-- rnd(n): 1..n (Park-Miller)
local function rnd(n)
  st = (st * 48271) % 2147483647
  return st % n + 1
end
local out = {}
local function emit(s) out[#out + 1] = s end
local slot = 0
-- ring(): a ring slot expression of x, a different one each time
local function ring()
  slot = slot + 1
  return "keep[(x + " .. slot .. ") % 64 + 1]"
end

emit("-- luagen.lua " .. seed .. " " .. N)
emit("local keep = {}")
emit("for i = 1, 64 do keep[i] = false end")
-- strings made from a counter: each one new (one made again could be
-- found interned, or not, as the GC ran: that differs between the modes)
emit("local c = 0")
emit("local function bump() c = c + 1 return c end")
local nf = 2 + rnd(4)
-- What each function may do: allocate, call an earlier function in one
-- of several ways, branch.
local function stmt(i, ind)
  local j = i > 1 and rnd(i - 1) or nil
  local k = rnd(j and 12 or 6)
  if k == 1 then
    emit(ind .. ring() .. " = { x, " .. slot .. " }")
  elseif k == 2 then
    emit(ind .. ring() .. " = \"s" .. slot .. "_\" .. bump()")
  elseif k == 3 then
    emit(ind .. ring() .. " = string.format(\"%d:" .. slot .. "\", bump())")
  elseif k == 4 then
    emit(ind .. ring() .. " = function() return x end")
  elseif k == 5 then
    emit(ind .. "for j = 1, " .. rnd(3) .. " do " .. ring() .. " = { j, x } end")
  elseif k == 6 then
    emit(ind .. "do local ok, e = pcall(error, { x }) " .. ring() .. " = e end")
  elseif k == 7 or k == 8 then
    emit(ind .. ring() .. " = f" .. j .. "(x + " .. rnd(9) .. ")")
  elseif k == 9 then
    emit(ind .. "do local ok, v = pcall(f" .. j .. ", x) " .. ring() .. " = v end")
  elseif k == 10 then
    emit(ind .. ring() .. " = m" .. j .. "[x]")
  elseif k == 11 then
    emit(ind .. ring() .. " = v" .. j .. "(x, " .. slot .. ", f" .. j .. "(x))")
  else
    emit(ind .. "if x % " .. (1 + rnd(7)) .. " == 0 then")
    emit(ind .. "  " .. ring() .. " = { " .. slot .. " }")
    emit(ind .. "end")
  end
end
for i = 1, nf do
  emit("local function f" .. i .. "(x)")
  for _ = 1, 1 + rnd(4) do stmt(i, "  ") end
  local r = rnd(i > 1 and 4 or 2)
  if r == 1 then
    emit("  return { x }")
  elseif r == 2 then
    emit("  return \"r" .. i .. "_\" .. bump()")
  else
    -- a tail call
    emit("  return f" .. rnd(i - 1) .. "(x + 1)")
  end
  emit("end")
  emit("local m" .. i .. " = setmetatable({}, { __index = function(t, k) return f" .. i .. "(k) end })")
  emit("local function v" .. i .. "(...)")
  emit("  local n = select(\"#\", ...)")
  emit("  return { n, ... }")
  emit("end")
end
emit("for x = 1, " .. N .. " do")
for _ = 1, 1 + rnd(3) do
  local f = rnd(nf)
  local w = rnd(3)
  if w == 1 then
    emit("  " .. ring() .. " = f" .. f .. "(x)")
  elseif w == 2 then
    emit("  do local ok, v = pcall(f" .. f .. ", x) " .. ring() .. " = v end")
  else
    emit("  " .. ring() .. " = m" .. f .. "[x]")
  end
end
emit("end")
emit("print(#keep)")
io.write(table.concat(out, "\n"), "\n")
