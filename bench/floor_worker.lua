-- bench/floor_worker.lua: the per-call floor contender ("Clua" in
-- bench.py): the per-call workloads of worker.lua, with the same loop
-- bodies, on the tensors of bench/floor.c (a minimal Lua C-API binding:
-- userdata box + malloc'd header + __gc). The protocol is bench/protocol.lua.
-- Loads $EMBER_BUILD/floor.so (CMake target bench_floor); not ember.
local ffi = require "ffi"
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local P = dofile(here .. "protocol.lua")

local build = os.getenv("EMBER_BUILD") or "build-release"
local open, err = package.loadlib(build .. "/floor.so", "luaopen_floor")
if not open then
  io.stderr:write("floor_worker: ", tostring(err), "\n")
  os.exit(1)
end
local F = open()

-- __index as in ember's lua/ember/tensor.lua: a Lua function, string keys
-- -> the methods table, every other key -> the C function that indexes (a
-- tail call). ember also tries property getters for strings that are not
-- methods; no per-call row here reaches them. (Setting __index to the C
-- function itself, which serves t[1] and t[k] but no methods, measured
-- the same for those two on this machine: ~125 and ~225 ns.)
do
  local M, index_get, type = F._methods, F._index_get, type
  F._mt.__index = function(t, k)
    if type(k) == "string" then return M[k] end
    return index_get(t, k)
  end
end

local S = {}

-- Each setup makes the tensors as worker.lua does, then checks one call's
-- result (values, shape, dtype), so a floor that does not compute what
-- ember computes cannot pass as the reference.
local function same(got, want, what)
  if #got ~= #want then error(what .. ": " .. #got .. " entries, expected " .. #want) end
  for i = 1, #want do
    if math.abs(got[i] - want[i]) > 1e-6 then
      error(("%s[%d] = %s, expected %s"):format(what, i, got[i], want[i]))
    end
  end
end
local function check(t, values, sizes, dtype)
  local v, s, d = F.tolist(t)
  same(v, values, "values")
  same(s, sizes, "sizes")
  if d ~= dtype then error("dtype " .. d .. ", expected " .. dtype) end
end
local function sub(list, pick)
  local out = {}
  for i, k in ipairs(pick) do out[i] = list[k] end
  return out
end

-- worker.lua's setups and loop bodies (bench/percall.lua), with F for T;
-- each setup then checks one call's result
local base, bodies = dofile(here .. "percall.lua")(F, S)
local checks = {
  percall_add1 = function()
    local a, b = F.tolist(S.a), F.tolist(S.b)
    local want = ffi.new("float[1]", a[1] + b[1])[0] -- float32 rounding
    check(S.a + S.b, { want }, { 1 }, "float32")
  end,
  percall_index = function()
    check(S.t[1], sub(F.tolist(S.t), { 1, 2, 3, 4 }), { 4 }, "float32")
  end,
  percall_slice = function()
    check(S.t[{ {}, { 2, 3 } }], sub(F.tolist(S.t), { 2, 3, 6, 7, 10, 11, 14, 15 }), { 4, 2 },
      "float32")
  end,
  percall_transpose = function()
    check(S.t:transpose(1, 2), sub(F.tolist(S.t), { 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 4, 8, 12, 16 }),
      { 4, 4 }, "float32")
  end,
  percall_view = function()
    check(S.t:view(-1), F.tolist(S.t), { 16 }, "float32")
  end,
  percall_tensor = function()
    check(F.tensor { 1, 2, 3 }, { 1, 2, 3 }, { 3 }, "int64")
  end,
}
-- only the workloads that make a tensor have a floor (not shape, item)
local setups = {}
for name, chk in pairs(checks) do
  setups[name] = function() base[name](); chk() end
end

P.serve {
  setups = setups, bodies = bodies, unknown = "no floor counterpart",
  reset = function() for k in pairs(S) do S[k] = nil end end,
  threads = function() end, -- single-threaded by nature: nothing to set
}
