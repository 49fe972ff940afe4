-- Indexing, read and write (DESIGN §3): integers, inclusive ranges with
-- steps, {i}, {}, T.newaxis, "...", negatives, clamping, empty results;
-- assignment fills and copies with broadcasting and casting; advanced
-- indexing with position tensors and bool masks (copies on read, writes
-- into the source); index_put_ with accumulate.
local T = require "ember"

local arange = T.arange -- 0..n-1 as int64, half-open like PyTorch

describe("basic indexing", function()
  local m = arange(12):reshape(3, 4)

  it("an integer selects along dim 1 and removes the axis (a view)", function()
    assert.same({4, 5, 6, 7}, m[2]:tolist())
    assert.same({8, 9, 10, 11}, m[-1]:tolist())
    assert.is_true(T.shares_storage(m[2], m))
    assert.equal(6, m[2][3]:item())
    assert.equal(0, m[2][3]:dim())
  end)

  it("a table holds one entry per leading dim", function()
    assert.equal(6, m[{2, 3}]:item())
    assert.same({2, 6, 10}, m[{ {}, 3 }]:tolist())              -- the seed's t[:, 2]
    assert.same({{5, 6}, {9, 10}}, m[{ {2, 3}, {2, 3} }]:tolist()) -- t[1:, 1:3]
    assert.same({{4, 5, 6, 7}}, m[{ {2} }]:tolist())            -- {i} keeps the axis
    assert.same(m:tolist(), m[{ {} }]:tolist())
    assert.same(m:tolist(), m[{}]:tolist())
  end)

  it("ranges are inclusive, take a positive step and clamp like Python slices", function()
    local v = arange(10)
    assert.same({2, 3, 4, 5, 6, 7}, v[{ {3, -3} }]:tolist())
    assert.same({7, 8, 9}, v[{ {-3, -1} }]:tolist())
    assert.same({0, 3, 6, 9}, v[{ {1, -1, 3} }]:tolist())
    assert.same({1, 5}, v[{ {2, 9, 4} }]:tolist())
    assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9}, v[{ {2, 100} }]:tolist())
    assert.same({0, 1, 2}, v[{ {-100, 3} }]:tolist())
    assert.same({0, 1}, v[{ {0, 2} }]:tolist()) -- 0 is before the start: clamped
  end)

  it("gives empty results where Python would", function()
    local v = arange(10)
    assert.equal(T.Size{0}, v[{ {7, 3} }].shape)
    assert.equal(T.Size{0}, v[{ {11, 20} }].shape)
    assert.equal(T.Size{0}, v[{ {1, 0} }].shape)
    assert.equal(T.Size{0}, v[{ {12} }].shape)
    assert.equal(T.Size{0, 4}, m[{ {4, 9} }].shape)
    assert.same({}, v[{ {5, 4} }]:tolist())
  end)

  it("T.newaxis inserts an axis and \"...\" stands for the remaining dims", function()
    local x = arange(24):reshape(2, 3, 4)
    assert.equal(T.Size{1, 2, 3, 4}, x[T.newaxis].shape)
    assert.equal(T.Size{1, 2, 3, 4}, x[{ T.newaxis }].shape)
    assert.equal(T.Size{2, 1, 3, 4}, x[{ {}, T.newaxis }].shape)
    assert.equal(T.Size{2, 3, 4, 1}, x[{ "...", T.newaxis }].shape)
    assert.same({1, 5, 9}, x[{ 1, "...", 2 }]:tolist())
    assert.same({3, 15}, x[{ "...", 1, 4 }]:tolist())
    assert.equal(T.Size{2, 3}, x[{ "...", 2 }].shape)
    assert.same(x:tolist(), x[{ "..." }]:tolist())
  end)

  it("strides along two axes, or along the first one twice", function()
    local sq = arange(36):reshape(6, 6)
    local both = sq[{ {1, -1, 2}, {1, -1, 2} }]
    assert.equal(T.Size{3, 3}, both.shape)
    assert.same({12, 2}, both:stride())
    assert.same({{0, 2, 4}, {12, 14, 16}, {24, 26, 28}}, both:tolist())
    local twice = sq[{ {1, -1, 2} }][{ {1, -1, 2} }]
    assert.equal(T.Size{2, 6}, twice.shape)
    assert.same({24, 1}, twice:stride())
    assert.same({0, 1, 2, 3, 4, 5}, twice[1]:tolist())
    assert.same({24, 25, 26, 27, 28, 29}, twice[2]:tolist())
  end)

  it("reports bad indices in Lua terms", function()
    local x = arange(6):reshape(2, 3)
    assert.has_error(function() return x[3] end,
      "index 3 is out of bounds for dimension 1 with size 2")
    assert.has_error(function() return x[{1, 4}] end,
      "index 4 is out of bounds for dimension 2 with size 3")
    assert.has_error(function() return x[{1, -4}] end,
      "index -4 is out of bounds for dimension 2 with size 3")
    assert.has_error(function() return x[0] end,
      "index 0 is out of bounds for dimension 1 with size 2 (positions are 1-based)")
    assert.has_error(function() return x[{1, 1, 1}] end,
      "index: too many indices for a tensor of dimension 2 (3 given)")
    assert.has_error(function() return T.tensor(1)[1] end,
      "index: too many indices for a tensor of dimension 0 (1 given)")
    assert.has_error(function() return x[{ "...", "..." }] end,
      "index: an index can only have a single ellipsis ('...')")
    assert.has_error(function() return x[{ {3, 1, -1} }] end,
      "index: the step of a range must be positive, got -1 (for a reversed order use :flip(dims))")
    assert.has_error(function() return x[{ {1, 2, 0} }] end,
      "index: the step of a range must be positive, got 0 (for a reversed order use :flip(dims))")
    assert.has_error(function() return x[{ {1, 2, 3, 4} }] end,
      "index: a range is {first, last[, step]}, got a table of 4 entries at position 1 of the index")
    assert.has_error(function() return x[1.5] end,
      "index: expected an integer for an index, got 1.5")
    assert.has_error(function() return x[{ "a" }] end,
      "index: unexpected string 'a' in the index (only \"...\" is allowed)")
    assert.has_error(function() return x[print] end,
      "index: unsupported index of type function at position 1")
  end)
