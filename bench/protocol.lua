-- bench/protocol.lua: the worker side of bench.py's line protocol, shared
-- by worker.lua (ember) and floor_worker.lua (the per-call floor). Reads
--   setup NAME SCALE | time NAME INNER | threads N | quit
--   [peak NAME STEPS: when the worker has peaks]
-- on stdin and answers "ok", "skip REASON", "t SECONDS" (the total for
-- INNER calls of the body) or "v VALUE". serve{...} takes:
--   setups[NAME](scale), bodies[NAME](inner): the workloads;
--   reset(): called before each setup (a fresh state, then a collection);
--   threads(n): sets the thread count;
--   unknown: the skip reason for a workload without a setup;
--   peak(name, steps) (optional): a number for "peak" (bench/worker_cuda.lua:
--   the device memory a workload's calls reach).
local ffi = require "ffi"
-- ember.train may have declared clock_gettime with its own timespec type:
-- declare it only if needed and call it through a pointer of our own type.
pcall(ffi.cdef, "int clock_gettime(int clk, void *ts);")
local clock_gettime = ffi.cast("int (*)(int, int64_t *)", ffi.C.clock_gettime)
local ts = ffi.new("int64_t[2]")
local function now()
  clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts[0]) + tonumber(ts[1]) * 1e-9
end

local function serve(o)
  io.stdout:setvbuf("line")
  for line in io.lines() do
    local cmd, a1, a2 = line:match("^(%S+)%s*(%S*)%s*(%S*)")
    if cmd == "quit" then break
    elseif cmd == "threads" then
      o.threads(tonumber(a1))
      print("ok")
    elseif cmd == "setup" then
      o.reset()
      collectgarbage()
      local setup = o.setups[a1]
      if not setup then
        print("skip " .. o.unknown)
      else
        local ok, err = pcall(setup, tonumber(a2) or 1)
        if ok then print("ok")
        else print("skip " .. tostring(err):gsub("\n", " ")) end
      end
    elseif cmd == "time" then
      local f, n = o.bodies[a1], tonumber(a2)
      local t0 = now()
      local ok, err = pcall(f, n)
      local t1 = now()
      if ok then print(string.format("t %.9f", t1 - t0))
      else print("skip " .. tostring(err):gsub("\n", " ")) end
    elseif cmd == "peak" and o.peak then
      local ok, v = pcall(o.peak, a1, tonumber(a2) or 1)
      if ok then print(string.format("v %.17g", v))
      else print("skip " .. tostring(v):gsub("\n", " ")) end
    else
      print("skip unknown command " .. tostring(cmd))
    end
  end
end

return { serve = serve, now = now }
