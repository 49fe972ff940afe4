-- The index family (issue 4): index_select, gather, take, put_, scatter and
-- its reductions, index_fill_/copy_/add_, the masked ops, nonzero/argwhere,
-- where. Hand-written cases first, then the conformance fixtures generated
-- by PyTorch (tests/fixtures/gen_select.py), which also cover assembling.
local T = require "ember"

local unpack = unpack or table.unpack

local function flat(v, out)
  out = out or {}
  if type(v) == "table" then
    for _, e in ipairs(v) do flat(e, out) end
  else
    out[#out + 1] = v
  end
  return out
end

local function shape_of(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

local function L(t) return t:tolist() end

-- 1-d int64 tensor helper (1-based positions)
local function I(tbl) return T.tensor(tbl, { dtype = T.int64 }) end
local function B(tbl) return T.tensor(tbl, { dtype = T.bool }) end
-- float32 data (Lua numbers with integral values would infer int64)
local function F(tbl) return T.tensor(tbl, { dtype = T.float32 }) end

local function raises(fn, needle)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error containing: " .. needle)
  assert.is_truthy(tostring(err):find(needle, 1, true),
    "error '" .. tostring(err) .. "' does not contain '" .. needle .. "'")
end

describe("index_select", function()
  local t = T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }

  it("selects rows and columns by 1-based positions, negatives from the end", function()
    assert.same({ { 4, 5, 6 }, { 1, 2, 3 } }, L(t:index_select(1, I { 2, 1 })))
    assert.same({ { 3, 1 }, { 6, 4 } }, L(t:index_select(2, I { -1, 1 })))
    assert.same({ { 3, 3 }, { 6, 6 } }, L(T.index_select(t, -1, I { 3, 3 })))
  end)

  it("accepts int32 index tensors and a 0-d index", function()
    assert.same({ { 2 }, { 5 } }, L(t:index_select(2, T.tensor({ 2 }, { dtype = T.int32 }))))
    assert.same({ { 4, 5, 6 } }, L(t:index_select(1, T.tensor(2))))
  end)

  it("returns a copy", function()
    local r = t:index_select(1, I { 1 })
    r:fill_(0)
    assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, L(t))
  end)

  it("with an empty index gives an empty dim", function()
    local r = t:index_select(2, T.tensor({}, { dtype = T.int64 }))
    assert.same({ 2, 0 }, shape_of(r))
  end)

  it("rejects bad indices with the value and the size", function()
    raises(function() t:index_select(2, I { 4 }) end,
      "index_select: index 4 is out of bounds for dimension 2 with size 3")
    raises(function() t:index_select(2, I { -4 }) end,
      "index -4 is out of bounds for dimension 2 with size 3")
    raises(function() t:index_select(1, I { 0 }) end, "positions are 1-based")
    raises(function() t:index_select(1, F { 1.0, 2.5 }) end,
      "index_select: expected an int64 or int32 index tensor, got float32")
    raises(function() t:index_select(1, B { true }) end, "got bool")
    raises(function() t:index_select(3, I { 1 }) end, "dimension 3 out of range")
    raises(function() t:index_select(1, I { { 1 } }) end, "index must be 1-d or 0-d")
    raises(function() t:index_select(1, { 1 }) end, "expected a tensor")
  end)
end)

describe("gather", function()
  local t = T.tensor { { 1, 2 }, { 3, 4 } }
  it("picks along dim with 1-based positions", function()
    assert.same({ { 1, 1 }, { 4, 3 } }, L(t:gather(2, I { { 1, 1 }, { 2, 1 } })))
    assert.same({ { 3, 2 } }, L(T.gather(t, 1, I { { 2, -2 } })))
  end)
  it("checks the index", function()
    raises(function() t:gather(2, I { { 3 } }) end,
      "gather: index 3 is out of bounds for dimension 2 with size 2")
    raises(function() t:gather(1, I { 1 }) end, "same number of dimensions")
    raises(function() t:gather(1, I { { 1, 1, 1 } }) end, "exceeds the size of input")
  end)
end)

