-- unique along a dim composed from sort, index and scan ops (engine/src/ops/
-- unique_math.c): the path a device without the unique_dim kernels takes
-- (cuda today). unique_out_spec.lua's cases (torch.unique(dim=) fixtures,
-- NaN slices, bad dims) run again with it forced on the CPU, and the two
-- paths are held against each other.
local C = require "ember.core"
local S = require "spec_include"

S.composed("unique along a dim composed from ops", "tests/lua/unique_out_spec.lua", getfenv and getfenv(1) or _ENV)

describe("the unique_dim kernels and the composed path", function()
  local T = require "ember"
  local function both(x, dim)
    local function run(composed)
      C._nn_force_math(composed)
      local ok, v, i, c = pcall(function()
        return x:unique({ dim = dim, return_inverse = true, return_counts = true })
      end)
      C._nn_force_math(false)
      assert(ok, v)
      return v, i, c
    end
    local v1, i1, c1 = run(false)
    local v2, i2, c2 = run(true)
    assert.same(v1.shape:totable(), v2.shape:totable())
    assert.is_true(T.equal(i1, i2), "inverse")
    assert.is_true(T.equal(c1, c2), "counts")
    -- values bit for bit (NaN slices compared as NaN, -0 as its sign)
    assert.is_true(T.allclose(v1:double(), v2:double(), 0, 0, true), "values")
    if v1.dtype == T.float32 or v1.dtype == T.float64 then
      assert.is_true(T.equal(T.copysign(T.ones_like(v1), v1), T.copysign(T.ones_like(v2), v2)), "signs")
    end
  end
  it("agree on integers, floats with NaN and -0, 3-d slices, every dim, one and no slices", function()
    T.manual_seed(9)
    both(T.randint(0, 3, { 40, 3 }), 1)
    both(T.randint(0, 2, { 5, 30 }), 2)
    local f = T.randint(-2, 3, { 25, 4 }):float()
    f[3][2] = 0 / 0
    f[7] = f[9]:clone()
    f[11][1] = -0.0
    f[12] = f[11]:clone()
    f[12][1] = 0.0
    both(f, 1)
    both(T.randint(0, 2, { 3, 7, 2 }):double(), 2)
    both(T.randint(0, 2, { 6, 2, 3 }), 1)
    both(T.randint(0, 2, { 2, 3, 6 }), 3)
    both(T.tensor { { 1, 2 } }, 1)
    both(T.zeros(0, 3), 1)
    both(T.zeros(4, 0), 2)
    both(T.tensor { true, false, true }:view(3, 1), 1)
  end)
end)
