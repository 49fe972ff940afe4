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

describe("difftest round 7: reductions, complex input and options (torch 1.13)", function()

  local function cplx()
    local D = function(v) return T.tensor(v, { dtype = T.float64 }) end
    return T.complex(D { { 1, 3, 0 }, { 0.5, 1, -1 } }, D { { 2, -1, -2 }, { 0, 1, -1 } })
  end

  it("var_mean/std_mean of a complex tensor: the real variance and the complex mean", function()
    -- torch.std_mean(C, 0) = ([1.4577, 2., 1.], [0.75+1.j, 2.+0.j, -0.5-1.5j])
    -- (ember raised: std and var only support floating point and complex dtypes)
    local C = cplx()
    local s, m = T.std_mean(C, 1)
    assert.equal(T.float64, s.dtype)
    assert.equal(T.complex128, m.dtype)
    local sv = U.flat(s)
    assert.is_true(math.abs(sv[1] - 1.4577379737113252) < 1e-12 and sv[2] == 2 and sv[3] == 1)
    assert.same({ 0.75, 1, 2, 0, -0.5, -1.5 }, U.flat(T.view_as_real(m)))
    -- torch.var_mean(C, 1, keepdim=True, correction=0)[0] = [[4.4444], [1.3889]]
    local v, m2 = C:var_mean(2, { keepdim = true, correction = 0 })
    assert.same({ 2, 1 }, v:size():totable())
    assert.same({ 2, 1 }, m2:size():totable())
    assert.is_true(math.abs(v[1][1]:item() - 40 / 9) < 1e-12)
    -- the real op's errors, without complex.lua's position in front
    local ok, e = pcall(T.var_mean, C, 4)
    assert.is_false(ok)
    assert.equal(1, tostring(e):find("var_mean: dimension 4 out of range", 1, true))
    ok, e = pcall(C.var, C, 4)
    assert.equal(1, tostring(e):find("var: dimension 4 out of range", 1, true))
  end)

  it("quantile with an empty q tensor has a size-0 first dim", function()
    -- A.quantile(torch.tensor([], dtype=torch.float64), 1).shape = (0, 3);
    -- with keepdim over dim 0: (0, 1, 4); no dim: (0,) (ember: an error from cat)
    local A = T.arange(12, { dtype = T.float64 }):reshape(3, 4)
    local q = T.tensor({}, { dtype = T.float64 })
    assert.same({ 0, 3 }, A:quantile(q, 2):size():totable())
    assert.same({ 0, 1, 4 }, A:quantile(q, 1, { keepdim = true }):size():totable())
    assert.same({ 0 }, A:nanquantile(q):size():totable())
  end)

  it("norm's dtype converts the input first", function()
    -- torch.norm(F, 2, 1, dtype=torch.float64)[0] = 4.0401113846400358 (float64
    -- squares of the float32 values; ember gave 4.0401114129293312, the float
    -- sum rounded); torch.norm(int32 [[5, 0, -3], [7, 1, 0]], 2, 1,
    -- dtype=torch.float64) = [5.8310, 7.0711] (ember refused the int input)
    local F = T.tensor({ { 1.5, -2.25, 3., 0.1 } }, { dtype = T.float32 })
    local r = F:norm(2, 2, false, { dtype = T.float64 })
    assert.equal(T.float64, r.dtype)
    assert.equal(4.0401113846400358, r[1]:item())
    local I = T.tensor({ { 5, 0, -3 }, { 7, 1, 0 } }, { dtype = T.int32 })
    local n = I:norm(2, 2, false, { dtype = T.float64 })
    assert.is_true(math.abs(n[1]:item() - math.sqrt(34)) < 1e-14)
    -- torch.norm(F, 2, 1, dtype=torch.int64): norm(): the desired output dtype
    -- should be either floating point or complex. Got Long instead.
    err(function() F:norm(2, 2, false, { dtype = T.int64 }) end,
      "norm(): the desired output dtype should be either floating point or complex. Got Long instead.")
    err(function() I:norm(2, 2) end, "norm(): input dtype should be either floating point or complex. Got Int")
    -- the gradient reaches the float32 input
    local x = F:clone():requires_grad_(true)
    x:norm(2, 2, false, { dtype = T.float64 }):sum():backward()
    assert.equal(T.float32, x.grad.dtype)
  end)
end)

describe("difftest round 7: mode at scale (torch 1.13)", function()
  it("mode of 200000 values runs in n log n (it compared every pair)", function()
    -- torch.arange(200000.).remainder(37).mode() takes a few ms; ember tried
    -- to allocate 40000000000 bytes (an n x n comparison)
    local x = T.arange(200000, { dtype = T.float64 }):remainder(37)
    local v, i = x:mode()
    assert.equal(0, v:item())
    assert.equal(199986, i:item()) -- the last occurrence (37 * 5405), 1-based
    -- ties: the smallest value (NaNs one value, sorted last); the gradient
    -- goes to the returned index. torch: values [1., 2.], indices [3, 4]
    local y = T.tensor({ { 3, 3, 1, 1, 2 }, { 0 / 0, 1, 0 / 0, 2, 2 } }, { dtype = T.float64, requires_grad = true })
    local vals, idx = y:mode(2)
    assert.same({ 1, 2 }, U.flat(vals))
    assert.same({ 4, 5 }, U.flat(idx))
    vals:sum():backward()
    assert.same({ 0, 0, 0, 1, 0, 0, 0, 0, 0, 1 }, U.flat(y.grad))
  end)
end)

describe("difftest round 7: logcumsumexp of complex input (torch 1.13)", function()
  it("logcumsumexp refuses complex input (its imaginary parts were dropped)", function()
    -- torch 1.13: "logcumsumexp_out_cpu" not implemented for 'ComplexFloat'
    err(function() T.logcumsumexp(T.tensor({ 1, 2 }, { dtype = T.complex64 }), 1) end,
      "logcumsumexp: not implemented for complex input, got complex64")
  end)
end)
