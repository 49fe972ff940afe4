-- Differences from PyTorch 1.13 found by the fourth round of differential
-- tests (ember against torch on the same inputs), each with torch's value
-- or error. Positions are 1-based in ember (dims, indices): those shifts
-- are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local function shape(t) return table.concat(t:size(), ",") end

describe("difftest round 4: empty index tensors, statistics edges (torch 1.13)", function()
  it("gather and scatter with an empty index skip the rank check", function()
    local x = T.arange(1, 7, { dtype = T.float32 }):reshape(2, 3)
    local e1 = T.zeros(0, { dtype = T.int64 })
    -- torch.gather(x, 1, torch.zeros(0, dtype=long)) -> shape (0,), x's dtype
    local g = T.gather(x, 2, e1)
    assert.equal("0", shape(g)); assert.equal(T.float32, g.dtype)
    assert.equal("5,0", shape(T.gather(x, 2, T.zeros(5, 0, { dtype = T.int64 }))))
    -- scatter_/scatter_add_/scatter_reduce_ with an empty index write nothing
    local y = x:clone()
    assert.is_true(T.equal(y:scatter_(2, e1, 1.5), x))
    assert.is_true(T.equal(y:scatter_add_(2, e1, T.zeros(0)), x))
    assert.is_true(T.equal(y:scatter_reduce_(2, e1, T.zeros(0), "amax", { include_self = false }), x))
    -- a non-empty index of the wrong rank is still refused
    err(function() T.gather(x, 2, T.ones(2, { dtype = T.int64 })) end, "same number of dimensions")
    -- gradient through an empty gather is zeros
    local w = x:clone():requires_grad_()
    T.gather(w, 2, e1):sum():backward()
    assert.is_true(T.equal(w.grad, T.zeros(2, 3)))
  end)

  it("unique_consecutive refuses a 0-size dim other than the one it runs along", function()
    -- torch: "There are 0 sized dimensions, and they aren't selected"
    err(function() T.zeros(2, 0):unique_consecutive({ dim = 1 }) end,
      "has a dim of size 0 other than dim 1")
    assert.equal("2,0", shape(T.zeros(2, 0):unique_consecutive({ dim = 2 })))
    assert.equal("0,2", shape(T.zeros(0, 2):unique_consecutive({ dim = 1 })))
  end)

  it("quantile takes float32/float64 only; a 0-d input stays 0-d with keepdim", function()
    err(function() T.quantile(T.zeros(3, { dtype = T.float16 }), 0.5) end, "must be either float or double")
    err(function() T.quantile(T.zeros(3, { dtype = T.bfloat16 }), 0.5) end, "must be either float or double")
    local s = T.tensor(3.5)
    -- torch.quantile(tensor(3.5), 0.5, dim=0, keepdim=True).shape == ()
    assert.equal(0, T.quantile(s, 0.5, 1, true):dim())
    assert.equal(0, T.quantile(s, 0.5, { keepdim = true }):dim())
    assert.equal("1", shape(T.quantile(T.tensor { 1.5, 2, 3 }, 0.5, { keepdim = true })))
  end)

  it("cov refuses bool input and promotes with aweights' dtype", function()
    err(function() T.cov(T.ones(2, 3, { dtype = T.bool })) end, "bool dtype is not supported")
    local x = T.tensor({ { 1, 2, 3 }, { 2, 5, 1 } }, { dtype = T.float32 })
    local c = T.cov(x, { aweights = T.tensor({ 1, 2, 3 }, { dtype = T.float64 }) })
    assert.equal(T.float64, c.dtype)
    -- torch: [[0.9090909090909091, -1.090909090909091], [-1.090909090909091, 5.318181818181818]]
    U.near(c, T.tensor({ { 0.9090909090909091, -1.090909090909091 }, { -1.090909090909091, 5.318181818181818 } },
      { dtype = T.float64 }), 1e-12)
    -- fweights alone keep the input's dtype
    assert.equal(T.float32, T.cov(x, { fweights = T.tensor { 1, 2, 3 } }).dtype)
  end)

  it("block_diag() is a 1 x 0 tensor; vander takes torch's keywords", function()
    local b = T.block_diag()
    assert.equal("1,0", shape(b)); assert.equal(T.get_default_dtype(), b.dtype)
    local v = T.vander(T.tensor { 1, 2, 3 }, { N = 2, increasing = true })
    assert.is_true(T.equal(v, T.tensor { { 1, 1 }, { 1, 2 }, { 1, 3 } }))
    assert.is_true(T.equal(T.vander(T.tensor { 1, 2, 3 }, 2), T.tensor { { 1, 1 }, { 2, 1 }, { 3, 1 } }))
    err(function() T.vander(T.tensor { 1, 2 }, { M = 1 }) end, "unknown option 'M'")
  end)
end)
