-- T.distributions (issue 19 item 4; lua/ember/distributions.lua): values
-- against PyTorch 1.13 (tests/fixtures/distributions_cases.lua from
-- gen_distributions.py: log_prob and its parameter gradients, cdf, icdf,
-- entropy, mean, variance, kl_divergence), sample moments (fixed seed,
-- stated tolerances), shapes, reparameterisation, validation and the
-- in-place samplers.
local T = require "ember"
local D = T.distributions
local fx = dofile("tests/fixtures/distributions_cases.lua")
local unpack = table.unpack or unpack

local function tensor(rec)
  if type(rec) ~= "table" then return rec end
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end
local function close(got, rec, what, tol)
  local want = tensor(rec)
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  local g, w = got:detach():double():reshape(-1), want:double():reshape(-1)
  for i = 1, w:numel() do
    local a, b = g[i]:item(), w[i]:item()
    if b ~= b then assert(a ~= a, what .. ": want nan")
    elseif b == 1 / 0 or b == -1 / 0 then assert.equal(b, a, what)
    else
      local t = (tol or 1e-10) * math.max(1, math.abs(b))
      assert(math.abs(a - b) <= t, string.format("%s [%d]: got %.17g, want %.17g", what, i, a, b))
    end
  end
end

local function build(c, grad)
  local args, ps = {}, {}
  for i, a in ipairs(c.args or {}) do
    args[i] = tensor(a)
    if grad and T.is_tensor(args[i]) then args[i]:requires_grad_(); ps[#ps + 1] = args[i] end
  end
  local kw = nil
  for k, v in pairs(c.kw or {}) do
    kw = kw or {}
    kw[k] = tensor(v)
    if grad then kw[k]:requires_grad_(); ps[#ps + 1] = kw[k] end
  end
  if kw then args[#args + 1] = kw end
  return D[c.dist](unpack(args)), ps
end

describe("distributions against PyTorch 1.13", function()
  for i, c in ipairs(fx.cases) do
    it(string.format("%s #%d", c.dist, i), function()
      local d, ps = build(c, true)
      assert.same(c.batch_shape, d.batch_shape:totable())
      assert.same(c.event_shape, d.event_shape:totable())
      local v = tensor(c.value)
      local lp = d:log_prob(v)
      close(lp, c.log_prob, "log_prob")
      local gs = T.autograd.grad({ lp:sum() }, ps, { allow_unused = true })
      for k = 1, #ps do close(gs[k] or T.zeros_like(ps[k]), c.grad[k], "log_prob gradient " .. k, 1e-8) end
      close(d.mean, c.mean, "mean")
      close(d.variance, c.variance, "variance")
      if c.entropy then close(d:entropy(), c.entropy, "entropy") end
      if c.cdf then close(d:cdf(tensor(c.cdf_at)), c.cdf, "cdf") end
      if c.icdf then close(d:icdf(tensor(c.icdf_at)), c.icdf, "icdf", 1e-9) end
    end)
  end
  for i, c in ipairs(fx.kl) do
    it(string.format("kl_divergence %s || %s #%d", c.p.dist, c.q.dist, i), function()
      close(D.kl_divergence(build(c.p), build(c.q)), c.kl, "kl", 1e-9)
    end)
  end
end)

describe("distributions: samples", function()
  -- the mean of n draws is within 5 standard errors of the true mean, the
  -- variance within 10% (n = 20000; fixed seed: a failure is a bug, not luck)
  local function moments(d, n, vtol)
    T.manual_seed(19)
    local s = d:sample({ n }):double()
    local m, v = s:mean(1), s:var(1)
    local mu, var = d.mean:double(), d.variance:double()
    local se = (var / n):sqrt() * 5
    assert((m - mu):abs():le(se + 1e-12):all():item(), "sample mean " .. tostring(m) .. " vs " .. tostring(mu))
    assert(((v - var):abs() / var):le(vtol or 0.1):all():item(), "sample variance " .. tostring(v) .. " vs " .. tostring(var))
  end
  local n = 20000
  it("Normal, Uniform, Exponential, Laplace", function()
    moments(D.Normal(T.tensor({ 0., 3. }):float(), T.tensor({ 1., 0.5 }):float()), n)
    moments(D.Uniform(T.tensor({ 0., -2. }):float(), T.tensor({ 1., 5. }):float()), n)
    moments(D.Exponential(T.tensor({ 0.5, 3. }):float()), n)
    moments(D.Laplace(T.tensor({ 1., -1. }):float(), T.tensor({ 2., 0.5 }):float()), n)
  end)
  it("Gamma (Marsaglia-Tsang, concentration below and above 1), Beta", function()
    moments(D.Gamma(T.tensor({ 0.3, 1., 4.5, 50 }):float(), T.tensor({ 1., 2., 0.5, 3. }):float()), n, 0.15)
    moments(D.Beta(T.tensor({ 0.5, 2. }):float(), T.tensor({ 0.5, 5. }):float()), n)
  end)
  it("Poisson (Knuth below 10, PTRS above), Bernoulli, Categorical", function()
    moments(D.Poisson(T.tensor({ 0.3, 4., 15., 300. }):float()), n)
    moments(D.Bernoulli({ probs = T.tensor({ 0.1, 0.7 }):float() }), n)
    T.manual_seed(3)
    local c = D.Categorical({ probs = T.tensor({ 0.2, 0.3, 0.5 }):float() })
    local s = c:sample({ n })
    assert.equal(T.int64, s.dtype)
    assert.equal(1, s:min():item())
    assert.equal(3, s:max():item())
    local freq = T.bincount and nil
    for k, p in ipairs { 0.2, 0.3, 0.5 } do
      local f = s:eq(k):double():mean():item()
      assert(math.abs(f - p) < 0.015, string.format("class %d: frequency %g vs %g", k, f, p))
    end
  end)
  it("Dirichlet and MultivariateNormal", function()
    moments(D.Dirichlet(T.tensor({ 1., 2., 3. }):float()), n)
    local cov = T.tensor({ { 2., 0.5 }, { 0.5, 1. } }):float()
    local m = D.MultivariateNormal(T.tensor({ 1., -1. }):float(), { covariance_matrix = cov })
    moments(m, n)
    T.manual_seed(5)
    local s = m:sample({ n })
    local c = s - s:mean(1)
    local emp = c:t():matmul(c) / (n - 1)
    assert.is_true(T.allclose(emp, cov, 0.05, 0.05))
  end)
  it("T.manual_seed makes draws repeatable", function()
    local d = D.Gamma(T.tensor({ 0.5, 3. }):float(), 1.)
    T.manual_seed(7); local a = d:sample({ 5 })
    T.manual_seed(7); local b = d:sample({ 5 })
    assert.is_true(T.equal(a, b))
    T.manual_seed(7); local p1 = D.Poisson(T.tensor({ 2., 40. }):float()):sample({ 5 })
    T.manual_seed(7); local p2 = D.Poisson(T.tensor({ 2., 40. }):float()):sample({ 5 })
    assert.is_true(T.equal(p1, p2))
  end)
end)

describe("distributions: shapes, rsample, expand", function()
  it("sample shapes are sample_shape + batch_shape + event_shape", function()
    local d = D.Normal(T.zeros(2, 3), 1.)
    assert.same({ 4, 5, 2, 3 }, d:sample({ 4, 5 }).shape:totable())
    assert.same({ 2, 3 }, d:sample().shape:totable())
    local dir = D.Dirichlet(T.ones(2, 4))
    assert.same({ 2, 4 }, dir.batch_shape:totable() and { dir.batch_shape[1], dir.event_shape[1] })
    assert.same({ 3, 2, 4 }, dir:sample({ 3 }).shape:totable())
    local c = D.Categorical({ logits = T.zeros(2, 5) })
    assert.same({ 6, 2 }, c:sample({ 6 }).shape:totable())
  end)
  it("rsample is differentiable (Normal, Exponential, Laplace, Uniform, MVN, Gamma in rate)", function()
    local loc = T.tensor { 0.5 }:requires_grad_()
    local scale = T.tensor({ 2. }):float():requires_grad_()
    local x = D.Normal(loc, scale):rsample({ 10 })
    local gl, gs = unpack(T.autograd.grad({ x:sum() }, { loc, scale }))
    assert.near(10, gl:item(), 1e-5)
    assert.is_true(T.allclose(gs, ((x - 0.5) / 2):detach():sum(1, true):view(1)))
    local rate = T.tensor({ 2. }):float():requires_grad_()
    local e = D.Exponential(rate):rsample({ 4 })
    local g = T.autograd.grad({ e:sum() }, { rate })[1]
    assert.is_true(T.allclose(g, -(e:detach() / 2):sum():view(1)))
    local r2 = T.tensor({ 3. }):float():requires_grad_()
    local gm = D.Gamma(T.tensor({ 2. }):float(), r2):rsample({ 4 })
    assert.is_true(T.allclose(T.autograd.grad({ gm:sum() }, { r2 })[1], -(gm:detach() / 3):sum():view(1)))
    assert.is_false(D.Bernoulli({ probs = 0.3 }).has_rsample)
    assert.is_true(D.Dirichlet(T.ones(3)).has_rsample)
    assert.has_error(function() D.Poisson(1.):rsample() end)
  end)
  it("expand broadcasts the parameters", function()
    local d = D.Normal(T.tensor({ 0., 1. }):float(), 1.):expand({ 3, 2 })
    assert.same({ 3, 2 }, d.batch_shape:totable())
    assert.same({ 3, 2 }, d:log_prob(T.zeros(3, 2)).shape:totable())
    local c = D.Categorical({ probs = T.tensor({ 0.5, 0.5 }):float() }):expand({ 4 })
    assert.same({ 4 }, c:sample().shape:totable())
    local m = D.MultivariateNormal(T.zeros(2), { covariance_matrix = T.eye(2) }):expand({ 3 })
    assert.same({ 3, 2 }, m:sample().shape:totable())
  end)
  it("Independent and TransformedDistribution", function()
    local base = D.Normal(T.zeros(2, 3), T.ones(2, 3))
    local ind = D.Independent(base, 1)
    assert.same({ 2 }, ind.batch_shape:totable())
    assert.same({ 3 }, ind.event_shape:totable())
    assert.is_true(T.allclose(ind:log_prob(T.zeros(2, 3)), base:log_prob(T.zeros(2, 3)):sum(-1)))
    local td = D.TransformedDistribution(D.Normal(0., 1.), { D.AffineTransform(1., 2.), D.ExpTransform() })
    local ln = D.LogNormal(1., 2.)
    local y = T.tensor({ 0.5, 2., 7. }):float()
    assert.is_true(T.allclose(td:log_prob(y), ln:log_prob(y)))
    assert.is_true(T.allclose(td:cdf(y), ln:cdf(y)))
    local sg = D.TransformedDistribution(D.Normal(0., 1.), D.SigmoidTransform())
    local p = T.tensor({ 0.2, 0.6 }):float()
    local want = D.Normal(0., 1.):log_prob((p / (1 - p)):log()) - (p * (1 - p)):log()
    assert.is_true(T.allclose(sg:log_prob(p), want, 1e-5, 1e-5))
  end)
end)

describe("distributions: validation and errors", function()
  it("parameters outside the constraints name the distribution and argument", function()
    assert.error_matches(function() D.Normal(0., -1.) end,
      "Normal: expected parameter scale to satisfy the constraint positive")
    assert.error_matches(function() D.Bernoulli({ probs = 1.5 }) end,
      "Bernoulli: expected parameter probs to satisfy the constraint unit_interval")
    assert.error_matches(function() D.Bernoulli({ probs = 0.5, logits = 0. }) end,
      "Bernoulli: either probs or logits must be specified, but not both")
    assert.error_matches(function() D.Gamma(-1., 1.) end, "Gamma: expected parameter concentration")
    assert.error_matches(function() D.Uniform(2., 1.) end, "Uniform: expected parameter low to be less than high")
    assert.error_matches(function() D.MultivariateNormal(T.zeros(2), { covariance_matrix = T.tensor({ { 1., 2. }, { 2., 1. } }):float() }) end,
      "MultivariateNormal: expected parameter covariance_matrix to satisfy the constraint positive_definite")
    assert.error_matches(function() D.Normal(0., 1., { zz = 1 }) end, "Normal: unknown option 'zz'")
    assert.error_matches(function() D.kl_divergence(D.Normal(0., 1.), D.Poisson(1.)) end,
      "kl_divergence: no KL%(p || q%) is implemented for p = Normal and q = Poisson")
  end)
  it("values outside the support", function()
    assert.error_matches(function() D.Exponential(1.):log_prob(T.tensor({ -1. }):float()) end,
      "Exponential: expected value argument to be within the support %(nonnegative%)")
    assert.error_matches(function() D.Categorical({ probs = T.tensor({ 0.5, 0.5 }):float() }):log_prob(T.tensor({ 0 }):float()) end,
      "Categorical: expected value argument to be within the support")
    -- validate_args = false skips the check
    local lp = D.Exponential(1., { validate_args = false }):log_prob(T.tensor({ -1. }):float())
    assert.near(1, lp:item(), 1e-6)
  end)
end)

describe("T.normal and the in-place samplers", function()
  it("T.normal(mean, std) in its tensor and number forms", function()
    T.manual_seed(1)
    local x = T.normal(T.full({ 20000 }, 3.), 2.)
    assert.near(3, x:mean():item(), 0.1)
    assert.near(2, x:std():item(), 0.05)
    local y = T.normal(T.zeros(2, 3), T.ones(3))
    assert.same({ 2, 3 }, y.shape:totable())
    assert.same({ 4 }, T.normal(0, 1, { 4 }).shape:totable())
    assert.equal(T.float64, T.normal(0, 1, { 2 }, { dtype = T.float64 }).dtype)
    T.manual_seed(4); local a = T.normal(T.zeros(3), 1.)
    T.manual_seed(4); local b = T.normal(T.zeros(3), 1.)
    assert.is_true(T.equal(a, b))
    -- torch: normal expects std >= 0.0, but found std -1
    assert.error_matches(function() T.normal(T.zeros(2), -1.) end, "normal: expected std >= 0.0, got %-1")
  end)
  it("cauchy_, log_normal_, geometric_", function()
    T.manual_seed(2)
    local c = T.empty(20001):cauchy_(1., 2.)
    assert.near(1, c:median():item(), 0.1)
    local l = T.empty(20000):double():log_normal_(0., 0.5)
    assert.near(math.exp(0.125), l:mean():item(), 0.02)
    assert.is_true(l:gt(0):all():item())
    local g = T.empty(20000):geometric_(0.25)
    assert.is_true(g:ge(1):all():item())
    assert.near(4, g:mean():item(), 0.1)
    assert.error_matches(function() T.empty(2):geometric_(1.5) end, "geometric_: p must be > 0 and < 1")
    assert.error_matches(function() T.empty(2):cauchy_(0, -1) end, "cauchy_: expects sigma > 0.0")
  end)
end)
