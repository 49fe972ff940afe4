-- T.svd_lowrank and T.pca_lowrank against torch 1.13
-- (tests/fixtures/gen_lowrank.py -> lowrank_cases.lua): on matrices of
-- exact rank r <= q the singular values are torch's and U diag(S) V^H is A
-- (centred for pca); U and V have orthonormal columns; the draws repeat
-- under T.manual_seed; gradcheck; the refusals.
local T = require "ember"
local S = require "specutil"
local CASES = dofile("tests/fixtures/lowrank_cases.lua")

local function build(e)
  local vt = ({ complex64 = "float32", complex128 = "float64" })[e.dtype] or e.dtype
  local t = T.tensor(e.v, { dtype = T[vt] }):reshape(e.shape)
  if e.cplx then t = T.view_as_complex(t) end
  return t
end

local function mH(t) return t:transpose(-2, -1):conj() end

local function check_factors(A, U, Sv, V, tol, what)
  local R = U:matmul(T.diag_embed(Sv):to(U.dtype)):matmul(mH(V))
  local scale = math.max(1, A:abs():max():item())
  assert(((R - A):abs():max():item()) < tol * scale, what .. ": U diag(S) V^H is not A")
  local k = U:size(-1)
  local I = T.eye(k, { dtype = U.dtype })
  -- columns beyond A's rank are any orthonormal completion: check U^H U = I
  assert((mH(U):matmul(U) - I):abs():max():item() < tol * 10, what .. ": U's columns are not orthonormal")
  assert((mH(V):matmul(V) - I):abs():max():item() < tol * 10, what .. ": V's columns are not orthonormal")
end

describe("T.svd_lowrank and T.pca_lowrank", function()
  it("match torch's singular values and factor A on exact low-rank matrices", function()
    assert.are.equal(10, #CASES)
    T.manual_seed(1)
    for i, c in ipairs(CASES) do
      local what = string.format("case %d (%s)", i, c.fn)
      local A = build(c.A)
      local U, Sv, V = T[c.fn](A, c.q)
      assert.are.same(c.U, U.shape:totable(), what .. ": U's shape")
      assert.are.same(c.V, V.shape:totable(), what .. ": V's shape")
      local want = build(c.S)
      local tol = A.dtype == T.float32 and 1e-4 or 1e-10
      local scale = math.max(1, want:abs():max():item())
      -- the first r are determined; the rest are ~0 on both sides
      assert(((Sv - want):abs():max():item()) < tol * scale, what .. ": singular values differ from torch's")
      local target = c.fn == "pca_lowrank" and A - A:mean(-2, { keepdim = true }) or A
      check_factors(target, U, Sv, V, tol, what)
    end
  end)

  it("approximate a full-rank matrix by its top singular triplets", function()
    T.manual_seed(2)
    -- a fast-decaying spectrum: rank-q truncation and the randomized one agree
    local Q1 = T.linalg.qr(T.randn(40, 40, { dtype = T.float64 }))
    local Q2 = T.linalg.qr(T.randn(30, 30, { dtype = T.float64 }))
    local s = T.pow(0.1, T.arange(30, { dtype = T.float64 }))
    local A = Q1:narrow(2, 1, 30):matmul(T.diag(s)):matmul(Q2:t())
    local _, Sv = T.svd_lowrank(A, { q = 5, niter = 4 })
    assert.is_true((Sv - s:narrow(1, 1, 5)):abs():max():item() < 1e-10)
  end)

  it("repeat their draws under T.manual_seed and work batched and on complex input", function()
    local A = T.randn(2, 15, 8, { dtype = T.float64 })
    T.manual_seed(5)
    local U1 = T.svd_lowrank(A, 4)
    T.manual_seed(5)
    local U2 = T.svd_lowrank(A, 4)
    assert.is_true(T.equal(U1, U2))
    local B = T.randn(2, 15, 3, { dtype = T.float64 }):matmul(T.randn(2, 3, 8, { dtype = T.float64 }))
    local U, Sv, V = T.svd_lowrank(B, { q = 4 })
    check_factors(B, U, Sv, V, 1e-10, "batched")
    local Z = T.complex(T.randn(12, 2, { dtype = T.float64 }), T.randn(12, 2, { dtype = T.float64 }))
      :matmul(T.complex(T.randn(2, 6, { dtype = T.float64 }), T.randn(2, 6, { dtype = T.float64 })))
    local Uz, Sz, Vz = T.svd_lowrank(Z, 3)
    check_factors(Z, Uz, Sz, Vz, 1e-10, "complex")
    -- an integer matrix is taken as float32, as torch's get_floating_dtype
    local _, Si = T.pca_lowrank(T.tensor({ { 1, 2 }, { 3, 4 }, { 5, 7 } }))
    assert.are.equal(T.float32, Si.dtype)
  end)

  it("are differentiable (gradcheck of the singular values)", function()
    local A = T.randn(6, 3, { dtype = T.float64 }):requires_grad_()
    assert.is_true(T.autograd.gradcheck(function(a)
      T.manual_seed(7)
      local _, Sv = T.svd_lowrank(a, 3)
      return Sv
    end, { A }))
  end)

  it("refuse bad arguments by name", function()
    local A = T.randn(5, 4)
    S.err(function() T.svd_lowrank(T.randn(3, 4)) end,
      "svd_lowrank: the default q = 6 is greater than min(m, n)=3: give q")
    S.err(function() T.svd_lowrank(A, 5) end, "svd_lowrank: q(=5) must be non-negative integer and not greater than min(m, n)=4")
    S.err(function() T.pca_lowrank(A, { q = -1 }) end, "pca_lowrank: q(=-1) must be non-negative integer")
    S.err(function() T.pca_lowrank(A, 2, true, -1) end, "pca_lowrank: niter(=-1) must be non-negative integer")
    S.err(function() T.pca_lowrank(T.randn(5)) end, "pca_lowrank: A must have at least 2 dimensions, got 1")
    S.err(function() T.pca_lowrank(A, { centre = true }) end, "pca_lowrank: unknown option 'centre'")
    S.err(function() T.pca_lowrank(A, 2, "yes") end, "pca_lowrank")
  end)
end)
