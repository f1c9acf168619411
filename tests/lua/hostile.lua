-- tests/hostile_files.bats: a target that maps files to fool its tracer,
-- then runs wait.lua (its workload on "go"; exits on "bye").
--   luajit hostile.lua map FILE...  maps each FILE's first page r-x
--   luajit hostile.lua longpath DIR maps a file whose path (under DIR,
--     absolute) is over 4 KiB and ends in what a 4 KiB line buffer would
--     read as a line of its own: this program's code mapping, the file
--     offset moved by a page
local ffi = require("ffi")
ffi.cdef[[
int open(const char *path, int flags, int mode);
int mkdir(const char *path, int mode);
int chdir(const char *path);
void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off);
]]
local PROT_RX, MAP_PRIVATE = 1 + 4, 2

local function map(path, hint)
  local fd = ffi.C.open(path, 0, 0)
  assert(fd >= 0, "cannot open " .. path)
  local p = ffi.C.mmap(ffi.cast("void *", hint or 0), 4096, PROT_RX, MAP_PRIVATE, fd, 0)
  assert(ffi.cast("intptr_t", p) ~= -1, "cannot map " .. path)
  return p
end

local function longpath(base)
  local lo, hi, off, dev, ino
  for l in io.lines("/proc/self/maps") do
    if l:find(" r%-xp ") and l:find(arg[-1], 1, true) then
      lo, hi, off, dev, ino = l:match("^(%x+)%-(%x+) r%-xp (%x+) (%x+:%x+) (%d+)")
    end
  end
  assert(lo, "no luajit code mapping")
  local fakedir = string.format("%s-%s r-xp %08x %s %s ", lo, hi,
                                tonumber(off, 16) + 0x1000, dev, ino)
  -- the kernel pads a line's path to column 73; fgets(4096) stops after
  -- 4095 bytes: the fake line starts at the path's byte 4022
  local rem = 4022 - #base - 1
  local comps = {}
  while rem > 0 do
    local n = math.min(200, rem - 1)
    if rem - (n + 1) == 1 then n = n - 1 end
    comps[#comps + 1] = string.rep("d", n)
    rem = rem - (n + 1)
  end
  comps[#comps + 1] = fakedir
  assert(ffi.C.chdir(base) == 0, "chdir " .. base)
  for _, c in ipairs(comps) do
    assert(ffi.C.mkdir(c, 448) == 0 and ffi.C.chdir(c) == 0, "mkdir")
  end
  local f = assert(io.open("x", "w"))
  f:write(string.rep("\0", 4096))
  f:close()
  map("x", 0x10000000)
  local path = base .. "/" .. table.concat(comps, "/") .. "/x"
  for l in io.lines("/proc/self/maps") do
    if l:sub(1, 9) == "10000000-" then
      assert(l:sub(74) == path, "the path is not at column 73")
      assert(l:sub(4096) == fakedir .. "/x", "the fake line is not at byte 4095")
      return
    end
  end
  error("the mapping is not in maps")
end

-- wait.lua's workload, counted as its own (@wait.lua:8: 700)
local wait = assert(loadstring(assert(io.open("wait.lua")):read("*a"), "@wait.lua"))
if arg[1] == "longpath" then
  longpath(arg[2])
else
  for i = 2, #arg do map(arg[i]) end
end
wait()
