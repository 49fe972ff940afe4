-- T.distributions, second round (lua/ember/distributions.lua;
-- docs/distributions.md): the fixes from a differential test against
-- PyTorch 1.13. Every expected value below was computed with torch 1.13
-- (float64) and pasted as a literal; errors are checked by a fragment of
-- ember's message for the case where torch raises.
local T = require "ember"
local D = T.distributions

local function f(x) return T.tensor(x, { dtype = T.float64 }) end
local F64 = { dtype = T.float64 }
local function vals(t)
  local out = {}
  local function rec(x)
    if type(x) == "table" then for _, y in ipairs(x) do rec(y) end else out[#out + 1] = x end
  end
  local l = t:detach():double():tolist()
  if type(l) ~= "table" then l = { l } end
  rec(l)
  return out
end
-- t against torch's values (a list, flattened) and shape
local function close(t, want, shape, tol)
  assert(T.is_tensor(t), "expected a tensor")
  if shape then assert.same(shape, t.shape:totable()) end
  local got = vals(t)
  assert.equal(#want, #got, "element count")
  for i, b in ipairs(want) do
    local a = got[i]
    if b ~= b then assert(a ~= a, string.format("[%d]: got %.17g, want nan", i, a))
    elseif b == 1 / 0 or b == -1 / 0 then assert.equal(b, a)
    else
      local e = (tol or 1e-12) * math.max(1, math.abs(b))
      assert(math.abs(a - b) <= e, string.format("[%d]: got %.17g, want %.17g", i, a, b))
    end
  end
end
local nan, inf = 0 / 0, 1 / 0

describe("distributions (second round, against PyTorch 1.13)", function()
  -- numbers become float64 parameters, as in the torch session (default
  -- dtype float64) that gave the values
  local saved
  setup(function() saved = T.get_default_dtype(); T.set_default_dtype(T.float64) end)
  teardown(function() T.set_default_dtype(saved) end)

  it("Uniform: the support is closed, the density that of [low, high)", function()
    local u = D.Uniform(f({ 0., 1. }), f({ 1., 3. }))
    close(u:log_prob(f({ 1., 3. })), { -inf, -inf }, { 2 })
    close(u:log_prob(f({ 0., 2. })), { 0, -0.69314718055994529 }, { 2 })
    close(u:cdf(f({ 1., 3. })), { 1, 1 }, { 2 })
    assert.error_matches(function() D.Uniform(0., 1.):log_prob(f(1.0000001)) end,
      "Uniform: expected value argument to be within the support %(interval%)")
    close(u.mode, { nan, nan }, { 2 })
  end)

  it("Bernoulli || Bernoulli: infinite where q has no mass and p has", function()
    local kl = D.kl_divergence(D.Bernoulli(f({ 0.3, 0., 1., 0.3, 0. })), D.Bernoulli(f({ 0., 0., 0., 1., 1. })))
    close(kl, { inf, 0, inf, inf, inf }, { 5 })
    close(D.kl_divergence(D.Bernoulli(f({ 1., 0.3 })), D.Bernoulli(f({ 1., 0.6 }))), { 0, 0.1837868973868122 }, { 2 })
    -- parameters of different shapes broadcast (torch 1.13's masked
    -- assignment raises here); the values are torch's for equal shapes
    close(D.kl_divergence(D.Bernoulli(f({ 0.3, 0.6 })), D.Bernoulli(f({ 0. }))), { inf, inf }, { 2 })
  end)

  it("SigmoidTransform clamps to [finfo.tiny, 1 - finfo.eps]", function()
    local s = D.SigmoidTransform()
    close(s:inv(f({ 0., 1., 1e-320 })), { -708.39641853226408, 36.043653389117154, -708.39641853226408 }, { 3 })
    close(s:forward(f({ -800., 800., 0. })), { 2.2250738585072014e-308, 0.99999999999999978, 0.5 }, { 3 })
    close(s(T.tensor({ -800., 800. }, { dtype = T.float32 })), { 1.1754943508222875e-38, 0.99999988079071045 }, { 2 })
    local sig = D.TransformedDistribution(D.Normal(0., 1.), { D.SigmoidTransform() })
    close(sig:log_prob(f({ 1e-320, 0., 1e-20, 1. })),
      { -250205.26541467026, -250205.26541467026, -1015.2468587690034, -614.44775996149576 }, { 4 }, 1e-10)
  end)

  it("TransformedDistribution validates values against the last transform's codomain", function()
    local sig = D.TransformedDistribution(D.Normal(0., 1.), { D.SigmoidTransform() })
    assert.error_matches(function() sig:log_prob(f(1.5)) end,
      "TransformedDistribution: expected value argument to be within the support %(unit_interval%)")
    assert.equal("unit_interval", sig.support.name)
    local ex = D.TransformedDistribution(D.Normal(0., 1.), { D.ExpTransform() })
    assert.error_matches(function() ex:log_prob(f(-1.)) end,
      "TransformedDistribution: expected value argument to be within the support %(positive%)")
    -- the last codomain is real: the nan reaching the base is the base's error
    local ea = D.TransformedDistribution(D.Normal(0., 1.), { D.ExpTransform(), D.AffineTransform(1., 2.) })
    assert.error_matches(function() ea:log_prob(f(0.5)) end, "Normal: expected value argument to be within the support %(real%)")
    close(ea:log_prob(f(1.5)), { -1.1866973804811303 }, {})
    assert.equal(D.constraints.real, D.TransformedDistribution(D.Normal(0., 1.), {}).support)
    -- with validation off the base's own check still runs (the nan of log(-1))
    local off = D.TransformedDistribution(D.Normal(0., 1.), { D.ExpTransform() }, { validate_args = false })
    assert.error_matches(function() off:log_prob(f(-1.)) end, "Normal: expected value argument")
    off = D.TransformedDistribution(D.Normal(0., 1., { validate_args = false }), { D.ExpTransform() }, { validate_args = false })
    close(off:log_prob(f(-1.)), { nan }, {})
  end)

  it("AffineTransform with event_dim = 1: shapes, log_prob through Independent", function()
    local ev = D.TransformedDistribution(D.Normal(T.zeros(3, 2, F64), T.ones(3, 2, F64)),
      { D.AffineTransform(f({ 1., -1. }), f({ 2., 0.5 }), { event_dim = 1 }) })
    assert.same({ 3 }, ev.batch_shape:totable())
    assert.same({ 2 }, ev.event_shape:totable())
    assert.equal("Independent", ev.base_dist.__name)
    assert.equal(1, ev.base_dist.reinterpreted_batch_ndims)
    close(ev:log_prob(f({ { 0., 1. }, { 2., -1. }, { 3., 0.5 } })),
      { -9.9628770664093445, -1.9628770664093453, -6.8378770664093445 }, { 3 })
    assert.same({ 4, 3, 2 }, ev:sample({ 4 }).shape:totable())
    local one = D.TransformedDistribution(D.Normal(T.zeros(2, F64), T.ones(2, F64)), { D.AffineTransform(1., 2., { event_dim = 1 }) })
    assert.same({}, one.batch_shape:totable())
    assert.same({ 2 }, one.event_shape:totable())
    close(one:log_prob(T.zeros(2, F64)), { -3.4741714275292361 }, {})
    -- a tensor loc broadcasts the base to its shape
    local ev2 = D.TransformedDistribution(D.Normal(0., 1.), { D.AffineTransform(f({ 1., -1. }), 2.) })
    assert.same({ 2 }, ev2.batch_shape:totable())
    assert.same({ 2 }, ev2.base_dist.batch_shape:totable())
    close(ev2:log_prob(f({ 0., 1. })), { -1.7370857137646181, -2.1120857137646181 }, { 2 })
    assert.error_matches(function() D.AffineTransform(0., 1., { event_dim = -1 }) end,
      "AffineTransform: event_dim must be a non%-negative integer")
    assert.error_matches(function() D.AffineTransform(0., 1., { evnt_dim = 1 }) end, "AffineTransform: unknown option 'evnt_dim'")
  end)

  it("cdf/icdf with a tensor AffineTransform scale use its sign elementwise", function()
    local at = D.TransformedDistribution(D.Normal(T.zeros(3, F64), T.ones(3, F64)),
      { D.AffineTransform(f({ 1., 2., 0. }), f({ .5, -2., 0. })) })
    close(at:cdf(f({ 0.5, 1.0, 3.0 })), { 0.15865525393145707, 0.30853753872598688, 0.5 }, { 3 })
    close(at:icdf(f({ 0.3, 0.3, 0.3 })), { 0.73779974364597956, 0.95119897458391867, 0 }, { 3 })
    local neg = D.TransformedDistribution(D.Normal(0., 1.), { D.AffineTransform(0., -2.), D.ExpTransform() })
    close(neg:cdf(f({ 0.5, 2. })), { 0.36445584473653569, 0.63554415526346431 }, { 2 })
    close(neg:icdf(f({ 0.25, 0.9 })), { 0.25950495026507125, 12.976021199118009 }, { 2 })
  end)

  it("expand of LogNormal, Independent and TransformedDistribution expands the base", function()
    local ln = D.LogNormal(f({ 0., 1. }), f({ 1., 0.5 })):expand({ 3, 2 })
    assert.same({ 3, 2 }, ln.batch_shape:totable())
    assert.same({ 3, 2 }, ln.base_dist.batch_shape:totable())
    assert.same({ 3, 2 }, ln.loc.shape:totable())
    assert.same({ 5, 3, 2 }, ln:sample({ 5 }).shape:totable())
    assert.same({ 2, 3 }, D.LogNormal(0., 1.):expand({ 3 }):sample({ 2 }).shape:totable())
    local ind = D.Independent(D.Normal(T.zeros(1, 2, F64), T.ones(1, 2, F64)), 1):expand({ 4 })
    assert.same({ 4 }, ind.batch_shape:totable())
    assert.same({ 2 }, ind.event_shape:totable())
    assert.same({ 4, 2 }, ind.base_dist.batch_shape:totable())
    assert.same({ 2, 4, 2 }, ind:sample({ 2 }).shape:totable())
    local td = D.TransformedDistribution(D.Normal(T.zeros(2, F64), T.ones(2, F64)), { D.ExpTransform() }):expand({ 3, 2 })
    assert.same({ 3, 2 }, td.base_dist.batch_shape:totable())
    assert.same({ 2, 3, 2 }, td:sample({ 2 }).shape:totable())
  end)

  it("MultivariateNormal validates its matrix with PyTorch's constraints", function()
    local z = T.zeros(2, F64)
    assert.error_matches(function() D.MultivariateNormal(z, { covariance_matrix = f({ { 2., .5 }, { 0., 1. } }) }) end,
      "MultivariateNormal: expected parameter covariance_matrix to satisfy the constraint positive_definite")
    assert.error_matches(function() D.MultivariateNormal(z, { precision_matrix = f({ { 2., .5 }, { 0., 1. } }) }) end,
      "MultivariateNormal: expected parameter precision_matrix to satisfy the constraint positive_definite")
    assert.error_matches(function() D.MultivariateNormal(z, { covariance_matrix = f({ { 1., 2. }, { 2., 1. } }) }) end,
      "constraint positive_definite")
    assert.error_matches(function()
      D.MultivariateNormal(T.zeros(2, 2, F64), { covariance_matrix = f({ { { 1., 0. }, { 0., 1. } }, { { 1., 2. }, { 2., 1. } } }) })
    end, "constraint positive_definite")
    assert.error_matches(function() D.MultivariateNormal(z, { scale_tril = f({ { 2., .5 }, { 0., 1. } }) }) end,
      "constraint lower_cholesky")
    assert.error_matches(function() D.MultivariateNormal(z, { scale_tril = f({ { 2., 0. }, { 0.3, -1. } }) }) end,
      "constraint lower_cholesky")
    -- within isclose's tolerance (atol 1e-6, rtol 1e-5) is symmetric
    close(D.MultivariateNormal(z, { covariance_matrix = f({ { 2., .5 }, { .5 + 5e-7, 1. } }) }):log_prob(z),
      { -2.1176848175198222 }, {}, 1e-9)
    -- validation off: the lower triangle is used, as linalg.cholesky
    close(D.MultivariateNormal(z, { covariance_matrix = f({ { 2., .5 }, { 0.3, 1. } }), validate_args = false })
      :log_prob(f({ 1., 2. })), { -4.2033135041925416 }, {})
  end)

  it("Poisson's support rejects inf and non-integers", function()
    assert.error_matches(function() D.Poisson(2.):log_prob(f(1 / 0)) end,
      "Poisson: expected value argument to be within the support %(nonnegative_integer%)")
    assert.error_matches(function() D.Poisson(2.):log_prob(f(2.5)) end, "nonnegative_integer")
    close(D.Poisson(2.):log_prob(f(3.)), { -1.7123179275482192 }, {})
    assert.error_matches(function() D.Categorical({ probs = f({ 0.5, 0.5 }) }):log_prob(f(1 / 0)) end,
      "Categorical: expected value argument to be within the support")
  end)

  it("Categorical validates probs after normalising", function()
    assert.error_matches(function() D.Categorical({ probs = f({ { 0.2, 0.8 }, { 0., 0. } }) }) end,
      "Categorical: expected parameter probs to satisfy the constraint simplex")
    assert.error_matches(function() D.Categorical({ probs = f({ -1., 2. }) }) end, "constraint simplex")
    close(D.Categorical({ probs = f({ 2., 6. }) }).probs, { 0.25, 0.75 }, { 2 })
  end)

  it("mode, as PyTorch 1.13's (Categorical: 1-based ids)", function()
    close(D.Bernoulli(f({ 0.2, 0.5, 0.7, 0. })).mode, { 0, nan, 1, 0 }, { 4 })
    close(D.Beta(f({ 2., 0.5, 1., 0.5, 3. }), f({ 3., 0.5, 1., 2., 0.5 })).mode,
      { 0.33333333333333331, 1, nan, 0, 1 }, { 5 })
    local cm = D.Categorical({ probs = f({ { 0.2, 0.5, 0.3 }, { 0.4, 0.2, 0.4 } }) }).mode
    assert.equal(T.int64, cm.dtype)
    close(cm, { 1 + 1, 0 + 1 }, { 2 })
    close(D.Dirichlet(f({ { 2., 3., 4. }, { 0.5, 0.2, 0.9 }, { 0.5, 2., 1. }, { 0.5, 1., 1. } })).mode,
      { 0.16666666666666666, 0.33333333333333331, 0.5, 1, 0, 0, 0, 1, 0, nan, nan, nan }, { 4, 3 })
    close(D.Exponential(f({ 2., 0.5 })).mode, { 0, 0 }, { 2 })
    close(D.Gamma(f({ 2., 0.5, 3. }), f({ 1., 2., 4. })).mode, { 1, 0, 0.5 }, { 3 })
    close(D.Laplace(f({ 1., -2. }), 1.).mode, { 1, -2 }, { 2 })
    close(D.LogNormal(f({ 0., 1. }), f({ 1., 0.5 })).mode, { 0.36787944117144233, 2.1170000166126748 }, { 2 })
    close(D.MultivariateNormal(f({ 1., 2. }), { covariance_matrix = T.eye(2, { dtype = T.float64 }) }).mode, { 1, 2 }, { 2 })
    close(D.Poisson(f({ 2.5, 0.3, 4. })).mode, { 2, 0, 4 }, { 3 })
    close(D.Independent(D.Gamma(f({ { 2., 3. } }), f({ { 1., 2. } })), 1).mode, { 1, 1 }, { 1, 2 })
    close(D.Normal(f({ 1., 2. }), 1.).mode, { 1, 2 }, { 2 })
    assert.error_matches(function() return D.TransformedDistribution(D.Normal(0., 1.), { D.ExpTransform() }).mode end,
      "TransformedDistribution: mode is not implemented")
    -- the corner rows of Dirichlet's mode have a zero gradient, as torch's
    local a = f({ { 0.5, 0.2, 0.9 }, { 2., 3., 4. } }):requires_grad_()
    local g = T.autograd.grad({ D.Dirichlet(a).mode:sum() }, { a })[1]
    close(g:select(1, 1), { 0, 0, 0 }, { 3 })
  end)

  it("Poisson || Poisson", function()
    close(D.kl_divergence(D.Poisson(f({ 1., 3. })), D.Poisson(f({ 2., 0.5 }))),
      { 0.30685281944005471, 2.8752784076841653 }, { 2 })
    close(D.kl_divergence(D.Poisson(f({ 0. })), D.Poisson(f({ 2. }))), { nan }, { 1 })
  end)
end)
