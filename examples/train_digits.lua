-- Trains a small CNN and an MLP on the handwritten digits (1797 8x8 images
-- from Debian's python3-sklearn; tools/fetch_digits.sh fetches them), with
-- a progress bar, a CSV log and a PNG of the curves under runs/digits/,
-- then saves the CNN (with the pixel normalisation: examples/digits_model.lua),
-- reloads it and predicts. examples/serve/ serves the saved CNN from nginx.
--
--   tools/fetch_digits.sh && bin/ember examples/train_digits.lua [cnn|mlp|both] [epochs] [out_dir] [--device cuda]
--
-- Needs autograd (loss:backward(), p.grad, T.no_grad).
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack
local nn, F, optim, data = T.nn, T.nn.functional, T.optim, T.data
-- the CNN, its input and its checkpoint, shared with examples/serve/
local digits = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/digits_model.lua")

-- --device cuda (anywhere among the arguments) trains on the GPU: the
-- model and the optimizer's state there, batches from pinned memory by
-- non-blocking copies; the checkpoint is saved from the CPU.
local args, device = {}, "cpu"
do
  local i, a = 1, arg or {}
  while a[i] ~= nil do
    if a[i] == "--device" then
      device = a[i + 1] or error("train_digits: --device needs a value (cpu or cuda)")
      i = i + 2
    else
      args[#args + 1] = a[i]
      i = i + 1
    end
  end
end
if device ~= "cpu" and device ~= "cuda" then error("train_digits: --device must be cpu or cuda, got " .. device) end
if device == "cuda" and not T.cuda.is_available() then
  io.stderr:write("train_digits: --device cuda, but T.cuda.is_available() is false\n")
  os.exit(1)
end
local which = args[1] or "both"
local epochs = tonumber(args[2]) or 10
local out_dir = args[3] or "runs/digits"
-- Models this small train fastest on one thread: a batch of 32 8x8 images
-- gives each kernel too little work to share, and on a busy machine waiting
-- threads cost more than they bring.
T.set_num_threads(1)
os.execute("mkdir -p '" .. out_dir .. "'")

if not (T.no_grad and T.Tensor_methods.backward) then
  io.stderr:write("train_digits: this ember has no autograd (loss:backward); nothing to train with\n")
  os.exit(1)
end

-- -- data ----------------------------------------------------------------------------
local path = "data/digits.csv.gz"
if not io.open(path) then
  assert(os.execute("tools/fetch_digits.sh >/dev/null") == 0, "could not fetch the digits")
end
local raw = data.read_csv(path)                      -- [1797, 65]
local pixels = raw:narrow(2, 1, 64)
local norm = { pixel_mean = pixels:mean():item(), pixel_std = pixels:std():item() }
local images = digits.normalize(pixels, norm)          -- [1797, 1, 8, 8]
local labels = raw:select(2, 65):long() + 1          -- class ids 1..10 for digits 0..9
T.manual_seed(0)
local train_set, test_set = (table.unpack or unpack)(data.random_split(data.TensorDataset(images, labels), { 0.8, 0.2 }))
print(string.format("digits: %d training and %d test images", train_set:len(), test_set:len()))

-- -- models ----------------------------------------------------------------------------
local function cnn() return digits.cnn(T) end
local function mlp()
  return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
    nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
end

local function accuracy(model, set)
  model:eval()
  local correct, total = 0, 0
  T.no_grad(function()
    for x, y in data.DataLoader(set, { batch_size = 512 }):iter() do
      x, y = x:to(device), y:to(device)
      correct = correct + model(x):argmax(2):eq(y):sum():item()
      total = total + y:numel()
    end
  end)
  return correct / total
end

local function fit(name, model)
  print(string.format("\n%s: %d parameters", name, model:num_parameters()))
  print(model)
  model:to(device)
  local opt = optim.Adam(model:parameters(), { lr = 3e-3, weight_decay = 1e-4 })
  local sched = optim.lr_scheduler.CosineAnnealingLR(opt, { T_max = epochs })
  local loader = data.DataLoader(train_set, { batch_size = 32, shuffle = true, pin_memory = device == "cuda" })
  local log = T.train.CSVLogger(out_dir .. "/" .. name .. ".csv", { "epoch", "lr", "train_loss", "train_acc", "test_acc", "seconds" })
  local losses, test_accs, train_accs = {}, {}, {}
  for epoch = 1, epochs do
    model:train()
    local bar = T.train.ProgressBar { total = loader:len(), desc = string.format("%s %2d/%d", name, epoch, epochs) }
    local sum, n = 0, 0
    for x, y in loader:iter() do
      if device ~= "cpu" then x, y = x:to(device, { non_blocking = true }), y:to(device, { non_blocking = true }) end
      opt:zero_grad()
      local loss = F.cross_entropy(model(x), y)
      loss:backward()
      opt:step()
      sum, n = sum + loss:item() * y:numel(), n + y:numel()
      bar:update(1, { loss = sum / n })
    end
    local tr, te = accuracy(model, train_set), accuracy(model, test_set)
    bar:close { test_acc = te }
    losses[epoch], train_accs[epoch], test_accs[epoch] = sum / n, tr, te
    log:log { epoch = epoch, lr = opt.param_groups[1].lr, train_loss = sum / n, train_acc = tr, test_acc = te,
      seconds = bar.elapsed }
    sched:step()
  end
  log:close()
  T.train.plot_curves(out_dir .. "/" .. name .. ".png",
    { { title = name .. " training loss", series = { { values = losses, label = "train" } } },
      { title = name .. " accuracy", ymin = 0.8, ymax = 1,
        series = { { values = train_accs, label = "train" }, { values = test_accs, label = "test" } } } })
  print(string.format("%s: curves in %s/%s.png", name, out_dir, name))
  return test_accs[epochs]
end

local results = {}
if which == "mlp" or which == "both" then results.mlp = fit("mlp", mlp()) end
local model
if which == "cnn" or which == "both" then
  model = cnn()
  results.cnn = fit("cnn", model)
end
for k, v in pairs(results) do print(string.format("%s test accuracy: %.1f%%", k, 100 * v)) end

-- -- save, reload, predict -----------------------------------------------------------------
local final = results.cnn or results.mlp
if model and T.save and T.load then
  model:to("cpu")
  local file = out_dir .. "/cnn.ember"
  digits.save(T, file, model, norm.pixel_mean, norm.pixel_std)
  local again = digits.load(T, file)                 -- a fresh CNN, in eval mode
  local x, y = test_set:get_batch(T.arange(1, 11))[1], test_set:get_batch(T.arange(1, 11))[2]
  local pred = T.no_grad(function() return again(x):argmax(2) end)
  print("saved to " .. file .. " and reloaded; first ten test digits:")
  print("  true:      " .. table.concat((y - 1):tolist(), " "))
  print("  predicted: " .. table.concat((pred - 1):tolist(), " "))
  final = accuracy(again, test_set)
elseif model then
  print("(T.save / T.load are not in this ember: the model was not saved)")
end
print(string.format("test accuracy: %.1f%%", 100 * final))
