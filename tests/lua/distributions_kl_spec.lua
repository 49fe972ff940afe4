-- kl_divergence between distributions of different families: PyTorch
-- 1.13's closed forms and its infinite pairs (values from torch 1.13,
-- float64, the parameters below; torch/distributions/kl.py).
local T = require "ember"

describe("kl_divergence across families (torch 1.13)", function()
  local D = T.distributions
  local t = function(v) return T.tensor(v, { dtype = T.float64 }) end
  local mk = {
    Normal = function() return D.Normal(t { 0, 1 }, t { 1, 2 }) end,
    Laplace = function() return D.Laplace(t { 0, 1 }, t { 1, 2 }) end,
    Exponential = function() return D.Exponential(t { 0.5, 2 }) end,
    Gamma = function() return D.Gamma(t { 0.5, 2 }, t { 1, 3 }) end,
    Beta = function() return D.Beta(t { 0.5, 2 }, t { 1, 3 }) end,
    Uniform = function() return D.Uniform(t { 0.2, 0.5 }, t { 0.7, 0.9 }) end,
    Poisson = function() return D.Poisson(t { 0.5, 2 }) end,
    Bernoulli = function() return D.Bernoulli({ probs = t { 0.3, 0.8 } }) end,
  }
  local function close(got, want)
    local g = got:tolist()
    assert.equal(#want, #g)
    for i = 1, #want do
      if want[i] == 1 / 0 then assert.equal(1 / 0, g[i])
      else assert.is_true(math.abs(g[i] - want[i]) <= 1e-12 * math.max(1, math.abs(want[i])),
        string.format("%d: %.17g vs %.17g", i, g[i], want[i])) end
    end
  end
  local cases = {
    { "Bernoulli", "Poisson", { 0.09707985211309023, 0.9450798320138558 } },
    { "Beta", "Exponential", { 1.1666666666666663, 0.3417594692280551 } },
    { "Beta", "Gamma", { 0.2125510956980881, 0.321015405785114 } },
    { "Beta", "Normal", { 1.325791352644727, 1.8969923635526185 } },
    { "Beta", "Uniform", { 1 / 0, 1 / 0 } },
    { "Exponential", "Gamma", { 0.9371835201939609, 0.2662854486852042 } },
    { "Exponential", "Normal", { 3.2257913526447273, 1.3677328943245635 } },
    { "Gamma", "Exponential", { 0.8525372506459568, 0.16158277653996467 } },
    { "Gamma", "Normal", { 1.203328603290684, 1.1751490041978614 } },
    { "Laplace", "Normal", { 0.2257913526447275, 0.2257913526447275 } },
    { "Normal", "Laplace", { 0.07209320815813802, 0.07209320815813802 } },
    { "Uniform", "Beta", { 0.9585094828495981, 1.383586671519173 } },
    { "Uniform", "Exponential", { 1.6112943611198909, 1.6231435513142096 } },
    { "Uniform", "Gamma", { 1.2877272452143527, 1.1896933390681128 } },
    { "Uniform", "Normal", { 1.7237523804312846, 2.5412931123054396 } },
    { "Exponential", "Beta", { 1 / 0, 1 / 0 } },
    { "Exponential", "Uniform", { 1 / 0, 1 / 0 } },
    { "Gamma", "Beta", { 1 / 0, 1 / 0 } },
    { "Gamma", "Uniform", { 1 / 0, 1 / 0 } },
    { "Laplace", "Beta", { 1 / 0, 1 / 0 } },
    { "Laplace", "Exponential", { 1 / 0, 1 / 0 } },
    { "Laplace", "Gamma", { 1 / 0, 1 / 0 } },
    { "Laplace", "Uniform", { 1 / 0, 1 / 0 } },
    { "Normal", "Beta", { 1 / 0, 1 / 0 } },
    { "Normal", "Exponential", { 1 / 0, 1 / 0 } },
    { "Normal", "Gamma", { 1 / 0, 1 / 0 } },
    { "Normal", "Uniform", { 1 / 0, 1 / 0 } },
    { "Poisson", "Bernoulli", { 1 / 0, 1 / 0 } },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " || " .. c[2], function()
      local r = D.kl_divergence(mk[c[1]](), mk[c[2]]())
      assert.equal(T.float64, r.dtype)
      close(r, c[3])
    end)
  end

  it("is infinite where p has mass outside q's support, element by element", function()
    close(D.kl_divergence(D.Beta(t { 2 }, t { 3 }), D.Uniform(t { 0.1, 0 }, t { 1, 1 })),
      { 1 / 0, 0.23490664978800035 })
    close(D.kl_divergence(D.Uniform(t { 0.5, 0.5 }, t { 0.9, 1.5 }, { validate_args = false }),
      D.Beta(t { 2 }, t { 3 })), { 1.383586671519173, 1 / 0 })
    close(D.kl_divergence(D.Uniform(t { -1, 0.5 }, t { 0.9, 1.5 }), D.Exponential(t { 2 })),
      { 1 / 0, 1.3068528194400546 })
    close(D.kl_divergence(D.Uniform(t { -1, 0.5 }, t { 0.9, 1.5 }), D.Gamma(t { 2 }, t { 3 })),
      { 1 / 0, 0.8480041702215613 })
  end)

  it("differentiates through a cross-family KL", function()
    local loc = t { 0.3 }:requires_grad_()
    local kl = D.kl_divergence(D.Normal(loc, t { 1 }), D.Laplace(t { 0 }, t { 2 }))
    kl:sum():backward()
    -- torch 1.13: loc.grad = 0.1179114221889526
    local want = 0.1179114221889526
    assert.is_true(math.abs(loc.grad[1]:item() - want) < 1e-12)
  end)

  it("still refuses a pair PyTorch has no formula for", function()
    assert.has_error(function() D.kl_divergence(mk.Poisson(), mk.Normal()) end,
      "kl_divergence: no KL(p || q) is implemented for p = Poisson and q = Normal")
  end)
end)
