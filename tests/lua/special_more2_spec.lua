-- T.special's modified Bessel functions of the second kind (plain and
-- scaled by e^x), airy_ai, spherical_bessel_j0 and the orthogonal
-- polynomials (Chebyshev T U V W and their shifted forms, Hermite H and
-- He, Laguerre L, Legendre P) over grids that cross each algorithm's
-- branches (tests/fixtures/gen_special_more2.py): against mpmath's values
-- tightly, against PyTorch 1.13 in float64 (and float32 within float32's
-- error); torch's edge values; none of them differentiable (torch's).
local T = require "ember"
local S = T.special
local c = dofile("tests/fixtures/special_more2_cases.lua")
local function tensor(r) return T.tensor(r.v, { dtype = T[r.dtype] }):reshape(r.shape) end

-- |got - want| <= rel |want| + abs, element by element (inf and NaN equal)
local function close(got, want, rel, abs, what)
  local g, w = got:double(), want:double()
  assert.is_true(T.equal(g:isnan(), w:isnan()), what .. ": NaN positions")
  local fin = w:isfinite()
  assert.is_true(T.equal(g:masked_select(fin:logical_not()), w:masked_select(fin:logical_not())), what .. ": infinities")
  local d = (g - w):abs():masked_select(fin)
  local lim = (w:abs() * rel + abs):masked_select(fin)
  local bad = d:gt(lim)
  if bad:any():item() then
    local i = bad:nonzero()[1][1]:item()
    error(("%s: element %d differs: %.17g against %.17g"):format(what, i, g:masked_select(fin)[i]:item(),
      w:masked_select(fin)[i]:item()))
  end
end

local K = { "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1" }
local P = { "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
  "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
  "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
  "legendre_polynomial_p" }

describe("T.special's K Bessel, Airy and spherical Bessel functions", function()
  it("K0, K1 and their scaled forms match mpmath and torch", function()
    local x = tensor(c.kx)
    for _, n in ipairs(K) do
      close(S[n](x), tensor(c["exact_" .. n]), 2e-15, 1e-300, n)
      close(S[n](x), tensor(c[n]), 2e-15, 1e-300, n .. " against torch")
      local f = S[n](x:float())
      assert.are.equal(T.float32, f.dtype)
      close(f, tensor(c[n .. "_f32"]), 3e-7, 1e-45, n .. " float32 against torch")
    end
    -- torch's edges: inf at 0, NaN below, 0 (K) at inf, NaN stays
    local e = T.tensor({ 0, -1, 1 / 0, 0 / 0 }, { dtype = T.float64 })
    local k0 = S.modified_bessel_k0(e)
    assert.are.equal(math.huge, k0[1]:item())
    assert.is_true(k0[2]:isnan():item() and k0[4]:isnan():item())
    assert.are.equal(0, k0[3]:item())
    assert.are.equal(0, S.scaled_modified_bessel_k1(e)[3]:item())
    assert.are.equal(T.float32, S.modified_bessel_k1(T.tensor { 1, 2 }).dtype) -- integers promote
  end)

  it("airy_ai matches mpmath (and torch away from its error near -2.1)", function()
    local x = tensor(c.ax)
    close(S.airy_ai(x), tensor(c.exact_airy_ai), 4e-14, 1e-300, "airy_ai")
    -- torch 1.13 drops Cephes's implicit leading coefficient of two
    -- denominators: 2e-5 relative error at -2.1, 1e-13 at -5
    close(S.airy_ai(x), tensor(c.airy_ai), 2e-5, 1e-300, "airy_ai against torch")
  end)

  it("spherical_bessel_j0 matches mpmath and torch", function()
    local x = tensor(c.jx)
    close(S.spherical_bessel_j0(x), tensor(c.exact_spherical_bessel_j0), 2e-16, 1e-300, "spherical_bessel_j0")
    close(S.spherical_bessel_j0(x), tensor(c.spherical_bessel_j0), 2e-16, 1e-300, "spherical_bessel_j0 against torch")
    close(S.spherical_bessel_j0(x:float()), tensor(c.spherical_bessel_j0_f32), 1.2e-7, 1e-45, "float32")
    local e = S.spherical_bessel_j0(T.tensor { 1 / 0, -1 / 0, 0 })
    assert.same({ 0, 0, 1 }, e:tolist())
  end)
end)

