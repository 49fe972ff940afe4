-- T.linalg on LAPACK (lua/ember/linalg.lua, engine/src/ops/linalg_lapack.c,
-- docs/linalg.md): values and gradients against PyTorch 1.13
-- (tests/fixtures/linalg_cases.lua from gen_linalg.py: batched, transposed,
-- empty, ill-conditioned and singular inputs), reconstructions and
-- invariants of the factors that are not unique, gradcheck in float64,
-- PyTorch's errors with 1-based batch positions, options, T.trace/kron/tensordot.
local T = require "ember"
local LA = T.linalg
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/linalg_cases.lua")

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end

local TOL = { float32 = 2e-4, float64 = 1e-9 }

local function close(got, rec, what, tol)
  local want = tensor(rec)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  if want:numel() == 0 then return end
  if not want.dtype.is_floating_point then
    assert.is_true(T.equal(want:long(), got:detach():long()), what .. ": values")
    return
  end
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  local finite = want:isfinite()
  assert.is_true(T.equal(finite, got:detach():isfinite()), what .. ": finite positions")
  local w, g = want[finite], got:detach()[finite]
  if w:numel() == 0 then return end
  local d = (g - w):abs():max():item()
  local t = (tol or TOL[rec.dtype]) * math.max(1, w:abs():max():item())
  assert(d <= t, string.format("%s: max difference %g (tolerance %g)", what, d, t))
end

local function sym(a) return a + a.mT end
local function spd(a) return a:matmul(a.mT) + T.eye(a:size(-1), { dtype = a.dtype }) end

