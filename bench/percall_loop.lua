-- bench/percall_loop.lua: one per-call workload in a loop, for thread time
-- and for callgrind instruction counts (bench/percall_ir.sh). Setups and
-- loop bodies are bench/percall.lua's, as in the benchmark's workers.
-- usage: luajit bench/percall_loop.lua add|index|slice|transpose|view|tensor [N] [floor]
-- With "floor", the same calls run on bench/floor.c's minimal binding
-- (floor.so from $EMBER_BUILD or build-release) instead of ember.
local which, N, floor = arg[1] or "index", tonumber(arg[2] or 2000000), arg[3] == "floor"
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local T
if floor then
  local open = assert(package.loadlib((os.getenv("EMBER_BUILD") or "build-release") .. "/floor.so",
    "luaopen_floor"))
  T = open()
  local M, index_get, type = T._methods, T._index_get, type
  T._mt.__index = function(t, k) -- as floor_worker.lua / lua/ember/tensor.lua
    if type(k) == "string" then return M[k] end
    return index_get(t, k)
  end
else
  T = require "ember"
end
local S = {}
local setups, bodies = dofile(here .. "percall.lua")(T, S)
local name = "percall_" .. (which == "add" and "add1" or which)
local body = bodies[name]
if not body or not setups[name] then error("unknown workload " .. tostring(which)) end
setups[name]()
body(100000) -- warm-up
local c0 = os.clock()
body(N)
local dt = os.clock() - c0
print(string.format("%s%s %.1f ns", which, floor and " (floor)" or "", dt / N * 1e9))