end)

describe("assignment through an index", function()
  it("a number fills, a tensor copies with broadcasting and casting", function()
    local x = arange(12):reshape(3, 4)
    x[2] = 0
    assert.same({0, 0, 0, 0}, x[2]:tolist())
    x[{ {}, 2 }] = -1
    assert.same({-1, -1, -1}, x[{ {}, 2 }]:tolist())
    x[{ {1, -1, 2}, {3, 4} }] = T.tensor{100, 200}       -- broadcast over rows
    assert.same({{0, -1, 100, 200}, {0, -1, 0, 0}, {8, -1, 100, 200}}, x:tolist())
    x[3] = T.tensor{1.9, -2.9, 3.5, 4}                    -- float -> int64 truncates
    assert.same({1, -2, 3, 4}, x[3]:tolist())
    x[1] = T.tensor{{9, 8, 7, 6}}                         -- leading 1s are dropped
    assert.same({9, 8, 7, 6}, x[1]:tolist())
    x[{ "...", 1 }] = T.tensor(5)
    assert.same({5, 5, 5}, x[{ {}, 1 }]:tolist())
    local b = T.zeros(2, 2, {dtype = T.bool})
    b[{ {}, 2 }] = 1
    assert.same({{false, true}, {false, true}}, b:tolist())
  end)

  it("writes into the source, seen by every view", function()
    local base = arange(6):reshape(2, 3)
    local row = base[2]
    base[{2, 2}] = 40
    assert.equal(40, row[2]:item())
    row[{ {1, 2} }] = 7
    assert.same({{0, 1, 2}, {7, 7, 5}}, base:tolist())
  end)

  it("reads the value before writing when it overlaps the target", function()
    local v = arange(5)
    v[{ {2, 5} }] = v[{ {1, 4} }]
    assert.same({0, 0, 1, 2, 3}, v:tolist())
  end)

  it("rejects values that do not broadcast", function()
    local x = arange(12):reshape(3, 4)
    assert.has_error(function() x[{ {}, 2 }] = T.tensor{1, 2} end,
      "index: shape mismatch: a value of shape [2] cannot be broadcast to the indexed shape [3]")
    assert.has_error(function() x[T.tensor{1, 2}] = T.zeros(3, 4) end,
      "index: shape mismatch: a value of shape [3, 4] cannot be broadcast to the indexed shape [2, 4]")
    assert.same(arange(12):reshape(3, 4):tolist(), x:tolist())
  end)
end)

