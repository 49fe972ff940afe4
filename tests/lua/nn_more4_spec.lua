-- The nn pieces of lua/ember/nn/more_layers4.lua and the volumetric
-- F.grid_sample (docs/nn.md, "More layers, fourth round") against PyTorch
-- 1.13: float64 values and gradients computed with torch and pasted as
-- literals (the torch calls are in the comments); where torch draws random
-- numbers (spectral_norm's u and v, the fractional pools' samples) both
-- sides are given the same values.
local T = require "ember"
local F, nn = T.nn.functional, T.nn

local f64 = { dtype = T.float64 }
local function t64(v) return T.tensor(v, f64) end
local function close(got, want, what, tol)
  if type(want) == "table" then want = t64(want) end
  got = got:double():reshape(-1)
  want = want:reshape(-1)
  assert.equal(want:numel(), got:numel(), what .. ": numel")
  if want:numel() == 0 then return end
  local d = (got - want):abs():max():item()
  assert(d <= (tol or 1e-12) * math.max(1, want:abs():max():item()), ("%s: max difference %g"):format(what, d))
end
local function keys(iter_or_sd)
  local r = {}
  if type(iter_or_sd) == "function" then
    for k in iter_or_sd do r[#r + 1] = k end
  else
    for _, k in ipairs(iter_or_sd:keys()) do r[#r + 1] = k end
  end
  return r
end

describe("nn.utils.spectral_norm (torch 1.13's power-iteration hook)", function()
  it("reparametrises weight by weight_orig, weight_u, weight_v; trains u, v; eval keeps them", function()
    local m = nn.Linear(3, 2):double()
    T.no_grad(function() m.weight:copy_(t64 { { 1, 2, 2 }, { 0, 3, -4 } }); m.bias:fill_(0.5) end)
    local w0 = m.weight
    assert.is_true(rawequal(m, nn.utils.spectral_norm(m)))
    -- torch: ['bias', 'weight_orig'] ['bias', 'weight_orig', 'weight_u', 'weight_v'] [(2,), (2, 3), (2,), (3,)]
    assert.same({ "bias", "weight_orig" }, keys(m:named_parameters()))
    assert.same({ "bias", "weight_orig", "weight_u", "weight_v" }, keys(m:state_dict()))
    assert.is_true(rawequal(w0, m.weight_orig))
    assert.same({ 2 }, m.weight_u.shape:totable())
    assert.same({ 3 }, m.weight_v.shape:totable())
    close(m.weight_u:norm(), { 1 }, "u normalised", 1e-12)
    T.no_grad(function() m.weight_u:copy_(t64 { 0.6, 0.8 }); m.weight_v:copy_(t64 { 1, 0, 0 }) end)
    local x = t64 { { 1, -1, 0.5 }, { 2, 0, 1 } }
    local y = m(x)
    close(y, { 0.5, -0.5849028729684256, 1.3679222983747406, -0.36792229837474055 }, "y1")
    close(m.weight_u, { 0.19812099832467647, 0.9801775706589259 }, "u1")
    close(m.weight_v, { 0.1441707993996638, 0.8650247963979829, -0.4805693313322127 }, "v1")
    close(m.weight, { 0.21698057459368514, 0.4339611491873703, 0.4339611491873703, 0.0, 0.6509417237810554,
      -0.8679222983747406 }, "w1")
    y:pow(2):sum():backward()
    close(m.weight_orig.grad, { 1.3776906551192272, -0.37622168266120837, 0.790582702158309, -0.7044571613095434,
      -0.5339993064703215, 0.15110369367561605 }, "weight_orig.grad")
    close(m.bias.grad, { 3.735844596749481, -1.9056503426863323 }, "bias.grad")
    local y2 = m(x)
    close(y2, { 0.5, -0.5074077902916927, 1.3059262322333542, -0.30592623223335413 }, "y2")
    close(m.weight_u, { -0.007352742413412783, 0.9999729682241425 }, "u2")
    close(m.weight_v, { 0.04078671523007783, 0.6869341512434164, -0.7255741972508585 }, "v2")
    m:eval()
    close(m(x), { 0.5, -0.5074077902916927, 1.3059262322333542, -0.30592623223335413 }, "y3 (eval)")
    close(m.weight_u, { -0.007352742413412783, 0.9999729682241425 }, "u3 unchanged in eval")
    close(m.weight_v, { 0.04078671523007783, 0.6869341512434164, -0.7255741972508585 }, "v3 unchanged in eval")
    assert.has_error(function() nn.utils.spectral_norm(m) end,
      "spectral_norm: Cannot register two spectral_norm hooks on the same parameter weight")
    assert.is_true(rawequal(m, nn.utils.remove_spectral_norm(m)))
    -- torch: ['bias', 'weight'] [0.2014815580583385, ...]
    assert.same({ "bias", "weight" }, keys(m:named_parameters()))
    assert.same({ "bias", "weight" }, keys(m:state_dict()))
    close(m.weight, { 0.20148155805833853, 0.40296311611667707, 0.40296311611667707, 0.0, 0.6044446741750156,
      -0.8059262322333541 }, "removed")
    assert.is_true(m.weight.requires_grad)
    assert.has_error(function() nn.utils.remove_spectral_norm(m) end,
      "remove_spectral_norm: spectral_norm of 'weight' not found in Linear")
  end)

  it("takes n_power_iterations, eps and a 1-based dim (positional or a table); gradients w.r.t. the input", function()
    -- torch: spectral_norm(Conv1d(2, 3, 2), n_power_iterations=3, dim=1, eps=1e-6), weight arange(12).sin()
    local c = nn.Conv1d(2, 3, 2):double()
    T.no_grad(function() c.weight:copy_(T.arange(12, f64):reshape(3, 2, 2):sin()); c.bias:zero_() end)
    nn.utils.spectral_norm(c, { n_power_iterations = 3, dim = 2, eps = 1e-6 })
    assert.same({ 2 }, c.weight_u.shape:totable())
    assert.same({ 6 }, c.weight_v.shape:totable())
    T.no_grad(function() c.weight_u:copy_(t64 { 1, 0 }); c.weight_v:copy_(t64 { 0.5, 0.5, 0.5, 0.5, 0, 0 }) end)
    local xi = T.arange(8, f64):reshape(1, 2, 4):cos():requires_grad_()
    local yc = c(xi)
    close(yc, { -0.048158743344773686, 0.02089948398531306, 0.07074282212221147, -0.43768763822756046,
      0.26172548864784245, 0.7205094082693501, 0.620342208661384, -0.36304987612946094, -1.0126555790971645 }, "yc")
    close(c.weight_u, { 0.8240124601948755, -0.5665716772338597 }, "u")
    close(c.weight_v, { -0.2229979862065618, 0.3168832005639918, -0.24760036062889604, -0.5616740614905791,
      0.5466827787037772, 0.41738613403175445 }, "v")
    yc:sum():backward()
    close(c.weight_orig.grad, { 0.5282759059236298, -0.3972158319544927, 0.2953620349142512, 0.9506833947018875,
      0.5266369411574477, -0.4557436948697733, 0.29648894871878684, 0.9909257830863807, 0.5795506175933656,
      -0.3905205120628459, 0.2601067435275963, 0.9460798494839784 }, "weight_orig.grad")
    close(xi.grad, { 0.11235846412805406, 0.25472487991586124, 0.25472487991586124, 0.14236641578780718,
      0.04148334132861503, -0.05605598450926058, -0.05605598450926058, -0.09753932583787561 }, "input grad")
    -- the same through positional arguments (torch's order: name, n_power_iterations, eps, dim)
    local c2 = nn.utils.spectral_norm(nn.Conv1d(2, 3, 2), "weight", 3, 1e-6, 2)
    assert.same({ 2 }, c2.weight_u.shape:totable())
    -- ConvTranspose's default dim is 2 (torch's 1): torch: (3,) (4,)
    local ct = nn.utils.spectral_norm(nn.ConvTranspose1d(2, 3, 2))
    assert.same({ 3 }, ct.weight_u.shape:totable())
    assert.same({ 4 }, ct.weight_v.shape:totable())
  end)

  it("state_dict round trip and errors", function()
    local a = nn.utils.spectral_norm(nn.Linear(3, 2))
    local b = nn.utils.spectral_norm(nn.Linear(3, 2))
    b:load_state_dict(a:state_dict())
    a:eval(); b:eval()
    local x = T.ones(1, 3)
    assert.is_true(T.equal(a(x), b(x)))
    assert.has_error(function() nn.utils.spectral_norm(nn.Linear(3, 2), "weight", 0) end,
      "spectral_norm: Expected n_power_iterations to be positive, but got n_power_iterations=0")
    assert.has_error(function() nn.utils.spectral_norm(nn.Linear(3, 2), { dim = 3 }) end,
      "spectral_norm: dim 3 is out of range for a 2-d parameter (1-based)")
    assert.has_error(function() nn.utils.spectral_norm(nn.Linear(3, 2), { zz = 1 }) end)
    assert.has_error(function() nn.utils.spectral_norm(nn.Linear(3, 2), "nope") end,
      "spectral_norm: `SpectralNorm` cannot be applied as parameter `nope` is None (Linear has no parameter nope)")
  end)
end)