-- the same computations as gen_linalg.py's FN
local F = {
  solve = function(a, b) return LA.solve(a, b) end,
  solve_left_false = function(a, b) return LA.solve(a, b, { left = false }) end,
  inv = function(a) return LA.inv(a) end,
  det = function(a) return LA.det(a) end,
  slogdet_sign = function(a) return (LA.slogdet(a)) end,
  slogdet_logabs = function(a) local _, l = LA.slogdet(a); return l end,
  cholesky_spd = function(a) return LA.cholesky(spd(a)) end,
  cholesky_upper_spd = function(a) return LA.cholesky(spd(a), { upper = true }) end,
  solve_triangular_upper = function(a, b)
    return LA.solve_triangular(a:triu() + T.eye(a:size(-1), { dtype = a.dtype }) * 3, b, { upper = true })
  end,
  solve_triangular_lower_right_unit = function(a, b)
    return LA.solve_triangular(a, b, { upper = false, left = false, unitriangular = true })
  end,
  lu_factor_LU = function(a) return (LA.lu_factor(a)) end,
  lu_factor_pivots = function(a) local _, p = LA.lu_factor(a); return p end,
  lu_solve = function(a, b) local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b) end,
  lu_solve_adjoint = function(a, b) local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b, { adjoint = true }) end,
  lu_L = function(a) local _, l = LA.lu(a); return l end,
  lu_U = function(a) local _, _, u = LA.lu(a); return u end,
  lu_P = function(a) return (LA.lu(a)) end,
  qr_absQ = function(a) return (LA.qr(a)):abs() end,
  qr_absR = function(a) local _, r = LA.qr(a); return r:abs() end,
  qr_complete_absR = function(a) local _, r = LA.qr(a, { mode = "complete" }); return r:abs() end,
  svdvals = function(a) return LA.svdvals(a) end,
  svd_S = function(a) local _, s = LA.svd(a, { full_matrices = false }); return s end,
  svd_absU = function(a) return (LA.svd(a, { full_matrices = false })):abs() end,
  svd_absVh = function(a) local _, _, v = LA.svd(a, { full_matrices = false }); return v:abs() end,
  eigvalsh_sym = function(a) return LA.eigvalsh(sym(a)) end,
  eigvalsh_U = function(a) return LA.eigvalsh(a, { UPLO = "U" }) end,
  eigh_absV_sym = function(a) local _, v = LA.eigh(sym(a)); return v:abs() end,
  lstsq_gelsy = function(a, b) return LA.lstsq(a, b).solution end,
  lstsq_gelsd = function(a, b) return LA.lstsq(a, b, { driver = "gelsd" }).solution end,
  lstsq_gelsd_residuals = function(a, b) return LA.lstsq(a, b, { driver = "gelsd" }).residuals end,
  lstsq_gelsd_sv = function(a, b) return LA.lstsq(a, b, { driver = "gelsd" }).singular_values end,
  lstsq_gelss_rank = function(a, b) return LA.lstsq(a, b, { driver = "gelss" }).rank end,
  lstsq_gels = function(a, b) return LA.lstsq(a, b, { driver = "gels" }).solution end,
  pinv = function(a) return LA.pinv(a) end,
  pinv_hermitian = function(a) return LA.pinv(sym(a), { hermitian = true }) end,
  pinv_rtol = function(a) return LA.pinv(a, { rtol = 0.5 }) end,
  matrix_rank = function(a) return LA.matrix_rank(a) end,
  matrix_rank_atol = function(a) return LA.matrix_rank(a, { atol = 1.0 }) end,
  matrix_power_3 = function(a) return LA.matrix_power(a, 3) end,
  matrix_power_m2 = function(a) return LA.matrix_power(a, -2) end,
  matrix_power_0 = function(a) return LA.matrix_power(a, 0) end,
  matrix_exp = function(a) return LA.matrix_exp(a) end,
  matrix_exp_big = function(a) return LA.matrix_exp(a * 6) end,
  norm = function(a) return LA.norm(a) end,
  norm_ord1_dim = function(a) return LA.norm(a, 1, { dim = -1 }) end,
  vector_norm_3 = function(a) return LA.vector_norm(a, 3, { dim = -1, keepdim = true }) end,
  vector_norm_inf = function(a) return LA.vector_norm(a, math.huge) end,
  vector_norm_0 = function(a) return LA.vector_norm(a, 0, { dim = -1 }) end,
  matrix_norm_fro = function(a) return LA.matrix_norm(a) end,
  matrix_norm_nuc = function(a) return LA.matrix_norm(a, "nuc") end,
  matrix_norm_2 = function(a) return LA.matrix_norm(a, 2) end,
  matrix_norm_m2 = function(a) return LA.matrix_norm(a, -2) end,
  matrix_norm_1 = function(a) return LA.matrix_norm(a, 1) end,
  matrix_norm_m1 = function(a) return LA.matrix_norm(a, -1) end,
  matrix_norm_inf = function(a) return LA.matrix_norm(a, math.huge) end,
  matrix_norm_minf_keepdim = function(a) return LA.matrix_norm(a, -math.huge, { keepdim = true }) end,
  cond = function(a) return LA.cond(a) end,
  cond_fro = function(a) return LA.cond(a, "fro") end,
  cond_inf = function(a) return LA.cond(a, "inf") end,
  cross = function(a, b) return LA.cross(a, b) end,
  cross_dim1 = function(a, b) return LA.cross(a, b, { dim = 1 }) end,
  multi_dot = function(a, b, c) return LA.multi_dot { a, b, c } end,
  householder_product = function(a, t) return LA.householder_product(a, t) end,
  diagonal = function(a) return LA.diagonal(a, { offset = 1 }) end,
  trace = function(a) return T.trace(a) end,
  kron = function(a, b) return T.kron(a, b) end,
  tensordot_2 = function(a, b) return T.tensordot(a, b, 2) end,
  tensordot_lists = function(a, b) return T.tensordot(a, b, { { 1, 3 }, { 2, 1 } }) end,
}

describe("T.linalg against PyTorch 1.13", function()
  for i, c in ipairs(cases) do
    it(string.format("%s #%d %s", c.name, i, c.x[1].base.dtype), function()
      assert(F[c.name], "no computation for " .. c.name)
      local xs, leaves = {}, {}
      for k, rec in ipairs(c.x) do
        local base = tensor(rec.base)
        if c.g then base:requires_grad_() end
        leaves[k] = base
        xs[k] = rec.perm and base:permute(rec.perm) or base
      end
      local out = F[c.name](unpack(xs))
      close(out, c.out, "output", c.tol)
      if c.g then
        local gs = T.autograd.grad({ out }, leaves, { grad_outputs = { tensor(c.v) }, allow_unused = true })
        for k = 1, #leaves do
          local g = gs[k] or T.zeros_like(leaves[k])
          if c.x[k].perm then g = g:permute(c.x[k].perm) end
          close(g, c.g[k], "gradient " .. k, 1e-7)
        end
      end
    end)
  end
end)

