-- bench/percall_loop.lua: one per-call workload in a loop, for thread time
-- and for callgrind instruction counts (bench/percall_ir.sh). The bodies
-- are worker.lua's (the slice key is made once, as there).
-- usage: luajit bench/percall_loop.lua add|index|slice|transpose|view|tensor [N] [floor]
-- With "floor", the same calls run on bench/floor.c's minimal binding
-- (floor.so from $EMBER_BUILD or build-release) instead of ember.
local which, N, floor = arg[1] or "index", tonumber(arg[2] or 2000000), arg[3] == "floor"
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
local t = T.rand(4, 4)
local a, b = T.rand(1), T.rand(1)
local k = { {}, { 2, 3 } }
local f
if which == "index" then f = function() return t[1] end
elseif which == "slice" then f = function() return t[k] end
elseif which == "transpose" then f = function() return t:transpose(1, 2) end
elseif which == "view" then f = function() return t:view(-1) end
elseif which == "add" then f = function() return a + b end
elseif which == "tensor" then f = function() return T.tensor { 1, 2, 3 } end
else error("unknown workload " .. tostring(which)) end
for _ = 1, 100000 do f() end
local c0 = os.clock()
for _ = 1, N do f() end
local dt = os.clock() - c0
print(string.format("%s%s %.1f ns", which, floor and " (floor)" or "", dt / N * 1e9))
