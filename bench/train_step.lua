-- One training step (zero_grad, forward, cross_entropy, backward, SGD with
-- momentum) of the digits MLP and CNN (examples/train_digits.lua), batch 32,
-- one thread; prints the median milliseconds per step. bench/train_step.py
-- is the same in PyTorch; run both for the ratio:
--
--   bin/ember bench/train_step.lua [steps]; /usr/bin/python3 bench/train_step.py [steps]
--
-- The batch is the first 32 rows of data/digits.csv.gz when
-- tools/fetch_digits.sh has fetched it, else a seeded random batch of the
-- same shape (the time of a step does not depend on the values).
local T = require "ember"
local nn, F = T.nn, T.nn.functional
T.set_num_threads(1)
T.manual_seed(0)
local steps = tonumber(arg and arg[1]) or 50

local x, y
local f = io.open("data/digits.csv.gz")
if f then
  f:close()
  local raw = T.data.read_csv("data/digits.csv.gz"):narrow(1, 1, 32)
  x = raw:narrow(2, 1, 64):reshape(32, 1, 8, 8) / 16
  y = raw:select(2, 65):long() + 1
else
  x, y = T.rand(32, 1, 8, 8), T.randint(1, 11, { 32 })
end

local models = {
  mlp = function()
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
      nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
  end,
  cnn = function()
    return nn.Sequential(
      nn.Conv2d(1, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(),
      nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10))
  end,
}

local clock = T.train.clock
for _, name in ipairs({ "mlp", "cnn" }) do
  local model = models[name]()
  model:train()
  local opt = T.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
  local function step()
    opt:zero_grad()
    local loss = F.cross_entropy(model(x), y)
    loss:backward()
    opt:step()
  end
  for _ = 1, 5 do step() end
  local times = {}
  for i = 1, steps do
    collectgarbage("step")
    local t0 = clock()
    step()
    times[i] = (clock() - t0) * 1000
  end
  table.sort(times)
  print(string.format("ember %s train step: %.3f ms (median of %d)", name, times[math.floor((steps + 1) / 2)], steps))
end