describe("advanced indexing", function()
  local x = arange(15):reshape(5, 3)

  it("position tensors (int64/int32, negatives) select rows as a copy", function()
    local r = x[T.tensor{1, 3, -1}]
    assert.same({{0, 1, 2}, {6, 7, 8}, {12, 13, 14}}, r:tolist())
    assert.is_false(T.shares_storage(r, x))
    local r32 = x[T.tensor({2, 2}, {dtype = T.int32})]
    assert.same({{3, 4, 5}, {3, 4, 5}}, r32:tolist())
    assert.same({{2, 0}, {5, 3}}, x[{ {1, 2}, T.tensor{3, 1} }]:tolist())
  end)

  it("index tensors broadcast together and place their dims as PyTorch does", function()
    assert.same({2, 3}, x[{ T.tensor{1, 2}, T.tensor{3, 1} }]:tolist())
    assert.same({{2, 0}, {5, 3}}, x[{ T.tensor{{1}, {2}}, T.tensor{3, 1} }]:tolist())
    local y = arange(24):reshape(2, 3, 4)
    -- adjacent advanced dims stay in place; separated ones go first
    assert.equal(T.Size{2, 2}, y[{ {}, T.tensor{1, 3}, T.tensor{2, 4} }].shape)
    assert.equal(T.Size{2, 3}, y[{ T.tensor{1, 2}, {}, T.tensor{2, 4} }].shape)
    assert.same({{1, 5, 9}, {15, 19, 23}}, y[{ T.tensor{1, 2}, {}, T.tensor{2, 4} }]:tolist())
  end)

  it("bool masks select the true elements in order, as a copy", function()
    local t = arange(12):reshape(3, 4)
    local mask = T.tensor{{false, false, false, false}, {false, false, true, true},
                          {true, true, true, true}}                    -- t > 5
    local r = t[mask]
    assert.same({6, 7, 8, 9, 10, 11}, r:tolist())
    assert.is_false(T.shares_storage(r, t))
    assert.same({{0, 1, 2, 3}, {8, 9, 10, 11}}, t[T.tensor{true, false, true}]:tolist())
    assert.same({{1, 2}, {5, 6}, {9, 10}},
      t[{ {}, T.tensor{false, true, true, false} }]:tolist())
    assert.equal(T.Size{0, 4}, t[T.tensor{false, false, false}].shape)
  end)

  it("a k-dim mask consumes k dims, also when items follow it (as NumPy)", function()
    -- PyTorch 1.13 would apply the -2 to the mask's second dim instead
    local y = arange(20):reshape(2, 2, 5)
    local mask = T.tensor{{true, false}, {true, true}}
    assert.same({3, 13, 18}, y[{ mask, -2 }]:tolist())
    assert.same({{0, 1, 2, 3, 4}, {10, 11, 12, 13, 14}, {15, 16, 17, 18, 19}}, y[mask]:tolist())
  end)

  it("assignment through an index or a mask modifies the source", function()
    local t = arange(12):reshape(3, 4)
    local mask = T.tensor{{false, false, false, false}, {false, false, true, true},
                          {true, true, true, true}}
    t[mask] = -1
    assert.same({{0, 1, 2, 3}, {4, 5, -1, -1}, {-1, -1, -1, -1}}, t:tolist())
    t[T.tensor{1}] = T.tensor{10, 20, 30, 40}
    assert.same({10, 20, 30, 40}, t[1]:tolist())
    t[{ {}, T.tensor{4, 1} }] = T.tensor{{7, 8}}
    assert.same({{8, 20, 30, 7}, {8, 5, -1, 7}, {8, -1, -1, 7}}, t:tolist())
    t[mask] = T.tensor{1, 2, 3, 4, 5, 6}
    assert.same({{8, 20, 30, 7}, {8, 5, 1, 2}, {3, 4, 5, 6}}, t:tolist())
  end)

  it("index_put_ writes or accumulates at the positions", function()
    local t = T.zeros(3, 4, {dtype = T.float32})
    t:index_put_({T.tensor{1, 1, 3}}, T.tensor(1.5), true)
    assert.same({3, 3, 3, 3}, t[1]:tolist())
    assert.same({1.5, 1.5, 1.5, 1.5}, t[3]:tolist())
    t:index_put_({T.tensor{2, 2}, T.tensor{2, 2}}, T.tensor{5, 6}, {accumulate = true})
    assert.equal(11, t[{2, 2}]:item())
    local r = t:index_put_({{}, T.tensor{4}}, 9)
    assert.equal(t, r)
    assert.same({9, 9, 9}, t[{ {}, 4 }]:tolist())
  end)

  it("reports bad index tensors", function()
    local t = arange(12):reshape(3, 4)
    assert.has_error(function() return t[T.tensor{4}] end,
      "index 4 is out of bounds for dimension 1 with size 3")
    assert.has_error(function() return t[{ {}, T.tensor{1, 0} }] end,
      "index 0 is out of bounds for dimension 2 with size 4 (positions are 1-based)")
    assert.has_error(function() return t[T.tensor{1.5}] end,
      "index: tensors used as indices must be int64, int32, bool or uint8 tensors, got ember.float32 (item 1)")
    assert.has_error(function() return t[T.tensor{true, false}] end,
      "index: the shape of the mask [2] does not match the shape of the indexed tensor [3] at dimension 1")
    assert.has_error(function() return t[{ T.tensor{1, 2}, T.tensor{1, 2, 3} }] end,
      "index: shapes [2] and [3] cannot be broadcast: the size of a (2) must match the size of b (3) at non-singleton dimension 1")
    assert.has_error(function() t[T.tensor{5}] = 0 end,
      "index 5 is out of bounds for dimension 1 with size 3")
    assert.same(arange(12):reshape(3, 4):tolist(), t:tolist())
  end)
end)

