-- The nn pieces of lua/ember/nn/more_layers3.lua (docs/nn.md, "More layers,
-- third round") against PyTorch 1.13 (tests/fixtures/gen_nn_more3.py, float64):
-- values, second outputs (indices: 1-based here) and the input gradients of
-- a weighted sum; then what the fixtures cannot hold: gumbel_softmax's
-- statistics and structure, CrossMapLRN2d's and channel_shuffle's gradients,
-- float32, the lazy modules, printing and the errors.
local T = require "ember"
local F, nn = T.nn.functional, T.nn
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/nn_more3_cases.lua")

local U = require "specutil"
local tensor = U.tensor
local function close(got, want, what, tol)
  assert.are.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  if want:numel() == 0 then return end
  local d = (got:double() - want:double()):abs():max():item()
  assert(d <= (tol or 1e-10) * math.max(1, want:double():abs():max():item()), ("%s: max difference %g"):format(what, d))
end
local f64 = { dtype = T.float64 }
local cls = T.tensor { 3, 1, 5, 2 }                    -- torch's [2, 0, 4, 1] + 1
-- torch's [[3, 0, -1, ...], ...] + 1: 1-based ids, 0 ends a sample's list
local mlt = T.tensor { { 4, 1, 0, 3, 5 }, { 2, 0, 1, 1, 1 }, { 5, 3, 1, 2, 4 }, { 0, 1, 1, 1, 1 } }
local tgt2d = T.tensor { { { 1, 3 }, { 2, 2 } }, { { 3, 1 }, { 1, 2 } } }
local function cosdist(a, b) return 1 - F.cosine_similarity(a, b) end
local function samples() return tensor(cases.fmp_f32.samples) end
local function inorm3d(t, w, b)
  local m = nn.InstanceNorm3d(3, { affine = true, dtype = T.float64 })
  m.weight, m.bias = w, b
  return m(t)
end

local E = {
  relu_ = function(t) return F.relu_(t * 1) end,
  elu_ = function(t) return F.elu_(t * 1, 0.7) end,
  celu_ = function(t) return F.celu_(t * 1, { alpha = 1.3 }) end,
  selu_ = function(t) return F.selu_(t * 1) end,
  leaky_relu_ = function(t) return F.leaky_relu_(t * 1, 0.2) end,
  hardtanh_ = function(t) return F.hardtanh_(t * 1, -0.5, 0.8) end,
  rrelu_ = function(t) return F.rrelu_(t * 1, 0.1, 0.3) end,
  max_pool1d_wi = function(t) return F.max_pool1d_with_indices(t, 3, 2, 1) end,
  max_pool2d_wi = function(t) return F.max_pool2d_with_indices(t, { 2, 3 }, { stride = { 1, 2 }, dilation = { 2, 1 } }) end,
  amax1d_wi = function(t) return F.adaptive_max_pool1d_with_indices(t, 3) end,
  amax2d_wi = function(t) return F.adaptive_max_pool2d_with_indices(t, { 2, 4 }) end,
  up_bilinear_size = function(t) return F.upsample_bilinear(t, { 5, 7 }) end,
  up_bilinear_sf = function(t) return F.upsample_bilinear(t, { scale_factor = 2 }) end,
  up_nearest_sf = function(t) return F.upsample_nearest(t, nil, 2) end,
  UpsamplingBilinear2d = function(t) return nn.UpsamplingBilinear2d({ scale_factor = 3 })(t) end,
  UpsamplingNearest2d = function(t) return nn.UpsamplingNearest2d({ 4, 6 })(t) end,
  multi_margin = function(t) return F.multi_margin_loss(t, cls) end,
  multi_margin_p2 = function(t)
    return F.multi_margin_loss(t, cls, { p = 2, margin = 0.5, weight = T.tensor({ 0.5, 1, 2, 0.25, 1.5 }, f64) })
  end,
  multi_margin_none = function(t) return nn.MultiMarginLoss({ margin = 1.5, reduction = "none" })(t, cls) end,
  multi_margin_1d = function(t) return F.multi_margin_loss(t, T.tensor { 4 }, "sum") end,
  multilabel_margin = function(t) return F.multilabel_margin_loss(t, mlt) end,
  multilabel_margin_none = function(t) return nn.MultiLabelMarginLoss({ reduction = "none" })(t, mlt) end,
  multilabel_margin_1d = function(t) return F.multilabel_margin_loss(t, mlt[1]) end,
  triplet_dist = function(a, p, n) return F.triplet_margin_with_distance_loss(a, p, n) end,
  triplet_dist_cos = function(a, p, n)
    return nn.TripletMarginWithDistanceLoss({ distance_function = cosdist, margin = 0.5, swap = true,
      reduction = "none" })(a, p, n)
  end,
  triplet_dist_sum = function(a, p, n)
    return F.triplet_margin_with_distance_loss(a, p, n, { distance_function = nn.PairwiseDistance({ p = 1 }),
      margin = 2, reduction = "sum" })
  end,
  nll2d = function(t) return nn.NLLLoss2d()(t, tgt2d) end,
  instance_norm3d = inorm3d,
  reflection_pad3d = function(t) return nn.ReflectionPad3d({ 1, 0, 2, 1, 1, 1 })(t) end,
  fmp_size = function(t)
    return F.fractional_max_pool2d(t, { 2, 3 }, { output_size = { 3, 4 }, return_indices = true,
      _random_samples = samples() })
  end,
  fmp_ratio = function(t)
    return nn.FractionalMaxPool2d(3, { output_ratio = { 0.5, 0.7 }, return_indices = true,
      _random_samples = samples() })(t)
  end,
  fmp_unbatched = function(t)
    return F.fractional_max_pool2d(t, 2, { output_size = 5, _random_samples = samples():narrow(1, 1, 1) })
  end,
}

describe("third round of nn layers match PyTorch 1.13", function()
  local names = {}
  for name, c in pairs(cases) do if c.w then names[#names + 1] = name end end
  table.sort(names)
  for _, name in ipairs(names) do
    local c = cases[name]
    it(name .. ": values, indices and input gradients", function()
      local ins = {}
      for i, r in ipairs(c.ins) do ins[i] = tensor(r):requires_grad_() end
      local out, aux = assert(E[name], name)(unpack(ins))
      close(out, tensor(c.out), name)
      if c.aux then
        assert(aux ~= nil, name .. ": expected a second output")
        assert.is_true(T.equal(tensor(c.aux) + 1, aux), name .. ": indices (1-based)")
      end
      local gs = T.autograd.grad({ (out * tensor(c.w)):sum() }, ins, { allow_unused = true })
      for i, g in ipairs(c.grads) do
        local want = tensor(g)
        -- torch's celu_ backward rounds its 1 / alpha coefficient to float32
        -- (its out-of-place celu does not; ember's celu_ gives celu's gradient)
        if want:numel() > 0 then close(gs[i], want, name .. ": gradient " .. i, name == "celu_" and 1e-7 or nil) end
      end
    end)
  end
end)

describe("float32", function()
  it("gives the float64 fixtures' values and gradients to float32 precision, in float32", function()
    local names = {}
    for name, c in pairs(cases) do if c.w then names[#names + 1] = name end end
    table.sort(names)
    for _, name in ipairs(names) do
      local c = cases[name]
      local ins = {}
      for i, r in ipairs(c.ins) do ins[i] = tensor(r):float():requires_grad_() end
      local f = E[name]
      if name == "multi_margin_p2" then
        f = function(t)
          return F.multi_margin_loss(t, cls, { p = 2, margin = 0.5, weight = T.tensor { 0.5, 1, 2, 0.25, 1.5 } })
        end
      elseif name == "instance_norm3d" then
        f = function(t, w, b)
          local m = nn.InstanceNorm3d(3, { affine = true })
          m.weight, m.bias = w, b
          return m(t)
        end
      elseif name:match("^fmp") then
        f = nil -- float32 windows differ by design: checked against torch's float32 below
      end
      if f then
        local out = f(unpack(ins))
        assert.equal(T.float32, out.dtype, name)
        close(out, tensor(c.out), name .. " (float32)", 1e-5)
        local gs = T.autograd.grad({ (out * tensor(c.w):float()):sum() }, ins, { allow_unused = true })
        for i, g in ipairs(c.grads) do
          if g.v[1] ~= nil then
            assert.equal(T.float32, gs[i].dtype)
            close(gs[i], tensor(g), name .. " (float32): gradient " .. i, 1e-4)
          end
        end
      end
    end
  end)
end)

describe("in-place activations", function()
  it("write into the input and return it, as torch's", function()
    for _, f in ipairs { "relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "rrelu_" } do
      local x = T.tensor({ -1, 0.5, 2 }, f64)
      local want = F[f:sub(1, -2)](x:clone())
      local r = F[f](x)
      assert.is_true(rawequal(r, x), f)
      close(x, want, f)
    end
  end)
  it("rrelu_ in training draws slopes in [lower, upper]", function()
    local x = -T.ones(1000)
    F.rrelu_(x, 0.1, 0.3, true)
    assert(x:min():item() >= -0.3 - 1e-6 and x:max():item() <= -0.1 + 1e-6)
    assert(x:std():item() > 0.01)
  end)
  it("refuse unknown options and extra arguments, naming themselves", function()
    assert.has_error(function() F.elu_(T.ones(2), { inplace = true }) end,
      "elu_: unknown option 'inplace' (expected one of: alpha)")
    assert.has_error(function() F.relu_(T.ones(2), 1) end)
    local ok, e = pcall(F.hardtanh_, T.ones(2), 1, -1)
    assert(not ok and tostring(e):find("hardtanh_: min_val cannot be greater than max_val", 1, true), tostring(e))
  end)
  it("refuse a leaf that requires grad", function()
    assert.has_error(function() F.relu_(T.ones(2, { requires_grad = true })) end)
    assert.has_error(function() F.elu_(T.ones(2, { requires_grad = true })) end)
  end)
end)

describe("channel_shuffle", function()
  it("matches torch's values; its gradient is the inverse permutation", function()
    for _, k in ipairs { { "channel_shuffle", function(t) return F.channel_shuffle(t, 3) end },
                         { "ChannelShuffle", function(t) return nn.ChannelShuffle(2)(t) end } } do
      local c = cases[k[1]]
      local x = tensor(c.ins[1]):requires_grad_()
      local y = k[2](x)
      close(y, tensor(c.out), k[1])
      local w = T.randn(y.shape, f64)
      local g = T.autograd.grad({ (y * w):sum() }, { x })[1]
      close(k[2](g), w, k[1] .. ": gradient") -- g is w shuffled back
    end
  end)
  it("checks its groups", function()
    assert.has_error(function() F.channel_shuffle(T.ones(1, 4, 2), 3) end,
      "channel_shuffle: Number of channels must be divisible by groups. Got 4 channels and 3 groups.")
    assert.has_error(function() F.channel_shuffle(T.ones(4, 2), 2) end)
    assert.equal("ChannelShuffle(groups=2)", tostring(nn.ChannelShuffle(2)))
  end)
end)

describe("gumbel_softmax", function()
  it("soft samples are distributions whose argmax frequencies follow softmax(logits)", function()
    T.manual_seed(7)
    local logits = T.tensor({ 0.5, -1, 1.5, 0 }, f64):log_softmax(1)
    local y = F.gumbel_softmax(logits:expand(20000, 4), { tau = 0.5 })
    close(y:sum(2), T.ones(20000, f64), "rows sum to 1")
    local _, idx = y:max(2)
    local freq = F.one_hot(idx, 4):double():mean(1)
    assert((freq - logits:exp()):abs():max():item() < 0.02, tostring(freq))
  end)
  it("hard samples are one-hot with the soft sample's gradient (straight through)", function()
    local logits = T.randn(6, 5, f64):requires_grad_()
    T.manual_seed(3)
    local y = F.gumbel_softmax(logits, 1, true)
    close(y:sum(2), T.ones(6, f64), "one per row")
    assert.is_true(T.equal(y:detach():eq(0):logical_or(y:detach():eq(1)), T.ones(6, 5, { dtype = T.bool })))
    T.manual_seed(3)
    local soft = F.gumbel_softmax(logits, 1, false)
    local w = T.randn(6, 5, f64)
    local g1 = T.autograd.grad({ (y * w):sum() }, { logits })[1]
    local g2 = T.autograd.grad({ (soft * w):sum() }, { logits })[1]
    close(g1, g2, "hard gradient is the soft one")
    -- along another dim
    local yd = F.gumbel_softmax(logits:detach(), { hard = true, dim = 1 })
    close(yd:sum(1), T.ones(5, f64), "dim 1")
  end)
  it("refuses unknown options", function()
    assert.has_error(function() F.gumbel_softmax(T.ones(2, 3), { eps = 1 }) end,
      "gumbel_softmax: unknown option 'eps' (expected one of: dim, hard, tau)")
  end)
end)

describe("CrossMapLRN2d", function()
  it("matches torch's forward (its legacy channel window) for sizes 1, 3, 4, 8", function()
    for _, k in ipairs { { "lrn_cross_map3", nn.CrossMapLRN2d(3, 0.5, 0.75, 1.5) },
                         { "lrn_cross_map4", nn.CrossMapLRN2d(4) },
                         { "lrn_cross_map1", nn.CrossMapLRN2d(1, { alpha = 2, beta = 0.5 }) },
                         { "lrn_cross_map8", nn.CrossMapLRN2d(8, 1) } } do
      local c = cases[k[1]]
      close(k[2](tensor(c.ins[1])), tensor(c.out), k[1])
    end
  end)
  it("its gradient is its forward's (gradcheck) and it prints as torch's", function()
    local x = T.randn(1, 5, 2, 2, f64):requires_grad_()
    assert.is_true(T.autograd.gradcheck(function(t) return nn.CrossMapLRN2d(3, 0.5)(t) end, { x }))
    assert.equal("CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)", tostring(nn.CrossMapLRN2d(3)))
    assert.has_error(function() nn.CrossMapLRN2d(3)(T.ones(2, 3, 4)) end,
      "CrossMapLRN2d: expected a 4-d input (N, C, H, W), got 3-d")
  end)
end)

describe("fractional_max_pool2d", function()
  it("float32: the windows computed in float32 as torch's", function()
    local c = cases.fmp_f32
    local v, i = F.fractional_max_pool2d(tensor(c.ins[1]), 2, { output_size = { 5, 6 }, return_indices = true,
      _random_samples = tensor(c.samples):float() })
    assert.equal(T.float32, v.dtype)
    close(v, tensor(c.out), "fmp f32", 1e-6)
    assert.is_true(T.equal(tensor(c.aux) + 1, i))
  end)
  it("draws its samples when none are given; checks its sizes", function()
    local x = T.randn(2, 3, 9, 9)
    local v, i = F.fractional_max_pool2d(x, 3, { output_ratio = 0.5, return_indices = true })
    assert.are.same({ 2, 3, 4, 4 }, v.shape:totable())
    close(v, x:reshape(2, 3, 81):gather(3, i:reshape(2, 3, 16)):view(2, 3, 4, 4), "values at the indices")
    assert.has_error(function() F.fractional_max_pool2d(x, 3, { output_size = 8 }) end,
      "fractional_max_pool2d: pool height 3 too large relative to input height 9 (output height 8)")
    assert.has_error(function() F.fractional_max_pool2d(x, 3) end)
    assert.has_error(function() nn.FractionalMaxPool2d(2, { output_size = 3, output_ratio = 0.5 }) end)
  end)
end)

describe("InstanceNorm3d and ReflectionPad3d", function()
  it("InstanceNorm3d tracks running stats as InstanceNorm2d does", function()
    local m = nn.InstanceNorm3d(2, { track_running_stats = true })
    local x = T.randn(3, 2, 2, 3, 2)
    m(x)
    close(m.running_mean, x:mean({ 3, 4, 5 }):mean(1) * 0.1, "running_mean", 1e-6)
    m:eval()
    assert.are.same({ 2, 2, 3, 2 }, m(x[1]).shape:totable())
    assert.has_error(function() m(T.ones(2, 2, 2)) end)
  end)
end)

describe("lazy modules", function()
  it("have no parameters before the first forward, then become the regular module", function()
    local m = nn.LazyLinear(4)
    assert.equal(0, #m:parameters())
    assert.equal("LazyLinear(uninitialized)", tostring(m))
    assert.has_error(function() T.optim.SGD(m:parameters(), { lr = 0.1 }) end)
    T.manual_seed(11)
    local y = m(T.ones(2, 3))
    assert.are.same({ 2, 4 }, y.shape:totable())
    assert.equal(2, #m:parameters())
    assert.equal("Linear(in_features=3, out_features=4, bias=true)", tostring(m))
    T.manual_seed(11)
    local ref = nn.Linear(3, 4)
    close(m.weight, ref.weight, "weight drawn as a Linear's at that point")
    close(m.bias, ref.bias, "bias")
    close(m(T.ones(2, 3)), ref(T.ones(2, 3)), "forward")
    assert.has_error(function() m(T.ones(2, 5)) end) -- in_features is fixed now
  end)
  it("infer in_channels / num_features from dim 2 (or 1 unbatched)", function()
    local specs = {
      { nn.LazyConv1d(3, 2, { stride = 2 }), T.randn(2, 5, 7), "Conv1d", 5, { 2, 3, 3 } },
      { nn.LazyConv2d(3, 2, { padding = 1 }), T.randn(4, 6, 5), "Conv2d", 4, { 3, 7, 6 } },
      { nn.LazyConvTranspose1d(2, 3), T.randn(1, 4, 5), "ConvTranspose1d", 4, { 1, 2, 7 } },
      { nn.LazyConvTranspose2d(2, 3, { stride = 2 }), T.randn(1, 3, 2, 2), "ConvTranspose2d", 3, { 1, 2, 5, 5 } },
      { nn.LazyBatchNorm1d(), T.randn(4, 3), "BatchNorm1d", 3, { 4, 3 } },
      { nn.LazyBatchNorm2d({ momentum = 0.2 }), T.randn(2, 5, 2, 2), "BatchNorm2d", 5, { 2, 5, 2, 2 } },
      { nn.LazyInstanceNorm1d({ affine = true }), T.randn(2, 3, 4), "InstanceNorm1d", 3, { 2, 3, 4 } },
      { nn.LazyInstanceNorm2d(), T.randn(2, 3, 4, 4), "InstanceNorm2d", 3, { 2, 3, 4, 4 } },
    }
    for _, s in ipairs(specs) do
      local m, x, cls_name, nf, shape = unpack(s)
      local y = m(x)
      assert.are.same(shape, y.shape:totable(), cls_name)
      assert.equal(cls_name, m.__name)
      assert.equal(nf, m.in_channels or m.num_features, cls_name)
    end
  end)
  it("keep evaluation mode and hooks; refuse bad options at construction", function()
    local m = nn.LazyBatchNorm1d():eval()
    local ok = pcall(m, T.randn(4, 3))
    assert.is_true(ok)
    assert.is_false(m.training)
    close(m.running_mean, T.zeros(3), "no update in evaluation")
    assert.has_error(function() nn.LazyLinear(3, { bais = false }) end,
      "LazyLinear: unknown option 'bais' (expected one of: bias, dtype, device)")
    local seen = 0
    local l = nn.LazyLinear(2)
    l:register_forward_hook(function() seen = seen + 1 end)
    l(T.ones(1, 3)); l(T.ones(1, 3))
    assert.equal(2, seen)
    -- gradients reach the materialised parameters
    local lin = nn.LazyLinear(2)
    lin(T.ones(1, 3)):sum():backward()
    assert(lin.weight.grad ~= nil)
  end)
end)

describe("module printing and errors", function()
  it("print as torch's", function()
    assert.equal("UpsamplingNearest2d(scale_factor=2.0, mode=nearest)", tostring(nn.UpsamplingNearest2d(nil, 2)))
    assert.equal("UpsamplingBilinear2d(size=(3, 3), mode=bilinear)", tostring(nn.UpsamplingBilinear2d({ size = { 3, 3 } })))
    assert.equal("NLLLoss2d()", tostring(nn.NLLLoss2d()))
  end)
  it("losses check their targets", function()
    assert.has_error(function() F.multi_margin_loss(T.ones(2, 3), T.tensor { 1, 4 }) end,
      "multi_margin_loss: target out of range: class ids are 1..3, got 4")
    assert.has_error(function() F.multi_margin_loss(T.ones(2, 3), T.tensor { 1, 2 }, { p = 3 }) end,
      "multi_margin_loss: only p == 1 and p == 2 supported, got 3")
    assert.has_error(function() F.multilabel_margin_loss(T.ones(2, 3), T.tensor { 1, 2 }) end)
    assert.has_error(function() F.triplet_margin_with_distance_loss(T.ones(2), T.ones(2), T.ones(2), { margin = "0" }) end,
      "triplet_margin_with_distance_loss: margin must be a number, got string")
    -- torch's -1 terminator is taken too: the ids end at the first one below 1
    local x = T.randn(2, 4, f64)
    close(F.multilabel_margin_loss(x, T.tensor { { 2, 0, 3, 3 }, { 4, 1, -1, 2 } }),
      F.multilabel_margin_loss(x, T.tensor { { 2, -1, 1, 1 }, { 4, 1, 0, 0 } }), "0 and -1 end the list")
  end)
end)
