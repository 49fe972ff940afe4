-- Chi2, StudentT, Geometric, Binomial, Multinomial, OneHotCategorical,
-- NegativeBinomial, FisherSnedecor, MixtureSameFamily, ContinuousBernoulli,
-- VonMises, LowRankMultivariateNormal and the relaxed (Concrete) distributions
-- (lua/ember/distributions.lua): values against torch 1.13
-- (tests/fixtures/gen_distributions_more.py: log_prob and its parameter
-- gradients, mean, variance, mode, entropy, kl_divergence), sample moments
-- (fixed seed, stated tolerances), shapes and the refusals.
local T = require "ember"
local D = T.distributions
local S = require "specutil"
local fx = dofile("tests/fixtures/distributions_more_cases.lua")
local unpack = table.unpack or unpack

local tensor = S.fixture
-- each value within tol * max(1, |want|) (default 1e-10)
local function close(got, rec, what, tol) S.close_fixture(got:detach(), rec, what, tol or 1e-10, true) end

local function build(c, grad)
  local counted = c.dist == "Binomial" or c.dist == "Multinomial" or c.dist == "NegativeBinomial"
  local args, ps = {}, {}
  for i, a in ipairs(c.args or {}) do
    args[i] = tensor(a)
    if grad and T.is_tensor(args[i]) and not (counted and i == 1) then
      args[i]:requires_grad_(); ps[#ps + 1] = args[i]
    end
  end
  local kw = nil
  for k, v in pairs(c.kw or {}) do
    kw = kw or {}
    kw[k] = tensor(v)
    if grad and T.is_tensor(kw[k]) then kw[k]:requires_grad_(); ps[#ps + 1] = kw[k] end
  end
  if kw then args[#args + 1] = kw end
  return D[c.dist](unpack(args)), ps
end

describe("more distributions against PyTorch 1.13", function()
  for i, c in ipairs(fx.cases) do
    it(string.format("%s #%d", c.dist, i), function()
      local d, ps = build(c, true)
      assert.same(c.batch_shape, d.batch_shape:totable())
      assert.same(c.event_shape, d.event_shape:totable())
      local lp = d:log_prob(tensor(c.value))
      close(lp, c.log_prob, "log_prob", c.tol)
      local gs = T.autograd.grad({ lp:sum() }, ps, { allow_unused = true })
      for k = 1, #ps do close(gs[k] or T.zeros_like(ps[k]), c.grad[k], "log_prob gradient " .. k, c.tol or 1e-8) end
      close(d.mean, c.mean, "mean")
      close(d.variance, c.variance, "variance", c.tol)
      if c.mode then close(d.mode, c.mode, "mode") else assert.has_error(function() return d.mode end) end
      if c.entropy then close(d:entropy(), c.entropy, "entropy", 1e-9) end
    end)
  end
  for i, c in ipairs(fx.kl) do
    it(string.format("kl_divergence %s || %s #%d", c.p.dist, c.q.dist, i), function()
      close(D.kl_divergence(build(c.p), build(c.q)), c.kl, "kl", 1e-9)
    end)
  end
end)

describe("MixtureSameFamily against PyTorch 1.13", function()
  for i, c in ipairs(fx.mixtures) do
    it(string.format("case %d (%s components)", i, c.independent and "Independent(Normal)" or "Normal"), function()
      local pr, lo, sc = tensor(c.probs):requires_grad_(), tensor(c.loc):requires_grad_(), tensor(c.scale):requires_grad_()
      local comp = D.Normal(lo, sc)
      if c.independent then comp = D.Independent(comp, 1) end
      local d = D.MixtureSameFamily(D.Categorical({ probs = pr }), comp)
      assert.same(c.batch_shape, d.batch_shape:totable())
      assert.same(c.event_shape, d.event_shape:totable())
      local v = tensor(c.value)
      local lp = d:log_prob(v)
      close(lp, c.log_prob, "log_prob")
      local gs = T.autograd.grad({ lp:sum() }, { pr, lo, sc })
      for k = 1, 3 do close(gs[k], c.grad[k], "log_prob gradient " .. k, 1e-8) end
      close(d.mean, c.mean, "mean")
      close(d.variance, c.variance, "variance")
      if c.cdf then close(d:cdf(v), c.cdf, "cdf") end
    end)
  end
end)

describe("Multinomial's entropy gradient where a probability is 0 or 1", function()
  it("is finite and torch's (the Binomial marginals from clamped logits)", function()
    for i, c in ipairs(fx.entropy_grads) do
      local p = tensor(c.probs):requires_grad_()
      local h = D.Multinomial(c.n, p):entropy()
      close(h, c.entropy, "entropy " .. i, 1e-9)
      close(T.autograd.grad({ h }, { p })[1], c.grad, "entropy gradient " .. i, 1e-8)
    end
  end)
end)

describe("ContinuousBernoulli's cdf and icdf against PyTorch 1.13", function()
  it("match on both sides of the Taylor region", function()
    for i, c in ipairs(fx.cb) do
      local kw = {}
      for k, v in pairs(c.kw) do kw[k] = tensor(v) end
      local d = D.ContinuousBernoulli(kw)
      close(d:cdf(tensor(c.at)), c.cdf, "cdf " .. i)
      close(d:icdf(tensor(c.u)), c.icdf, "icdf " .. i, 1e-9)
    end
  end)
end)

describe("the relaxed distributions against PyTorch 1.13", function()
  for i, c in ipairs(fx.relaxed) do
    it(string.format("%s #%d", c.dist, i), function()
      local temp = tensor(c.temperature):requires_grad_()
      local kw, ps = {}, { temp }
      for k, v in pairs(c.kw) do kw[k] = tensor(v):requires_grad_(); ps[#ps + 1] = kw[k] end
      local d = D[c.dist](temp, kw)
      assert.same(c.batch_shape, d.batch_shape:totable())
      assert.same(c.event_shape, d.event_shape:totable())
      local lp = d:log_prob(tensor(c.value))
      close(lp, c.log_prob, "log_prob")
      local gs = T.autograd.grad({ lp:sum() }, ps)
      for k = 1, #ps do close(gs[k], c.grad[k], "log_prob gradient " .. k, 1e-8) end
    end)
  end

  it("rsample: RelaxedOneHotCategorical's draws lie on the simplex and tend to one-hot as the temperature falls", function()
    T.manual_seed(8)
    local p = T.tensor({ 0.2, 0.3, 0.5 }, { dtype = T.float64 })
    local hot = D.RelaxedOneHotCategorical(T.tensor(0.05, { dtype = T.float64 }), p):rsample({ 4000 })
    assert.is_true((hot:sum(-1) - 1):abs():max():item() < 1e-12)
    -- the mean largest part: 0.98 at temperature 0.05 against 0.67 at 1 (4000 draws each)
    assert.is_true(hot:amax(-1):mean():item() > 0.95)
    local warm = D.RelaxedOneHotCategorical(T.tensor(1.0, { dtype = T.float64 }), p):rsample({ 4000 })
    assert.is_true(warm:amax(-1):mean():item() < 0.75)
    -- the argmax of a relaxed draw is a Categorical draw: its frequencies are p
    local freq = T.nn.functional.one_hot(hot:argmax(-1), 3):double():mean(1)
    assert.is_true((freq - p):abs():max():item() < 0.03)
    local rb = D.RelaxedBernoulli(T.tensor(0.1, { dtype = T.float64 }), T.tensor({ 0.25 }, { dtype = T.float64 }))
    local x = rb:rsample({ 4000 })
    assert.is_true(x:gt(0):all():item() and x:lt(1):all():item())
    assert.is_true(math.abs(x:gt(0.5):double():mean():item() - 0.25) < 0.03)
  end)
end)

describe("more distributions: samples", function()
  -- the mean of n draws within 5 standard errors, the variance within vtol
  local function moments(d, n, vtol)
    T.manual_seed(23)
    local s = d:sample({ n }):double()
    local m, v = s:mean(1), s:var(1)
    local mu, var = d.mean:double(), d.variance:double()
    local se = (var / n):sqrt()
    assert.is_true(((m - mu):abs() - se * 5):le(0):all():item(), "sample mean off: " .. tostring(m) .. " vs " .. tostring(mu))
    assert.is_true(((v - var):abs() - var * vtol):le(0):all():item(), "sample variance off: " .. tostring(v) .. " vs " .. tostring(var))
    return s
  end

  it("Binomial: exact draws for small and large counts (the beta recursion)", function()
    local d = D.Binomial(T.tensor({ 1, 10, 33, 1000, 1e6, 0 }, { dtype = T.float64 }),
      T.tensor({ 0.3, 0.5, 0.05, 0.9, 0.37, 0.5 }, { dtype = T.float64 }))
    local s = moments(d, 20000, 0.1)
    assert.is_true(s:ge(0):all():item() and s:le(d.total_count):all():item())
    assert.is_true(s:eq(s:floor()):all():item())
    assert.is_true(s:select(2, 6):eq(0):all():item())
    -- the distribution, not only its moments: P(X = k) for Binomial(10, 0.5)
    local c = s:select(2, 2)
    for k = 0, 10 do
      local want = D.Binomial(10, T.tensor(0.5, { dtype = T.float64 })):log_prob(T.tensor(k, { dtype = T.float64 }))
        :exp():item()
      local got = c:eq(k):double():mean():item()
      assert(math.abs(got - want) < 5 * math.sqrt(want * (1 - want) / 20000) + 1e-4,
        string.format("P(X = %d): %.4f vs %.4f", k, got, want))
    end
  end)

  it("Chi2, StudentT, Geometric", function()
    moments(D.Chi2(T.tensor({ 0.5, 3, 20 }, { dtype = T.float64 })), 20000, 0.1)
    moments(D.StudentT(T.tensor({ 6, 10 }, { dtype = T.float64 }), 1, 2), 40000, 0.15)
    moments(D.Geometric(T.tensor({ 0.1, 0.5, 0.9 }, { dtype = T.float64 })), 20000, 0.1)
  end)

  it("Multinomial and OneHotCategorical", function()
    local p = T.tensor({ { 0.2, 0.3, 0.5 }, { 0.7, 0.2, 0.1 } }, { dtype = T.float64 })
    local m = D.Multinomial(8, p)
    local s = moments(m, 20000, 0.1)
    assert.same({ 20000, 2, 3 }, s.shape:totable())
    assert.is_true(s:sum(-1):eq(8):all():item())
    local o = D.OneHotCategorical(p)
    local so = moments(o, 20000, 0.1)
    assert.is_true(so:sum(-1):eq(1):all():item())
    assert.same({ 3, 2, 3 }, o:enumerate_support().shape:totable())
  end)

  it("VonMises (Best-Fisher rejection) and LowRankMultivariateNormal", function()
    local f = { dtype = T.float64 }
    T.manual_seed(6)
    local vm = D.VonMises(T.tensor({ 0.5, -2.0, 1.0 }, f), T.tensor({ 2.0, 0.3, 50.0 }, f))
    local s = vm:sample({ 20000 })
    assert.is_true(s:ge(-math.pi):all():item() and s:lt(math.pi):all():item())
    -- the circular moments: E[cos(x - loc)] = I1(k) / I0(k) = 1 - variance, E[sin(x - loc)] = 0
    local c = (s - vm.loc):cos():mean(1)
    assert.is_true((c - (-vm.variance + 1)):abs():max():item() < 0.02)
    assert.is_true((s - vm.loc):sin():mean(1):abs():max():item() < 0.02)
    local lr = D.LowRankMultivariateNormal(T.zeros(3, f), T.tensor({ { 1, 0 }, { 0.5, 1 }, { 0, 2 } }, f), T.tensor({ 1, 2, 0.5 }, f))
    local x = lr:rsample({ 20000 })
    local cov = (x:t():matmul(x) / 20000)
    assert.is_true((cov - lr.covariance_matrix):abs():max():item() < 0.15)
    assert.is_true((lr.precision_matrix:matmul(lr.covariance_matrix) - T.eye(3, f)):abs():max():item() < 1e-12)
    local mvn = D.MultivariateNormal(T.zeros(3, f), { covariance_matrix = lr.covariance_matrix })
    assert.is_true((lr:log_prob(x:narrow(1, 1, 5)) - mvn:log_prob(x:narrow(1, 1, 5))):abs():max():item() < 1e-12)
  end)

  it("ContinuousBernoulli (by its icdf)", function()
    local d = D.ContinuousBernoulli(T.tensor({ 0.1, 0.5, 0.8 }, { dtype = T.float64 }))
    local s = moments(d, 20000, 0.1)
    assert.is_true(s:ge(0):all():item() and s:le(1):all():item())
  end)

  it("NegativeBinomial (Gamma-Poisson), FisherSnedecor, MixtureSameFamily", function()
    moments(D.NegativeBinomial(T.tensor({ 3, 10 }, { dtype = T.float64 }), T.tensor({ 0.4, 0.8 }, { dtype = T.float64 })),
      40000, 0.1)
    moments(D.FisherSnedecor(T.tensor({ 5, 20 }, { dtype = T.float64 }), T.tensor({ 30, 40 }, { dtype = T.float64 })),
      40000, 0.15)
    local mix = D.Categorical(T.tensor({ { 0.3, 0.7 }, { 0.5, 0.5 } }, { dtype = T.float64 }))
    local comp = D.Normal(T.tensor({ { -2, 3 }, { 0, 1 } }, { dtype = T.float64 }), T.tensor({ { 0.5, 1 }, { 1, 2 } }, { dtype = T.float64 }))
    local g = D.MixtureSameFamily(mix, comp)
    local s = moments(g, 40000, 0.1)
    assert.same({ 40000, 2 }, s.shape:totable())
    local g2 = D.MixtureSameFamily(D.Categorical(T.ones(3)), D.Independent(D.Normal(T.randn(3, 2), T.ones(3, 2)), 1))
    assert.same({ 7, 2 }, g2:sample({ 7 }).shape:totable())
  end)

  it("StudentT's rsample is differentiable in df, loc and scale", function()
    local df = T.tensor({ 5.0 }, { dtype = T.float64 }):requires_grad_()
    local loc = T.tensor({ 1.0 }, { dtype = T.float64 }):requires_grad_()
    local sc = T.tensor({ 2.0 }, { dtype = T.float64 }):requires_grad_()
    T.manual_seed(3)
    local x = D.StudentT(df, loc, sc):rsample({ 100 })
    local g = T.autograd.grad({ x:sum() }, { df, loc, sc })
    assert.equal(100, g[2]:item())
    assert.is_true(g[1]:abs():item() > 0 and g[3]:abs():item() > 0)
  end)
end)

describe("T.binomial", function()
  it("draws Binomial(count, prob) per element, broadcast, exactly in distribution", function()
    local f = { dtype = T.float64 }
    T.manual_seed(4)
    local n = T.tensor({ 10, 1000, 1e7, 0 }, f):expand(20000, 4)
    local r = T.binomial(n, T.tensor({ 0.3, 0.5, 0.01, 0.5 }, f))
    assert.same({ 20000, 4 }, r.shape:totable())
    local m, v = r:mean(1), r:var(1)
    local mu = T.tensor({ 3, 500, 1e5, 0 }, f)
    local var = T.tensor({ 2.1, 250, 99000, 0 }, f)
    assert.is_true(((m - mu):abs() - (var / 20000):sqrt() * 5):le(0):all():item())
    assert.is_true(((v - var):abs() - var * 0.1):le(0):all():item())
    assert.is_true(r:eq(r:floor()):all():item())
  end)

  it("gives NaN for a NaN prob, keeps the dtype, and is in the graph with a zero gradient", function()
    local c = T.tensor({ 4, 6 }, { dtype = T.float32 }):requires_grad_()
    local r = T.binomial(c, T.tensor({ 0 / 0, 1 }))
    assert.is_true(r[1]:item() ~= r[1]:item())
    assert.equal(6, r[2]:item())
    assert.equal(T.float32, r.dtype)
    local g = T.autograd.grad({ r:nan_to_num():sum() }, { c })[1]
    assert.same({ 0, 0 }, g:tolist())
  end)

  it("refuses what it cannot draw, by name", function()
    local f = { dtype = T.float32 }
    S.err(function() T.binomial(T.tensor({ -1, 2 }, f), T.tensor({ 0.5, 0.5 })) end,
      "binomial: expected count to hold non-negative integers")
    S.err(function() T.binomial(T.tensor({ 2.5 }), T.tensor({ 0.5 })) end, "binomial: expected count to hold non-negative integers")
    S.err(function() T.binomial(T.tensor({ 1, 2 }, f), T.tensor({ 1.5, 0.5 })) end, "binomial: expected prob to be in [0, 1]")
    S.err(function() T.binomial(T.tensor({ 1, 2 }), T.tensor({ 0.5, 0.5 })) end,
      "binomial: expected count and prob of one floating point dtype, got int64 and float32")
    S.err(function() T.binomial(T.ones(2), T.ones(3)) end, "binomial")
  end)
end)

describe("more distributions: expand", function()
  it("broadcasts the parameters and keeps the values", function()
    local f = { dtype = T.float64 }
    local cases = {
      { D.Geometric(T.tensor({ 0.3, 0.6 }, f)), T.tensor({ 1, 4 }, f) },
      { D.Binomial(T.tensor({ 5, 7 }, f), T.tensor({ 0.3, 0.6 }, f)), T.tensor({ 2, 7 }, f) },
      { D.NegativeBinomial(T.tensor({ 5, 7 }, f), T.tensor({ 0.3, 0.6 }, f)), T.tensor({ 2, 9 }, f) },
      { D.ContinuousBernoulli(T.tensor({ 0.3, 0.6 }, f)), T.tensor({ 0.2, 0.9 }, f) },
      { D.Multinomial(3, T.tensor({ { 0.2, 0.8 }, { 0.5, 0.5 } }, f)), T.tensor({ { 1, 2 }, { 3, 0 } }, f) },
      { D.OneHotCategorical(T.tensor({ { 0.2, 0.8 }, { 0.5, 0.5 } }, f)), T.tensor({ { 0, 1 }, { 1, 0 } }, f) },
    }
    for i, c in ipairs(cases) do
      local d, v = c[1], c[2]
      local e = d:expand({ 3, 2 })
      assert.same({ 3, 2 }, e.batch_shape:totable(), "case " .. i)
      local want = d:log_prob(v):expand(3, 2)
      assert.is_true((e:log_prob(v) - want):abs():max():item() < 1e-12, "case " .. i)
    end
  end)
end)

describe("more distributions: validation", function()
  it("refuses parameters and values outside the constraints, by name", function()
    S.err(function() D.Chi2(T.tensor({ -1.0 })) end, "Chi2: expected parameter df to satisfy the constraint positive")
    S.err(function() D.StudentT(T.tensor({ 1.0 }), 0, -1) end, "StudentT: expected parameter scale to satisfy the constraint positive")
    S.err(function() D.Geometric(T.tensor({ 0.0 })) end, "Geometric: expected parameter probs to satisfy the constraint positive")
    S.err(function() D.Binomial(2.5, T.tensor({ 0.5 })) end,
      "Binomial: expected parameter total_count to satisfy the constraint nonnegative_integer")
    S.err(function() D.Binomial(4, T.tensor({ 0.5 })):log_prob(T.tensor({ 5.0 })) end,
      "Binomial: expected value argument to be within the support (integer_interval)")
    S.err(function() D.Multinomial(2.5, T.tensor({ 0.5, 0.5 })) end, "Multinomial: total_count must be a non-negative integer, got 2.5")
    S.err(function() D.Geometric(T.tensor({ 0.5 }), { logits = T.tensor({ 0.0 }) }) end,
      "Geometric: either probs or logits must be specified, but not both")
    S.err(function() D.Binomial(T.tensor({ 2.0, 3.0 }), T.tensor({ 0.5, 0.5 })):entropy() end,
      "Binomial: Inhomogeneous total count not supported by `entropy`.")
    S.err(function() D.NegativeBinomial(T.tensor({ -1.0 }), T.tensor({ 0.5 })) end,
      "NegativeBinomial: expected parameter total_count to satisfy the constraint greater_than_eq")
    S.err(function() D.FisherSnedecor(1.0, -2.0) end, "FisherSnedecor: expected parameter df2 to satisfy the constraint positive")
    S.err(function() D.NegativeBinomial(2, T.tensor({ 1.0 })) end,
      "NegativeBinomial: expected parameter probs to satisfy the constraint half_open_interval")
    S.err(function() D.Multinomial(2, T.tensor(0.5)) end, "Multinomial: probs or logits must be at least one-dimensional")
    S.err(function() D.OneHotCategorical() end, "OneHotCategorical: either probs or logits must be specified")
    S.err(function() D.MixtureSameFamily(D.Normal(0., 1.), D.Normal(T.zeros(2), T.ones(2))) end,
      "MixtureSameFamily: the mixture distribution must be a Categorical, got Normal")
    S.err(function() D.MixtureSameFamily(D.Categorical(T.ones(3)), D.Normal(T.zeros(2), T.ones(2))) end,
      "MixtureSameFamily: mixture_distribution component (3) does not equal component_distribution.batch_shape[-1] (2)")
    S.err(function() D.MixtureSameFamily(D.Categorical(T.ones(2, 2)), D.Normal(T.zeros(3, 2), T.ones(3, 2))) end,
      "MixtureSameFamily: mixture_distribution.batch_shape ([2]) is not compatible with component_distribution.batch_shape ([3])")
    S.err(function() D.MixtureSameFamily(D.Categorical(T.ones(1)), D.Normal(0., 1.)) end,
      "MixtureSameFamily: the component distribution needs a batch dim of components")
    S.err(function() D.MixtureSameFamily(D.Categorical(T.ones(2)), D.Normal(T.zeros(2), T.ones(2))):entropy() end,
      "MixtureSameFamily: entropy is not implemented")
    S.err(function() D.kl_divergence(D.Binomial(2, T.tensor({ 0.5 })), D.Binomial(3, T.tensor({ 0.5 }))) end,
      "kl_divergence: KL between Binomials where q.total_count > p.total_count is not implemented")
  end)
end)
