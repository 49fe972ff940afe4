-- Complex linear algebra (docs/linalg.md, "Complex input" and "eig"): the
-- matmul family on complex64/complex128, T.linalg.eig/eigvals on real and
-- complex input, the LAPACK functions that take complex input, against
-- PyTorch 1.13 (tests/fixtures/linalg_complex_cases.lua from
-- gen_linalg_complex.py); the invariants of the factors that are not unique
-- (A V = V diag(L), reconstructions), eig's derivative formula, the
-- gradients of every decomposition on complex input (against torch's, by
-- gradcheck, and the phase-dependence errors); lu_solve, lstsq, pinv,
-- matrix_rank, cond and matrix_exp on complex input, values and gradients.
local T = require "ember"
local LA = T.linalg
local cases = dofile("tests/fixtures/linalg_complex_cases.lua")

local function tensor(rec)
  local t
  if rec.re then
    local dt = rec.dtype == "complex64" and T.float32 or T.float64
    t = T.complex(T.tensor(rec.re, { dtype = dt }), T.tensor(rec.im, { dtype = dt }))
  else
    t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  end
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end
local function input(x)
  local t = tensor(x.base)
  if x.perm then t = t:permute(x.perm) end
  return t
end

local TOL = { float32 = 2e-4, float64 = 1e-9, complex64 = 2e-4, complex128 = 1e-9 }

local function close(got, want, what, tol)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  if want:numel() == 0 then return end
  if not want.dtype.is_floating_point and not want:is_complex() then
    assert.is_true(T.equal(want:long(), got:long()), what .. ": values")
    return
  end
  local d = (got - want):abs():max():item()
  local t = tol * math.max(1, want:abs():max():item())
  assert(d <= t, string.format("%s: max difference %g (tolerance %g)", what, d, t))
end

-- eigenvalues in a canonical order (real part, then imaginary part; parts
-- within 1e-6 relative count as equal): the permutation of 1..n, per matrix
local function order_of(l)
  local vals = l:tolist()
  local idx = {}
  for i = 1, #vals do idx[i] = i end
  local scale = 1
  for _, v in ipairs(vals) do scale = math.max(scale, math.abs(v[1]), math.abs(v[2])) end
  table.sort(idx, function(a, b)
    local x, y = vals[a], vals[b]
    if math.abs(x[1] - y[1]) > 1e-6 * scale then return x[1] < y[1] end
    return x[2] < y[2]
  end)
  return idx
end
-- t's last dim (eigenvalues) or last dim as columns (eigenvectors) sorted by
-- the eigenvalues l, matrix by matrix
local function sorted(t, l, columns)
  if l:numel() == 0 then return t end
  local n = l:size(-1)
  local lf, tf = l:reshape(-1, n), t:reshape(columns and { -1, n, n } or { -1, n })
  local parts = {}
  for b = 1, lf:size(1) do
    local ix = T.tensor(order_of(lf[b]))
    parts[b] = tf[b]:index_select(columns and 2 or 1, ix)
  end
  return T.stack(parts):reshape(t.shape)
end

local function herm(a)
  return a:matmul(T.conj(a.mT)) + T.eye(a:size(-1), { dtype = a.dtype })
end

