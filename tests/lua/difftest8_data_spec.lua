-- Differences from PyTorch 1.13's torch.utils.data found by the eighth round
-- of differential tests (T.data against torch on the same inputs), each with
-- torch's value or error. Positions are 1-based in ember (a Subset's
-- indices, a sampler's positions): those shifts are not differences. Random
-- draws are ember's generator's, so only lengths, coverage, distributions
-- and reproducibility are compared.
local T = require "ember"
local U = require "specutil"
local err = U.err
local D = T.data

local function lens(parts)
  local r = {}
  for i, p in ipairs(parts) do r[i] = p:len() end
  return r
end
local function L(items) return { len = function() return #items end, get = function(_, i) return items[i] end } end

describe("difftest round 8: random_split (torch 1.13)", function()
  it("fractions summing to 1 split a one-item dataset", function()
    -- random_split(range(1), [0.5, 0.5]) -> lengths [1, 0]
    assert.same({ 1, 0 }, lens(D.random_split(D.TensorDataset(T.zeros(1)), { 0.5, 0.5 })))
    -- [1] and [1, 0] on one item, [1, 0] on five (fractions: [5, 0]), as torch
    assert.same({ 1 }, lens(D.random_split(D.TensorDataset(T.zeros(1)), { 1 })))
    assert.same({ 5, 0 }, lens(D.random_split(D.TensorDataset(T.zeros(5)), { 1, 0 })))
    -- random_split(range(2), [0.25] * 4) -> [1, 1, 0, 0]; range(7), [.1, .1, .8] -> [1, 1, 5]
    assert.same({ 1, 1, 0, 0 }, lens(D.random_split(D.TensorDataset(T.zeros(2)), { 0.25, 0.25, 0.25, 0.25 })))
    assert.same({ 1, 1, 5 }, lens(D.random_split(D.TensorDataset(T.zeros(7)), { 0.1, 0.1, 0.8 })))
  end)
  it("fractions in a float32 tensor are scaled in float32", function()
    -- random_split(range(10), torch.tensor([0.3, 0.7])) -> [3, 7] (10 * 0.3f is 3.0f)
    assert.same({ 3, 7 }, lens(D.random_split(D.TensorDataset(T.zeros(10)), T.tensor { 0.3, 0.7 })))
    assert.same({ 2, 2, 3 }, lens(D.random_split(D.TensorDataset(T.zeros(7)), T.tensor { 0.2, 0.3, 0.5 })))
    assert.same({ 3, 4 }, lens(D.random_split(D.TensorDataset(T.zeros(7)), T.tensor { 3, 4 })))
  end)
  it("bad lengths are refused with the reason", function()
    local ds = D.TensorDataset(T.zeros(10))
    -- [0.5, 0.4] -> ValueError: Sum of input lengths does not equal the length of the input dataset!
    err(function() D.random_split(ds, { 0.5, 0.4 }) end,
      "random_split: lengths must be non-negative integers, or fractions summing to 1 (these sum to 0.9)")
    -- [1.5, -0.5] -> ValueError: Fraction at index 0 is not between 0 and 1
    err(function() D.random_split(ds, { 1.5, -0.5 }) end, "random_split: fraction at index 1 (1.5) is not between 0 and 1")
    -- [-1, 11]: torch 1.13 accepts it and returns a broken split; ember refuses
    err(function() D.random_split(ds, { -1, 11 }) end, "random_split: lengths[1] is negative (-1)")
    err(function() D.random_split(ds, { 3, 8 }) end,
      "random_split: sum of input lengths (11) does not equal the length of the input dataset (10)")
  end)
  it("seed = n is PyTorch's generator=: the same split each time, the global generator untouched", function()
    -- random_split(ds, [3, 7], generator=torch.Generator().manual_seed(1)) twice: the same indices
    local ds = D.TensorDataset(T.arange(1, 11))
    T.manual_seed(4)
    local before = T.rand(3)
    T.manual_seed(4)
    local a = D.random_split(ds, { 3, 7 }, { seed = 1 })
    local after = T.rand(3)
    assert.is_true(T.equal(before, after))
    local b = D.random_split(ds, { 3, 7 }, { seed = 1 })
    assert.is_true(T.equal(a[1].indices, b[1].indices))
    assert.is_true(T.equal(a[2].indices, b[2].indices))
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, T.cat({ a[1].indices, a[2].indices }):sort():tolist())
    err(function() D.random_split(ds, { 3, 7 }, { seed = 1.5 }) end, "random_split: seed must be an integer, got 1.5")
    err(function() D.random_split(ds, { 3, 7 }, { generator = 1 }) end, "random_split: unknown option 'generator'")
  end)
end)

