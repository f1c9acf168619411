-- A target blocked in a system call when it is forked for its copy, for
-- tests/heap_cow.bats. Arguments: KIND, DIR [, OPTION]: "seccomp" (an
-- allow-all seccomp filter installed first), "child" (a child of its
-- own made first, that exits with 7 and is waited for only at the end:
-- "child=STATUS" printed last), "nochld" (SIGCHLD blocked: one sent to
-- it stays pending, /proc/PID/status's SigPnd or ShdPnd). Builds 300 tables of class
-- Item under package.loaded["app.calls"].items (64 bytes each), writes
-- "ready" to DIR/ready, then, until DIR/stop exists, makes one call of
-- KIND after another and counts those that did not return what they
-- would have without a stop (a restarted call returns as if never
-- interrupted: read, nanosleep and poll are restarted after SIGSTOP and
-- SIGCONT). Then writes "KIND calls=N bad=B" (and the lines it read) to
-- stdout.
--   read   a line from stdin (it blocks until the test writes one): each
--          line read is printed back at once, "got LINE"; it ends at EOF
--   sleep  nanosleep of 20 ms: 0 and the whole time slept
--   poll   poll of no descriptor for 20 ms: 0
--   spin   no call: a loop of Lua arithmetic (stopped in user code),
--          a count kept in a register and in a table checked equal
local kind, dir = arg[1], arg[2]
local ffi = require("ffi")
ffi.cdef[[
struct lmt_ts { long sec; long nsec; };
int nanosleep(const struct lmt_ts *, struct lmt_ts *);
int poll(void *, unsigned long, int);
struct lmt_filter { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct lmt_fprog { unsigned short len; struct lmt_filter *filter; };
int prctl(int, unsigned long, unsigned long, unsigned long, unsigned long);
int fork(void);
void _exit(int);
int waitpid(int, int *, int);
int sigprocmask(int, const uint64_t *, uint64_t *);
]]

if arg[3] == "seccomp" then
  -- BPF_RET | BPF_K, SECCOMP_RET_ALLOW; PR_SET_NO_NEW_PRIVS, then
  -- PR_SET_SECCOMP with SECCOMP_MODE_FILTER
  local insn = ffi.new("struct lmt_filter[1]", { { 0x06, 0, 0, 0x7fff0000 } })
  local prog = ffi.new("struct lmt_fprog[1]", { { 1, insn } })
  assert(ffi.C.prctl(38, 1, 0, 0, 0) == 0)
  assert(ffi.C.prctl(22, 2, ffi.cast("unsigned long", ffi.cast("void *", prog)), 0, 0) == 0)
end

local own
if arg[3] == "child" then
  own = ffi.C.fork()
  if own == 0 then ffi.C._exit(7) end
  assert(own > 0)
elseif arg[3] == "nochld" then
  -- SIG_BLOCK, SIGCHLD's bit (17)
  local set = ffi.new("uint64_t[1]", 0x10000)
  assert(ffi.C.sigprocmask(0, set, nil) == 0)
end

local Item = {}
Item.__index = Item
local calls = { Item = Item, items = {} }
package.loaded["app.calls"] = calls
for i = 1, 300 do calls.items[i] = setmetatable({}, Item) end

local function exists(p)
  local f = io.open(p)
  if f then f:close() end
  return f ~= nil
end

local f = io.open(dir .. "/ready", "w")
f:write("ready\n")
f:close()

local n, bad = 0, 0
local req, rem = ffi.new("struct lmt_ts", 0, 20000000), ffi.new("struct lmt_ts")
local x, mem = 0, { 0 }
while not exists(dir .. "/stop") do
  n = n + 1
  if kind == "read" then
    local l = io.read("*l")
    if not l then break end
    io.write("got ", l, "\n")
    io.stdout:flush()
  elseif kind == "sleep" then
    if ffi.C.nanosleep(req, rem) ~= 0 then bad = bad + 1 end
  elseif kind == "poll" then
    if ffi.C.poll(nil, 0, 20) ~= 0 then bad = bad + 1 end
  else
    -- a count kept both in a register and in memory: a thread put back
    -- to registers of an earlier instant finds them apart
    for i = 1, 100000 do
      if mem[1] ~= x then bad = bad + 1 end
      x = x + 1
      mem[1] = x
    end
  end
end
print(kind .. " calls=" .. n .. " bad=" .. bad)
if own then
  local st = ffi.new("int[1]")
  local r = ffi.C.waitpid(own, st, 0)
  print("child=" .. (r == own and bit.rshift(bit.band(st[0], 0xff00), 8) or "lost"))
end
