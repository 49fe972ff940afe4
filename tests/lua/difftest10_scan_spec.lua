-- Differences from PyTorch 1.13 found by the tenth round of differential
-- tests (scans and ordered search: cumsum, cumprod, cummax, cummin,
-- logcumsumexp, searchsorted, bucketize, diff), each with torch's value.
-- Positions are 1-based in ember (dims, indices, searchsorted's results):
-- those shifts are not differences.
local T = require "ember"
local U = require "specutil"

local inf, nan = math.huge, 0 / 0
local function t(v, o)
  o = o or {}
  o.dtype = o.dtype or T.float64
  return T.tensor(v, o)
end
local function shape(x) return table.concat(x.shape:totable(), ",") end

describe("difftest round 10 (scans, torch 1.13)", function()
  it("logcumsumexp's gradient before a +inf input is finite (torch's logcumsumexp_backward)", function()
    -- x = [1, inf, -inf, 2, inf]; (logcumsumexp(x, 0) * g).sum().backward()
    -- torch: [0.5, nan, 0, 0, nan] (the chain of logaddexp nodes gave nan at 1)
    local x = t({ 1, inf, -inf, 2, inf }, { requires_grad = true })
    local g = t { 0.5, -1, 2, 0.25, 1 };
    (T.logcumsumexp(x, 1) * g):sum():backward()
    U.near(x.grad, t { 0.49999999999999994, nan, 0, 0, nan }, 1e-12)
    -- along dim 0 of a 2-d input
    local x2 = t({ { 0.5, 3 }, { inf, -1 }, { 2, 0 } }, { requires_grad = true })
    local g2 = t { { 1, -2 }, { 0.5, 1.5 }, { -1, 0.25 } };
    (T.logcumsumexp(x2, 1) * g2):sum():backward()
    U.near(x2.grad, t { { 1, -0.2929194269740112 }, { nan, 0.031266271329517425 }, { 0, 0.011653155644493469 } }, 1e-12)
  end)

  it("logcumsumexp's gradient and second derivative on finite input (one node)", function()
    local x = t({ 0.5, -1, 2, 0 }, { requires_grad = true })
    local g = t { 1, -1, 0.5, 2 }
    local y = T.logcumsumexp(x, 1)
    assert.truthy(tostring(y.grad_fn):find("Logcumsumexp"))
    local gr = T.autograd.grad({ (y * g):sum() }, { x }, { create_graph = true })[1]
    U.near(gr, t { 0.5869601389063341, -0.09216165035351484, 1.8129983630669864, 0.19220314838019445 }, 1e-12)
    local s2 = (gr * g):sum()
    s2:backward()
    U.near(x.grad, t { -0.15254545266718766, 0.1502858094234854, -0.2533044212351795, 0.2555640644788819 }, 1e-12)
    -- float32 keeps its dtype: torch [2.3222, 0.0399, 1.5753, 0.0626]
    local xf = T.tensor({ 1.5, -2, 3, 0.5 }, { requires_grad = true })
    T.logcumsumexp(xf, 1):sum():backward()
    assert.equal(T.float32, xf.grad.dtype)
    U.close_list(xf.grad, { 2.3222, 0.0399, 1.5753, 0.0626 }, 1e-4, "float32 grad")
  end)

  it("diff of order 0 is the input, prepend/append ignored (as torch and NumPy)", function()
    -- torch.diff(x, 0, -1, zeros(2, 1), ones(2, 2)) -> x, shape [2, 3]
    local x = t { { 1, 4, 9 }, { 2, 3, 5 } }
    local r = T.diff(x, 0, -1, T.zeros(2, 1, { dtype = T.float64 }), T.ones(2, 2, { dtype = T.float64 }))
    assert.equal("2,3", shape(r))
    U.near(r, x, 0)
    local r2 = x:diff { n = 0, append = T.ones(2, 2, { dtype = T.float64 }) }
    assert.equal("2,3", shape(r2))
  end)
end)
