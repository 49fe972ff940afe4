-- T.data: datasets and batching (docs/training.md).
--
-- A dataset answers ds:len() and ds:get(i) (1-based; a table of fields);
-- it may also answer ds:get_batch(ids), ids an int64 tensor of positions,
-- which the DataLoader then uses to gather a whole batch with the engine's
-- index_select instead of one element at a time. TensorDataset and Subset
-- do.
return function(T, C)
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
  function TensorDataset:get(i, ...)
    A.nomore("get", 2, ...)
    local n = self:len()
    if i < 1 or i > n then error(string.format("TensorDataset: index %d is out of range 1..%d", i, n), 2) end
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
  function data.Subset(dataset, indices, ...)
    A.nomore("Subset", 2, ...)
    if not T.is_tensor(indices) then indices = T.tensor(indices, { dtype = T.int64 }) end
    return setmetatable({ dataset = dataset, indices = indices }, Subset)
  end
  function Subset:len(...)
    A.nomore("len", 1, ...)
    return self.indices:numel()
  end
  function Subset:get(i, ...)
    A.nomore("get", 2, ...)
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
  -- The permutation comes from the generator (T.manual_seed).
  function data.random_split(dataset, lengths, ...)
    A.nomore("random_split", 2, ...)
    local n = dataset:len()
    local counts, total = {}, 0
    local fractional = true
    for _, l in ipairs(lengths) do fractional = fractional and l >= 0 and l <= 1 end
    local s = 0
    for _, l in ipairs(lengths) do s = s + l end
    if fractional and math.abs(s - 1) < 1e-9 and s ~= n then
      for i, f in ipairs(lengths) do
        counts[i] = math.floor(n * f)
        total = total + counts[i]
      end
      local i = 1
      while total < n do
        counts[i] = counts[i] + 1
        total = total + 1
        i = i % #counts + 1
      end
    else
      for i, l in ipairs(lengths) do
        if l < 0 or l % 1 ~= 0 then error("random_split: lengths must be non-negative integers or fractions", 2) end
        counts[i] = l
        total = total + l
      end
    end
    if total ~= n then
      error(string.format("random_split: sum of input lengths (%d) does not equal the length of the input dataset (%d)",
        total, n), 2)
    end
    local perm = T.randperm(n)
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
  function data.default_collate(items, ...)
    A.nomore("default_collate", 1, ...)
    local first = items[1]
    if T.is_tensor(first) then return T.stack(items) end
    if type(first) == "number" then
      local allint = true
      for _, v in ipairs(items) do allint = allint and v % 1 == 0 end
      return T.tensor(items, { dtype = allint and T.int64 or T.float64 })
    end
    if type(first) == "boolean" then return T.tensor(items, { dtype = T.bool }) end
    if type(first) == "string" then return items end
    if type(first) == "table" then
      local out = {}
      for k in pairs(first) do
        local col = {}
        for i, it in ipairs(items) do
          if it[k] == nil then error("default_collate: element " .. i .. " has no field " .. tostring(k), 2) end
          col[i] = it[k]
        end
        out[k] = data.default_collate(col)
      end
      return out
    end
    error("default_collate: cannot batch values of type " .. type(first), 2)
  end

  -- -- DataLoader ----------------------------------------------------------------------
  local DataLoader = {}
  DataLoader.__index = DataLoader
  local KEYS = { "batch_size", "shuffle", "drop_last", "collate_fn", "sampler", "pin_memory" }

  function data.DataLoader(dataset, o, ...)
    A.nomore("DataLoader", 2, ...)
    if type(o) == "number" then o = { batch_size = o } end
    o = A.checkopts("DataLoader", o, KEYS)
    if type(dataset) ~= "table" or not dataset.len then
      error("DataLoader: expected a dataset (with len and get)", 2)
    end
    local bs = o.batch_size or 1
    if bs < 1 or bs % 1 ~= 0 then error("DataLoader: batch_size should be a positive integer, got " .. bs, 2) end
    -- sampler: an object with len() and indices() (1-based positions, an
    -- int64 tensor or a Lua array), e.g. T.data.DistributedSampler
    if o.sampler ~= nil then
      if o.shuffle then error("DataLoader: sampler option is mutually exclusive with shuffle", 2) end
      if type(o.sampler) ~= "table" or not o.sampler.len or not o.sampler.indices then
        error("DataLoader: sampler must have len() and indices()", 2)
      end
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
      drop_last = o.drop_last or false, collate_fn = o.collate_fn, sampler = o.sampler,
      pin_memory = o.pin_memory or false }, DataLoader)
  end

  function DataLoader:len(...)
    A.nomore("len", 1, ...)
    local n = self.sampler and self.sampler:len() or self.dataset:len()
    if self.drop_last then return math.floor(n / self.batch_size) end
    return math.ceil(n / self.batch_size)
  end

  -- the batches of one pass, each a table of fields
  function DataLoader:batches(...)
    A.nomore("batches", 1, ...)
    local n, order
    if self.sampler then
      order = self.sampler:indices()
      if not T.is_tensor(order) then order = T.tensor(order, { dtype = T.int64 }) end
      n = order:numel()
    else
      n = self.dataset:len()
      order = self.shuffle and T.randperm(n) or T.arange(1, n + 1, { dtype = T.int64 })
    end
    local nb, bs, ds = self:len(), self.batch_size, self.dataset
    local i = 0
    return function()
      i = i + 1
      if i > nb then return nil end
      local start = (i - 1) * bs + 1
      local cnt = math.min(bs, n - start + 1)
      local ids = order:narrow(1, start, cnt)
      local batch
      if not self.collate_fn and ds.get_batch then batch = ds:get_batch(ids) end
      if batch == nil then
        local items = {}
        for k = 1, cnt do items[k] = ds:get(ids[k]:item()) end
        batch = (self.collate_fn or data.default_collate)(items)
      end
      if self.pin_memory then
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
      if b[1] ~= nil then return unpack(b) end
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
