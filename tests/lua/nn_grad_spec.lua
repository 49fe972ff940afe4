-- nn ops in the autograd graph: every op built on an nn kernel with a
-- separate backward kernel records one node (PyTorch's name), its gradients
-- match float64 finite differences (T.autograd.gradcheck), and one training
-- step of a small CNN (conv + pool + linear + cross_entropy, SGD with
-- momentum) matches PyTorch's (tests/fixtures/train_step_cases.lua from
-- gen_train_step.py).
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack
local nn, F = T.nn, T.nn.functional

local D = T.float64
local function r(...)
  local t = T.randn(...)
  return t:double():requires_grad_(true)
end

local function check(fn, inputs)
  assert.is_true(T.autograd.gradcheck(fn, inputs, { atol = 1e-6, rtol = 1e-4 }))
end

describe("nn ops: gradcheck (float64) and node names", function()
  before_each(function() T.manual_seed(7) end)

  it("conv2d (stride, padding, dilation, groups, bias) is ConvolutionBackward0", function()
    local x, w, b = r(2, 4, 5, 6), r(6, 2, 3, 2), r(6)
    local y = F.conv2d(x, w, b, { stride = { 2, 1 }, padding = 1, dilation = { 1, 2 }, groups = 2 })
    assert.equal("ConvolutionBackward0", y.grad_fn:name())
    check(function(x, w, b)
      return F.conv2d(x, w, b, { stride = { 2, 1 }, padding = 1, dilation = { 1, 2 }, groups = 2 })
    end, { x, w, b })
    check(function(x, w) return F.conv2d(x, w) end, { r(1, 2, 4, 4), r(3, 2, 2, 2) })
  end)

  it("conv2d of an unbatched input and conv1d", function()
    check(function(x, w, b) return F.conv2d(x, w, b, { padding = 1 }) end, { r(2, 4, 4), r(3, 2, 3, 3), r(3) })
    local x, w, b = r(2, 3, 7), r(4, 3, 3), r(4)
    assert.equal("ConvolutionBackward0", F.conv1d(x, w, b).grad_fn:name())
    check(function(x, w, b) return F.conv1d(x, w, b, { stride = 2, padding = 1 }) end, { x, w, b })
    check(function(x, w) return F.conv1d(x, w, nil, { padding = "same", dilation = 2 }) end, { r(3, 5), r(2, 3, 3) })
  end)

  it("max_pool2d is MaxPool2DWithIndicesBackward0; avg_pool2d is AvgPool2DBackward0", function()
    local x = r(2, 3, 6, 5)
    assert.equal("MaxPool2DWithIndicesBackward0", F.max_pool2d(x, 2).grad_fn:name())
    assert.equal("AvgPool2DBackward0", F.avg_pool2d(x, 2).grad_fn:name())
    check(function(x) return F.max_pool2d(x, 3, { stride = 2, padding = 1 }) end, { x })
    check(function(x) return F.max_pool2d(x, 2, { ceil_mode = true }) end, { x })
    check(function(x) return F.avg_pool2d(x, 3, { stride = 2, padding = 1, count_include_pad = false }) end, { x })
    check(function(x) return F.avg_pool2d(x, 2, { ceil_mode = true }) end, { x })
  end)

  it("embedding is EmbeddingBackward0 (repeated ids sum, padding_idx gets none)", function()
    local w = r(5, 3)
    local ids = T.tensor({ { 1, 3, 3 }, { 5, 2, 1 } })
    local y = F.embedding(ids, w)
    assert.equal("EmbeddingBackward0", y.grad_fn:name())
    check(function(w) return F.embedding(ids, w) end, { w })
    F.embedding(ids, w, { padding_idx = 3 }):sum():backward()
    assert.same({ 0, 0, 0 }, w.grad[3]:tolist())
    assert.same({ 2, 2, 2 }, w.grad[1]:tolist())
  end)

  it("layer_norm is NativeLayerNormBackward0 (input, weight, bias)", function()
    local x, w, b = r(3, 2, 4), r(2, 4), r(2, 4)
    assert.equal("NativeLayerNormBackward0", F.layer_norm(x, { 2, 4 }, w, b).grad_fn:name())
    check(function(x, w, b) return F.layer_norm(x, { 2, 4 }, w, b) end, { x, w, b })
    check(function(x) return F.layer_norm(x, 4) end, { x })
  end)

  it("batch_norm is NativeBatchNormBackward0 (training and eval)", function()
    local x, w, b = r(4, 3, 2, 2), r(3), r(3)
    assert.equal("NativeBatchNormBackward0", F.batch_norm(x, nil, nil, w, b, true).grad_fn:name())
    check(function(x, w, b) return F.batch_norm(x, nil, nil, w, b, true) end, { x, w, b })
    check(function(x, w, b) return F.batch_norm(x, nil, nil, w, b, true) end, { r(5, 3), r(3), r(3) })
    local rm, rv = T.randn(3):double(), T.rand(3):double() + 0.5
    check(function(x, w, b) return F.batch_norm(x, rm, rv, w, b, false) end, { x, w, b })
  end)

  it("dropout is NativeDropoutBackward0 and passes the gradient through the kept elements", function()
    local x = r(50)
    local y = F.dropout(x, 0.4)
    assert.equal("NativeDropoutBackward0", y.grad_fn:name())
    y:sum():backward()
    -- the gradient is the scale 1/(1-p) where the output kept the element, 0 elsewhere
    local kept = y:detach():ne(0)
    local expect = T.where(kept, T.full({ 50 }, 1 / 0.6, { dtype = D }), T.zeros(50, { dtype = D }))
    assert.is_true(T.allclose(x.grad, expect))
    assert.is_nil(F.dropout(x, 0.4, false).grad_fn)
  end)

  it("cross_entropy and nll_loss are NllLossBackward0 (weights, ignore_index, smoothing, reductions)", function()
    local x = r(5, 4)
    local t = T.tensor({ 1, 4, 2, 2, 3 })
    local cw = T.rand(4):double() + 0.5
    assert.equal("NllLossBackward0", F.cross_entropy(x, t).grad_fn:name())
    check(function(x) return F.cross_entropy(x, t) end, { x })
    check(function(x) return F.cross_entropy(x, t, { weight = cw, ignore_index = 2 }) end, { x })
    check(function(x) return F.cross_entropy(x, t, { label_smoothing = 0.1, reduction = "sum" }) end, { x })
    check(function(x) return F.cross_entropy(x, t, { reduction = "none" }) end, { x })
    local lp = r(5, 4)
    assert.equal("NllLossBackward0", F.nll_loss(lp, t).grad_fn:name())
    check(function(lp) return F.nll_loss(lp, t, { weight = cw }) end, { lp })
    check(function(lp) return F.nll_loss(lp, t, { reduction = "none", ignore_index = 4 }) end, { lp })
    -- spatial: [N, C, d] with [N, d] targets
    check(function(x) return F.cross_entropy(x, T.tensor({ { 1, 3 }, { 2, 2 } })) end, { r(2, 3, 2) })
  end)

  it("mse_loss and l1_loss, with respect to the input and the target", function()
    local a, b = r(3, 4), r(3, 4)
    assert.equal("MseLossBackward0", F.mse_loss(a, b).grad_fn:name())
    assert.equal("L1LossBackward0", F.l1_loss(a, b).grad_fn:name())
    check(function(a, b) return F.mse_loss(a, b) end, { a, b })
    check(function(a, b) return F.mse_loss(a, b, { reduction = "none" }) end, { a, b })
    check(function(a, b) return F.l1_loss(a, b, { reduction = "sum" }) end, { a, b })
  end)

  it("binary_cross_entropy(_with_logits)", function()
    local p = (T.rand(3, 4):double() * 0.8 + 0.1):requires_grad_(true)
    local t = T.rand(3, 4):double()
    local w = T.rand(3, 4):double()
    assert.equal("BinaryCrossEntropyBackward0", F.binary_cross_entropy(p, t).grad_fn:name())
    check(function(p) return F.binary_cross_entropy(p, t, { weight = w }) end, { p })
    local z = r(3, 4)
    local pw = T.rand(4):double() + 0.5
    assert.equal("BinaryCrossEntropyWithLogitsBackward0",
      F.binary_cross_entropy_with_logits(z, t).grad_fn:name())
    check(function(z) return F.binary_cross_entropy_with_logits(z, t, { pos_weight = pw, weight = w }) end, { z })
  end)

  it("composes with engine ops: a conv net's input gradient", function()
    local w1, w2 = r(3, 1, 3, 3), r(2, 3 * 2 * 2)
    local x = r(2, 1, 5, 5)
    check(function(x, w1, w2)
      local h = F.max_pool2d(F.conv2d(x, w1, nil, { padding = 1 }):tanh(), 2)
      return F.cross_entropy(F.linear(h:flatten(2), w2), T.tensor({ 1, 2 }))
    end, { x, w1, w2 })
  end)
end)

