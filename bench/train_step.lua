-- One training step (zero_grad, forward, cross_entropy, backward, optimizer
-- step) of the digits MLP and CNN (examples/train_digits.lua), batch 32,
-- one thread; prints the median milliseconds per step. bench/train_step.py
-- is the same in PyTorch; run both for the ratio:
--
--   bin/ember bench/train_step.lua [steps]; /usr/bin/python3 bench/train_step.py [steps]
--
-- The models, batch and optimizers are bench/train_models.lua's (shared
-- with `make bench`, whose train_* rows time the same steps).
local T = require "ember"
T.set_num_threads(1)
local steps = tonumber(arg and arg[1]) or 50
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local W = dofile(here .. "train_models.lua")(T)
local x, y = W.batch()

local clock = T.train.clock
for _, case in ipairs({ { "mlp", "sgd" }, { "mlp", "adam" }, { "cnn", "sgd" } }) do
  local step = W.step_fn(case[1], case[2], x, y)
  -- warm-up: a second of steps, as `make bench` warms up. The first
  -- ~100 steps of a process are slower (fresh pages until the collector
  -- has freed the first temporaries; docs/performance.md): that phase is
  -- printed apart.
  local cold = {}
  for i = 1, 20 do
    local t0 = clock()
    step()
    cold[i] = (clock() - t0) * 1000
  end
  table.sort(cold)
  local w0 = clock()
  while clock() - w0 < 1 do step() end
  local times = {}
  for i = 1, steps do
    collectgarbage("step")
    local t0 = clock()
    step()
    times[i] = (clock() - t0) * 1000
  end
  table.sort(times)
  print(string.format("ember %s train step (%s): %.3f ms (median of %d; first 20 steps: %.3f ms)",
    case[1], case[2], times[math.floor((steps + 1) / 2)], steps, cold[10]))
end
