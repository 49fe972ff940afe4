-- The reduce and sort families on the meta device: every op on meta tensors
-- gives the shapes, dtypes and strides the same op gives on CPU tensors (the
-- reference), on meta, without values; the ops whose result's size depends
-- on the values (unique) and those that answer with a value (equal,
-- allclose) refuse with the meta errors.
local T = require "ember"

local NO_DATA = "a meta tensor has no data"
local DATA_DEPENDENT = "not supported on the meta device: the result's shape depends on the values"

-- The inputs, as (device) -> tensor: CPU ones hold values, meta ones are
-- T.empty; each layout is made by the same view ops on both.
local function input(sizes, dtype, view)
  return function(device)
    local t
    if device == "meta" then
      t = T.empty(sizes, {device = "meta", dtype = dtype})
    else
      t = (T.randn(sizes) * 4):to(dtype)
    end
    return view and view(t) or t
  end
end

local inputs = {
  {"3x4x5 float32", input({3, 4, 5}, T.float32)},
  {"transposed 5x4x3 float32", input({3, 4, 5}, T.float32, function(t) return t:transpose(1, 3) end)},
  {"sliced 3x2x5 float64", input({3, 4, 5}, T.float64, function(t) return t:narrow(2, 2, 2) end)},
  {"3x4x5 int32", input({3, 4, 5}, T.int32)},
  {"4x5 float16", input({4, 5}, T.float16)},
}

local same_meta = require("metacheck").same_meta

-- op(x) -> one or more tensors; floats marks the ops that take floating
-- inputs only (the integer input is then skipped)
local ops = {
  {"sum()", function(x) return x:sum() end},
  {"sum(2)", function(x) return x:sum(2) end},
  {"sum({1, -1}, keepdim)", function(x) return x:sum({1, -1}, {keepdim = true}) end},
  {"sum(1, dtype = float64)", function(x) return x:sum(1, {dtype = T.float64}) end},
  {"prod(1)", function(x) return x:prod(1) end},
  {"mean(2)", function(x) return x:mean(2) end, floats = true},
  {"mean()", function(x) return x:mean() end, floats = true},
  {"amax(2)", function(x) return x:amax(2) end},
  {"amin({1, 2}, keepdim)", function(x) return x:amin({1, 2}, {keepdim = true}) end},
  {"all(2)", function(x) return x:all(2) end},
  {"any()", function(x) return x:any() end},
  {"nansum(1)", function(x) return x:nansum(1) end},
  {"nanmean(2)", function(x) return x:nanmean(2) end, floats = true},
  {"count_nonzero(2)", function(x) return x:count_nonzero(2) end},
  {"var(2)", function(x) return x:var(2) end, floats = true},
  {"std(1, correction = 0)", function(x) return x:std(1, {correction = 0}) end, floats = true},
  {"var_mean(2)", function(x) return x:var_mean(2) end, floats = true},
  {"std_mean(1, keepdim)", function(x) return x:std_mean(1, {keepdim = true}) end, floats = true},
  {"norm()", function(x) return x:norm() end, floats = true},
  {"norm(1, 2)", function(x) return x:norm(1, 2) end, floats = true},
  {"norm(inf, 1)", function(x) return x:norm(math.huge, 1) end, floats = true},
  {"logsumexp(2)", function(x) return x:logsumexp(2) end},
  {"max()", function(x) return x:max() end},
  {"max(2)", function(x) return x:max(2) end},
  {"min(1, keepdim)", function(x) return x:min(1, {keepdim = true}) end},
  {"argmax()", function(x) return x:argmax() end},
  {"argmax(2)", function(x) return x:argmax(2) end},
  {"argmin(1, keepdim)", function(x) return x:argmin(1, {keepdim = true}) end},
  {"softmax(2)", function(x) return x:softmax(2) end, floats = true},
  {"log_softmax(1)", function(x) return x:log_softmax(1) end, floats = true},
  {"softmax(-1, dtype = float64)", function(x) return x:softmax(-1, {dtype = T.float64}) end},
  {"cumsum(2)", function(x) return x:cumsum(2) end},
  {"cumprod(1)", function(x) return x:cumprod(1) end},
  {"cummax(2)", function(x) return x:cummax(2) end},
  {"cummin(1)", function(x) return x:cummin(1) end},
  {"sort(2)", function(x) return x:sort(2) end},
  {"sort(1, descending)", function(x) return x:sort(1, true) end},
  {"argsort(-1)", function(x) return x:argsort(-1) end},
  {"topk(2, 2)", function(x) return x:topk(2, 2) end},
  {"topk(1, 1, smallest)", function(x) return x:topk(1, 1, false) end},
  {"kthvalue(2, 2)", function(x) return x:kthvalue(2, 2) end},
  {"median()", function(x) return x:median() end},
  {"median(2)", function(x) return x:median(2) end},
  {"nanmedian(1, keepdim)", function(x) return x:nanmedian(1, true) end, floats = true},
  {"isclose(x, x)", function(x) return T.isclose(x, x) end},
}

