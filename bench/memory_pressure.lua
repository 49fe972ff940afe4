-- bench/memory_pressure.lua [iterations] [elements] [fill]: makes that many
-- temporaries of `elements` float32 values each (default 2000 x 16M = 64 MB),
-- touching every page (T.ones) unless fill is "empty", with no
-- collectgarbage call, and prints the peak resident set size (VmHWM) and
-- the collector statistics. DESIGN §4: this must run in bounded memory.
--   bin/ember bench/memory_pressure.lua            -- the full 2000 x 64 MB
--   bin/ember bench/memory_pressure.lua 200        -- the spec's shorter run
local T = require "ember"

local n = tonumber(arg and arg[1]) or 2000
local elements = tonumber(arg and arg[2]) or 16 * 1024 * 1024
local make = (arg and arg[3] == "empty") and T.empty or T.ones

local function status_kb(field)
  for line in io.lines("/proc/self/status") do
    local v = line:match("^" .. field .. ":%s+(%d+)")
    if v then return tonumber(v) end
  end
end

local t0 = os.time()
local clock0 = os.clock()
for _ = 1, n do
  local t = make(elements) -- dropped at once: garbage for the collector
end
local stats = T.memory_stats()
print(("iterations=%d tensor_mb=%.0f total_mb=%.0f peak_rss_mb=%.0f vm_peak_mb=%.0f "
  .. "live_mb=%.0f forced_collections=%d failed_allocations=%d cpu_s=%.1f wall_s=%d")
  :format(n, elements * 4 / 2^20, n * elements * 4 / 2^20, status_kb("VmHWM") / 1024,
    status_kb("VmPeak") / 1024, stats.live_bytes / 2^20, stats.forced_collections,
    stats.failed_allocations, os.clock() - clock0, os.time() - t0))
