-- data: datasets, batching and splitting; and the loop a person watches
-- (T.train: progress bar, CSV log, PNG curves).
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack
local data = T.data

describe("TensorDataset and DataLoader", function()
  local X = T.arange(1, 21):reshape(10, 2):double()
  local Y = T.arange(1, 11)
  local ds = data.TensorDataset(X, Y)

  it("a TensorDataset indexes its tensors along the first dim", function()
    assert.are.equal(10, ds:len())
    local item = ds:get(3)
    assert.are.same({ 5, 6 }, item[1]:tolist())
    assert.are.equal(3, item[2]:item())
    assert.has_error(function() ds:get(11) end, "TensorDataset: index 11 is out of range 1..10")
    assert.has_error(function() data.TensorDataset(X, T.arange(1, 5)) end,
      "TensorDataset: size mismatch between tensors (10 and 4 rows)")
  end)

  it("batches in order, with a short last batch unless drop_last", function()
    local dl = data.DataLoader(ds, { batch_size = 4 })
    assert.are.equal(3, dl:len())
    local sizes, ys = {}, {}
    for x, y in dl:iter() do
      sizes[#sizes + 1] = x.shape[1]
      assert.are.same({ x.shape[1], 2 }, x.shape:totable())
      for _, v in ipairs(y:tolist()) do ys[#ys + 1] = v end
    end
    assert.are.same({ 4, 4, 2 }, sizes)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, ys)
    local dd = data.DataLoader(ds, { batch_size = 4, drop_last = true })
    assert.are.equal(2, dd:len())
    local n = 0
    for _ in dd:iter() do n = n + 1 end
    assert.are.equal(2, n)
  end)

  it("shuffles with the generator: every item once, reproducible under a seed", function()
    local dl = data.DataLoader(ds, { batch_size = 3, shuffle = true })
    local function pass()
      local seen = {}
      for x, y in dl:iter() do
        for i, v in ipairs(y:tolist()) do
          seen[#seen + 1] = v
          assert.are.equal(2 * v - 1, x[i][1]:item()) -- rows stay paired
        end
      end
      return seen
    end
    T.manual_seed(7)
    local a = pass()
    T.manual_seed(7)
    local b = pass()
    assert.are.same(a, b)
    local sorted = { unpack(a) }
    table.sort(sorted)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, sorted)
    assert.are_not.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, a)
  end)

  it("collates datasets of tables: stacks tensors, recurses into fields", function()
    local items = {}
    for i = 1, 5 do items[i] = { image = T.full({ 2, 2 }, i), label = i, meta = { w = i * 0.5, ok = i % 2 == 0 } } end
    local custom = { len = function() return #items end, get = function(_, i) return items[i] end }
    local dl = data.DataLoader(custom, { batch_size = 2 })
    local batches = {}
    for b in dl:iter() do batches[#batches + 1] = b end
    assert.are.equal(3, #batches)
    local b = batches[1]
    assert.are.same({ 2, 2, 2 }, b.image.shape:totable())
    assert.are.same({ 1, 2 }, b.label:tolist())
    assert.are.equal(T.int64, b.label.dtype)
    assert.are.same({ 0.5, 1.0 }, b.meta.w:tolist())
    assert.are.same({ false, true }, b.meta.ok:tolist())
    assert.has_error(function() data.DataLoader(custom, { batchsize = 2 }) end, "DataLoader: unknown option 'batchsize' (expected one of: batch_size, shuffle, drop_last, collate_fn, sampler, batch_sampler, pin_memory)")
  end)

  it("pin_memory is a boolean, and true is refused where there is no cuda device", function()
    local ds = T.data.TensorDataset(T.arange(6):float())
    assert.has_error(function() T.data.DataLoader(ds, { pin_memory = 1 }) end,
      "DataLoader: pin_memory must be a boolean, got number")
    if T.cuda.is_available() then
      for x in T.data.DataLoader(ds, { batch_size = 4, pin_memory = true }):iter() do
        assert.is_true(x:is_pinned())
      end
    else
      assert.has_error(function() T.data.DataLoader(ds, { pin_memory = true }) end,
        "DataLoader: pin_memory = true needs a cuda device (T.cuda.is_available() is false)")
    end
    local n = 0
    for x in T.data.DataLoader(ds, { batch_size = 4, pin_memory = false }):iter() do n = n + x:numel() end
    assert.equal(6, n)
  end)

  it("read_csv reads numeric CSV files, gzip-compressed or not", function()
    local path = os.tmpname()
    local f = io.open(path, "w")
    f:write("a,b,c\n1,2.5,3\n4,5,-6e-1\n")
    f:close()
    local t = data.read_csv(path, { header = true, dtype = T.float64 })
    assert.are.same({ { 1, 2.5, 3 }, { 4, 5, -0.6 } }, t:tolist())
    local rc = os.execute("gzip -c '" .. path .. "' > '" .. path .. ".gz'")
    assert.is_true(rc == 0 or rc == true)  -- LuaJIT returns 0, Lua 5.4 true
    local z = data.read_csv(path .. ".gz", { header = true })
    assert.are.equal(T.float32, z.dtype)
    assert.are.same({ 2, 3 }, z.shape:totable())
    assert.has_error(function() data.read_csv(path) end, "read_csv: " .. path .. " line 1: 'a' is not a number")
    os.remove(path)
    os.remove(path .. ".gz")
    assert.has_error(function() data.read_csv(path .. ".gz") end, "read_csv: cannot open " .. path .. ".gz")
  end)

  it("random_split makes disjoint subsets covering the dataset", function()
    T.manual_seed(1)
    local parts = data.random_split(ds, { 7, 3 })
    assert.are.equal(7, parts[1]:len())
    assert.are.equal(3, parts[2]:len())
    local seen = {}
    for _, p in ipairs(parts) do
      for x, y in data.DataLoader(p, { batch_size = 4 }):iter() do
        for _, v in ipairs(y:tolist()) do
          assert.is_nil(seen[v])
          seen[v] = true
        end
      end
    end
    for i = 1, 10 do assert.is_true(seen[i]) end
    local f = data.random_split(ds, { 0.75, 0.25 })
    assert.are.equal(8, f[1]:len())
    assert.are.equal(2, f[2]:len())
    assert.has_error(function() data.random_split(ds, { 5, 3 }) end,
      "random_split: sum of input lengths (8) does not equal the length of the input dataset (10)")
  end)
end)

describe("the loop a person watches", function()
  local function tmpname()
    local n = os.tmpname()
    return n
  end

  it("a progress bar writes plain lines when not on a terminal", function()
    local path = tmpname()
    local f = io.open(path, "w")
    local bar = T.train.ProgressBar { total = 20, desc = "epoch 1/3", out = f, tty = false }
    for i = 1, 20 do bar:update(1, { loss = 1 / i }) end
    bar:close()
    f:close()
    local lines = {}
    for l in io.lines(path) do lines[#lines + 1] = l end
    os.remove(path)
    assert.are.equal(10, #lines) -- at 10%, 20%, ..., 90%, and the final line
    assert.truthy(lines[1]:find("^epoch 1/3  %[==>%s+%]  2/20  10%%"))
    assert.truthy(lines[1]:find("it/s  ETA "))
    assert.truthy(lines[1]:find("loss 0%.5000$"))
    assert.truthy(lines[10]:find("20/20 100%%"))
    assert.truthy(lines[10]:find(" in %d+:%d%d  loss 0%.0500$"))
    assert.is_nil(lines[10]:find("\r"))
  end)

  it("on a terminal it redraws one line in place", function()
    local path = tmpname()
    local f = io.open(path, "w")
    local bar = T.train.ProgressBar { total = 3, out = f, tty = true, min_interval = 0 }
    for _ = 1, 3 do bar:update() end
    bar:close()
    f:close()
    local s = io.open(path):read("*a")
    os.remove(path)
    local _, redraws = s:gsub("\r\27%[K", "")
    assert.are.equal(4, redraws)
    local _, newlines = s:gsub("\n", "")
    assert.are.equal(1, newlines)
  end)

  it("CSVLogger writes a header and one row per call", function()
    local path = tmpname()
    local log = T.train.CSVLogger(path, { "epoch", "loss", "acc", "note" })
    log:log { epoch = 1, loss = 0.5, acc = T.tensor(0.25), note = "a, b" }
    log:log { epoch = 2, loss = 0.125 }
    log:close()
    local s = io.open(path):read("*a")
    os.remove(path)
    assert.are.equal('epoch,loss,acc,note\n1,0.5,0.25,"a, b"\n2,0.125,,\n', s)
  end)

  it("plot_curves writes a PNG of the asked size", function()
    local path = tmpname() .. ".png"
    T.train.plot_curves(path, { { { 3, 2, 1.5, 1.2 }, { 3.1, 2.4, 2, 1.9 } }, { series = { { 0.5, 0.8, 0.9, 0.95 } }, ymin = 0, ymax = 1 } },
      { width = 500, height = 200 })
    local s = io.open(path, "rb"):read("*a")
    os.remove(path)
    assert.are.equal("\137PNG\r\n\26\n", s:sub(1, 8))
    assert.are.equal("IHDR", s:sub(13, 16))
    local function be32(i) local a, b, c, d = s:byte(i, i + 3) return ((a * 256 + b) * 256 + c) * 256 + d end
    assert.are.equal(500, be32(17))
    assert.are.equal(200, be32(21))
    assert.truthy(s:find("IEND", #s - 12, true))
    assert.has_error(function() T.train.plot_curves("/nonexistent/dir/x.png", { { { 1, 2 } } }) end,
      "plot_png: cannot write /nonexistent/dir/x.png")
  end)
end)
