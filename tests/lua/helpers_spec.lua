-- The everyday helpers (lua/ember/helpers.lua, docs/helpers.md) against
-- PyTorch 1.13 (tests/fixtures/gen_helpers.py): values, dtypes and shapes,
-- then their gradients and their errors.
local T = require "ember"
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/helpers_cases.lua")

local U = require "specutil"
local tensor = U.tensor
local function close(got, want, what)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.are.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.are.equal(want.dtype, got.dtype, what .. ": dtype")
  if want:numel() == 0 then return end
  local g, w = got:double(), want:double()
  local nan = w:isnan()
  assert.is_true(T.equal(nan, g:isnan()), what .. ": NaN positions")
  local d = T.where(nan, T.zeros({}, { dtype = T.float64 }), g - w):abs():max():item()
  local tol = (want.dtype == T.float32) and 2e-6 or 1e-12
  assert(d <= tol * math.max(1, w:nan_to_num(0):abs():max():item()), ("%s: max difference %g"):format(what, d))
end

local x = T.arange(1, 7):reshape(2, 3):float()
local f64 = { dtype = T.float64 }
local A = T.tensor({ { 4, 1 }, { 1, 3 } }, f64)
local N = T.tensor({ { 1, 2 }, { 3, 4 } }, f64)
local B = T.tensor({ { 1, 2, 0.5 }, { 0, -1, 2 } }, f64)
local nan, inf = 0 / 0, math.huge

