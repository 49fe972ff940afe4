-- The digits CNN and MLP trained WITHOUT autograd: the backward pass is
-- chained by hand from the engine's backward kernels (the ones autograd
-- wires as graph nodes) and matrix products. It checks, end to end, that
-- those kernels, the optimizer, the data loader and the progress/CSV/PNG
-- helpers train a real model; examples/train_digits.lua is the same run
-- written the normal way, with loss:backward().
--
--   tools/fetch_digits.sh && bin/ember examples/train_digits_manual.lua [cnn|mlp|both] [epochs]
local T = require "ember"
local C, nn, optim, data = T._C, T.nn, T.optim, T.data

local which = arg and arg[1] or "both"
local epochs = tonumber(arg and arg[2]) or 15
local out_dir = "runs/digits_manual"
os.execute("mkdir -p " .. out_dir)

local path = "data/digits.csv.gz"
if not io.open(path) then assert(os.execute("tools/fetch_digits.sh >/dev/null") == 0) end
local raw = data.read_csv(path)
local pixels = raw:narrow(2, 1, 64)
local images = ((pixels - pixels:mean()) / pixels:std()):reshape(-1, 1, 8, 8)
local labels = raw:select(2, 65):long() + 1
T.manual_seed(0)
local train_set, test_set = unpack(data.random_split(data.TensorDataset(images, labels), { 0.8, 0.2 }))

-- gradients live in this table; the optimizer reads them through grad_of
local grads = {}
optim.grad_of = function(p) return grads[p] end
optim.set_grad = function(p, g) grads[p] = g end

-- layers with PyTorch's initialisation; their parameters are updated in
-- place here, so they are not marked as requiring grad
local function plain(m)
  for p in m:parameters() do p:requires_grad_(false) end
  return m
end

local function relu_bwd(go, pre) return go * pre:gt(0) end
local function linear_fwd(l, x) return T.linear(x, l.weight, l.bias) end
local function linear_bwd(l, x, go)
  grads[l.weight] = go:t():mm(x)
  grads[l.bias] = go:sum(1)
  return go:mm(l.weight)
end
local function conv_fwd(c, x) return C._nn_conv2d(x, c.weight, c.bias, 1, 1, 1, 1, 1, 1, 1) end
local function conv_bwd(c, x, go)
  grads[c.weight] = C._nn_conv2d_backward_weight(go, x, c.weight.shape, 1, 1, 1, 1, 1, 1, 1)
  grads[c.bias] = C._nn_conv2d_backward_bias(go)
  return C._nn_conv2d_backward_input(go, c.weight, x.shape, 1, 1, 1, 1, 1, 1, 1)
end

local models = {}
function models.cnn()
  local m = { c1 = plain(nn.Conv2d(1, 32, 3, { padding = 1 })), c2 = plain(nn.Conv2d(32, 64, 3, { padding = 1 })),
    fc1 = plain(nn.Linear(64 * 4 * 4, 128)), fc2 = plain(nn.Linear(128, 10)) }
  function m.params()
    return { m.c1.weight, m.c1.bias, m.c2.weight, m.c2.bias, m.fc1.weight, m.fc1.bias, m.fc2.weight, m.fc2.bias }
  end
  function m.forward(x)
    local s = { x = x }
    s.a1 = conv_fwd(m.c1, x)                               -- 32 x 8 x 8
    s.h1 = s.a1:relu()
    s.a2 = conv_fwd(m.c2, s.h1)                            -- 64 x 8 x 8
    s.h2 = s.a2:relu()
    s.p, s.idx = C._nn_max_pool2d(s.h2, 2, 2, 2, 2, 0, 0, 1, 1, false) -- 64 x 4 x 4
    s.f = s.p:reshape(x.shape[1], -1)
    s.a3 = linear_fwd(m.fc1, s.f)
    s.h3 = s.a3:relu()
    return linear_fwd(m.fc2, s.h3), s
  end
  function m.backward(s, go)
    local g = relu_bwd(linear_bwd(m.fc2, s.h3, go), s.a3)
    g = linear_bwd(m.fc1, s.f, g):reshape(s.p.shape)
    g = C._nn_max_pool2d_backward(g, s.idx, s.h2.shape)
    g = conv_bwd(m.c2, s.h1, relu_bwd(g, s.a2))
    conv_bwd(m.c1, s.x, relu_bwd(g, s.a1))
  end
  return m
end
function models.mlp()
  local m = { l1 = plain(nn.Linear(64, 256)), l2 = plain(nn.Linear(256, 10)) }
  function m.params() return { m.l1.weight, m.l1.bias, m.l2.weight, m.l2.bias } end
  function m.forward(x)
    local s = { f = x:reshape(x.shape[1], -1) }
    s.a1 = linear_fwd(m.l1, s.f)
    s.h1 = s.a1:relu()
    return linear_fwd(m.l2, s.h1), s
  end
  function m.backward(s, go)
    local g = relu_bwd(linear_bwd(m.l2, s.h1, go), s.a1)
    linear_bwd(m.l1, s.f, g)
  end
  return m
end

local function accuracy(m, set)
  local correct, total = 0, 0
  for x, y in data.DataLoader(set, { batch_size = 512 }):iter() do
    correct = correct + m.forward(x):argmax(2):eq(y):sum():item()
    total = total + y:numel()
  end
  return correct / total
end

local one = T.tensor(1, { dtype = T.float32 })
local function fit(name)
  local m = models[name]()
  local opt = optim.Adam(m.params(), { lr = 3e-3 })
  local sched = optim.lr_scheduler.CosineAnnealingLR(opt, { T_max = epochs })
  local loader = data.DataLoader(train_set, { batch_size = 32, shuffle = true })
  local log = T.train.CSVLogger(out_dir .. "/" .. name .. ".csv", { "epoch", "lr", "train_loss", "test_acc", "seconds" })
  local losses, accs = {}, {}
  for epoch = 1, epochs do
    local bar = T.train.ProgressBar { total = loader:len(), desc = string.format("%s %2d/%d", name, epoch, epochs) }
    local sum, n = 0, 0
    for x, y in loader:iter() do
      opt:zero_grad()
      local logits, saved = m.forward(x)
      local loss = C._nn_cross_entropy(logits, y, nil, "mean", -100, 0)
      m.backward(saved, C._nn_cross_entropy_backward(one, logits, y, nil, "mean", -100, 0))
      opt:step()
      sum, n = sum + loss:item() * y:numel(), n + y:numel()
      bar:update(1, { loss = sum / n })
    end
    local acc = accuracy(m, test_set)
    bar:close { test_acc = acc }
    losses[epoch], accs[epoch] = sum / n, acc
    log:log { epoch = epoch, lr = opt.param_groups[1].lr, train_loss = sum / n, test_acc = acc, seconds = bar.elapsed }
    sched:step()
  end
  log:close()
  T.train.plot_curves(out_dir .. "/" .. name .. ".png",
    { { title = name .. " training loss", series = { { values = losses, label = "train" } } },
      { title = name .. " test accuracy", ymin = 0.8, ymax = 1, series = { { values = accs, label = "test" } } } })
  return accs[epochs]
end

local final
for _, name in ipairs { "mlp", "cnn" } do
  if which == name or which == "both" then
    final = fit(name)
    print(string.format("%s test accuracy: %.1f%%", name, 100 * final))
  end
end
print(string.format("test accuracy: %.1f%%", 100 * final))