local function d(...) return T.randn({ ... }, { dtype = T.float64 }) end
local function maxdiff(a, b) return (a - b):abs():max():item() end
local function eye(n) return T.eye(n, { dtype = T.float64 }) end

describe("T.linalg factors: reconstructions and invariants", function()
  it("qr: A = QR, Q orthonormal, R upper, in every mode", function()
    for _, shape in ipairs { { 5, 3 }, { 3, 5 }, { 2, 4, 4 } } do
      local A = d(unpack(shape))
      local m, n = A:size(-2), A:size(-1)
      local k = math.min(m, n)
      local Q, R = LA.qr(A)
      assert.same({ m, k }, { Q:size(-2), Q:size(-1) })
      assert.is_true(maxdiff(Q:matmul(R), A) < 1e-12)
      assert.is_true(maxdiff(Q.mT:matmul(Q), eye(k)) < 1e-12)
      assert.is_true(maxdiff(R, R:triu()) == 0)
      local Qc, Rc = LA.qr(A, { mode = "complete" })
      assert.same({ m, m }, { Qc:size(-2), Qc:size(-1) })
      assert.is_true(maxdiff(Qc:matmul(Rc), A) < 1e-12)
      assert.is_true(maxdiff(Qc.mT:matmul(Qc), eye(m)) < 1e-12)
      local Qr, Rr = LA.qr(A, { mode = "r" })
      assert.equal(0, Qr:numel())
      assert.is_true(maxdiff(Rr:abs(), R:abs()) < 1e-12)
    end
  end)
  it("svd: A = U diag(S) Vh, orthonormal factors, full_matrices", function()
    local A = d(2, 5, 3)
    local U, S, Vh = LA.svd(A)
    assert.same({ 2, 5, 5 }, U.shape:totable())
    assert.same({ 2, 3, 3 }, Vh.shape:totable())
    local Ur = U:narrow(-1, 1, 3)
    assert.is_true(maxdiff((Ur * S:unsqueeze(-2)):matmul(Vh), A) < 1e-12)
    assert.is_true(maxdiff(U.mT:matmul(U), eye(5)) < 1e-12)
    local U2, S2, V2 = LA.svd(A, { full_matrices = false })
    assert.same({ 2, 5, 3 }, U2.shape:totable())
    assert.is_true(maxdiff((U2 * S2:unsqueeze(-2)):matmul(V2), A) < 1e-12)
    assert.is_true(S:ge(0):all():item())
  end)
  it("eigh: A V = V diag(L), ascending, orthonormal, UPLO reads one triangle", function()
    local A = sym(d(3, 4, 4))
    local w, V = LA.eigh(A)
    assert.is_true(maxdiff(A:matmul(V), V * w:unsqueeze(-2)) < 1e-12)
    assert.is_true(maxdiff(V.mT:matmul(V), eye(4)) < 1e-12)
    assert.is_true(w:narrow(-1, 2, 3):ge(w:narrow(-1, 1, 3)):all():item())
    -- the lower triangle only (default): garbage above it is not read
    local B = A:tril() + A:triu(1) * 100
    local wl = LA.eigvalsh(B)
    assert.is_true(maxdiff(wl, w) < 1e-12)
    local wu = LA.eigvalsh(A:triu() + A:tril(-1) * 100, { UPLO = "U" })
    assert.is_true(maxdiff(wu, w) < 1e-12)
  end)
  it("lu: A = P L U with unit lower L and 1-based pivots", function()
    local A = d(2, 4, 4)
    local P, Lm, U = LA.lu(A)
    assert.is_true(maxdiff(P:matmul(Lm):matmul(U), A) < 1e-12)
    assert.is_true(maxdiff(Lm:diagonal(0, -2, -1), T.ones(2, 4, { dtype = T.float64 })) == 0)
    local _, piv = LA.lu_factor(A)
    assert.equal(T.int32, piv.dtype)
    assert.is_true(piv:ge(1):all():item() and piv:le(4):all():item())
  end)
  it("cholesky_ex and inv_ex report info per batch element without raising", function()
    local A = T.stack { eye(2), -eye(2), eye(2) }
    local Lm, info = LA.cholesky_ex(A)
    assert.same({ 0, 1, 0 }, info:tolist())
    local _, info2 = LA.inv_ex(T.stack { eye(2), T.zeros(2, 2, { dtype = T.float64 }) })
    assert.same({ 0, 1 }, info2:tolist())
    local _, _, info3 = LA.lu_factor_ex(T.zeros(3, 3, { dtype = T.float64 }))
    assert.equal(1, info3:item())
  end)
  it("batched solve of many small matrices matches one at a time", function()
    local A = d(64, 6, 6) + eye(6) * 6
    local B = d(64, 6, 2)
    local X = LA.solve(A, B)
    for b = 1, 64, 9 do
      assert.is_true(maxdiff(X[b], LA.solve(A[b], B[b])) < 1e-12)
    end
    assert.is_true(maxdiff(A:matmul(X), B) < 1e-10)
  end)
  it("results on the meta device carry PyTorch's shapes", function()
    local A = T.empty(2, 4, 3, { device = "meta", dtype = T.float64 })
    local Q, R = LA.qr(A)
    assert.same({ 2, 4, 3 }, Q.shape:totable())
    assert.same({ 2, 3, 3 }, R.shape:totable())
    local U, S, Vh = LA.svd(A, { full_matrices = false })
    assert.same({ 2, 4, 3 }, U.shape:totable())
    assert.same({ 2, 3 }, S.shape:totable())
    assert.same({ 2, 3, 3 }, Vh.shape:totable())
    local sq = T.empty(2, 3, 3, { device = "meta" })
    assert.same({ 2, 3, 3 }, LA.cholesky(sq).shape:totable())
    assert.same({ 2, 3, 3 }, LA.inv(sq).shape:totable())
    assert.equal("meta", tostring(LA.solve(sq, T.empty(2, 3, { device = "meta" })).device))
    assert.same({ 2 }, LA.det(sq).shape:totable())
    assert.same({ 2, 3, 3 }, LA.pinv(sq).shape:totable())
    local w, V = LA.eigh(sq)
    assert.same({ 2, 3 }, w.shape:totable())
    assert.same({ 2, 3, 3 }, V.shape:totable())
  end)
end)

