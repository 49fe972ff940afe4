-- Differences from PyTorch 1.13 found by the second round of differential
-- tests (ember against torch on the same inputs: nn layers and losses,
-- printing, promotion, creation, distributions, autograd), each with
-- torch's value or error.
local T = require "ember"
local F = T.nn.functional
local U = require "specutil"
local err = U.err

local function near(got, want, tol)
  assert.are.same(want.shape:totable(), got.shape:totable())
  local d = (got:double() - want:double()):abs()
  local nan = want:isnan()
  assert.is_true(T.equal(nan, got:isnan()), "NaN positions")
  d = T.where(nan, T.zeros({}, { dtype = T.float64 }), d)
  assert(d:numel() == 0 or d:max():item() <= (tol or 1e-9), "max difference " .. tostring(d:numel() > 0 and d:max():item()))
end
local function strides(t) return t:stride() end

describe("differences from torch 1.13, second round, fixed", function()
  it("*_like keep the source's layout (preserve_format) unless memory_format = 'contiguous'", function()
    local x = T.arange(6, { dtype = T.float32 }):view(2, 3)
    -- dense and non-overlapping: the same strides (torch: (1, 3))
    for _, f in ipairs { T.empty_like, T.zeros_like, T.ones_like, T.rand_like, T.randn_like } do
      assert.are.same({ 1, 3 }, strides(f(x:t())))
    end
    assert.are.same({ 1, 3 }, strides(T.full_like(x:t(), 2)))
    assert.are.same({ 1, 3 }, strides(T.randint_like(x:t(), 5)))
    -- not dense: dense strides in the source's order of dims (torch: (2, 1) and (1, 2))
    assert.are.same({ 2, 1 }, strides(T.empty_like(x[{ {}, { 1, 3, 2 } }])))
    assert.are.same({ 1, 2 }, strides(x[{ {}, { 1, 3, 2 } }]:t():clone()))
    assert.are.same({ 1, 3, 3 }, strides(T.empty_like(T.empty(4, 1, 3):permute(3, 1, 2))))
    assert.are.same({ 2, 1 }, strides(T.zeros_like(x:t(), { memory_format = "contiguous" })))
    assert.are.same({ { 0, 0 }, { 0, 0 }, { 0, 0 } }, T.zeros_like(x:t()):tolist())
    assert.are.same({ { 7, 7 }, { 7, 7 }, { 7, 7 } }, T.full_like(x:t(), 7, { dtype = T.int32 }):tolist())
    err(function() T.zeros_like(x, { memory_format = "channels_last" }) end,
      "zeros_like: memory_format must be 'preserve' or 'contiguous', got channels_last")
  end)

  it("t[true] and t[false] are 0-d masks (a new dim of size 1 or 0)", function()
    local x = T.arange(6, { dtype = T.float32 }):view(2, 3)
    assert.are.same({ 0, 2, 3 }, x[false].shape:totable())
    assert.are.same({ 1, 2, 3 }, x[true].shape:totable())
    assert.are.same({ 1, 3 }, x[{ true, 1 }].shape:totable())
    assert.are.same({ 1, 3 }, x[{ 1, true }].shape:totable())
    assert.are.same({ 1, 1, 2, 3 }, x[{ T.newaxis, true }].shape:totable())
    assert.are.same({ 2, 3, 1 }, x[{ "...", true }].shape:totable())
    local y = x:clone()
    y[true] = 5
    assert.are.same({ { 5, 5, 5 }, { 5, 5, 5 } }, y:tolist())
    y[false] = 7
    assert.are.same({ { 5, 5, 5 }, { 5, 5, 5 } }, y:tolist())
  end)

  it("uint8 index tensors are masks (torch's deprecated form), reads, writes and gradients", function()
    local x = T.arange(6, { dtype = T.float32 }):view(2, 3)
    local m = T.tensor({ { 1, 0, 2 }, { 0, 1, 1 } }, { dtype = T.uint8 })
    assert.are.same({ 0, 2, 4, 5 }, x[m]:tolist())
    local w = x:clone()
    w[m] = -1
    assert.are.same({ { -1, 1, -1 }, { 3, -1, -1 } }, w:tolist())
    assert.are.same({ 1, 2 }, x[{ 1, T.tensor({ 0, 3, 1 }, { dtype = T.uint8 }) }]:tolist())
    assert.are.same({ { 0, 1, 2 } }, x[T.tensor({ 1, 0 }, { dtype = T.uint8 })]:tolist())
    local g = T.arange(6, { dtype = T.float64, requires_grad = true })
    g[T.tensor({ 1, 0, 1, 0, 0, 7 }, { dtype = T.uint8 })]:sum():backward()
    assert.are.same({ 1, 0, 1, 0, 0, 1 }, g.grad:tolist())
    err(function() return x[T.tensor({ 1, 2 }, { dtype = T.int8 })] end,
      "index: tensors used as indices must be int64, int32, bool or uint8 tensors, got ember.int8")
  end)

  it("repeat_interleave takes output_size and checks it", function()
    assert.are.same({ 1, 1, 2, 2, 2 }, T.repeat_interleave(T.tensor { 1, 2 }, T.tensor { 2, 3 }, { output_size = 5 }):tolist())
    assert.are.same({ 1, 1, 2, 2, 2 }, T.repeat_interleave(T.tensor { 2, 3 }, { output_size = 5 }):tolist())
    assert.are.same({ { 1, 2 }, { 1, 2 } }, T.tensor({ { 1, 2 } }):repeat_interleave(2, 1, { output_size = 2 }):tolist())
    err(function() T.repeat_interleave(T.tensor { 1, 2 }, T.tensor { 2, 3 }, { output_size = 4 }) end,
      "repeat_interleave: output_size 4 does not match the repeated length 5")
    err(function() T.repeat_interleave(T.tensor { 1, 2 }, 2, { outputsize = 4 }) end,
      "repeat_interleave: unknown option 'outputsize'")
  end)

  it("hardtanh and relu6 take integer input (limits truncated), not bool", function()
    assert.are.same({ -1, 0, 1 }, F.hardtanh(T.tensor { -3, 0, 3 }):tolist())
    assert.are.same({ 0, 0, 2 }, F.hardtanh(T.tensor { -3, 0, 3 }, -0.5, 2.5):tolist())
    assert.are.same({ 0, 0, 6 }, F.relu6(T.tensor { -3, 0, 9 }):tolist())
    assert.are.same({ 0, 0, 6 }, T.nn.ReLU6()(T.tensor { -3, 0, 9 }):tolist())
    assert.are.equal(T.int64, F.hardtanh(T.tensor { -3, 0, 3 }).dtype)
    err(function() F.hardtanh(T.tensor({ 1, 2 }, { dtype = T.uint8 })) end,
      "hardtanh: cannot do hardtanh on an unsigned type with negative limits")
    err(function() F.hardtanh(T.tensor { true, false }) end, "hardtanh: expected a floating point input, got ember.bool")
  end)

  it("detach_ refuses a view (torch: Can't detach views in-place)", function()
    local a = T.randn(3, { requires_grad = true })
    local v = (a * 1):view(3)
    err(function() v:detach_() end, "detach_: can't detach views in-place; use detach() instead")
    local b = a * 1
    b:detach_()
    assert.is_false(b.requires_grad)
  end)
end)