describe("difftest round 8: Subset and default_collate (torch 1.13)", function()
  it("Subset and SubsetRandomSampler refuse indices that are not integers", function()
    local ds = D.TensorDataset(T.arange(0, 10))
    -- Subset(ds, [1.5])[0] -> IndexError (only integers ... are valid indices); ember truncated to 1
    err(function() D.Subset(ds, { 1.5 }) end, "Subset: indices[1] must be an integer, got 1.5")
    -- Subset(ds, torch.tensor([1., 2.]))[0] -> IndexError: tensors used as indices must be long ...
    err(function() D.Subset(ds, T.tensor { 1, 2 }:float()) end, "Subset: indices must be integers, got a float32 tensor")
    err(function() D.Subset(ds, { a = 1 }) end, "Subset: indices must be an array of integers or an integer tensor")
    err(function() D.Subset(5, { 1 }) end, "Subset: expected a dataset (with len and get), got number")
    -- SubsetRandomSampler([1.5]) yields 1.5, which the dataset then refuses; ember truncated to 1
    err(function() D.SubsetRandomSampler({ 1.5 }) end, "SubsetRandomSampler: indices[1] must be an integer, got 1.5")
    err(function() D.SubsetRandomSampler(T.tensor { 1, 2 }:float()) end,
      "SubsetRandomSampler: indices must be integers, got a float32 tensor")
    -- an int32 tensor of positions is fine (as torch's int32 indices)
    local s = D.Subset(ds, T.tensor({ 4, 2 }, { dtype = T.int32 }))
    local got = {}
    for x in D.DataLoader(s, { batch_size = 2 }):iter() do got = x:tolist() end
    assert.same({ 3, 1 }, got)
    assert.equal(9, D.Subset(ds, { -1 }):get(1)[1]:item())
  end)
  it("default_collate refuses a boolean batch that holds a number", function()
    -- default_collate([True, 1]) -> tensor([1, 1]) (Python's bool is an int); ember made
    -- a bool tensor [true, true]; Lua's booleans are not numbers, so both orders are refused
    err(function() D.default_collate { true, 1 } end, "default_collate: element 2 is a number where element 1 is a boolean")
    err(function() D.default_collate { 1, true } end, "default_collate: element 2 is a boolean where element 1 is a number")
    assert.same({ true, false }, D.default_collate({ true, false }):tolist())
    err(function() D.default_collate { { ok = true }, { ok = 0 } } end, "element 2.ok is a number where element 1 is a boolean")
  end)
end)

describe("difftest round 8: samplers and DataLoader (torch 1.13)", function()
  local ds = D.TensorDataset(T.arange(0, 10))
  it("a sampler may be an array (or tensor) of positions, a batch_sampler an array of arrays", function()
    -- [b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=[3, 1, 8])] -> [[3, 1], [8]]
    local l = D.DataLoader(ds, { batch_size = 2, sampler = { 4, 2, 9 } })
    assert.equal(2, l:len())
    local got = {}
    for x in l:iter() do got[#got + 1] = x:tolist() end
    assert.same({ { 3, 1 }, { 8 } }, got)
    got = {}
    for x in D.DataLoader(ds, { batch_size = false, sampler = T.tensor { 4, 2 } }):iter() do got[#got + 1] = x:item() end
    assert.same({ 3, 1 }, got)
    -- DataLoader(ds, batch_sampler=[[0, 1], [4]]) -> 2 batches [0, 1], [4]
    local b = D.DataLoader(ds, { batch_sampler = { { 1, 2 }, { 5 } } })
    assert.equal(2, b:len())
    got = {}
    for x in b:iter() do got[#got + 1] = x:tolist() end
    assert.same({ { 0, 1 }, { 4 } }, got)
    -- list(BatchSampler([5, 6, 7], 2, False)) -> [[5, 6], [7]]
    local bs = D.BatchSampler({ 5, 6, 7 }, 2, false):batches()
    assert.same({ { 5, 6 }, { 7 } }, { bs[1]:tolist(), bs[2]:tolist() })
    assert.equal(1, D.BatchSampler({ 5, 6, 7 }, 2, true):len())
    err(function() D.DataLoader(ds, { sampler = { 1.5 } }) end, "DataLoader: sampler[1] must be an integer, got 1.5")
    err(function() D.DataLoader(ds, { sampler = 5 }) end,
      "DataLoader: sampler must have len() and indices(), or be an array of positions, got number")
    err(function() D.DataLoader(ds, { batch_sampler = { { 1.5 } } }) end,
      "DataLoader: batch_sampler[1][1] must be an integer, got 1.5")
    -- sampler and shuffle: ValueError: sampler option is mutually exclusive with shuffle
    err(function() D.DataLoader(ds, { sampler = { 1 }, shuffle = true }) end,
      "DataLoader: sampler option is mutually exclusive with shuffle")
  end)
  it("collate_fn must be callable; batch_size = false reads items one by one", function()
    -- torch fails only when the first batch is made ('int' object is not callable)
    err(function() D.DataLoader(ds, { collate_fn = 5 }) end, "DataLoader: collate_fn must be a function, got number")
    local calls = 0
    local items = { { 1 }, { 2 } }
    local counted = { len = function() return 2 end, get = function(_, i) return items[i] end,
      get_batch = function() calls = calls + 1; error("get_batch called") end }
    local got = {}
    for x in D.DataLoader(counted, { batch_size = false }):iter() do got[#got + 1] = x end
    assert.same({ 1, 2 }, got)
    assert.equal(0, calls)
  end)
  it("sampler errors and lengths as torch's", function()
    -- RandomSampler(ds, num_samples=0 / -1) -> ValueError num_samples should be a positive integer value
    err(function() D.RandomSampler(ds, { num_samples = -1 }) end,
      "RandomSampler: num_samples should be a positive integer value, but got num_samples=-1")
    err(function() D.RandomSampler(D.TensorDataset(T.zeros(0))) end, "num_samples=0")
    -- WeightedRandomSampler([1, -1, 2], 3): RuntimeError invalid multinomial distribution (... < 0)
    err(function() D.WeightedRandomSampler({ 1, -1, 2 }, 3):indices() end, "multinomial")
    err(function() D.WeightedRandomSampler({ 0, 0, 0 }, 3):indices() end, "sum of probabilities <= 0")
    err(function() D.WeightedRandomSampler({ 1, 1, 1 }, 5, { replacement = false }):indices() end,
      "cannot sample n_sample (5) > prob_dist.size(-1) (3) samples without replacement")
    err(function() D.BatchSampler(D.SequentialSampler(ds), 0, false) end,
      "BatchSampler: batch_size should be a positive integer value, but got batch_size=0")
    err(function() D.DataLoader(ds, { batch_size = 0 }) end, "DataLoader: batch_size should be a positive integer")
    -- RandomSampler(range(10), num_samples=25): each index 2 or 3 times
    local c = T.bincount(D.RandomSampler(ds, { num_samples = 25 }):indices(), { minlength = 10 }):tolist()
    table.sort(c)
    assert.same({ 2, 2, 2, 2, 2, 3, 3, 3, 3, 3 }, c)
    -- WeightedRandomSampler([1, 2, 3, 0, 4], N): frequencies proportional to the weights
    T.manual_seed(0)
    local f = T.bincount(D.WeightedRandomSampler({ 1, 2, 3, 0, 4 }, 100000):indices(), { minlength = 5 }):double() / 100000
    local want = { 0.1, 0.2, 0.3, 0, 0.4 }
    for i, v in ipairs(f:tolist()) do assert.is_true(math.abs(v - want[i]) < 0.01) end
    -- an empty dataset: len 0, no batches (torch's shuffle = True refuses it: num_samples=0)
    local e = D.DataLoader(D.TensorDataset(T.zeros(0, 3)), { batch_size = 2 })
    assert.equal(0, e:len())
    for _ in e:iter() do error("a batch from an empty dataset") end
  end)
end)
