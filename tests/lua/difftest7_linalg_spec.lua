-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests of T.linalg (gradients in float64/complex128, complex input,
-- batched, transposed and empty matrices), each with torch's value or
-- error (or, where torch 1.13 is wrong, the right value and why).
-- Positions are 1-based in ember: those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err
local LA = T.linalg
local f64 = { dtype = T.float64 }

local function maxdiff(a, b) return (a - b):abs():max():item() end

describe("difftest round 7: linalg (torch 1.13)", function()
  it("det's gradient near and at a singular matrix is the cofactor matrix", function()
    -- rank 3 of 4; the cofactors from mpmath (40 digits); torch 1.13 agrees to
    -- 1e-15 (det and its lu_solve share one LU). ember solved A^T for the
    -- gradient but took det from A's LU: 20% off here, and exact zeros where
    -- A's LU had a zero pivot and A^T's did not
    local cases = {
      { A = { { 1.5617637869197916, -2.69540653009439, -2.814250670195268, 0.8311984977898946 },
          { 0.5894027958786441, -1.4955564191043274, -0.3910716886927214, 2.666775833237206 },
          { -2.236550130652896, 0.5140517345529116, 3.025345370311448, 1.7636625430088182 },
          { -1.1149264226712716, 6.329575584098884, 2.7572683804912352, -5.844992922730216 } },
        cof = { { -19.10848102, 14.85762197, -22.08251661, 9.31730245 },
          { -6.16012665, 4.78974927, -7.11888605, 3.00368004 },
          { -10.61440459, 8.25313172, -12.26642586, 5.17558762 },
          { -8.73069413, 6.78847014, -10.08953553, 4.2570897 } } },
      { A = { { 1.585518007784224, -1.8656890452918995, 1.476926102648632, 0.5852013747285504 },
          { 0.4984649991332355, 1.136563387973449, -0.8201761419050353, 0.6598621922361281 },
          { -0.5239010327835284, 0.214366188982821, 0.7186954213306245, -1.142818103115054 },
          { 1.2534839000452322, 0.4653653219784292, 1.0114114742276181, -0.19415688942805112 } },
        cof = { { 1.47953952, -0.82083338, -1.83757657, -1.98784834 },
          { 2.6889815, -1.4918194, -3.3396941, -3.61280476 },
          { 2.62356334, -1.45552608, -3.25844525, -3.52491161 },
          { -1.84422964, 1.02315972, 2.29051887, 2.47783097 } } },
    }
    for _, c in ipairs(cases) do
      local want = T.tensor(c.cof, f64)
      local x = T.tensor(c.A, f64):requires_grad_(true)
      assert.is_true(maxdiff(T.autograd.grad(LA.det(x), x), want) < 1e-7)
      -- complex: conj(det) A^-H, the conjugate of the same cofactors here
      local z = T.tensor(c.A, { dtype = T.complex128 }):requires_grad_(true)
      local gz = T.autograd.grad(T.real(LA.det(z)), z)
      assert.is_true(maxdiff(T.real(gz), want) < 1e-7)
      assert.is_true(T.imag(gz):abs():max():item() < 1e-12)
    end
  end)

  it("qr mode complete of a tall matrix that requires grad: the forward works, the backward raises", function()
    -- torch: Q [4, 4], R [4, 2], requires_grad; R.sum().backward() raises
    -- "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
    local x = T.randn(4, 2, f64):requires_grad_(true)
    local Q, R = LA.qr(x, { mode = "complete" })
    assert.same({ 4, 4 }, Q:size():totable())
    assert.same({ 4, 2 }, R:size():totable())
    assert.is_true(Q.requires_grad)
    assert.is_true(maxdiff(Q:matmul(R), x:detach()) < 1e-12)
    err(function() T.autograd.grad(R:sum(), x) end,
      "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
  end)

  it("lstsq: A requiring grad keeps the driver's solution (rcond), not pinv(A) B", function()
    -- singular values 8.54, 1.03, 2.8e-4: rcond 0.01 cuts the last; torch
    -- gives the same solution and rank 2 with and without requires_grad
    local a = T.tensor({ { 1, 2, 3 }, { 2, 4, 6.001 }, { 1, 0, 1 }, { 0, 1, 1 } }, f64)
    local b = T.tensor({ { 1, 0 }, { 0, 1 }, { 1, 1 }, { 2, 0 } }, f64)
    local want = T.tensor({ { -8.940378795671203e-05, 0.6666896612342471 },
      { 0.07697566679905389, -0.4487412894742558 }, { 0.07689809763047101, 0.21793064546196678 } }, f64)
    local r = LA.lstsq(a, b, { driver = "gelsd", rcond = 0.01 })
    assert.is_true(maxdiff(r.solution, want) < 1e-12)
    local x = a:clone():requires_grad_(true)
    local r2 = LA.lstsq(x, b, { driver = "gelsd", rcond = 0.01 })
    assert.is_true(maxdiff(r2.solution, want) < 1e-12)
    assert.equal(2, r2.rank:item())
    assert.is_true(r2.solution.requires_grad)
    -- the gradient is still pinv(A) B's (as torch's backward)
    local bb = b:clone():requires_grad_(true)
    local gb = T.autograd.grad(LA.lstsq(a, bb, { driver = "gelsd", rcond = 0.01 }).solution:sum(), bb)
    local want_gb = T.autograd.grad(LA.pinv(a):matmul(bb):sum(), bb)
    assert.is_true(maxdiff(gb, want_gb) < 1e-9)
  end)

  it("lstsq of an m x 0 A: the residuals are B's squared column norms", function()
    -- torch gelsd/gelss: residuals [35., 56.] (gels: [0., 0.], which is wrong:
    -- nothing is fitted, so the residual is all of B); gelsy: empty
    local b = T.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, f64)
    for _, d in ipairs { "gelsd", "gelss", "gels" } do
      local r = LA.lstsq(T.zeros(3, 0, f64), b, { driver = d })
      assert.same({ 35, 56 }, r.residuals:tolist())
      assert.same({ 0, 2 }, r.solution:size():totable())
    end
    assert.equal(0, LA.lstsq(T.zeros(3, 0, f64), b, { driver = "gelsy" }).residuals:numel())
    -- batched: torch [[35., 56.], [35., 56.]]
    local r = LA.lstsq(T.zeros(2, 3, 0, f64), b:expand(1, 3, 2), { driver = "gelsd" })
    assert.same({ { 35, 56 }, { 35, 56 } }, r.residuals:tolist())
  end)

  it("cond with ord nuc of a singular matrix is inf, not an SVD error", function()
    -- torch 1.13: nan (its inverse filled with inf goes to the SVD); ember
    -- raised "linalg.svdvals: ... failed to converge ... (error code: -4)".
    -- A singular matrix's condition number is inf (the other ords: torch inf)
    for _, p in ipairs { "nuc", "fro", 1, math.huge } do
      assert.equal(math.huge, LA.cond(T.zeros(3, 3, f64), p):item())
      local A = T.randn(2, 3, 3, { dtype = T.complex128 })
      A[1]:zero_()
      local c = LA.cond(A, p)
      assert.equal(math.huge, c[1]:item())
      assert.is_true(c[2]:item() < math.huge)
    end
  end)

  it("matrix_rank of an empty non-square matrix with hermitian = true is 0", function()
    -- torch: tensor(0) and tensor([0, 0]) (ember: eigvalsh's squareness error)
    assert.equal(0, LA.matrix_rank(T.randn(0, 3, f64), { hermitian = true }):item())
    assert.same({ 0, 0 }, LA.matrix_rank(T.randn(2, 0, 3, f64), { hermitian = true }):tolist())
    err(function() LA.matrix_rank(T.randn(2, 3, f64), { hermitian = true }) end,
      "A must be batches of square matrices, but they are 2 by 3 matrices")
  end)

  it("pinv hermitian = true: torch's gradient when no eigenvalue is cut", function()
    local A = T.tensor({ { 4, 1, 0.5 }, { 1, 3, 0.2 }, { 0.5, 0.2, 2 } }, f64):requires_grad_(true)
    local W = T.tensor({ { 1, 2, 3 }, { 0, -1, 1 }, { 0.5, 0, 2 } }, f64)
    local g = T.autograd.grad((LA.pinv(A, { hermitian = true }) * W):sum(), A)
    -- torch 1.13 (pinv_backward); eigh's composite gave another non-symmetric part
    local want = T.tensor({ { 0.02648433882145093, -0.20518280622709817, -0.3003348379013467 },
      { -0.01730117165687724, 0.18985068528480442, -0.048713321880113535 },
      { -0.013815345181759617, 0.06871269972627458, -0.4214540705959281 } }, f64)
    assert.is_true(maxdiff(g, want) < 1e-12)
  end)

  it("pinv with singular values cut: the derivative of the truncated pseudo-inverse", function()
    -- torch 1.13's pinv_backward ignores the cut (finite differences disagree
    -- with it); ember's gradient is the truncated map's, checked here by
    -- central differences along a random direction
    local a = T.tensor({ { 2, 0.3, 0.1 }, { 0.3, 1, 0.2 }, { 0.1, 0.2, 0.05 } }, f64)
    local w = T.tensor({ { 1, -2, 0.5 }, { 0.3, 1, -1 }, { 2, 0.1, 1 } }, f64)
    local d = T.tensor({ { 0.2, -0.4, 1 }, { 0.7, 0.1, -0.3 }, { -0.5, 0.9, 0.6 } }, f64)
    for _, o in ipairs { { atol = 0.2 }, { rtol = 0.1 } } do
      local x = a:clone():requires_grad_(true)
      local g = T.autograd.grad((LA.pinv(x, o) * w):sum(), x)
      local h = 1e-6
      local fd = ((LA.pinv(a + d * h, o) * w):sum() - (LA.pinv(a - d * h, o) * w):sum()):item() / (2 * h)
      assert.is_true(math.abs((g * d):sum():item() - fd) < 1e-6)
    end
  end)

  it("pinv of an empty matrix that requires grad stays in the graph", function()
    -- torch: pinv(0 x 3) is 3 x 0 with requires_grad; its gradient an empty 0 x 3
    local x = T.randn(0, 3, f64):requires_grad_(true)
    local p = LA.pinv(x)
    assert.same({ 3, 0 }, p:size():totable())
    assert.is_true(p.requires_grad)
    assert.same({ 0, 3 }, T.autograd.grad(p:sum(), x):size():totable())
  end)
end)
