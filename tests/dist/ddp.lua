-- tests/dist/ddp.lua: T.nn.parallel.DistributedDataParallel under mpirun
-- (-np 2 and -np 3, tests/dist/run.sh): the wrap broadcasts rank 0's
-- parameters; N steps on shards of a global batch match one process
-- training on the whole batch; every rank holds bit-identical parameters
-- after every step; buckets launch during backward; no_sync accumulates;
-- unused parameters are reported or, with find_unused_parameters, reduced.
local T = require "ember"
local H = dofile((arg and arg[0] or "tests/dist/ddp.lua"):gsub("[^/]*$", "") .. "harness.lua")
local dist = T.distributed
local nn, F = T.nn, T.nn.functional
local rank, n = H.init(30)
local B = 12 -- the global batch (divisible by 2 and 3)

local function mlp(seed)
  T.manual_seed(seed)
  return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))
end
local function data(seed)
  T.manual_seed(seed)
  return T.randn(B, 8), T.randint(1, 4, { B })
end
local function shard(t) return t:narrow(1, rank * (B / n) + 1, B / n) end
-- every rank holds exactly the same values as every other
local function identical(t)
  local hi, lo = t:clone(), t:clone()
  dist.all_reduce(hi, { op = "max" })
  dist.all_reduce(lo, { op = "min" })
  return T.equal(hi, t) and T.equal(lo, t)
end
local function params_identical(model)
  for name, p in model:named_parameters() do
    if not identical(p:detach()) then return false, name end
  end
  return true
end

H.check("the wrap broadcasts rank 0's parameters", function()
  local model = mlp(100 + rank) -- a different start on every rank
  local ddp = nn.parallel.DistributedDataParallel(model)
  local ref = mlp(100)
  for name, p in ref:named_parameters() do
    H.same(ddp.module:state_dict()[name]:detach(), p:detach(), name)
  end
  H.assert(params_identical(model), "parameters differ across ranks after the wrap")
end)

H.check("N steps on shards = one process on the global batch; bit-identical ranks", function()
  local ref = mlp(7)
  local model = mlp(7)
  local ddp = nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = 0.002 })
  H.assert(#ddp._buckets >= 3, "expected several buckets, got %d", #ddp._buckets)
  local oref = T.optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 })
  local opt = T.optim.SGD(ddp:parameters(), { lr = 0.05, momentum = 0.9 })
  for step = 1, 6 do
    local x, y = data(step)
    oref:zero_grad()
    F.cross_entropy(ref(x), y):backward()
    oref:step()
    opt:zero_grad()
    F.cross_entropy(ddp(shard(x)), shard(y)):backward()
    H.assert(ddp.stats.launched_in_backward >= 1, "no bucket was launched during backward (step %d)", step)
    opt:step()
    local same, name = params_identical(model)
    H.assert(same, "step %d: parameter %s differs across ranks", step, tostring(name))
  end
  local sd = ddp:state_dict()
  for name, p in ref:named_parameters() do
    H.same(sd["module." .. name]:detach(), p:detach(), name, 1e-5)
  end
end)

H.check("no_sync accumulates locally; the next backward reduces the sum", function()
  local ref, model = mlp(11), mlp(11)
  local ddp = nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = 0.002 })
  local oref = T.optim.SGD(ref:parameters(), { lr = 0.1 })
  local opt = T.optim.SGD(ddp:parameters(), { lr = 0.1 })
  local x1, y1 = data(21)
  local x2, y2 = data(22)
  oref:zero_grad()
  ;(F.cross_entropy(ref(x1), y1) + F.cross_entropy(ref(x2), y2)):backward()
  oref:step()
  opt:zero_grad()
  local local_grad
  ddp:no_sync(function()
    F.cross_entropy(ddp(shard(x1)), shard(y1)):backward()
    local_grad = model[1].weight.grad:clone()
  end)
  H.assert(not identical(local_grad), "under no_sync the gradients must stay local")
  F.cross_entropy(ddp(shard(x2)), shard(y2)):backward()
  opt:step()
  H.assert(params_identical(model), "parameters differ across ranks")
  for name, p in ref:named_parameters() do
    H.same(model:state_dict()[name]:detach(), p:detach(), name, 1e-5)
  end
end)

-- a model whose extra layer takes part only when asked
local Branchy = nn.Module:extend("Branchy")
function Branchy:init()
  self.body = nn.Linear(4, 4)
  self.extra = nn.Linear(4, 4)
end
function Branchy:forward(x, use_extra)
  local h = self.body(x)
  if use_extra then h = self.extra(h) end
  return h
end

H.check("an unused parameter is a clear error on every rank", function()
  T.manual_seed(5)
  local ddp = nn.parallel.DistributedDataParallel(Branchy())
  local ok, err = pcall(function() ddp(T.randn(3, 4), false):sum():backward() end)
  H.assert(not ok, "expected an error")
  H.assert(tostring(err):find("DistributedDataParallel: 2 parameter(s) got no gradient in this backward", 1, true),
    "message: %s", tostring(err))
  H.assert(tostring(err):find("extra.weight", 1, true), "message names the parameter: %s", tostring(err))
  -- the group still works
  local t = T.ones(2)
  dist.all_reduce(t)
  H.same(t, T.full({ 2 }, n, { dtype = T.float32 }), "all_reduce after the error")
end)

H.check("find_unused_parameters: a layer used on rank 0 only gets rank 0's gradient / world", function()
  T.manual_seed(6)
  local m = Branchy()
  local ddp = nn.parallel.DistributedDataParallel(m, { find_unused_parameters = true })
  local x = T.randn(3, 4)
  ddp(x, rank == 0):sum():backward()
  -- rank 0's gradient of extra.weight, computed here by every rank
  T.manual_seed(6)
  local r = Branchy()
  r(x, true):sum():backward()
  H.same(m.extra.weight.grad, r.extra.weight.grad / n, "extra.weight.grad", 1e-6)
  H.assert(identical(m.body.weight.grad), "body grads differ")
end)

H.check("buffers: broadcast from rank 0 at the wrap and before each forward", function()
  T.manual_seed(9)
  local m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
  m[2].running_mean:fill_(rank) -- differs per rank
  local ddp = nn.parallel.DistributedDataParallel(m)
  H.same(m[2].running_mean, T.zeros(4), "running_mean after the wrap")
  m[2].running_mean:fill_(rank + 1)
  ddp:eval()
  ddp(T.randn(2, 4))
  H.same(m[2].running_mean, T.ones(4), "running_mean after an eval forward")
end)

H.done()
