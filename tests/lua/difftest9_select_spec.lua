-- Differences from PyTorch 1.13 found by the ninth round of differential
-- tests in the selection helpers (nonzero/argwhere/where, take_along_dim,
-- repeat_interleave, block_diag, ...; ember against torch on the same
-- inputs), each with torch's value or error. Positions are 1-based in ember
-- (dims, indices, returned positions): those shifts are not differences.
-- The last cases keep ember's answer where torch 1.13 itself is wrong.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f32 = { dtype = T.float32 }

describe("difftest round 9: selection helpers (torch 1.13)", function()
  it("nonzero, argwhere and where(cond) count a complex element nonzero when either part is", function()
    -- z = torch.complex(tensor([0., 0., 1.]), tensor([0., 1., 0.]))
    local z = T.complex(T.tensor({ 0, 0, 1 }, f32), T.tensor({ 0, 1, 0 }, f32))
    -- z.nonzero() -> [[1], [2]] (0-based); argwhere the same
    local nz = z:nonzero()
    assert.same({ 2, 1 }, nz.shape:totable())
    assert.same({ 2, 3 }, U.flat(nz))
    assert.same({ 2, 3 }, U.flat(T.argwhere(z)))
    assert.same({ 2, 3 }, U.flat(T.nonzero(z)))
    -- z.nonzero(as_tuple=True) -> (tensor([1, 2]),); torch.where(z) the same
    local tup = z:nonzero { as_tuple = true }
    assert.equal(1, #tup)
    assert.same({ 2, 3 }, U.flat(tup[1]))
    local w = T.where(z)
    assert.equal(1, #w)
    assert.same({ 2, 3 }, U.flat(w[1]))
    -- 2-d, complex128, a purely imaginary element: [[0, 2j], [0, 0]] -> [[0, 1]]
    local z2 = T.complex(T.zeros(2, 2, { dtype = T.float64 }), T.tensor({ { 0, 2 }, { 0, 0 } }, { dtype = T.float64 }))
    assert.same({ 1, 2 }, U.flat(z2:nonzero()))
    assert.same({ 1, 2 }, U.flat(z2:argwhere()))
  end)

  it("take_along_dim with a dim on a 0-d tensor names the dim", function()
    -- torch.take_along_dim(tensor(4.5), tensor(0), 0):
    -- "Dimension specified as 0 but tensor has no dimensions"
    err(function() return T.take_along_dim(T.tensor(4.5), T.tensor(1), 1) end,
      "take_along_dim: Dimension specified as 1 but tensor has no dimensions")
    -- without dim it reads the flattened tensor: tensor([4.5])
    assert.same({ 4.5 }, U.flat(T.take_along_dim(T.tensor(4.5), T.tensor(1))))
  end)

  it("block_diag names the offending input 1-based", function()
    -- torch: "Input 0 has 3 dimensions" (0-based) for the first input
    err(function() return T.block_diag(T.ones(2), T.ones(1, 1, 1)) end,
      "block_diag: Input tensors must have 2 or fewer dimensions. Input 2 has 3 dimensions")
  end)

  it("repeat_interleave along a dim of a 0-d tensor is refused", function()
    -- torch.tensor(5).repeat_interleave(3, 0), (tensor([2]), 0), (1, 0), (tensor(2), -1):
    -- "Dimension specified as 0 but tensor has no dimensions"
    err(function() return T.tensor(5):repeat_interleave(3, 1) end,
      "repeat_interleave: Dimension specified as 1 but tensor has no dimensions")
    err(function() return T.tensor(5):repeat_interleave(T.tensor { 2 }, 1) end,
      "repeat_interleave: Dimension specified as 1 but tensor has no dimensions")
    err(function() return T.tensor(5):repeat_interleave(1, 1) end,
      "repeat_interleave: Dimension specified as 1 but tensor has no dimensions")
    err(function() return T.tensor(5):repeat_interleave(T.tensor(2), -1) end,
      "repeat_interleave: Dimension specified as -1 but tensor has no dimensions")
    -- without dim a 0-d tensor is flattened: tensor(5).repeat_interleave(3) -> [5, 5, 5]
    assert.same({ 5, 5, 5 }, U.flat(T.tensor(5):repeat_interleave(3)))
    assert.same({ 5, 5 }, U.flat(T.tensor(5):repeat_interleave(T.tensor { 2 })))
  end)

  it("repeat_interleave(repeats) alone keeps the repeats' dtype", function()
    -- torch.repeat_interleave(tensor([1, 2], dtype=int32)) -> tensor([0, 1, 1], dtype=int32)
    local r = T.repeat_interleave(T.tensor({ 1, 2 }, { dtype = T.int32 }))
    assert.equal(T.int32, r.dtype)
    assert.same({ 1, 2, 2 }, U.flat(r))
    local r64 = T.repeat_interleave(T.tensor { 2, 0, 1 })
    assert.equal(T.int64, r64.dtype)
    assert.same({ 1, 1, 3 }, U.flat(r64))
    -- an empty int32 repeats: an empty int32 result
    local e = T.repeat_interleave(T.zeros(0, { dtype = T.int32 }))
    assert.equal(T.int32, e.dtype)
    assert.equal(0, e:numel())
  end)

  it("where torch 1.13 is wrong, ember keeps the right answer", function()
    -- torch 1.13's slice_scatter without step uses a slice of one element:
    -- slice_scatter(zeros(8), tensor([1., 2, 3]), 0, 2, 5) raises "src size = [3],
    -- slice size = [1]" (with step=1 it gives [0, 0, 1, 2, 3, 0, 0, 0])
    assert.same({ 0, 0, 1, 2, 3, 0, 0, 0 },
      U.flat(T.slice_scatter(T.zeros(8), T.tensor({ 1, 2, 3 }, f32), 1, 3, 5)))
    -- torch 1.13: unique([nan, 1, nan, 1], return_inverse, return_counts) gives
    -- values [1, nan, nan] but inverse [0, 0, 0, 0] and counts [2, 0, 0];
    -- each NaN is its own value (NumPy's inverse for the same values agrees)
    local v, inv, cnt = T.tensor({ 0 / 0, 1, 0 / 0, 1 }, f32):unique { return_inverse = true, return_counts = true }
    assert.equal(3, v:numel())
    assert.same({ 2, 1, 3, 1 }, U.flat(inv))
    assert.same({ 2, 1, 1 }, U.flat(cnt))
    -- torch 1.13's isin with a large test set (its sort path) finds NaN:
    -- isin(tensor([0.5, 1, nan, 3]), arange(300) / 2) -> [True, True, True, True]
    local r = T.isin(T.tensor({ 0.5, 1, 0 / 0, 3 }, f32), T.arange(300):to(T.float32):div(2))
    assert.same({ true, true, false, true }, U.flat(r))
  end)
end)
