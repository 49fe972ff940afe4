-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests, tensor creation (round two): ranges, fills, T.tensor, the random
-- constructors' argument forms. Each case gives torch's value or error.
-- Positions are 1-based in ember (dims, indices): those shifts are not
-- differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f32, f64, c64, c128 = T.float32, T.float64, T.complex64, T.complex128
local function cz(re, im, dt)
  local p = dt == c128 and f64 or f32
  return T.complex(T.tensor(re, { dtype = p }), T.tensor(im, { dtype = p }))
end
local function parts(z) return T.view_as_real(z):reshape(-1):tolist() end

describe("difftest round 8: ranges (torch 1.13)", function()
  it("arange takes 0-d real tensors as its bounds, of their kind", function()
    -- torch.arange(torch.tensor(2), torch.tensor(5)) -> tensor([2, 3, 4]) (int64)
    local r = T.arange(T.tensor(2), T.tensor(5))
    assert.equal(T.int64, r.dtype)
    assert.same({ 2, 3, 4 }, r:tolist())
    -- torch.arange(torch.tensor(0.5), 3) -> float32 [0.5, 1.5, 2.5]
    r = T.arange(T.tensor(0.5, { dtype = f32 }), 3)
    assert.equal(f32, r.dtype)
    assert.same({ 0.5, 1.5, 2.5 }, r:tolist())
    assert.same({ 0, 0.5, 1, 1.5 }, T.arange(0, 2, T.tensor(0.5, { dtype = f64 })):tolist())
    assert.same({ 0, 1, 2 }, T.arange(0, T.tensor(3, { dtype = T.int8 })):tolist())
    err(function() T.arange(T.tensor { 1, 2 }) end, "arange: expected numbers")
  end)

  it("arange's element i is start + step * i rounded once (a fused multiply-add)", function()
    -- torch.arange(-1, 1, 0.2)[5] -> 5.551115123125783e-17 (float32 and float64)
    assert.equal(5.551115123125783e-17, T.arange(-1, 1, 0.2)[6]:item())
    local r = T.arange(-1, 1, 0.2, { dtype = f64 }):tolist()
    assert.equal(5.551115123125783e-17, r[6])
    -- torch: -0.39999999999999997, 0.20000000000000007
    assert.equal(-0.39999999999999997, r[4])
    assert.equal(0.20000000000000007, r[7])
  end)

  it("range: an integer dtype truncates the arguments first; bool is refused", function()
    -- torch.range(0, 1, 0.3, dtype=torch.int64) -> step must be nonzero
    err(function() T.range(0, 1, 0.3, { dtype = T.int64 }) end, "range: step must be nonzero")
    -- torch.range(0, 5, 1.5, dtype=torch.int32) -> [0, 1, 2, 3, 4, 5]
    local r = T.range(0, 5, 1.5, { dtype = T.int32 })
    assert.equal(T.int32, r.dtype)
    assert.same({ 0, 1, 2, 3, 4, 5 }, r:tolist())
    -- torch.range(-1.5, 2.5, dtype=torch.int32) -> [-1, 0, 1, 2]
    assert.same({ -1, 0, 1, 2 }, T.range(-1.5, 2.5, { dtype = T.int32 }):tolist())
    -- torch.range(0, -2, -0.5, dtype=torch.int64) -> step must be nonzero
    err(function() T.range(0, -2, -0.5, { dtype = T.int64 }) end, "range: step must be nonzero")
    -- torch: "range_cpu" not implemented for 'Bool'
    err(function() T.range(0, 3, { dtype = T.bool }) end, "range: not implemented for 'bool'")
    -- torch: upper bound and lower bound inconsistent with step sign
    err(function() T.range(4, 1) end, "range: upper bound and lower bound inconsistent with step sign")
    -- 0-d tensors stand for their values: torch.range(tensor(1), tensor(3)) -> [1., 2., 3.]
    r = T.range(T.tensor(1), T.tensor(3))
    assert.equal(f32, r.dtype)
    assert.same({ 1, 2, 3 }, r:tolist())
  end)
end)

