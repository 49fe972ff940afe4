-- T.data: datasets and batching (docs/training.md).
--
-- A dataset answers ds:len() and ds:get(i) (1-based; a table of fields);
-- it may also answer ds:get_batch(ids), ids an int64 tensor of positions,
-- which the DataLoader then uses to gather a whole batch with the engine's
-- index_select instead of one element at a time. TensorDataset and Subset
-- do.
return function(T, C)
  local fmt = string.format
  local unpack = table.unpack or unpack
  local A = require "ember.args"
  local data = {}
  T.data = data

  -- -- TensorDataset ----------------------------------------------------------------
  local TensorDataset = {}
  TensorDataset.__index = TensorDataset
  function data.TensorDataset(...)
    local ts = { ... }
    if #ts == 0 then error("TensorDataset: expected at least one tensor", 2) end
    for i, t in ipairs(ts) do
      if A.is_opts(t) then A.nomore("TensorDataset", i - 1, t) end
      if not T.is_tensor(t) then error(string.format("TensorDataset: argument #%d is not a tensor", i), 2) end
      if t.ndim == 0 then error("TensorDataset: tensors must have a first dimension", 2) end
      if t.shape[1] ~= ts[1].shape[1] then
        error(string.format("TensorDataset: size mismatch between tensors (%d and %d rows)", ts[1].shape[1],
          t.shape[1]), 2)
      end
    end
    return setmetatable({ tensors = ts }, TensorDataset)
  end
  function TensorDataset:len(...)
    A.nomore("len", 1, ...)
    return self.tensors[1].shape[1]
  end
  -- an integer position in 1..n, or -n..-1 from the end (as ConcatDataset)
  local function position(op, i, n)
    if type(i) ~= "number" or i % 1 ~= 0 then
      error(fmt("%s: expected an integer index, got %s", op, type(i) == "number" and tostring(i) or type(i)), 3)
    end
    if i < 0 and i >= -n then i = n + 1 + i end
    if i < 1 or i > n then error(fmt("%s: index %d is out of range 1..%d", op, i, n), 3) end
    return i
  end
  function TensorDataset:get(i, ...)
    A.nomore("get", 2, ...)
    i = position("TensorDataset", i, self:len())
    local out = {}
    for k, t in ipairs(self.tensors) do out[k] = t[i] end
    return out
  end
  function TensorDataset:get_batch(ids, ...)
    A.nomore("get_batch", 2, ...)
    local out = {}
    for k, t in ipairs(self.tensors) do out[k] = t:index_select(1, ids) end
    return out
  end

  -- -- Subset and random_split ---------------------------------------------------------
  local Subset = {}
  Subset.__index = Subset
  -- indices: an int64 tensor or a Lua array of 1-based positions
  -- 1-based positions as a 1-d int64 tensor: a Lua array of integers or a
  -- 1-d integer tensor (op names the caller in errors)
  local function positions(op, what, idx, level)
    if T.is_tensor(idx) then
      if idx.ndim ~= 1 then
        error(fmt("%s: %s must be 1-d, got shape %s", op, what, tostring(idx.shape)), level + 1)
      end
      if idx.dtype.is_floating_point or idx.dtype.is_complex or idx.dtype == T.bool then
        error(fmt("%s: %s must be integers, got a %s tensor", op, what, idx.dtype.name), level + 1)
      end
      return idx.dtype == T.int64 and idx or idx:long()
    end
    if type(idx) ~= "table" then
      error(fmt("%s: %s must be an array of integers or an integer tensor, got %s", op, what, type(idx)), level + 1)
    end
    local count = 0
    for _ in pairs(idx) do count = count + 1 end
    if count ~= #idx then
      error(fmt("%s: %s must be an array of integers or an integer tensor, got a table with %d non-array keys", op, what,
        count - #idx), level + 1)
    end
    for i, v in ipairs(idx) do
      if type(v) ~= "number" or v % 1 ~= 0 then
        error(fmt("%s: %s[%d] must be an integer, got %s", op, what, i, tostring(v)), level + 1)
      end
    end
    return T.tensor(idx, { dtype = T.int64 }):reshape(-1)
  end
  data._positions = positions
  function data.Subset(dataset, indices, ...)
    A.nomore("Subset", 2, ...)
    if type(dataset) ~= "table" or not dataset.len or not dataset.get then
      error("Subset: expected a dataset (with len and get), got " .. type(dataset), 2)
    end
    indices = positions("Subset", "indices", indices, 2)
    return setmetatable({ dataset = dataset, indices = indices }, Subset)
  end
  function Subset:len(...)
    A.nomore("len", 1, ...)
    return self.indices:numel()
  end
  function Subset:get(i, ...)
    A.nomore("get", 2, ...)
    i = position("Subset", i, self:len())
    return self.dataset:get(self.indices[i]:item())
  end
  function Subset:get_batch(ids, ...)
    A.nomore("get_batch", 2, ...)
    local sub = self.indices:index_select(1, ids)
    if self.dataset.get_batch then return self.dataset:get_batch(sub) end
    return nil
  end

  -- lengths: counts summing to the dataset's length, or fractions summing
  -- to 1 (the remainder goes round-robin to the first parts, as PyTorch).
  -- The permutation comes from the global generator (T.manual_seed), or
  -- with o.seed from a generator of its own seeded with it (PyTorch's
  -- generator=), leaving the global one as it was.
  function data.random_split(dataset, lengths, o, ...)
    A.nomore("random_split", 3, ...)
    o = A.checkopts("random_split", o, { "seed" })
    if o.seed ~= nil and (type(o.seed) ~= "number" or o.seed % 1 ~= 0) then
      error("random_split: seed must be an integer, got " .. tostring(o.seed), 2)
    end
    local n = dataset:len()
    -- fractions in a float tensor are summed and scaled in its dtype, as
    -- PyTorch's arithmetic on the tensor's elements does
    local tsum, tscaled
    if T.is_tensor(lengths) then
      if lengths.ndim ~= 1 then
        error("random_split: lengths must be a list (or a 1-d tensor) of counts or fractions, got shape "
          .. tostring(lengths.shape), 2)
      end
      if lengths.dtype.is_floating_point and lengths:numel() > 0 then
        tsum, tscaled = lengths:sum():item(), (lengths * n):floor():tolist()
      end
      lengths = lengths:tolist()
    end
    if type(lengths) ~= "table" then
      error("random_split: lengths must be a list (or a 1-d tensor) of counts or fractions, got " .. type(lengths), 2)
    end
    for i, l in ipairs(lengths) do
      if type(l) ~= "number" then error(fmt("random_split: lengths[%d] is a %s, not a number", i, type(l)), 2) end
    end
    local counts, total = {}, 0
    local s, allint = 0, true
    for _, l in ipairs(lengths) do
      s = s + l
      allint = allint and l % 1 == 0
    end
    s = tsum or s
    -- fractions when they sum to 1 (PyTorch: math.isclose(sum, 1), whose
    -- rel_tol is 1e-9); counts 0/1 summing to 1 give the same parts either way
    if math.abs(s - 1) <= 1e-9 then
      for i, f in ipairs(lengths) do
        if f < 0 or f > 1 then error(fmt("random_split: fraction at index %d (%s) is not between 0 and 1", i, tostring(f)), 2) end
        counts[i] = tscaled and tscaled[i] or math.floor(n * f)
        total = total + counts[i]
      end
      local i = 1
      while total < n do
        counts[i] = counts[i] + 1
        total = total + 1
        i = i % #counts + 1
      end
    elseif not allint then
      error(fmt("random_split: lengths must be non-negative integers, or fractions summing to 1 (these sum to %s)",
        tostring(s)), 2)
    else
      for i, l in ipairs(lengths) do
        if l < 0 then error(fmt("random_split: lengths[%d] is negative (%d)", i, l), 2) end
        counts[i] = l
        total = total + l
      end
    end
    if total ~= n then
      error(string.format("random_split: sum of input lengths (%d) does not equal the length of the input dataset (%d)",
        total, n), 2)
    end
    local perm
    if o.seed ~= nil then
      local saved = T.get_rng_state()
      T.manual_seed(o.seed)
      perm = T.randperm(n)
      T.set_rng_state(saved)
    else
      perm = T.randperm(n)
    end
    local out, at = {}, 1
    for i, c in ipairs(counts) do
      out[i] = data.Subset(dataset, c > 0 and perm:narrow(1, at, c) or T.empty({ 0 }, { dtype = T.int64 }))
      at = at + c
    end
    return out
  end

  -- -- collate -------------------------------------------------------------------------
  -- Stacks tensors along a new first dim, turns numbers into a tensor and
  -- booleans into a bool tensor, and recurses into tables field by field.
  -- Numbers: int64 when they are integers (Lua 5.4: math.type; LuaJIT: all
  -- integral), else float64. Through a DataLoader the first batch decides
  -- each field's dtype for every later batch (state: field path -> dtype),
  -- so a float field that happens to be integral in one batch does not
  -- change dtype; an int64 field that later holds a fraction is an error.
  local math_type = math.type
  local function collate(items, state, path)
    local first = items[1]
    if T.is_tensor(first) then return T.stack(items) end
    if type(first) == "number" then
      local allint = true
      for i, v in ipairs(items) do
        if type(v) ~= "number" then
          error(fmt("default_collate: element %d%s is a %s where element 1 is a number", i, path, type(v)), 0)
        end
        if math_type then allint = allint and math_type(v) == "integer" else allint = allint and v % 1 == 0 end
      end
      local dt = allint and T.int64 or T.float64
      if state then
        local prev = state[path]
        if prev == T.int64 and dt == T.float64 then
          error(fmt("default_collate: field%s was int64 in the first batch (all integers) but holds a "
            .. "fraction now; store it as a float tensor, or pass a collate_fn", path == "" and "" or " " .. path:sub(2)), 0)
        end
        dt = prev or dt
        state[path] = dt
      end
      return T.tensor(items, { dtype = dt })
    end
    if type(first) == "boolean" then
      for i, v in ipairs(items) do
        if type(v) ~= "boolean" then
          error(fmt("default_collate: element %d%s is a %s where element 1 is a boolean", i, path, type(v)), 0)
        end
      end
      return T.tensor(items, { dtype = T.bool })
    end
    if type(first) == "string" then return items end
    if type(first) == "table" then
      local nkeys = 0
      for _ in pairs(first) do nkeys = nkeys + 1 end
      local out = {}
      for i, it in ipairs(items) do
        if type(it) ~= "table" then
          error(fmt("default_collate: element %d%s is a %s where element 1 is a table", i, path, type(it)), 0)
        end
        local n = 0
        for _ in pairs(it) do n = n + 1 end
        if n ~= nkeys then
          error(fmt("default_collate: each element in list of batch should be of equal size (element 1%s "
            .. "has %d entries, element %d has %d)", path, nkeys, i, n), 0)
        end
      end
      for k in pairs(first) do
        local col = {}
        for i, it in ipairs(items) do
          if it[k] == nil then error("default_collate: element " .. i .. " has no field " .. tostring(k), 0) end
          col[i] = it[k]
        end
        out[k] = collate(col, state, path .. "." .. tostring(k))
      end
      return out
    end
    error("default_collate: cannot batch values of type " .. type(first), 0)
  end
  data._collate = collate
  function data.default_collate(items, ...)
    A.nomore("default_collate", 1, ...)
    if type(items) ~= "table" then error("default_collate: expected a list of items, got " .. type(items), 2) end
    local ok, r = pcall(collate, items, nil, "")
    if not ok then error(r, 2) end
    return r
  end

  -- -- ConcatDataset ---------------------------------------------------------------------
  -- ConcatDataset(datasets): the datasets one after another (position i of
  -- the whole is position i - cumulative_sizes[k-1] of dataset k)
  local ConcatDataset = {}
  ConcatDataset.__index = ConcatDataset
  function data.ConcatDataset(datasets, ...)
    A.nomore("ConcatDataset", 1, ...)
    if type(datasets) ~= "table" or #datasets == 0 then
      error("ConcatDataset: datasets should not be an empty iterable", 2)
    end
    local cum, total = {}, 0
    for k, d in ipairs(datasets) do
      if type(d) ~= "table" or not d.len or not d.get then
        error(string.format("ConcatDataset: entry %d is not a dataset (with len and get)", k), 2)
      end
      total = total + d:len()
      cum[k] = total
    end
    return setmetatable({ datasets = datasets, cumulative_sizes = cum }, ConcatDataset)
  end
  function ConcatDataset:len(...)
    A.nomore("len", 1, ...)
    return self.cumulative_sizes[#self.cumulative_sizes]
  end
  function ConcatDataset:get(i, ...)
    A.nomore("get", 2, ...)
    local n = self:len()
    if type(i) ~= "number" or i % 1 ~= 0 then error("ConcatDataset: expected an integer index, got " .. tostring(i), 2) end
    if i < 0 then
      if -i > n then error("ConcatDataset: absolute value of index should not exceed dataset length", 2) end
      i = n + 1 + i
    end
    if i < 1 or i > n then error(string.format("ConcatDataset: index %d is out of range (%d items)", i, n), 2) end
    local prev = 0
    for k, c in ipairs(self.cumulative_sizes) do
      if i <= c then return self.datasets[k]:get(i - prev) end
      prev = c
    end
  end

  -- -- samplers ----------------------------------------------------------------------------
  -- PyTorch's torch.utils.data samplers. A sampler answers len() and
  -- indices(): the positions of one pass, 1-based (an int64 tensor), which
  -- DataLoader{sampler = s} reads once per pass. A random sampler given
  -- seed = n draws from a generator of its own (seeded with n at the first
  -- pass and carried on between passes); without one it draws from the
  -- global generator (T.manual_seed).
  local function own_rng(self, fn)
    if self.seed == nil then return fn() end
    local saved = T.get_rng_state()
    if self._state then T.set_rng_state(self._state) else T.manual_seed(self.seed) end
    local ok, r = pcall(fn)
    self._state = T.get_rng_state()
    T.set_rng_state(saved)
    if not ok then error(r, 0) end
    return r
  end
  local function check_seed(op, seed)
    if seed ~= nil and (type(seed) ~= "number" or seed % 1 ~= 0) then
      error(string.format("%s: seed must be an integer, got %s", op, tostring(seed)), 3)
    end
  end
  local function sampler_class()
    local S = {}
    S.__index = S
    function S:len(...) A.nomore("len", 1, ...) return self.num_samples end
    return S
  end
  local function data_len(op, src)
    if type(src) == "table" and src.len then return src:len() end
    if type(src) == "table" then return #src end
    if type(src) == "number" and src >= 0 and src % 1 == 0 then return src end
    error(string.format("%s: expected a dataset (with len), an array or a length, got %s", op, type(src)), 3)
  end

  -- PyTorch takes any iterable of indices as a sampler: here an array of
  -- 1-based positions or a 1-d integer tensor, yielded in order
  local IndexSampler = sampler_class()
  function IndexSampler:indices(...)
    A.nomore("indices", 1, ...)
    return self.idx
  end
  local function as_sampler(op, s, level)
    if type(s) == "table" and s.len and s.indices then return s end
    if T.is_tensor(s) or (type(s) == "table" and getmetatable(s) == nil) then
      local idx = positions(op, "sampler", s, level + 1)
      return setmetatable({ idx = idx, num_samples = idx:numel() }, IndexSampler)
    end
    error(fmt("%s: sampler must have len() and indices(), or be an array of positions, got %s", op, type(s)), level + 1)
  end
  -- and any iterable of batches as a batch_sampler: an array of arrays (or
  -- of 1-d integer tensors)
  local IndexBatchSampler = {}
  IndexBatchSampler.__index = IndexBatchSampler
  function IndexBatchSampler:len(...) A.nomore("len", 1, ...) return #self.groups end
  function IndexBatchSampler:batches(...) A.nomore("batches", 1, ...) return self.groups end
  local function as_batch_sampler(op, b, level)
    if type(b) == "table" and b.len and b.batches then return b end
    if type(b) == "table" and getmetatable(b) == nil then
      local count, groups = 0, {}
      for _ in pairs(b) do count = count + 1 end
      if count == #b then
        for i, g in ipairs(b) do groups[i] = positions(op, fmt("batch_sampler[%d]", i), g, level + 1) end
        return setmetatable({ groups = groups }, IndexBatchSampler)
      end
    end
    error(fmt("%s: batch_sampler must have len() and batches(), or be an array of arrays of positions, got %s", op,
      type(b)), level + 1)
  end

  local SequentialSampler = sampler_class()
  -- SequentialSampler(data_source): 1, 2, ..., len
  function data.SequentialSampler(src, ...)
    A.nomore("SequentialSampler", 1, ...)
    return setmetatable({ data_source = src, num_samples = data_len("SequentialSampler", src) }, SequentialSampler)
  end
  function SequentialSampler:indices(...)
    A.nomore("indices", 1, ...)
    return T.arange(1, self.num_samples + 1, { dtype = T.int64 })
  end

  local RandomSampler = sampler_class()
  local RS_KEYS = { "replacement", "num_samples", "seed" }
  -- RandomSampler(data_source, {replacement=false, num_samples=len, seed=}):
  -- a permutation (repeated whole, then cut, when num_samples > len), or
  -- num_samples draws with replacement
  function data.RandomSampler(src, o, ...)
    A.nomore("RandomSampler", 2, ...)
    o = A.checkopts("RandomSampler", o, RS_KEYS)
    local n = data_len("RandomSampler", src)
    if o.replacement ~= nil and type(o.replacement) ~= "boolean" then
      error("RandomSampler: replacement should be a boolean value, but got replacement=" .. tostring(o.replacement), 2)
    end
    local ns = o.num_samples or n
    if type(ns) ~= "number" or ns % 1 ~= 0 or ns <= 0 then
      error("RandomSampler: num_samples should be a positive integer value, but got num_samples=" .. tostring(ns), 2)
    end
    check_seed("RandomSampler", o.seed)
    return setmetatable({ data_source = src, n = n, replacement = o.replacement == true, num_samples = ns,
      seed = o.seed }, RandomSampler)
  end
  function RandomSampler:indices(...)
    A.nomore("indices", 1, ...)
    local n, ns = self.n, self.num_samples
    return own_rng(self, function()
      if self.replacement then return T.randint(1, n + 1, { ns }, { dtype = T.int64 }) end
      local parts = {}
      for _ = 1, math.floor(ns / n) do parts[#parts + 1] = T.randperm(n) end
      if ns % n > 0 then parts[#parts + 1] = T.randperm(n):narrow(1, 1, ns % n) end
      return #parts == 1 and parts[1] or T.cat(parts)
    end)
  end

  local SubsetRandomSampler = sampler_class()
  -- SubsetRandomSampler(indices, {seed=}): the given positions in a random order
  function data.SubsetRandomSampler(indices, o, ...)
    A.nomore("SubsetRandomSampler", 2, ...)
    o = A.checkopts("SubsetRandomSampler", o, { "seed" })
    check_seed("SubsetRandomSampler", o.seed)
    indices = positions("SubsetRandomSampler", "indices", indices, 2)
    return setmetatable({ idx = indices, num_samples = indices:numel(), seed = o.seed }, SubsetRandomSampler)
  end
  function SubsetRandomSampler:indices(...)
    A.nomore("indices", 1, ...)
    local n = self.num_samples
    if n == 0 then return self.idx end
    return own_rng(self, function() return self.idx:index_select(1, T.randperm(n)) end)
  end

  local WeightedRandomSampler = sampler_class()
  -- WeightedRandomSampler(weights, num_samples, {replacement=true, seed=}):
  -- positions drawn with probability proportional to weights
  function data.WeightedRandomSampler(weights, num_samples, o, ...)
    A.nomore("WeightedRandomSampler", 3, ...)
    o = A.checkopts("WeightedRandomSampler", o, { "replacement", "seed" })
    if type(num_samples) ~= "number" or num_samples % 1 ~= 0 or num_samples <= 0 then
      error("WeightedRandomSampler: num_samples should be a positive integer value, but got num_samples="
        .. tostring(num_samples), 2)
    end
    if o.replacement ~= nil and type(o.replacement) ~= "boolean" then
      error("WeightedRandomSampler: replacement should be a boolean value, but got replacement=" .. tostring(o.replacement), 2)
    end
    check_seed("WeightedRandomSampler", o.seed)
    local w = T.is_tensor(weights) and weights or T.tensor(weights, { dtype = T.float64 })
    if w.ndim ~= 1 then
      error(string.format("WeightedRandomSampler: weights should be a 1d sequence but given weights have shape %s",
        tostring(w.shape)), 2)
    end
    if not w.dtype.is_floating_point then w = w:double() end
    return setmetatable({ weights = w, num_samples = num_samples, replacement = o.replacement ~= false,
      seed = o.seed }, WeightedRandomSampler)
  end
  function WeightedRandomSampler:indices(...)
    A.nomore("indices", 1, ...)
    return own_rng(self, function() return T.multinomial(self.weights, self.num_samples, self.replacement) end)
  end

  local BatchSampler = sampler_class()
  -- BatchSampler(sampler, batch_size, drop_last): the sampler's positions in
  -- batches; batches() is an array of int64 tensors (DataLoader{batch_sampler=})
  function data.BatchSampler(sampler, batch_size, drop_last, ...)
    A.nooptions("BatchSampler", 3, 3, drop_last, ...)
    sampler = as_sampler("BatchSampler", sampler, 2)
    if type(batch_size) ~= "number" or batch_size % 1 ~= 0 or batch_size <= 0 then
      error("BatchSampler: batch_size should be a positive integer value, but got batch_size=" .. tostring(batch_size), 2)
    end
    if type(drop_last) ~= "boolean" then
      error("BatchSampler: drop_last should be a boolean value, but got drop_last=" .. tostring(drop_last), 2)
    end
    return setmetatable({ sampler = sampler, batch_size = batch_size, drop_last = drop_last }, BatchSampler)
  end
  function BatchSampler:len(...)
    A.nomore("len", 1, ...)
    local n = self.sampler:len()
    if self.drop_last then return math.floor(n / self.batch_size) end
    return math.ceil(n / self.batch_size)
  end
  function BatchSampler:batches(...)
    A.nomore("batches", 1, ...)
    local idx = self.sampler:indices()
    if not T.is_tensor(idx) then idx = T.tensor(idx, { dtype = T.int64 }) end
    local n, bs, out = idx:numel(), self.batch_size, {}
    for start = 1, n, bs do
      local cnt = math.min(bs, n - start + 1)
      if cnt < bs and self.drop_last then break end
      out[#out + 1] = idx:narrow(1, start, cnt)
    end
    return out
  end

  -- -- DataLoader ----------------------------------------------------------------------
  local DataLoader = {}
  DataLoader.__index = DataLoader
  local KEYS = { "batch_size", "shuffle", "drop_last", "collate_fn", "sampler", "batch_sampler", "pin_memory" }

  function data.DataLoader(dataset, o, ...)
    A.nomore("DataLoader", 2, ...)
    if type(o) == "number" then o = { batch_size = o } end
    o = A.checkopts("DataLoader", o, KEYS)
    if type(dataset) ~= "table" or not dataset.len then
      error("DataLoader: expected a dataset (with len and get)", 2)
    end
    local bs = o.batch_size
    if bs == nil then bs = 1 end
    -- batch_size = false: no batching (PyTorch's None): each item as it is
    if bs == false then
      if o.drop_last then
        error("DataLoader: batch_size = false (no batching) is mutually exclusive with drop_last", 2)
      end
    elseif type(bs) ~= "number" or bs < 1 or bs % 1 ~= 0 then
      error(fmt("DataLoader: batch_size should be a positive integer or false, got %s %s", type(bs), tostring(bs)), 2)
    end
    if o.drop_last ~= nil and type(o.drop_last) ~= "boolean" then
      error("DataLoader: drop_last should be a boolean, got " .. type(o.drop_last), 2)
    end
    if o.collate_fn ~= nil and type(o.collate_fn) ~= "function"
      and not (type(o.collate_fn) == "table" and getmetatable(o.collate_fn) and getmetatable(o.collate_fn).__call) then
      error("DataLoader: collate_fn must be a function, got " .. type(o.collate_fn), 2)
    end
    local sampler, batch_sampler
    -- sampler: an object with len() and indices() (1-based positions, an
    -- int64 tensor or a Lua array), e.g. T.data.DistributedSampler
    if o.sampler ~= nil then
      if o.shuffle then error("DataLoader: sampler option is mutually exclusive with shuffle", 2) end
      sampler = as_sampler("DataLoader", o.sampler, 2)
    end
    -- batch_sampler: an object with len() and batches() (an array of
    -- batches of 1-based positions), e.g. T.data.BatchSampler; it replaces
    -- batch_size, shuffle, sampler and drop_last
    if o.batch_sampler ~= nil then
      if (o.batch_size ~= nil and o.batch_size ~= 1) or o.shuffle or o.sampler ~= nil or o.drop_last then
        error("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last", 2)
      end
      batch_sampler = as_batch_sampler("DataLoader", o.batch_sampler, 2)
    end
    -- pin_memory: every tensor of a batch in page-locked host memory, so
    -- that x:to("cuda", {non_blocking = true}) is an asynchronous copy;
    -- refused where there is no cuda device to pin for
    if o.pin_memory ~= nil and type(o.pin_memory) ~= "boolean" then
      error("DataLoader: pin_memory must be a boolean, got " .. type(o.pin_memory), 2)
    end
    if o.pin_memory and not T.cuda.is_available() then
      error("DataLoader: pin_memory = true needs a cuda device (T.cuda.is_available() is false)", 2)
    end
    return setmetatable({ dataset = dataset, batch_size = bs, shuffle = o.shuffle or false,
      drop_last = o.drop_last or false, collate_fn = o.collate_fn, sampler = sampler,
      batch_sampler = batch_sampler,
      pin_memory = o.pin_memory or false }, DataLoader)
  end

  function DataLoader:len(...)
    A.nomore("len", 1, ...)
    if self.batch_sampler then return self.batch_sampler:len() end
    local n = self.sampler and self.sampler:len() or self.dataset:len()
    if self.batch_size == false then return n end
    if self.drop_last then return math.floor(n / self.batch_size) end
    return math.ceil(n / self.batch_size)
  end

  -- the batches of one pass, each a table of fields
  function DataLoader:batches(...)
    A.nomore("batches", 1, ...)
    local n, order, groups
    if self.batch_sampler then
      groups = self.batch_sampler:batches()
      n = #groups
    elseif self.sampler then
      order = self.sampler:indices()
      if not T.is_tensor(order) then order = T.tensor(order, { dtype = T.int64 }) end
      n = order:numel()
    else
      n = self.dataset:len()
      order = self.shuffle and T.randperm(n) or T.arange(1, n + 1, { dtype = T.int64 })
    end
    local nb, bs, ds = groups and #groups or self:len(), self.batch_size, self.dataset
    local nobatch = bs == false
    if nobatch then bs = 1 end
    -- each field's number dtype, fixed by the first batch of the loader
    self._collate_state = self._collate_state or {}
    local state = self._collate_state
    local i = 0
    return function()
      i = i + 1
      if i > nb then return nil end
      local ids, cnt
      if groups then
        ids = groups[i]
        if not T.is_tensor(ids) then ids = T.tensor(ids, { dtype = T.int64 }) end
        cnt = ids:numel()
      else
        local start = (i - 1) * bs + 1
        cnt = math.min(bs, n - start + 1)
        ids = order:narrow(1, start, cnt)
      end
      local batch
      if not nobatch and not self.collate_fn and ds.get_batch then batch = ds:get_batch(ids) end
      if nobatch then
        batch = ds:get(ids[1]:item())
        if self.collate_fn then batch = self.collate_fn(batch) end
      elseif batch == nil then
        local items = {}
        for k = 1, cnt do items[k] = ds:get(ids[k]:item()) end
        if self.collate_fn then
          batch = self.collate_fn(items)
        else
          local ok, r = pcall(collate, items, state, "")
          if not ok then error(r, 0) end
          batch = r
        end
      end
      if self.pin_memory and T.is_tensor(batch) then
        batch = batch:pin_memory()
      elseif self.pin_memory and type(batch) == "table" then
        for k, v in pairs(batch) do
          if T.is_tensor(v) and v.device.type == "cpu" then batch[k] = v:pin_memory() end
        end
      end
      return batch, i
    end
  end

  -- for x, y in loader:iter() do ... end  (the fields of each batch)
  function DataLoader:iter(...)
    A.nomore("iter", 1, ...)
    local nextb = self:batches()
    return function()
      local b = nextb()
      if b == nil then return nil end
      -- a plain array's fields in turn; anything else (a tensor, a number,
      -- a table of named fields) as it is
      if type(b) == "table" and getmetatable(b) == nil and b[1] ~= nil then return unpack(b) end
      return b
    end
  end
  DataLoader.__call = DataLoader.iter

  -- -- read_csv --------------------------------------------------------------------------
  -- A numeric CSV file (gzip-compressed when the name ends in .gz) as a 2-d
  -- tensor: o.dtype (default float32), o.header (skip the first line).
  local CSV = { "dtype", "header" }
  function data.read_csv(path, o, ...)
    A.nomore("read_csv", 2, ...)
    o = A.checkopts("read_csv", o, CSV)
    local f
    if path:match("%.gz$") then
      local test = io.open(path, "rb")
      if not test then error("read_csv: cannot open " .. path, 2) end
      test:close()
      f = io.popen("gzip -dc '" .. path:gsub("'", "'\\''") .. "'", "r")
    else
      f = io.open(path, "r")
    end
    if not f then error("read_csv: cannot open " .. path, 2) end
    local vals, rows, cols = {}, 0, nil
    local first = true
    for line in f:lines() do
      if not (first and o.header) and line:find("%S") then
        local n = 0
        for field in line:gmatch("[^,]+") do
          n = n + 1
          local v = tonumber(field)
          if v == nil then
            f:close()
            error(string.format("read_csv: %s line %d: '%s' is not a number", path, rows + 1, field), 2)
          end
          vals[#vals + 1] = v
        end
        cols = cols or n
        if n ~= cols then
          f:close()
          error(string.format("read_csv: %s line %d has %d fields, expected %d", path, rows + 1, n, cols), 2)
        end
        rows = rows + 1
      end
      first = false
    end
    f:close()
    if rows == 0 then error("read_csv: " .. path .. " holds no rows", 2) end
    return T.tensor(vals, { dtype = o.dtype or T.float32 }):reshape(rows, cols)
  end
  return data
end
