-- Tarantool workload (tests/variants.bats): four fibers make 250 tables
-- each at line 8, yielding between them (JIT off); held until a line is read.
jit.off()
local fiber = require('fiber')
io.stdout:write('ready\n') io.stdout:flush()
io.stdin:read('*l')
local keep, done = {}, 0
local function mk(i) return { i } end
local function worker(n)
  for i = 1, n do keep[#keep + 1] = mk(i) fiber.yield() end
  done = done + 1
end
for _ = 1, 4 do fiber.create(worker, 250) end
while done < 4 do fiber.sleep(0) end
print('fibers done', #keep)
os.exit(0)