describe("take and put_", function()
  it("take reads t in row-major order", function()
    local t = T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.same({ { 1, 6 }, { 5, 2 } }, L(t:take(I { { 1, -1 }, { 5, 2 } })))
    raises(function() t:take(I { 7 }) end,
      "take: index 7 is out of bounds for a tensor of 6 elements")
  end)

  it("put_ assigns, and with accumulate sums duplicates", function()
    local t = T.zeros(2, 2)
    assert.equal(t, t:put_(I { 1, 4 }, F { 5, 6 }))
    assert.same({ { 5, 0 }, { 0, 6 } }, L(t))
    t:put_(I { 2, 2, -1 }, F { 1, 2, 3 }, { accumulate = true })
    assert.same({ { 5, 3 }, { 0, 9 } }, L(t))
    t:put_(I { 3, 3 }, F { 1, 1 }, true)
    assert.same({ { 5, 3 }, { 2, 9 } }, L(t))
  end)

  it("put_ checks before writing anything", function()
    local t = T.zeros(3)
    raises(function() t:put_(I { 1, 4 }, F { 1, 2 }) end,
      "put_: index 4 is out of bounds for a tensor of 3 elements")
    assert.same({ 0, 0, 0 }, L(t))
    raises(function() t:put_(I { 1 }, F { 1, 2 }) end, "same number of elements")
    raises(function() t:put_(I { 1 }, T.tensor { 1 }) end, "dtype") -- int64 src
  end)

  it("put (out of place) leaves the source alone", function()
    local t = T.zeros(3)
    local r = t:put(I { 2 }, F { 1.0 })
    assert.same({ 0, 1, 0 }, L(r))
    assert.same({ 0, 0, 0 }, L(t))
  end)
end)

describe("scatter", function()
  it("scatter_ writes src or a value at 1-based positions", function()
    local z = T.zeros(2, 3)
    z:scatter_(2, I { { 3, 1 }, { 2, 2 } }, F { { 1.0, 2.0 }, { 3.0, 4.0 } })
    assert.same({ { 2, 0, 1 }, { 0, 4, 0 } }, L(z))
    z:scatter_(1, I { { 2, 2, 2 } }, 7)
    assert.same({ { 2, 0, 1 }, { 7, 7, 7 } }, L(z))
  end)

  it("reduce = add / multiply combine with what is there", function()
    local z = T.ones(3)
    z:scatter_(1, I { 1, 1, 3 }, F { 2.0, 3.0, 4.0 }, "add")
    assert.same({ 6, 1, 5 }, L(z))
    z:scatter_(1, I { 1, 1 }, F { 2.0, 3.0 }, { reduce = "multiply" })
    assert.same({ 36, 1, 5 }, L(z))
    raises(function() z:scatter_(1, I { 1 }, F { 1.0 }, "max") end,
      "reduce argument must be either 'add' or 'multiply'")
  end)

  it("scatter_add_ sums duplicates; scatter_add copies", function()
    local z = T.zeros(2)
    local r = z:scatter_add(1, I { 1, 1, 2, -1 }, F { 1.0, 2.0, 3.0, 4.0 })
    assert.same({ 3, 7 }, L(r))
    assert.same({ 0, 0 }, L(z))
    z:scatter_add_(1, I { 2 }, F { 5.0 })
    assert.same({ 0, 5 }, L(z))
  end)

  it("scatter_reduce: sum prod mean amax amin, with and without self", function()
    local x = F { 1.0, 2.0, 3.0 }
    local idx, src = I { 1, 1, 2 }, F { 4.0, 5.0, 6.0 }
    assert.same({ 10, 8, 3 }, L(x:scatter_reduce(1, idx, src, "sum")))
    assert.same({ 9, 6, 3 }, L(x:scatter_reduce(1, idx, src, "sum", { include_self = false })))
    assert.same({ 20, 12, 3 }, L(x:scatter_reduce(1, idx, src, "prod")))
    assert.same({ 4.5, 6, 3 }, L(x:scatter_reduce(1, idx, src, "mean", false)))
    assert.same({ 5, 6, 3 }, L(x:scatter_reduce(1, idx, src, "amax")))
    assert.same({ 1, 2, 3 }, L(x:scatter_reduce(1, idx, src, "amin")))
    assert.same({ 4, 6, 3 }, L(x:scatter_reduce(1, idx, src, "amin", { include_self = false })))
    assert.same({ 1, 2, 3 }, L(x)) -- out of place
    -- integer mean is floor division (PyTorch)
    local xi = T.tensor { 1, 2, 3 }
    assert.same({ 3, -2, 3 }, L(xi:scatter_reduce(1, idx, T.tensor { 4, 5, -6 }, "mean")))
    raises(function() x:scatter_reduce(1, idx, src, "max") end,
      "one of 'sum', 'prod', 'mean', 'amax', 'amin'")
  end)

  it("amax propagates NaN", function()
    local x = F { 1.0, 2.0 }
    local r = x:scatter_reduce(1, I { 1, 1 }, F { 0 / 0, 5.0 }, "amax")
    local v = r:tolist()
    assert.is_true(v[1] ~= v[1])
    assert.equal(2, v[2])
  end)

  it("checks indices and shapes before writing", function()
    local z = T.zeros(2, 2)
    raises(function() z:scatter_(2, I { { 1, 3 } }, T.ones(1, 2)) end,
      "scatter_: index 3 is out of bounds for dimension 2 with size 2")
    assert.same({ { 0, 0 }, { 0, 0 } }, L(z))
    raises(function() z:scatter_(1, I { { 1, 1, 1 } }, T.ones(1, 3)) end, "exceeds the size of self")
    raises(function() z:scatter_(2, I { { 1, 1 } }, T.ones(1, 1)) end, "exceeds the size of src")
    raises(function() z:scatter_(2, I { { 1 } }, T.ones(1, 1, { dtype = T.float64 })) end,
      "expected src to have the dtype of self (float32), got float64")
    raises(function() z:scatter_add_(1, F { { 1.0 } }, T.ones(1, 1)) end,
      "expected an int64 or int32 index tensor, got float32")
  end)
end)

