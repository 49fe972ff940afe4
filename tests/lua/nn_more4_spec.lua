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

describe("nn.AdaptiveLogSoftmaxWithLoss (1-based targets and classes)", function()
  -- torch: AdaptiveLogSoftmaxWithLoss(6, 10, [3, 6], div_value=2.0, head_bias=True).double(), parameter k
  -- (0-based, in named_parameters order) set to sin(arange(numel) * 0.37 + k); x = cos(arange(30) * 0.61)
  local function model()
    local m = nn.AdaptiveLogSoftmaxWithLoss(6, 10, { 3, 6 }, { div_value = 2, head_bias = true, dtype = T.float64 })
    local k = 0
    T.no_grad(function()
      for _, p in m:named_parameters() do
        p:copy_((T.arange(p:numel(), f64) * 0.37 + k):sin():reshape(p.shape))
        k = k + 1
      end
    end)
    return m
  end
  local function input() return (T.arange(30, f64) * 0.61):cos():reshape(5, 6) end

  it("has torch's layout", function()
    local m = model()
    assert.same({ "head.weight", "head.bias", "tail.1.1.weight", "tail.1.2.weight", "tail.2.1.weight",
      "tail.2.2.weight" }, keys(m:state_dict()))
    assert.same({ 3, 6 }, m.tail[1][1].weight.shape:totable())
    assert.same({ 4, 1 }, m.tail[2][2].weight.shape:totable())
    assert.same({ 3, 6, 10 }, m.cutoffs)
    assert.equal(table.concat({
      "AdaptiveLogSoftmaxWithLoss(",
      "  (head): Linear(in_features=6, out_features=5, bias=true)",
      "  (tail): ModuleList(",
      "    (1): Sequential(",
      "      (1): Linear(in_features=6, out_features=3, bias=false)",
      "      (2): Linear(in_features=3, out_features=3, bias=false)",
      "    )",
      "    (2): Sequential(",
      "      (1): Linear(in_features=6, out_features=1, bias=false)",
      "      (2): Linear(in_features=1, out_features=4, bias=false)",
      "    )",
      "  )",
      ")" }, "\n"), tostring(m))
  end)

  it("forward gives output and loss as a table, with torch's gradients", function()
    local m = model()
    local x = input():requires_grad_()
    local r = m(x, T.tensor { 1, 5, 10, 3, 8 }) -- torch's [0, 4, 9, 2, 7]
    close(r.output, { -4.580331662710089, -2.854216359188814, -1.4224111812373383, -5.561220495831988,
      -5.557689841527391 }, "output")
    close(r.loss, { 3.9951739080991238 }, "loss")
    assert.same({}, r.loss.shape:totable())
    r.loss:backward()
    close(x.grad, { 0.1333407114294902, 0.0063153872741636185, -0.12156469492189992, -0.23299156594604833,
      -0.31288412153224515, -0.35042927907481974, -0.09540928137124499, -0.06566134199106938, -0.027026448003682525,
      0.015266348934203741, 0.055492917161525865, 0.08820877938007815, -0.014044552396396875, 0.014686428981024797,
      0.04142967109301746, 0.06256560157794346, 0.07523357139779982, 0.07771903026560226, 0.2406905930006443,
      0.30828314241655635, 0.3341510147279858, 0.3147931147692554, 0.25282944348776554, 0.1566464931067433,
      -0.33959741256356446, -0.29485118314172093, -0.21019822929107468, -0.09709593119035129, 0.02914784569938174,
      0.15144659841242902 }, "input grad")
    close(m.head.weight.grad, { -0.2993364364112108, -0.17174162341468943, 0.017801073984380876, 0.20092285342832653,
      0.31157096312039034, 0.3098341912513434, 0.15064074102381939, 0.096109822587667, 0.006911710135104523,
      -0.0847794835633452, -0.14589038144842306, -0.1543780403904966, -0.07478163535120574, -0.28660502659987885,
      -0.39504884856307765, -0.3609969847538526, -0.19673207744030252, 0.03849487011271837, 0.11768701681498478,
      0.1252086492368621, 0.08756702551322307, 0.018339628544213553, -0.057502945144648945, -0.1126039785603913,
      0.10579031392361242, 0.2370281781900392, 0.2827690389303692, 0.22651398634465775, 0.08855444091298426,
      -0.08134704241317393 }, "head.weight grad")
    close(m.head.bias.grad, { -0.0059238000398963014, 0.19389961594283633, 0.04936110046983627, -0.007892360361285836,
      -0.2294445560114904 }, "head.bias grad")
    close(m.tail[2][1].weight.grad, { -0.06615213829614469, -0.07257418855578127, -0.052818441296835744,
      -0.014010872873497221, 0.029850472938741674, 0.06294463482547699 }, "tail[2][1] grad")
    -- unbatched: a 0-d target and a 1-d input; torch: [-1.3334865561970202] torch.Size([]) 1.3334865561970202
    local r1 = m(input()[2], T.tensor(6))
    assert.same({}, r1.output.shape:totable())
    close(r1.output, { -1.3334865561970202 }, "unbatched output")
    close(r1.loss, { 1.3334865561970202 }, "unbatched loss")
  end)

  it("log_prob and predict (1-based ids)", function()
    local m = model()
    local x = input()
    local lp = m:log_prob(x)
    assert.same({ 5, 10 }, lp.shape:totable())
    close(lp, { -4.580331662710089, -0.48434428068543006, -4.666241280905496, -4.052141336930671, -5.128120397488518,
      -6.371966340845496, -2.253388422010141, -2.36533329112109, -2.548882203283787, -2.7791926743038817,
      -0.5572093342040014, -5.126444777433891, -2.5522057658966446, -3.950618262002453, -2.854216359188814,
      -1.3334865561970202, -6.949589632185437, -7.090705159752741, -7.322083353143384, -7.612408259326118,
      -5.569858280436843, -1.2107139585586313, -1.479116135791351, -5.930569164002766, -6.759280181728588,
      -8.157274753310123, -3.099676462170908, -2.7425830352551532, -2.157079558665484, -1.4224111812373383,
      -0.9887895412247419, -3.474972229976971, -5.561220495831988, -2.310289522529505, -1.9670390048428938,
      -1.0591462533202254, -5.614798289811359, -6.094032203011454, -6.8798016995318285, -7.865756564229791,
      -4.466591704710399, -3.9893228818320727, -0.07493342501818812, -6.4660878402445965, -6.233678100112004,
      -6.41289195140277, -6.033130613345539, -5.557689841527391, -4.778139718702883, -3.7999886969613694 }, "log_prob")
    close(lp:exp():sum(2), { 1, 1, 1, 1, 1 }, "rows sum to 1", 1e-12)
    local p = m:predict(x)
    assert.equal(T.int64, p.dtype)
    assert.same({ 2, 1, 2, 1, 3 }, p:tolist())             -- torch: [1, 0, 1, 0, 2]
    assert.same({ 10, 3, 10, 6, 3 }, m:predict(x * 3 - 1):tolist()) -- torch: [9, 2, 9, 5, 2] (head: [4, 2, 4, 3, 2])
  end)

  it("refuses torch's bad arguments", function()
    local msg = "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, " ..
      "where each value is between 1 and n_classes-1"
    for _, c in ipairs { { 3, 3 }, { 4, 2 }, { 0, 3 }, { 3, 10 }, { 2.5 } } do
      local ok, err = pcall(nn.AdaptiveLogSoftmaxWithLoss, 6, 10, c)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(msg, 1, true), tostring(err))
    end
    assert.has_error(function() nn.AdaptiveLogSoftmaxWithLoss(6, 10, { 3 }, { zz = 1 }) end)
    local m = nn.AdaptiveLogSoftmaxWithLoss(4, 5, { 2 })
    assert.has_error(function() m(T.ones(2, 4), T.tensor { 1, 6 }) end,
      "AdaptiveLogSoftmaxWithLoss.forward: Target values should be in [1, 5], but values in range [1, 6] were found.")
    assert.has_error(function() m(T.ones(2, 4), T.tensor { 0, 1 }) end,
      "AdaptiveLogSoftmaxWithLoss.forward: Target values should be in [1, 5], but values in range [0, 1] were found.")
    assert.has_error(function() m(T.ones(3, 4), T.tensor { 1, 2 }) end,
      "AdaptiveLogSoftmaxWithLoss.forward: Input and target should have the same size in the batch dimension (3 and 2).")
    assert.has_error(function() m(T.ones(2, 4), T.ones(2, 1):long()) end,
      "AdaptiveLogSoftmaxWithLoss.forward: 0D or 1D target tensor expected, multi-target not supported (got 2-d)")
  end)
end)