describe("T.linalg gradcheck (float64)", function()
  local gc = T.autograd.gradcheck
  local function g(...) return T.randn({ ... }, { dtype = T.float64 }):requires_grad_() end
  local function check(name, fn, inputs)
    it(name, function() assert.is_true(gc(fn, inputs)) end)
  end
  T.manual_seed(19)
  check("solve", function(a, b) return LA.solve(a, b) end, { g(2, 3, 3), g(3, 2) })
  check("solve with a vector", function(a, b) return LA.solve(a, b) end, { g(3, 3), g(3) })
  check("solve left=false", function(a, b) return LA.solve(a, b, { left = false }) end, { g(3, 3), g(2, 3) })
  check("inv", function(a) return LA.inv(a) end, { g(2, 3, 3) })
  check("det", function(a) return LA.det(a) end, { g(2, 3, 3) })
  check("det of a singular matrix", function(a) return LA.det(a) end,
    { T.tensor({ { 1, 2, 3 }, { 2, 4, 6 }, { 1, 0, 1 } }, { dtype = T.float64 }):requires_grad_() })
  check("slogdet", function(a) local _, l = LA.slogdet(a); return l end, { g(2, 3, 3) })
  check("cholesky", function(a) return LA.cholesky(spd(a)) end, { g(2, 3, 3) })
  check("cholesky upper", function(a) return LA.cholesky(spd(a), { upper = true }) end, { g(3, 3) })
  check("solve_triangular", function(a, b)
    return LA.solve_triangular(a:triu() + eye(3) * 3, b, { upper = true })
  end, { g(3, 3), g(3, 2) })
  check("solve_triangular right unitriangular", function(a, b)
    return LA.solve_triangular(a, b, { upper = false, left = false, unitriangular = true })
  end, { g(3, 3), g(2, 3) })
  check("qr tall", function(a) local q, r = LA.qr(a); return q:sum() + (r * r):sum() end, { g(4, 3) })
  check("qr wide", function(a) local q, r = LA.qr(a); return q:sum() + (r * r):sum() end, { g(3, 5) })
  check("svd", function(a)
    local u, s, v = LA.svd(a, { full_matrices = false }); return u:abs():sum() + s:sum() + v:abs():sum()
  end, { g(4, 3) })
  check("svd wide", function(a) local u, _, v = LA.svd(a, { full_matrices = false }); return u:matmul(v) end, { g(3, 5) })
  check("svdvals", function(a) return LA.svdvals(a) end, { g(2, 4, 3) })
  check("eigh", function(a) local w, v = LA.eigh(sym(a)); return w:sum() + v:abs():sum() end, { g(3, 3) })
  check("eigvalsh", function(a) return LA.eigvalsh(sym(a)) end, { g(2, 3, 3) })
  check("lu_factor", function(a) return (LA.lu_factor(a)) end, { g(2, 3, 3) })
  check("lu_solve", function(a, b) local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b) end, { g(3, 3), g(3, 2) })
  check("lu_solve adjoint", function(a, b)
    local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b, { adjoint = true })
  end, { g(3, 3), g(3, 2) })
  check("lu_solve left=false", function(a, b)
    local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b, { left = false })
  end, { g(3, 3), g(2, 3) })
  check("pinv", function(a) return LA.pinv(a) end, { g(4, 3) })
  check("lstsq", function(a, b) return LA.lstsq(a, b).solution end, { g(5, 3), g(5, 2) })
  check("matrix_exp", function(a) return LA.matrix_exp(a * 4) end, { g(3, 3) })
  check("matrix_power -3", function(a) return LA.matrix_power(a, -3) end, { g(3, 3) })
  check("householder_product", function(a, t) return LA.householder_product(a, t) end, { g(4, 3), g(2) })
  check("matrix_norm nuc", function(a) return LA.matrix_norm(a, "nuc") end, { g(4, 3) })
  check("matrix_norm 2", function(a) return LA.matrix_norm(a, 2) end, { g(4, 3) })
  check("vector_norm 3", function(a) return LA.vector_norm(a, 3, { dim = 2 }) end, { g(4, 3) })
  check("cond", function(a) return LA.cond(a) end, { g(3, 3) })
  check("cross", function(a, b) return LA.cross(a, b) end, { g(2, 3), g(2, 3) })
  check("kron", function(a, b) return T.kron(a, b) end, { g(2, 3), g(2, 2) })
  check("tensordot", function(a, b) return T.tensordot(a, b, { { 1, 3 }, { 2, 1 } }) end, { g(2, 3, 4), g(4, 2, 5) })
  check("multi_dot", function(a, b, c) return LA.multi_dot { a, b, c } end, { g(3), g(3, 4), g(4, 2) })