describe("nn ops in the graph: PyTorch's rules", function()
  it("an in-place change of a saved input fails the backward with PyTorch's message", function()
    local x, w = r(1, 1, 4, 4), r(1, 1, 2, 2)
    local h = x * 1
    local y = F.conv2d(h, w)
    h:add_(1)
    assert.has_error(function() y:sum():backward() end)
    local ok, err = pcall(function() y:sum():backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("modified by an inplace operation", 1, true))
  end)

  it("a second backward without retain_graph is refused; with it, gradients accumulate", function()
    local x, w = r(1, 1, 4, 4), r(1, 1, 2, 2)
    local y = F.conv2d(x, w):sum()
    y:backward()
    local ok, err = pcall(function() y:backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("second time", 1, true))
    local z = F.conv2d(x, w):sum()
    local g1 = w.grad:clone()
    z:backward { retain_graph = true }
    z:backward()
    assert.is_true(T.allclose(w.grad, g1 * 3))
  end)

  it("nothing is recorded under no_grad or when no input requires grad", function()
    local x, w = r(1, 1, 4, 4), r(1, 1, 2, 2)
    assert.is_nil(T.no_grad(function() return F.conv2d(x, w) end).grad_fn)
    assert.is_nil(F.conv2d(x:detach(), w:detach()).grad_fn)
    assert.is_false(F.cross_entropy(T.randn(2, 3), T.tensor({ 1, 2 })).requires_grad)
  end)

  it("T.autograd.grad through nn ops; a conv's weight gradient only when asked", function()
    local x, w = r(2, 2, 4, 4), T.randn(3, 2, 3, 3):double()
    local gx = T.autograd.grad(F.conv2d(x, w):sum(), x)
    assert.same({ 2, 2, 4, 4 }, gx.shape:totable())
    assert.is_nil(w.grad)
  end)
end)

