-- meta_nn: the nn ops and the optimizer steps on the meta device. A meta
-- tensor has sizes, strides and a dtype and no values; every op of the
-- family gives on meta tensors exactly the metadata it gives on CPU tensors
-- (the CPU result is the reference), raises the same argument errors, and
-- refuses tensors of two devices. No op of this family has a result whose
-- shape depends on values, so none raises the meta "data dependent" error.
local T = require "ember"
local F = T.nn.functional
local C = T._C


-- m has c's metadata, on the meta device
local same_meta = require("metacheck").same_meta

-- tensors (also those of an options table) moved to meta
local function to_meta(v)
  if T.is_tensor(v) then return v:to("meta") end
  if type(v) ~= "table" then return v end
  local r = {}
  for k, x in pairs(v) do r[k] = T.is_tensor(x) and x:to("meta") or x end
  return r
end

-- f over the CPU arguments and over the same arguments on meta: every
-- result compared (nil results must be nil on both)
local function check(f, ...)
  local args, margs = { ... }, {}
  local n = select("#", ...)
  for i = 1, n do margs[i] = to_meta(args[i]) end
  local cr = table.pack(f(table.unpack(args, 1, n)))
  local mr = table.pack(f(table.unpack(margs, 1, n)))
  assert.are.equal(cr.n, mr.n)
  for i = 1, cr.n do
    if cr[i] == nil then
      assert.is_nil(mr[i], "result " .. i)
    else
      same_meta(cr[i], mr[i], "result " .. i)
    end
  end
  return table.unpack(mr, 1, mr.n)
end

local function ids(shape, hi)
  return T.randint(1, hi + 1, shape)
end

