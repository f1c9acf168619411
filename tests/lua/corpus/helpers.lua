-- Corpus (tests/jitexact.bats): small helpers the JIT inlines, each
-- building and returning a table; back in the loop a response with a
-- ..-built body and a per-request record kept in a ring (the response
-- kept too: one the JIT could sink would not be made at all).
local N = tonumber(arg[1]) or 20000
local ring, sent = {}, {}
local function header(name, value)
  return { name = name, value = name .. ": " .. value }
end
local function status(code)
  return { code = code, text = code == 200 and "OK" or "Not Found" }
end
for i = 1, N do
  local h = header("X-Id", i)
  local s = status(i % 7 == 0 and 404 or 200)
  local resp = { status = s, headers = { h }, body = "<p>" .. i .. "</p>" }
  ring[i % 256] = { id = i, len = #resp.body }
  sent[i % 64] = resp
end
print(#ring)
