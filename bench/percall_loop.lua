-- bench/percall_loop.lua: one per-call workload in a loop, for thread time
-- and for callgrind instruction counts (bench/percall_ir.sh).
-- usage: luajit bench/percall_loop.lua index|slice|transpose|view|add|tensor [N]
local T = require "ember"
local which = arg[1] or "index"
local N = tonumber(arg[2] or 2000000)
local t = T.randn(4, 4)
local a, b = T.randn(1), T.randn(1)
local f
if which == "index" then f = function() return t[1] end
elseif which == "slice" then f = function() return t[{ {}, {2, 3} }] end
elseif which == "transpose" then f = function() return t:transpose(1, 2) end
elseif which == "view" then f = function() return t:view(-1) end
elseif which == "add" then f = function() return a + b end
elseif which == "tensor" then f = function() return T.tensor{1, 2, 3} end
end
for i = 1, 100000 do f() end
local c0 = os.clock()
for i = 1, N do f() end
local dt = os.clock() - c0
print(string.format("%s %.1f ns", which, dt / N * 1e9))