describe("index_fill_, index_copy_, index_add_", function()
  it("index_fill_ fills whole slices (number or 0-d tensor)", function()
    local t = T.zeros(2, 3)
    t:index_fill_(2, I { 1, -1 }, 5)
    assert.same({ { 5, 0, 5 }, { 5, 0, 5 } }, L(t))
    t:index_fill_(1, I { 2 }, T.tensor(1.5))
    assert.same({ { 5, 0, 5 }, { 1.5, 1.5, 1.5 } }, L(t))
    local u = t:index_fill(1, I { 1 }, 0)
    assert.same({ { 0, 0, 0 }, { 1.5, 1.5, 1.5 } }, L(u))
    assert.same({ { 5, 0, 5 }, { 1.5, 1.5, 1.5 } }, L(t))
  end)

  it("index_copy_ copies slices of source", function()
    local t = T.zeros(3, 2)
    t:index_copy_(1, I { 3, 1 }, F { { 1.0, 2.0 }, { 3.0, 4.0 } })
    assert.same({ { 3, 4 }, { 0, 0 }, { 1, 2 } }, L(t))
    raises(function() t:index_copy_(1, I { 1 }, T.ones(2, 2)) end,
      "source of shape [2, 2] does not match the expected shape [1, 2]")
  end)

  it("index_add_ sums duplicates and scales by alpha", function()
    local t = T.zeros(3)
    t:index_add_(1, I { 1, 1, 3 }, F { 1.0, 2.0, 3.0 }, { alpha = 2 })
    assert.same({ 6, 0, 6 }, L(t))
    t:index_add_(1, I { 2 }, F { 1.0 }, 0.5)
    assert.same({ 6, 0.5, 6 }, L(t))
    local ti = T.tensor { 1, 2 }
    raises(function() ti:index_add_(1, I { 1 }, T.tensor { 1 }, 0.5) end,
      "alpha must be an integer")
    raises(function() t:index_add_(1, I { 4 }, F { 1.0 }) end,
      "index_add_: index 4 is out of bounds for dimension 1 with size 3")
    assert.same({ 6, 0.5, 6 }, L(t))
  end)
end)