describe("nn ops on meta tensors", function()
  it("conv2d, conv1d and the conv backward ops", function()
    local x, w, b = T.randn(2, 4, 9, 7), T.randn(6, 2, 3, 2), T.randn(6)
    check(F.conv2d, x, w, b, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = { 1, 2 }, groups = 2 })
    check(F.conv2d, x[1], w, nil, { padding = 1, groups = 2 })          -- unbatched
    check(F.conv2d, x:transpose(3, 4), w, b, { groups = 2 })            -- any layout
    check(F.conv1d, T.randn(3, 4, 11), T.randn(5, 4, 3), T.randn(5), { stride = 2, padding = 1 })
    local go = F.conv2d(x, w, nil, { padding = 1, groups = 2 })
    check(C._nn_conv2d_backward_input, go, w, { 2, 4, 9, 7 }, 1, 1, 1, 1, 1, 1, 2)
    check(C._nn_conv2d_backward_weight, go, x, { 6, 2, 3, 2 }, 1, 1, 1, 1, 1, 1, 2)
  end)

  it("conv2d's bias gradient (a sum)", function()
    check(C._nn_conv2d_backward_bias, T.randn(2, 6, 5, 4))
  end)

  it("max_pool2d with its indices, avg_pool2d, and their backward ops", function()
    local x = T.randn(2, 3, 9, 8)
    check(F.max_pool2d, x, 3, { stride = 2, padding = 1, dilation = 1, ceil_mode = true, return_indices = true })
    check(F.max_pool2d, x[1], { 2, 3 })
    check(F.avg_pool2d, x, 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false })
    check(F.avg_pool2d, x, 2, { divisor_override = 3 })
    local y, ix = F.max_pool2d(x, 2, { return_indices = true })
    check(C._nn_max_pool2d_backward, y, ix, { 2, 3, 9, 8 })
    check(C._nn_avg_pool2d_backward, T.randn(2, 3, 5, 5), { 2, 3, 9, 8 }, 2, 2, 2, 2, 1, 1, false, true)
  end)

  it("embedding and its backward op", function()
    local w, t = T.randn(10, 4), ids({ 2, 3 }, 10)
    check(F.embedding, t, w, { padding_idx = 2 })
    check(C._nn_embedding_backward, T.randn(2, 3, 4), t, 10, 2)
  end)

  it("layer_norm and batch_norm with their statistics and backward ops", function()
    local x = T.randn(4, 3, 5)
    local w, b = T.randn(3, 5), T.randn(3, 5)
    check(C._nn_layer_norm, x, 2, w, b, 1e-5)
    check(C._nn_layer_norm_backward, T.randn(4, 3, 5), x, 2, T.randn(4, 1, 1), T.rand(4, 1, 1), w)
    check(C._nn_layer_norm, x:transpose(1, 3), 1, nil, nil, 1e-5)
    check(F.layer_norm, x, { 5 })
    local cw, cb = T.randn(3), T.randn(3)
    check(C._nn_batch_norm, x, cw, cb, T.zeros(3), T.ones(3), true, 0.1, 1e-5)
    check(C._nn_batch_norm, x, nil, nil, T.zeros(3), T.ones(3), false, 0.1, 1e-5)
    check(F.batch_norm, T.randn(6, 3), nil, nil, { training = true })
    check(C._nn_batch_norm_backward, T.randn(4, 3, 5), x, cw, T.randn(3), T.rand(3), true)
    check(C._nn_batch_norm_backward, T.randn(4, 3, 5), x, nil, T.randn(3), T.rand(3), false)
  end)

  it("dropout (p = 1: the mask is a fill)", function()
    -- other p draw the mask with bernoulli_, of the random family
    check(C._nn_dropout, T.randn(5, 4), 1)
    check(C._nn_dropout, T.randn(5, 4):t(), 1)
    local m = T.empty(3, { device = "meta" })
    assert.are.equal(m, F.dropout(m, 0.5, false))
  end)

  it("nll_loss and cross_entropy, forward and backward", function()
    local x, t = T.randn(4, 5), ids({ 4 }, 5)
    local w = T.rand(5)
    for _, red in ipairs({ "none", "mean", "sum" }) do
      check(C._nn_nll_loss, x, t, w, red, -100)
      check(F.cross_entropy, x, t, { reduction = red, weight = w, label_smoothing = 0.1 })
    end
    local _, tw = C._nn_nll_loss(x, t, nil, "mean", -100)
    check(C._nn_nll_loss_backward, T.tensor(0.7), x, t, nil, "mean", -100, tw)
    check(C._nn_nll_loss_backward, T.randn(4), x, t, w, "none", 2, nil)
    check(C._nn_cross_entropy_backward, T.tensor(0.7), x, t, w, "mean", -100, 0.2)
    -- [N, C, d1, d2] with class ids; probabilities of the input's shape
    local x4, t3 = T.randn(2, 3, 4, 5), ids({ 2, 4, 5 }, 3)
    check(F.cross_entropy, x4, t3, { reduction = "none" })
    check(F.cross_entropy, x4, T.rand(2, 3, 4, 5), { reduction = "none", label_smoothing = 0.3 })
    check(F.cross_entropy, T.randn(5), ids({}, 5))
    check(C._nn_cross_entropy_backward, T.randn(2, 4, 5), x4, t3, nil, "none", -100, 0)
  end)

  it("the pointwise losses, forward and backward", function()
    local x, t = T.rand(3, 4), T.rand(3, 4)
    local w, pw = T.rand(3, 4), T.rand(4)
    check(F.mse_loss, x, t, "none")
    check(F.l1_loss, x, t:t():t(), { reduction = "none" })
    check(F.binary_cross_entropy, x, t, { weight = w, reduction = "none" })
    check(F.binary_cross_entropy_with_logits, x, t, { pos_weight = pw, reduction = "none" })
    check(F.mse_loss, x, T.rand(4), "none")                            -- broadcast target
    local g0, g = T.tensor(0.7), T.randn(3, 4)
    check(C._nn_mse_loss_backward, g0, x, t, "mean")
    check(C._nn_l1_loss_backward, g, x, t, "none")
    check(C._nn_binary_cross_entropy_backward, g0, x, t, w, "sum")
    check(C._nn_binary_cross_entropy_with_logits_backward, g, x, t, w, pw, "none")
  end)

  it("the pointwise losses reduced (a sum or mean)", function()
    local x, t = T.rand(3, 4), T.rand(3, 4)
    check(F.mse_loss, x, t)
    check(F.l1_loss, x, t, "sum")
    check(F.binary_cross_entropy, x, t)
    check(F.binary_cross_entropy_with_logits, x, t, { reduction = "sum" })
  end)

  it("raise the CPU's argument errors", function()
    local function meta(...) return T.empty({ ... }, { device = "meta" }) end
    assert.has_error(function() F.conv2d(meta(1, 4, 5, 5), meta(2, 3, 3, 3)) end,
      "conv2d: Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 4, 5, 5] to have 3 "
        .. "channels, but got 4 channels instead")
    assert.has_error(function() F.max_pool2d(meta(1, 1, 4, 4), 2, { padding = 2 }) end,
      "max_pool2d: pad should be at most half of kernel size, but got pad=2 and kernel_size=2")
    assert.has_error(function() F.cross_entropy(meta(2, 3), T.ones(3, { dtype = T.int64, device = "meta" })) end,
      "cross_entropy: expected target of shape [2] for input of shape [2, 3], got [3]")
    assert.has_error(function() C._nn_layer_norm(T.empty(2, 3, { dtype = T.int32, device = "meta" }), 1) end,
      "layer_norm: expected input of dtype float32 or float64, got int32")
  end)

  it("refuse tensors of two devices, naming both", function()
    local mw = T.empty(2, 3, 3, 3, { device = "meta" })
    assert.has_error(function() F.conv2d(T.randn(1, 3, 5, 5), mw) end,
      "conv2d: expected all tensors to be on the same device, but found at least two devices, cpu and meta")
    assert.has_error(function() F.mse_loss(T.randn(3), T.empty(3, { device = "meta" })) end,
      "mse_loss: expected all tensors to be on the same device, but found at least two devices, cpu and meta")
    assert.has_error(function()
      F.cross_entropy(T.empty(2, 3, { device = "meta" }), T.ones(2, { dtype = T.int64 }))
    end, "cross_entropy: expected all tensors to be on the same device, but found at least two devices, meta and cpu")
    assert.has_error(function()
      C._nn_max_pool2d_backward(T.empty(1, 1, 2, 2, { device = "meta" }), T.ones(1, 1, 2, 2, { dtype = T.int64 }), { 1, 1, 4, 4 })
    end, "max_pool2d_backward: expected all tensors to be on the same device, but found at least two devices, meta and cpu")
  end)

  local function graph()
    local x = T.empty(2, 3, 6, 6, { device = "meta" }):requires_grad_()
    local w = T.empty(4, 3, 3, 3, { device = "meta" }):requires_grad_()
    return x, w, F.max_pool2d(F.conv2d(x, w, nil, { padding = 1 }), 2)
  end

  it("record their autograd nodes", function()
    local _, _, y = graph()
    assert.are.equal("MaxPool2DWithIndicesBackward0", y.grad_fn:name())
    assert.are.equal("ConvolutionBackward0", y.grad_fn.next_functions[1][1]:name())
  end)

  it("backpropagate on meta: the gradients have the inputs' metadata", function()
    local x, w, y = graph()
    y:backward(T.empty(2, 4, 3, 3, { device = "meta" }))
    same_meta(T.empty(2, 3, 6, 6), x.grad, "x.grad")
    same_meta(T.empty(4, 3, 3, 3), w.grad, "w.grad")
  end)
