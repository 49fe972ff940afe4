-- The random family on the meta device: the samplers fill nothing and
-- give back their tensor; the constructors give the CPU result's shape,
-- dtype and strides on the meta device; and, as in PyTorch, nothing drawn
-- on meta touches the (CPU) generator.
local T = require "ember"

local same_meta = require("metacheck").same_meta

local function meta(...)
  local n = select("#", ...)
  local args = { ... }
  args[n + 1] = { device = "meta" }
  return T.empty((table.unpack or unpack)(args, 1, n + 1))
end

describe("random on meta tensors", function()
  it("the in-place samplers keep the tensor's metadata", function()
    for _, dt in ipairs({ T.float32, T.float64, T.float16, T.bfloat16 }) do
      local m = T.empty(4, 5, { dtype = dt, device = "meta" }):t()
      local c = T.empty(4, 5, { dtype = dt }):t()
      same_meta(c:uniform_(-1, 2), m:uniform_(-1, 2))
      same_meta(c:normal_(0, 3), m:normal_(0, 3))
      same_meta(c:exponential_(2), m:exponential_(2))
    end
    for _, dt in ipairs({ T.int64, T.int32, T.uint8, T.bool, T.float32 }) do
      local m, c = T.empty(6, { dtype = dt, device = "meta" }), T.empty(6, { dtype = dt })
      same_meta(c:random_(0, 2), m:random_(0, 2))
      same_meta(c:bernoulli_(0.25), m:bernoulli_(0.25))
      same_meta(c:bernoulli_(T.full({ 6 }, 0.5)), m:bernoulli_(T.full({ 6 }, 0.5, { device = "meta" })))
    end
  end)

  it("the random constructors give the CPU result's metadata", function()
    same_meta(T.rand(3, 4), T.rand(3, 4, { device = "meta" }))
    same_meta(T.randn(3, 4, { dtype = T.float64 }), T.randn(3, 4, { dtype = T.float64, device = "meta" }))
    same_meta(T.randint(0, 5, { 2, 3 }), T.randint(0, 5, { 2, 3 }, { device = "meta" }))
    same_meta(T.rand_like(T.empty(2, 5)), T.rand_like(meta(2, 5)))
    same_meta(T.randn_like(T.empty(2, 5)), T.randn_like(meta(2, 5)))
    same_meta(T.randint_like(T.empty(2, 5), 0, 9), T.randint_like(meta(2, 5), 0, 9))
    same_meta(T.bernoulli(T.full({ 2, 3 }, 0.5)), T.bernoulli(T.full({ 2, 3 }, 0.5, { device = "meta" })))
  end)

  it("randperm and multinomial give their shapes, known from the arguments", function()
    same_meta(T.randperm(7), T.randperm(7, { device = "meta" }))
    same_meta(T.randperm(0), T.randperm(0, { device = "meta" }))
    same_meta(T.randperm(9, { dtype = T.int16 }), T.randperm(9, { dtype = T.int16, device = "meta" }))
    local p = T.full({ 5 }, 0.2)
    same_meta(T.multinomial(p, 3), T.multinomial(meta(5), 3))
    same_meta(T.multinomial(p, 8, true), T.multinomial(meta(5), 8, true))
    local p2 = T.full({ 4, 6 }, 0.5)
    same_meta(T.multinomial(p2, 6), T.multinomial(meta(4, 6), 6))
    same_meta(T.multinomial(p2, 9, true), T.multinomial(meta(4, 6):t():t(), 9, true))
    -- the argument checks are the CPU's
    assert.has_error(function() T.multinomial(meta(5), 6) end,
      "multinomial: cannot sample n_sample (6) > prob_dist.size(-1) (5) samples without replacement")
    assert.has_error(function() T.randperm(-1, { device = "meta" }) end,
      "randperm: n must be non-negative, got -1")
  end)

  it("leaves the generator as it was", function()
    T.manual_seed(99)
    local before = T.get_rng_state()
    meta(1000):uniform_()
    meta(10, 10):normal_()
    meta(7):random_(0, 100)
    T.randperm(50, { device = "meta" })
    T.multinomial(meta(3, 4), 2)
    T.rand(5, { device = "meta" })
    meta(6):bernoulli_(T.full({ 6 }, 0.5, { device = "meta" }))
    assert.same(before, T.get_rng_state())
    local a = T.rand(4):tolist()
    T.manual_seed(99)
    assert.same(T.rand(4):tolist(), a)
  end)

  it("refuses probabilities on another device with the shared message", function()
    assert.has_error(function() T.empty(3):bernoulli_(T.full({ 3 }, 0.5, { device = "meta" })) end,
      "bernoulli_: expected all tensors to be on the same device, but found at least two " ..
      "devices, cpu and meta")
  end)
end)
