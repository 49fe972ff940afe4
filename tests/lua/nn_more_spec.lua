-- The nn pieces of lua/ember/nn/more_layers.lua against PyTorch 1.13
-- (tests/fixtures/gen_nn_more.py): values and the input gradients of a
-- weighted sum; then rrelu's training draws, the modules' arguments and the
-- errors.
local T = require "ember"
local F, nn = T.nn.functional, T.nn
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/nn_more_cases.lua")

local U = require "specutil"
local tensor = U.tensor
local function close(got, want, what)
  assert.are.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  if want:numel() == 0 then return end
  local d = (got:double() - want:double()):abs():max():item()
  assert(d <= 1e-10 * math.max(1, want:abs():max():item()), ("%s: max difference %g"):format(what, d))
end

local E = {
  hardshrink = function(t) return F.hardshrink(t, 0.4) end,
  softshrink = function(t) return F.softshrink(t, { lambd = 0.3 }) end,
  threshold = function(t) return F.threshold(t, 0.1, -2) end,
  rrelu_eval = function(t) return F.rrelu(t, 0.1, 0.3) end,
  pixel_shuffle = function(t) return F.pixel_shuffle(t, 2) end,
  pixel_unshuffle = function(t) return nn.PixelUnshuffle(2)(t) end,
  unfold = function(t) return F.unfold(t, { 2, 3 }, { dilation = { 1, 2 }, padding = 1, stride = { 2, 1 } }) end,
  unfold_k2 = function(t) return nn.Unfold(2)(t) end,
  fold = function(t) return F.fold(t, { 4, 5 }, { 2, 2 }, { stride = { 2, 1 }, padding = { 1, 0 } }) end,
  zeropad = function(t) return nn.ZeroPad2d({ 1, 0, 2, 1 })(t) end,
  constpad1d = function(t) return nn.ConstantPad1d(2, 3.5)(t) end,
  reflpad2d = function(t) return nn.ReflectionPad2d({ 1, 2, 2, 1 })(t) end,
  replpad1d = function(t) return nn.ReplicationPad1d({ 3, 1 })(t) end,
  bilinear = function(p, q, w, b) return F.bilinear(p, q, w, b) end,
  soft_margin = function(p)
    return F.soft_margin_loss(p, T.tensor({ { 1, -1, 1 }, { -1, -1, 1 }, { 1, 1, 1 }, { -1, 1, -1 } }, { dtype = T.float64 }))
  end,
  hinge = function(p) return F.hinge_embedding_loss(p, T.tensor({ 1, -1, -1, 1 }, { dtype = T.float64 }), { margin = 0.7 }) end,
  hinge_none = function(p) return nn.HingeEmbeddingLoss({ reduction = "none" })(p, T.tensor({ 1, -1, -1, 1 }, { dtype = T.float64 })) end,
  softmin = function(t) return nn.Softmin(2)(t) end,
  softmax2d = function(t) return nn.Softmax2d()(t) end,
  lrn = function(t) return F.local_response_norm(t, 3, { alpha = 0.1, beta = 0.6, k = 2 }) end,
  lrn_3d = function(t) return nn.LocalResponseNorm(2)(t) end,
}
local t01 = T.tensor({ { 1, 0, 1 }, { 0, 0, 1 }, { 1, 1, 0 }, { 0, 1, 0 } }, { dtype = T.float64 })
E.multilabel = function(p) return F.multilabel_soft_margin_loss(p, t01) end
E.multilabel_w = function(p)
  return nn.MultiLabelSoftMarginLoss({ weight = T.tensor({ 1, 2, 0.5 }, { dtype = T.float64 }), reduction = "sum" })(p, t01)
end

describe("more nn layers match PyTorch 1.13", function()
  local n = 0
  for name, c in pairs(cases) do
    n = n + 1
    it(name .. ": values and input gradients", function()
      local ins = {}
      for i, r in ipairs(c.ins) do ins[i] = tensor(r):requires_grad_() end
      local out = assert(E[name], name)(unpack(ins))
      close(out, tensor(c.out), name)
      local gs = T.autograd.grad({ (out * tensor(c.w)):sum() }, ins, { allow_unused = true })
      for i, g in ipairs(c.grads) do
        if g.shape[1] ~= 0 or #g.shape > 1 then close(gs[i], tensor(g), name .. " grad " .. i) end
      end
    end)
  end
end)

