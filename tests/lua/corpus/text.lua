-- Corpus (tests/jitexact.bats): a handler that parses and renders text:
-- gmatch over a query string, gsub to normalise headers, string.format
-- for the log line, table.concat for the body.
local N = tonumber(arg[1]) or 20000
local log = {}
local function parse_query(q)
  local args = {}
  for k, v in q:gmatch("([^&=]+)=([^&]*)") do
    args[k] = v
  end
  return args
end
local function norm_header(h)
  return (h:lower():gsub("_", "-"))
end
local function render(args, i)
  local out = {}
  out[#out + 1] = "<ul>"
  for _, k in ipairs({ "user", "page", "lang" }) do
    out[#out + 1] = string.format("<li>%s=%s</li>", k, args[k] or "")
  end
  out[#out + 1] = "</ul>"
  return table.concat(out, "\n")
end
for i = 1, N do
  local q = "user=u" .. (i % 300) .. "&page=" .. i .. "&lang=en"
  local args = parse_query(q)
  local h = norm_header(i % 2 == 0 and "X_Request_Id" or "Content_Type")
  local body = render(args, i)
  log[i % 512] = string.format("%s %d %s %d", h, i, args.user, #body)
end
print(#log)
