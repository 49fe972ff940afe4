-- End to end: small models learn on synthetic data with autograd through
-- the nn ops, the optimizers and the DataLoader (a few dozen steps, fast).
local T = require "ember"
local nn, F, optim, data = T.nn, T.nn.functional, T.optim, T.data

describe("training end to end", function()
  before_each(function() T.manual_seed(0) end)

  it("an MLP classifier's cross_entropy falls by a clear factor (Adam, DataLoader)", function()
    -- three Gaussian blobs in 2-d, class ids 1..3
    local n = 150
    local centers = T.tensor({ { 2, 0 }, { -2, 1 }, { 0, -2 } })
    local y = T.arange(0, n):remainder(3):long() + 1
    local x = centers:index_select(1, y) + T.randn(n, 2) * 0.5
    local model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    local opt = optim.Adam(model:parameters(), { lr = 0.05 })
    local loader = data.DataLoader(data.TensorDataset(x, y), { batch_size = 50, shuffle = true })
    local function full_loss() return T.no_grad(function() return F.cross_entropy(model(x), y):item() end) end
    local first = full_loss()
    for _ = 1, 10 do
      for xb, yb in loader:iter() do
        opt:zero_grad()
        F.cross_entropy(model(xb), yb):backward()
        opt:step()
      end
    end
    local last = full_loss()
    assert.is_true(last < first / 5, string.format("loss %.4f -> %.4f", first, last))
    local acc = T.no_grad(function() return model(x):argmax(2):eq(y):double():mean():item() end)
    assert.is_true(acc > 0.95, "accuracy " .. acc)
  end)

  it("a CNN (conv, batch_norm, max_pool, dropout) learns to tell bars apart (SGD with momentum)", function()
    -- 6x6 images with a horizontal (class 1) or vertical (class 2) bar, noisy
    local n = 64
    local imgs = T.randn(n, 1, 6, 6) * 0.3
    local y = T.zeros(n, { dtype = T.int64 })
    for i = 1, n do
      local pos = (i * 7) % 6 + 1
      if i % 2 == 1 then imgs[{ i, 1, pos }] = imgs[{ i, 1, pos }] + 1; y[i] = 1
      else imgs[{ i, 1, {}, pos }] = imgs[{ i, 1, {}, pos }] + 1; y[i] = 2 end
    end
    local model = nn.Sequential(nn.Conv2d(1, 4, 3, { padding = 1 }), nn.BatchNorm2d(4), nn.ReLU(),
      nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), nn.Linear(4 * 3 * 3, 2))
    local opt = optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
    local function eval_loss()
      model:eval()
      local l = T.no_grad(function() return F.cross_entropy(model(imgs), y):item() end)
      model:train()
      return l
    end
    local first = eval_loss()
    for _ = 1, 30 do
      opt:zero_grad()
      local loss = F.cross_entropy(model(imgs), y)
      assert.equal("NllLossBackward0", loss.grad_fn:name())
      loss:backward()
      opt:step()
    end
    local last = eval_loss()
    assert.is_true(last < first / 4, string.format("loss %.4f -> %.4f", first, last))
  end)

  it("a regression with mse_loss fits a line (parameters near the truth)", function()
    local x = T.rand(100, 1) * 4 - 2
    local y = x * 3 + 0.5 + T.randn(100, 1) * 0.05
    local lin = nn.Linear(1, 1)
    local opt = optim.SGD(lin:parameters(), { lr = 0.1 })
    for _ = 1, 200 do
      opt:zero_grad()
      F.mse_loss(lin(x), y):backward()
      opt:step()
    end
    assert.is_true(math.abs(lin.weight:item() - 3) < 0.05, "weight " .. lin.weight:item())
    assert.is_true(math.abs(lin.bias:item() - 0.5) < 0.05, "bias " .. lin.bias:item())
  end)
end)
