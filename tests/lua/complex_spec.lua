-- The complex dtypes (issue 19): arithmetic and printing against torch 1.13
-- (tests/fixtures/gen_complex.py -> complex_cases.lua), promotion, views,
-- item/tolist, and a list of common ops that must give a correct result or
-- refuse with the op and dtype named (none may misbehave silently).
local T = require "ember"
local unpack = table.unpack or unpack
local F = dofile("tests/fixtures/complex_cases.lua")

local VALUE = { complex64 = "float32", complex128 = "float64" }
local function build(e)
  local t = T.tensor(e.v, { dtype = T[VALUE[e.dtype] or e.dtype] }):reshape(e.shape)
  if e.cplx then t = T.view_as_complex(t) end
  return t
end
local function check(got, e, what)
  assert.are.equal("ember." .. e.dtype, tostring(got.dtype), what)
  local g = (got:is_complex() and T.view_as_real(got) or got):contiguous():reshape(-1):double():tolist()
  local tol = (e.dtype == "float32" or e.dtype == "complex64") and 1e-5 or 1e-12
  assert.are.equal(#e.v, #g, what)
  for i = 1, #e.v do
    local ev, gv = e.v[i], g[i]
    if type(ev) == "boolean" then assert.are.equal(ev, gv == 1 or gv == true, what)
    else assert.is_true(math.abs(gv - ev) <= tol * math.max(1, math.abs(ev)), what .. " " .. i) end
  end
end

local a = T.complex(T.tensor { 1.5, -2.0, 3.0 }, T.tensor { 0.5, 1.0, -2.25 })
local b = T.complex(T.tensor({ 0.25, 4.0, -1.0 }, { dtype = T.float64 }),
  T.tensor({ -1.0, 2.0, 0.5 }, { dtype = T.float64 }))
local r = T.tensor { 2.0, -0.5, 1.0 }

describe("complex dtypes", function()
  it("computes as torch", function()
    local E = {
      add = function() return a + b end, sub = function() return a - r end,
      mul = function() return a * b end, div = function() return a / b end,
      neg = function() return -a end, exp = function() return a:exp() end,
      log = function() return b:log() end, sqrt = function() return a:sqrt() end,
      pow = function() return a:pow(b) end, abs = function() return b:abs() end,
      angle = function() return a:angle() end, conj = function() return b:conj() end,
      real = function() return a.real end, imag = function() return b.imag end,
      mul_scalar = function() return a * 2 end, add_int = function() return T.tensor { 1, 2, 3 } + a end,
      sum = function() return a:sum() end, mean = function() return b:mean() end,
      eq = function() return a:eq(a:conj()) end, ne = function() return a:ne(b) end,
      asin = function() return a:asin() end, acos = function() return b:acos() end,
      atan = function() return T.atan(a) end, asinh = function() return b:asinh() end,
      acosh = function() return T.acosh(a) end, atanh = function() return b:atanh() end,
    }
    local function grad_abs(f, z)
      z = z:clone():requires_grad_()
      f(z):abs():sum():backward()
      return z.grad
    end
    for _, f in ipairs { "asin", "acos", "atan", "asinh", "acosh", "atanh" } do
      E[f .. "_grad"] = function() return grad_abs(function(z) return z[f](z) end, b) end
    end
    local f64 = { dtype = T.float64 }
    local m = T.complex(T.tensor({ { 0.5, -1.5, 2 }, { 1, 2, 3 } }, f64), T.tensor({ { 1, 0.25, -3 }, { 4, 5, 6 } }, f64))
    local i2 = T.tensor { { 1, 3 }, { 2, 1 } }
    local z23 = T.zeros(2, 3, { dtype = T.complex128 })
    E.prod = function() return m:prod() end
    E.prod_dim = function() return T.prod(m, 2) end
    E.prod_keep = function() return m:prod({ dim = 1, keepdim = true }) end
    E.prod_c64 = function() return a:prod() end
    E.prod_empty = function() return m:narrow(2, 1, 0):prod(2) end
    E.cumprod = function() return m:cumprod(2) end
    E.cumprod_c64 = function() return T.cumprod(a, 1) end
    E.prod_grad = function() return grad_abs(function(z) return z:prod(2) end, m) end
    E.cumprod_grad = function() return grad_abs(function(z) return z:cumprod(2) end, m) end
    E.gather = function() return m:gather(2, i2) end
    E.gather_grad = function() return grad_abs(function(z) return z:gather(2, i2) end, m) end
    E.take = function() return T.take(m, T.tensor { 6, 1, -1 }) end
    E.scatter = function() return z23:scatter(2, i2, m:narrow(2, 1, 2)) end
    E.scatter_value = function() return m:scatter(2, i2, 2.5) end
    E.scatter_add = function() return m:scatter_add(2, T.tensor { { 1, 1 }, { 2, 2 } }, m:narrow(2, 1, 2)) end
    E.index_add = function() return m:index_add(2, T.tensor { 1, 1, 3 }, m, { alpha = 2 }) end
    E.index_copy = function() return m:index_copy(2, T.tensor { 3, 1, 2 }, m) end
    E.index_fill = function() return m:index_fill(2, T.tensor { 2 }, -1) end
    E.put_acc = function() return m:put(T.tensor { 1, 6 }, m:reshape(-1):narrow(1, 2, 2), true) end
    E.masked_scatter = function() return m:masked_scatter(m:abs():gt(2), m * 10) end
    E.mask_set = function() local t = m:clone(); t[m:abs():gt(2)] = 5; return t end
    E.isreal = function() return T.complex(T.tensor { 1, 2 }:float(), T.tensor { 0, -1 }:float()):isreal() end
    E.index_put_acc = function() return m:clone():index_put_({ T.tensor { 1, 1 } }, m:narrow(1, 1, 1) * 2, true) end
    E.index_put_acc_grad = function()
      return grad_abs(function(z) return (z * 1):index_put_({ T.tensor { 2, 2, 1 } }, z:narrow(1, 1, 1) * 2, true) end, m)
    end
    E.scatter_reduce_mean = function() return m:scatter_reduce(2, i2, m:narrow(2, 1, 2), "mean", { include_self = false }) end
    E.scatter_reduce_sum = function() return T.scatter_reduce(m, 2, i2, m:narrow(2, 1, 2), "sum") end
    E.addcdiv = function() return T.addcdiv(m, m, m + 1, { value = 2 }) end
    E.addcmul = function() return m:addcmul(m, m, { value = 0.5 }) end
    E.dist = function() return T.dist(m, m * 2) end
    E.dist_p1 = function() return m:dist(m * 2, 1) end
    E.polar = function() return T.polar(T.tensor({ 1, 2 }, f64), T.tensor({ 0.5, -1 }, f64)) end
    for k, e in pairs(F.ops) do check(E[k](), e, k) end
  end)

  it("prints as torch 1.13", function()
    for k, c in pairs(F.prints) do
      assert.are.equal(c.s, tostring(build(c.v)), k)
    end
  end)

  it("promotes as torch", function()
    assert.are.equal(T.complex128, T.promote_types(T.complex64, T.float64))
    assert.are.equal(T.complex64, T.promote_types(T.complex64, T.int64))
    assert.are.equal(T.complex128, T.promote_types(T.complex64, T.complex128))
    assert.are.equal(T.complex64, T.promote_types(T.float16, T.complex64))
    assert.are.equal(T.complex64, (T.ones(2) + T.zeros(1, { dtype = T.complex64 })).dtype)
  end)

  it("makes and reads complex tensors", function()
    local z = T.zeros(2, 3, { dtype = T.complex64 })
    assert.are.equal(T.complex64, z.dtype)
    assert.are.equal(8, z:element_size())
    assert.are.same({ 1.5, 0.5 }, a[1]:item())
    assert.are.same({ { 1.5, 0.5 }, { -2, 1 }, { 3, -2.25 } }, a:tolist())
    local v = T.view_as_real(b)
    v[2][2] = 7  -- a view: writes b's imaginary part
    assert.are.equal(7, b.imag[2]:item())
    assert.are.same({ 1, 0 }, T.ones(1, { dtype = T.complex128 })[1]:item())
    local c = a:to(T.complex128)
    assert.are.equal(T.complex128, c.dtype)
    assert.are.equal(1.5, a:float()[1]:item())  -- the real part, as torch's copy_
    assert.is_true(a:is_complex())
    assert.is_false(r:is_complex())
  end)

  it("refuses what it does not support, naming the op and dtype", function()
    local ops = {
      lt = function() return a:lt(a) end, max = function() return a:max() end,
      sort = function() return a:sort() end,
      relu = function() return a:relu() end, floor = function() return a:floor() end,
      clamp = function() return a:clamp(0, 1) end, argmax = function() return a:argmax() end,
      tanh_ok = false,
      scatter_reduce = function() return a:scatter_reduce(1, T.tensor { 1 }, a, "prod") end,
      exp2 = function() return a:exp2() end,
      sign = function() return a:sign() end,
      remainder = function() return a:remainder(2) end,
      searchsorted = function() return T.searchsorted(a, a) end, bucketize = function() return T.bucketize(a, a) end,
      erfinv = function() return T.special.erfinv(a) end, lgamma = function() return a:lgamma() end,
      lstm = function() return T.nn.LSTM(3, 2)(a:reshape(1, 1, 3)) end,
      sdpa = function() local q = a:reshape(1, 1, 3); return T.nn.functional.scaled_dot_product_attention(q, q, q) end,
    }
    for name, f in pairs(ops) do
      if f then
        local ok, e = pcall(f)
        if ok then error(name .. " did not refuse complex64") end
        assert.is_truthy(tostring(e):find("complex", 1, true) or tostring(e):find("Complex", 1, true),
          name .. ": " .. tostring(e))
      end
    end
  end)

  it("runs the index ops' in-place forms and refuses mismatched values and multiplicative reductions", function()
    local f64 = { dtype = T.float64 }
    local m = T.complex(T.tensor({ { 0.5, -1.5, 2 }, { 1, 2, 3 } }, f64), T.tensor({ { 1, 0.25, -3 }, { 4, 5, 6 } }, f64))
    local i2 = T.tensor { { 1, 3 }, { 2, 1 } }
    for name, args in pairs {
      scatter = { 2, i2, m:narrow(2, 1, 2) }, scatter_add = { 2, i2, m:narrow(2, 1, 2) },
      index_add = { 2, T.tensor { 1, 1, 3 }, m }, index_copy = { 2, T.tensor { 3, 1, 2 }, m },
      index_fill = { 2, T.tensor { 2 }, -1 }, put = { T.tensor { 1, 6 }, m:reshape(-1):narrow(1, 2, 2), true },
      masked_scatter = { m:abs():gt(2), m * 10 },
    } do
      local t = m:clone()
      local r = t[name .. "_"](t, unpack(args))
      assert.is_true(rawequal(r, t), name)
      assert.is_true(T.equal(T.view_as_real(t), T.view_as_real(m[name](m, unpack(args)))), name)
    end
    assert.has_error(function() m:scatter(2, i2, T.ones(2, 2, f64)) end,
      "scatter: self is complex128 but the value is float64: both must have the same dtype")
    assert.has_error(function() m:index_add(2, T.tensor { 1 }, T.ones(2, 1)) end,
      "index_add: self is complex128 but the value is float32: both must have the same dtype")
    assert.has_error(function() m:scatter(2, i2, m, { reduce = "multiply" }) end,
      "scatter: reduce 'multiply' is not implemented for complex128 tensors")
    local ok, err = pcall(function() return m:prod(3) end)
    assert.is_false(ok)
    assert.matches("prod: ", tostring(err), 1, true)
    ok, err = pcall(function() return m:gather(2, T.tensor { { 4, 1 }, { 1, 1 } }) end)
    assert.is_false(ok)
    assert.matches("gather", tostring(err), 1, true)
    assert.has_error(function() return T.polar(T.ones(2), T.ones(2, f64)) end,
      "polar: Expected both inputs to be Float or Double tensors but got float32 and float64")
    assert.is_true(T.equal(T.isreal(T.tensor { 1, 2 }), T.tensor { true, true }))
  end)

  it("round-trips through T.save and .npy", function()
    local path = os.tmpname()
    T.save(path, { a = a, b = b })
    local l = T.load(path)
    os.remove(path)
    assert.are.equal(T.complex64, l.a.dtype)
    assert.is_true(T.equal(T.view_as_real(l.a), T.view_as_real(a)))
    assert.is_true(T.equal(T.view_as_real(l.b), T.view_as_real(b)))
    T.save_npy(path, b:t())
    local n = T.load_npy(path)
    os.remove(path)
    assert.are.equal(b.dtype, n.dtype)
    assert.is_true(T.equal(T.view_as_real(n), T.view_as_real(b:t())))
  end)

  it("keeps the views' rules", function()
    assert.has_error(function() T.view_as_complex(T.ones(3, 3)) end)
    assert.has_error(function() T.view_as_complex(T.ones(2, 4):t()) end)
    assert.has_error(function() T.view_as_real(T.ones(2)) end)
    assert.has_error(function() T.complex(T.ones(2), T.ones(2, { dtype = T.float64 })) end)
    assert.has_error(function() return T.ones(2).imag end)
  end)

  it("indexes with integer tensors (reads and writes, every layout) as torch, complex128 too", function()
    for _, dt in ipairs { T.complex64, T.complex128 } do
      local re = T.tensor({ 1, 2, 3, 4 }, { dtype = T.float64 })
      local z = T.complex(re, re * 10):to(dt)
      local function is(got, wre, wim)
        assert.equal(tostring(dt), tostring(got.dtype))
        assert.is_true(T.equal(got.real:double(), T.tensor(wre, { dtype = T.float64 })))
        assert.is_true(T.equal(got.imag:double(), T.tensor(wim, { dtype = T.float64 })))
      end
      is(z[T.tensor { 4, 1, 1 }], { 4, 1, 1 }, { 40, 10, 10 })          -- one element per row
      local x = z:clone()
      x[T.tensor { 1, 3 }] = 0
      is(x, { 0, 2, 0, 4 }, { 0, 20, 0, 40 })
      local A = z:reshape(2, 2)
      is(A[{ T.tensor { 2, 1 }, T.tensor { 1, 2 } }], { 3, 2 }, { 30, 20 }) -- pairs of positions
      -- rows with outer dims and strided blocks: index_select's values
      local B = T.complex(T.randn(3, 4, 5, { dtype = T.float64 }), T.randn(3, 4, 5, { dtype = T.float64 })):to(dt)
      local function same_as(got, want) assert.is_true(T.equal(T.view_as_real(got), T.view_as_real(want))) end
      same_as(B[{ {}, T.tensor { 3, 1 }, {} }], B:index_select(2, T.tensor { 3, 1 }))
      local Bt = B:transpose(2, 3)
      same_as(Bt[{ {}, T.tensor { 5, 2 } }], Bt:index_select(2, T.tensor { 5, 2 }))
      local C = B:clone()
      C[{ {}, T.tensor { 2, 4 } }] = B[{ {}, T.tensor { 1, 3 } }]
      same_as(C:index_select(2, T.tensor { 2, 4 }), B:index_select(2, T.tensor { 1, 3 }))
      same_as(C:index_select(2, T.tensor { 1, 3 }), B:index_select(2, T.tensor { 1, 3 }))
    end
  end)

  it("selects through a mask (masked_select, t[mask]) on every layout, with the gradient, as torch", function()
    for _, dt in ipairs { T.complex64, T.complex128 } do
      local re = T.tensor { { 1, 2 }, { 3, 4 } }:double()
      local z = T.complex(re, re + 4):to(dt)
      local m = T.tensor { { true, false }, { true, true } }
      local want_re, want_im = T.tensor { 1, 3, 4 }:double(), T.tensor { 5, 7, 8 }:double()
      local function check(got, wr, wi)
        assert.equal(tostring(dt), tostring(got.dtype))
        assert.is_true(T.equal(got.real:double(), wr))
        assert.is_true(T.equal(got.imag:double(), wi))
      end
      check(T.masked_select(z, m), want_re, want_im)
      check(z[m], want_re, want_im)
      -- strided (the transposes) and broadcast masks take the iterator's path
      check(T.masked_select(z:t(), m), T.tensor { 1, 2, 4 }:double(), T.tensor { 5, 6, 8 }:double())
      check(T.masked_select(z, T.tensor { true, false }), T.tensor { 1, 3 }:double(), T.tensor { 5, 7 }:double())
      check(T.masked_select(z, T.zeros(2, 2, { dtype = T.bool })), T.zeros(0, { dtype = T.float64 }),
            T.zeros(0, { dtype = T.float64 }))
    end
    -- d sum|z[m]| / dz = z / |z| where selected, 0 elsewhere (torch 1.13)
    local z = T.complex(T.tensor { { 1, 2 }, { 3, 4 } }:double(), T.tensor { { 5, 6 }, { 7, 8 } }:double())
    z:requires_grad_()
    local m = T.tensor { { true, false }, { true, true } }
    T.masked_select(z, m):abs():sum():backward()
    local want = (z:detach() / z:detach():abs():to(T.complex128)) * m:to(T.complex128)
    assert.is_true(T.allclose(T.view_as_real(z.grad), T.view_as_real(want), 1e-12, 1e-12))
  end)

  it("reduces as torch: sum/mean in every form, var/std/norm real, float_power in complex128", function()
    local f64 = { dtype = T.float64 }
    local z = T.complex(T.tensor({ { 1, 2 }, { 3, 4 } }, f64), T.tensor({ { 0.5, -1 }, { 2, 0.25 } }, f64))
    local function cx(re, im) return T.complex(T.tensor(re, f64), T.tensor(im, f64)) end
    local function is(got, want, tol)
      assert.equal(tostring(want.dtype), tostring(got.dtype))
      assert.same(want.shape, got.shape)
      local g, w = got:is_complex() and T.view_as_real(got) or got, want:is_complex() and T.view_as_real(want) or want
      assert.is_true(T.allclose(g, w, tol or 1e-12, tol or 1e-12))
    end
    is(z:sum(), cx(10, 1.75))
    is(z:sum(1), cx({ 4, 6 }, { 2.5, -0.75 }))
    is(z:sum(-1), cx({ 3, 7 }, { -0.5, 2.25 }))
    is(z:sum({ dim = 1 }), cx({ 4, 6 }, { 2.5, -0.75 }))
    is(z:sum({}), cx(10, 1.75))
    is(z:sum { dim = 2, keepdim = true }, cx({ { 3 }, { 7 } }, { { -0.5 }, { 2.25 } }))
    is(z:mean({ 1, 2 }), cx(2.5, 0.4375))
    is(z:to(T.complex64):sum(2, { dtype = T.complex128 }), cx({ 3, 7 }, { -0.5, 2.25 }), 1e-6)
    is(T.tensor({ 1, 2, 3 }):sum({ dtype = T.complex64 }), cx(6, 0):to(T.complex64))
    local o = T.empty(0, { dtype = T.complex128 })
    assert.equal(o, z:sum(1, { out = o }))
    is(o, cx({ 4, 6 }, { 2.5, -0.75 }))
    -- the hidden (re, im) dim is not a dim: one past the last is out of range
    assert.has_error(function() return z:sum(3) end, "sum: dimension 3 out of range (expected to be in range of [-2, 2])")
    assert.has_error(function() return z:mean(3) end)
    assert.has_error(function() return z:sum({ dim = 1, bad = 1 }) end)
    local s0 = cx(1.5, 2.5)
    is(s0:sum(1), s0)
    is(s0:mean(-1), s0)
    -- var, std, norm: torch 1.13's real values and std's gradient
    is(z:var(), T.tensor(3.182291666666667, f64))
    is(z:std(), T.tensor(1.7838978857173038, f64))
    is(z:norm(), T.tensor(5.942432162002357, f64))
    is(T.norm(z, 1), T.tensor(10.967458127184024, f64))
    is(z:var(1), T.tensor({ 3.125, 2.78125 }, f64))
    is(z:std(2, { correction = 0 }), T.tensor({ 0.9013878188659973, 1.0077822185373186 }, f64))
    is(z:norm(2, 1), T.tensor({ 3.7749172176353745, 4.589389937671455 }, f64))
    local w = z:clone():requires_grad_()
    w:std():backward()
    is(w.grad, T.view_as_complex(T.tensor({ -0.28028510152023106, 0.011678545896676294, -0.09342836717341035,
      -0.2686065556235548, 0.09342836717341035, 0.29196364741690733, 0.28028510152023106,
      -0.03503563769002888 }, f64):reshape(2, 2, 2)))
    -- float_power: complex128, not the real parts
    local fp = cx({ 1, 0 }, { 1, 2 }):float_power(2)
    is(fp, cx({ 0, -4 }, { 2, 0 }), 1e-12)
    is(T.float_power(cx({ 1, 0 }, { 1, 2 }):to(T.complex64), 2), cx({ 0, -4 }, { 2, 0 }), 1e-12)
    -- abs_ would write |z| into z: refused as torch refuses it
    local a = z:clone()
    assert.has_error(function() a:abs_() end, "abs_: In-place abs is not supported for complex tensors.")
    assert.is_true(T.equal(T.view_as_real(a), T.view_as_real(z)))
  end)

  it("tests, compares, picks and fills from the parts as torch (isnan, equal, isclose, where, masked_fill, tril)", function()
    local f64 = { dtype = T.float64 }
    local function B(t) return T.tensor(t, { dtype = T.bool }) end
    local function cx(re, im) return T.complex(T.tensor(re, f64), T.tensor(im, f64)) end
    local function same(got, want)
      assert.equal(tostring(want.dtype), tostring(got.dtype))
      assert.is_true(T.equal(T.view_as_real(got), T.view_as_real(want)))
    end
    local z = cx({ 1, 0 / 0, math.huge, 2 }, { 0, 1, 0, 2 })
    assert.is_true(T.equal(T.isnan(z), B { false, true, false, false }))
    assert.is_true(T.equal(z:isinf(), B { false, false, true, false }))
    assert.is_true(T.equal(z:isfinite(), B { true, false, false, true }))
    local a = cx({ 1, 2 }, { 1, 2 })
    assert.is_true(T.equal(a, a:clone()))
    assert.is_false(T.equal(a, a * 2))
    assert.is_true(T.equal(a, a:to(T.complex64)))  -- torch 1.13: True
    assert.is_false(T.equal(z, z))                 -- NaN is unequal
    assert.is_true(T.equal(T.isclose(a, a + 1e-9), B { true, true }))
    assert.is_true(T.allclose(a, a * 1.000001))
    assert.is_false(T.allclose(a, a * 1.1))
    assert.is_true(T.equal(T.isclose(z, z), B { true, false, true, true }))
    assert.is_true(T.equal(T.isclose(z, z, { equal_nan = true }), B { true, true, true, true }))
    assert.has_error(function() return T.isclose(a, a, { tol = 1 }) end,
      "isclose: unknown option 'tol' (expected one of: rtol, atol, equal_nan)")
    local m = B { true, false }
    same(T.where(m, a, 0), cx({ 1, 0 }, { 1, 0 }))
    same(T.where(m, 5, a), cx({ 5, 2 }, { 0, 2 }))
    same(a:where(m, T.zeros(2, f64)), cx({ 1, 0 }, { 1, 0 }))
    same(a:masked_fill(m, 7), cx({ 7, 2 }, { 0, 2 }))
    same(a, cx({ 1, 2 }, { 1, 2 }))                -- the out-of-place form left a alone
    local b = a:clone()
    assert.equal(b, b:masked_fill_(m, 3))
    same(b, cx({ 3, 2 }, { 0, 2 }))
    local Z = T.complex(T.ones(3, 3, f64), T.ones(3, 3, f64))
    same(Z:tril(), T.complex(T.ones(3, 3, f64):tril(), T.ones(3, 3, f64):tril()))
    same(T.triu(Z, 1), T.complex(T.ones(3, 3, f64):triu(1), T.ones(3, 3, f64):triu(1)))
  end)

  it("composes torch's other complex functions (sigmoid ... tan, sgn, cumsum, any, lerp, inner) with their values", function()
    local f64 = { dtype = T.float64 }
    local z = T.complex(T.tensor({ 1.5, -2, 0 }, f64), T.tensor({ 0.5, 1, 0 }, f64))
    local function cx(re, im) return T.complex(T.tensor(re, f64), T.tensor(im, f64)) end
    local function near(got, want)
      assert.equal(tostring(want.dtype), tostring(got.dtype))
      assert.is_true(T.allclose(T.view_as_real(got), T.view_as_real(want), 1e-4, 1e-4, true))
    end
    -- torch 1.13's values (4 digits)
    near(z:sigmoid(), cx({ 0.8296, 0.0785, 0.5 }, { 0.0742, 0.0978, 0 }))
    near(z:log10(), cx({ 0.1990, 0.3495, -math.huge }, { 0.1397, 1.1630, 0 }))
    near(z:log2(), cx({ 0.6610, 1.1610, -math.huge }, { 0.4642, 3.8635, 0 }))
    near(z:sinh(), cx({ 1.8686, -1.9596, 0 }, { 1.1278, 3.1658, 0 }))
    near(z:cosh(), cx({ 2.0644, 2.0327, 1 }, { 1.0208, -3.0519, 0 }))
    near(z:tan(), cx({ 0.2551, 0.2435, 0 }, { 2.1248, 1.1667, 0 }))
    near(T.sgn(z), cx({ 0.9487, -0.8944, 0 }, { 0.3162, 0.4472, 0 }))
    near(z:narrow(1, 1, 2):rsqrt(), cx({ 0.7850, 0.1536 }, { -0.1274, -0.6509 }))
    assert.is_true(T.equal(T.sgn(T.tensor { -2, 0, 3 }), T.tensor { -1, 0, 1 }))
    assert.equal(2, z:count_nonzero():item())
    assert.is_true(z:any():item())
    assert.is_false(z:all():item())
    near(z:cumsum(1), cx({ 1.5, -0.5, -0.5 }, { 0.5, 1.5, 1.5 }))
    near(T.lerp(z, z * 2, 0.5), cx({ 2.25, -3, 0 }, { 0.75, 1.5, 0 }))
    near(T.inner(z, z), T.complex(T.tensor(5.0, f64), T.tensor(-2.5, f64)))
    assert.same({ 2, 4 }, T.inner(T.ones(2, 3), T.ones(4, 3)).shape:totable())
    assert.equal(6, T.inner(T.ones(3), T.ones(3) * 2):item())
    assert.equal("ember.complex64", tostring(T.tensor({ 1, 2 }):cfloat().dtype))
    assert.equal("ember.complex128", tostring(T.tensor({ 1, 2 }):cdouble().dtype))
    assert.equal(3, T.eye(3):trace():item())
    -- differentiable as compositions: d sum|sinh z| (torch: 2.2950+0.1928j, ...)
    local w = z:clone():requires_grad_()
    w:sinh():abs():sum():backward()
    near(w.grad, cx({ 2.2950, -3.6649, 0 }, { 0.1928, 0.1221, 0 }))
    assert.has_error(function() return z:sigmoid({ bad = 1 }) end, "sigmoid: unknown option 'bad' (expected one of: out)")
    assert.has_error(function() return T.inner(z, 3) end, "inner: expected two tensors, got a complex128 tensor and number")
    assert.has_error(function() return z:cumsum(1, { dtype = T.float64 }) end,
      "cumsum: a complex input needs a complex dtype, got ember.float64")
  end)

  it("saves and loads a complex tensor that requires grad", function()
    local p = os.tmpname()
    T.save(p, { w = T.ones(2, { dtype = T.complex64 }):requires_grad_() })
    local back = T.load(p)
    os.remove(p)
    assert.is_true(back.w.requires_grad)
    assert.equal("ember.complex64", tostring(back.w.dtype))
  end)

  it("conjugates in the conjugate transposes (.H, .mH, adjoint), as torch", function()
    local z = T.complex(T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }:float(), T.tensor { { -1, 0, 2 }, { 3, -4, 5 } }:float())
    local want_re = T.tensor { { 1, 4 }, { 2, 5 }, { 3, 6 } }:float()
    local want_im = T.tensor { { 1, -3 }, { 0, 4 }, { -2, -5 } }:float()
    for _, h in ipairs { z.H, z.mH, z:adjoint() } do
      assert.same({ 3, 2 }, h.shape)
      assert.is_true(T.equal(h.real, want_re))
      assert.is_true(T.equal(h.imag, want_im))
    end
    -- batched: the last two dims; A^H A is Hermitian with a real diagonal
    T.manual_seed(3)
    local A = T.complex(T.randn(2, 3, 3, { dtype = T.float64 }), T.randn(2, 3, 3, { dtype = T.float64 }))
    local G = A.mH:matmul(A)
    assert.is_true(T.allclose(T.view_as_real(G), T.view_as_real(G.mH), 1e-12, 1e-12))
    assert.is_true(T.equal(G:diagonal(0, -2, -1).imag:abs():lt(1e-12), T.ones(2, 3, { dtype = T.bool })))
    -- the gradient goes through the conjugate: d/dz sum(re(z^H)) is 1 (torch: 1+0j)
    local w = z:clone():requires_grad_()
    w.mH.real:sum():backward()
    assert.is_true(T.equal(w.grad.real, T.ones(2, 3)))
    assert.is_true(T.equal(w.grad.imag, T.zeros(2, 3)))
    local v = z:clone():requires_grad_()
    v.mH.imag:sum():backward()
    assert.is_true(T.equal(v.grad.imag, -T.ones(2, 3)))
    -- a real tensor's are views, as before
    local r = T.ones(2, 3)
    assert.equal(r:data_ptr(), r.mH:data_ptr())
    assert.equal(r:data_ptr(), r.H:data_ptr())
  end)
end)
