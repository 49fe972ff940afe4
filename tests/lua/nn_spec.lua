-- nn: the kernels against PyTorch (tests/fixtures/nn_cases.lua, forward
-- values and the gradients of each op's graph node, which the engine
-- records), then the modules, init and error messages.
local T = require "ember"
local nn, F = T.nn, T.nn.functional
local cases = dofile("tests/fixtures/nn_cases.lua")

local function tensor(rec, requires_grad)
  if rec == nil then return nil end
  local dt = T[rec.dtype]
  local t
  if #rec.shape == 0 then t = T.tensor(rec.v[1], { dtype = dt })
  else t = T.tensor(rec.v, { dtype = dt }):reshape(rec.shape) end
  if requires_grad then t:requires_grad_(true) end
  return t
end

local function ids(list)
  return T.tensor(list, { dtype = T.int64 })
end

local function maxdiff(a, b)
  if a.numel and a:numel() == 0 then return 0 end
  return (a:to(T.float64) - b:to(T.float64)):abs():max():item()
end

-- asserts got matches the fixture record (values and shape)
local function same(got, rec, what, tol)
  assert(got ~= nil, what .. ": missing")
  local want = tensor(rec)
  assert.are.equal(tostring(want.shape), tostring(got.shape), what .. ": shape")
  local d = maxdiff(got:reshape(want.shape), want)
  local scale = math.max(1, want:abs():max():item())
  assert(d <= (tol or 1e-10) * scale, string.format("%s: max difference %g", what, d))
end