describe("random index expressions vs PyTorch (tests/fixtures/index_random_cases.lua)", function()
  local cases = dofile("tests/fixtures/index_random_cases.lua")
  local function flat(t)
    local out = {}
    local function walk(v)
      if type(v) == "table" then for _, x in ipairs(v) do walk(x) end
      else out[#out + 1] = v end
    end
    walk(t:tolist())
    return out
  end
  for i, c in ipairs(cases) do
    local label = #c.lua > 120 and c.lua:sub(1, 117) .. "..." or c.lua
    it(string.format("#%d [%s] %s", i, table.concat(c.shape, ","), label), function()
      local n = 1
      for _, s in ipairs(c.shape) do n = n * s end
      local x = arange(n):double():view(c.shape)
      local before = flat(x)
      local chunk = c.kind == "r" and ("local T, x = ...; return " .. c.lua)
                    or ("local T, x = ...; " .. c.lua)
      local f = assert(load(chunk))
      if c.error or c.oob then
        -- (an out-of-range position is an error in ember even where the
        -- result is empty and PyTorch never reads it)
        assert.has_error(function() f(T, x) end)
        assert.same(before, flat(x)) -- a failed write changes nothing
        return
      end
      local r = f(T, x)
      if c.kind ~= "r" then
        assert.same(c.values, flat(x))
        return
      end
      assert.same(c.size, r.shape:totable())
      assert.same(c.values, flat(r))
      if c.view then
        assert.is_true(T.shares_storage(r, x))
        assert.same(c.stride, r:stride())
        assert.equal(c.offset, r:storage_offset())
      end
    end)
  end
end)

describe("assigning a value with leading dims of size 1", function()
  it("drops them, as PyTorch's setitem does, where copy_ refuses", function()
    -- torch: x[24:36:2] = torch.ones(1, 6) works; x.copy_ of (1, 7) into (7,) fails
    local x = T.zeros(48)
    x[{ { 25, 36, 2 } }] = T.ones(1, 6)
    assert.are.equal(6, x:sum():item())
    assert.are.equal(1, x[25]:item())
    local y = T.zeros(4, 3)
    y[2] = T.ones(1, 1, 3)
    assert.are.same({ 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0 }, y:flatten():tolist())
    local ok = pcall(function() y[2] = T.ones(2, 3) end)
    assert.is_false(ok)
    ok = pcall(function() T.zeros(7):copy_(T.ones(1, 7)) end)
    assert.is_false(ok)
  end)
end)