-- name -> the same computation in ember (the generator's FN)
local F = {
  mm = T.mm, bmm = T.bmm, mv = T.mv, dot = T.dot, vdot = T.vdot, outer = T.outer,
  matmul = T.matmul,
  addmm = function(c, a, b) return T.addmm(c, a, b, { beta = 0.5, alpha = 2 }) end,
  eigvals = LA.eigvals,
  eig_L = function(a) return (LA.eig(a)) end,
  eig_absV = function(a) local _, V = LA.eig(a); return V:abs() end,
  solve = LA.solve, inv = LA.inv, det = LA.det,
  slogdet_sign = function(a) return (LA.slogdet(a)) end,
  slogdet_logabs = function(a) local _, l = LA.slogdet(a); return l end,
  lu_factor_LU = function(a) return (LA.lu_factor(a)) end,
  lu_factor_pivots = function(a) local _, p = LA.lu_factor(a); return p end,
  lu_L = function(a) local _, l = LA.lu(a); return l end,
  cholesky_herm = function(a) return LA.cholesky(herm(a)) end,
  cholesky_upper_herm = function(a) return LA.cholesky(herm(a), { upper = true }) end,
  solve_triangular_upper = function(a, b)
    local n = a:size(-1)
    local up = a * T.ones(n, n, { dtype = T.real(a).dtype }):triu() + T.eye(n, { dtype = a.dtype }) * 3
    return LA.solve_triangular(up, b, { upper = true })
  end,
  eigvalsh_herm = function(a) return LA.eigvalsh(herm(a)) end,
  eigvalsh_U = function(a) return LA.eigvalsh(a, { UPLO = "U" }) end,
  eigh_L_herm = function(a) return (LA.eigh(herm(a))) end,
  eigh_absV_herm = function(a) local _, V = LA.eigh(herm(a)); return V:abs() end,
  svdvals = LA.svdvals,
  svd_absU = function(a) return (LA.svd(a, { full_matrices = false })):abs() end,
  svd_absVh = function(a) local _, _, Vh = LA.svd(a, { full_matrices = false }); return Vh:abs() end,
  qr_absQ = function(a) return (LA.qr(a)):abs() end,
  qr_absR = function(a) local _, R = LA.qr(a); return R:abs() end,
  householder_product = LA.householder_product,
  vector_norm = LA.vector_norm,
  vector_norm_inf_dim = function(a) return LA.vector_norm(a, math.huge, { dim = -1 }) end,
  matrix_norm_fro = LA.matrix_norm,
  matrix_norm_nuc = function(a) return LA.matrix_norm(a, "nuc") end,
  matrix_norm_2 = function(a) return LA.matrix_norm(a, 2) end,
  matrix_norm_m2 = function(a) return LA.matrix_norm(a, -2) end,
  matrix_norm_1 = function(a) return LA.matrix_norm(a, 1) end,
  matrix_norm_inf = function(a) return LA.matrix_norm(a, math.huge) end,
  norm = LA.norm,
  vecdot = LA.vecdot,
  multi_dot = function(a, b, c) return LA.multi_dot({ a, b, c }) end,
  lu_solve = function(a, b) local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b) end,
  lu_solve_adjoint = function(a, b)
    local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b, { adjoint = true })
  end,
  lu_solve_right = function(a, b)
    local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b, { left = false })
  end,
  lu_solve_right_adjoint = function(a, b)
    local lu, p = LA.lu_factor(a); return LA.lu_solve(lu, p, b, { left = false, adjoint = true })
  end,
  lstsq_gelsy = function(a, b) return LA.lstsq(a, b, { driver = "gelsy" }).solution end,
  lstsq_gelsd = function(a, b) return LA.lstsq(a, b, { driver = "gelsd" }).solution end,
  lstsq_gelss = function(a, b) return LA.lstsq(a, b, { driver = "gelss" }).solution end,
  lstsq_gels = function(a, b) return LA.lstsq(a, b, { driver = "gels" }).solution end,
  lstsq_residuals = function(a, b) return LA.lstsq(a, b, { driver = "gelsd" }).residuals end,
  lstsq_sv = function(a, b) return LA.lstsq(a, b, { driver = "gelss" }).singular_values end,
  -- A with a third column (1 + 2i) times its first: rank 2
  lstsq_rank_deficient = function(a, b)
    local A = T.cat({ a, a:narrow(-1, 1, 1) * T.complex(T.tensor(1, { dtype = T.float64 }), T.tensor(2, { dtype = T.float64 })):to(a.dtype) }, -1)
    return LA.lstsq(A, b, { driver = "gelsd" }).solution
  end,
  lstsq_rank = function(a, b)
    local A = T.cat({ a, a:narrow(-1, 1, 1) * T.complex(T.tensor(1, { dtype = T.float64 }), T.tensor(2, { dtype = T.float64 })):to(a.dtype) }, -1)
    return LA.lstsq(A, b, { driver = "gelsy" }).rank
  end,
  pinv = LA.pinv,
  pinv_hermitian = function(a) return LA.pinv(herm(a), { hermitian = true }) end,
  matrix_rank = LA.matrix_rank,
  matrix_rank_deficient = function(a) return LA.matrix_rank(a:narrow(-1, 1, 2):matmul(a:narrow(-2, 1, 2))) end,
  matrix_rank_hermitian = function(a) return LA.matrix_rank(herm(a), { hermitian = true }) end,
  cond = LA.cond,
  cond_m2 = function(a) return LA.cond(a, -2) end,
  cond_1 = function(a) return LA.cond(a, 1) end,
  cond_inf = function(a) return LA.cond(a, math.huge) end,
  cond_fro = function(a) return LA.cond(a, "fro") end,
  cond_nuc = function(a) return LA.cond(a, "nuc") end,
  matrix_exp = LA.matrix_exp,
  matrix_exp_large = function(a) return LA.matrix_exp(a * 3) end,
}

local function describe_case(c)
  local parts = {}
  for i, x in ipairs(c.x) do
    parts[i] = x.base.dtype .. "[" .. table.concat(x.base.shape, ",") .. "]" .. (x.perm and "(T)" or "")
  end
  return c.name .. "(" .. table.concat(parts, ", ") .. ")"
end