describe("masked ops", function()
  local function data() return T.tensor { { 0, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 11 } } end
  local function gt5(t) return t:gt(5) end

  it("masked_select copies the selected elements, in row-major order", function()
    local t = data()
    local s = t:masked_select(gt5(t))
    assert.same({ 6, 7, 8, 9, 10, 11 }, L(s))
    s:fill_(0)
    assert.same(L(data()), L(t))
  end)

  it("masked_select broadcasts the mask", function()
    local t = data()
    assert.same({ 0, 2, 4, 6, 8, 10 }, L(t:masked_select(B { true, false, true, false })))
    assert.same({ 4, 5, 6, 7 }, L(T.masked_select(t, B { { false }, { true }, { false } })))
  end)

  it("masked_fill_ modifies the source; masked_fill copies", function()
    local t = data()
    local m = gt5(t)
    local c = t:masked_fill(m, -1)
    assert.same({ { 0, 1, 2, 3 }, { 4, 5, -1, -1 }, { -1, -1, -1, -1 } }, L(c))
    assert.same(L(data()), L(t))
    assert.equal(t, t:masked_fill_(m, T.tensor(-2)))
    assert.same({ { 0, 1, 2, 3 }, { 4, 5, -2, -2 }, { -2, -2, -2, -2 } }, L(t))
  end)

  it("masked_scatter_ takes source elements in order", function()
    local t = T.zeros(2, 3)
    t:masked_scatter_(B { { true, false, true }, { false, true, false } },
      F { 1.0, 2.0, 3.0, 4.0 })
    assert.same({ { 1, 0, 2 }, { 0, 3, 0 } }, L(t))
    raises(function() t:masked_scatter_(B { true, true, true }, F { 1.0 }) end,
      "masked_scatter_: source has 1 elements but the mask has 6 true positions")
  end)

  it("rejects masks that are not bool or whose shape does not match", function()
    local t = data()
    raises(function() t:masked_fill_(B { true, false }, 1) end,
      "masked_fill_: mask of shape [2] does not match (cannot be broadcast to) the tensor's shape [3, 4]")
    raises(function() t:masked_select(B { true, false }) end, "cannot be broadcast")
    raises(function() t:masked_fill_(T.tensor { 1, 0, 1, 0 }, 1) end,
      "masked_fill_: expected a bool mask, got int64")
    raises(function() t:masked_fill_(B { true }, T.tensor { 1, 2 }) end,
      "only supports a 0-dimensional value tensor")
  end)
end)

