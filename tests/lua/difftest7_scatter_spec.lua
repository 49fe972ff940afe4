-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests in the scatter/gather/index-write family (ember against torch on the
-- same inputs), each with torch's value or error. Positions are 1-based in
-- ember (dims, indices): those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = { dtype = T.float64 }

describe("difftest round 7: scatter, gather and the index writes (torch 1.13)", function()
  it("put's source gradient has the source's shape when the index has another", function()
    local w = T.tensor({ { 1, 2 }, { 3, 4 } }, f64)
    -- torch: x.put(tensor([[0, 3], [1, 2]]), s, accumulate=True) with s of shape [4]:
    -- x.grad [[1, 2], [3, 4]], s.grad [1, 4, 2, 3]
    local x = T.tensor({ { 1, 2 }, { 3, 4 } }, f64):requires_grad_()
    local s = T.tensor({ 5, 6, 7, 8 }, f64):requires_grad_()
    local y = x:put(T.tensor { { 1, 4 }, { 2, 3 } }, s, true)
    assert.same({ 6, 9, 11, 10 }, U.flat(y))
    local loss = (y * w):sum()
    loss:backward()
    assert.same({ 1, 2, 3, 4 }, U.flat(x.grad))
    assert.same({ 4 }, s.grad.shape:totable())
    assert.same({ 1, 4, 2, 3 }, U.flat(s.grad))
    -- torch: x.put(tensor([3, 0, 1, 2]), s2) with s2 of shape [2, 2]:
    -- y [[6, 7], [8, 5]], x.grad zeros, s2.grad [[4, 1], [2, 3]]
    x = T.tensor({ { 1, 2 }, { 3, 4 } }, f64):requires_grad_()
    local s2 = T.tensor({ { 5, 6 }, { 7, 8 } }, f64):requires_grad_()
    y = x:put(T.tensor { 4, 1, 2, 3 }, s2)
    assert.same({ 6, 7, 8, 5 }, U.flat(y))
    loss = (y * w):sum()
    loss:backward()
    assert.same({ 0, 0, 0, 0 }, U.flat(x.grad))
    assert.same({ 2, 2 }, s2.grad.shape:totable())
    assert.same({ 4, 1, 2, 3 }, U.flat(s2.grad))
  end)

  it("index_add/index_copy/index_fill into a 0-d tensor take several positions and a 1-d source", function()
    local f32 = { dtype = T.float32 }
    -- torch.tensor(3.).index_add(0, tensor([0, 0]), tensor([5., 2.])) -> tensor(10.)
    local r = T.tensor(3, f32):index_add(1, T.tensor { 1, 1 }, T.tensor({ 5, 2 }, f32))
    assert.equal(0, r:dim()); assert.equal(10, r:item())
    -- torch.tensor(2.).index_add(0, tensor([0]), tensor([3.])) -> tensor(5.)
    assert.equal(5, T.tensor(2, f32):index_add(1, T.tensor { 1 }, T.tensor({ 3 }, f32)):item())
    -- torch.tensor(1.).index_copy(0, tensor([0]), tensor([7.])) -> tensor(7.)
    r = T.tensor(1, f32):index_copy(1, T.tensor { 1 }, T.tensor({ 7 }, f32))
    assert.equal(0, r:dim()); assert.equal(7, r:item())
    -- torch.tensor(3.).index_fill(0, tensor([0, 0]), 5.) -> tensor(5.)
    assert.equal(5, T.tensor(3, f32):index_fill(1, T.tensor { 1, -1 }, 5):item())
    -- in place, the tensor itself is written
    local z = T.tensor(3, f32)
    z:index_add_(1, T.tensor { 1, 1, 1 }, T.tensor({ 1, 2, 3 }, f32))
    assert.equal(9, z:item())
    -- gradients as torch's: x.grad 1, s.grad [1, 1]
    local x = T.tensor(3, f64):requires_grad_()
    local s = T.tensor({ 5, 2 }, f64):requires_grad_()
    x:index_add(1, T.tensor { 1, 1 }, s):backward()
    assert.equal(1, x.grad:item()); assert.same({ 1, 1 }, U.flat(s.grad))
    -- torch: index_copy of tensor([5.]) into a 0-d x: x.grad 0, s.grad [1]
    x = T.tensor(3, f64):requires_grad_()
    s = T.tensor({ 5 }, f64):requires_grad_()
    x:index_copy(1, T.tensor { 1 }, s):backward()
    assert.equal(0, x.grad:item()); assert.same({ 1 }, U.flat(s.grad))
    -- still refused: a position past the one element, a 0-d source for two positions
    err(function() T.tensor(3, f32):index_add(1, T.tensor { 1, 2 }, T.tensor({ 5, 2 }, f32)) end,
      "index_add_: index 2 is out of bounds for dimension 1 with size 1")
    err(function() T.tensor(3, f32):index_add(1, T.tensor { 1, 1 }, T.tensor(5, f32)) end,
      "index_add_: source of shape [] does not match the expected shape [2]")
    err(function() T.tensor(3, f32):index_add(2, T.tensor { 1, 1 }, T.tensor({ 5, 2 }, f32)) end,
      "index_add_: dimension 2 out of range")
  end)

  it("scatter_reduce and index_reduce refuse mean on bool tensors", function()
    -- torch: "scatter_gather_tensor_cpu_reduce_mean" not implemented for 'Bool'
    local b = T.tensor { true, false, true }
    err(function() b:scatter_reduce(1, T.tensor { 1, 2, 2 }, T.tensor { false, true, true }, "mean") end,
      "scatter_reduce: reduce 'mean' is not supported for bool tensors")
    err(function() b:clone():scatter_reduce_(1, T.tensor { 1 }, T.tensor { true }, "mean", { include_self = false }) end,
      "reduce 'mean' is not supported for bool tensors")
    -- torch: "index_func_" not implemented for 'Bool'
    err(function() b:index_reduce(1, T.tensor { 1, 2 }, T.tensor { true, true }, "mean") end,
      "index_reduce: reduce 'mean' is not supported for bool tensors")
    -- the other reductions keep their logical meaning (torch's scatter_reduce has them)
    -- torch: tensor([True, False, True]).scatter_reduce(0, [0, 1, 1], [False, True, True], "amax")
    --   -> [True, True, True]; "prod" -> [False, False, True]
    assert.same({ true, true, true },
      U.flat(b:scatter_reduce(1, T.tensor { 1, 2, 2 }, T.tensor { false, true, true }, "amax")))
    assert.same({ false, false, true },
      U.flat(b:scatter_reduce(1, T.tensor { 1, 2, 2 }, T.tensor { false, true, true }, "prod")))
  end)

  it("index_reduce's errors name the op once", function()
    local x = T.zeros(2, 3)
    err(function() x:index_reduce(1, T.tensor { 1 }, T.ones(1, 3), "sum") end,
      "index_reduce: expected reduce to be one of prod, mean, amax or amin, got sum")
    err(function() x:index_reduce_(1, T.tensor { 1 }, T.ones(1, 3, f64), "prod") end,
      "index_reduce_: self (float32) and source (float64) must have the same dtype")
  end)

  it("masked_scatter_ into a non-contiguous tensor fills its true positions in row-major order", function()
    -- torch 1.13 fills a transposed self in memory order instead (t = [[10, 0], [0, 12], [11, 13]]
    -- for the case below), against its own documentation; ember keeps the row-major order
    -- that masked_select reads back
    local c = T.zeros(2, 3)
    local t = c:t()
    local m = T.tensor { { true, false }, { false, true }, { true, true } }
    t:masked_scatter_(m, T.arange(10, 16, { dtype = T.float32 }))
    assert.same({ 10, 0, 0, 11, 12, 13 }, U.flat(t))
    assert.same({ 10, 11, 12, 13 }, U.flat(t:masked_select(m)))
  end)
end)
