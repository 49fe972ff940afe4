-- Differences from PyTorch 1.13 found by differential tests (ember against
-- torch on the same inputs, 2026-12-05), each with torch's value or error:
-- the per-sample class losses with -inf logits, cumprod's gradient at zeros,
-- unflatten's message, unique_consecutive of empty input, mode's NaN,
-- integer creation overflow, integer linspace/logspace endpoints, kl_div of a
-- negative target, batch_norm in evaluation without running statistics,
-- probability targets with ignore_index, softmax's dtype, softmin.
local T = require "ember"
local F = T.nn.functional

local function near(got, want, tol)
  assert.are.same(want.shape:totable(), got.shape:totable())
  local d = (got:double() - want:double()):abs()
  local nan = want:isnan()
  assert.is_true(T.equal(nan, got:isnan()), "NaN positions")
  d = T.where(nan, T.zeros({}, { dtype = T.float64 }), d)
  assert(d:numel() == 0 or d:max():item() <= (tol or 1e-6), "max difference " .. tostring(d:numel() > 0 and d:max():item()))
end
local function err(f, msg)
  local ok, e = pcall(f)
  assert.is_false(ok, msg)
  assert.matches(msg, tostring(e), 1, true)
end

describe("differences from torch 1.13, fixed", function()
  it("cross_entropy and nll_loss per sample with a -inf logit of another class", function()
    local x = T.tensor({ { -1 / 0, 0, 0 }, { 1, 2, 3 } }, { dtype = T.float32 })
    local t = T.tensor { 3, 1 }
    near(F.cross_entropy(x, t, { reduction = "none" }), T.tensor { 0.6931472, 2.4076059 })
    near(F.nll_loss(T.tensor { { -1 / 0, -0.5, -1 }, { -1, -2, -3 } }, t, { reduction = "none" }), T.tensor { 1, 1 }:float())
    -- the gradient of the per-sample loss is finite too (torch: softmax - onehot, 0 at -inf)
    local xg = x:clone():requires_grad_()
    F.cross_entropy(xg, t, { reduction = "none" }):sum():backward()
    near(xg.grad, T.tensor { { 0, 0.5, -0.5 }, { -0.9099694, 0.2447285, 0.6652410 } }, 1e-6)
  end)

  it("cumprod's gradient at zeros (torch's: 1 + 3 + 6 = 10 for the first zero)", function()
    local x = T.tensor({ 1, 0, 3, 2 }, { dtype = T.float32 }):requires_grad_()
    x:cumprod(1):sum():backward()
    near(x.grad, T.tensor { 1, 10, 0, 0 }:float())
    local y = T.tensor({ { 1, 0, 3, 0 }, { 2, 5, 0.5, 4 } }, { dtype = T.float64 }):requires_grad_()
    local w = T.tensor({ { 1, 2, 3, 4 }, { -1, 0.5, 2, 1 } }, { dtype = T.float64 })
    local s = (y:cumprod(2) * w):sum()
    s:backward()
    near(y.grad, T.tensor({ { 1, 11, 0, 0 }, { 16.5, 7, 60, 5 } }, { dtype = T.float64 }), 1e-12)
    T.manual_seed(5)
    local z = T.randn(3, 4, { dtype = T.float64 })
    z[{ 2, 2 }] = 0; z[{ 3, 1 }] = 0; z[{ 3, 3 }] = 0
    assert.is_true(T.autograd.gradcheck(function(a) return a:cumprod(2) end, { z:requires_grad_() }))
    assert.is_true(T.autograd.gradcheck(function(a) return a:cumprod(1) end, { z }))
  end)

  it("unflatten's message does not repeat the previous error", function()
    pcall(function() return T.zeros(3):narrow(1, 9, 1) end)
    for _ = 1, 2 do
      local ok, e = pcall(function() return T.zeros(2, 2):unflatten(2, { 3, -1 }) end)
      assert.is_false(ok)
      assert.are.equal("unflatten: sizes [3, -1] do not multiply to the size 2 of dimension 2 " ..
        "(unflatten: shape [3, -1] is invalid for input of size 2)", tostring(e):gsub("^[^:]*:%d+: ", ""))
    end
  end)

  it("unique_consecutive of empty input, with counts and along a dim", function()
    local v, c = T.unique_consecutive(T.zeros(0), { return_counts = true })
    assert.are.equal(0, v:numel())
    assert.are.equal(T.int64, c.dtype)
    assert.are.equal(0, c:numel())
    assert.same({ 2, 0 }, T.unique_consecutive(T.zeros(2, 0), { dim = 2 }).shape:totable())
    err(function() return T.unique_consecutive(T.tensor(1.5), { dim = 1 }) end,
      "unique_consecutive: Dimension specified as 1 but tensor has no dimensions")
  end)

  it("mode counts NaN as a value", function()
    local v = T.mode(T.tensor { 0 / 0, 1, 0 / 0, 1, 0 / 0 })
    assert.is_true(v:isnan():item())
    v = T.mode(T.tensor({ 0 / 0, 0 / 0, 5 }, { dtype = T.float64 }))
    assert.is_true(v:isnan():item())
  end)

  it("integer creation refuses values out of range", function()
    err(function() return T.tensor({ 2 ^ 40, 3e9 }, { dtype = T.int32 }) end, "tensor: value cannot be converted to type int32 without overflow")
    err(function() return T.tensor({ 300, -1 }, { dtype = T.uint8 }) end, "tensor: value cannot be converted to type uint8 without overflow")
    err(function() return T.full({ 2 }, 2 ^ 40, { dtype = T.int32 }) end, "full: value cannot be converted to type int32 without overflow")
    err(function() return T.full_like(T.ones(2), 0 / 0, { dtype = T.int64 }) end, "full_like: value cannot be converted to type int64 without overflow")
    assert.same({ 255, -128 }, T.tensor({ 255, -128 }, { dtype = T.int16 }):tolist())
  end)

  it("integer linspace and logspace take integer endpoints (torch's truncation)", function()
    assert.same({ 0, 0, 0, 1, 1, 1, 2 }, T.linspace(0.5, 2.25, 7, { dtype = T.int64 }):tolist())
    assert.same({ 1, 2, 4, 10, 21, 46, 100 }, T.logspace(0.5, 2.25, 7, { dtype = T.int64 }):tolist())
    assert.same({ -2, 0, 1, 3 }, T.linspace(-2.5, 3.7, 4, { dtype = T.int64 }):tolist())
  end)

  it("kl_div of a negative target is NaN, of a zero target 0", function()
    near(F.kl_div(T.tensor { -1, -2 }:float(), T.tensor { -0.1, 0.5 }, { reduction = "none" }), T.tensor { 0 / 0, 0.6534264 })
    near(F.kl_div(T.tensor { -1, -2 }:float(), T.tensor { 0, 0.5 }, { reduction = "none" }), T.tensor { 0, 0.6534264 })
  end)

  it("batch_norm in evaluation needs running statistics; probability targets take no ignore_index", function()
    err(function() return F.batch_norm(T.ones(4, 3), nil, nil, nil, nil, false) end,
      "batch_norm: running_mean must be defined in evaluation mode")
    local bn = T.nn.BatchNorm1d(3, { track_running_stats = false })
    bn:eval()
    assert.same({ 4, 3 }, bn(T.randn(4, 3)).shape:totable())
    err(function() return F.cross_entropy(T.randn(2, 3), T.softmax(T.randn(2, 3), 2), { ignore_index = 2 }) end,
      "cross_entropy: ignore_index is not supported for floating point target")
  end)

  it("PyTorch's positional forms and kernel_size in the options; the nuclear norm; searchsorted's scalar", function()
    local w = T.arange(1, 7):reshape(3, 2):float():requires_grad_()
    F.embedding(T.tensor { 1, 2, 1 }, w, 1):sum():backward()
    assert.same({ { 0, 0 }, { 1, 1 }, { 0, 0 } }, w.grad:tolist()) -- row 1 is padding: no gradient
    assert.same({ 1, 1, 4, 4 }, F.interpolate(T.ones(1, 1, 2, 2), 4).shape:totable())
    assert.same({ 1, 1, 3, 5 }, F.interpolate(T.ones(1, 1, 2, 2), { 3, 5 }).shape:totable())
    assert.same({ 1, 1, 4, 4 }, F.interpolate(T.ones(1, 1, 2, 2), nil, 2, "bilinear", false).shape:totable())
    assert.same({ { { { 6, 8 }, { 14, 16 } } } }, F.max_pool2d(T.arange(1, 17):reshape(1, 1, 4, 4):float(), { kernel_size = 2 }):tolist())
    assert.same({ 1, 1, 3, 3 }, F.avg_pool2d(T.ones(1, 1, 4, 4), { kernel_size = 2, stride = 1 }).shape:totable())
    near(T.norm(T.tensor { { 3, 0 }, { 0, 4 } }:float(), "nuc"), T.tensor(7):float())
    near(T.ones(2, 2, 3):norm("nuc", { 2, 3 }), T.tensor { 2.4494897, 2.4494897 })
    near(T.complex(T.eye(2), T.eye(2)):norm("nuc"), T.tensor(2.8284271))
    err(function() return T.norm(T.ones(3), "nuc") end, "norm: the nuclear norm needs a 2-d input or two dims, got a 1-d input")
    err(function() return T.searchsorted(T.ones(2, 3), 3) end,
      "searchsorted: input value can be a scalar only when boundaries tensor dimension is 1")
  end)

  it("softmax and log_softmax take dtype; softmin is softmax(-x)", function()
    local x = T.tensor { { 1, 2, 3 }, { 0.5, 0, -1 } }:float()
    local s = F.softmax(x, 2, { dtype = T.float64 })
    assert.are.equal(T.float64, s.dtype)
    near(s, T.tensor({ { 0.0900306, 0.2447285, 0.6652410 }, { 0.5465493, 0.3314989, 0.1219518 } }, { dtype = T.float64 }))
    assert.are.equal(T.float64, F.log_softmax(x, { dim = 2, dtype = T.float64 }).dtype)
    near(F.softmin(x, 2), T.tensor { { 0.6652409, 0.2447285, 0.0900306 }, { 0.1402444, 0.2312239, 0.6285317 } })
    err(function() return F.softmax(x) end, "softmax: the dim argument is required")
    err(function() return F.softmin(x, 2, { bad = 1 }) end, "softmin: unknown option 'bad'")
  end)
end)
