-- Differences of ember's normalization, padding and resampling layers from
-- PyTorch 1.13 found by the seventh round of differential tests, each with
-- torch's value or error. Positions are 1-based in ember (dims): that shift
-- is not a difference.
local T = require "ember"
local U = require "specutil"
local err = U.err

local F, nn = T.nn.functional, T.nn
local f64 = T.float64
local function ar(n, shape) return T.arange(0, n, { dtype = f64 }):reshape(shape) end

describe("difftest round 7 (norm layers): nearest interpolation follows torch 1.13's memory-layout kernels", function()
  it("2-d/3-d nearest of a channels-first input with C > 1 takes floor(dst / scale_factor), no shortcuts", function()
    -- torch: F.interpolate(arange(24.).reshape(1, 2, 3, 4), scale_factor=1.1)[0, 0]
    --   [[0, 0, 1, 2], [0, 0, 1, 2], [4, 4, 5, 6]] (same size, not a copy)
    local y = F.interpolate(ar(24, { 1, 2, 3, 4 }), { scale_factor = 1.1 })
    U.near(y[1][1], T.tensor({ { 0, 0, 1, 2 }, { 0, 0, 1, 2 }, { 4, 4, 5, 6 } }, { dtype = f64 }), 0)
    -- scale_factor=2.3: H 3 -> 6 (doubled) reads floor(dst / 2.3), not dst // 2:
    -- torch [0, 1, :, 0] = [12, 12, 12, 16, 16, 20]
    y = F.interpolate(ar(24, { 1, 2, 3, 4 }), { scale_factor = 2.3 })
    U.near(y[1][2]:select(2, 1), T.tensor({ 12, 12, 12, 16, 16, 20 }, { dtype = f64 }), 0)
    -- 5-d: torch (1, 2, 2, 3, 4) with scale_factor=1.1: both depth planes are plane 0,
    -- each [[0, 0, 1, 2], [0, 0, 1, 2], [4, 4, 5, 6]]
    y = F.interpolate(ar(48, { 1, 2, 2, 3, 4 }), { scale_factor = 1.1 })
    local plane = T.tensor({ { 0, 0, 1, 2 }, { 0, 0, 1, 2 }, { 4, 4, 5, 6 } }, { dtype = f64 })
    U.near(y[1][1][1], plane, 0)
    U.near(y[1][1][2], plane, 0)
  end)

  it("one channel, or channels-last strides, keep torch's copy and halving shortcuts", function()
    -- torch: (1, 1, 3, 4) with scale_factor=1.1 is a copy (its channels-last kernel)
    local x = ar(12, { 1, 1, 3, 4 })
    U.near(F.interpolate(x, { scale_factor = 1.1 }), x, 0)
    -- torch: arange(24.).reshape(1, 3, 4, 2).permute(0, 3, 1, 2) (channels-last):
    -- scale_factor=1.1 row [0, 2, 4, 6]; scale_factor=2.3 column [0, 0, 8, 8, 16, 16]
    local xc = ar(24, { 1, 3, 4, 2 }):permute(1, 4, 2, 3)
    U.near(F.interpolate(xc, { scale_factor = 1.1 })[1][1][1], T.tensor({ 0, 2, 4, 6 }, { dtype = f64 }), 0)
    U.near(F.interpolate(xc, { scale_factor = 2.3 })[1][1]:select(2, 1),
      T.tensor({ 0, 0, 8, 8, 16, 16 }, { dtype = f64 }), 0)
  end)

  it("an empty spatial dim is refused with torch's sizes, not an index error", function()
    -- torch: Input and output sizes should be greater than 0, but got input (W: 0) and output (W: 3)
    err(function() F.interpolate(T.zeros(1, 1, 0, { dtype = f64 }), { size = 3 }) end,
      "input and output sizes should be greater than 0, but got input size 0 and output size 3")
    err(function() F.interpolate(T.zeros(1, 1, 4, { dtype = f64 }), { scale_factor = 0.1 }) end,
      "but got input size 4 and output size 0")
    -- a size list of the wrong length names its length, not a table address
    err(function() F.interpolate(T.zeros(1, 1, 4, 4), { size = { 2, 3, 4 } }) end,
      "and output size of 3 values")
  end)
end)

