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
-- OpenBLAS's pthread workers likewise spin (yielding) for 2^28 TSC cycles,
-- about 0.1 s here, after each threaded BLAS call before they sleep: a
-- process that has just run a GEMM at 2 threads kept one core busy for a
-- tenth of a second after its work ended (measured: 0.11 s of CPU in a 0.4 s
-- idle wait), taking it from the host's other work. Unless the user set it,
-- OPENBLAS_THREAD_TIMEOUT=20 (2^20 cycles, about 0.4 ms) ends that spin
-- soon after the last call; the idle burn is then 0, and the training steps
-- are unchanged within this machine's noise (docs/performance.md).
do
  local ok, ffi = pcall(require, "ffi")
  if ok then
    pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite);")
    if os.getenv("GOMP_SPINCOUNT") == nil and os.getenv("OMP_WAIT_POLICY") == nil then
      pcall(function() ffi.C.setenv("GOMP_SPINCOUNT", "3000", 0) end)
    end
    if os.getenv("OPENBLAS_THREAD_TIMEOUT") == nil then
      pcall(function() ffi.C.setenv("OPENBLAS_THREAD_TIMEOUT", "20", 0) end)
    end
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
for _, area in ipairs { "size", "tensor", "view", "creation", "math", "reduce", "select", "interop", "autograd", "autograd2", "nn", "tools", "optim", "amp", "data", "train", "print", "distributed", "special", "distributions", "stats", "cuda", "linalg", "complex", "helpers", "helpers2", "fft", "signal", "apply", "amp_lists" } do
  require("ember." .. area)(T, C)
end

return T