local E = {
  new_zeros = function() return x:new_zeros(2, 2) end,
  new_ones_int = function() return x:new_ones(3, { dtype = T.int64 }) end,
  new_full = function() return x:new_full({ 2 }, 7) end,
  new_tensor = function() return x:new_tensor({ 1, 2 }) end,
  type_as = function() return T.tensor({ 1, 2 }):type_as(x) end,
  ravel = function() return x:t():ravel() end, fliplr = function() return x:fliplr() end,
  flipud = function() return T.flipud(x) end,
  hsplit = function() return T.hsplit(x, 3) end, vsplit = function() return x:vsplit(2) end,
  hsplit_idx = function() return T.hsplit(x, { 2 }) end,
  hsplit_1d = function() return T.hsplit(T.arange(0, 6), 2) end,
  dsplit = function() return T.dsplit(T.arange(0, 8):reshape(1, 2, 4), { 2, 4 }) end,
  atleast_2d = function() return T.atleast_2d(T.tensor(1):float()) end,
  atleast_3d = function() return T.atleast_3d(x) end,
  atleast_3d_1 = function() return T.atleast_3d(T.tensor { 1, 2 }) end,
  atleast_1d = function() return T.atleast_1d(T.tensor(5)) end,
  column_stack = function() return T.column_stack({ T.tensor { 1, 2 }, T.tensor { { 3 }, { 4 } } }) end,
  block_diag = function() return T.block_diag(T.ones(2, 2), T.tensor { { 5 } }:float(), T.tensor { 7, 8 }:float()) end,
  block_diag_int = function() return T.block_diag(T.tensor { { 1, 2 } }, T.tensor(3)) end,
  broadcast_tensors = function() return T.broadcast_tensors(T.ones(2, 1), T.arange(0, 3):float()) end,
  take_along_dim = function() return T.take_along_dim(x, T.tensor { { 1 }, { 3 } }, 2) end,
  take_along_dim_bc = function() return T.take_along_dim(x, T.tensor { { 3 } }, 2) end,
  take_along_flat = function() return x:take_along_dim(T.tensor { 6, 1 }) end,
  sum_to_size = function() return T.arange(0, 24):reshape(2, 3, 4):float():sum_to_size(3, 1) end,
  diagflat = function() return T.diagflat(T.tensor { { 1, 2 }, { 3, 4 } }, 1) end,
  diagflat_neg = function() return T.tensor { 1, 2 }:float():diagflat(-1) end,
  tril_indices = function() return T.tril_indices(3, 3) end,
  tril_indices_off = function() return T.tril_indices(3, 4, -1) end,
  triu_indices = function() return T.triu_indices(3, 4, 1) end,
  triu_indices_empty = function() return T.triu_indices(2, 2, 5) end,
  cartesian_prod = function() return T.cartesian_prod(T.tensor { 1, 2 }, T.tensor { 3, 4, 5 }) end,
  combinations = function() return T.combinations(T.tensor { 1, 2, 3 }) end,
  combinations_r3 = function() return T.combinations(T.tensor { 1, 2, 3, 4 }:float(), 3) end,
  combinations_rep = function() return T.combinations(T.tensor { 1, 2, 3 }, 2, { with_replacement = true }) end,
  isin = function() return T.isin(T.tensor { 1, 2, 3, 5 }, T.tensor { 2, 5 }) end,
  isin_2d = function() return T.isin(T.tensor { { 1.5, 2 }, { 3, 1.5 } }, T.tensor { 1.5, 7 }) end,
  isin_invert = function() return T.isin(T.tensor { 1, 2, 3 }, T.tensor { 2 }, { invert = true }) end,
  isposinf = function() return T.isposinf(T.tensor { 1, inf, -inf }) end,
  isneginf = function() return T.tensor({ 1, inf, -inf }):isneginf() end,
  isneginf_int = function() return T.isneginf(T.tensor { 1, -2 }) end,
  signbit = function() return T.signbit(T.tensor({ -0.0, 0, -1, 2 }, { dtype = T.float32 })) end,
  signbit_int = function() return T.tensor({ -3, 0, 3 }):signbit() end,
  fmax = function() return T.fmax(T.tensor { 1, nan, 3, nan }, T.tensor { nan, 2, 1, nan }) end,
  fmin = function() return T.tensor({ 1, nan, 3 }):fmin(T.tensor { nan, 2, 1 }) end,
  fmax_int = function() return T.fmax(T.tensor { 1, 5 }, T.tensor { 3, 2 }) end,
  addr = function()
    return T.addr(T.ones(2, 3), T.tensor { 1, 2 }:float(), T.tensor { 1, 2, 3 }:float(), { beta = 2, alpha = 0.5 })
  end,
  ger = function() return T.ger(T.tensor { 1, 2 }:float(), T.tensor { 3, 4 }:float()) end,
  msort = function() return T.msort(T.tensor { { 3, 1 }, { 1, 2 }, { 2, 0 } }) end,
  rsub = function() return T.rsub(x, 1) end,
  rsub_t = function() return T.rsub(x, T.ones(3), { alpha = 2 }) end,
  scalar_tensor = function() return T.scalar_tensor(3) end,
  as_tensor = function() return T.as_tensor({ 1, 2 }) end,
  hann = function() return T.hann_window(5) end, hann_sym = function() return T.hann_window(5, false) end,
  hann_f64 = function() return T.hann_window(8, { dtype = T.float64 }) end,
  hann_1 = function() return T.hann_window(1) end,
  hamming = function() return T.hamming_window(4) end,
  hamming_ab = function() return T.hamming_window(6, true, { alpha = 0.5, beta = 0.5 }) end,
  blackman = function() return T.blackman_window(7) end, bartlett = function() return T.bartlett_window(5) end,
  bartlett_sym = function() return T.bartlett_window(6, { periodic = false }) end,
  kaiser = function() return T.kaiser_window(5) end,
  kaiser_beta = function() return T.kaiser_window(6, false, { beta = 5 }) end,
  det = function() return T.det(A) end, logdet = function() return T.logdet(A) end,
  logdet_neg = function() return N:logdet() end, slogdet_sign = function() return (T.slogdet(N)) end,
  inverse = function() return A:inverse() end, pinverse = function() return T.pinverse(B) end,
  matrix_power = function() return T.matrix_power(A, 3) end, matrix_exp = function() return T.matrix_exp(A * 0.1) end,
  svd_S = function() local _, S = T.svd(B); return S end,
  svd_recon = function() local U, S, V = B:svd(); return U:matmul(T.diag(S)):matmul(V:t()) end,
  svd_V_shape = function() local _, _, V = T.svd(B, false); return V end,
  qr_R_abs = function() local _, R = T.qr(B:t()); return R:abs() end,
  cholesky_solve = function() return T.cholesky_solve(T.tensor({ { 1 }, { 2 } }, f64), T.linalg.cholesky(A)) end,
  cholesky_solve_upper = function()
    return T.cholesky_solve(T.tensor({ { 1 }, { 2 } }, f64), T.linalg.cholesky(A):t(), true)
  end,
  cholesky_inverse = function() return T.cholesky_inverse(T.linalg.cholesky(A)) end,
  vander = function() return T.vander(T.tensor { 1, 2, 3 }) end,
  vander_inc = function() return T.vander(T.tensor { 1, 2, 3 }:float(), 4, true) end,
  linalg_vander = function() return T.linalg.vander(T.tensor { { 1, 2 }, { 3, 4 } }) end,
}

