-- torch 1.13's deprecated linear algebra forms that ember keeps for ported
-- scripts: T.cholesky(A, upper), T.triangular_solve(b, A, upper, transpose,
-- unitriangular), T.symeig(A, eigenvectors, upper), as functions and
-- methods, against torch (tests/fixtures/gen_linalg_deprecated.py).
local T = require "ember"
local S = require "specutil"
local F = dofile("tests/fixtures/linalg_deprecated_cases.lua")

local build = S.fixture
local function close(got, rec, what)
  S.close_fixture(got, rec, what, rec.dtype == "float32" and 2e-5 or 1e-12)
end

describe("torch's deprecated linalg forms", function()
  it("T.triangular_solve matches torch for every flag (the triangle read, the unit diagonal)", function()
    for i, c in ipairs(F.triangular_solve) do
      local what = "triangular_solve case " .. i
      local X, C = T.triangular_solve(build(c.b), build(c.A), c.upper, c.transpose, c.unit)
      close(X, c.X, what .. ": solution")
      close(C, c.C, what .. ": cloned_coefficient")
    end
    local c = F.triangular_solve[1]
    local X = build(c.b):triangular_solve(build(c.A))
    close(X, c.X, "as a method")
  end)

  it("T.cholesky gives L or, with upper, L^H", function()
    for i, c in ipairs(F.cholesky) do
      close(T.cholesky(build(c.A), c.upper), c.y, "cholesky case " .. i)
      close(build(c.A):cholesky(c.upper), c.y, "cholesky method case " .. i)
    end
  end)

  it("T.symeig reads the upper triangle by default and gives eigenvectors when asked", function()
    for i, c in ipairs(F.symeig) do
      local A = build(c.A)
      local w, v = T.symeig(A, false, c.upper)
      close(w, c.w, "symeig case " .. i)
      assert.are.equal(0, v:numel())
      local w2, V = A:symeig(true, c.upper)
      close(w2, c.w, "symeig with eigenvectors, case " .. i)
      local Sym = c.upper and (T.triu(A) + T.triu(A, 1):t()) or (T.tril(A) + T.tril(A, -1):t())
      local tol = A.dtype == T.float32 and 1e-4 or 1e-10
      assert.is_true((Sym:matmul(V) - V * w2):abs():max():item() < tol)
    end
  end)

  it("refuse bad arguments by name", function()
    local A = T.eye(3, { dtype = T.float64 })
    S.err(function() T.triangular_solve(T.ones(3, { dtype = T.float64 }), A) end,
      "triangular_solve: Expected b to have at least 2 dimensions, but it has 1 dimensions instead")
    S.err(function() T.triangular_solve(T.ones(3, 1), A) end,
      "triangular_solve: Expected b and A to have the same dtype, but found b of type ember.float32 and A of type ember.float64 instead.")
    S.err(function() T.triangular_solve(T.ones(3, 1, { dtype = T.float64 }), A, true, false, false, true) end,
      "triangular_solve: unexpected argument #6")
    S.err(function() T.cholesky(-A) end, "cholesky: The factorization could not be completed because the input is not positive-definite")
    S.err(function() T.cholesky(A, "U") end, "cholesky")
    S.err(function() T.symeig(A, { eigenvectors = true }) end, "symeig: unknown option 'eigenvectors' (symeig takes no options)")
  end)
end)