end)

describe("T.linalg errors (PyTorch's wording, 1-based batch elements)", function()
  local function raises(pat, fn, ...)
    local ok, err = pcall(fn, ...)
    assert.is_false(ok)
    assert(tostring(err):find(pat, 1, true), "got: " .. tostring(err))
  end
  local sing = T.tensor({ { 1, 2 }, { 2, 4 } }, { dtype = T.float64 })
  local I2 = eye(2)
  it("singular and non-positive-definite input", function()
    raises("linalg.solve: The solver failed because the input matrix is singular.", LA.solve, sing, T.ones(2, { dtype = T.float64 }))
    raises("linalg.solve: (Batch element 2): The solver failed because the input matrix is singular.",
      LA.solve, T.stack { I2, sing, sing }, T.ones(3, 2, 1, { dtype = T.float64 }))
    raises("linalg.inv: (Batch element 2): The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.",
      LA.inv, T.stack { I2, sing })
    raises("linalg.cholesky: (Batch element 3): The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite).",
      LA.cholesky, T.stack { I2, I2, sing })
    raises("linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 1 is not positive-definite).",
      LA.cholesky, -I2)
    raises("linalg.lu_factor: U[2,2] is zero", LA.lu_factor, sing)
    raises("linalg.inv: The diagonal element 2 is zero", function() return LA.matrix_power(sing, -1) end)
  end)
  it("shapes and dtypes", function()
    raises("linalg.solve: A must be batches of square matrices, but they are 2 by 3 matrices", LA.solve, T.ones(2, 3), T.ones(2))
    raises("linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices", LA.inv, T.ones(2, 3))
    raises("linalg.solve: Expected a floating point or complex tensor as input. Got Long", LA.solve, T.ones(2, 2, { dtype = T.int64 }), T.ones(2, 2, { dtype = T.int64 }))
    raises("linalg.cholesky: The input tensor A must have at least 2 dimensions.", LA.cholesky, T.ones(3))
    raises("linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)", LA.solve, T.eye(2), T.ones(3))
    raises("linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices", LA.det, T.ones(2, 3))
    raises("linalg.eigh: A must be batches of square matrices", LA.eigh, T.ones(2, 3))
    raises("linalg.svd: The input tensor A must have at least 2 dimensions.", LA.svd, T.ones(3))
    raises("qr received unrecognized mode 'x'", LA.qr, T.ones(3, 3), { mode = "x" })
    raises("linalg.lstsq: input.size(-2) should match other.size(-2)", LA.lstsq, T.ones(3, 2), T.ones(4, 1))
    raises("linalg.lstsq: parameter `driver`", LA.lstsq, T.ones(3, 2), T.ones(3, 1), { driver = "x" })
    raises("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.",
      LA.solve_triangular, T.eye(2), T.ones(2), { upper = true })
    raises("linalg.solve_triangular: the option 'upper' is required", LA.solve_triangular, T.eye(2), T.ones(2, 1))
    raises("linalg.solve: Expected A and B to have the same dtype", LA.solve, T.eye(2), T.ones(2, 1, { dtype = T.float64 }))
    raises("linalg.cross: inputs dimension -1 must have length 3", LA.cross, T.ones(2), T.ones(2))
    raises("linalg.eigh: Expected UPLO argument to be 'L' or 'U'", LA.eigh, T.eye(2), { UPLO = "X" })
    raises("trace: expected a matrix", T.trace, T.ones(3))
    raises("tensordot: contracted dimensions need to match", T.tensordot, T.ones(2, 3), T.ones(2, 3), 1)
  end)
  it("unknown options are refused", function()
    raises("unknown option 'zz'", LA.solve, T.eye(2), T.ones(2), { zz = 1 })
    raises("unknown option 'out'", LA.inv_ex, T.eye(2), { out = T.eye(2) })
    raises("linalg.inv: takes no options", LA.inv, T.eye(2), {})
    raises("unknown option 'zz'", LA.svd, T.eye(2), { zz = true })
  end)
  it("empty matrices", function()
    assert.same({ 0, 3, 3 }, LA.inv(T.zeros(0, 3, 3)).shape:totable())
    assert.equal(1, LA.det(T.zeros(0, 0)):item())
    assert.same({ 3, 0 }, LA.svdvals(T.zeros(3, 3, 0)).shape:totable())
    local U, S, Vh = LA.svd(T.zeros(3, 0))
    assert.same({ 3, 3 }, U.shape:totable())
    assert.is_true(T.equal(U, T.eye(3)))
    assert.same({ 0 }, S.shape:totable())
    assert.same({ 0, 3 }, LA.pinv(T.zeros(3, 0)).shape:totable())
  end)
end)

