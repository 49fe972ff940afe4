-- ember's own format: T.save / T.load of tensors and nested tables,
-- storage sharing kept, and every kind of damaged file refused cleanly.
local T = require "ember"
local files = require "filecheck"
local readall, writeall = files.readall, files.writeall
local function tmp() return files.tmp(".ember") end

local function u64le(n)
  local b = {}
  for i = 1, 8 do b[i] = string.char(n % 256); n = math.floor(n / 256) end
  return table.concat(b)
end

describe("T.save / T.load", function()
  it("round-trips a tensor of every dtype", function()
    for _, dt in ipairs { T.bool, T.uint8, T.int8, T.int16, T.int32, T.int64,
                          T.float16, T.bfloat16, T.float32, T.float64 } do
      local t = T.tensor({{1, 0, 1}, {1, 1, 0}}, {dtype = dt})
      local p = tmp()
      T.save(p, t)
      local u = T.load(p)
      assert.is_true(T.is_tensor(u))
      assert.equal(dt, u.dtype)
      assert.same(t:tolist(), u:tolist())
      os.remove(p)
    end
  end)

  it("round-trips nested tables of tensors, numbers, strings and booleans", function()
    local value = {
      weights = {w = T.tensor{{1.5, 2.5}}, b = T.tensor{0.25}},
      epoch = 12, lr = 1e-3, name = "run \0 with a nul", done = false, ok = true,
      list = {1, 2, {3, "four"}}, [7] = "seven", [true] = "yes", [2.5] = 2.5,
      empty = {},
    }
    local p = tmp()
    T.save(p, value)
    local r = T.load(p)
    assert.same({{1.5, 2.5}}, r.weights.w:tolist())
    assert.same({0.25}, r.weights.b:tolist())
    assert.equal(12, r.epoch); assert.equal(1e-3, r.lr)
    assert.equal("run \0 with a nul", r.name)
    assert.is_false(r.done); assert.is_true(r.ok)
    assert.same({1, 2, {3, "four"}}, r.list)
    assert.equal("seven", r[7]); assert.equal("yes", r[true]); assert.equal(2.5, r[2.5])
    assert.same({}, r.empty)
    os.remove(p)
    T.save(p, 42); assert.equal(42, T.load(p))
    T.save(p, "s"); assert.equal("s", T.load(p))
    os.remove(p)
  end)

  it("keeps a view and its base aliased, with their offsets and strides", function()
    local base = T.tensor{{1, 2, 3}, {4, 5, 6}}
    local row = base[2]
    local p = tmp()
    T.save(p, {base = base, row = row, again = base})
    local r = T.load(p)
    assert.equal(r.base, r.again)                 -- one tensor saved twice: one object
    assert.equal(3, r.row:storage_offset())
    assert.equal(r.base:data_ptr() + 3 * 8, r.row:data_ptr())
    r.row[1] = 40
    assert.equal(40, r.base[2][1]:item())
    os.remove(p)
  end)

  it("writes a shared storage once", function()
    local big = T.zeros(10000)
    local a, b = tmp(), tmp()
    T.save(a, {big})
    T.save(b, {big, big[1], big[5000], T.Tensor(big)})
    assert.is_true(#readall(b) < #readall(a) + 500)
    assert.is_true(#readall(a) > 40000)
    os.remove(a); os.remove(b)
  end)

  it("keeps requires_grad", function()
    local x = T.tensor({1.5, 2.5}, {requires_grad = true})
    local p = tmp()
    T.save(p, {x = x, y = T.tensor{1.5}})
    local r = T.load(p)
    assert.is_true(r.x.requires_grad)
    assert.is_false(r.y.requires_grad)
    os.remove(p)
  end)

  it("names what cannot be saved", function()
    local p = tmp()
    local cyc = {}; cyc.self = cyc
    assert.has_error(function() T.save(p, cyc) end, "save: the table is cyclic (it contains itself)")
    assert.has_error(function() T.save(p, {f = print}) end,
      "save: cannot save a value of type function (tensors, tables, numbers, strings and booleans only)")
    assert.has_error(function() T.save(p, {[{}] = 1}) end,
      "save: table keys must be strings, numbers or booleans, got a table")
    assert.has_error(function() T.save("/nonexistent/dir/x", 1) end)
    local shared = {1}
    T.save(p, {a = shared, b = shared})           -- shared, not cyclic: fine
    assert.same({a = {1}, b = {1}}, T.load(p))
    os.remove(p)
  end)
end)

describe("damaged files", function()
  local good_path = tmp()
  T.save(good_path, {w = T.tensor{{1, 2}, {3, 4}}, v = T.tensor{1.5}, n = 3, s = "x"})
  local good = readall(good_path)
  os.remove(good_path)

  local function load_bytes(s)
    local p = tmp()
    writeall(p, s)
    local ok, err = pcall(T.load, p)
    os.remove(p)
    return ok, err
  end

  it("every truncation is an error, never a crash", function()
    for n = 0, #good - 1 do
      local ok, err = load_bytes(good:sub(1, n))
      assert.is_false(ok, "prefix " .. n)
      assert.matches("^load: ", err)
    end
    assert.is_true((load_bytes(good)))
  end)

  it("every single-byte corruption loads or fails cleanly", function()
    local failed = 0
    for i = 1, #good do
      local b = good:byte(i)
      local ok, err = load_bytes(good:sub(1, i - 1) .. string.char((b + 0x55) % 256) .. good:sub(i + 1))
      if not ok then
        failed = failed + 1
        assert.matches("^load: ", err)
      end
    end
    assert.is_true(failed > 30)
  end)

  it("names bad magic, versions and lying counts without allocating them", function()
    local _, err = load_bytes("not an ember file at all, no")
    assert.matches("^load: '.-': not an ember file %(bad magic%)$", err)
    local v9 = good:sub(1, 8) .. "\9\0\0\0" .. good:sub(13)
    assert.matches("file format version 9 is not supported", select(2, load_bytes(v9)))
    -- a header announcing 2^52 storages or tensors, or a huge metadata blob
    local huge = u64le(2^52)
    assert.matches("truncated file %(4503599627370496 storages announced%)",
      select(2, load_bytes(good:sub(1, 24) .. huge .. good:sub(33))))
    assert.matches("truncated file %(4503599627370496 tensors announced%)",
      select(2, load_bytes(good:sub(1, 32) .. huge .. good:sub(41))))
    assert.matches("truncated file %(metadata of 4503599627370496 bytes%)",
      select(2, load_bytes(good:sub(1, 16) .. huge .. good:sub(25))))
    assert.matches("cannot open", select(2, pcall(T.load, "/nonexistent/file.ember")))
  end)
end)
