-- The creation family on the meta device: empty/zeros/ones/full, the
-- ranges and eye give the CPU result's shape, dtype and strides, on the
-- meta device, with the CPU's argument checks.
local T = require "ember"

local same_meta = require("metacheck").same_meta

local M = { device = "meta" }
local function with(opts)
  local o = { device = "meta" }
  for k, v in pairs(opts) do o[k] = v end
  return o
end

describe("creation on meta tensors", function()
  it("empty, zeros, ones and full give the CPU result's metadata", function()
    for _, dt in ipairs({ T.float32, T.float64, T.int64, T.bool, T.float16, T.uint8 }) do
      local o = { dtype = dt }
      same_meta(T.empty(2, 3, o), T.empty(2, 3, with(o)))
      same_meta(T.zeros(2, 3, 4, o), T.zeros(2, 3, 4, with(o)))
      same_meta(T.ones(5, o), T.ones(5, with(o)))
      same_meta(T.full({ 3, 2 }, 1, o), T.full({ 3, 2 }, 1, with(o)))
    end
    same_meta(T.zeros(0, 3), T.zeros(0, 3, M))
    same_meta(T.full({ 2 }, 2.5), T.full({ 2 }, 2.5, M))
    same_meta(T.empty_like(T.empty(3, 4)), T.empty_like(T.empty(3, 4, M)))
    same_meta(T.zeros_like(T.empty(3, 4)), T.zeros_like(T.empty(3, 4, M)))
  end)

  it("arange, linspace and logspace give the CPU result's metadata", function()
    same_meta(T.arange(10), T.arange(10, M))
    same_meta(T.arange(1, 10, 2), T.arange(1, 10, 2, M))
    same_meta(T.arange(0, 1, 0.1), T.arange(0, 1, 0.1, M))
    same_meta(T.arange(5, 0, -1, { dtype = T.int32 }), T.arange(5, 0, -1, with({ dtype = T.int32 })))
    same_meta(T.arange(0, 3, 0.5, { dtype = T.float16 }), T.arange(0, 3, 0.5, with({ dtype = T.float16 })))
    same_meta(T.arange(0), T.arange(0, M))
    same_meta(T.linspace(0, 1, 7), T.linspace(0, 1, 7, M))
    same_meta(T.linspace(-1, 1, 0, { dtype = T.float64 }), T.linspace(-1, 1, 0, with({ dtype = T.float64 })))
    same_meta(T.logspace(0, 2, 5), T.logspace(0, 2, 5, M))
    same_meta(T.logspace(0, 2, 5, { base = 2, dtype = T.int64 }),
      T.logspace(0, 2, 5, with({ base = 2, dtype = T.int64 })))
  end)

  it("eye gives the CPU result's metadata", function()
    same_meta(T.eye(3), T.eye(3, M))
    same_meta(T.eye(2, 5), T.eye(2, 5, M))
    same_meta(T.eye(0, 4, { dtype = T.int64 }), T.eye(0, 4, with({ dtype = T.int64 })))
  end)

  it("checks the arguments as on the CPU", function()
    assert.has_error(function() T.arange(0, 5, 0, M) end, "arange: step must be nonzero")
    assert.has_error(function() T.arange(3, { dtype = T.bool, device = "meta" }) end,
      "arange: not implemented for dtype ember.bool")
    assert.has_error(function() T.linspace(0, 1, -1, M) end,
      "linspace: number of steps must be non-negative, got -1")
    assert.has_error(function() T.eye(-1, M) end, "eye: n must be greater or equal to 0, got -1")
  end)
end)
