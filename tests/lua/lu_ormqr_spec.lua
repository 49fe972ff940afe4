-- T.lu_unpack, T.orgqr and T.ormqr against torch 1.13
-- (tests/fixtures/gen_lu_ormqr.py -> lu_ormqr_cases.lua), their gradients,
-- and the refusals.
local T = require "ember"
local S = require "specutil"
local F = dofile("tests/fixtures/lu_ormqr_cases.lua")

local build = S.fixture
local function close(got, rec, what)
  -- float32 LAPACK results: 1e-5 of the largest value
  S.close_fixture(got, rec, what, (rec.dtype == "float32" or rec.dtype == "complex64") and 1e-5 or 1e-12)
end

describe("T.lu_unpack", function()
  it("matches torch.lu_unpack", function()
    assert.is_true(#F.unpack >= 60)
    for i, c in ipairs(F.unpack) do
      local what = string.format("lu_unpack case %d", i)
      local P, L, U = T.lu_unpack(build(c.LU), build(c.piv), c.ud, c.up)
      close(P, c.P, what .. ": P")
      close(L, c.L, what .. ": L")
      close(U, c.U, what .. ": U")
    end
  end)

  it("reconstructs A = P L U from linalg.lu_factor, as linalg.lu", function()
    T.manual_seed(5)
    local A = T.randn(3, 7, 5, { dtype = T.float64 })
    local P, L, U = T.lu_unpack(T.linalg.lu_factor(A))
    assert.is_true((P:matmul(L):matmul(U) - A):abs():max():item() < 1e-12)
    local P2, L2, U2 = T.linalg.lu(A)
    assert.is_true(T.equal(P, P2) and T.equal(L, L2) and T.equal(U, U2))
  end)

  it("matches torch's gradient with respect to LU_data", function()
    for i, c in ipairs(F.grads) do
      local LU = build(c.LU):requires_grad_()
      local _, L, U = T.lu_unpack(LU, build(c.piv))
      local g = T.autograd.grad({ L, U }, { LU }, { grad_outputs = { build(c.gL), build(c.gU) } })[1]
      close(g, c.g, "gradient case " .. i)
    end
  end)

  it("refuses bad arguments by name", function()
    local LU, piv = T.linalg.lu_factor(T.randn(4, 4))
    S.err(function() T.lu_unpack(LU, piv:double()) end, "lu_unpack: LU_pivots must be an integer tensor")
    S.err(function() T.lu_unpack(LU, piv:narrow(1, 1, 2)) end,
      "lu_unpack: expected LU_pivots of shape ember.Size([4]) for LU_data of shape ember.Size([4, 4])")
    S.err(function() T.lu_unpack(LU, piv + 10) end, "lu_unpack: pivots must be between 1 and LU_data.size(-2) = 4")
    S.err(function() T.lu_unpack(LU, piv * 0) end, "got 0")
    S.err(function() T.lu_unpack(LU, piv, "yes") end, "lu_unpack")
    S.err(function() T.lu_unpack(LU, piv, { unpack_data = false }) end, "lu_unpack: unknown option 'unpack_data'")
    S.err(function() T.lu_unpack(T.randn(4), piv) end, "lu_unpack: LU_data must have at least 2 dimensions")
  end)
end)

describe("T.orgqr and T.ormqr", function()
  it("match torch.orgqr and torch.ormqr", function()
    assert.is_true(#F.qr >= 70)
    for i, c in ipairs(F.qr) do
      local what = string.format("%s case %d", c.fn, i)
      local y
      if c.fn == "orgqr" then
        y = T.orgqr(build(c.a), build(c.tau))
      else
        y = T.ormqr(build(c.a), build(c.tau), build(c.other), { left = c.left, transpose = c.transpose })
      end
      close(y, c.y, what)
    end
  end)

  it("take positional left and transpose, and work as methods", function()
    T.manual_seed(9)
    local a, tau = T.geqrf(T.randn(5, 3, { dtype = T.float64 }))
    local B = T.randn(2, 5, { dtype = T.float64 })
    local y1 = T.ormqr(a, tau, B, false, true)
    local y2 = a:ormqr(tau, B, { left = false, transpose = true })
    assert.is_true(T.equal(y1, y2))
    -- Q^H Q = I: applying Q then Q^H gives other back
    local C = T.randn(5, 2, { dtype = T.float64 })
    local back = T.ormqr(a, tau, T.ormqr(a, tau, C), { transpose = true })
    assert.is_true((back - C):abs():max():item() < 1e-12)
    assert.is_true(T.equal(a:orgqr(tau), T.linalg.householder_product(a, tau)))
  end)

  it("orgqr with no reflector gives the identity's columns, batched, in the graph", function()
    local A = T.randn(2, 3, 2, { dtype = T.float64 }):requires_grad_()
    local tau = T.zeros(2, 0, { dtype = T.float64 }):requires_grad_()
    local Q = T.orgqr(A, tau)
    assert.same({ 2, 3, 2 }, Q.shape:totable())
    assert.is_true(T.equal(Q:detach(), T.eye(3, 2, { dtype = T.float64 }):expand(2, 3, 2)))
    local gA, gt = table.unpack(T.autograd.grad({ Q:sum() }, { A, tau }))
    assert.same({ 2, 3, 2 }, gA.shape:totable())
    assert.equal(0, gA:abs():sum():item())
    assert.same({ 2, 0 }, gt.shape:totable())
  end)

  it("gradcheck ormqr in float64", function()
    T.manual_seed(13)
    local a, tau = T.geqrf(T.randn(4, 3, { dtype = T.float64 }))
    a:requires_grad_(); tau:requires_grad_()
    local B = T.randn(4, 2, { dtype = T.float64 }):requires_grad_()
    assert.is_true(T.autograd.gradcheck(function(x, t, b) return T.ormqr(x, t, b) end, { a, tau, B }))
  end)

  it("refuses bad arguments by name", function()
    local a, tau = T.geqrf(T.randn(2, 5, 3, { dtype = T.float64 }))
    S.err(function() T.ormqr(a, tau, T.randn(5, 4, { dtype = T.float64 })) end,
      "ormqr: Expected other to have the same number of dimensions as input")
    S.err(function() T.ormqr(a, tau, T.randn(3, 5, 4, { dtype = T.float64 })) end,
      "ormqr: Expected batch dimensions of other and tau to be equal to input.shape[:-2]")
    S.err(function() T.ormqr(a, tau, T.randn(2, 5, 4)) end, "ormqr: Expected input, tau and other to have the same dtype")
    S.err(function() T.ormqr(a, T.randn(2, 4, { dtype = T.float64 }), T.randn(2, 5, 4, { dtype = T.float64 })) end,
      "ormqr: tau.shape[-1] must be less than or equal to input.shape[-1]")
    S.err(function() T.ormqr(a, tau, T.randn(2, 4, 2, { dtype = T.float64 })) end,
      "ormqr: other.shape[-2] must be equal to input.shape[-2]")
    S.err(function() T.ormqr(a, tau, T.randn(2, 4, 3, { dtype = T.float64 }), { left = false }) end,
      "ormqr: other.shape[-1] must be equal to input.shape[-2]")
    S.err(function() T.ormqr(a, tau, T.randn(2, 5, 4, { dtype = T.float64 }), { side = "left" }) end,
      "ormqr: unknown option 'side'")
    S.err(function() T.ormqr(T.randn(5, { dtype = T.float64 }), tau[1], T.randn(5, 1, { dtype = T.float64 })) end,
      "ormqr: input must have at least 2 dimensions")
    S.err(function() T.ormqr(T.ones(5, 3, { dtype = T.int64 }), T.ones(3, { dtype = T.int64 }), T.ones(5, 1, { dtype = T.int64 })) end,
      "ormqr: Expected a floating point or complex tensor as input. Got ember.int64")
    S.err(function() T.orgqr(T.randn(3, 2)) end, "orgqr: expected a tensor for tau, got nil")
    S.err(function() T.orgqr(T.randn(2, 3), T.randn(2)) end, "orgqr: input.shape[-2] must be greater than or equal to input.shape[-1]")
  end)
end)