describe("nonzero, argwhere, where", function()
  it("nonzero gives 1-based positions, one row each", function()
    local t = T.tensor { { 0, 1 }, { 2, 0 } }
    local nz = t:nonzero()
    assert.equal(T.int64, nz.dtype)
    assert.same({ { 1, 2 }, { 2, 1 } }, L(nz))
    assert.same({ { 1, 2 }, { 2, 1 } }, L(T.argwhere(t)))
    assert.same({ 0, 2 }, shape_of(T.zeros(3, 2):nonzero()))
  end)

  it("nonzero{as_tuple = true} and T.where(cond) give one tensor per dim", function()
    local t = T.tensor { { 0, 1 }, { 2, 0 } }
    local rows, cols = unpack(t:nonzero { as_tuple = true })
    assert.same({ 1, 2 }, L(rows))
    assert.same({ 2, 1 }, L(cols))
    local w = T.where(B { false, true, true })
    assert.equal(1, #w)
    assert.same({ 2, 3 }, L(w[1]))
  end)

  it("NaN counts as nonzero", function()
    assert.same({ { 2 } }, L(F { 0.0, 0 / 0 }:nonzero()))
  end)

  it("where broadcasts and promotes like PyTorch", function()
    local c = B { true, false, true }
    local a = T.tensor({ 1, 2, 3 }, { dtype = T.int32 })
    local r = T.where(c, a, 0.5)
    assert.equal(T.float32, r.dtype)
    assert.same({ 1, 0.5, 3 }, L(r))
    assert.equal(T.int32, T.where(c, a, 7).dtype)
    assert.equal(T.int64, T.where(c, B { true, true, true }, 7).dtype)
    assert.equal(T.float64, T.where(c, a, T.tensor(2.0, { dtype = T.float64 })).dtype)
    -- a 0-d tensor of the same category does not widen a dimensioned one
    local h = T.tensor({ 1, 2, 3 }, { dtype = T.float16 })
    assert.equal(T.float16, T.where(c, h, T.tensor(2.0, { dtype = T.float64 })).dtype)
    assert.equal(T.int32, T.where(c, a, T.tensor(2, { dtype = T.int64 })).dtype)
    assert.equal(T.int64, T.where(c, 1, 0).dtype)
    assert.equal(T.float32, T.where(c, 1, 0.5).dtype)
    assert.same({ 1, 0, 1 }, L(T.where(c, 1, 0)))
    local m = T.where(B { { true }, { false } }, T.tensor { 1, 2, 3 }, T.tensor { 0 })
    assert.same({ { 1, 2, 3 }, { 0, 0, 0 } }, L(m))
    assert.same({ 1, -1, 3 }, L(a:where(c, -1)))
    raises(function() T.where(T.tensor { 1, 0 }, 1, 0) end, "where: expected a bool mask")
    raises(function() T.where(B { true, false }, T.tensor { 1, 2, 3 }, 0) end,
      "cannot be broadcast")
  end)
end)

describe("writes through views", function()
  it("in-place ops write into the storage the view shares", function()
    local base = T.zeros(2, 4)
    local left = base:chunk(2, 2)[1] -- columns 1..2, a non-contiguous view
    left:index_fill_(2, I { 2 }, 1)
    left:masked_fill_(B { { true, false }, { false, false } }, 9)
    assert.same({ { 9, 1, 0, 0 }, { 0, 1, 0, 0 } }, L(base))
  end)
end)

-- -- Conformance fixtures -------------------------------------------------------

-- found next to this spec, whatever the working directory
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local cases = dofile(here .. "/../fixtures/select_cases.lua")

local function build(spec)
  local dt = T[spec.dtype]
  local n = 1
  for _, s in ipairs(spec.shape) do n = n * s end
  local t
  if n == 0 then
    t = T.zeros(spec.shape, { dtype = dt })
  else
    t = T.tensor(spec.data, { dtype = dt })
  end
  if spec.view == "half" then t = t:chunk(2, -1)[1] end
  return t
end

local function close(a, b, dtype)
  if type(b) == "boolean" or type(a) == "boolean" then return a == b end
  if b ~= b then return a ~= a end
  if dtype == "float32" then return math.abs(a - b) <= 1e-5 * math.max(1, math.abs(b)) end
  if dtype == "float64" then return math.abs(a - b) <= 1e-12 * math.max(1, math.abs(b)) end
  -- half types: accumulation order and one rounding step may differ
  if dtype == "float16" then return math.abs(a - b) <= 2e-3 * math.max(1, math.abs(b)) end
  if dtype == "bfloat16" then return math.abs(a - b) <= 1.6e-2 * math.max(1, math.abs(b)) end
  return a == b
end

local function check(got, exp, label)
  assert.is_true(T.is_tensor(got), label .. ": not a tensor")
  assert.equal(exp.dtype, got.dtype.name, label .. ": dtype")
  assert.same(exp.shape, shape_of(got), label .. ": shape")
  local g, e = flat(got:tolist()), flat(exp.data)
  assert.equal(#e, #g, label .. ": element count")
  for i = 1, #e do
    if not close(g[i], e[i], exp.dtype) then
      error(string.format("%s: element %d is %s, expected %s", label, i,
        tostring(g[i]), tostring(e[i])))
    end
  end
end

local function list_of(ins, n)
  local ts = {}
  for i = 1, n do ts[i] = ins["t" .. i] end
  return ts
end

local run = {
  index_select = function(x, a) return x.x:index_select(a.dim, x.index) end,
  gather = function(x, a) return x.x:gather(a.dim, x.index) end,
  take = function(x) return x.x:take(x.index) end,
  masked_select = function(x) return x.x:masked_select(x.mask) end,
  masked_fill = function(x, a) x.x:masked_fill_(x.mask, a.value); return x.x end,
  masked_scatter = function(x) x.x:masked_scatter_(x.mask, x.src); return x.x end,
  nonzero = function(x) return x.x:nonzero() end,
  where = function(x) return T.where(x.cond, x.a, x.b) end,
  where_mixed = function(x, a)
    local va, vb = x.a, x.b
    if va == nil then va = a.a end
    if vb == nil then vb = a.b end
    return T.where(x.cond, va, vb)
  end,
  scatter = function(x, a) return x.x:scatter_(a.dim, x.index, x.src, a.reduce) end,
  scatter_value = function(x, a) return x.x:scatter_(a.dim, x.index, a.value) end,
  scatter_add = function(x, a) return x.x:scatter_add_(a.dim, x.index, x.src) end,
  scatter_reduce = function(x, a)
    return x.x:scatter_reduce_(a.dim, x.index, x.src, a.reduce, { include_self = a.include_self })
  end,
  index_fill = function(x, a) return x.x:index_fill_(a.dim, x.index, a.value) end,
  index_copy = function(x, a) return x.x:index_copy_(a.dim, x.index, x.src) end,
  index_add = function(x, a) return x.x:index_add_(a.dim, x.index, x.src, { alpha = a.alpha }) end,
  put = function(x, a) return x.x:put_(x.index, x.src, { accumulate = a.accumulate }) end,
  cat = function(x, a) return T.cat(list_of(x, a.n), a.dim) end,
  stack = function(x, a) return T.stack(list_of(x, a.n), a.dim) end,
  hstack = function(x, a) return T.hstack(list_of(x, a.n)) end,
  vstack = function(x, a) return T.vstack(list_of(x, a.n)) end,
  dstack = function(x, a) return T.dstack(list_of(x, a.n)) end,
  split = function(x, a) return x.x:split(a.size, a.dim) end,
  chunk = function(x, a) return x.x:chunk(a.chunks, a.dim) end,
  tensor_split = function(x, a) return x.x:tensor_split(a.split, a.dim) end,
  unbind = function(x, a) return x.x:unbind(a.dim) end,
  ["repeat"] = function(x, a) return x.x:repeat_tensor(unpack(a.reps)) end,
  tile = function(x, a) return x.x:tile(a.reps) end,
  repeat_interleave = function(x, a) return x.x:repeat_interleave(a.repeats, a.dim) end,
  repeat_interleave_t = function(x, a) return x.x:repeat_interleave(x.repeats, a.dim) end,
  roll = function(x, a) return x.x:roll(a.shifts, a.dims) end,
  roll_flat = function(x, a) return x.x:roll(a.shift) end,
}

describe("conformance with PyTorch (tests/fixtures/select_cases.lua)", function()
  it("has fixtures for every op", function()
    local seen = {}
    for _, c in ipairs(cases) do seen[c.op] = true end
    for op in pairs(run) do assert.is_true(seen[op], "no fixture for " .. op) end
  end)

  for i, c in ipairs(cases) do
    it(string.format("case %d: %s", i, c.op), function()
      local ins = {}
      for k, v in pairs(c.inputs) do ins[k] = build(v) end
      local got = run[c.op](ins, c.args)
      if c.multi then
        assert.equal(#c.expected, #got, "number of pieces")
        for j, e in ipairs(c.expected) do check(got[j], e, "piece " .. j) end
      else
        check(got, c.expected, c.op)
      end
    end)
  end
end)