describe("the reduce and sort families on meta tensors", function()
  for _, inp in ipairs(inputs) do
    local name, make = inp[1], inp[2]
    for _, o in ipairs(ops) do
      local is_int = make("cpu").dtype == T.int32
      if not (o.floats and is_int) then
        it(("%s of a %s tensor has the CPU's metadata"):format(o[1], name), function()
          local ref = table.pack(o[2](make("cpu")))
          local got = table.pack(o[2](make("meta")))
          assert.are.equal(ref.n, got.n)
          for k = 1, ref.n do same_meta(ref[k], got[k], o[1] .. " result " .. k) end
        end)
      end
    end
  end

  it("keeps 0-d and empty inputs' metadata", function()
    local cases = {
      {function(d) return d == "meta" and T.empty({}, {device = "meta"}) or T.tensor(2.5) end,
       function(x) return x:sum(), x:softmax(1), x:cumsum(1), x:sort(1) end},
      {function(d) return d == "meta" and T.empty(0, 3, {device = "meta"}) or T.zeros(0, 3) end,
       function(x) return x:sum(1), x:mean(2), x:var(1), x:max(2) end},
      {function(d) return d == "meta" and T.empty(0, {device = "meta"}) or T.zeros(0) end,
       function(x) return x:median() end},
    }
    for _, c in ipairs(cases) do
      local ref = table.pack(c[2](c[1]("cpu")))
      local got = table.pack(c[2](c[1]("meta")))
      for k = 1, ref.n do same_meta(ref[k], got[k], "result " .. k) end
    end
  end)

  it("writes out= on meta", function()
    local out = T.empty(4, {device = "meta", dtype = T.float64})
    local r = T.empty(3, 4, {device = "meta"}):sum(1, {out = out})
    assert.are.equal(out, r)
    same_meta(T.randn(3, 4):sum(1, {dtype = T.float64}), r, "out")
  end)

  it("refuses unique, whose result's size depends on the values", function()
    local m = T.empty(3, 4, {device = "meta"})
    assert.has_error(function() m:unique() end, "unique: " .. DATA_DEPENDENT)
    assert.has_error(function() m:unique({return_counts = true}) end,
                     "unique: " .. DATA_DEPENDENT)
    assert.has_error(function() m:unique({dim = 1}) end, "unique: " .. DATA_DEPENDENT)
  end)

  it("refuses equal and allclose, which answer with a value", function()
    local a, b = T.empty(3, 4, {device = "meta"}), T.empty(3, 4, {device = "meta"})
    assert.has_error(function() T.equal(a, b) end, "equal: " .. NO_DATA)
    assert.has_error(function() T.allclose(a, b) end, "allclose: " .. NO_DATA)
    -- without values to read the answer is known: shapes differ, or nothing to compare
    assert.is_false(T.equal(a, T.empty(4, 3, {device = "meta"})))
    assert.is_true(T.equal(T.empty(0, {device = "meta"}), T.empty(0, {device = "meta"})))
  end)

  it("names both devices when meta and CPU tensors meet", function()
    local m, c = T.empty(3, {device = "meta"}), T.zeros(3)
    local msg = "expected all tensors to be on the same device, but found at least two devices, "
    assert.has_error(function() T.equal(m, c) end, "equal: " .. msg .. "meta and cpu")
    assert.has_error(function() T.isclose(c, m) end, "isclose: " .. msg .. "cpu and meta")
    assert.has_error(function() T.allclose(m, c) end, "allclose: " .. msg .. "meta and cpu")
  end)
end)