describe("difftest round 7 (norm layers): batch and instance norm checks", function()
  it("instance_norm refuses one spatial element when it uses the input's statistics", function()
    -- torch: nn.InstanceNorm1d(3)(x of shape (2, 3, 1)):
    -- Expected more than 1 spatial element when training, got input size torch.Size([2, 3, 1])
    err(function() nn.InstanceNorm1d(3)(T.zeros(2, 3, 1)) end,
      "Expected more than 1 spatial element when training, got input size [2, 3, 1]")
    err(function() F.instance_norm(T.zeros(2, 3, 1, 1)) end, "more than 1 spatial element")
    -- with the running statistics (evaluation) it normalises with them: torch gives x / sqrt(1 + 1e-5)
    local m = nn.InstanceNorm1d(3, { track_running_stats = true, dtype = f64 })
    m:eval()
    local x = ar(6, { 2, 3, 1 })
    U.near(m(x), x / math.sqrt(1 + 1e-5), 1e-12)
  end)

  it("batch_norm and instance_norm refuse momentum = false (torch's None) instead of using 0.1", function()
    -- torch: F.batch_norm(x, rm, rv, training=True, momentum=None):
    -- batch_norm(): argument 'momentum' (position 7) must be float, not NoneType
    local rm = T.zeros(2)
    err(function() F.batch_norm(ar(8, { 4, 2 }):float(), rm, T.ones(2), nil, nil, true, false) end,
      "batch_norm: momentum must be a number, got false")
    assert.is_true(T.equal(rm, T.zeros(2))) -- left untouched
    -- torch: nn.InstanceNorm1d(2, momentum=None)(x): instance_norm(): argument 'momentum' ... must be float
    err(function() nn.InstanceNorm1d(2, { momentum = false })(T.zeros(1, 2, 4)) end,
      "instance_norm: momentum must be a number, got false")
    -- the BatchNorm modules' momentum=false is still the cumulative average
    local bn = nn.BatchNorm1d(2, { momentum = false, dtype = f64 })
    bn(ar(8, { 4, 2 }))
    -- torch: running_mean [3, 4] (momentum 1 / 1), running_var [6.6667, 6.6667]
    U.near(bn.running_mean, T.tensor({ 3, 4 }, { dtype = f64 }), 1e-12)
    U.near(bn.running_var, T.tensor({ 20 / 3, 20 / 3 }, { dtype = f64 }), 1e-12)
  end)

  it("a weight or running statistic of the wrong size names its shape", function()
    -- torch: nn.BatchNorm1d(3)(x of shape (2, 4)): running_mean should contain 4 elements not 3
    err(function() nn.BatchNorm1d(3)(T.zeros(2, 4)) end, "expected weight of shape [4] (the input's channels), got [3]")
    err(function() nn.BatchNorm1d(3, { affine = false })(T.zeros(2, 4)) end,
      "expected running_mean of shape [4] (the input's channels), got [3]")
  end)
end)

describe("difftest round 7 (norm layers): padding and fold argument messages", function()
  it("a padding or output_size list of the wrong length names its length", function()
    -- torch: nn.ConstantPad1d((1, 2, 3), 0)(x): Padding length must be divisible by 2
    err(function() nn.ConstantPad1d({ 1, 2, 3 }, 0) end, "expected an integer or 2 paddings, got 3 values")
    -- torch: F.fold(x, (3, 3, 3), 2): It is expected output_size equals to 2, but got size 3
    err(function() F.fold(T.zeros(1, 4, 4), { 3, 3, 3 }, 2) end,
      "expected an integer or a pair of integers for output_size, got 3 values")
  end)
end)
