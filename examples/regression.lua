-- Fits a small MLP to noisy samples of y = sin(3x) + 0.5x on [-2, 2] (and a
-- linear model to a linear target), printing the loss as it falls.
--
--   bin/ember examples/regression.lua
--
-- Needs autograd (loss:backward(), p.grad, T.no_grad).
local T = require "ember"
local nn, F, optim, data = T.nn, T.nn.functional, T.optim, T.data

if not (T.no_grad and T.Tensor_methods.backward) then
  io.stderr:write("regression: this ember has no autograd (loss:backward); nothing to fit with\n")
  os.exit(1)
end

T.manual_seed(42)
-- a linear target first: the fitted weights should come out near the true ones
local X = T.randn(256, 3)
local w_true, b_true = T.tensor { { 2.0, -1.0, 0.5 } }, 0.3
local y = T.linear(X, w_true) + b_true + 0.01 * T.randn(256, 1)
local lin = nn.Linear(3, 1)
local opt = optim.SGD(lin:parameters(), { lr = 0.1, momentum = 0.9 })
for step = 1, 200 do
  opt:zero_grad()
  local loss = F.mse_loss(lin(X), y)
  loss:backward()
  opt:step()
  if step % 50 == 0 then print(string.format("linear step %3d  mse %.5f", step, loss:item())) end
end
print("true weights   ", w_true, b_true)
print("fitted weights ", lin.weight, lin.bias)

-- a curve: an MLP on noisy samples
local n = 512
local x = T.linspace(-2, 2, n):reshape(n, 1)
local target = (x * 3):sin() + 0.5 * x + 0.05 * T.randn(n, 1)
local model = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
local adam = optim.Adam(model:parameters(), { lr = 1e-2 })
local sched = optim.StepLR(adam, { step_size = 100, gamma = 0.5 })
local loader = data.DataLoader(data.TensorDataset(x, target), { batch_size = 64, shuffle = true })
local bar = T.train.ProgressBar { total = 300, desc = "mlp" }
local curve = {}
for epoch = 1, 300 do
  local sum, m = 0, 0
  for xb, yb in loader:iter() do
    adam:zero_grad()
    local loss = F.mse_loss(model(xb), yb)
    loss:backward()
    adam:step()
    sum, m = sum + loss:item(), m + 1
  end
  curve[epoch] = sum / m
  sched:step()
  bar:update(1, { mse = curve[epoch] })
end
bar:close()
local final = T.no_grad(function() return F.mse_loss(model(x), target):item() end)
os.execute("mkdir -p runs")
T.train.plot_curves("runs/regression.png", { { curve } })
print(string.format("final mse over all points: %.4f (noise variance 0.0025); curve in runs/regression.png", final))