describe("more nn layers", function()
  it("cover every fixture", function()
    local n = 0
    for _ in pairs(cases) do n = n + 1 end
    assert.are.equal(23, n)
  end)

  it("rrelu draws slopes in [lower, upper] in training, repeatably under a seed", function()
    local x = -T.ones(1000, { dtype = T.float64 })
    T.manual_seed(3)
    local y = F.rrelu(x, { lower = 0.1, upper = 0.3, training = true })
    local slope = -y
    assert.is_true(slope:min():item() >= 0.1 and slope:max():item() <= 0.3)
    assert.is_true(slope:std():item() > 0.03)
    T.manual_seed(3)
    assert.is_true(T.equal(y, F.rrelu(x, { lower = 0.1, upper = 0.3, training = true })))
    local m = nn.RReLU(0.1, 0.3)
    m:eval()
    assert.is_true(T.allclose(m(x), x * 0.2))
    assert.is_true(T.equal(F.rrelu(T.ones(3)), T.ones(3)))
  end)

  it("modules print their arguments and round-trip unfold through fold", function()
    assert.are.equal("Hardshrink(0.5)", tostring(nn.Hardshrink()))
    assert.are.equal("PixelShuffle(upscale_factor=3)", tostring(nn.PixelShuffle(3)))
    assert.are.equal("Bilinear(in1_features=3, in2_features=4, out_features=5, bias=true)", tostring(nn.Bilinear(3, 4, 5)))
    assert.are.equal("ConstantPad2d(padding=(1, 1, 2, 0), value=0.5)", tostring(nn.ConstantPad2d({ 1, 1, 2, 0 }, 0.5)))
    local y = T.arange(1, 17):reshape(1, 1, 4, 4):float()
    assert.is_true(T.equal(F.fold(F.unfold(y, 2, { stride = 2 }), { 4, 4 }, 2, { stride = 2 }), y))
    assert.are.same({ 4, 4 }, F.unfold(T.ones(1, 3, 3), 2).shape:totable()) -- unbatched
    local x = T.ones(2, 3)
    local inp = x:clone()
    assert.is_true(rawequal(inp, F.hardshrink(inp, { lambd = 2, inplace = true })))
    assert.are.equal(0, inp:abs():sum():item())
  end)

  it("refuse bad input naming the op", function()
    local err = U.err
    err(function() return F.softshrink(T.ones(2), -1) end, "softshrink: lambda must be greater or equal to 0, but found to be -1.0.")
    err(function() return F.threshold(T.ones(2), 0.5) end, "threshold: expected a number for value, got nil")
    err(function() return F.hardshrink(T.ones(2), { bad = 1 }) end, "hardshrink: unknown option 'bad'")
    err(function() return F.rrelu(T.ones(2), 0.5, 0.1) end, "rrelu: Lower bound should be less than or equal to the upper bound")
    err(function() return F.pixel_shuffle(T.ones(1, 3, 2, 2), 2) end, "pixel_shuffle: expects its input's 'channel' dimension to be divisible by the square of upscale_factor")
    err(function() return F.pixel_unshuffle(T.ones(1, 1, 3, 2), 2) end, "pixel_unshuffle: expects height and width to be divisible by downscale_factor")
    err(function() return F.unfold(T.ones(2, 3), 2) end, "unfold: Input Error: Only 3D or 4D input Tensors are supported (got 2D)")
    err(function() return F.fold(T.ones(1, 5, 4), { 3, 3 }, 2) end, "fold: Expected size of input's dimension 1 to be divisible by the product of kernel_size")
    err(function() return F.fold(T.ones(1, 4, 3), { 3, 3 }, 2) end, "expected size of input's dimension 2 to match the calculated number of sliding blocks 2 * 2 = 4, but got input.size(2)=3.")
    err(function() return F.bilinear(T.ones(2, 3), T.ones(2, 4), T.ones(5, 4, 4)) end, "bilinear: input1 size does not match weight size: got 3 but expected 4")
    err(function() return F.soft_margin_loss(T.ones(2), T.ones(2), { reduction = "avg" }) end, "soft_margin_loss: avg is not a valid value for reduction")
    err(function() return F.local_response_norm(T.ones(2, 3), 2) end, "local_response_norm: Expected 3D or higher dimensionality input (got 2 dimensions)")
    err(function() return nn.Softmax2d()(T.ones(2, 3)) end, "Softmax2d: expected an input of 3 or 4 dimensions, got 2")
    err(function() return nn.ReflectionPad2d({ 1, 2 }) end, "ReflectionPad2d: expected an integer or 4 paddings")
  end)
end)