describe("T.special's orthogonal polynomials", function()
  local x, n = tensor(c.px), tensor(c.pn)
  for _, name in ipairs(P) do
    it(name .. " matches mpmath and torch over x in [-2, 3], n in [-1, 20]", function()
      local got = S[name](x, n)
      close(got, tensor(c["exact_" .. name]), 3e-14, 1e-14, name)
      close(got, tensor(c[name]), 3e-14, 1e-14, name .. " against torch")
      local f = S[name](x:float(), n:float())
      assert.are.equal(T.float32, f.dtype)
      -- ember computes in double and rounds once (so float32 is the float64
      -- value at the float32 inputs, rounded); torch's float32 recurrence
      -- is off by up to 3e-5 relative here
      close(f, S[name](x:float():double(), n), 6e-8, 1e-45, name .. " float32")
      close(f, tensor(c[name .. "_f32"]), 3e-5, 1e-5, name .. " float32 against torch")
    end)
  end

  it("take n as a number or a tensor, truncate it, and promote as torch", function()
    local xs = T.tensor({ 0.5, 2 }, { dtype = T.float64 })
    assert.same({ -1, 26 }, S.chebyshev_polynomial_t(xs, 3):tolist())
    assert.same({ -1, 26 }, S.chebyshev_polynomial_t(xs, 3.9):tolist())          -- n truncated
    assert.same({ 1, 14 }, S.hermite_polynomial_h(xs, T.tensor({ -0.5, 2.9 }, { dtype = T.float64 })):tolist())
    assert.same({ 2, 7 }, S.chebyshev_polynomial_t(2, T.tensor({ 1, 2 })):tolist()) -- x a number
    -- NaN and inf degrees give 0 (torch's int64 conversion on x86)
    assert.same({ 0, 0 }, S.chebyshev_polynomial_t(xs, T.tensor({ 0 / 0, 1 / 0 }, { dtype = T.float64 })):tolist())
    assert.are.equal(T.float32, S.legendre_polynomial_p(T.tensor { 1, 2 }, 3).dtype)
    assert.are.equal(T.float32, S.legendre_polynomial_p(T.tensor { 1, 2 }, T.tensor(3)).dtype)
    assert.are.equal(T.float32, S.legendre_polynomial_p(T.ones(2), T.tensor(3, { dtype = T.float64 })).dtype)
    assert.are.equal(T.float64, S.legendre_polynomial_p(T.ones(2, { dtype = T.float64 }), T.tensor { 3, 1 }).dtype)
    -- broadcasting, and the recurrence past overflow (NaN, as torch's)
    assert.same({ 2, 3 }, S.laguerre_polynomial_l(T.ones(2, 1), T.tensor { 1, 2, 3 }).shape)
    assert.is_true(S.chebyshev_polynomial_t(T.tensor { 3 }, 100000):isnan():item())
    -- out=
    local o = T.empty(0)
    assert.are.equal(o, S.legendre_polynomial_p(T.tensor { 0.5 }, 2, { out = o }))
    assert.are.equal(-0.125, o:item())
  end)
end)

describe("the new special functions", function()
  it("are not differentiable: their results do not require grad (torch's)", function()
    local x = T.tensor({ 0.5, 1.5 }):requires_grad_()
    for _, n in ipairs(K) do assert.is_false(S[n](x).requires_grad, n) end
    assert.is_false(S.airy_ai(x).requires_grad)
    assert.is_false(S.spherical_bessel_j0(x).requires_grad)
    assert.is_false(S.modified_bessel_i0(x).requires_grad)
    assert.is_false(S.modified_bessel_i1(x).requires_grad)
    for _, n in ipairs(P) do
      assert.is_false(S[n](x, 3).requires_grad, n)
      assert.is_false(S[n](x, x).requires_grad, n)
    end
    -- the plain i0 stays differentiable
    assert.is_true(T.i0(x).requires_grad)
    local i0 = S.modified_bessel_i0(T.tensor({ 0, 1, 2.5 }, { dtype = T.float64 }))
    assert.is_true(T.allclose(i0, T.i0(T.tensor({ 0, 1, 2.5 }, { dtype = T.float64 })), 0, 0))
  end)

  it("name themselves in errors and check their options", function()
    local ok, err = pcall(S.modified_bessel_k0, "x")
    assert.is_false(ok)
    assert.matches("modified_bessel_k0", tostring(err), 1, true)
    ok, err = pcall(S.chebyshev_polynomial_t, T.ones(2), 3, { zz = 1 })
    assert.is_false(ok)
    assert.matches("chebyshev_polynomial_t", tostring(err), 1, true)
    ok, err = pcall(S.modified_bessel_i0, T.ones(2), { zz = 1 })
    assert.is_false(ok)
    assert.matches("modified_bessel_i0", tostring(err), 1, true)
    ok, err = pcall(S.hermite_polynomial_h, T.ones(2), T.ones(3))
    assert.is_false(ok)
    assert.matches("hermite_polynomial_h", tostring(err), 1, true)
  end)
end)