describe("complex linear algebra matches PyTorch 1.13", function()
  local groups, order = {}, {}
  for _, c in ipairs(cases) do
    if c.x then
      if not groups[c.name] then
        groups[c.name] = {}
        order[#order + 1] = c.name
      end
      table.insert(groups[c.name], c)
    end
  end
  for _, name in ipairs(order) do
    it(("%s (%d cases)"):format(name, #groups[name]), function()
      for _, c in ipairs(groups[name]) do
        local xs = {}
        for i, x in ipairs(c.x) do xs[i] = input(x) end
        local got = F[name]((table.unpack or unpack)(xs))
        local want = tensor(c.out)
        local what = describe_case(c)
        if name == "eig_L" or name == "eigvals" then
          got, want = sorted(got, got), sorted(want, want)
        elseif name == "eig_absV" then
          -- columns matched through the eigenvalues (both sides sorted)
          local Lg = LA.eigvals(xs[1])
          got = sorted(got, Lg, true)
          want = sorted(want, Lg, true)
        end
        close(got, want, what, c.tol or TOL[want.dtype.name] or TOL[c.x[1].base.dtype])
      end
    end)
  end
end)

describe("linalg.eig", function()
  local function residual(A, L, V)
    local Ac = A:is_complex() and A or A:to(V.dtype)
    return (Ac:matmul(V) - V * L:unsqueeze(-2)):abs():max():item()
  end

  it("gives A V = V diag(L) with unit eigenvectors, complex results for real input", function()
    T.manual_seed(7)
    for _, dt in ipairs { T.float32, T.float64, T.complex64, T.complex128 } do
      local A = dt.is_floating_point and T.randn(3, 5, 5, { dtype = dt })
        or T.complex(T.randn(3, 5, 5, { dtype = T.float64 }), T.randn(3, 5, 5, { dtype = T.float64 })):to(dt)
      local L, V = LA.eig(A)
      local cdt = (dt == T.float32 or dt == T.complex64) and T.complex64 or T.complex128
      assert.equal(cdt, L.dtype)
      assert.equal(cdt, V.dtype)
      assert.same({ 3, 5 }, L.shape:totable())
      assert.same({ 3, 5, 5 }, V.shape:totable())
      local tol = cdt == T.complex64 and 1e-4 or 1e-10
      assert.is_true(residual(A, L, V) < tol * 10)
      local norms = V:abs():pow(2):sum(-2):sqrt()
      assert.is_true((norms - 1):abs():max():item() < tol)
      -- eigvals gives the same values
      assert.is_true((LA.eigvals(A) - L):abs():max():item() < tol)
    end
  end)

  it("pairs the eigenvectors of a real matrix's complex eigenvalues as conjugates", function()
    local L, V = LA.eig(T.tensor({ { 0, -1 }, { 1, 0 } }, { dtype = T.float64 }))
    assert.same({ { 0, 1 }, { 0, -1 } }, L:tolist())
    local v = V:tolist()
    assert.near(v[1][1][1], v[1][2][1], 1e-15)
    assert.near(v[1][1][2], -v[1][2][2], 1e-15)
    assert.near(v[2][1][1], v[2][2][1], 1e-15)
    assert.near(v[2][1][2], -v[2][2][2], 1e-15)
  end)

  it("handles empty inputs and non-contiguous ones", function()
    local L, V = LA.eig(T.zeros(2, 0, 0))
    assert.same({ 2, 0 }, L.shape:totable())
    assert.same({ 2, 0, 0 }, V.shape:totable())
    assert.equal(T.complex64, L.dtype)
    L, V = LA.eig(T.zeros(0, 3, 3, { dtype = T.float64 }))
    assert.same({ 0, 3 }, L.shape:totable())
    assert.equal(T.complex128, V.dtype)
    local A = T.randn(4, 4, { dtype = T.float64 })
    local At = A:t()
    L, V = LA.eig(At)
    assert.is_true(residual(At:contiguous(), L, V) < 1e-10)
  end)

  it("raises PyTorch's errors, naming the op and the 1-based batch element", function()
    local bad = T.tensor({ { { 1, 2 }, { 3, 4 } }, { { 1, 0 / 0 }, { 0, 1 } } }, { dtype = T.float64 })
    local ok, err = pcall(LA.eig, bad)
    assert.is_false(ok)
    assert.matches("linalg.eig: (Batch element 2): input tensor should not contain infs or NaNs.", err, 1, true)
    ok, err = pcall(LA.eigvals, T.tensor({ { 1, math.huge }, { 0, 1 } }, { dtype = T.float64 }))
    assert.matches("linalg.eigvals: input tensor should not contain infs or NaNs.", err, 1, true)
    ok, err = pcall(LA.eig, T.ones(2, 3))
    assert.matches("linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices", err, 1, true)
    ok, err = pcall(LA.eigvals, T.ones(3))
    assert.matches("linalg.eigvals: The input tensor A must have at least 2 dimensions.", err, 1, true)
    ok, err = pcall(LA.eig, T.ones(2, 2):long())
    assert.matches("linalg.eig: Expected a floating point or complex tensor as input. Got Long", err, 1, true)
    ok, err = pcall(LA.eig, T.ones(2, 2), { zz = 1 })
    assert.is_false(ok)
    -- with an input that requires grad (eigvals then computes V too) the
    -- errors still name the op
    ok, err = pcall(LA.eigvals, T.tensor({ { 1, math.huge }, { 0, 1 } }, { dtype = T.float64 }):requires_grad_())
    assert.matches("linalg.eigvals: input tensor should not contain infs or NaNs.", err, 1, true)
    ok, err = pcall(LA.eigvals, T.ones(3):requires_grad_())
    assert.matches("linalg.eigvals: The input tensor A must have at least 2 dimensions.", err, 1, true)
    ok, err = pcall(LA.eig, T.ones(3):requires_grad_())
    assert.matches("linalg.eig: The input tensor A must have at least 2 dimensions.", err, 1, true)
  end)

  it("works on the meta device (shapes and dtypes)", function()
    local L, V = LA.eig(T.empty(2, 3, 3, { device = "meta" }))
    assert.same({ 2, 3 }, L.shape:totable())
    assert.same({ 2, 3, 3 }, V.shape:totable())
    assert.equal(T.complex64, V.dtype)
  end)
end)

describe("eig's derivative formula (PyTorch's linalg_eig_backward)", function()
  it("gives torch's gradient from torch's L, V and incoming gradients", function()
    local n = 0
    for _, c in ipairs(cases) do
      if c.name == "eig_backward" then
        n = n + 1
        local A = tensor(c.A)
        local gA = LA._eig_backward(tensor(c.gL), c.gV and tensor(c.gV) or nil, tensor(c.L),
          tensor(c.V), not A:is_complex())
        close(gA, tensor(c.gA), "eig_backward " .. c.A.dtype, 1e-8)
      end
    end
    assert.equal(4, n)
  end)

  it("refuses a loss that depends on the eigenvectors' phases", function()
    local c
    for _, x in ipairs(cases) do if x.name == "eig_backward" and x.gV then c = x break end end
    local V = tensor(c.V)
    local ok, err = pcall(LA._eig_backward, nil, V * T.complex(T.zeros(1, { dtype = T.float64 }),
      T.ones(1, { dtype = T.float64 })), tensor(c.L), V, true)
    assert.is_false(ok)
    assert.matches("depends on this quantity", err, 1, true)
  end)

end)

describe("eig and eigvals autograd", function()
  -- the generator's eig_loss: order- and phase-invariant
  local function eig_loss(Lw, V, w)
    local loss = T.real(Lw * Lw):sum() + T.abs(Lw):sum() * 0.5
    if V then loss = loss + (T.abs(V) * w:unsqueeze(-1)):sum() end
    return loss
  end

  it("gives PyTorch's gradients for real and complex input (eig and eigvals)", function()
    local n = 0
    for _, c in ipairs(cases) do
      if c.name == "eig_autograd" then
        n = n + 1
        local A = tensor(c.A):requires_grad_()
        local Lw, V
        if c.with_v then Lw, V = LA.eig(A) else Lw = LA.eigvals(A) end
        assert.is_true(Lw.requires_grad)
        eig_loss(Lw, V, tensor(c.w)):backward()
        close(A.grad, tensor(c.gA), ("eig_autograd %s %s"):format(c.with_v and "eig" or "eigvals",
          c.A.dtype), c.tol)
      end
    end
    assert.equal(12, n)
  end)

  it("gradchecks in float64 and complex128", function()
    T.manual_seed(19)
    local function cz(...)
      local s = { ... }
      return T.complex(T.randn(s, { dtype = T.float64 }), T.randn(s, { dtype = T.float64 })):requires_grad_()
    end
    local A = T.randn(3, 3, { dtype = T.float64 }):requires_grad_()
    local W = T.randn(3, 3, { dtype = T.float64 })
    assert.is_true(T.autograd.gradcheck(function(a) return LA.eigvals(a) end, { A }))
    assert.is_true(T.autograd.gradcheck(function(a) return LA.eigvals(a) end, { cz(2, 3, 3) }))
    local function inv_loss(a)
      local l, v = LA.eig(a)
      return (T.abs(v) * W):sum() + T.real(l * l):sum()
    end
    assert.is_true(T.autograd.gradcheck(inv_loss, { A }))
    assert.is_true(T.autograd.gradcheck(inv_loss, { cz(3, 3) }))
  end)

  it("refuses through backward a loss that depends on the eigenvectors' phases", function()
    T.manual_seed(5)
    local A = T.complex(T.randn(3, 3, { dtype = T.float64 }), T.randn(3, 3, { dtype = T.float64 }))
    A:requires_grad_()
    local _, V = LA.eig(A)
    local ok, err = pcall(function() T.real(V):sum():backward() end)
    assert.is_false(ok)
    assert.matches("linalg_eig_backward: The eigenvectors in the complex case are specified up to", err, 1, true)
    -- the phase-invariant |V| passes
    local _, V2 = LA.eig(A)
    T.abs(V2):sum():backward()
    assert.is_true(A.grad ~= nil)
    -- no node without grad mode
    T.no_grad(function() assert.is_false(LA.eig(A).requires_grad) end)
  end)
end)

describe("complex det, inv and solve autograd", function()
  it("gives PyTorch's gradients for a complex grad_output", function()
    local n = 0
    for _, c in ipairs(cases) do
      if c.name == "cx_grad" then
        n = n + 1
        local xs = {}
        for k, x in ipairs(c.ins) do xs[k] = tensor(x):requires_grad_() end
        local y = LA[c.op]((table.unpack or unpack)(xs))
        local gs = T.autograd.grad({ y }, xs, { grad_outputs = { tensor(c.g) } })
        for k = 1, #xs do
          close(gs[k], tensor(c.grads[k]), ("%s %s input %d"):format(c.op, c.ins[1].dtype, k), c.tol)
        end
      end
    end
    assert.equal(12, n)
  end)

  it("gradchecks in complex128 (and svdvals, matrix_norm)", function()
    T.manual_seed(23)
    local function cz(...)
      local s = { ... }
      return T.complex(T.randn(s, { dtype = T.float64 }), T.randn(s, { dtype = T.float64 })):requires_grad_()
    end
    assert.is_true(T.autograd.gradcheck(function(a) return LA.det(a) end, { cz(2, 3, 3) }))
    assert.is_true(T.autograd.gradcheck(function(a) return LA.inv(a) end, { cz(3, 3) }))
    assert.is_true(T.autograd.gradcheck(function(a, b) return LA.solve(a, b) end, { cz(3, 3), cz(3, 2) }))
    -- svdvals and the norms on it or on |A| (composites, no fixture)
    assert.is_true(T.autograd.gradcheck(function(a) return LA.svdvals(a) end, { cz(3, 2) }))
    assert.is_true(T.autograd.gradcheck(function(a) return LA.matrix_norm(a, 2) end, { cz(3, 3) }))
    assert.is_true(T.autograd.gradcheck(function(a) return LA.matrix_norm(a) end, { cz(2, 3) }))
  end)
end)

describe("complex decompositions autograd (slogdet, lu, cholesky, solve_triangular, qr, householder_product, svd, eigh)", function()
  -- the generator's FN2 (a random complex grad_output on a unique result)
  local CXF = {
    st_upper = function(a, b) return LA.solve_triangular(a, b, { upper = true }) end,
    st_lower = function(a, b) return LA.solve_triangular(a, b, { upper = false }) end,
    st_lower_right_unit = function(a, b)
      return LA.solve_triangular(a, b, { upper = false, left = false, unitriangular = true })
    end,
    cholesky = function(a) return LA.cholesky(a) end,
    cholesky_upper = function(a) return LA.cholesky(a, { upper = true }) end,
    cholesky_ex = function(a) return (LA.cholesky_ex(a)) end,
    lu_factor = function(a) return (LA.lu_factor(a)) end,
    householder_product = function(a, t) return LA.householder_product(a, t) end,
    lu_solve = F.lu_solve, lu_solve_adjoint = F.lu_solve_adjoint, lu_solve_right = F.lu_solve_right,
    lu_solve_right_adjoint = F.lu_solve_right_adjoint,
    lstsq = function(a, b) return LA.lstsq(a, b).solution end,
    pinv = LA.pinv,
    matrix_exp = LA.matrix_exp,
  }
  -- the generator's LOSS: { outputs of the input, loss of outputs and weights }
  local function pack(...) return { ... } end
  local function abs2(o, w) return (o[1]:abs() * w[1]):sum() + (o[2]:abs() * w[2]):sum() end
  local function svd_loss(o, w) return (o[1]:abs() * w[1]):sum() + (o[2] * w[2]):sum() + (o[3]:abs() * w[3]):sum() end
  local function eigh_loss(o, w) return (o[1] * w[1]):sum() + (o[2]:abs() * w[2]):sum() end
  local function vals_loss(o, w) return (o[1] * w[1]):sum() end
  local LOSS = {
    slogdet = { function(a) return pack(LA.slogdet(a)) end,
      function(o, w) return T.real(o[1] * w[1]):sum() + (o[2] * w[2]):sum() end },
    lu = { function(a) local _, l, u = LA.lu(a); return { l, u } end,
      function(o, w) return T.real(o[1] * w[1]):sum() + T.real(o[2] * w[2]):sum() end },
    qr = { function(a) return pack(LA.qr(a)) end, abs2 },
    qr_complete = { function(a) return pack(LA.qr(a, { mode = "complete" })) end, abs2 },
    svd = { function(a) return pack(LA.svd(a, { full_matrices = false })) end, svd_loss },
    svd_full = { function(a) return pack(LA.svd(a, { full_matrices = true })) end,
      function(o, w) return (o[2] * w[2]):sum() + (o[3]:abs() * w[3]):sum() end },
    svd_recon = { function(a) return pack(LA.svd(a, { full_matrices = false })) end,
      function(o, w)
        return T.real((o[1] * o[2]:unsqueeze(-2)):matmul(o[3]) * w[1]):sum() +
          (o[1]:matmul(o[3]):abs() * w[2]):sum()
      end },
    svdvals = { function(a) return { LA.svdvals(a) } end, vals_loss },
    eigh = { function(a) return pack(LA.eigh(a)) end, eigh_loss },
    eigh_U = { function(a) return pack(LA.eigh(a, { UPLO = "U" })) end, eigh_loss },
    eigh_recon = { function(a) return pack(LA.eigh(a)) end,
      function(o, w) return T.real((o[2] * o[1]:unsqueeze(-2)):matmul(T.conj(o[2].mT)) * w[1]):sum() end },
    eigvalsh = { function(a) return { LA.eigvalsh(a) } end, vals_loss },
  }

  local function by_op(kind)
    local groups, order = {}, {}
    for _, c in ipairs(cases) do
      if c.name == kind then
        if not groups[c.op] then groups[c.op] = {}; order[#order + 1] = c.op end
        table.insert(groups[c.op], c)
      end
    end
    return groups, order
  end
  local function what(c, k)
    local sh = {}
    for i, x in ipairs(c.ins) do sh[i] = "[" .. table.concat(x.shape, ",") .. "]" end
    return ("%s %s(%s) input %d"):format(c.ins[1].dtype, c.op, table.concat(sh, ", "), k)
  end

  local g2, o2 = by_op("cx_grad2")
  it(("give PyTorch's gradients for a complex grad_output (%d ops: %s)"):format(#o2, table.concat(o2, ", ")), function()
    local n = 0
    for _, op in ipairs(o2) do
      for _, c in ipairs(g2[op]) do
        n = n + 1
        local xs = {}
        for k, x in ipairs(c.ins) do xs[k] = tensor(x):requires_grad_() end
        local y = assert(CXF[op], op)((table.unpack or unpack)(xs))
        local gs = T.autograd.grad({ y }, xs, { grad_outputs = { tensor(c.g) } })
        for k = 1, #xs do close(gs[k], tensor(c.grads[k]), what(c, k), c.tol) end
      end
    end
    assert.equal(46, n)
  end)

  local gl, ol = by_op("cx_loss")
  for _, op in ipairs(ol) do
    it(("give PyTorch's gradients of phase-invariant losses: %s (%d cases)"):format(op, #gl[op]), function()
      for _, c in ipairs(gl[op]) do
        local A = tensor(c.ins[1]):requires_grad_()
        local ws = {}
        for k, w in ipairs(c.w) do ws[k] = tensor(w) end
        local fwd, loss = LOSS[op][1], LOSS[op][2]
        local gA = T.autograd.grad({ loss(fwd(A), ws) }, { A })[1]
        close(gA, tensor(c.grads[1]), what(c, 1), c.tol)
      end
    end)
  end
  it("cover every newly differentiable function", function()
    local n = 0
    for _, op in ipairs(ol) do n = n + #gl[op] end
    assert.equal(52, n)
  end)

  it("gradcheck in complex128", function()
    T.manual_seed(29)
    local function cz(...)
      local s = { ... }
      return T.complex(T.randn(s, { dtype = T.float64 }), T.randn(s, { dtype = T.float64 })):requires_grad_()
    end
    local function hermitian(a) return a + T.conj(a.mT) end
    local W = T.randn(4, 4, { dtype = T.float64 })
    local checks = {
      slogdet = { function(a) local s, l = LA.slogdet(a); return T.cat({ T.view_as_real(s):reshape(-1), l:reshape(-1) }) end, { cz(2, 3, 3) } },
      lu_factor = { function(a) return (LA.lu_factor(a)) end, { cz(2, 3, 3) } },
      lu = { function(a) local _, l, u = LA.lu(a); return l:matmul(u) + l * 2 end, { cz(3, 3) } },
      lu_wide = { function(a) local _, l, u = LA.lu(a); return T.cat({ l:reshape(-1), u:reshape(-1) }) end, { cz(2, 3, 4) } },
      lu_tall = { function(a) return (LA.lu_factor(a)) end, { cz(4, 2) } },
      lu_tall_real = { function(a) return (LA.lu_factor(a)) end, { T.randn(5, 3, { dtype = T.float64 }):requires_grad_() } },
      cholesky = { function(a) return LA.cholesky(herm(a)) end, { cz(2, 3, 3) } },
      cholesky_upper = { function(a) return LA.cholesky(herm(a), { upper = true }) end, { cz(3, 3) } },
      solve_triangular = { function(a, b) return LA.solve_triangular(a, b, { upper = true }) end, { cz(3, 3), cz(3, 2) } },
      solve_triangular_right_unit = { function(a, b)
        return LA.solve_triangular(a, b, { upper = false, left = false, unitriangular = true })
      end, { cz(3, 3), cz(2, 3) } },
      qr_tall = { function(a) local q, r = LA.qr(a); return T.cat({ q:reshape(-1), r:reshape(-1) }) end, { cz(4, 3) } },
      qr_wide = { function(a) local q, r = LA.qr(a); return T.cat({ q:reshape(-1), r:reshape(-1) }) end, { cz(3, 5) } },
      householder_product = { function(a, t) return LA.householder_product(a, t) end, { cz(4, 3), cz(2) } },
      svd = { function(a)
        local u, s, vh = LA.svd(a, { full_matrices = false })
        return (u:abs() * 1.5):sum() + (vh:abs() * W:narrow(1, 1, 3):narrow(2, 1, 3)):sum() + s:sum()
      end, { cz(4, 3) } },
      svd_recon = { function(a)
        local u, s, vh = LA.svd(a, { full_matrices = false })
        return (u * s:unsqueeze(-2)):matmul(vh) + T.real(u:matmul(vh)):sum()
      end, { cz(3, 4) } },
      svdvals = { function(a) return LA.svdvals(a) end, { cz(2, 3, 2) } },
      eigh = { function(a)
        local l, v = LA.eigh(hermitian(a))
        return l:sum() + (v:abs() * W:narrow(1, 1, 3):narrow(2, 1, 3)):sum()
      end, { cz(3, 3) } },
      eigh_U = { function(a)
        local l, v = LA.eigh(hermitian(a), "U")
        return T.cat({ l:reshape(-1), v:abs():reshape(-1) })
      end, { cz(2, 3, 3) } },
      eigvalsh = { function(a) return LA.eigvalsh(hermitian(a)) end, { cz(2, 3, 3) } },
    }
    for name, ch in pairs(checks) do
      local ok, err = pcall(T.autograd.gradcheck, ch[1], ch[2])
      assert(ok and err, name .. ": " .. tostring(err))
    end
  end)

  it("refuse losses that depend on the singular vectors' or eigenvectors' phases, as torch", function()
    T.manual_seed(31)
    local A = T.complex(T.randn(3, 3, { dtype = T.float64 }), T.randn(3, 3, { dtype = T.float64 })):requires_grad_()
    local U = LA.svd(A)
    local ok, err = pcall(function() T.real(U):sum():backward() end)
    assert.is_false(ok)
    assert.matches("svd_backward: The singular vectors in the complex case are specified up to " ..
      "multiplication by e^{i phi}. The specified loss function depends on this phase term, making " ..
      "it ill-defined.", err, 1, true)
    local _, _, Vh = LA.svd(A)
    ok, err = pcall(function() T.imag(Vh):sum():backward() end)
    assert.is_false(ok)
    assert.matches("svd_backward: The singular vectors", err, 1, true)
    local H = A + T.conj(A.mT)
    local _, V = LA.eigh(H)
    ok, err = pcall(function() T.real(V):sum():backward() end)
    assert.is_false(ok)
    assert.matches("linalg_eigh_backward: The eigenvectors in the complex case are specified up to " ..
      "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it is " ..
      "ill-defined.", err, 1, true)
    -- the phase-invariant ones pass, and the real outputs keep their dtypes
    local U2, S2, Vh2 = LA.svd(A)
    assert.equal(T.float64, S2.dtype)
    assert.is_true(S2.requires_grad)
    T.abs(U2:matmul(Vh2)):sum():backward()
    assert.equal(T.complex128, A.grad.dtype)
    local w = LA.eigh(H)
    assert.equal(T.float64, w.dtype)
    local s, l = LA.slogdet(A)
    assert.equal(T.complex128, s.dtype)
    assert.equal(T.float64, l.dtype)
  end)
end)

describe("complex matmul family", function()
  local function cx(re, im) return T.complex(T.tensor(re, { dtype = T.float64 }), T.tensor(im, { dtype = T.float64 })) end

  it("multiplies complex numbers exactly on small integers", function()
    local a = cx({ { 1, 2 } }, { { 1, -1 } })      -- [1+i, 2-i]
    local b = cx({ { 3 }, { 0 } }, { { 0 }, { 1 } }) -- [3, i]^T
    -- (1+i)*3 + (2-i)*i = 3+3i + 2i+1 = 4+5i
    assert.same({ { { 4, 5 } } }, T.mm(a, b):tolist())
    assert.same({ 4, 5 }, T.dot(a[1], b:t()[1]):item())
    -- vdot conjugates the first: (1-i)*3 + (2+i)*i = 3-3i + 2i-1 = 2-i
    assert.same({ 2, -1 }, T.vdot(a[1], b:t()[1]):item())
    assert.same({ 2, -1 }, a[1]:vdot(b:t()[1]):item())
  end)

  it("refuses mixed real and complex operands as the real paths refuse mixed dtypes", function()
    local ok, err = pcall(T.mm, T.ones(2, 2, { dtype = T.complex64 }), T.ones(2, 2))
    assert.is_false(ok)
    assert.matches("mm: expected m1 and m2 to have the same dtype, but got: cfloat != float", err, 1, true)
    ok, err = pcall(T.vdot, T.ones(2, 2), T.ones(2))
    assert.matches("vdot: 1D tensors expected, but got 2D and 1D tensors", err, 1, true)
  end)

  it("bmm with an expanded (stride-0) operand and k = 0 give PyTorch's results", function()
    local a = T.complex(T.randn(1, 3, 4, { dtype = T.float64 }), T.randn(1, 3, 4, { dtype = T.float64 }))
    local b = T.complex(T.randn(2, 4, 2, { dtype = T.float64 }), T.randn(2, 4, 2, { dtype = T.float64 }))
    local r = T.bmm(a:expand(2, 3, 4), b)
    for i = 1, 2 do
      assert.is_true((r[i] - T.mm(a[1], b[i])):abs():max():item() < 1e-12)
    end
    local z = T.mm(T.ones(2, 0, { dtype = T.complex64 }), T.ones(0, 3, { dtype = T.complex64 }))
    assert.same({ 2, 3 }, z.shape:totable())
    assert.equal(0, z:abs():max():item())
  end)
end)

describe("complex LAPACK functions", function()
  local function crandn(...)
    local size = { ... }
    return T.complex(T.randn(size, { dtype = T.float64 }), T.randn(size, { dtype = T.float64 }))
  end

  it("reconstruct their input: LU, Cholesky, QR, SVD, eigh", function()
    T.manual_seed(3)
    local A = crandn(2, 4, 4)
    local P, Lm, U = LA.lu(A)
    assert.is_true((P:matmul(Lm):matmul(U) - A):abs():max():item() < 1e-12)
    local H = herm(A)
    local C = LA.cholesky(H)
    assert.is_true((C:matmul(T.conj(C.mT)) - H):abs():max():item() < 1e-12)
    local Up = LA.cholesky(H, { upper = true })
    assert.is_true((T.conj(Up.mT):matmul(Up) - H):abs():max():item() < 1e-12)
    local Q, R = LA.qr(A)
    assert.is_true((Q:matmul(R) - A):abs():max():item() < 1e-12)
    assert.is_true((T.conj(Q.mT):matmul(Q) - T.eye(4, { dtype = T.complex128 })):abs():max():item() < 1e-12)
    local Uu, S, Vh = LA.svd(A)
    assert.equal(T.float64, S.dtype)
    assert.is_true((Uu:matmul(Vh * S:unsqueeze(-1)) - A):abs():max():item() < 1e-12)
    local w, V = LA.eigh(H)
    assert.equal(T.float64, w.dtype)
    assert.is_true((H:matmul(V) - V * w:unsqueeze(-2)):abs():max():item() < 1e-11)
    local wu = LA.eigvalsh(H, { UPLO = "U" })
    assert.is_true((wu - w):abs():max():item() < 1e-11)
  end)

  it("raise the real paths' errors for singular and non-positive-definite input", function()
    local S = T.zeros(2, 2, 2, { dtype = T.complex128 })
    S[1] = T.eye(2, { dtype = T.complex128 })
    local ok, err = pcall(LA.solve, S, T.ones(2, 2, 1, { dtype = T.complex128 }))
    assert.matches("linalg.solve: (Batch element 2): The solver failed because the input matrix is singular.", err, 1, true)
    ok, err = pcall(LA.cholesky, -T.eye(2, { dtype = T.complex64 }))
    assert.matches("linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 1 is not positive-definite).", err, 1, true)
    assert.equal(0, LA.det(T.zeros(2, 2, { dtype = T.complex128 })):abs():item())
    local sign, logabs = LA.slogdet(T.zeros(2, 2, { dtype = T.complex128 }))
    assert.same({ 0, 0 }, sign:item())
    assert.equal(-math.huge, logabs:item())
  end)

end)