describe("difftest round 8: fills with a complex value (torch 1.13)", function()
  it("full and full_like take a complex 0-d tensor: a complex dtype by default", function()
    -- torch.full((2,), 1+2j) -> complex64 [1+2j, 1+2j]
    local r = T.full({ 2 }, cz(1, 2))
    assert.equal(c64, r.dtype)
    assert.same({ 1, 2, 1, 2 }, parts(r))
    r = T.full({ 2 }, cz(1, 2), { dtype = c128 })
    assert.equal(c128, r.dtype)
    assert.same({ 1, 2, 1, 2 }, parts(r))
    r = T.full_like(T.zeros(2, { dtype = c64 }), cz(1.5, -2))
    assert.same({ 1.5, -2, 1.5, -2 }, parts(r))
    -- an imaginary part of 0 goes into a real dtype: torch.full((2,), 1+0j, dtype=float32) -> [1., 1.]
    assert.same({ 1, 1 }, T.full({ 2 }, cz(1, 0), { dtype = f32 }):tolist())
  end)

  it("a complex value with an imaginary part is refused for a real dtype", function()
    -- torch: value cannot be converted to type float without overflow (full,
    -- full_like, fill_, masked_fill); index_fill: Converting complex Scalar
    -- to non-complex type is not supported
    local v = cz(1, 2)
    err(function() T.full({ 2 }, v, { dtype = f32 }) end, "full: value cannot be converted")
    err(function() T.full_like(T.zeros(2), v) end, "full_like: value cannot be converted")
    err(function() T.zeros(2):fill_(v) end, "fill_: value cannot be converted")
    err(function() T.zeros(2):masked_fill(T.tensor { true, false }, v) end, "value cannot be converted")
    err(function() T.zeros(2):index_fill(1, T.tensor { 1 }, v) end, "value cannot be converted")
    -- complex destinations still take it
    assert.same({ 1, 2, 0, 0 }, parts(T.zeros(2, { dtype = c64 }):masked_fill(T.tensor { true, false }, v)))
  end)
end)

describe("difftest round 8: T.tensor (torch 1.13)", function()
  it("T.tensor(t) is a new leaf, outside t's graph", function()
    -- torch.tensor(x) with x requiring grad: requires_grad False, no grad_fn
    local x = T.tensor(1.5, { requires_grad = true })
    local y = T.tensor(x)
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
    y = T.tensor(x, { requires_grad = true })
    assert.is_true(y.requires_grad)
    assert.is_nil(y.grad_fn)
    y = T.tensor(x * 2, { dtype = f64 })
    assert.is_nil(y.grad_fn)
    assert.equal(3, y:item())
  end)
end)

