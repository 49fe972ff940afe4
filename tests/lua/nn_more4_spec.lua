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
      "AdaptiveLogSoftmaxWithLoss.forward: Input and target should have the same size in the batch dimension "
      .. "(3 and 2).")
    assert.has_error(function() m(T.ones(2, 4), T.ones(2, 1):long()) end,
      "AdaptiveLogSoftmaxWithLoss.forward: 0D or 1D target tensor expected, multi-target not supported (got 2-d)")
  end)
end)

describe("F.fractional_max_pool3d, nn.FractionalMaxPool3d, the *_with_indices forms", function()
  -- torch: x = sin(arange(2*2*5*6*7) * 0.731).reshape(2, 2, 5, 6, 7), samples s (N, C, 3)
  local function x3() return (T.arange(2 * 2 * 5 * 6 * 7, f64) * 0.731):sin():reshape(2, 2, 5, 6, 7) end
  local s = t64 { { { 0.1, 0.5, 0.9 }, { 0.7, 0.3, 0.2 } }, { { 0.45, 0.05, 0.6 }, { 0.95, 0.8, 0.35 } } }

  it("gives torch's values, 1-based indices and gradient", function()
    local x = x3():requires_grad_()
    -- torch: fractional_max_pool3d(x, (2, 3, 2), output_size=(3, 3, 3), return_indices=True, _random_samples=s)
    local v, i = F.fractional_max_pool3d(x, { 2, 3, 2 }, { output_size = { 3, 3, 3 }, return_indices = true,
      _random_samples = s })
    assert.same({ 2, 2, 3, 3, 3 }, v.shape:totable())
    close(v, { 0.6676144758470572, 0.9957964065683984, 0.9792454543044627, 0.9988650606267985, 0.6997697342699828,
      0.9734165247621621, 0.9988650606267985, 0.9415943361801137, 0.7754604833224282, 0.579920443331557,
      0.9957964065683984, 0.9792454543044627, 0.9979063131103687, 0.996656679800153, 0.9734165247621621,
      0.9979063131103687, 0.996656679800153, 0.44590666944028895, 0.9717551198745962, 0.5517692004366499,
      0.9991798870683489, 0.9806686351424464, 0.9951165249593841, 0.6622777655677844, 0.9806686351424464,
      0.9951165249593841, 0.9494730535540353, 0.999979803609766, 0.9583983924318918, 0.7286627199639077,
      0.999979803609766, 0.9894007208736952, 0.8335608384402506, 0.6363117896494079, 0.9894007208736952,
      0.9911665310376937, 0.999979803609766, 0.9583983924318918, 0.5083465976210073, 0.999979803609766,
      0.9894007208736952, 0.9917356507622729, 0.9860609366408912, 0.9894007208736952, 0.9917356507622729,
      0.9642962593618828, 0.9996138442867637, 0.9480948968929984, 0.47865025662113503, 0.9996138442867637,
      0.993781493581049, 0.9955376529748233, 0.5959815071651056, 0.993781493581049, 0.6894899020121128,
      0.9765901594140324, 0.9980824357711017, 0.93723793594156, 0.7844040007295455, 0.9980824357711017,
      0.9970036170299937, 0.9762491822184386, 0.5682194877945559, 0.9953873635310616, 0.5972490813071684,
      0.9833647231108082, 0.9953873635310616, 0.9175295520581183, 0.8051222574411399, 0.9430544005168969,
      0.9996564876126238, 0.9682835590855691, 0.9936043825393366, 0.6515031817693829, 0.9833647231108082,
      0.9936043825393366, 0.9538610242958568, 0.4020452289147307, 0.494943429252379, 0.9996564876126238,
      0.9999582447137283, 0.9889927824557391, 0.9891701293209592, 0.6252229950934739, 0.9889927824557391,
      0.9891701293209592, 0.9635555420680346, 0.9996873041498394, 0.9588480334108266, 0.9999685178909972,
      0.9542216595289749, 0.9934677756977538, 0.9835826032310534, 0.6505897380362062, 0.9934677756977538,
      0.9835826032310534, 0.9996873041498394, 0.5387815534449442, 0.9679821780470742, 0.4319853538447484,
      0.9952711894040591, 0.9967844854448507, 0.9768483187629984, 0.9952711894040591, 0.9967844854448507,
      0.9768483187629984, 0.9970959858112483, 0.5672288071421095 }, "values")
    -- torch's indices + 1
    assert.same({ 2, 46, 55, 29, 73, 63, 29, 38, 28, 99, 46, 55, 72, 115, 63, 72, 115, 125, 141, 185, 175, 149, 158,
      202, 149, 158, 209, 51, 60, 7, 51, 68, 69, 78, 68, 34, 51, 60, 104, 51, 68, 111, 120, 68, 111, 128, 137, 146, 190,
      137, 154, 197, 207, 154, 57, 47, 13, 64, 12, 13, 30, 39, 83, 99, 89, 133, 99, 151, 98, 107, 159, 125, 142, 186,
      133, 142, 193, 195, 149, 159, 202, 9, 18, 62, 9, 18, 69, 78, 26, 35, 44, 95, 104, 51, 95, 104, 78, 68, 112, 128,
      138, 181, 190, 138, 181, 190, 207, 154 }, i:reshape(-1):tolist())
    assert.equal(T.int64, i.dtype)
    local wsum = (v * T.arange(v:numel(), f64):reshape(v.shape):cos()):sum()
    wsum:backward()
    local g = x.grad:reshape(-1)
    local nz = g:ne(0):nonzero():reshape(-1)
    assert.same({ 2, 28, 29, 38, 46, 55, 63, 72, 73, 99, 115, 125, 141, 149, 158, 175, 185, 202, 209, 217, 244, 261,
      270, 278, 279, 288, 314, 321, 330, 338, 347, 356, 364, 400, 407, 417, 432, 433, 450, 459, 467, 477, 484, 503,
      509, 518, 519, 527, 545, 553, 562, 569, 571, 579, 606, 613, 615, 622, 639, 648, 656, 665, 674, 681, 692, 698,
      699, 708, 725, 734, 742, 758, 768, 784, 811, 820, 837 }, nz:tolist())
    close(g:index_select(1, nz), { 1.0, -0.14550003380861354, -0.029822209950079448, 0.7539022543433046,
      -0.2987692232083127, -0.41172113855909165, 0.4203994036710599, 0.08416604587367083, -0.6536436208636119,
      -0.9111302618846769, -0.050212698873188466, -0.27516333805159693, 0.6603167082440802, -0.1235502528872714,
      -0.008758014531163538, 0.40808206181339196, 0.9887046181866692, -0.5328330203333975, 0.6469193223286404,
      -0.7480575296890003, -0.9036922050915067, 0.0007918838862804312, -0.1971918143682232, -0.04565267711171017,
      0.8342233605065102, -0.013276747223059479, 0.9550736440472949, 0.012504031123864778, -0.39998531498835127,
      0.5253219888177297, -0.1315854011411412, -0.9923354691509287, 0.04668324227999443, -0.6401443394691997,
      0.7421541968137826, -0.16299078079570548, 0.11918013544881928, 0.08213988474673894, -0.9524129804151563,
      -0.25810163593826746, 0.022126756261955736, -0.8293098328631502, 0.8998668269691937, 0.6735071623235862,
      0.39185723042955, 0.4401430224960407, -0.013750874383800293, 0.9933903797222716, -0.3090227281660707,
      -0.39073650940739446, -0.04549931854913314, -0.8578030932449878, -0.5177697997895051, -0.26265174370466327,
      -0.7361927182273159, 0.8243313311075577, -0.03097503173121646, -0.11038724383904756, 0.09666248643429243,
      -0.03469894551149866, 0.9993732836951247, 0.5101770449416689, -0.4480736161291701, 0.31742870151970165,
      0.24954011797333814, -0.9251475365964139, -0.38369844494974187, 0.389319884974228, -0.024908094258213942,
      0.10372911308448063, -0.8192882452914593, 0.0398208803931389, 0.08008798240056803, 0.9827795820412206,
      -0.05486314096305234, -0.13937334553958008, 0.6864865509069841 }, "gradient")
    -- the with_indices form gives both
    local v2, i2 = F.fractional_max_pool3d_with_indices(x3(), { 2, 3, 2 }, { output_size = 3, _random_samples = s })
    close(v2, v, "with_indices values")
    assert.is_true(T.equal(i2, i))
  end)

  it("places the samples T, H, W (torch's order for 3-d)", function()
    local x = T.arange(343, f64):reshape(1, 1, 7, 7, 7)
    local want = { -- torch's indices[:14] + 1 for u = 0.3 in sample 1, 2, 3
      { 58, 60, 63, 72, 74, 77, 93, 95, 98, 205, 207, 210, 219, 221 },
      { 58, 60, 63, 79, 81, 84, 93, 95, 98, 156, 158, 161, 177, 179 },
      { 58, 61, 63, 72, 75, 77, 93, 96, 98, 156, 159, 161, 170, 173 } }
    for d = 1, 3 do
      local u = T.zeros(1, 1, 3, f64)
      u[1][1][d] = 0.3
      local _, i = F.fractional_max_pool3d(x, 2, { output_size = 3, _random_samples = u, return_indices = true })
      assert.same(want[d], i:reshape(-1):narrow(1, 1, 14):tolist())
    end
  end)

  it("output_ratio, unbatched input, the module, the 2-d with_indices form", function()
    -- torch: fractional_max_pool3d(x[0], 2, output_ratio=(0.5, 0.5, 0.6), _random_samples=s[:1]): (2, 2, 3, 4)
    local vu = F.fractional_max_pool3d(x3()[1], 2, { output_ratio = { 0.5, 0.5, 0.6 },
      _random_samples = s:narrow(1, 1, 1) })
    assert.same({ 2, 2, 3, 4 }, vu.shape:totable())
    close(vu, { 0.6676144758470572, 0.9957964065683984, 0.9957964065683984, 0.9792454543044627, 0.8776273733421716,
      -0.13891985931770265, 0.5577142065840011, 0.9734165247621621, 0.9988650606267985, 0.9415943361801137,
      0.9357079025058865, -0.24908908647313627, 0.7709292234565397, 0.05119799888330235, 0.7048561912205588,
      0.9991798870683489, 0.9806686351424464, 0.9838664064482607, 0.8519349566461347, -0.08803610507911974,
      0.20617511358851506, 0.9951165249593841, 0.9951165249593841, 0.9494730535540353, 0.999979803609766,
      0.7487351472747749, 0.11489755291985888, 0.7286627199639077, 0.8966668099758568, 0.9867773845382584,
      0.9894007208736952, 0.8335608384402506, 0.6363117896494079, 0.2394617161028289, 0.8264717338339591,
      0.9911665310376937, 0.9642962593618828, 0.9996138442867637, 0.9996138442867637, 0.7138156174158499,
      0.47865025662113503, 0.41905330177411954, 0.918156514597996, 0.993781493581049, 0.9955376529748233,
      0.9798056943784703, 0.5959815071651056, 0.2888561018770638 }, "ratio, unbatched")
    -- torch: FractionalMaxPool3d(2, output_size=2, return_indices=True, _random_samples=s)(x)[1] + 1
    local m = nn.FractionalMaxPool3d(2, { output_size = 2, return_indices = true, _random_samples = s })
    local _, mi = m(x3())
    assert.same({ 2, 55, 29, 83, 176, 175, 156, 209, 51, 7, 78, 34, 128, 181, 197, 161, 2, 13, 30, 83, 176, 133, 204,
      202, 9, 7, 78, 35, 128, 181, 198, 209 }, mi:reshape(-1):tolist())
    assert.equal("FractionalMaxPool3d()", tostring(m))
    -- torch: fractional_max_pool2d_with_indices(cos(arange(112) * 0.37).reshape(1, 2, 7, 8), 3,
    --   output_size=(3, 4), _random_samples=[[[0.2, 0.8], [0.6, 0.1]]])
    local x4 = (T.arange(112, f64) * 0.37):cos():reshape(1, 2, 7, 8)
    local v2, i2 = F.fractional_max_pool2d_with_indices(x4, 3, { output_size = { 3, 4 },
      _random_samples = t64 { { { 0.2, 0.8 }, { 0.6, 0.1 } } } })
    close(v2, { 1.0, 0.9298414180167014, 0.7338563821173814, 0.7430464409664099, 0.9999767800707431, 0.9999071213613027,
      0.9273123087234758, 0.45682766203947184, 0.9999071213613027, 0.9999071213613027, 0.9997910271066193,
      0.7245300041048127, 0.7565722034848286, 0.9418369601941429, 0.9996285026980938, 0.9221250168311531,
      0.4749170673079263, 0.7610107983319881, 0.9994195556833366, 0.9994195556833366, 0.710288635217441,
      0.4809031312599469, 0.9463297714195772, 0.9991641957658175 }, "2-d with_indices values")
    assert.same({ 1, 19, 20, 16, 18, 35, 36, 32, 35, 35, 52, 54, 11, 12, 13, 14, 27, 28, 30, 30, 49, 44, 46, 47 },
      i2:reshape(-1):tolist())
  end)

  it("refuses torch's bad arguments", function()
    local x = T.ones(1, 1, 5, 6, 7)
    assert.has_error(function() F.fractional_max_pool3d(x, 2, { output_size = { 4, 3, 3 } }) end,
      "fractional_max_pool3d: fractional_max_pool3d_out(): pool time 2 too large relative to input time 5")
    assert.has_error(function() F.fractional_max_pool3d(x, 2) end,
      "fractional_max_pool3d: fractional_max_pool3d requires specifying either an output_size or an output_ratio")
    assert.has_error(function() F.fractional_max_pool3d(x, 2, { output_ratio = 1.5 }) end,
      "fractional_max_pool3d: output_ratio must be between 0 and 1 (got 1.5)")
    assert.has_error(function()
      F.fractional_max_pool3d(x, 2, { output_size = 2, _random_samples = T.zeros(1, 1, 2) })
    end,
      "fractional_max_pool3d: expected _random_samples of shape (1, 1, 3), got [1, 1, 2]")
    assert.has_error(function() F.fractional_max_pool3d(T.ones(2, 3, 4), 2, { output_size = 1 }) end)
    assert.has_error(function() nn.FractionalMaxPool3d(2) end,
      "FractionalMaxPool3d requires specifying either an output size, or a pooling ratio")
  end)
end)