-- runs fn (an nn op on the inputs, a list with holes: n slots) and returns
-- its output, a backward (grad_output -> one gradient per input slot, from
-- the op's recorded graph node through T.autograd.grad) and fn's second
-- result
local function capture(inputs, n, fn)
  local ok, a, b2 = pcall(fn)
  if not ok then error(a, 0) end
  local bwd = function(go)
    local list, slot = {}, {}
    for i = 1, n do
      if inputs[i] ~= nil then list[#list + 1], slot[#list + 1] = inputs[i], i end
    end
    local gs = T.autograd.grad({ a }, list, { grad_outputs = { go }, retain_graph = true, allow_unused = true })
    local res = {}
    for k, i in pairs(slot) do res[i] = gs[k] end
    return res
  end
  return a, bwd, b2
end

local runners = {
  conv2d = function(c)
    local x, w, b = tensor(c.x, true), tensor(c.w, true), tensor(c.b, true)
    local out, bwd = capture({ x, w, b }, 3, function()
      return F.conv2d(x, w, b, { stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups })
    end)
    local g = bwd(tensor(c.go))
    return out, { gx = g[1], gw = g[2], gb = g[3] }
  end,
  conv1d = function(c)
    local x, w, b = tensor(c.x, true), tensor(c.w, true), tensor(c.b, true)
    local out, bwd = capture({ x, w, b }, 3, function()
      return F.conv1d(x, w, b, { stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups })
    end)
    -- the node is recorded on the 3-d output (the kernel's [N, C, L, 1] views stay inside)
    local g = bwd(tensor(c.go))
    return out, { gx = g[1], gw = g[2], gb = g[3] }
  end,
  max_pool2d = function(c)
    local x = tensor(c.x, true)
    local out, bwd, idx = capture({ x }, 1, function()
      return F.max_pool2d(x, c.kernel, { stride = c.stride, padding = c.padding, dilation = c.dilation,
        ceil_mode = c.ceil_mode, return_indices = true })
    end)
    assert.are.same(c.indices, idx:tolist())
    return out, { gx = bwd(tensor(c.go))[1] }
  end,
  avg_pool2d = function(c)
    local x = tensor(c.x, true)
    local out, bwd = capture({ x }, 1, function()
      return F.avg_pool2d(x, c.kernel, { stride = c.stride, padding = c.padding, ceil_mode = c.ceil_mode,
        count_include_pad = c.count_include_pad, divisor_override = c.divisor_override })
    end)
    return out, { gx = bwd(tensor(c.go))[1] }
  end,
  embedding = function(c)
    local w = tensor(c.w, true)
    local out, bwd = capture({ w }, 1, function() return F.embedding(ids(c.ids), w, { padding_idx = c.padding_idx }) end)
    return out, { gw = bwd(tensor(c.go))[1] }
  end,
  layer_norm = function(c)
    local x, w, b = tensor(c.x, true), tensor(c.w, true), tensor(c.b, true)
    local shape = {}
    for i = #c.x.shape - c.nd + 1, #c.x.shape do shape[#shape + 1] = c.x.shape[i] end
    local out, bwd = capture({ x, w, b }, 3, function() return F.layer_norm(x, shape, w, b, 1e-5) end)
    local g = bwd(tensor(c.go))
    return out, { gx = g[1], gw = g[2], gb = g[3] }
  end,
  batch_norm = function(c)
    local x, w, b = tensor(c.x, true), tensor(c.w, true), tensor(c.b, true)
    local rm, rv = tensor(c.rm), tensor(c.rv)
    local out, bwd = capture({ x, w, b }, 3, function() return F.batch_norm(x, rm, rv, w, b, c.training, 0.1, 1e-5) end)
    same(rm, c.rm_after, "running_mean")
    same(rv, c.rv_after, "running_var")
    local g = bwd(tensor(c.go))
    return out, { gx = g[1], gw = g[2], gb = g[3] }
  end,
  cross_entropy = function(c)
    local x = tensor(c.x, true)
    local t = c.tp and tensor(c.tp) or ids(c.t)
    local out, bwd = capture({ x }, 1, function()
      return F.cross_entropy(x, t, { weight = tensor(c.w), reduction = c.reduction, ignore_index = c.ignore_index,
        label_smoothing = c.label_smoothing })
    end)
    return out, { gx = bwd(tensor(c.go))[1] }
  end,
  nll_loss = function(c)
    local x = tensor(c.x, true)
    local out, bwd = capture({ x }, 1, function()
      return F.nll_loss(x, ids(c.t), { weight = tensor(c.w), reduction = c.reduction, ignore_index = c.ignore_index })
    end)
    return out, { gx = bwd(tensor(c.go))[1] }
  end,
  binary_cross_entropy = function(c)
    local x = tensor(c.x, true)
    local out, bwd = capture({ x }, 1, function()
      return F.binary_cross_entropy(x, tensor(c.t), { weight = tensor(c.w), reduction = c.reduction })
    end)
    return out, { gx = bwd(tensor(c.go))[1] }
  end,
  binary_cross_entropy_with_logits = function(c)
    local x = tensor(c.x, true)
    local out, bwd = capture({ x }, 1, function()
      return F.binary_cross_entropy_with_logits(x, tensor(c.t), { weight = tensor(c.w), pos_weight = tensor(c.pw),
        reduction = c.reduction })
    end)
    return out, { gx = bwd(tensor(c.go))[1] }
  end,
}
for _, name in ipairs { "mse_loss", "l1_loss" } do
  runners[name] = function(c)
    local x = tensor(c.x, true)
    local out, bwd = capture({ x }, 1, function() return F[name](x, tensor(c.t), { reduction = c.reduction }) end)
    return out, { gx = bwd(tensor(c.go))[1] }
  end
end

describe("nn kernels against PyTorch", function()
  local count = {}
  for i, c in ipairs(cases) do
    count[c.kind] = (count[c.kind] or 0) + 1
    local label = string.format("%s #%d%s", c.kind, count[c.kind], c.reduction and (" (" .. c.reduction .. ")") or "")
    it(label .. ": forward and backward", function()
      local out, grads = runners[c.kind](c)
      same(out, c.out, "output")
      for _, k in ipairs { "gx", "gw", "gb" } do
        if c[k] then same(grads[k], c[k], k) end
      end
    end)
  end

  it("float32 conv2d agrees with the float64 result to float precision", function()
    local c = cases[1]
    local x, w, b = tensor(c.x):float(), tensor(c.w):float(), tensor(c.b):float()
    local out = F.conv2d(x, w, b, { stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups })
    assert.are.equal(T.float32, out.dtype)
    same(out, c.out, "float32 output", 1e-5)
  end)

  it("conv2d backward kernels agree with central differences", function()
    T.manual_seed(3)
    local x, w = T.randn({ 1, 2, 5, 4 }, { dtype = T.float64 }), T.randn({ 3, 2, 3, 2 }, { dtype = T.float64 })
    local s, p, d = { 2, 1 }, { 1, 1 }, { 1, 2 }
    local function f(xx, ww) return F.conv2d(xx, ww, nil, { stride = s, padding = p, dilation = d }) end
    local go = T.randn(f(x, w).shape, { dtype = T.float64 })
    local gx = T._C._nn_conv2d_backward_input(go, w, x.shape, s[1], s[2], p[1], p[2], d[1], d[2], 1)
    local gw = T._C._nn_conv2d_backward_weight(go, x, w.shape, s[1], s[2], p[1], p[2], d[1], d[2], 1)
    local eps = 1e-6
    for _, pair in ipairs { { x, gx, true }, { w, gw, false } } do
      local t, g = pair[1], pair[2]
      local flat = t:view(-1)
      for k = 1, t:numel(), 3 do
        local v = flat[k]:item()
        flat[k] = v + eps
        local up = ((pair[3] and f(t, w) or f(x, t)) * go):sum():item()
        flat[k] = v - eps
        local dn = ((pair[3] and f(t, w) or f(x, t)) * go):sum():item()
        flat[k] = v
        assert(math.abs((up - dn) / (2 * eps) - g:view(-1)[k]:item()) < 1e-6)
      end
    end
  end)
end)

describe("nn functional", function()
  it("avg_pool2d counts padding in the divisor by default, also with an options table", function()
    local x = T.ones(1, 1, 3, 3)
    assert.near(4 / 9, F.avg_pool2d(x, 3, { stride = 1, padding = 1 })[1][1][1][1]:item(), 1e-7)
    assert.near(1, F.avg_pool2d(x, 3, { stride = 1, padding = 1, count_include_pad = false })[1][1][1][1]:item(), 1e-7)
    assert.near(4 / 9, F.avg_pool2d(x, 3, 1, 1)[1][1][1][1]:item(), 1e-7)
  end)

  it("dropout zeroes about p of the elements and scales the rest by 1/(1-p)", function()
    T.manual_seed(0)
    local x = T.ones(10000)
    local y = F.dropout(x, 0.3)
    local kept = y:ne(0):sum():item()
    assert(math.abs(kept / 10000 - 0.7) < 0.03)
    assert(maxdiff(y:masked_select(y:ne(0)), T.full({ kept }, 1 / 0.7)) < 1e-6)
    assert.are.equal(x, F.dropout(x, 0.3, false))
    assert.are.equal(0, F.dropout(x, 1):abs():sum():item())
  end)

  it("the same seed gives the same dropout mask", function()
    T.manual_seed(5)
    local a = F.dropout(T.ones(100), 0.5)
    T.manual_seed(5)
    local b = F.dropout(T.ones(100), 0.5)
    assert.is_true(a:equal(b))
  end)

  it("conv2d takes unbatched input and padding='same'", function()
    local x, w = T.randn(3, 6, 5), T.randn(4, 3, 3, 3)
    local y = F.conv2d(x, w, nil, { padding = "same" })
    assert.are.same({ 4, 6, 5 }, y.shape:totable())
    local yb = F.conv2d(x:unsqueeze(1), w, nil, 1, 1)
    assert(maxdiff(y, yb[1]) < 1e-5)
  end)

  it("explains bad input", function()
    assert.has_error(function() F.conv2d(T.randn(1, 4, 5, 5), T.randn(2, 3, 3, 3)) end,
      "conv2d: Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 4, 5, 5] to have 3 channels, but got 4 channels instead")
    assert.has_error(function() F.conv2d(T.randn(1, 3, 2, 2), T.randn(2, 3, 3, 3)) end,
      "conv2d: kernel size (3 x 3) (dilated) can't be greater than the padded input size (2 x 2)")
    assert.has_error(function() F.cross_entropy(T.randn(2, 3), T.tensor { 1, 4 }) end,
      "cross_entropy: target 4 is out of bounds for 3 classes (class ids are 1..3)")
    assert.has_error(function() F.cross_entropy(T.randn(2, 3), T.tensor { 0, 1 }) end,
      "cross_entropy: target 0 is out of bounds for 3 classes (class ids are 1..3)")
    assert.has_error(function() F.mse_loss(T.randn(2), T.randn(2), "avg") end,
      'mse_loss: avg is not a valid value for reduction (expected "mean", "sum" or "none")')
    assert.has_error(function() F.embedding(T.tensor { 0 }, T.randn(3, 2)) end,
      "embedding: id 0 is out of range for 3 rows (ids are 1..3)")
    assert.has_error(function() F.dropout(T.randn(2), 1.5) end,
      "dropout: dropout probability has to be between 0 and 1, but got 1.5")
    assert.has_error(function() F.max_pool2d(T.randn(1, 1, 4, 4), 2, { padding = 2 }) end,
      "max_pool2d: pad should be at most half of kernel size, but got pad=2 and kernel_size=2")
    assert.has_error(function() F.binary_cross_entropy(T.tensor { 1.5 }, T.tensor { 1.0 }) end,
      "binary_cross_entropy: all elements of input should be between 0 and 1 (found 1.5)")
    assert.has_error(function() F.conv2d(T.randn(1, 1, 3, 3):int(), T.randn(1, 1, 1, 1)) end,
      "conv2d: expected input of dtype float32 or float64, got int32")
    assert.has_error(function() F.batch_norm(T.randn(1, 3), nil, nil, nil, nil, true) end,
      "batch_norm: Expected more than 1 value per channel when training, got input size [1, 3]")
    assert.has_error(function() F.cross_entropy(T.randn(2, 3), T.tensor { 1, 2 }, { smoothing = 0.1 }) end,
      "cross_entropy: unknown option 'smoothing'")
  end)
end)

describe("nn modules", function()
  it("Linear and Conv2d use PyTorch's default initialisation bounds", function()
    T.manual_seed(1)
    local l = nn.Linear(50, 20)
    local bound = 1 / math.sqrt(50)
    assert(l.weight:abs():max():item() <= bound)
    assert(l.weight:abs():max():item() > 0.9 * bound)
    assert(l.bias:abs():max():item() <= bound)
    assert.is_true(l.weight.requires_grad)
    local c = nn.Conv2d(4, 8, 3)
    local cb = 1 / math.sqrt(4 * 9)
    assert(c.weight:abs():max():item() <= cb and c.weight:abs():max():item() > 0.9 * cb)
    assert.are.same({ 8, 4, 3, 3 }, c.weight.shape:totable())
    -- uniform in [-b, b]: the variance is b^2 / 3
    local big = nn.Linear(1000, 100)
    local var = big.weight:var():item()
    assert(math.abs(var - (1 / 1000) / 3) / ((1 / 1000) / 3) < 0.05)
  end)

  it("init functions follow PyTorch's formulas", function()
    T.manual_seed(2)
    local w = T.empty(200, 300)
    nn.init.xavier_uniform_(w)
    local a = math.sqrt(6 / 500)
    assert(w:abs():max():item() <= a and w:abs():max():item() > 0.95 * a)
    nn.init.kaiming_normal_(w, { mode = "fan_out", nonlinearity = "relu" })
    assert(math.abs(w:std():item() - math.sqrt(2 / 200)) < 0.01 * 2)
    nn.init.zeros_(w)
    assert.are.equal(0, w:abs():sum():item())
    nn.init.ones_(w)
    assert.are.equal(60000, w:sum():item())
    assert.are.equal(5 / 3, nn.init.calculate_gain("tanh"))
    assert.has_error(function() nn.init.xavier_uniform_(T.empty(3)) end,
      "xavier_uniform_: Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got 1-d)")
  end)

  it("Sequential runs its modules in order and names them 1, 2, ...", function()
    local m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    local names = {}
    for n, p in m:named_parameters() do names[#names + 1] = n end
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias" }, names)
    local x = T.randn(5, 4)
    local want = T.linear(T.linear(x, m[1].weight, m[1].bias):relu(), m[3].weight, m[3].bias)
    assert(maxdiff(m(x), want) < 1e-6)
    assert.are.equal(4, #m:parameters())
    assert.are.equal(3, #m:children())
    assert.are.equal(4 * 3 + 3 + 3 * 2 + 2, m:num_parameters())
    assert.are.equal("Sequential(\n  (1): Linear(in_features=4, out_features=3, bias=true)\n  (2): ReLU()\n"
      .. "  (3): Linear(in_features=3, out_features=2, bias=true)\n)", tostring(m))
  end)

  it("custom modules register parameters, buffers and children by assignment", function()
    local Net = nn.Module:extend("Net")
    function Net:init()
      self.fc = nn.Linear(3, 2)
      self.scale = nn.Parameter(T.ones(2))
      self:register_buffer("count", T.zeros(1))
      self.note = "plain field"
    end
    function Net:forward(x) return self.fc(x) * self.scale end
    local net = Net()
    local names = {}
    for n in net:named_parameters() do names[#names + 1] = n end
    assert.are.same({ "scale", "fc.weight", "fc.bias" }, names)
    -- PyTorch's order: a module's own parameters and buffers, then its children's
    assert.are.same({ "scale", "count", "fc.weight", "fc.bias" }, net:state_dict():keys())
    assert.are.equal("plain field", net.note)
    assert.are.same({ 4, 2 }, net(T.randn(4, 3)).shape:totable())
  end)

  it("state_dict and load_state_dict round-trip, and check keys and shapes", function()
    local a, b = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)), nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    a(T.randn(6, 3)) -- moves the running stats
    b:load_state_dict(a:state_dict())
    for k, v in pairs(a:state_dict()) do assert.is_true(v:equal(b:state_dict()[k]), k) end
    local sd = a:state_dict()
    sd["1.weight"] = T.zeros(2, 2)
    assert.has_error(function() b:load_state_dict(sd) end,
      "load_state_dict: size mismatch for 1.weight: copying a param with shape ember.Size([2, 2]), the shape in the current model is ember.Size([4, 3])")
    local partial = { ["1.weight"] = T.zeros(4, 3) }
    assert.has_error(function() b:load_state_dict(partial) end)
    local missing = b:load_state_dict(partial, { strict = false })
    -- 1.bias, 2.weight, 2.bias, 2.running_mean, 2.running_var: a dict
    -- without num_batches_tracked gets it as 0, as PyTorch's _NormBase does
    assert.are.equal(5, #missing)
    assert.are.equal(0, b[1].weight:abs():sum():item())
  end)

  it("train and eval switch every module; Dropout and BatchNorm follow", function()
    T.manual_seed(4)
    local m = nn.Sequential(nn.BatchNorm1d(3), nn.Dropout(0.5))
    local x = T.randn(8, 3) * 2 + 1
    local y = m(x)
    assert.is_true(y:eq(0):any():item())
    local rm = m[1].running_mean
    -- momentum 0.1 toward the batch mean, from 0
    assert(maxdiff(rm, x:mean(1) * 0.1) < 1e-6)
    assert(maxdiff(m[1].running_var, T.ones(3) * 0.9 + x:var(1) * 0.1) < 1e-5)
    assert.are.equal(1, m[1].num_batches_tracked:item())
    m:eval()
    assert.is_false(m.training)
    assert.is_false(m[2].training)
    local z = m(x)
    local want = (x - m[1].running_mean) / (m[1].running_var + 1e-5):sqrt()
    assert(maxdiff(z, want) < 1e-5)
    m:train()
    assert.is_true(m[1].training)
  end)

  it("layers compute what their functional forms do", function()
    local x = T.randn(2, 3, 6, 6)
    assert(maxdiff(nn.MaxPool2d(2)(x), F.max_pool2d(x, 2)) == 0)
    assert(maxdiff(nn.AvgPool2d(3, { stride = 1, padding = 1 })(x), F.avg_pool2d(x, 3, 1, 1)) == 0)
    assert.are.same({ 2, 108 }, nn.Flatten()(x).shape:totable())
    local ln = nn.LayerNorm(6)
    local y = ln(x)
    assert(y:mean(-1):abs():max():item() < 1e-5)
    local e = nn.Embedding(10, 4, { padding_idx = 2 })
    assert.are.equal(0, e.weight[2]:abs():sum():item())
    assert.are.same({ 2, 3, 4 }, e(T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }).shape:totable())
    assert(maxdiff(nn.Softmax(2)(x[1][1]), x[1][1]:softmax(2)) == 0)
    assert(maxdiff(nn.GELU()(x), x:gelu()) == 0)
    assert(maxdiff(nn.Tanh()(x), x:tanh()) == 0)
    assert(maxdiff(nn.Sigmoid()(x), x:sigmoid()) == 0)
    local c1 = nn.Conv1d(3, 5, 3, { padding = 1 })
    assert.are.same({ 2, 5, 7 }, c1(T.randn(2, 3, 7)).shape:totable())
    local loss = nn.CrossEntropyLoss { label_smoothing = 0.1 }
    local logits, t = T.randn(4, 3), T.tensor { 1, 2, 3, 1 }
    assert(maxdiff(loss(logits, t), F.cross_entropy(logits, t, { label_smoothing = 0.1 })) == 0)
    assert.has_error(function() nn.BatchNorm2d(3)(T.randn(2, 3)) end, "BatchNorm2d: expected 4D input (got 2D input)")
  end)

  it("ModuleList holds modules in order", function()
    local l = nn.ModuleList { nn.Linear(2, 2), nn.Linear(2, 3) }
    l:append(nn.ReLU())
    assert.are.equal(3, l:len())
    local n = 0
    for i, m in ipairs(l) do n = n + 1 end
    assert.are.equal(3, n)
    assert.are.equal(4, #l:parameters())
  end)

  it("to(dtype) converts parameters and buffers", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    m:to(T.float64)
    assert.are.equal(T.float64, m[1].weight.dtype)
    assert.is_true(m[1].weight.requires_grad)
    assert.are.equal(T.float64, m[2].running_mean.dtype)
    assert.are.equal(T.int64, m[2].num_batches_tracked.dtype)
    assert.are.equal(T.float64, m(T.randn({ 3, 2 }, { dtype = T.float64 })).dtype)
  end)

  it("to takes non_blocking (a boolean, passed to each tensor's to)", function()
    local m = nn.Linear(2, 3)
    assert.are.equal(m, m:to("cpu", { non_blocking = true }))
    m:to({ device = "cpu", dtype = T.float64, non_blocking = false })
    assert.are.equal(T.float64, m.weight.dtype)
    assert.has_error(function() m:to({ non_blocking = "yes" }) end,
      "Module.to: option 'non_blocking' must be a boolean, got string")
    assert.has_error(function() m:to({ nonblocking = true }) end,
      "to: unknown option 'nonblocking' (expected one of: dtype, device, non_blocking)")
  end)
end)
