-- The digits CNN of examples/train_digits.lua, shared by the training script
-- and the server in examples/serve/: the layers, how raw pixels become the
-- network's input, and the checkpoint file that carries both.
--
--   local digits = require "digits_model"      -- examples/ on package.path
--   local model, ck = digits.load(T, "runs/digits/cnn.ember")
--   local classes, probs = digits.predict(T, model, ck, pixels) -- [n, 64] in 0..16
--
-- Classes: the network's output k (1-based, as every ember index) is the
-- digit k - 1; predict() returns digit values 0..9.
local M = {}

M.pixels = 64          -- one 8x8 image, row-major
M.pixel_max = 16       -- the data set's intensities are 0..16
M.arch = "digits-cnn-v1"

function M.cnn(T)
  local nn = T.nn
  return nn.Sequential(
    nn.Conv2d(1, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(),   -- 32 x 8 x 8
    nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),    -- 64 x 4 x 4
    nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10))
end

-- Raw pixels [n, 64] (0..16) to the network's input [n, 1, 8, 8]: the
-- training set's mean and standard deviation, saved in the checkpoint.
function M.normalize(pixels, ck)
  return ((pixels - ck.pixel_mean) / ck.pixel_std):reshape(-1, 1, 8, 8)
end

function M.save(T, path, model, pixel_mean, pixel_std)
  T.save(path, { arch = M.arch, state_dict = model:state_dict(),
    pixel_mean = pixel_mean, pixel_std = pixel_std })
end

-- The model in eval mode and the checkpoint (its pixel_mean, pixel_std).
function M.load(T, path)
  local ck = T.load(path)
  if type(ck) ~= "table" or ck.arch ~= M.arch or type(ck.state_dict) ~= "table"
      or type(ck.pixel_mean) ~= "number" or type(ck.pixel_std) ~= "number" then
    error(string.format("digits_model: '%s' is not a checkpoint of examples/train_digits.lua (%s)",
      path, type(ck) == "table" and "arch " .. tostring(ck.arch) or type(ck)), 2)
  end
  local model = M.cnn(T)
  model:load_state_dict(ck.state_dict)
  model:eval()
  return model, ck
end

-- pixels: a float32 tensor [n, 64]. Returns the digits (a Lua list of n
-- integers 0..9) and the probabilities (a float32 tensor [n, 10]; column k
-- is digit k - 1).
function M.predict(T, model, ck, pixels)
  return T.no_grad(function()
    local probs = model(M.normalize(pixels, ck)):softmax(2)
    local classes = (probs:argmax(2) - 1):tolist()
    return classes, probs
  end)
end

return M
