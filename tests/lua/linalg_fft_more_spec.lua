-- T.linalg.ldl_factor / ldl_factor_ex / ldl_solve (LAPACK sytrf/sytrs,
-- hetrf/hetrs), tensorinv and tensorsolve, and T.fft.hfft2 / hfftn / ihfft2
-- / ihfftn against PyTorch 1.13's values (tests/fixtures/
-- gen_linalg_fft_more.py): factors and pivots as torch returns them,
-- solutions, gradients of the composites, the errors.
local T = require "ember"
local LA, FFT = T.linalg, T.fft
local c = dofile("tests/fixtures/linalg_fft_more_cases.lua")

local function tensor(r)
  local dt = T[r.dtype]
  if dt == T.complex128 or dt == T.complex64 then
    local shape = {}
    for i, n in ipairs(r.shape) do shape[i] = n end
    shape[#shape + 1] = 2
    local v = T.tensor(r.v, { dtype = dt == T.complex128 and T.float64 or T.float32 }):reshape(shape)
    return T.view_as_complex(v:contiguous())
  end
  return T.tensor(r.v, { dtype = dt }):reshape(r.shape)
end
local function close(got, want, tol, what)
  assert.same(want.shape, got.shape, what .. ": shape")
  local d = got - want
  local err = (d:is_complex() and d:abs() or d:abs()):max():item()
  assert.is_true(err <= tol, ("%s: off by %g"):format(what, err))
end

describe("T.linalg.ldl_factor and ldl_solve", function()
  it("factor a batch of symmetric indefinite matrices as torch (2 x 2 pivots)", function()
    local A, B = tensor(c.ldl_A), tensor(c.ldl_B)
    local LD, piv = LA.ldl_factor(A)
    close(LD, tensor(c.ldl_LD), 1e-12, "LD")
    assert.are.equal(T.int32, piv.dtype)
    assert.same(c.ldl_piv.v, piv:flatten():tolist())
    assert.same({ 1, 4 }, { LD:stride(2), LD:stride(3) }) -- column-major, as torch
    close(LA.ldl_solve(LD, piv, B), tensor(c.ldl_X), 1e-12, "X")
    close(A:matmul(LA.ldl_solve(LD, piv, B)), B, 1e-12, "A X = B")
    local LD2, piv2, info = LA.ldl_factor_ex(A)
    assert.is_true(T.equal(LD2, LD) and T.equal(piv2, piv))
    assert.same({ 0, 0 }, info:tolist())
    -- only the lower triangle is read; the strict upper of LD is zero
    close(LA.ldl_factor(A:tril()), LD, 0, "lower triangle only")
    assert.are.equal(0, LD:triu(1):abs():max():item())
    -- broadcasting B's batch against LD's
    local X1 = LA.ldl_solve(LD:select(1, 1), piv:select(1, 1), B)
    close(X1:select(1, 1), tensor(c.ldl_X):select(1, 1), 1e-12, "broadcast")
  end)

  it("factor complex symmetric and Hermitian matrices as torch", function()
    local Bz = tensor(c.ldlz_B)
    for _, k in ipairs { "sym", "herm" } do
      local A = tensor(c["ldlz_" .. k .. "_A"])
      local o = { hermitian = k == "herm" }
      local LD, piv = LA.ldl_factor(A, o)
      close(LD, tensor(c["ldlz_" .. k .. "_LD"]), 1e-12, k .. " LD")
      assert.same(c["ldlz_" .. k .. "_piv"].v, piv:tolist())
      close(LA.ldl_solve(LD, piv, Bz, o), tensor(c["ldlz_" .. k .. "_X"]), 1e-12, k .. " X")
    end
  end)

  it("report a singular D through info, or raise naming the op", function()
    local A = tensor(c.ldl_sing_A)
    local LD, piv, info = LA.ldl_factor_ex(A)
    close(LD, tensor(c.ldl_sing_LD), 1e-15, "LD")
    assert.same(c.ldl_sing_piv.v, piv:tolist())
    assert.are.equal(c.ldl_sing_info.v[1], info:item())
    assert.has_error(function() LA.ldl_factor(A) end,
      "linalg.ldl_factor: D[2,2] is exactly zero: the factorization was completed, but D is singular " ..
      "and using it to solve a system would divide by zero (use linalg.ldl_factor_ex to get info instead)")
    local ok, err = pcall(LA.ldl_factor_ex, A:expand(2, 2, 2), { check_errors = true })
    assert.is_false(ok)
    assert.matches("linalg.ldl_factor_ex: (Batch element 1): D[2,2]", tostring(err), 1, true)
    -- empty
    local E, pe, ie = LA.ldl_factor_ex(T.zeros(2, 0, 0, { dtype = T.float64 }))
    assert.same({ 2, 0, 0 }, E.shape)
    assert.same({ 2, 0 }, pe.shape)
    assert.same({ 0, 0 }, ie:tolist())
  end)

  it("check their inputs and options", function()
    local A = tensor(c.ldl_A):select(1, 1)
    local LD, piv = LA.ldl_factor(A)
    assert.has_error(function() LA.ldl_factor(T.ones(2, 3, { dtype = T.float64 })) end,
      "linalg.ldl_factor: A must be batches of square matrices, but they are 2 by 3 matrices")
    assert.has_error(function() LA.ldl_factor(T.ones(2, 2, { dtype = T.int64 })) end,
      "linalg.ldl_factor: Expected a floating point or complex tensor as input. Got Long")
    assert.has_error(function() LA.ldl_solve(LD, piv, T.ones(3, 1, { dtype = T.float64 })) end,
      "linalg.ldl_solve: Incompatible matrix sizes: each A matrix is 4 by 4 but each b matrix is 3 by 1")
    local ok, err = pcall(LA.ldl_solve, LD, piv, T.ones(4, 1))
    assert.is_false(ok)
    assert.matches("linalg.ldl_solve", tostring(err), 1, true)
    ok, err = pcall(LA.ldl_solve, LD, T.tensor({ 1, 2, 9, 1 }, { dtype = T.int32 }), T.ones(4, 1, { dtype = T.float64 }))
    assert.is_false(ok)
    assert.matches("linalg.ldl_solve: pivots[3] = 9 is not a pivot of a 4 x 4 LD", tostring(err), 1, true)
    ok, err = pcall(LA.ldl_solve, LD, T.tensor({ 1, 2, 3, -1 }, { dtype = T.int32 }), T.ones(4, 1, { dtype = T.float64 }))
    assert.is_false(ok)
    assert.matches("pivots[4] = -1", tostring(err), 1, true)
    ok, err = pcall(LA.ldl_factor, A, { upper = true })
    assert.is_false(ok)
    assert.matches("linalg.ldl_factor: unknown option 'upper'", tostring(err), 1, true)
    ok, err = pcall(LA.ldl_factor, A, { hermitian = 1 })
    assert.is_false(ok)
    assert.matches("hermitian", tostring(err), 1, true)
    -- int64 pivots are taken (as torch takes them)
    close(LA.ldl_solve(LD, piv:long(), T.ones(4, 1, { dtype = T.float64 })),
      LA.ldl_solve(LD, piv, T.ones(4, 1, { dtype = T.float64 })), 0, "int64 pivots")
  end)

  it("are not differentiable: the results require grad, backward raises (torch's)", function()
    local A = tensor(c.ldl_A):select(1, 1):clone():requires_grad_()
    local LD, piv = LA.ldl_factor(A)
    assert.is_true(LD.requires_grad)
    assert.is_false(piv.requires_grad)
    local ok, err = pcall(function() LD:sum():backward() end)
    assert.is_false(ok)
    assert.matches("the derivative for 'linalg_ldl_factor_ex' is not implemented", tostring(err), 1, true)
    local B = T.ones(4, 1, { dtype = T.float64 }):requires_grad_()
    local X = LA.ldl_solve(LD:detach(), piv, B)
    assert.is_true(X.requires_grad)
    ok, err = pcall(function() X:sum():backward() end)
    assert.is_false(ok)
    assert.matches("the derivative for 'linalg_ldl_solve' is not implemented", tostring(err), 1, true)
  end)
end)

describe("T.linalg.tensorinv and tensorsolve", function()
  it("match torch, with ind and dims", function()
    close(LA.tensorinv(tensor(c.tinv_A), 1), tensor(c.tinv_1), 1e-12, "tensorinv ind 1")
    close(LA.tensorinv(tensor(c.tinv_A), { ind = 1 }), tensor(c.tinv_1), 1e-12, "tensorinv {ind=1}")
    close(LA.tensorinv(tensor(c.tinv2_A)), tensor(c.tinv2_2), 1e-12, "tensorinv ind 2 (default)")
    close(LA.tensorsolve(tensor(c.tsol_A), tensor(c.tsol_B)), tensor(c.tsol_X), 1e-12, "tensorsolve")
    close(LA.tensorsolve(tensor(c.tsold_A), tensor(c.tsold_B), { 1 }), tensor(c.tsold_X), 1e-12, "dims {1}")
    close(LA.tensorsolve(tensor(c.tsold_A), tensor(c.tsold_B), { dims = { 1 } }), tensor(c.tsold_X), 1e-12,
      "{dims = {1}}")
  end)

  it("differentiate as torch's composites", function()
    local A, B = tensor(c.tsol_A):requires_grad_(), tensor(c.tsol_B):requires_grad_()
    ;(LA.tensorsolve(A, B) * tensor(c.tsol_W)):sum():backward()
    close(A.grad, tensor(c.tsol_gA), 1e-11, "d tensorsolve / dA")
    close(B.grad, tensor(c.tsol_gB), 1e-11, "d tensorsolve / dB")
    local Ai = tensor(c.tinv_A):requires_grad_()
    ;(LA.tensorinv(Ai, 1) * tensor(c.tinv_W)):sum():backward()
    close(Ai.grad, tensor(c.tinv_gA), 1e-10, "d tensorinv / dA")
  end)

  it("raise torch's errors, naming the op", function()
    assert.has_error(function() LA.tensorinv(T.ones(2, 3, 6), 0) end,
      "linalg.tensorinv: Expected a strictly positive integer for 'ind', but got 0")
    assert.has_error(function() LA.tensorinv(T.ones(2, 3, 4), 1) end,
      "linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == " ..
      "prod(self.shape[:ind]), but got 12 != 2")
    assert.has_error(function() LA.tensorsolve(T.ones(2, 3, 4), T.ones(2, 3)) end,
      "linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == " ..
      "prod(self.shape[:other.ndim]), but got 4 != 6")
    local ok, err = pcall(LA.tensorinv, T.zeros(2, 2, 4))
    assert.is_false(ok)
    assert.matches("linalg.inv", tostring(err), 1, true)
    ok, err = pcall(LA.tensorinv, T.eye(4), 1, { zz = 1 })
    assert.is_false(ok)
    assert.matches("linalg.tensorinv: unknown option 'zz'", tostring(err), 1, true)
  end)
end)

describe("T.fft.hfft2, hfftn, ihfft2, ihfftn", function()
  local x = { c = tensor(c.fx_c), r = tensor(c.fx_r) }
  it("match torch over s, dim and norm", function()
    for i, e in ipairs(c.fft) do
      local y = FFT[e.fn](x[e.x], e.opts)
      close(y, tensor(e.y), 1e-11, ("case %d (%s)"):format(i, e.fn))
    end
    -- positional (x, s, dim, norm)
    close(FFT.hfftn(x.c, { 2, 7 }), FFT.hfftn(x.c, { s = { 2, 7 } }), 0, "positional s")
    close(FFT.ihfft2(x.r, nil, { 1, 3 }, "ortho"), FFT.ihfftn(x.r, { dim = { 1, 3 }, norm = "ortho" }), 0,
      "positional dim, norm")
    assert.are.equal(T.float64, FFT.hfft2(x.c).dtype)
    assert.are.equal(T.complex128, FFT.ihfftn(x.r).dtype)
    assert.are.equal(T.complex64, FFT.ihfft2(x.r:float()).dtype)
  end)

  it("differentiate as torch", function()
    local xg = tensor(c.fx_c):requires_grad_()
    ;(FFT.hfftn(xg, { dim = { 1, 3 }, norm = "ortho" }) * tensor(c.fg_W)):sum():backward()
    close(xg.grad, tensor(c.fg_hfftn), 1e-11, "d hfftn")
    local xr = tensor(c.fx_r):requires_grad_()
    T.real(FFT.ihfft2(xr) * tensor(c.fg_Wr)):sum():backward()
    close(xr.grad, tensor(c.fg_ihfft2), 1e-11, "d ihfft2")
  end)

  it("check norm, s, dim and the input kind", function()
    assert.has_error(function() FFT.hfft2(x.c, { norm = "none" }) end)
    local ok, err = pcall(FFT.ihfftn, x.c)
    assert.is_false(ok)
    assert.matches("ihfftn: expects a real input tensor", tostring(err), 1, true)
    ok, err = pcall(FFT.hfftn, x.c, { s = { 2 }, dim = { 1, 2 } })
    assert.is_false(ok)
    assert.matches("hfftn: When given, dim and shape arguments must have the same length", tostring(err), 1, true)
    ok, err = pcall(FFT.ihfft2, x.r, { zz = 1 })
    assert.is_false(ok)
    assert.matches("ihfft2: unknown option 'zz'", tostring(err), 1, true)
    ok, err = pcall(FFT.hfftn, x.c, { dim = {} })
    assert.is_false(ok)
    assert.matches("hfftn: must transform at least one axis", tostring(err), 1, true)
  end)
end)
