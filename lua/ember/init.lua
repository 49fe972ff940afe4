-- ember: a tensor engine in C, scripted from LuaJIT.
-- This module is the C module ember.core plus the pieces written in Lua.
-- Each lua/ember/<area>.lua file receives (T, C) and adds its part.
-- Before the C module (and with it libgomp) loads: unless the user chose an
-- OpenMP wait policy, idle OpenMP threads spin briefly (GOMP_SPINCOUNT 3000)
-- instead of libgomp's default 300,000 rounds. Its spinning threads otherwise
-- take the cores from OpenBLAS's own (pthread) threads between a GEMM and
-- the next ember kernel: on 2 cores, 2 threads, a CNN training step took
-- 13.7 ms instead of 5.5 ms at 1 thread; with 3000 it takes 4.4 ms, and a
-- 100k-element parallel exp keeps its 33 us (OMP_WAIT_POLICY=passive fixed
-- the step but made that exp 52 us). docs/performance.md. libgomp reads its
-- environment once, when it loads: a process that loaded it already keeps
-- its settings, and C hosts set the variable themselves.
do
  local ok, ffi = pcall(require, "ffi")
  if ok and os.getenv("GOMP_SPINCOUNT") == nil and os.getenv("OMP_WAIT_POLICY") == nil then
    pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite);")
    pcall(function() ffi.C.setenv("GOMP_SPINCOUNT", "3000", 0) end)
  end
end
local C = require "ember.core"

local T = {}
for k, v in pairs(C) do
  if type(k) ~= "string" or k:sub(1, 1) ~= "_" then T[k] = v end
end
T._C = C
T.Tensor_methods = C._methods -- methods table shared by every tensor

-- The Lua parts, in dependency order.
for _, area in ipairs { "size", "tensor", "view", "creation", "math", "reduce", "select", "interop", "autograd", "nn", "tools", "optim", "amp", "data", "train", "print", "distributed", "special", "distributions", "stats", "cuda", "linalg", "complex", "fft" } do
  require("ember." .. area)(T, C)
end

return T