-- gradgradcheck: gradcheck of the first gradient. h(inputs..., v) is the
-- gradient of <fn(inputs), v> w.r.t. the inputs that require grad, taken
-- with create_graph; its Jacobian (by double backward) must match finite
-- differences of it, w.r.t. the inputs and w.r.t. v (the grad_output).
local function gradgradcheck(fn, inputs)
  local n = #inputs
  local y = fn(unpack(inputs, 1, n))
  local v = T.randn(y.shape):double():requires_grad_(true)
  local all = {}
  for i = 1, n do all[i] = inputs[i] end
  all[n + 1] = v
  local function h(...)
    local args = { ... }
    local diff = {}
    for i = 1, n do if args[i].requires_grad then diff[#diff + 1] = args[i] end end
    local gs = T.autograd.grad({ fn(unpack(args, 1, n)) }, diff,
      { grad_outputs = { args[n + 1] }, create_graph = true, allow_unused = true })
    local res = {}
    for i = 1, #diff do if gs[i] then res[#res + 1] = gs[i] end end
    return res
  end
  -- the recorded first gradient (create_graph) equals the plain one
  local plain = {}
  for i = 1, n do if inputs[i].requires_grad then plain[#plain + 1] = inputs[i] end end
  local gp = T.autograd.grad({ fn(unpack(inputs, 1, n)) }, plain, { grad_outputs = { v }, allow_unused = true })
  local gr = h(unpack(all, 1, n + 1))
  local k = 0
  for i = 1, #plain do
    if gp[i] then
      k = k + 1
      assert.is_true(T.allclose(gr[k]:detach(), gp[i], 1e-9, 1e-12),
        string.format("input %d: the recorded gradient differs from the plain one by %g", i,
          (gr[k]:detach() - gp[i]):abs():max():item()))
    end
  end
  assert.is_true(T.autograd.gradcheck(h, all, { atol = 1e-6, rtol = 1e-4 }))
end

describe("nn ops: second derivatives (gradgradcheck, float64)", function()
  before_each(function() T.manual_seed(11) end)
  local function both(fn, inputs)
    check(fn, inputs)
    gradgradcheck(fn, inputs)
  end

  it("conv2d (stride, padding, dilation, groups, bias)", function()
    both(function(x, w, b) return F.conv2d(x, w, b, { stride = 2, padding = 1 }) end,
      { r(2, 2, 4, 4), r(3, 2, 3, 3), r(3) })
    both(function(x, w) return F.conv2d(x, w, nil, { padding = 1, dilation = 2, groups = 2 }) end,
      { r(1, 4, 5, 5), r(2, 2, 2, 2) })
  end)

  it("conv1d", function()
    both(function(x, w, b) return F.conv1d(x, w, b, { stride = 2, padding = 1 }) end,
      { r(2, 2, 6), r(3, 2, 3), r(3) })
  end)

  it("relu, gelu (both forms), tanh, sigmoid", function()
    local x = r(3, 4)
    x = (x + x:sign() * 0.1):detach():requires_grad_(true)  -- away from relu's kink
    both(F.relu, { x })
    both(F.gelu, { r(3, 4) })
    both(function(t) return F.gelu(t, "tanh") end, { r(3, 4) })
    both(F.tanh, { r(3, 4) })
    both(F.sigmoid, { r(3, 4) })
  end)

  it("softmax, log_softmax, linear", function()
    both(function(t) return F.softmax(t, 2) end, { r(3, 4) })
    both(function(t) return F.log_softmax(t, 1) end, { r(3, 4) })
    both(F.linear, { r(3, 4), r(2, 4), r(2) })
  end)

  it("mse_loss (mean, none), l1_loss, both inputs", function()
    both(function(a, b) return F.mse_loss(a, b) end, { r(3, 4), r(3, 4) })
    both(function(a, b) return F.mse_loss(a, b, "none") end, { r(3, 4), r(4) })
    both(function(a, b) return F.l1_loss(a, b, "sum") end, { r(3, 4), r(3, 4) })
  end)

  it("cross_entropy (weights, label smoothing, ignore_index, none, probabilities) and nll_loss", function()
    local t, w = T.tensor({ 1, 3, 2 }), T.tensor({ 1, 2, 3, 4 }):double()
    both(function(x) return F.cross_entropy(x, t) end, { r(3, 4) })
    both(function(x) return F.cross_entropy(x, t, { weight = w, label_smoothing = 0.2 }) end, { r(3, 4) })
    both(function(x) return F.cross_entropy(x, t, { reduction = "none", ignore_index = 3 }) end, { r(3, 4) })
    local pt = T.randn(3, 4):double():softmax(2)
    both(function(x) return F.cross_entropy(x, pt, { label_smoothing = 0.1 }) end, { r(3, 4) })
    -- probabilities are differentiable too (as in PyTorch)
    both(function(x, p) return F.cross_entropy(x, p, { weight = w, label_smoothing = 0.1 }) end,
      { r(3, 4), pt:clone():requires_grad_(true) })
    both(function(x, p) return F.cross_entropy(x, p, { reduction = "none" }) end,
      { r(2, 3, 2), T.randn(2, 3, 2):double():softmax(2):requires_grad_(true) })
    both(function(x) return F.cross_entropy(x, T.tensor({ { 2, 1 }, { 3, 1 } }), { reduction = "sum" }) end, { r(2, 3, 2) })
    both(function(x) return F.nll_loss(x, t, { weight = w }) end, { r(3, 4) })
    both(function(x) return F.nll_loss(x, t, "none") end, { r(3, 4) })
  end)

  it("layer_norm and batch_norm (training and eval)", function()
    both(function(x, w, b) return F.layer_norm(x, { 4 }, w, b) end, { r(3, 4), r(4), r(4) })
    both(function(x) return F.layer_norm(x, { 3, 4 }) end, { r(2, 3, 4) })
    both(function(x, w, b) return F.batch_norm(x, nil, nil, w, b, true) end, { r(4, 3, 2), r(3), r(3) })
    local rm, rv = T.randn(3):double(), T.rand(3):double() + 0.5
    both(function(x, w, b) return F.batch_norm(x, rm, rv, w, b, false) end, { r(4, 3, 2), r(3), r(3) })
  end)

  it("pooling, embedding, dropout, binary cross entropy", function()
    both(function(x) return F.max_pool2d(x, 2) end, { r(1, 2, 4, 4) })
    both(function(x) return F.avg_pool2d(x, 3, { stride = 2, padding = 1 }) end, { r(1, 2, 5, 5) })
    local ids = T.tensor({ { 1, 3 }, { 3, 2 } })
    both(function(w) return F.embedding(ids, w, { padding_idx = 4 }) end, { r(4, 3) })
    both(function(x) T.manual_seed(3) return F.dropout(x, 0.5) end, { r(3, 4) })
    local p, bt = (T.rand(3, 4):double() * 0.8 + 0.1):requires_grad_(true), T.rand(3, 4):double()
    both(function(x) return F.binary_cross_entropy(x, bt, { weight = T.rand(4):double():fill_(0.7) }) end, { p })
    local pw = T.tensor({ 1, 2, 3, 0.5 }):double()
    both(function(x, y) return F.binary_cross_entropy_with_logits(x, y, { pos_weight = pw }) end,
      { r(3, 4), T.rand(3, 4):double():requires_grad_(true) })
  end)

  it("the backward of a backward is recorded: ConvolutionBackwardBackward0", function()
    local x, w = r(1, 2, 4, 4), r(3, 2, 3, 3)
    local gx = T.autograd.grad(F.conv2d(x, w):pow(2):sum(), x, { create_graph = true })
    assert.equal("ConvolutionBackwardBackward0", gx.grad_fn:name())
    -- d/dw of |gx|^2 exists and matches a float64 finite difference in one element
    local gw = T.autograd.grad((gx * gx):sum(), w)
    local eps, flat = 1e-6, w:detach():view(-1)
    local function val()
      local g = T.autograd.grad(F.conv2d(x, w):pow(2):sum(), x)
      return (g * g):sum():item()
    end
    local orig = flat[5]:item()
    T.no_grad(function() flat[5] = orig + eps end)
    local up = val()
    T.no_grad(function() flat[5] = orig - eps end)
    local down = val()
    T.no_grad(function() flat[5] = orig end)
    assert.near((up - down) / (2 * eps), gw:view(-1)[5]:item(), 1e-4)
  end)
end)

describe("nn ops: the graph's checks", function()
  it("an in-place change of a saved input is caught at backward", function()
    local x, w = r(1, 2, 4, 4), r(3, 2, 3, 3)
    local y = F.conv2d(x * 1, w)
    T.no_grad(function() w:mul_(2) end)
    local ok, err = pcall(function() y:sum():backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("modified by an inplace operation", 1, true))
    assert.truthy(tostring(err):find("ConvolutionBackward0", 1, true))
    local a, b = r(3), r(3)
    local l = F.mse_loss(a, b)
    T.no_grad(function() b:add_(1) end)
    ok, err = pcall(function() l:backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("MseLossBackward0", 1, true))
  end)

  it("a second backward without retain_graph is refused", function()
    local x = r(2, 3)
    local l = F.layer_norm(x, { 3 }):pow(2):sum()
    l:backward()
    local ok, err = pcall(function() l:backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("backward through the graph a second time", 1, true))
  end)

  it("fused backward kernels refuse to run where their result would need a graph", function()
    local C = T._C
    local x, go = r(2, 3), r(2, 3)
    local _, mean, rstd = C._nn_layer_norm(x:detach(), 1, nil, nil, 1e-5)
    local ok, err = pcall(C._nn_layer_norm_backward, go, x, 1, mean, rstd)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("layer_norm_backward: this fused backward kernel is not differentiable", 1, true))
    ok, err = pcall(C._nn_mse_loss_backward, T.tensor(1):double():requires_grad_(true), x, x:detach(), "mean")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("mse_loss_backward", 1, true))
    -- outside grad mode they run
    T.no_grad(function() assert.same({ 2, 3 }, C._nn_layer_norm_backward(go, x, 1, mean, rstd).shape:totable()) end)
  end)

  it("binary_cross_entropy's target gets -logit(p), as PyTorch 1.13's", function()
    local p = T.tensor({ 0.2, 0.7, 0.5 }, { dtype = T.float64 }):requires_grad_(true)
    local t = T.tensor({ 0, 1, 0.3 }, { dtype = T.float64 }):requires_grad_(true)
    F.binary_cross_entropy(p, t):backward()
    -- torch 1.13: t.grad [0.46209812037329684, -0.28243262012906784, 0.0]
    local want = { 0.46209812037329684, -0.28243262012906784, 0.0 }
    for i = 1, 3 do assert.near(want[i], t.grad[i]:item(), 1e-15) end
  end)

  it("no node outside grad mode or when nothing requires grad", function()
    local x, w = T.randn(1, 2, 4, 4), T.randn(3, 2, 3, 3)
    assert.is_nil(F.conv2d(x, w).grad_fn)
    local wg = w:clone():requires_grad_(true)
    assert.is_nil(T.no_grad(function() return F.conv2d(x, wg) end).grad_fn)
    assert.equal("ConvolutionBackward0", F.conv1d(T.randn(1, 2, 5), T.randn(3, 2, 2):requires_grad_(true)).grad_fn:name())
  end)
end)

