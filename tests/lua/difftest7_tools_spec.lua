-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests in the tensor-algebra and construction tools (einsum, tensordot,
-- the add* products, cdist, vander, tril_indices, repeat_interleave, tile,
-- ...), ember against torch on the same inputs, each with torch's value or
-- error. Positions are 1-based in ember (dims, indices): those shifts are
-- not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = { dtype = T.float64 }

local function near(got, want, tol)
  assert.equal(#want, #got)
  for i = 1, #want do
    assert(math.abs(got[i] - want[i]) <= (tol or 1e-12), ("entry %d: %s, expected %s"):format(i, got[i], want[i]))
  end
end

describe("difftest round 7: tensor tools (torch 1.13)", function()
  it("addbmm refuses an input of another dtype than the batches", function()
    local b1, b2 = T.ones(2, 1, 3), T.ones(2, 3, 2)
    -- torch.addbmm(m.double(), b1, b2): RuntimeError: self and mat2 must have the same dtype
    err(function() T.addbmm(T.zeros({ 1, 2 }, f64), b1, b2) end,
      "addbmm: self and mat2 must have the same dtype, but got: float64 != float32")
    -- also at beta = 0, and with an integer input
    err(function() T.addbmm(T.zeros({ 1, 2 }, f64), b1, b2, { beta = 0 }) end, "same dtype")
    err(function() T.addbmm(T.zeros({ 1, 2 }, { dtype = T.int64 }), b1, b2) end, "same dtype")
    -- an input that does not broadcast to the result: torch "The expanded size of the tensor (3)
    -- must match the existing size (4) ..."
    err(function() T.addbmm(T.zeros(1, 4), b1, b2, { beta = 0 }) end,
      "addbmm: input of shape [1, 4] cannot be broadcast to the result shape [1, 2]")
    assert.same({ 6, 6 }, U.flat(T.addbmm(T.zeros(1, 2), b1, b2)))
  end)

  it("addbmm with beta = 0 ignores NaN in the input and gives it a zero gradient", function()
    -- torch: m = [[1, nan]] (requires grad), b1 = arange(12).reshape(2,1,6),
    -- b2 = arange(24).reshape(2,6,2)/10: addbmm(m, b1, b2, beta=0) = [[101.2, 107.8]],
    -- after .sum().backward() m.grad = [[0, 0]] (not None)
    local m = T.tensor({ { 1, 0 / 0 } }, f64):requires_grad_()
    local b1 = T.arange(0, 12, f64):reshape(2, 1, 6)
    local b2 = T.arange(0, 24, f64):reshape(2, 6, 2) / 10
    local r = T.addbmm(m, b1, b2, { beta = 0 })
    near(U.flat(r), { 101.2, 107.8 }, 1e-12)
    r:sum():backward()
    assert.is_not_nil(m.grad)
    assert.same({ 0, 0 }, U.flat(m.grad))
    -- broadcast input: its gradient has its own shape
    local m1 = T.tensor({ 5, 7 }, f64):requires_grad_()
    T.addbmm(m1, b1, b2, { beta = 0 }):sum():backward()
    assert.same({ 0, 0 }, U.flat(m1.grad))
    -- the same for addr: torch.addr(m, v1, v2, beta=0, alpha=2) gives m.grad zeros
    local m2 = T.tensor({ 1, 2, 3 }, f64):requires_grad_()
    T.addr(m2, T.tensor({ 1, 2 }, f64), T.tensor({ 3, 4, 5 }, f64), { beta = 0, alpha = 2 }):sum():backward()
    assert.same({ 0, 0, 0 }, U.flat(m2.grad))
  end)

  it("addr: integer results take integer beta/alpha only; bool results are logical", function()
    local m, v1, v2 = T.tensor { { 1, 2 }, { 3, 4 } }, T.tensor { 1, 2 }, T.tensor { 3, -1 }
    -- torch.addr(m, v1, v2, beta=0.5): RuntimeError: For integral input tensors,
    -- argument beta must not be a floating point number. (ember gave a float32 result)
    err(function() T.addr(m, v1, v2, { beta = 0.5 }) end,
      "addr: for integer tensors beta and alpha must be integers, got beta=0.5 alpha=1")
    err(function() T.addr(m, v1, v2, { alpha = 1.5 }) end, "beta and alpha must be integers")
    -- torch.addr(m, v1, v2, beta=2, alpha=-3) -> [[-7, 7], [-12, 14]], int64
    local r = T.addr(m, v1, v2, { beta = 2, alpha = -3 })
    assert.equal(T.int64, r.dtype)
    assert.same({ -7, 7, -12, 14 }, U.flat(r))
    -- a float input keeps promoting (torch: float32 result)
    assert.equal(T.float32, T.addr(T.zeros(2, 2), v1, v2, { beta = 0.5 }).dtype)
    -- bool: torch gives bool results, (beta and M) or (alpha and v1 v2^T)
    local bm = T.tensor { { true, false }, { false, false } }
    local b1, b2 = T.tensor { true, false }, T.tensor { false, true }
    -- torch.addr(bm, b1, b2) -> [[True, True], [False, False]]
    r = T.addr(bm, b1, b2)
    assert.equal(T.bool, r.dtype)
    assert.same({ true, true, false, false }, U.flat(r))
    -- beta=0 -> [[False, True], [False, False]]; alpha=False -> bm itself; beta=2 as beta=True
    assert.same({ false, true, false, false }, U.flat(T.addr(bm, b1, b2, { beta = 0 })))
    assert.same({ true, false, false, false }, U.flat(T.addr(bm, b1, b2, { alpha = false })))
    assert.equal(T.bool, T.addr(bm, b1, b2, { beta = 2 }).dtype)
    -- torch.addr(float m, ..., beta=True): Boolean beta only supported for Boolean results.
    err(function() T.addr(T.zeros(2, 2), T.ones(2), T.ones(2), { beta = true }) end,
      "addr: Boolean beta only supported for Boolean results.")
  end)

  it("cdist's matmul form gives a zero gradient where a distance is 0", function()
    -- torch: a = [[1, 2], [1, 3]], b = [[1, 3], [0, 0]] (float64),
    -- cdist(a, b, compute_mode='use_mm_for_euclid_dist').sum().backward():
    -- a.grad [[0.4472135955, -0.1055728090], [0.3162277660, 0.9486832981]],
    -- b.grad [[0, 1], [-0.7634413615, -1.8431104891]] (ember gave NaN at the zero distance)
    local a = T.tensor({ { 1, 2 }, { 1, 3 } }, f64):requires_grad_()
    local b = T.tensor({ { 1, 3 }, { 0, 0 } }, f64):requires_grad_()
    local d = T.cdist(a, b, { compute_mode = "use_mm_for_euclid_dist" })
    near(U.flat(d), { 1, math.sqrt(5), 0, math.sqrt(10) })
    d:sum():backward()
    local s5, s10 = math.sqrt(5), math.sqrt(10)
    near(U.flat(a.grad), { 1 / s5, 2 / s5 - 1, 1 / s10, 3 / s10 })
    near(U.flat(b.grad), { 0, 1, -(1 / s5 + 1 / s10), -(2 / s5 + 3 / s10) })
    -- the default mode takes the matmul form for more than 25 rows
    local x = T.zeros({ 30, 2 }, f64):requires_grad_()
    T.cdist(x, x):sum():backward()
    assert.same(0, x.grad:abs():sum():item())
  end)

  it("tensordot checks its dim lists (range, repeats)", function()
    local a, b = T.ones(3, 3), T.ones(3, 3)
    -- torch.tensordot(a, b, ([0, 0], [0, 1])): dim 0 appears multiple times in the list of dims
    -- (ember failed inside permute)
    err(function() T.tensordot(a, b, { { 1, 1 }, { 1, 2 } }) end,
      "tensordot: dimension 1 appears more than once in the dims of a")
    -- torch.tensordot(a, b, ([2], [0])): Dimension out of range (expected to be in range of [-2, 1], but got 2)
    err(function() T.tensordot(a, b, { { 3 }, { 1 } }) end,
      "tensordot: dimension 3 of a out of range (expected to be in range of [-2, 2])")
    err(function() T.tensordot(a, b, { { 1 }, { 0 } }) end, "dimension 0 of b out of range")
    err(function() T.tensordot(a, b, { { 1 }, { -3 } }) end, "dimension -3 of b out of range")
    assert.same({ 3, 3, 3, 3, 3, 3, 3, 3, 3 }, U.flat(T.tensordot(a, b, { { -2 }, { -1 } })))
  end)

  it("tril_indices/triu_indices take an int64 or int32 dtype only", function()
    -- torch.tril_indices(3, 3, dtype=torch.float32): "tril_indices" not implemented for 'Float'
    err(function() T.tril_indices(3, 3, { dtype = T.float32 }) end,
      "tril_indices: dtype must be int64 or int32, got float32")
    err(function() T.triu_indices(3, 3, 0, { dtype = T.int16 }) end,
      "triu_indices: dtype must be int64 or int32, got int16")
    local r = T.tril_indices(2, 2, { dtype = T.int32 })
    assert.equal(T.int32, r.dtype)
    assert.same({ 1, 2, 2, 1, 1, 2 }, U.flat(r))
  end)

  it("trace refuses a bool matrix", function()
    -- torch.trace(torch.ones(3, 3, dtype=torch.bool)): "trace" not implemented for 'Bool'
    err(function() T.trace(T.ones({ 3, 3 }, { dtype = T.bool })) end, "trace: not implemented for 'bool' tensors")
    err(function() T.ones({ 3, 3 }, { dtype = T.bool }):trace() end, "not implemented for 'bool'")
    -- integers sum to int64, as torch's
    assert.equal(T.int64, T.trace(T.ones({ 2, 3 }, { dtype = T.int32 })).dtype)
  end)

  it("linalg.vander refuses bool input and fewer than 2 columns", function()
    -- torch.linalg.vander(x, N=1) / N=0 / a 1-element x: N must be greater than 1.
    err(function() T.linalg.vander(T.tensor { 1, 2, 3 }, { N = 1 }) end, "linalg.vander: N must be greater than 1, got 1")
    err(function() T.linalg.vander(T.tensor { 1, 2, 3 }, { N = 0 }) end, "N must be greater than 1")
    err(function() T.linalg.vander(T.tensor { 2 }) end, "N must be greater than 1")
    -- torch.linalg.vander(bool x): supports floating point, complex, and integer tensors, but got Bool
    err(function() T.linalg.vander(T.tensor { true, false }) end,
      "linalg.vander: supports floating point, complex, and integer tensors, but got bool")
    -- torch.vander takes both (N=0: a 3 x 0 result)
    assert.same({ 3, 0 }, T.vander(T.tensor { 1, 2, 3 }, { N = 0 }).shape:totable())
    assert.same({ 1, 1, 1, 1, 2, 3 }, U.flat(T.linalg.vander(T.tensor { 1, 2, 3 }, { N = 2 }):t()))
  end)

  it("repeat_interleave(repeats) alone takes a vector, not a 0-d tensor", function()
    -- torch.repeat_interleave(torch.tensor(3)): repeat_interleave only accept 1D vector as repeat
    err(function() T.repeat_interleave(T.tensor(3)) end,
      "repeat_interleave: repeats alone must be a 1-d tensor, got a 0-d tensor")
    -- torch.repeat_interleave(torch.tensor([2, 0, 3])) -> [0, 0, 2, 2, 2] (1-based here)
    assert.same({ 1, 1, 3, 3, 3 }, U.flat(T.repeat_interleave(T.tensor { 2, 0, 3 })))
    -- a 0-d repeats with an input still broadcasts
    assert.same({ 1, 1, 2, 2 }, U.flat(T.repeat_interleave(T.tensor { 1, 2 }, T.tensor(2), 1)))
  end)

  it("tile names itself for a negative repeat", function()
    -- torch.tile(x, [-1, 2]): Trying to create tensor with negative dimension -2: [-2, 6]
    -- (ember's error was under the name repeat)
    err(function() T.tile(T.ones(2, 3), { -1, 2 }) end, "tile: repeats must be non-negative, got -1 (entry 1)")
    err(function() T.ones(2, 3):tile { 2, 2, -3 } end, "tile: repeats must be non-negative, got -3 (entry 3)")
  end)
end)