describe("T.geqrf", function()
  it("gives torch.geqrf's (QR, tau), feeds householder_product, and refuses a derivative", function()
    local A = T.tensor({ { 2, 1 }, { 1, 3 }, { 0, 1 } }, { dtype = T.float64 })
    local QR, tau = T.geqrf(A)
    -- torch 1.13: torch.geqrf of the same matrix
    assert.is_true(T.allclose(QR, T.tensor({ { -2.23606797749979, -2.23606797749979 },
      { 0.2360679774997897, -2.449489742783178 }, { 0, 0.2134217652833884 } }, { dtype = T.float64 }), 1e-12, 1e-12))
    assert.is_true(T.allclose(tau, T.tensor({ 1.894427190999916, 1.912870929175277 }, { dtype = T.float64 }), 1e-12, 1e-12))
    local Q = T.linalg.householder_product(QR, tau)
    assert.is_true(T.allclose(Q:matmul(QR:triu():narrow(1, 1, 2)), A, 1e-12, 1e-12))
    assert.is_true(T.equal(A:geqrf(), QR))
    -- an empty tau: the identity's first columns, as LAPACK
    assert.is_true(T.equal(T.linalg.householder_product(A, T.empty(0, { dtype = T.float64 })), T.eye(3, 2, { dtype = T.float64 })))
    local Ag = A:clone():requires_grad_()
    local QRg = T.geqrf(Ag)
    assert.has_error(function() QRg:sum():backward() end)
  end)
end)
