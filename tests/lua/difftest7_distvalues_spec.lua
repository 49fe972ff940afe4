-- Differences from PyTorch 1.13's torch.distributions values found by the
-- seventh round of differential tests (log_prob, entropy, moments, cdf,
-- icdf, KL and their gradients over extreme parameters; rsample
-- gradients; sampler moments), each with torch's value.
local T = require "ember"
local D = T.distributions

local function f64(x) return T.tensor(x, { dtype = T.float64 }) end
local nan = 0 / 0

describe("difftest round 7: distribution values (torch 1.13)", function()
  it("clamp's backward selects the gradient, so a NaN where the mask is off gives 0", function()
    -- torch: grad of (q.clamp(lo, hi) * [nan, 1, inf]).sum(), q = [-1, .5, 2],
    -- lo = 0, hi = 1 -> q: [0, 1, 0], lo: [nan, 0, 0], hi: [0, 0, inf]
    local q = f64 { -1., 0.5, 2. }:requires_grad_()
    local lo, hi = f64 { 0., 0., 0. }:requires_grad_(), f64 { 1., 1., 1. }:requires_grad_()
    local g = T.autograd.grad((q:clamp(lo, hi) * f64 { nan, 1., 1 / 0 }):sum(), { q, lo, hi })
    assert.same({ 0, 1, 0 }, g[1]:tolist())
    assert.is_true(g[2][1]:item() ~= g[2][1]:item())
    assert.same({ 0, 0 }, { g[2][2]:item(), g[2][3]:item() })
    assert.same({ 0, 0, 1 / 0 }, g[3]:tolist())
    -- number bounds: (q.clamp(0, 1) * nan).sum() -> [0, nan, 0]
    local g2 = T.autograd.grad((q:clamp(0, 1) * nan):sum(), { q })[1]
    assert.equal(0, g2[1]:item()); assert.equal(0, g2[3]:item())
    -- torch: Bernoulli(probs=[0, .3, 1], validate_args=False).log_prob of
    -- [[1, 0, 1], [nan, nan, nan]]: the gradient in probs is [0, nan, 0]
    -- (probs 0 and 1 are clamped: no gradient, even from the NaN rows)
    local p = f64 { 0., 0.3, 1. }:requires_grad_()
    local lp = D.Bernoulli({ probs = p, validate_args = false }):log_prob(f64 { { 1., 0., 1. }, { nan, nan, nan } })
    local gp = T.autograd.grad(lp:sum(), { p })[1]
    assert.equal(0, gp[1]:item()); assert.equal(0, gp[3]:item())
  end)

  it("Gamma.rsample is differentiable in concentration through PyTorch's implicit gradient", function()
    -- torch._standard_gamma_grad(a, x) at a = [.01, .3, 1, 2.5, 8.5, 30],
    -- x = [1e-3, .5, 1.5, 2, 9, 40] (the series, rational and saddle-point
    -- branches)
    local want = { 0.6354138007185822, 1.9920919270579531, 1.431010897885187, 0.9534439667878193,
      1.049169583383442, 1.1571513494803003 }
    local g = D._standard_gamma_grad(f64 { 0.01, 0.3, 1.0, 2.5, 8.5, 30.0 }, f64 { 1e-3, 0.5, 1.5, 2.0, 9.0, 40.0 })
    for i = 1, 6 do assert.near(want[i], g[i]:item(), 1e-12 * want[i]) end
    -- a draw x = g / rate: d x / d concentration = grad(a, x * rate) / rate, as torch's
    T.manual_seed(3)
    local a, r = f64 { 0.3, 2.0, 12.0 }:requires_grad_(), f64 { 1.5, 0.5, 2.0 }:requires_grad_()
    local x = D.Gamma(a, r):rsample({ 4 })
    assert.is_true(x.requires_grad)
    local ga = T.autograd.grad(x:sum(), { a })[1]
    local per = D._standard_gamma_grad(a:detach():expand(x.shape), x:detach() * r:detach()) / r:detach()
    assert.is_true(T.allclose(ga, per:sum(1), 1e-12, 1e-14))
    -- unbiased: the mean gradient of E[x] = a / rate in a is 1 / rate
    local xs = D.Gamma(a, r):rsample({ 20000 })
    local gm = T.autograd.grad(xs:sum(), { a })[1] / 20000
    for i, w in ipairs { 1 / 1.5, 2, 0.5 } do assert.near(w, gm[i]:item(), 0.03 * w) end
  end)

  it("Beta and Dirichlet rsample carry a gradient in their concentrations", function()
    -- torch: Beta(a, b).rsample().requires_grad is True; d E[x] / d a = b / (a + b)^2
    T.manual_seed(4)
    local b1, b0 = f64 { 0.5, 2.0 }:requires_grad_(), f64 { 1.0, 3.0 }:requires_grad_()
    local x = D.Beta(b1, b0):rsample({ 20000 })
    assert.is_true(x.requires_grad)
    local g = T.autograd.grad(x:sum(), { b1, b0 })
    for i, w in ipairs { 1 / 2.25, 3 / 25 } do assert.near(w, g[1][i]:item() / 20000, 0.05 * w) end
    for i, w in ipairs { -0.5 / 2.25, -2 / 25 } do assert.near(w, g[2][i]:item() / 20000, 0.05 * -w) end
    local c = f64 { 0.5, 2.0, 4.0 }:requires_grad_()
    local y = D.Dirichlet(c):rsample({ 20000 })
    assert.is_true(y.requires_grad)
    local gc = T.autograd.grad(y:select(-1, 1):sum(), { c })[1] / 20000
    for i, w in ipairs { 6 / 42.25, -0.5 / 42.25, -0.5 / 42.25 } do assert.near(w, gc[i]:item(), 0.05 * math.abs(w)) end
  end)
end)
