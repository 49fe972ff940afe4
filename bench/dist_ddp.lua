-- bench/dist_ddp.lua: the step time of examples/train_digits.lua's MLP
-- (64-256-128-10, Adam) under DistributedDataParallel, global batch 32
-- split across the ranks, on synthetic digits-shaped data; and, to measure
-- (not assume) the overlap of the all-reduces with backward, the same step
-- with no communication (no_sync) and the all-reduce of the same buckets
-- alone (blocking, after the backward). Prints on rank 0:
--   ranks step_ms local_ms comm_ms launched_in_backward buckets
-- Run by bench/dist_bench.sh (1 and 2 ranks).
local T = require "ember"
local dist, nn, F = T.distributed, T.nn, T.nn.functional
dist.init_process_group { backend = "mpi" }
T.set_num_threads(1)
local rank, world = dist.get_rank(), dist.get_world_size()
local steps = tonumber(arg[1]) or 200
local clock = T.train.clock
T.manual_seed(0)
local model = nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
  nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
local ddp = nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = tonumber(arg[2]) or 25 })
local opt = T.optim.Adam(ddp:parameters(), { lr = 1e-3 })
local per = 32 / world
local x, y = T.randn(per, 1, 8, 8), T.randint(1, 11, { per })
local function step(sync)
  opt:zero_grad()
  if sync then
    F.cross_entropy(ddp(x), y):backward()
  else
    ddp:no_sync(function() F.cross_entropy(ddp(x), y):backward() end)
  end
  opt:step()
end
local function timed(fn)
  for _ = 1, 20 do fn() end
  dist.barrier()
  local best = math.huge
  for _ = 1, 3 do
    dist.barrier()
    local t0 = clock()
    for _ = 1, steps do fn() end
    local el = T.tensor({ (clock() - t0) / steps }, { dtype = T.float64 })
    dist.all_reduce(el, { op = "max" })
    best = math.min(best, el:item())
  end
  return best
end
local t_ddp = timed(function() step(true) end)
local launched = ddp.stats and ddp.stats.launched_in_backward or 0
local t_local = timed(function() step(false) end)
local bufs = {}
for i, b in ipairs(ddp._buckets) do bufs[i] = b.buf end
local t_comm = timed(function() for _, b in ipairs(bufs) do dist.all_reduce(b, { op = "avg" }) end end)
if rank == 0 then
  print(string.format("%d %.4f %.4f %.4f %d %d", world, t_ddp * 1e3, t_local * 1e3, t_comm * 1e3, launched, #ddp._buckets))
end
dist.destroy_process_group()