end)

describe("optimizer steps on meta parameters", function()
  local grads = setmetatable({}, { __mode = "k" })
  local saved_grad_of
  before_each(function()
    saved_grad_of = T.optim.grad_of
    T.optim.grad_of = function(p) return grads[p] end
  end)
  after_each(function() T.optim.grad_of = saved_grad_of end)

  -- the optimizer's state after two steps, on meta as on the CPU
  local cases = {
    { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true }, { "momentum_buffer" } },
    { "Adam", { amsgrad = true, weight_decay = 0.1 }, { "exp_avg", "exp_avg_sq", "max_exp_avg_sq" } },
    { "AdamW", {}, { "exp_avg", "exp_avg_sq" } },
    { "RMSprop", { momentum = 0.5, centered = true }, { "square_avg", "momentum_buffer", "grad_avg" } },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " makes its state and changes no metadata", function()
      local cp = T.randn(4, 3):t()                   -- a strided parameter
      local mp = cp:to("meta")
      grads[cp], grads[mp] = T.randn(3, 4), T.empty(3, 4, { device = "meta" })
      local co, mo = T.optim[c[1]]({ cp }, c[2]), T.optim[c[1]]({ mp }, c[2])
      for _ = 1, 2 do
        co:step()
        mo:step()
      end
      same_meta(cp, mp, "the parameter")
      for _, slot in ipairs(c[3]) do
        same_meta(co.state[cp][slot], mo.state[mp][slot], slot)
      end
    end)
  end

  it("refuse a gradient on another device", function()
    local p = T.randn(3)
    grads[p] = T.empty(3, { device = "meta" })
    assert.has_error(function() T.optim.SGD({ p }, { lr = 0.1 }):step() end,
      "SGD: expected all tensors to be on the same device, but found at least two devices, cpu and meta")
    local mp = T.empty(3, { device = "meta" })
    grads[mp] = T.randn(3)
    assert.has_error(function() T.optim.Adam({ mp }):step() end,
      "Adam: expected all tensors to be on the same device, but found at least two devices, meta and cpu")
  end)
end)

describe("a model on meta: its shapes without memory", function()
  it("model:to('meta'), a forward pass, a loss and backward make no storage bytes", function()
    local nn = T.nn
    local m = nn.Sequential(nn.Conv2d(1, 8, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(8 * 14 * 14, 64), nn.Dropout(0.5), nn.Linear(64, 10))
    m:to("meta")
    for _, p in ipairs(m:parameters()) do assert.are.equal("meta", tostring(p.device)) end
    collectgarbage()
    local before = T.memory_stats().thread_live_bytes
    local x = T.empty(512, 1, 28, 28, { device = "meta" })
    local out = m:forward(x)
    assert.are.same({ 512, 10 }, { out:size(1), out:size(2) })
    assert.are.equal("meta", tostring(out.device))
    local loss = F.cross_entropy(out, T.empty(512, { dtype = T.int64, device = "meta" }))
    loss:backward()
    for _, p in ipairs(m:parameters()) do
      assert.are.same(p:size(), p.grad:size())
      assert.are.equal("meta", tostring(p.grad.device))
    end
    -- the batch alone would be 1.6 MB on the CPU and the activations far more
    assert.are.equal(before, T.memory_stats().thread_live_bytes)
  end)
end)
