-- unique along a dim (against torch.unique(dim=) fixtures from
-- tests/fixtures/gen_unique_dim.py) and out= for reductions.
local T = require "ember"
local cases = dofile("tests/fixtures/unique_dim_cases.lua")

-- equal as stored values: NaN matches NaN, and zeros match in sign
local function same(a, b)
  if a ~= a then return b ~= b end
  if a == 0 and b == 0 then return 1 / a == 1 / b end
  return a == b
end

local function check_list(what, got, want)
  local g = got:flatten():tolist()
  assert(#g == #want, ("%s: %d elements, expected %d"):format(what, #g, #want))
  for i = 1, #want do
    assert(same(g[i], want[i]), ("%s[%d] = %s, expected %s"):format(what, i, tostring(g[i]),
      tostring(want[i])))
  end
end

describe("unique along a dim", function()
  it("matches torch.unique(dim=) on " .. #cases .. " cases (values, inverse, counts)", function()
    for _, c in ipairs(cases) do
      local x = T.tensor(c.x, { dtype = T[c.dtype] }):view(c.shape)
      local v, inv, cnt = T.unique(x, { dim = c.dim, return_inverse = true, return_counts = true })
      local name = ("unique(%s %s, dim=%d)"):format(c.dtype, table.concat(c.shape, "x"), c.dim)
      assert.are.same(c.vshape, v:size():totable(), name)
      assert.are.equal(x.dtype, v.dtype)
      check_list(name .. " values", v, c.values)
      check_list(name .. " inverse", inv, c.inverse)
      check_list(name .. " counts", cnt, c.counts)
    end
  end)

  it("rebuilds the input from values and inverse", function()
    local x = T.tensor { { 3, 1 }, { 0, 2 }, { 3, 1 }, { 0, 2 }, { 5, 5 } }
    local v, inv = x:unique { dim = 1, return_inverse = true }
    assert.is_true(T.equal(v:index_select(1, inv), x))
    local xt = x:t()
    local v2, inv2 = xt:unique { dim = 2, return_inverse = true }
    assert.is_true(T.equal(v2:index_select(2, inv2), xt))
  end)

  it("returns values without history and leaves the input alone", function()
    local x = T.tensor({ { 1, 2 }, { 1, 2 } }, { dtype = T.float32, requires_grad = true })
    local v = T.unique(x, { dim = 1 })
    assert.is_false(v.requires_grad)
    assert.is_nil(v.grad_fn)
    assert.are.same({ { 1, 2 }, { 1, 2 } }, x:tolist())
  end)

  it("keeps slices holding NaN apart", function()
    local v = T.unique(T.tensor { { 0 / 0, 1 }, { 0 / 0, 1 } }, { dim = 1 })
    assert.are.same({ 2, 2 }, v:size():totable())
  end)

  it("refuses bad dims and zero-size dims it does not select", function()
    local ok, err = pcall(T.unique, T.ones(2, 3), { dim = 3 })
    assert.is_false(ok)
    assert.truthy(err:find("unique: dimension 3 out of range", 1, true), err)
    ok, err = pcall(T.unique, T.empty(3, 0), { dim = 1 })
    assert.is_false(ok)
    assert.truthy(err:find("unique: the tensor of size [3, 0] has a dim of size 0", 1, true), err)
    ok, err = pcall(T.unique, T.tensor(5), { dim = 1 })
    assert.is_false(ok)
    assert.truthy(err:find("unique: a 0-d tensor", 1, true), err)
    local v, inv, cnt = T.unique(T.empty(0, 3), { dim = 1, return_inverse = true, return_counts = true })
    assert.are.same({ 0, 3 }, v:size():totable())
    assert.are.equal(0, inv:numel())
    assert.are.equal(0, cnt:numel())
  end)
end)

describe("out= for reductions", function()
  local x = T.tensor { { 1, 2 }, { 3, 4 }, { 5, 6 } }

  it("writes into out and returns the same object", function()
    local o = T.empty(2)
    local r = T.sum(x, 1, { out = o })
    assert.is_true(rawequal(r, o))
    assert.are.same({ 9, 12 }, o:tolist())
    local m = T.empty(3)
    assert.is_true(rawequal(x:float():mean({ dim = 2, out = m }), m))
    assert.are.same({ 1.5, 3.5, 5.5 }, m:tolist())
  end)

  it("computes in out's dtype when the op takes a dtype (as torch.sum(..., out=))", function()
    local o = T.empty(2, { dtype = T.float64 })
    T.sum(T.tensor { { 1e8, 1 }, { 1, 1 } }:float(), 1, { out = o })
    -- float32 accumulation would round 1e8 + 1 to 1e8
    assert.are.equal(100000001, o[1]:item())
    assert.are.equal(T.float64, o.dtype)
  end)

  it("writes into a view of a larger tensor", function()
    local big = T.zeros(2, 3)
    T.amax(x:float(), { dim = 2, out = big[1] })
    assert.are.same({ { 2, 4, 6 }, { 0, 0, 0 } }, big:tolist())
  end)

  it("resizes an empty out and refuses other shapes", function()
    local o = T.empty(0, { dtype = T.int64 })
    T.prod(x, { dim = 1, keepdim = true, out = o })
    assert.are.same({ { 15, 48 } }, o:tolist())
    local ok, err = pcall(T.sum, x, { dim = 1, out = T.empty(5, { dtype = T.int64 }) })
    assert.is_false(ok)
    assert.truthy(err:find("sum: output with shape [5] doesn't match the result shape [2]", 1, true), err)
  end)

  it("requires out's dtype for ops without a dtype option", function()
    local ok, err = pcall(T.amax, x, { dim = 1, out = T.empty(2) })
    assert.is_false(ok)
    assert.truthy(err:find("amax: expected out to have dtype ember.int64, got ember.float32", 1, true), err)
    local b = T.empty(2, { dtype = T.bool })
    T.any(x:gt(5), { dim = 1, out = b })
    assert.are.same({ false, true }, b:tolist())
  end)

  it("is not differentiable, as in PyTorch", function()
    local w = T.ones(3, { requires_grad = true })
    local ok, err = pcall(T.sum, w, { out = T.empty(0) })
    assert.is_false(ok)
    assert.truthy(err:find("sum: functions with out= arguments don't support automatic differentiation", 1, true), err)
    local o = T.no_grad(function() return T.sum(w, { out = T.empty(0) }) end)
    assert.are.equal(3, o:item())
  end)

  it("is refused where it is not supported, instead of being ignored", function()
    local ok, err = pcall(T.max, x, { dim = 1, out = T.empty(2) })
    assert.is_false(ok)
    assert.truthy(err:find("max: unknown option 'out'", 1, true), err)
    ok, err = pcall(T.sum, x, { out = 3 })
    assert.is_false(ok)
    assert.truthy(err:find("sum: expected a tensor for option 'out', got number", 1, true), err)
  end)
end)
