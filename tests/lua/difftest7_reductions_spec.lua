-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests on reductions (ember against torch on the same inputs), each with
-- torch's value or error. Positions are 1-based in ember (dims, indices):
-- those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("difftest round 7: reductions (torch 1.13)", function()

  it("aminmax of an empty dim raises under its own name", function()
    -- torch.aminmax(torch.zeros(0, 3)): aminmax(): cannot compute aminmax over
    -- an empty dimension as the operation has no identity.
    -- torch.aminmax(torch.zeros(0, 3), dim=0): aminmax: Expected reduction dim 0
    -- to have non-zero size.
    local e = T.zeros({ 0, 3 })
    local ok, msg = pcall(T.aminmax, e)
    assert.is_false(ok)
    assert.equal("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
      tostring(msg))
    ok, msg = pcall(T.aminmax, e, { dim = 1 })
    assert.is_false(ok)
    assert.equal("aminmax(): Expected reduction dim 1 to have non-zero size.", tostring(msg))
    err(function() T.aminmax(e, 3) end, "aminmax: dimension 3 out of range")
    -- a kept empty dim is fine: torch.aminmax(torch.zeros(0, 3), dim=1) -> two empty
    local mn, mx = T.aminmax(e, { dim = 2 })
    assert.same({ 0 }, mn:size():totable())
    assert.same({ 0 }, mx:size():totable())
  end)

  it("var/std refuse unbiased and correction together", function()
    -- x.var(1, unbiased=False, correction=1): var() received an invalid
    -- combination of arguments (ember used correction and dropped unbiased)
    local x = T.arange(6, { dtype = T.float64 }):reshape(2, 3)
    err(function() x:var(2, { unbiased = false, correction = 1 }) end,
      "var: pass either unbiased or correction, not both")
    err(function() x:std { unbiased = true, correction = 0 } end, "std: pass either unbiased or correction")
    err(function() T.var_mean(x, { unbiased = true, correction = 1 }) end, "var_mean: pass either")
    err(function() T.std_mean(x, 1, { unbiased = false, correction = 0 }) end, "std_mean: pass either")
    -- each alone: x.var(1, unbiased=False) = [2/3, 2/3]; x.var(1, correction=2) = [2, 2]
    assert.same({ 2 / 3, 2 / 3 }, U.flat(x:var(2, { unbiased = false })))
    assert.same({ 2, 2 }, U.flat(x:var(2, { correction = 2 })))
  end)

  it("logcumsumexp of float32 scans in double", function()
    -- torch.linspace(-5, 5, 100001).logcumsumexp(0)[-1] = 14.210345268249512
    -- (float64 reference 14.210344997; ember's float scan gave 14.2110586)
    local x = T.linspace(-5, 5, 100001, { dtype = T.float32 })
    local r = x:logcumsumexp(1)
    assert.equal(T.float32, r.dtype)
    assert.is_true(math.abs(r[100001]:item() - 14.210344997000774) < 2e-6)
    -- the float64 path is unchanged; the gradient reaches float32 input
    local y = T.tensor({ 1, 2, 3 }, { dtype = T.float32, requires_grad = true })
    y:logcumsumexp(1):sum():backward()
    assert.equal(T.float32, y.grad.dtype)
    -- torch: [1.3590, 0.9758, 0.6652]
    local g = U.flat(y.grad)
    assert.is_true(math.abs(g[1] - 1.3590) < 1e-4 and math.abs(g[3] - 0.6652) < 1e-4)
  end)
end)
