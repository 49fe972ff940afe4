-- T.distributed in one process (issue 17; docs/distributed.md): a script
-- started without a launcher is rank 0 of a world of 1, where every
-- collective is the identity; the errors of bad use; the autograd hook
-- DistributedDataParallel rides on; DistributedSampler's partition. The
-- multi-process behaviour is tests/dist/ (under mpirun).
local T = require "ember"
local dist = T.distributed

local function has_mpi() return dist.is_available() end

describe("the post-accumulate-grad hook", function()
  it("runs once per backward, after every gradient reached .grad", function()
    local w = T.randn(3, 3):requires_grad_()
    local seen = {}
    w:register_post_accumulate_grad_hook(function(p)
      seen[#seen + 1] = p.grad:clone()
    end)
    local x = T.randn(2, 3)
    local y = x:matmul(w):sum() + (x:matmul(w) * 2):sum() -- w used twice
    y:backward()
    assert.are.equal(1, #seen)
    assert.is_true(T.equal(seen[1], w.grad))
    y = x:matmul(w):sum()
    y:backward() -- accumulates: the hook sees the sum
    assert.are.equal(2, #seen)
    assert.is_true(T.equal(seen[2], w.grad))
  end)

  it("runs during the backward, in the order gradients become ready, and can be removed", function()
    local a = T.randn(4):requires_grad_()
    local b = T.randn(4):requires_grad_()
    local order = {}
    local ha = a:register_post_accumulate_grad_hook(function() order[#order + 1] = "a" end)
    b:register_post_accumulate_grad_hook(function() order[#order + 1] = "b" end)
    local y = ((a * 2):exp() * b):sum()
    y:backward()
    assert.are.same({ "b", "a" }, order) -- b's gradient is one node from the loss
    ha:remove()
    order = {}
    ;((a * 2):exp() * b):sum():backward()
    assert.are.same({ "b" }, order)
  end)

  it("does not run for T.autograd.grad, nor for a leaf no gradient reached", function()
    local a = T.randn(3):requires_grad_()
    local b = T.randn(3):requires_grad_()
    local n = 0
    a:register_post_accumulate_grad_hook(function() n = n + 1 end)
    T.autograd.grad((a * 3):sum(), { a })
    assert.are.equal(0, n)
    ;(b * 2):sum():backward()
    assert.are.equal(0, n)
  end)

  it("refuses non-leaves and tensors that need no gradient; errors in a hook stop the backward", function()
    local a = T.randn(2):requires_grad_()
    assert.has_error(function() (a * 2):register_post_accumulate_grad_hook(print) end,
      "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered on non-leaf tensors")
    assert.has_error(function() T.randn(2):register_post_accumulate_grad_hook(print) end,
      "register_post_accumulate_grad_hook: cannot register a hook on a tensor that doesn't require gradient")
    assert.has_error(function() a:register_post_accumulate_grad_hook(3) end,
      "register_post_accumulate_grad_hook: expected a function, got number")
    a:register_post_accumulate_grad_hook(function() error("hook failed") end)
    local ok, err = pcall(function() (a * 2):sum():backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("hook failed", 1, true))
  end)

  it("queue_callback runs after the backward, only inside one", function()
    local a = T.randn(2):requires_grad_()
    local log = {}
    a:register_post_accumulate_grad_hook(function()
      log[#log + 1] = "hook"
      T.autograd._queue_callback(function() log[#log + 1] = "final" end)
    end)
    ;(a * 2):sum():backward()
    assert.are.same({ "hook", "final" }, log)
    assert.has_error(function() T.autograd._queue_callback(print) end,
      "queue_callback: final callbacks can only be installed during the backward pass")
  end)
end)

describe("T.distributed without a launcher", function()
  after_each(function() if dist.is_initialized() then dist.destroy_process_group() end end)

  it("refuses every call before init_process_group", function()
    assert.is_false(dist.is_initialized())
    local msg = "the default process group has not been initialized; call T.distributed.init_process_group first"
    assert.has_error(function() dist.get_rank() end, "get_rank: " .. msg)
    assert.has_error(function() dist.all_reduce(T.ones(2)) end, "all_reduce: " .. msg)
    assert.has_error(function() dist.barrier() end, "barrier: " .. msg)
    assert.has_error(function() dist.new_group({ 0 }) end, "new_group: " .. msg)
  end)

  it("refuses unknown backends and options, and nccl without a CUDA device", function()
    assert.has_error(function() dist.init_process_group { backend = "gloo" } end,
      "init_process_group: unknown backend 'gloo' (ember has 'mpi' for CPU tensors and 'nccl' for cuda tensors)")
    if not T.cuda.is_available() then
      local ok, err = pcall(dist.init_process_group, { backend = "nccl" })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("init_process_group: backend 'nccl' needs a CUDA device: ", 1, true), err)
      -- the reason is the cuda backend's own: no driver, or no CUDA in this build
      assert.truthy(tostring(err):find("CUDA", 60, true), err)
    end
    assert.has_error(function() dist.init_process_group { backend = "mpi", timout = 3 } end,
      "init_process_group: unknown option 'timout' (expected one of: backend, group_name, init_method, rank, timeout, world_size)")
    assert.has_error(function() dist.init_process_group { timeout = -1 } end,
      "init_process_group: timeout must be a positive number of seconds, got -1")
    assert.is_false(dist.is_initialized())
  end)

  it("has the nccl module exactly when this build has CUDA and NCCL", function()
    local ok, N = pcall(require, "ember.dist_nccl")
    assert.are.equal(ok, dist.is_nccl_available())
    if not T.cuda.is_built() then
      assert.is_false(ok)
    elseif ok then
      -- new_group splits the world's communicator: ncclCommSplit is NCCL 2.18+
      assert.is_true(N.version() >= 21800)
      assert.is_function(N.comm_init)
    end
  end)

  it("is rank 0 of a world of 1 where every collective is the identity", function()
    if not has_mpi() then
      assert.has_error(function() dist.init_process_group { backend = "mpi" } end)
      return pending("this build has no ember.dist (EMBER_MPI)")
    end
    dist.init_process_group { backend = "mpi", timeout = 5 }
    assert.is_true(dist.is_initialized())
    assert.are.equal(0, dist.get_rank())
    assert.are.equal(1, dist.get_world_size())
    assert.are.equal("mpi", dist.get_backend())
    assert.has_error(function() dist.init_process_group {} end,
      "init_process_group: trying to initialize the default process group twice!")
    for _, dt in ipairs { T.float32, T.float64, T.float16, T.bfloat16, T.int64, T.int32, T.uint8 } do
      local t = T.arange(12, { dtype = dt }):view(3, 4):t()
      local ref = t:clone()
      for _, op in ipairs { "sum", "max", "min", "prod" } do
        dist.all_reduce(t, { op = op })
        assert.is_true(T.equal(t, ref))
      end
      if dt.is_floating_point then
        dist.all_reduce(t, { op = "avg" })
        assert.is_true(T.equal(t, ref))
      end
      dist.broadcast(t, { src = 0 })
      dist.reduce(t, { dst = 0 })
      assert.is_true(T.equal(t, ref))
      local list = { T.zeros(4, 3, { dtype = dt }) }
      dist.all_gather(list, t)
      assert.is_true(T.equal(list[1], ref))
      local out = T.zeros(12, { dtype = dt })
      dist.all_gather_into_tensor(out, t)
      assert.is_true(T.equal(out, ref:reshape(12)))
    end
    local w = dist.all_reduce(T.ones(3), { async_op = true })
    assert.is_true(w:is_completed())
    assert.is_true(w:wait())
    local bw = dist.barrier { async_op = true }
    assert.is_true(bw:is_completed())
    local o = T.zeros(2)
    dist.reduce_scatter(o, { T.tensor({ 1, 2 }, { dtype = T.float32 }) })
    assert.are.same({ 1, 2 }, o:tolist())
    local g = T.zeros(2)
    local gl = { T.zeros(2) }
    dist.gather(T.tensor({ 3, 4 }, { dtype = T.float32 }), { gather_list = gl, dst = 0 })
    assert.are.same({ 3, 4 }, gl[1]:tolist())
    dist.scatter(g, { scatter_list = { T.tensor({ 5, 6 }, { dtype = T.float32 }) }, src = 0 })
    assert.are.same({ 5, 6 }, g:tolist())
    local a2 = { T.zeros(2) }
    dist.all_to_all(a2, { T.tensor({ 7, 8 }, { dtype = T.float32 }) })
    assert.are.same({ 7, 8 }, a2[1]:tolist())
    local grp = dist.new_group({ 0 })
    assert.are.equal(0, dist.get_rank(grp))
    assert.are.equal(1, dist.get_world_size(grp))
    local t = T.ones(2)
    dist.all_reduce(t, { group = grp })
    assert.are.same({ 1, 1 }, t:tolist())
  end)

  it("says clearly what is wrong", function()
    if not has_mpi() then return pending("this build has no ember.dist (EMBER_MPI)") end
    dist.init_process_group { timeout = 5 }
    local t = T.ones(3)
    assert.has_error(function() dist.all_reduce(t, { opp = "sum" }) end, "all_reduce: unknown option 'opp' (expected one of: async_op, group, op)")
    assert.has_error(function() dist.all_reduce(t, { op = "mean" }) end,
      "all_reduce: unknown op 'mean' (expected one of sum, avg, prod, min, max, band, bor, bxor)")
    assert.has_error(function() dist.all_reduce(T.ones(2, { dtype = T.int64 }), { op = "avg" }) end,
      "all_reduce: op 'avg' needs a floating point tensor, got int64 (use 'sum' and divide)")
    assert.has_error(function() dist.all_reduce(t, { op = "band" }) end,
      "all_reduce: op 'band' needs an integer or bool tensor, got float32")
    assert.has_error(function() dist.all_reduce(3) end, "all_reduce: expected a tensor for tensor, got number")
    assert.has_error(function() dist.all_reduce(T.ones(2, { device = "meta" })) end,
      "all_reduce: the mpi backend moves CPU tensors, but tensor is on meta")
    assert.has_error(function() dist.broadcast(t, { src = 1 }) end,
      "broadcast: src 1 is out of range: ranks are 0..0 (a world of 1)")
    assert.has_error(function() dist.broadcast(t, {}) end, "broadcast: option 'src' (a rank) is required")
    assert.has_error(function() dist.all_gather({ T.ones(3), T.ones(3) }, t) end,
      "all_gather: tensor_list holds 2 tensors, expected 1 (the group's size)")
    assert.has_error(function() dist.all_gather({ T.ones(4) }, t) end,
      "all_gather: tensor_list[1] has shape (4) (4 elements), but the input tensor has shape (3) (3 elements)")
    assert.has_error(function() dist.all_gather({ T.ones(3, { dtype = T.int32 }) }, t) end,
      "all_gather: tensor_list[1] has dtype int32, but the input tensor has dtype float32")
    assert.has_error(function() dist.all_gather_into_tensor(T.ones(4), t) end,
      "all_gather_into_tensor: output_tensor has shape (4) (4 elements), expected 3 elements (the group's size 1 times input_tensor's 3)")
    assert.has_error(function() dist.send(t, 0) end, "send: dst 0 is this process's own rank")
    assert.has_error(function() dist.send(t, 2) end, "send: dst 2 is out of range: ranks are 0..0 (a world of 1)")
    assert.has_error(function() dist.recv(t) end, "recv: a world of one process has no other rank to receive from")
    assert.has_error(function() dist.gather(t, { dst = 0 }) end,
      "gather: gather_list is required on the destination rank")
    local o3 = T.zeros(3)
    dist.all_to_all_single(o3, t, { input_split_sizes = { 3 }, output_split_sizes = { 3 } })
    assert.is_true(T.equal(o3, t))
    assert.has_error(function() dist.all_to_all_single(T.ones(3), t, { input_split_sizes = { 2 } }) end,
      "all_to_all_single: input_split_sizes sums to 2 rows, but input has 3 rows (dim 1)")
    assert.has_error(function() dist.all_to_all_single(T.ones(3), t, { input_split_sizes = { 3 }, output_split_sizes = { 3, 0 } }) end,
      "all_to_all_single: output_split_sizes must be a list of 1 row counts (one per rank), got 2 entries")
    assert.has_error(function() dist.new_group({ 0, 1 }) end,
      "new_group: rank 1 is out of range: ranks are 0..0 (a world of 1)")
    assert.has_error(function() dist.new_group({ 0, 0 }) end, "new_group: rank 0 is listed twice")
    assert.has_error(function() T.nn.parallel.DistributedDataParallel(T.nn.Linear(2, 2), { bucket_mb = 1 }) end,
      "DistributedDataParallel: unknown option 'bucket_mb' (expected one of: broadcast_buffers, bucket_cap_mb, find_unused_parameters, process_group)")
    local g = dist.new_group({ 0 })
    dist.destroy_process_group(g)
    assert.has_error(function() dist.all_reduce(t, { group = g }) end,
      "all_reduce: the process group has been destroyed")
  end)

  it("DistributedDataParallel in a world of 1 trains as the plain model does", function()
    if not has_mpi() then return pending("this build has no ember.dist (EMBER_MPI)") end
    dist.init_process_group {}
    T.manual_seed(3)
    local a = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 2))
    local b = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 2))
    b:load_state_dict(a:state_dict())
    local ddp = T.nn.parallel.DistributedDataParallel(b, { bucket_cap_mb = 0.0001 })
    assert.is_true(#ddp._buckets > 1)
    local sd = ddp:state_dict()
    assert.is_not_nil(sd["module.1.weight"]) -- PyTorch's "module." prefix
    local oa, ob = T.optim.SGD(a:parameters(), { lr = 0.1 }), T.optim.SGD(ddp:parameters(), { lr = 0.1 })
    local x, y = T.randn(16, 4), T.randint(1, 3, { 16 })
    for _ = 1, 3 do
      oa:zero_grad()
      T.nn.functional.cross_entropy(a(x), y):backward()
      oa:step()
      ob:zero_grad()
      T.nn.functional.cross_entropy(ddp(x), y):backward()
      ob:step()
    end
    for name, p in pairs(a:state_dict()) do assert.is_true(T.equal(p, sd["module." .. name])) end
    -- a parameter that takes no part in the loss
    local m = T.nn.Linear(4, 2)
    m.extra = T.nn.Parameter(T.ones(3))
    local d2 = T.nn.parallel.DistributedDataParallel(m)
    local ok, err = pcall(function() d2(x):sum():backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("DistributedDataParallel: 1 parameter(s) got no gradient in this backward", 1, true))
    assert.truthy(tostring(err):find("extra", 1, true))
    local m3 = T.nn.Linear(4, 2)
    m3.extra = T.nn.Parameter(T.ones(3))
    local d3 = T.nn.parallel.DistributedDataParallel(m3, { find_unused_parameters = true })
    d3(x):sum():backward()
    assert.are.same({ 0, 0, 0 }, m3.extra.grad:tolist())
  end)
end)

describe("DistributedSampler", function()
  local ds = T.data.TensorDataset(T.arange(1, 11))

  local function all_parts(n, R, o)
    local parts = {}
    for r = 0, R - 1 do
      local oo = { num_replicas = R, rank = r }
      for k, v in pairs(o or {}) do oo[k] = v end
      parts[r + 1] = T.data.DistributedSampler(T.data.TensorDataset(T.arange(1, n + 1)), oo)
    end
    return parts
  end

  it("splits 1..n into equal disjoint parts, padding by wrapping (PyTorch's rule)", function()
    local parts = all_parts(10, 3, { shuffle = false })
    assert.are.same({ 1, 4, 7, 10 }, parts[1]:indices():tolist())
    assert.are.same({ 2, 5, 8, 1 }, parts[2]:indices():tolist())
    assert.are.same({ 3, 6, 9, 2 }, parts[3]:indices():tolist())
    assert.are.equal(4, parts[1]:len())
    local dropped = all_parts(10, 3, { shuffle = false, drop_last = true })
    assert.are.same({ 1, 4, 7 }, dropped[1]:indices():tolist())
    assert.are.same({ 3, 6, 9 }, dropped[3]:indices():tolist())
    assert.are.equal(3, dropped[2]:len())
  end)

  it("shuffles by seed + epoch: the same on every rank, disjoint and covering, new each epoch", function()
    local parts = all_parts(12, 4, { seed = 7 })
    local seen, count = {}, 0
    for _, s in ipairs(parts) do
      for _, i in ipairs(s:indices():tolist()) do
        assert.is_nil(seen[i])
        seen[i] = true
        count = count + 1
      end
    end
    assert.are.equal(12, count)
    local e0 = parts[1]:indices():tolist()
    assert.are.same(e0, parts[1]:indices():tolist()) -- deterministic
    parts[1]:set_epoch(1)
    assert.are_not.same(e0, parts[1]:indices():tolist())
    -- the global generator is left as it was
    T.manual_seed(5)
    local before = T.rand(3)
    T.manual_seed(5)
    parts[2]:indices()
    assert.is_true(T.equal(before, T.rand(3)))
  end)

  it("plugs into DataLoader", function()
    local s = T.data.DistributedSampler(ds, { num_replicas = 2, rank = 1, shuffle = false })
    local dl = T.data.DataLoader(ds, { batch_size = 2, sampler = s })
    assert.are.equal(3, dl:len())
    local got = {}
    for x in dl:iter() do for _, v in ipairs(x:tolist()) do got[#got + 1] = v end end
    assert.are.same({ 2, 4, 6, 8, 10 }, got)
    assert.has_error(function() T.data.DataLoader(ds, { sampler = s, shuffle = true }) end,
      "DataLoader: sampler option is mutually exclusive with shuffle")
  end)

  it("checks its options", function()
    assert.has_error(function() T.data.DistributedSampler(ds, { num_replicas = 2, rank = 2 }) end,
      "DistributedSampler: invalid rank 2, rank should be in the interval [0, 1]")
    assert.has_error(function() T.data.DistributedSampler(ds, { num_replicas = 2, rank = 0, shufle = true }) end,
      "DistributedSampler: unknown option 'shufle' (expected one of: drop_last, num_replicas, rank, seed, shuffle)")
    if not dist.is_initialized() then
      assert.has_error(function() T.data.DistributedSampler(ds) end,
        "DistributedSampler: num_replicas and rank are needed when the default process group is not initialized")
    end
  end)
end)
