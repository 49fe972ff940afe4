-- Differences from PyTorch 1.13's torch.distributions found by the sixth
-- round of differential tests (API, shapes, validation), each with torch's
-- value or error. Categorical's ids are 1-based in ember (torch's 0..K-1):
-- that shift is not a difference.
local T = require "ember"
local U = require "specutil"
local err = U.err
local D = T.distributions

local function shape(t) return table.concat(t:size(), ",") end

describe("difftest round 6: distributions API and validation (torch 1.13)", function()
  it("Bernoulli(probs, opts) and Categorical(probs, opts) honour validate_args", function()
    -- torch: Categorical(tensor([-1., 2.]), validate_args=False).probs -> tensor([-1., 2.])
    local c = D.Categorical(T.tensor { -1., 2. }, { validate_args = false })
    assert.same({ -1, 2 }, c.probs:tolist())
    -- Categorical(tensor([.3, .7]), validate_args=False).log_prob(tensor([-1]))
    -- -> RuntimeError index -1 is out of bounds (gather), not a support error
    err(function() c:log_prob(T.tensor { 0 }) end, "gather")
    -- Bernoulli(tensor(.3), validate_args=False).log_prob(tensor([2., -1, .5]))
    -- -> [-2.0512707, 0.4906229, -0.7803239]
    local b = D.Bernoulli(T.tensor(0.3), { validate_args = false })
    local lp = b:log_prob(T.tensor { 2., -1., 0.5 })
    assert.near(-2.0512707233428955, lp[1]:item(), 1e-6)
    assert.near(0.490622878074646, lp[2]:item(), 1e-6)
    assert.near(-0.78032386302948, lp[3]:item(), 1e-6)
    assert.equal(2, D.Bernoulli(2, { validate_args = false }).probs:item())
    -- still validated by default; probs given twice is refused as torch's
    err(function() D.Categorical(T.tensor { -1., 2. }) end, "constraint simplex")
    err(function() D.Bernoulli(T.tensor { 0.5 }, { logits = T.tensor { 1. } }) end,
      "either probs or logits must be specified, but not both")
    err(function() D.Bernoulli(T.tensor { 0.5 }, { foo = 1 }) end, "unknown option 'foo'")
  end)

  it("log_prob refuses a value that does not broadcast with batch_shape + event_shape", function()
    -- torch: ValueError Value is not broadcastable with batch_shape+event_shape:
    -- torch.Size([2]) vs torch.Size([3]).
    err(function() D.Normal(T.zeros(3), T.ones(3)):log_prob(T.zeros(2)) end,
      "Normal: value is not broadcastable with batch_shape + event_shape: [2] vs [3]")
    err(function() D.Bernoulli(T.ones(3) / 3):log_prob(T.zeros(4)) end,
      "Bernoulli: value is not broadcastable with batch_shape + event_shape: [4] vs [3]")
    err(function() D.Categorical(T.ones(2, 3) / 3):log_prob(T.ones(4):long()) end,
      "[4] vs [2]")
    err(function() D.Dirichlet(T.ones(2, 3)):log_prob(T.ones(3, 3) / 3) end, "[3, 3] vs [2, 3]")
    err(function()
      D.MultivariateNormal(T.zeros(2, 3), { covariance_matrix = T.eye(3) }):log_prob(T.zeros(4, 3))
    end, "[4, 3] vs [2, 3]")
    -- without validation the broadcast itself fails, naming the value
    err(function() D.Bernoulli(T.ones(3) / 3, { validate_args = false }):log_prob(T.zeros(4)) end,
      "the value and the batch shape cannot be broadcast")
    -- values that broadcast are taken: torch shapes (2, 3), (5, 2), (4, 2)
    assert.equal("2,3", shape(D.Normal(T.zeros(3), T.ones(3)):log_prob(T.zeros(2, 1))))
    assert.equal("5,2", shape(D.MultivariateNormal(T.zeros(2, 3),
      { covariance_matrix = T.eye(3) }):log_prob(T.zeros(5, 1, 3))))
    assert.equal("4,2", shape(D.Independent(D.Normal(T.zeros(2, 3), T.ones(2, 3)), 1):log_prob(T.zeros(4, 1, 3))))
  end)

  it("Categorical validates its logits after normalising", function()
    -- torch: Categorical(logits=tensor([-inf, -inf])) and ([inf, 0.]) raise
    -- ValueError ... to satisfy the constraint IndependentConstraint(Real(), 1)
    err(function() D.Categorical({ logits = T.tensor { -1 / 0, -1 / 0 } }) end,
      "Categorical: expected parameter logits to satisfy the constraint real")
    err(function() D.Categorical({ logits = T.tensor { 1 / 0, 0. } }) end, "constraint real")
    -- one -inf logit is a class of probability 0: taken
    local c = D.Categorical({ logits = T.tensor { -1 / 0, 0. } })
    assert.same({ 0, 1 }, c.probs:tolist())
  end)

  it("enumerate_support and has_enumerate_support (Bernoulli, Categorical, Independent)", function()
    -- torch: Bernoulli(tensor([.2, .3, .4])).enumerate_support() -> (2, 3) float32
    -- [[0,0,0],[1,1,1]]; expand=False -> (2, 1)
    local b = D.Bernoulli(T.tensor { .2, .3, .4 })
    assert.is_true(b.has_enumerate_support)
    local e = b:enumerate_support()
    assert.equal("2,3", shape(e)); assert.equal(T.float32, e.dtype)
    assert.same({ { 0, 0, 0 }, { 1, 1, 1 } }, e:tolist())
    assert.equal("2,1", shape(b:enumerate_support(false)))
    -- Categorical(ones(2, 3)).enumerate_support() -> (3, 2) int64 ids (0..2 in torch)
    local ce = D.Categorical(T.ones(2, 3)):enumerate_support()
    assert.equal("3,2", shape(ce)); assert.equal(T.int64, ce.dtype)
    assert.same({ { 1, 1 }, { 2, 2 }, { 3, 3 } }, ce:tolist())
    assert.equal("3,1", shape(D.Categorical(T.ones(2, 3)):enumerate_support(false)))
    -- Normal: has_enumerate_support False, enumerate_support NotImplementedError
    assert.is_false(D.Normal(0., 1.).has_enumerate_support)
    err(function() D.Normal(0., 1.):enumerate_support() end, "Normal: enumerate_support is not implemented")
    -- Independent: only with reinterpreted_batch_ndims 0 (torch: (2, 2, 3))
    assert.is_false(D.Independent(D.Bernoulli(T.ones(2, 3) / 2), 1).has_enumerate_support)
    assert.is_true(D.Independent(D.Bernoulli(T.ones(2, 3) / 2), 0).has_enumerate_support)
    assert.equal("2,2,3", shape(D.Independent(D.Bernoulli(T.ones(2, 3) / 2), 0):enumerate_support()))
    err(function() D.Independent(D.Bernoulli(T.ones(2, 3) / 2), 1):enumerate_support() end,
      "cartesian product is not implemented")
  end)

  it("arg_constraints, as PyTorch's class attribute", function()
    -- torch: Normal.arg_constraints == {'loc': real, 'scale': positive}
    assert.equal("real", D.Normal.arg_constraints.loc.name)
    assert.equal("positive", D.Normal(0., 1.).arg_constraints.scale.name)
    assert.equal("nonnegative", D.Poisson.arg_constraints.rate.name)
    assert.equal("simplex", D.Categorical.arg_constraints.probs.name)
    assert.equal("lower_cholesky", D.MultivariateNormal.arg_constraints.scale_tril.name)
    assert.equal("positive_definite", D.MultivariateNormal.arg_constraints.covariance_matrix.name)
    -- Uniform's low and high are dependent constraints (not checkable alone)
    assert.equal("dependent", D.Uniform.arg_constraints.low.name)
    err(function() D.Uniform.arg_constraints.low.check(T.zeros(1)) end, "dependent constraint")
    assert.is_true(D.Normal.arg_constraints.scale.check(T.tensor { 1., -1. }):equal(T.tensor { true, false }))
  end)
end)
