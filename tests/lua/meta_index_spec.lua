-- The index family and assembling on the meta device (core/kern_index.h,
-- meta/meta.c): every op run on meta tensors gives the shape, dtype and
-- strides the same op gives on CPU tensors (the reference), on the meta
-- device; the ops whose result's shape depends on values (nonzero,
-- masked_select, a bool mask in t[key], repeat_interleave with a tensor of
-- repeats) refuse.
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack



-- Tensors on one device: values x (zeros), integer indices (all 1: a valid
-- position on the CPU), masks (all true).
local function on(dev)
  local function make(dt)
    return function(...)
      local sizes = { ... }
      sizes[#sizes + 1] = { dtype = dt, device = dev }
      return T.ones(unpack(sizes))
    end
  end
  return { dev = dev, x = make(T.float32), i = make(T.int64), i32 = make(T.int32),
           b = make(T.bool) }
end

local same_as_cpu = require("metacheck").same_meta

-- f(d) builds the op on device d's tensors and returns a tensor or a list
-- of them.
local function like_cpu(name, f)
  it(name, function()
    local c, m = f(on("cpu")), f(on("meta"))
    if T.is_tensor(c) then
      same_as_cpu(c, m)
    else
      assert.equal(#c, #m)
      for k = 1, #c do same_as_cpu(c[k], m[k]) end
    end
  end)
end

local function data_dependent(name, f, op)
  it(name .. " refuses: its shape depends on the values", function()
    local ok, err = pcall(f, on("meta"))
    assert.is_false(ok)
    local want = op .. ": not supported on the meta device: the result's shape depends on the values"
    assert.is_truthy(tostring(err):find(want, 1, true), tostring(err))
  end)
end

describe("meta: gather and scatter", function()
  like_cpu("index_select (contiguous, strided, 0-d index, int32)", function(d)
    return { d.x(4, 5):index_select(1, d.i(3)), d.x(4, 5):t():index_select(2, d.i(7)),
             d.x(4, 5):index_select(2, d.i()), d.x(4, 5):index_select(-1, d.i32(2)),
             d.x(4, 5):index_select(1, d.i(0)) }
  end)
  like_cpu("gather and take", function(d)
    return { d.x(4, 5):gather(2, d.i(4, 2)), d.x(4, 5):t():gather(1, d.i(3, 4)),
             d.x(4, 5):take(d.i(2, 3)), d.x(4, 5):t():take(d.i(6)) }
  end)
  like_cpu("scatter, scatter_add, scatter_reduce (values and reductions)", function(d)
    local s = d.x(2, 5)
    return { d.x(4, 5):scatter(1, d.i(2, 5), s), d.x(4, 5):scatter(2, d.i(4, 2), 3.5),
             d.x(4, 5):scatter_(1, d.i(2, 5), s, { reduce = "add" }),
             d.x(4, 5):scatter_add(1, d.i(2, 5), s),
             d.x(4, 5):scatter_reduce(1, d.i(2, 5), s, "mean"),
             d.x(4, 5):scatter_reduce(1, d.i(2, 5), s, "amax", { include_self = false }) }
  end)
  like_cpu("put_, index_fill_, index_copy_, index_add_", function(d)
    return { d.x(4, 5):put(d.i(3), d.x(3)), d.x(4, 5):put(d.i(3), d.x(3), true),
             d.x(4, 5):t():put(d.i(2), d.x(2)), d.x(4, 5):index_fill(2, d.i(2), -1),
             d.x(4, 5):index_copy(1, d.i(2), d.x(2, 5)),
             d.x(4, 5):index_add(2, d.i(3), d.x(4, 3), { alpha = 2 }) }
  end)
  it("mixed devices are an error naming both", function()
    local m, c = on("meta"), on("cpu")
    assert.has_error(function() m.x(4, 5):index_select(1, c.i(2)) end,
      "index_select: expected all tensors to be on the same device, but found at least two devices, meta and cpu")
    assert.has_error(function() m.x(4, 5):scatter_add_(1, m.i(2, 5), c.x(2, 5)) end,
      "scatter_add_: expected all tensors to be on the same device, but found at least two devices, meta and cpu")
  end)
end)

describe("meta: masks", function()
  like_cpu("masked_fill and masked_scatter (broadcast masks)", function(d)
    return { d.x(4, 5):masked_fill(d.b(5), 2), d.x(4, 5):t():masked_fill(d.b(5, 4), 2),
             d.x(4, 5):masked_scatter(d.b(4, 1), d.x(20)) }
  end)
  like_cpu("where (tensors, numbers, broadcasting, promotion)", function(d)
    return { T.where(d.b(4, 5), d.x(4, 5), d.x(5)), T.where(d.b(4, 1), d.x(4, 5):t():t(), 0),
             T.where(d.b(3), 1, 2), T.where(d.b(2, 3), d.i(2, 3), d.x(3)),
             d.x(4, 5):where(d.b(4, 5), -1) }
  end)
  data_dependent("nonzero", function(d) return d.x(4, 5):nonzero() end, "nonzero")
  data_dependent("argwhere", function(d) return d.x(4, 5):argwhere() end, "nonzero")
  data_dependent("where(cond)", function(d) return T.where(d.b(4, 5)) end, "nonzero")
  data_dependent("masked_select (contiguous)", function(d)
    return d.x(4, 5):masked_select(d.b(4, 5))
  end, "masked_select")
  data_dependent("masked_select (broadcast)", function(d)
    return d.x(4, 5):masked_select(d.b(5))
  end, "masked_select")
end)

describe("meta: t[key]", function()
  like_cpu("basic items are views", function(d)
    local x = d.x(4, 5, 6)
    return { x[2], x[{ {2, 3}, 1 }], x[{ "...", { 1, -1, 2 } }], x[{ T.newaxis, {}, 3 }] }
  end)
  like_cpu("integer index tensors give shapes (adjacent and separated)", function(d)
    local x = d.x(4, 5, 6)
    return { x[d.i(3)], x[{ {}, d.i(2, 2) }], x[{ d.i(3), {}, d.i32(3) }],
             x[{ {}, d.i(2, 1), d.i(3) }], d.x(4, 5):t()[{ d.i(2) }] }
  end)
  like_cpu("writes through integer index tensors and index_put_", function(d)
    local x = d.x(4, 5)
    x[d.i(2)] = 1
    x[{ {}, d.i(3) }] = d.x(4, 1)
    x:index_put_({ d.i(2), d.i(2) }, d.x(2), true)
    x:index_put_({ false, d.i(1) }, 9)
    return x
  end)
  data_dependent("a bool mask", function(d) return d.x(4, 5)[d.b(4, 5)] end, "index")
  data_dependent("a 0-d bool mask", function(d) return d.x(4, 5)[d.b()] end, "index")
  -- a number written through one mask is masked_fill_: no count is needed
  like_cpu("writing a number through a bool mask", function(d)
    local x, y = d.x(4, 5), d.x(4, 5)
    x[d.b(4)] = 0
    y[{ 2, d.b(5) }] = 1
    return { x, y }
  end)
  data_dependent("writing a tensor through a bool mask", function(d)
    local x = d.x(4, 5)
    x[d.b(4)] = d.x(5)
  end, "index")
  data_dependent("a bool mask with an index tensor", function(d)
    return d.x(4, 5)[{ d.b(4), d.i(1) }]
  end, "index")
end)

describe("meta: assembling", function()
  like_cpu("cat, stack, hstack, vstack, dstack (with promotion)", function(d)
    return { T.cat({ d.x(2, 3), d.x(4, 3) }, 1), T.cat({ d.x(2, 3), d.i(2, 1) }, 2),
             T.cat({ d.x(0), d.x(2, 3) }, 1), T.stack({ d.x(2, 3), d.x(2, 3) }, 2),
             T.hstack({ d.x(3), d.x(2) }), T.vstack({ d.x(3), d.x(2, 3) }),
             T.dstack({ d.x(2, 3), d.x(2, 3) }) }
  end)
  like_cpu("split, chunk, tensor_split, unbind are views", function(d)
    local out = {}
    for _, list in ipairs { d.x(5, 4):split(2), d.x(5, 4):split({ 1, 3 }, 2),
                            d.x(5, 4):chunk(3), d.x(5, 4):tensor_split(3, 2),
                            d.x(5, 4):unbind(2) } do
      for _, p in ipairs(list) do out[#out + 1] = p end
    end
    return out
  end)
  like_cpu("repeat, tile, roll", function(d)
    return { d.x(2, 3):repeat_tensor(2, 1, 3), d.x(2, 3):t():repeat_tensor(2, 2),
             d.x(2, 3):tile({ 2 }), d.x(2, 3):roll(1), d.x(2, 3):t():roll({ 1, -1 }, { 1, 2 }) }
  end)
  it("cat of mixed devices is an error naming both", function()
    assert.has_error(function() T.cat({ on("meta").x(2), on("cpu").x(2) }) end,
      "cat: expected all tensors to be on the same device, but found at least two devices, meta and cpu")
  end)
  like_cpu("repeat_interleave with a number of repeats (the shape is known)", function(d)
    return { d.x(2, 3):repeat_interleave(2), d.x(2, 3):repeat_interleave(3, 1),
             d.x(2, 3):t():repeat_interleave(2, -1), d.x(2, 3):repeat_interleave(0, 2) }
  end)
  data_dependent("repeat_interleave with a tensor of repeats", function(d)
    return d.x(2, 3):repeat_interleave(d.i(2), 1)
  end, "repeat_interleave")
  data_dependent("repeat_interleave of repeats alone", function(d)
    return T.repeat_interleave(d.i(3))
  end, "repeat_interleave")
end)