-- the nn ops no longer use it; the binding of em_autograd_record (a host's
-- own differentiable op) stays covered here
describe("C._autograd_custom: an op whose backward is a Lua function", function()
  local custom = T._C._autograd_custom
  it("records a named node; the gradient is what the function returns", function()
    local x = r(3)
    local out = custom("TripleBackward0", { x, n = 1 }, x:detach() * 3,
      function(go) return { go * 3 } end)
    assert.equal("TripleBackward0", out.grad_fn:name())
    out:sum():backward()
    assert.same({ 3, 3, 3 }, x.grad:tolist())
  end)

  it("an error in the Lua backward is the backward's error", function()
    local x = r(2)
    local out = custom("BadBackward0", { x, n = 1 }, x:detach() * 1,
      function() error("bad gradient here", 0) end)
    local ok, err = pcall(function() out:sum():backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("bad gradient here", 1, true))
  end)

end)

describe("nn training steps", function()
  it("many training steps leave no Lua functions or tensors behind", function()
    local m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Dropout(0.1), nn.Linear(8, 3))
    local opt = T.optim.SGD(m:parameters(), { lr = 0.01, momentum = 0.9 })
    local x, y = T.randn(4, 1, 6, 6), T.tensor({ 1, 2, 3, 1 })
    local function live()
      -- a node's function holds its inputs, whose nodes are freed a cycle later
      for _ = 1, 30 do collectgarbage() end
      local n = 0
      for _, v in pairs(debug.getregistry()) do if type(v) == "function" then n = n + 1 end end
      return n
    end
    local function step() opt:zero_grad(); F.cross_entropy(m(x), y):backward(); opt:step() end
    for _ = 1, 20 do step() end
    local before = live()
    for _ = 1, 300 do step() end
    assert.is_true(live() <= before + 2)
  end)
