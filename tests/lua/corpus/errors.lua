-- Corpus (tests/jitexact.bats): pcall and error in the request loop: a
-- pcall'd function that calls a constructor, errors thrown as tables and
-- as strings, xpcall with a handler.
local N = tonumber(arg[1]) or 20000
local keep = {}
local function new_ctx(i)
  return { id = i, vars = {} }
end
local function handle(i)
  local ctx = new_ctx(i)
  if i % 50 == 0 then error({ code = 500, id = i }) end
  if i % 75 == 0 then error("bad request " .. i, 0) end
  return ctx
end
local function on_err(e)
  return { err = e }
end
for i = 1, N do
  local ok, r = pcall(handle, i)
  keep[i % 64] = r
  if i % 10 == 0 then
    local ok2, r2 = xpcall(handle, on_err, i + 1)
    keep[i % 64 + 64] = r2
  end
end
print(#keep)
