-- JIT on (off with arg[1] == "off"): every object escapes (kept), so the
-- JIT sinks none; each kind of allocation on a line of its own. The
-- per-line counts with the JIT on must equal those with the JIT off.
if arg[1] == "off" then jit.off() end
-- Strings kept first, so the string table is big enough for the rest
-- (its growth is charged to the line that makes the string that fills it,
-- and the JIT interns a few strings of its own: it would move).
local pre = {}
for i = 1, 12000 do pre[i] = "p" .. i end
local keep = {}
local n = 0
local function mk(i)
  return { i }
end
for i = 1, 3000 do
  n = n + 1
  keep[n] = mk(i)
  n = n + 1
  keep[n] = "s" .. i
  if i % 4 == 0 then
    n = n + 1
    keep[n] = string.format("%d/%d", i, n)
  end
  n = n + 1
  keep[n] = { i, n }
end
-- Closures: FNEW is not compiled (NYI), its loop stays interpreted.
local function cl(i)
  return function() return i end
end
for i = 1, 500 do
  n = n + 1
  keep[n] = cl(i)
end
print(n)