describe("difftest round 8: random constructors' arguments (torch 1.13)", function()
  it("normal: a NaN std, a complex std and dtype with tensors are refused", function()
    local m = T.tensor({ 0, 10, 100 }, { dtype = f32 })
    -- torch: normal expects std >= 0.0, but found std nan
    err(function() T.normal(m, 0 / 0) end, "normal: expected std >= 0.0")
    err(function() T.normal(0, 0 / 0, { 2 }) end, "normal: expected std >= 0.0")
    -- torch: normal expects all elements of std >= 0.0
    err(function() T.normal(m, T.tensor({ 0 / 0, 1, 1 }, { dtype = f32 })) end, "all elements of std >= 0.0")
    -- torch: "normal_kernel_cpu" not implemented for 'Long'; ember takes
    -- integer tensors as the default float dtype (LuaJIT's 3. is an integer)
    assert.equal(f32, T.normal(T.tensor { 0, 1 }, T.tensor { 1, 1 }).dtype)
    assert.equal(f64, T.normal(T.tensor { 0, 1 }, T.ones(2, { dtype = f64 })).dtype)
    -- torch: normal expects standard deviation to be non-complex
    err(function() T.normal(m, T.ones(3, { dtype = c64 })) end, "non-complex")
    -- torch.normal(tensor, tensor, dtype=...) is a TypeError
    err(function() T.normal(m, 1, { dtype = f64 }) end, "dtype and device are only taken")
  end)

  it("normal: a complex mean or dtype gives a complex sample, each part of variance std^2 / 2", function()
    T.manual_seed(8)
    -- torch.normal(complex64 mean, 2.0) -> complex64
    local r = T.normal(T.zeros(20000, { dtype = c64 }), 2)
    assert.equal(c64, r.dtype)
    assert.is_true(math.abs(r.real:std():item() - math.sqrt(2)) < 0.05)
    assert.is_true(math.abs(r.imag:std():item() - math.sqrt(2)) < 0.05)
    -- torch.normal(3., 2., size=(n,), dtype=complex64): both parts of mean 3 and std sqrt(2)
    r = T.normal(3, 2, { 20000 }, { dtype = c64 })
    assert.equal(c64, r.dtype)
    assert.is_true(math.abs(r.real:mean():item() - 3) < 0.05)
    assert.is_true(math.abs(r.imag:mean():item() - 3) < 0.05)
    assert.is_true(math.abs(r.imag:std():item() - math.sqrt(2)) < 0.05)
    -- the mean's dtype wins: torch.normal(float32, float64 tensor) -> float32
    assert.equal(f32, T.normal(T.zeros(2), T.ones(2, { dtype = f64 })).dtype)
  end)

  it("normal, bernoulli and poisson of tensors that require grad are in the graph (zero gradient)", function()
    local m = T.tensor({ 1, 2 }, { dtype = f32, requires_grad = true })
    local s = T.tensor({ 1, 2 }, { dtype = f32, requires_grad = true })
    -- torch: NormalBackward3/1/2, grads zeros
    local r = T.normal(m, s)
    assert.is_true(r.requires_grad)
    r:sum():backward()
    assert.same({ 0, 0 }, m.grad:tolist())
    assert.same({ 0, 0 }, s.grad:tolist())
    assert.is_true(T.normal(m, 1).requires_grad)
    assert.is_true(T.normal(0, s).requires_grad)
    -- mean (2) with std (3, 1): the gradient has mean's shape
    m.grad = nil
    T.normal(m, T.ones(3, 1)):sum():backward()
    assert.same({ 0, 0 }, m.grad:tolist())
    -- torch: BernoulliBackward0; the form with a number p is not recorded
    local p = T.full({ 3 }, 0.5, { requires_grad = true })
    local b = T.bernoulli(p)
    assert.is_true(b.requires_grad)
    b:sum():backward()
    assert.same({ 0, 0, 0 }, p.grad:tolist())
    assert.is_true(p:bernoulli().requires_grad)
    assert.is_false(T.bernoulli(p, 0.5).requires_grad)
    -- torch: PoissonBackward0
    local rate = T.tensor({ 1, 4 }, { dtype = f32, requires_grad = true })
    local k = T.poisson(rate)
    assert.is_true(k.requires_grad)
    k:sum():backward()
    assert.same({ 0, 0 }, rate.grad:tolist())
    T.no_grad(function() assert.is_false(T.normal(m, 1).requires_grad) end)
  end)

  it("T.poisson: torch.poisson's dtypes, checks and means", function()
    T.manual_seed(8)
    local r = T.poisson(T.tensor({ 1, 5, 20 }, { dtype = f32 }))
    assert.equal(f32, r.dtype)
    assert.same({ 3 }, r:size())
    assert.same({ 0, 0, 0 }, T.poisson(T.zeros(3)):tolist())
    assert.equal(f64, T.poisson(T.zeros(2, { dtype = f64 })).dtype)
    assert.same({ 0 }, T.poisson(T.ones(0)):size())
    -- torch: invalid Poisson rate, expected rate to be non-negative (negative and NaN)
    err(function() T.poisson(T.tensor({ -1 }, { dtype = f32 })) end, "poisson: invalid Poisson rate")
    err(function() T.poisson(T.tensor { 0 / 0 }) end, "poisson: invalid Poisson rate")
    -- torch: "poisson_cpu" not implemented for 'Long'
    err(function() T.poisson(T.tensor { 1, 2 }) end, "poisson: expected a floating point tensor")
    err(function() T.poisson(T.zeros(2), { zz = 1 }) end, "unknown option 'zz'")
    -- an infinite rate gives inf (torch 1.13 gives -2^63 there)
    assert.same({ math.huge, 0 }, T.poisson(T.tensor({ math.huge, 0 }, { dtype = f32 })):tolist())
    -- means: Knuth below 10, PTRS above
    for _, lam in ipairs { 4, 50 } do
      local x = T.poisson(T.full({ 20000 }, lam, { dtype = f32 }))
      assert.is_true(math.abs(x:mean():item() - lam) < 0.02 * lam + 0.05)
      assert.is_true(math.abs(x:var():item() - lam) < 0.1 * lam)
      assert.is_true(T.equal(x, x:floor()))
    end
  end)
end)
