-- The layers of issue 18 item 4 (lua/ember/nn/extra_layers.lua, F.embedding's
-- max_norm, BatchNorm3d): values, gradients and in-place effects against
-- PyTorch 1.13 (tests/fixtures/nn_extra_cases.lua from gen_nn_extra.py),
-- gradcheck in float64, the modules and bad input.
local T = require "ember"
local F = T.nn.functional
local nn = T.nn
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/nn_extra_cases.lua")
-- the calls the fixtures name: F's, and ctc_loss fed by log_softmax (PyTorch's
-- ctc backward gives the gradient w.r.t. logits through log_softmax)
local fns = setmetatable({
  ctc_loss_logits = function(x, ...) return F.ctc_loss(x:log_softmax(3), ...) end,
}, { __index = F })

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end

local TOL = { float32 = 2e-5, float64 = 1e-12, int64 = 0 }
local function close(got, rec, what)
  local want = tensor(rec)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  if want:numel() == 0 then return end
  if not want.dtype.is_floating_point then
    assert.is_true(T.equal(want, got), what .. ": values")
    return
  end
  local d = (got:detach() - want):abs():max():item()
  local tol = TOL[rec.dtype] * math.max(1, want:abs():max():item())
  assert(d <= tol, string.format("%s: max difference %g (tolerance %g)", what, d, tol))
end

