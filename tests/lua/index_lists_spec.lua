-- Index keys are lists: a nil hole or a non-position key is refused (LuaJIT's
-- `#` may stop at the hole and silently drop entries), and a plain Lua table
-- assigned through t[k] = {...} is a tensor of its values (PyTorch's
-- t[k] = [...]).
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("index key lists", function()
  local x = T.arange(24):reshape(2, 3, 4)

  it("refuses a nil hole in the key table, for reads and writes", function()
    local j
    err(function() return x[{ 1, nil, 2 }] end, "a nil cannot stand in an index")
    err(function() return x[{ 1, j, 2 }] end, "a nil cannot stand in an index")
    err(function() return x[{ 1, nil, nil, 2 }] end, "a nil cannot stand in an index")
    local k = { 1 }; k[3] = 2
    err(function() return x[k] end, "a nil cannot stand in an index")
    local y = x:clone()
    err(function() y[{ 1, nil, 2 }] = 5 end, "a nil cannot stand in an index")
    assert.is_true(T.equal(y, x)) -- nothing written
  end)

  it("refuses a nil hole in a range and non-position keys", function()
    err(function() return x[{ 1, { 1, nil, 2 } }] end, "a nil cannot stand in an index")
    err(function() return x[{ 1, 2, foo = 1 }] end, "not a position")
    err(function() return x[{ 1, { 1, 2, step = 1 } }] end, "not a position")
  end)

  it("still reads every well-formed key", function()
    assert.same({ 4 }, x[{ 2, 3 }].shape:totable())
    assert.equal(x[{ 2, 3, 4 }]:item(), 23)
    assert.same({ 2, 2 }, x[{ {}, { 2, 3 }, 1 }].shape:totable())
    assert.same({ 2, 3, 4 }, x[{}].shape:totable())
    local k = {}; k[1] = 2; k[2] = 1 -- built by assignment
    assert.equal(x[k][1]:item(), 12)
  end)

  it("t[k] = {...} copies a tensor of the table's values", function()
    -- torch: x = torch.arange(24).reshape(2,3,4); x[0] = [[1,2,3,4]]*3;
    -- x[1, 0] = [1.5, 2, 3, 4] -> [1, 2, 3, 4] (the list's float tensor cast to int64)
    local y = x:clone()
    y[1] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }
    assert.same({ 1, 2, 3, 4 }, y[{ 1, 1 }]:tolist())
    assert.same({ 9, 10, 11, 12 }, y[{ 1, 3 }]:tolist())
    y[{ 2, 1 }] = { 1.5, 2, 3, 4 }
    assert.same({ 1, 2, 3, 4 }, y[{ 2, 1 }]:tolist())
    assert.equal(T.int64, y.dtype)
    local f = T.zeros(2, 3)
    f[{ {}, 2 }] = { 7, 8 }
    assert.same({ { 0, 7, 0 }, { 0, 8, 0 } }, f:tolist())
    f[T.tensor{ true, false }] = { 1, 2, 3 } -- broadcast over the mask's row
    assert.same({ { 1, 2, 3 }, { 0, 8, 0 } }, f:tolist())
    err(function() f[1] = { 1, 2 } end, "shape mismatch")
    err(function() f[1] = { "a" } end, "index")
  end)
end)
