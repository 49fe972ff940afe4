-- t:apply_, t:map_, t:map2_ (lua/ember/apply.lua): a Lua function over every
-- element, in place, as PyTorch's Tensor.apply_/map_/map2_ (torch 1.13's
-- results for the same calls, noted by each case), and the refusals.
local T = require "ember"
local S = require "specutil"

local function f32(t) return T.tensor(t, { dtype = T.float32 }) end

describe("t:apply_", function()
  it("replaces each element by the function's result and returns the tensor", function()
    local x = f32 { 1, 2, 3 }
    local r = x:apply_(function(v) return v * 2 end)
    assert.is_true(rawequal(r, x))
    assert.same({ 2, 4, 6 }, x:tolist())
  end)

  it("visits elements in row-major order, also of a non-contiguous view", function()
    local m = T.zeros(2, 3)
    local seen, k = {}, 0
    m:t():apply_(function(v) k = k + 1; seen[k] = v; return k end)
    -- the transposed view's row-major order is m's column-major order
    assert.same({ { 1, 3, 5 }, { 2, 4, 6 } }, m:tolist())
    assert.equal(6, #seen)
  end)

  it("converts results as PyTorch does", function()
    -- torch: tensor([1, 2, 3]).apply_(lambda v: v / 2) -> [0, 1, 1]
    assert.same({ 0, 1, 1, -1 }, T.tensor({ 1, 2, 3, -3 }):apply_(function(v) return v / 2 end):tolist())
    assert.same({ false, true }, T.tensor({ true, false }):apply_(function(v) return not v end):tolist())
    assert.same({ 1, 0 }, T.tensor({ 0, 1 }):apply_(function(v) return v == 0 end):tolist())
    local big = f32 { 1 }:apply_(function() return 1e300 end)
    assert.equal(math.huge, big[1]:item())
    -- a 0-d tensor and an empty one
    assert.equal(6, T.tensor(5.5):apply_(function(v) return v + 0.5 end):item())
    assert.equal(0, T.empty(0):apply_(function() error("not called") end):numel())
  end)

  it("keeps int64 values beyond 2^53 exact and checks int64's range", function()
    local a = T.tensor({ 2 ^ 53 }) + 1
    assert.is_true(T.equal(a:clone():apply_(function(v) return v + 1 end), T.tensor({ 2 ^ 53 }) + 2))
    assert.is_true(T.equal(a:clone():apply_(function(v) return v end), a))
    assert.equal(-2 ^ 63, tonumber(T.tensor({ 3 }):apply_(function() return -2 ^ 63 end)[1]:item()))
    S.err(function() T.tensor({ 3 }):apply_(function() return 2 ^ 63 end) end,
      "apply_: value 9.2233720368547758e+18 (element 1) cannot be converted to type int64 without overflow")
    S.err(function() T.tensor({ 3 }, { dtype = T.int32 }):apply_(function() return 2 ^ 31 end) end,
      "apply_: value 2147483648 (element 1) cannot be converted to type int32 without overflow")
  end)

  it("on the meta device does nothing and calls nothing", function()
    local m = T.empty(3, { device = "meta" })
    assert.is_true(rawequal(m, m:apply_(function() error("not called") end)))
  end)

  it("lets the function's own errors through", function()
    local ok, e = pcall(function() f32 { 1 }:apply_(function() error("boom") end) end)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("boom", 1, true))
  end)

  it("refuses what it cannot do, by name", function()
    S.err(function() f32 { 1, 2 }:requires_grad_():apply_(function(v) return v end) end,
      "apply_: can't call apply_() on a tensor that requires grad; use t:detach():apply_() instead")
    S.err(function() f32 { 1 }:apply_(function() return "a" end) end,
      "apply_: the function must return a number, got string (element 1)")
    S.err(function() T.tensor({ true }):apply_(function() return {} end) end,
      "apply_: the function must return a number or a boolean, got table (element 1)")
    S.err(function() T.tensor({ 1, 2 }, { dtype = T.uint8 }):apply_(function(v) return v + 300 end) end,
      "apply_: value 301 (element 1) cannot be converted to type uint8 without overflow")
    S.err(function() T.tensor({ 1 }):apply_(function() return 0 / 0 end) end,
      "apply_: the function's result nan for element 1 cannot be converted to int64")
    S.err(function() f32 { 1 }:apply_(7) end, "apply_: expected a function, got number")
    S.err(function() T.ones(1):expand(3):apply_(function(v) return v + 1 end) end,
      "apply_: unsupported operation: more than one element of the written-to tensor refers to a single memory location")
    S.err(function() T.ones(2, { dtype = T.complex64 }):apply_(function(v) return v end) end,
      "apply_: complex tensors are not supported")
    S.err(function() f32 { 1 }:apply_(function(v) return v end, {}) end, "apply_: takes no options")
  end)
end)

describe("t:map_ and t:map2_", function()
  it("call the function with the elements of the other tensors, broadcast to the tensor's shape", function()
    -- torch: ones(2, 3).map_(tensor([10., 20., 30.]), lambda a, b: a + b) -> [[11, 21, 31], [11, 21, 31]]
    assert.same({ { 11, 21, 31 }, { 11, 21, 31 } },
      T.ones(2, 3):map_(f32 { 10, 20, 30 }, function(a, b) return a + b end):tolist())
    assert.same({ 12, 23, 34 },
      f32 { 1, 2, 3 }:map2_(f32 { 10, 20, 30 }, f32 { 1, 1, 1 }, function(a, b, c) return a + b + c end):tolist())
  end)

  it("refuse other dtypes and shapes that do not broadcast to the tensor's", function()
    S.err(function() f32 { 1, 2, 3 }:map_(T.tensor({ 1, 2, 3 }), function(a, b) return a end) end,
      "map_: expected ember.float32 for argument #2 (got ember.int64)")
    S.err(function() T.ones(3):map_(T.ones(2, 3), function(a, b) return a end) end,
      "map_: argument #2 of shape ember.Size([2, 3]) is not broadcastable to the tensor's shape ember.Size([3])")
    S.err(function() T.ones(3):map2_(T.ones(3), 5, function() return 1 end) end,
      "map2_: expected a tensor for argument #3, got number")
  end)
end)
