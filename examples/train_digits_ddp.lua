-- examples/train_digits.lua's training on several processes with
-- T.nn.parallel.DistributedDataParallel: the same data split, model, optimizer,
-- schedule, seed and global batch (32, shared out between the ranks by
-- T.data.DistributedSampler); gradients are averaged across the ranks while
-- backward runs. The epoch's loss and accuracy are all-reduced; only rank 0
-- prints and writes files (docs/distributed.md).
--
--   tools/fetch_digits.sh
--   bin/ember --nproc 2 examples/train_digits_ddp.lua [cnn|mlp] [epochs] [out_dir]
--   mpirun -np 2 bin/ember examples/train_digits_ddp.lua ...     (the same)
--
-- Started without a launcher it is a world of one process: train_digits.lua
-- with a DistributedSampler.
local T = require "ember"
local nn, F, optim, data, dist = T.nn, T.nn.functional, T.optim, T.data, T.distributed
local digits = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/digits_model.lua")

local which = arg and arg[1] or "cnn"
local epochs = tonumber(arg and arg[2]) or 10
local out_dir = arg and arg[3] or "runs/digits_ddp"
local global_batch = 32
T.set_num_threads(1)

dist.init_process_group { backend = "mpi" }
local rank, world = dist.get_rank(), dist.get_world_size()
local function say(...) if rank == 0 then print(string.format(...)) io.stdout:flush() end end
if global_batch % world ~= 0 then error(string.format("the global batch %d is not a multiple of %d ranks", global_batch, world)) end
if rank == 0 then os.execute("mkdir -p '" .. out_dir .. "'") end

-- -- data: as train_digits.lua ---------------------------------------------------------
local path = "data/digits.csv.gz"
if not io.open(path) then
  if rank == 0 then assert(os.execute("tools/fetch_digits.sh >/dev/null") == 0, "could not fetch the digits") end
  dist.barrier()
end
local raw = data.read_csv(path)
local pixels = raw:narrow(2, 1, 64)
local norm = { pixel_mean = pixels:mean():item(), pixel_std = pixels:std():item() }
local images = digits.normalize(pixels, norm)
local labels = raw:select(2, 65):long() + 1
T.manual_seed(0)
local train_set, test_set = (table.unpack or unpack)(data.random_split(data.TensorDataset(images, labels), { 0.8, 0.2 }))
say("digits: %d training and %d test images; %d ranks, %d images per rank per step (global batch %d)",
  train_set:len(), test_set:len(), world, global_batch / world, global_batch)

local function build()
  if which == "mlp" then
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
      nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
  end
  return digits.cnn(T)
end

-- accuracy over a set, each rank counting its share (every world-th image)
local function accuracy(model, set)
  model:eval()
  local ids = T.arange(rank + 1, set:len() + 1, world, { dtype = T.int64 })
  local correct, total = 0, 0
  T.no_grad(function()
    for x, y in data.DataLoader(data.Subset(set, ids), { batch_size = 512 }):iter() do
      correct = correct + model(x):argmax(2):eq(y):sum():item()
      total = total + y:numel()
    end
  end)
  local counts = T.tensor({ correct, total }, { dtype = T.float64 })
  dist.all_reduce(counts)
  return counts[1]:item() / counts[2]:item()
end

local model = build()
local ddp = nn.parallel.DistributedDataParallel(model)
say("%s: %d parameters in %d gradient bucket(s)", which, model:num_parameters(), #ddp._buckets)
local opt = optim.Adam(ddp:parameters(), { lr = 3e-3, weight_decay = 1e-4 })
local sched = optim.lr_scheduler.CosineAnnealingLR(opt, { T_max = epochs })
local sampler = data.DistributedSampler(train_set, { seed = 0 })
local loader = data.DataLoader(train_set, { batch_size = global_batch / world, sampler = sampler })
local log = rank == 0 and T.train.CSVLogger(out_dir .. "/" .. which .. ".csv",
  { "epoch", "lr", "train_loss", "test_acc", "seconds" }) or nil
local clock = T.train.clock
local te
for epoch = 1, epochs do
  sampler:set_epoch(epoch)
  ddp:train()
  local t0 = clock()
  local sum, count = 0, 0
  for x, y in loader:iter() do
    opt:zero_grad()
    local loss = F.cross_entropy(ddp(x), y)
    loss:backward()
    opt:step()
    sum, count = sum + loss:item() * y:numel(), count + y:numel()
  end
  local stats = T.tensor({ sum, count }, { dtype = T.float64 }) -- this rank's loss sum and images
  dist.all_reduce(stats)
  local seconds = clock() - t0
  te = accuracy(ddp, test_set)
  say("%s %2d/%d  loss %.4f  test accuracy %.2f%%  %.1f s", which, epoch, epochs, stats[1]:item() / stats[2]:item(),
    100 * te, seconds)
  if log then
    log:log { epoch = epoch, lr = opt.param_groups[1].lr, train_loss = stats[1]:item() / stats[2]:item(), test_acc = te,
      seconds = seconds }
  end
  sched:step()
end
if log then log:close() end
-- every rank holds the same parameters: check it as a checksum
local sums = {}
for _, p in ipairs(model:parameters()) do sums[#sums + 1] = p:double():sum():item() end
local mine = T.tensor(sums, { dtype = T.float64 })
local hi, lo = mine:clone(), mine:clone()
dist.all_reduce(hi, { op = "max" })
dist.all_reduce(lo, { op = "min" })
say("parameters identical on every rank: %s", tostring(T.equal(hi, mine) and T.equal(lo, mine)))
say("test accuracy: %.1f%%", 100 * te)
dist.destroy_process_group()
