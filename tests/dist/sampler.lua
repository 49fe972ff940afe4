-- tests/dist/sampler.lua: T.data.DistributedSampler under mpirun, taking
-- num_replicas and rank from the process group: with a DataLoader, the
-- ranks' batches are disjoint and cover the dataset, change with
-- set_epoch, and an epoch's loss and accuracy all-reduce for logging.
local T = require "ember"
local H = dofile((arg and arg[0] or "tests/dist/sampler.lua"):gsub("[^/]*$", "") .. "harness.lua")
local dist = T.distributed
local rank, n = H.init(30)
local N = 23 -- not a multiple of 2 or 3: padding

local ds = T.data.TensorDataset(T.arange(1, N + 1))
local function epoch_ids(sampler, epoch)
  sampler:set_epoch(epoch)
  local dl = T.data.DataLoader(ds, { batch_size = 4, sampler = sampler })
  local ids = {}
  for x in dl:iter() do for _, v in ipairs(x:tolist()) do ids[#ids + 1] = v end end
  return ids
end
-- every rank's list, gathered
local function gather_all(ids)
  local t = T.tensor(ids, { dtype = T.int64 })
  local list = {}
  for i = 1, n do list[i] = T.zeros(#ids, { dtype = T.int64 }) end
  dist.all_gather(list, t)
  return list
end

H.check("the ranks' batches cover the dataset once (plus the wrap-around padding)", function()
  local s = T.data.DistributedSampler(ds, { seed = 3 })
  local ids = epoch_ids(s, 0)
  H.assert(#ids == math.ceil(N / n), "rank %d got %d samples", rank, #ids)
  local count = {}
  for _, t in ipairs(gather_all(ids)) do for _, v in ipairs(t:tolist()) do count[v] = (count[v] or 0) + 1 end end
  local extra = 0
  for v = 1, N do
    H.assert(count[v] and count[v] >= 1, "sample %d is missing", v)
    extra = extra + count[v] - 1
  end
  H.assert(extra == math.ceil(N / n) * n - N, "padding: %d repeats", extra)
end)

H.check("drop_last: disjoint, the tail dropped", function()
  local s = T.data.DistributedSampler(ds, { seed = 3, drop_last = true })
  local ids = epoch_ids(s, 0)
  H.assert(#ids == math.floor(N / n), "rank %d got %d samples", rank, #ids)
  local seen = {}
  for _, t in ipairs(gather_all(ids)) do
    for _, v in ipairs(t:tolist()) do
      H.assert(not seen[v], "sample %d twice", v)
      seen[v] = true
    end
  end
end)

H.check("set_epoch reshuffles, the same way on every rank", function()
  local s = T.data.DistributedSampler(ds, { seed = 3 })
  local e0, e1 = epoch_ids(s, 0), epoch_ids(s, 1)
  local differs = false
  for i = 1, #e0 do differs = differs or e0[i] ~= e1[i] end
  H.assert(differs, "epoch 1 gave epoch 0's order")
  -- same partition rule: the union of epoch 1 covers the dataset too
  local seen = {}
  for _, t in ipairs(gather_all(e1)) do for _, v in ipairs(t:tolist()) do seen[v] = true end end
  for v = 1, N do H.assert(seen[v], "epoch 1 misses %d", v) end
end)

H.check("an epoch's loss and accuracy all-reduce for logging", function()
  local stats = T.tensor({ 1.5 * (rank + 1), 10 * (rank + 1), 20 }, { dtype = T.float64 }) -- loss sum, correct, seen
  dist.all_reduce(stats)
  local s = stats:tolist()
  H.assert(s[1] == 1.5 * n * (n + 1) / 2 and s[2] == 10 * n * (n + 1) / 2 and s[3] == 20 * n, "stats %s", tostring(stats))
end)

H.done()