describe("F.grid_sample on 5-d input (volumetric)", function()
  local cases = dofile("tests/fixtures/grid_sample3d_cases.lua") -- tests/fixtures/gen_grid_sample3d.py
  local function inputs()
    local x = (T.arange(240, f64) * 0.53):sin():reshape(2, 2, 3, 4, 5):requires_grad_()
    local g = ((T.arange(72, f64) * 0.917):cos() * 1.3):reshape(2, 2, 3, 2, 3):requires_grad_()
    return x, g
  end
  local wsum = (T.arange(48, f64) * 0.41):sin():reshape(2, 2, 2, 3, 2)

  for _, c in ipairs(cases) do
    local label = string.format("%s, %s, align_corners=%s", c.mode, c.padding_mode, tostring(c.align_corners))
    it("gives torch's values and gradients: " .. label, function()
      local x, g = inputs()
      local y = F.grid_sample(x, g, { mode = c.mode, padding_mode = c.padding_mode, align_corners = c.align_corners })
      assert.same({ 2, 2, 2, 3, 2 }, y.shape:totable())
      close(y, c.y, label .. ": y")
      local l = (y * wsum):sum()
      l:backward()
      close(x.grad, c.gi, label .. ": input grad")
      if c.mode == "nearest" then
        assert.is_true(g.grad == nil or g.grad:abs():max():item() == 0) -- torch's is zero
      else
        close(g.grad, c.gg, label .. ": grid grad")
      end
    end)
  end

  it("positional arguments, the identity transform, torch's errors", function()
    local x = (T.arange(60, f64) * 0.3):cos():reshape(1, 1, 3, 4, 5)
    for _, align in ipairs { false, true } do
      local theta = t64 { { { 1, 0, 0, 0 }, { 0, 1, 0, 0 }, { 0, 0, 1, 0 } } }
      local grid = F.affine_grid(theta, { 1, 1, 3, 4, 5 }, align)
      close(F.grid_sample(x, grid, "bilinear", "zeros", align), x, "identity", 1e-12)
      close(F.grid_sample(x, grid, "nearest", "border", align), x, "identity nearest", 1e-12)
    end
    local g = T.zeros(1, 1, 1, 1, 3, f64)
    assert.has_error(function() F.grid_sample(x, g, { mode = "bicubic" }) end,
      "grid_sample: grid_sampler(): bicubic interpolation only supports 4D input")
    assert.has_error(function() F.grid_sample(x, T.zeros(1, 1, 1, 1, 2, f64)) end,
      "grid_sample: grid_sampler(): expected grid to have size 3 in last dimension and 5 dims (for a 5-d input), "
      .. "but got grid with sizes [1, 1, 1, 1, 2]")
    assert.has_error(function() F.grid_sample(x, T.zeros(2, 1, 1, 1, 3, f64)) end)
    assert.has_error(function() F.grid_sample(x, T.zeros(1, 1, 1, 1, 3)) end)
    assert.has_error(function() F.grid_sample(T.ones(1, 1, 1, 1, 1, 1, f64), g) end,
      "grid_sample: expected a 4-d input (N, C, H, W) or a 5-d one (N, C, D, H, W), got 6-d")
  end)
end)