end)

describe("one training step of a small CNN matches PyTorch", function()
  local fx = dofile("tests/fixtures/train_step_cases.lua")
  local function tensor(rec)
    local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
    return t:reshape(rec.shape)
  end

  it("conv + pool + linear + cross_entropy, SGD with momentum and weight decay, two steps", function()
    local model = nn.Sequential(nn.Conv2d(1, 4, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Linear(4 * 3 * 3, 5))
    local sd = {}
    for k, rec in pairs(fx.initial) do sd[k] = tensor(rec) end
    model:load_state_dict(sd)
    local opt = T.optim.SGD(model:parameters(), { lr = fx.lr, momentum = fx.momentum, weight_decay = fx.weight_decay })
    local x, y = tensor(fx.x), tensor(fx.y)
    for step = 1, #fx.losses do
      opt:zero_grad()
      local loss = F.cross_entropy(model(x), y)
      assert.is_true(math.abs(loss:item() - fx.losses[step]) < 1e-5,
        string.format("step %d: loss %.8f, torch %.8f", step, loss:item(), fx.losses[step]))
      loss:backward()
      opt:step()
    end
    local after = model:state_dict()
    for k, rec in pairs(fx.after) do
      local expect = tensor(rec)
      local got = after[k]
      assert.is_true(T.allclose(got, expect, 1e-5, 1e-6),
        string.format("%s differs from torch by %g", k, (got - expect):abs():max():item()))
    end
  end)
end)