describe("everyday helpers", function()
  it("match PyTorch 1.13's values, dtypes and shapes", function()
    local n = 0
    for name, want in pairs(cases) do
      n = n + 1
      local f = assert(E[name], "no ember expression for " .. name)
      local got = f()
      if want.list then
        assert.are.equal(#want.list, #got, name .. ": count")
        for i, w in ipairs(want.list) do close(got[i], tensor(w), name .. "[" .. i .. "]") end
      else
        close(got, tensor(want), name)
      end
    end
    assert.are.equal(82, n)
  end)

  it("keep what they share and differentiate as their compositions", function()
    local t = T.ones(3)
    assert.is_true(rawequal(t, T.as_tensor(t)))
    assert.is_true(T.as_tensor(t, { dtype = T.float64 }).dtype == T.float64)
    assert.is_true(x:is_same_size(x:clone()))
    assert.is_false(x:is_same_size(x:t()))
    assert.is_true(x:is_signed())
    assert.is_false(T.ones(2, { dtype = T.uint8 }):is_signed())
    assert.is_true(T.tensor({ 3 }):is_nonzero())
    assert.same({ 1, 2, 3 }, T.broadcast_shapes({ 2, 1 }, { 3 }, { 1, 1, 1 }):totable())
    local g = T.randn(3, 3, f64):requires_grad_()
    local v = T.randn(2, f64):requires_grad_()
    assert.is_true(T.autograd.gradcheck(function(a, b) return T.block_diag(a, b) end, { g, v }))
    assert.is_true(T.autograd.gradcheck(function(a) return T.take_along_dim(a, T.tensor { { 1 }, { 3 }, { 2 } }, 2) end, { g }))
    assert.is_true(T.autograd.gradcheck(function(a) return a:sum_to_size(1, 3) end, { g }))
    local pd = (g:detach():matmul(g:detach():t()) + T.eye(3, f64) * 3):requires_grad_()
    assert.is_true(T.autograd.gradcheck(function(a) return T.logdet(a) end, { pd }))
    local other = T.randn(3, 3, f64)
    assert.is_true(T.autograd.gradcheck(function(a) return T.fmax(a, other) end, { g }))
    local nz = x:new_zeros(2, { requires_grad = true })
    assert.is_true(nz.requires_grad)
  end)

  it("refuse bad input naming the op", function()
    local err = U.err
    err(function() return x:new_zeros(2, { bad = 1 }) end, "new_zeros: unknown option 'bad'")
    err(function() return x:new_full({ 2 }, "a") end, "new_full: expected a number for fill_value, got string")
    err(function() return T.hsplit(x, 2) end, "hsplit: torch.hsplit attempted to split along dimension 2, but the size of the dimension 3 is not divisible by the split_size 2!")
    err(function() return T.dsplit(x, 1) end, "dsplit: torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2 dimensions!")
    err(function() return T.fliplr(T.ones(3)) end, "fliplr: Input must be >= 2-d.")
    err(function() return T.block_diag(T.ones(1, 1, 1)) end, "block_diag: Input tensors must have 2 or fewer dimensions. Input 1 has 3 dimensions")
    err(function() return T.broadcast_shapes({ 2 }, { 3 }) end, "broadcast_shapes: Shape mismatch")
    err(function() return T.broadcast_tensors(T.ones(2), T.ones(3)) end, "broadcast_tensors: Shape mismatch")
    err(function() return T.take_along_dim(x, T.tensor { 1 }, 1) end, "take_along_dim: input and indices should have the same number of dimensions")
    err(function() return T.take_along_dim(x, T.tensor { { 1.5 } }, 1) end, "take_along_dim: dtype of indices should be Long but got float32")
    err(function() return x:sum_to_size(4) end, "sum_to_size: size {4} is not expandable to size")
    err(function() return T.cartesian_prod(x) end, "cartesian_prod: Expect a 1D vector, but got shape")
    err(function() return T.combinations(x) end, "combinations: Expect a 1D vector, but got shape")
    err(function() return T.tril_indices(-1, 2) end, "tril_indices: expected non-negative integers for row and col, got -1")
    err(function() return T.isin(1, 2) end, "isin: expected at least one tensor, got number and number")
    err(function() return T.is_nonzero(T.ones(2)) end, "is_nonzero: Boolean value of Tensor with more than one value is ambiguous")
    err(function() return T.hann_window(-1) end, "hann_window: requires non-negative window_length, got window_length=-1")
    err(function() return T.hann_window(4, { dtype = T.int64 }) end, "hann_window: expects floating point dtypes, got: int64")
    err(function() return T.kaiser_window(4, { alpha = 1 }) end, "kaiser_window: unknown option 'alpha'")
    err(function() return T.fmax(T.ones(2), 3) end, "fmax: expected a tensor for other, got number")
    err(function() return T.rsub(x, "a") end, "rsub: expected a tensor or a number for other, got string")
    err(function() return T.vander(x) end, "vander: x must be a one-dimensional tensor.")
    err(function() return T.det(x) end, "linalg.det")
    err(function() return T.signbit(T.complex(T.ones(1), T.ones(1))) end, "signbit: signbit is not implemented for complex tensors.")
  end)
end)