describe("issue 18 layers against PyTorch 1.13", function()
  for i, c in ipairs(cases) do
    it(string.format("%s #%d %s", c.fn, i, c.x[1].dtype), function()
      local xs, diff = {}, {}
      local is_diff = {}
      for _, k in ipairs(c.diff) do is_diff[k] = true end
      for k, rec in ipairs(c.x) do
        xs[k] = tensor(rec)
        if is_diff[k] then
          xs[k]:requires_grad_()
          diff[#diff + 1] = xs[k]
        end
      end
      local function resolve(a)
        if type(a) ~= "table" then return a end
        if a.t then return xs[a.t] end
        if a.none then return nil end
        if a.ids then return tensor(a.ids) end
        local o = {}
        for k, v in pairs(a) do o[k] = resolve(v) end -- an options table (may hold inputs)
        return o
      end
      local args, n = {}, 0
      for _, a in ipairs(c.args) do
        n = n + 1
        args[n] = resolve(a)
      end
      local outs = { fns[c.fn](unpack(args, 1, n)) }
      assert.equal(#c.out, #outs, "number of results")
      for k = 1, #outs do close(outs[k], c.out[k], "output " .. k) end
      if c.g then
        local gs = T.autograd.grad({ outs[1] }, diff, { grad_outputs = { tensor(c.v) }, allow_unused = true })
        for k = 1, #diff do close(gs[k] or T.zeros_like(diff[k]), c.g[k], "gradient " .. k) end
      end
      if c.after then
        -- what the op changed in place: the running stats, a renormalised weight
        local changed = c.fn == "embedding" and { xs[1] } or { xs[2], xs[3] }
        for k = 1, #c.after do close(changed[k], c.after[k], "in place " .. k) end
      end
    end)
  end
end)

local function r(...) return T.randn(...):double():requires_grad_() end
local function pos(...) return (T.rand(...):double() + 0.5):requires_grad_() end

describe("issue 18 layers: gradcheck (float64)", function()
  local y = T.tensor({ 1, -1, 1 }, { dtype = T.float64 })
  local gc = {
    { "max_pool1d", function(x) return F.max_pool1d(x, 3, { stride = 2, padding = 1 }) end, { r(1, 2, 7) } },
    { "avg_pool1d", function(x) return F.avg_pool1d(x, 3, 2, 1) end, { r(1, 2, 7) } },
    { "adaptive_avg_pool2d", function(x) return F.adaptive_avg_pool2d(x, { 2, 3 }) end, { r(1, 2, 5, 4) } },
    { "adaptive_max_pool2d", function(x) return F.adaptive_max_pool2d(x, { 2, 3 }) end, { r(1, 2, 5, 4) } },
    { "adaptive_max_pool1d", function(x) return F.adaptive_max_pool1d(x, 3) end, { r(2, 7) } },
    { "group_norm", function(x, w, b) return F.group_norm(x, 2, w, b) end, { r(2, 4, 3), r(4), r(4) } },
    { "rms_norm", function(x, w) return F.rms_norm(x, { 3 }, w) end, { r(2, 3), r(3) } },
    { "instance_norm", function(x, w, b) return F.instance_norm(x, nil, nil, w, b) end, { r(2, 3, 4), r(3), r(3) } },
    { "smooth_l1_loss", function(a, b) return F.smooth_l1_loss(a, b, { beta = 0.5 }) end, { r(3, 4), r(3, 4) } },
    { "huber_loss", function(a, b) return F.huber_loss(a, b, "sum") end, { r(3, 4), r(3, 4) } },
    { "kl_div", function(a, b) return F.kl_div(a, b, { reduction = "batchmean" }) end, { r(2, 3), pos(2, 3) } },
    { "kl_div log_target", function(a, b) return F.kl_div(a, b, { log_target = true }) end, { r(2, 3), r(2, 3) } },
    { "cosine_embedding_loss", function(a, b) return F.cosine_embedding_loss(a, b, y, { margin = -0.5 }) end,
      { r(3, 4), r(3, 4) } },
    { "margin_ranking_loss", function(a, b) return F.margin_ranking_loss(a, b, y, { margin = 0.1 }) end, { r(3), r(3) } },
    { "triplet_margin_loss", function(a, p, n) return F.triplet_margin_loss(a, p, n, { swap = true }) end,
      { r(3, 4), r(3, 4), r(3, 4) } },
    { "poisson_nll_loss", function(a, b) return F.poisson_nll_loss(a, b, { log_input = false }) end, { pos(3), pos(3) } },
    { "gaussian_nll_loss", function(a, b, v) return F.gaussian_nll_loss(a, b, v, { full = true }) end,
      { r(3, 2), r(3, 2), pos(3, 1) } },
  }
  for _, c in ipairs(gc) do
    it(c[1], function() assert.is_true(T.autograd.gradcheck(c[2], c[3])) end)
  end
end)

describe("issue 18 layer modules", function()
  it("build with PyTorch's arguments, print and forward", function()
    local x = T.randn(2, 4, 6)
    local mods = {
      { nn.MaxPool1d(2), "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false)", F.max_pool1d(x, 2) },
      { nn.AvgPool1d(3, { stride = 1 }), "AvgPool1d(kernel_size=(3,), stride=(1,), padding=(0,))", F.avg_pool1d(x, 3, 1) },
      { nn.AdaptiveAvgPool1d(4), "AdaptiveAvgPool1d(output_size=4)", F.adaptive_avg_pool1d(x, 4) },
      { nn.AdaptiveMaxPool1d(4), "AdaptiveMaxPool1d(output_size=4)", F.adaptive_max_pool1d(x, 4) },
      { nn.AdaptiveAvgPool2d({ 2, 3 }), "AdaptiveAvgPool2d(output_size=(2, 3))", F.adaptive_avg_pool2d(x, { 2, 3 }) },
      { nn.AdaptiveMaxPool2d(2), "AdaptiveMaxPool2d(output_size=2)", F.adaptive_max_pool2d(x, 2) },
      { nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=true)", F.group_norm(x, 2) },
      { nn.RMSNorm(6), "RMSNorm((6,), eps=None, elementwise_affine=true)", F.rms_norm(x, { 6 }) },
      { nn.InstanceNorm1d(4), "InstanceNorm1d(4, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false)",
        F.instance_norm(x) },
    }
    for _, m in ipairs(mods) do
      assert.equal(m[2], tostring(m[1]))
      assert.is_true(T.allclose(m[1](x), m[3], 1e-6, 1e-6), m[2])
    end
    assert.same({ "weight", "bias" }, nn.GroupNorm(2, 4):state_dict():keys())
    assert.same({ "weight" }, nn.RMSNorm({ 2, 3 }):state_dict():keys())
    assert.same({ "weight", "bias", "running_mean", "running_var", "num_batches_tracked" },
      nn.InstanceNorm2d(3, { affine = true, track_running_stats = true }):state_dict():keys())
    local bn = nn.BatchNorm3d(3)
    local y = bn(T.randn(2, 3, 2, 2, 2))
    assert.same({ 2, 3, 2, 2, 2 }, y.shape:totable())
    assert.has_error(function() bn(T.randn(2, 3, 4)) end, "BatchNorm3d: expected 5D input (got 3D input)")
  end)

  it("InstanceNorm tracks running stats in training and uses them in eval", function()
    local m = nn.InstanceNorm1d(3, { track_running_stats = true, momentum = 0.5 })
    local x = T.randn(4, 3, 5):double()
    m:double()
    m(x)
    local want = (x:mean(3):mean(1) * 0.5)
    assert.is_true(T.allclose(m.running_mean, want, 1e-12, 1e-12))
    m:eval()
    local y = m(x)
    local rm, rv = m.running_mean:view(1, 3, 1), m.running_var:view(1, 3, 1)
    assert.is_true(T.allclose(y, (x - rm) / (rv + 1e-5):sqrt(), 1e-10, 1e-10))
    -- unbatched input
    assert.same({ 3, 5 }, m(x[1]).shape:totable())
  end)

  it("Embedding max_norm renormalises the rows it reads", function()
    local e = nn.Embedding(4, 3, { max_norm = 1.0 })
    assert.equal("Embedding(4, 3, max_norm=1.0)", tostring(e))
    e.weight:detach():mul_(10)
    local before = e.weight:detach():clone()
    local out = e(T.tensor { 1, 3 })
    local norms = e.weight:detach():norm(2, 2)
    assert(math.abs(norms[1]:item() - 1) < 1e-5 and math.abs(norms[3]:item() - 1) < 1e-5)
    assert.is_true(T.equal(e.weight:detach()[2], before[2]))
    assert.is_true(T.allclose(out, e.weight:detach():index_select(1, T.tensor { 1, 3 })))
    assert.has_error(function() F.embedding(T.tensor { 1 }, e.weight, { maxnorm = 1 }) end,
      "embedding: unknown option 'maxnorm' (expected one of: padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)")
  end)

  it("EmbeddingBag: 1-based ids and offsets, gradcheck, errors", function()
    local e = nn.EmbeddingBag(6, 3, { mode = "max", padding_idx = 2 })
    assert.equal("EmbeddingBag(6, 3, mode=max, padding_idx=2)", tostring(e))
    assert.same({ 0, 0, 0 }, e.weight[2]:tolist())
    local ids, offs = T.tensor { 1, 3, 4, 2, 6 }, T.tensor { 1, 3 }
    assert.is_true(T.equal(e(ids, offs), F.embedding_bag(ids, e.weight, offs, { mode = "max", padding_idx = 2 })))
    local w = T.randn(6, 3):double():requires_grad_()
    local psw = T.rand(5):double():requires_grad_()
    for _, mode in ipairs { "sum", "mean", "max" } do
      assert.is_true(T.autograd.gradcheck(function(x) return F.embedding_bag(ids, x, offs, { mode = mode }) end, { w }))
    end
    assert.is_true(T.autograd.gradcheck(function(x, p)
      return F.embedding_bag(ids, x, offs, { mode = "sum", per_sample_weights = p })
    end, { w, psw }))
    assert.has_error(function() F.embedding_bag(ids, w, T.tensor { 2, 3 }) end,
      "embedding_bag: offsets[1] has to be 1, i.e., the first sequence in the mini-batch has to start from position 1; got 2")
    assert.has_error(function() F.embedding_bag(ids, w, offs, { mode = "min" }) end,
      "embedding_bag: mode has to be one of sum, mean or max, got min")
    assert.has_error(function() F.embedding_bag(ids, w) end, "embedding_bag: offsets has to be a 1-d tensor but got nil")
  end)

  it("CTCLoss: 1-based blank and ids, counts, both target layouts, gradcheck", function()
    local x = T.randn(6, 2, 4):double():requires_grad_()
    local tg, il, tl = T.tensor { { 2, 3, 3 }, { 4, 2, 1 } }, T.tensor { 6, 5 }, T.tensor { 3, 2 }
    local m = nn.CTCLoss { reduction = "sum" }
    local a = m(x:log_softmax(3), tg, il, tl)
    local b = F.ctc_loss(x:log_softmax(3), T.tensor { 2, 3, 3, 4, 2 }, { 6, 5 }, { 3, 2 }, { reduction = "sum" })
    assert(math.abs(a:item() - b:item()) < 1e-12)
    assert.is_true(T.autograd.gradcheck(function(lp) return F.ctc_loss(lp, tg, il, tl) end, { x:log_softmax(3):detach():requires_grad_() }))
    assert.is_true(T.autograd.gradcheck(function(z) return F.ctc_loss(z:log_softmax(3), tg, il, tl, { blank = 4 }) end, { x }))
    assert.has_error(function() F.ctc_loss(x, tg, il, tl, { blank = 0 }) end,
      "ctc_loss: blank must be in label range: 1 <= blank <= 4, got 0")
    assert.has_error(function() F.ctc_loss(x, tg, { 7, 5 }, tl) end,
      "ctc_loss: expected input_lengths to have value at most 6, but got value 7")
    assert.has_error(function() F.ctc_loss(x, T.tensor { { 2, 3, 5 }, { 4, 2, 1 } }, il, tl) end,
      "ctc_loss: target class ids must be in 1..4, got 5")
  end)

  it("loss modules take F's options and inputs", function()
    local a, b = T.randn(3, 4), T.randn(3, 4)
    assert.is_true(T.equal(nn.SmoothL1Loss { beta = 0.5 }(a, b), F.smooth_l1_loss(a, b, { beta = 0.5 })))
    assert.is_true(T.equal(nn.HuberLoss { delta = 2 }(a, b), F.huber_loss(a, b, { delta = 2 })))
    local la = a:log_softmax(2)
    assert.is_true(T.equal(nn.KLDivLoss { reduction = "batchmean" }(la, b:softmax(2)),
      F.kl_div(la, b:softmax(2), { reduction = "batchmean" })))
    local y = T.tensor({ 1, -1, 1 }, { dtype = T.float32 })
    assert.is_true(T.equal(nn.CosineEmbeddingLoss { margin = 0.1 }(a, b, y), F.cosine_embedding_loss(a, b, y, { margin = 0.1 })))
    assert.is_true(T.equal(nn.MarginRankingLoss()(a[1], b[1], T.ones(4)), F.margin_ranking_loss(a[1], b[1], T.ones(4))))
    assert.is_true(T.equal(nn.TripletMarginLoss { p = 1 }(a, b, a * 2), F.triplet_margin_loss(a, b, a * 2, { p = 1 })))
    assert.is_true(T.equal(nn.PoissonNLLLoss()(a, b:abs()), F.poisson_nll_loss(a, b:abs())))
    assert.is_true(T.equal(nn.GaussianNLLLoss()(a, b, T.ones(3, 4)), F.gaussian_nll_loss(a, b, T.ones(3, 4))))
    assert.has_error(function() nn.HuberLoss { beta = 1 } end, "HuberLoss: unknown option 'beta' (expected one of: delta, reduction)")
  end)

  it("name bad input", function()
    assert.has_error(function() F.group_norm(T.randn(2, 5, 3), 2) end,
      "group_norm: expected number of channels in input to be divisible by num_groups, but got input of shape "
      .. "[2, 5, 3] and num_groups=2")
    assert.has_error(function() F.smooth_l1_loss(T.ones(2), T.ones(2), "avg") end,
      "smooth_l1_loss: avg is not a valid value for reduction")
    assert.has_error(function() F.gaussian_nll_loss(T.ones(2, 3), T.ones(2, 3), -T.ones(2, 3)) end,
      "gaussian_nll_loss: var has negative entry/entries")
    assert.has_error(function() F.gaussian_nll_loss(T.ones(2, 3), T.ones(2, 3), T.ones(3)) end,
      "gaussian_nll_loss: var is of incorrect size: [3] for an input of [2, 3]")
    assert.has_error(function() F.cosine_embedding_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 2)) end)
    assert.has_error(function() F.max_pool1d(T.ones(2, 2, 2, 2), 2) end,
      "max_pool1d: expected a 2-d (unbatched) or 3-d (batched) input, got 4-d")
    assert.has_error(function() F.adaptive_avg_pool2d(T.ones(4), 2) end,
      "adaptive_avg_pool2d: expected a 3-d (unbatched) or 4-d (batched) input, got 1-d")
    assert.has_error(function() F.rms_norm(T.ones(2, 3), { 4 }) end,
      "rms_norm: the input's last 1 dims do not match normalized_shape [4]")
  end)
end)
