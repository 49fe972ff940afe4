-- Differences from PyTorch 1.13 found by the twelfth round of differential
-- tests (pooling), each with torch's values. Indices are 1-based in ember:
-- that shift is not a difference.
local T = require "ember"
local F, nn = T.nn.functional, T.nn

local function flat(t)
  local r, f = {}, t:reshape(-1)
  for i = 1, f:numel() do r[i] = f[i]:item() end
  return r
end
local function shape(t) return table.concat(t:size():totable(), ",") end
local function near(got, want, tol)
  local g = flat(got)
  assert.are.equal(#want, #g)
  for i = 1, #want do
    assert(math.abs(g[i] - want[i]) <= (tol or 1e-12), ("[%d] %s, want %s"):format(i, g[i], want[i]))
  end
end

describe("difftest round 12: a list in a positional option is a per-dim value (torch's tuple)", function()
  local x = T.arange(30, { dtype = T.float64 }):reshape(1, 1, 5, 6)

  it("max_pool2d / avg_pool2d / conv2d take a positional stride and padding list", function()
    -- torch: F.max_pool2d(x, (2, 3), (3, 2)); before: "unexpected positional entry [1] in the options table"
    local y = F.max_pool2d(x, { 2, 3 }, { 3, 2 })
    assert.are.equal("1,1,2,2", shape(y))
    near(y, { 8, 10, 26, 28 })
    near(F.avg_pool2d(x, { 2, 3 }, { 3, 2 }, { 1, 1 }), { 1 / 6, 1, 2, 31 / 3, 17, 19 })
    near(F.conv2d(x, T.ones(1, 1, 2, 2, { dtype = T.float64 }), nil, { 3, 2 }), { 14, 22, 30, 86, 94, 102 })
  end)

  it("max_pool1d / avg_pool1d take a list of one and the kernel in the options table", function()
    local y = T.arange(9, { dtype = T.float64 }):reshape(1, 1, 9)
    near(F.max_pool1d(y, { 3 }, { 2 }, { 1 }), { 1, 3, 5, 7, 8 })
    near(F.avg_pool1d(y, { 3 }, { 2 }, { 1 }), { 1 / 3, 2, 4, 6, 5 })
    -- torch: F.max_pool1d(y, kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)
    near(F.max_pool1d(y, { kernel_size = 3, stride = 2, padding = 1, dilation = 2, ceil_mode = true }), { 3, 5, 7, 7 })
    near(F.avg_pool1d(y, { kernel_size = 3, stride = 2, padding = 1 }), { 1 / 3, 2, 4, 6, 5 })
  end)
end)

describe("difftest round 12: adaptive 3-d pools to an output size of 0", function()
  it("give torch's empty output", function()
    local x = T.randn(2, 1, 4, 4, 4, { dtype = T.float64 }):requires_grad_(true)
    -- torch: [2, 1, 0, 0, 0] and [2, 1, 0, 2, 2]; before: "output size must be positive integers, got 0"
    local y = F.adaptive_avg_pool3d(x, 0)
    assert.are.equal("2,1,0,0,0", shape(y))
    assert.is_true(y.requires_grad)
    local v, i = F.adaptive_max_pool3d(x, { 0, 2, 2 }, true)
    assert.are.equal("2,1,0,2,2", shape(v))
    assert.are.equal("2,1,0,2,2", shape(i))
    assert.are.equal(T.int64, i.dtype)
    assert.are.equal("2,1,2,3,0", shape(F.adaptive_max_pool3d(x, { 2, 3, 0 })))
    assert.has_error(function() F.adaptive_avg_pool3d(x, -1) end,
      "adaptive_avg_pool3d: output size must be a non-negative integer, got -1")
  end)
end)

describe("difftest round 12: adaptive pool modules print a None size", function()
  it("as torch's repr", function()
    -- before: an error (table.concat of T.None)
    assert.are.equal("AdaptiveAvgPool2d(output_size=(3, None))", tostring(nn.AdaptiveAvgPool2d({ 3, T.None })))
    assert.are.equal("AdaptiveAvgPool3d(output_size=(None, 2, 3))", tostring(nn.AdaptiveAvgPool3d({ T.None, 2, 3 })))
    assert.are.equal("AdaptiveMaxPool3d(output_size=(2, None, 3))", tostring(nn.AdaptiveMaxPool3d({ 2, T.None, 3 })))
  end)
end)

describe("difftest round 12: avg pools of int64 input", function()
  it("divide each window's sum with truncation, as torch's integer kernel", function()
    local x = T.arange(-8, 8):reshape(1, 1, 4, 4)
    -- before: "avg_pool2d: expected input of dtype float32 or float64, got int64"
    local y = F.avg_pool2d(x, 2)
    assert.are.equal(T.int64, y.dtype)
    assert.are.same({ -5, -3, 2, 4 }, flat(y))
    assert.are.same({ -5, -5, -4, -3, -3, -3, -2, -1, 0, 1, 2, 2, 2, 3, 4, 4 },
      flat(F.avg_pool2d(x, 3, 1, 1, false, false)))
    assert.are.same({ -5, -7, -6, -3, -2, -3, -2, -1, 0, 1, 2, 1, 3, 5, 6, 4 }, flat(F.avg_pool1d(x[1], 3, 1, 1)))
    local z = F.avg_pool3d(x:reshape(1, 1, 2, 2, 4), 2, 1, 1, false, true, 3)
    assert.are.equal(T.int64, z.dtype)
    assert.are.same({ -2, -5, -4, -3, -1, -4, -7, -6, -4, -2, -1, -2, -1, -1, 0, -2, -4, -3, -2, 0, -2, -4, -1, 1, 1,
      0, 0, 2, 3, 2, 0, 0, 1, 1, 1, 1, 3, 4, 6, 3, 1, 3, 3, 4, 2 }, flat(z))
  end)
end)
