-- difftest round 11: random samplers against torch 1.13 (semantics, not bits:
-- ember's Philox streams differ from torch's generator). Seeds are fixed, so
-- the statistical bounds (6 sigma or wider) are deterministic.
local T = require "ember"

local function raises(f, pat)
  local ok, e = pcall(f)
  assert.is_false(ok)
  assert.truthy(tostring(e):find(pat, 1, true), tostring(e))
  return tostring(e)
end

describe("difftest round 11: random samplers (torch 1.13)", function()
  it("geometric_, cauchy_, log_normal_ refuse a leaf that requires grad, as torch", function()
    -- torch: "a leaf Variable that requires grad is being used in an in-place operation."
    for _, f in ipairs {
      function(x) x:geometric_(0.5) end, function(x) x:cauchy_() end, function(x) x:log_normal_() end,
    } do
      raises(function() f(T.zeros(3, { requires_grad = true })) end, "a leaf tensor that requires grad")
      T.no_grad(function() f(T.zeros(3, { requires_grad = true })) end) -- allowed under no_grad, as torch
    end
  end)

  it("geometric_, cauchy_, log_normal_ on a non-leaf give its history a zero gradient, as torch", function()
    -- torch: y = x * 2; y.geometric_(0.5); y.sum().backward() -> x.grad = [0, 0, 0]
    for _, op in ipairs { "geometric_", "cauchy_", "log_normal_" } do
      local x = T.ones(3, { requires_grad = true })
      local y = x * 2
      y[op](y, op == "geometric_" and 0.5 or nil)
      y:sum():backward()
      assert.same({ 0, 0, 0 }, x.grad:tolist())
    end
  end)

  it("geometric_ with a tiny p has mean 1/p (log1p(-p), not log(1 - p))", function()
    T.manual_seed(11)
    local m = T.zeros(10000, { dtype = T.float64 }):geometric_(1e-17):mean():item()
    -- sd of the mean is about 1e17 / 100: 10% is 10 sigma
    assert.is_true(math.abs(m / 1e17 - 1) < 0.1, tostring(m))
    m = T.zeros(100000, { dtype = T.float64 }):geometric_(1e-10):mean():item()
    assert.is_true(math.abs(m / 1e10 - 1) < 0.02, tostring(m))
  end)

  it("uniform_ and normal_ fill complex tensors part by part, as torch", function()
    -- torch 1.13: zeros(200000, complex64).normal_(1, 2): each part mean 1, var 2;
    -- zeros(200000, complex128).uniform_(-1, 3): each part in [-1, 3), var 16/12
    T.manual_seed(12)
    local n = 200000
    local r = T.view_as_real(T.zeros(n, { dtype = T.complex64 }):normal_(1, 2)):double()
    for k = 1, 2 do
      local p = r:select(2, k)
      assert.is_true(math.abs(p:mean():item() - 1) < 6 * math.sqrt(2 / n))
      assert.is_true(math.abs(p:var():item() - 2) < 0.05)
    end
    r = T.view_as_real(T.zeros(n, { dtype = T.complex128 }):uniform_(-1, 3))
    assert.is_true(r:min():item() >= -1 and r:max():item() < 3)
    for k = 1, 2 do
      local p = r:select(2, k)
      assert.is_true(math.abs(p:mean():item() - 1) < 6 * math.sqrt(16 / 12 / n))
      assert.is_true(math.abs(p:var():item() - 16 / 12) < 0.04)
    end
    assert.equal(T.complex64, T.zeros(2, { dtype = T.complex64 }):uniform_().dtype)
    -- the same checks as for real tensors
    raises(function() T.zeros(3, { dtype = T.complex64 }):uniform_(3, 1) end,
      "uniform_: expects to return a [from, to) range, but found from=3 > to=1")
    raises(function() T.zeros(3, { dtype = T.complex64 }):normal_(0, -1) end,
      "normal_: expects std >= 0.0, but found std -1")
    raises(function() T.zeros(3, { dtype = T.complex64, requires_grad = true }):normal_() end,
      "normal_: a leaf tensor that requires grad")
    -- seeds reproduce
    T.manual_seed(5); local a = T.zeros(5, { dtype = T.complex64 }):normal_()
    T.manual_seed(5); local b = T.zeros(5, { dtype = T.complex64 }):normal_()
    assert.is_true(a:eq(b):all():item())
  end)

  it("errors of bernoulli, uniform_ and normal_ name the op (bernoulli_ as torch) and point at the caller's line", function()
    local e = raises(function() T.bernoulli(T.tensor { 0.1, 0.5, 0.9 }, 1.3) end,
      "bernoulli_: expects p to be in [0, 1], but got p=1.3")
    assert.truthy(e:find("difftest11_rand_spec.lua", 1, true), e)
    e = raises(function() T.bernoulli(T.tensor { 0.1, 1.5, 0.9 }) end, "got 1.5")
    assert.truthy(e:find("difftest11_rand_spec.lua", 1, true), e)
    e = raises(function() T.zeros(3):uniform_(2, 1) end, "uniform_: expects to return a [from, to) range")
    assert.truthy(e:find("difftest11_rand_spec.lua", 1, true), e)
    e = raises(function() T.zeros(3):normal_(0, -1) end, "normal_: expects std >= 0.0, but found std -1")
    assert.truthy(e:find("difftest11_rand_spec.lua", 1, true), e)
  end)

  it("uniform_ refuses bounds past the dtype's range; complex samplers and a NaN probability are named", function()
    -- torch 1.13: "to is out of bounds for float", "from is out of bounds for float",
    -- "to is out of bounds for c10::Half"; float64 takes 1e39
    raises(function() T.zeros(3):uniform_(0, 1e39) end, "uniform_: to=1e+39 is out of bounds for float32")
    raises(function() T.zeros(3):uniform_(-1e39, 0) end, "uniform_: from=-1e+39 is out of bounds for float32")
    raises(function() T.zeros(3, { dtype = T.float16 }):uniform_(0, 1e5) end, "out of bounds for float16")
    assert.is_true(T.zeros(3, { dtype = T.float64 }):uniform_(0, 1e39):max():item() > 1e30)
    -- torch: "random_from_to" not implemented for 'ComplexFloat'
    raises(function() T.zeros(3, { dtype = T.complex64 }):random_() end, "random_: not implemented for complex64")
    raises(function() T.zeros(3, { dtype = T.complex64 }):bernoulli_(0.5) end, "bernoulli_: not implemented for complex64")
    raises(function() T.bernoulli(T.tensor { 0 / 0 }) end, "in [0, 1], got nan")
  end)

  it("statistics of the samplers match theory (checks, already passing)", function()
    T.manual_seed(123)
    local N = 200000
    local function chk(x, m, v)
      x = x:double()
      local em, ev = x:mean():item(), x:var():item()
      assert.is_true(math.abs(em - m) < 6 * math.sqrt(v / N), ("mean %g vs %g"):format(em, m))
      assert.is_true(math.abs(ev - v) < 0.03 * v, ("var %g vs %g"):format(ev, v))
    end
    chk(T.rand(N), 0.5, 1 / 12)
    chk(T.randn(N, { dtype = T.float16 }), 0, 1)
    chk(T.randint(-128, 128, { N }, { dtype = T.int8 }), -0.5, (256 ^ 2 - 1) / 12)
    chk(T.empty(N, { dtype = T.uint8 }):random_(), 127.5, (256 ^ 2 - 1) / 12)
    chk(T.empty(N):exponential_(2), 0.5, 0.25)
    chk(T.empty(N):geometric_(0.3), 1 / 0.3, 0.7 / 0.09)
    chk(T.empty(N):log_normal_(0, 0.5), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25))
    chk(T.poisson(T.full({ N }, 3, { dtype = T.float32 })), 3, 3)
    chk(T.normal(1, T.full({ N }, 2, { dtype = T.float32 })), 1, 4)
    local x = T.empty(N):cauchy_(1, 2) -- half the mass in [median - sigma, median + sigma]
    local f = x:ge(-1):logical_and(x:le(3)):double():mean():item()
    assert.is_true(math.abs(f - 0.5) < 6 * math.sqrt(0.25 / N))
    -- multinomial: 1-based ids, zero-weight categories never drawn
    local s = T.multinomial(T.tensor { 0.1, 0, 0.2, 0.7 }, N, true)
    assert.equal(1, s:min():item()); assert.equal(4, s:max():item())
    assert.is_false(s:eq(2):any():item())
    assert.is_true(math.abs(s:eq(4):double():mean():item() - 0.7) < 6 * math.sqrt(0.21 / N))
    -- without replacement: P(second draw = 1) = .2*.1/.8 + .7*.1/.3
    local d = T.multinomial(T.tensor { 0.1, 0, 0.2, 0.7 }:unsqueeze(1):expand(N / 4, 4):contiguous(), 4)
    assert.is_true(d:select(2, 4):eq(2):all():item()) -- the zero category comes last
    local p2 = 0.2 * 0.1 / 0.8 + 0.7 * 0.1 / 0.3
    local f2 = d:select(2, 2):eq(1):double():mean():item()
    assert.is_true(math.abs(f2 - p2) < 6 * math.sqrt(p2 * (1 - p2) / (N / 4)), tostring(f2))
  end)
end)
