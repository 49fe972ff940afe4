-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests (convolution and pooling, round two), each with torch's value or
-- error. Positions are 1-based in ember (dims, indices): those shifts are
-- not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err
local F, nn = T.nn.functional, T.nn
local unpack = table.unpack or unpack

local function shape(t) return table.concat(t:size():totable(), ",") end
local function msg(f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  return tostring(e)
end

describe("difftest round 8: convolution errors name the shapes passed (torch 1.13)", function()
  it("conv1d shows its 3-d shapes and one kernel size, not the 2-d op's it runs on", function()
    -- torch: Given groups=1, weight of size [4, 2, 2], expected input[1, 3, 5] to have 2 channels, but got 3
    err(function() F.conv1d(T.ones(1, 3, 5), T.ones(4, 2, 2)) end,
      "conv1d: Given groups=1, weight of size [4, 2, 2], expected input[1, 3, 5] to have 2 channels, but got 3 "
      .. "channels instead")
    -- torch: Calculated padded input size per channel: (3). Kernel size: (5). Kernel size can't be greater ...
    err(function() F.conv1d(T.ones(1, 2, 3), T.ones(4, 2, 5)) end,
      "conv1d: kernel size (5) (dilated) can't be greater than the padded input size (3)")
    -- torch: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[3, 2, 2]]
    err(function() F.conv1d(T.ones(1, 4, 5), T.ones(3, 2, 2), nil, { groups = 2 }) end,
      "conv1d: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 2]")
    err(function() F.conv2d(T.ones(1, 4, 5, 5), T.ones(3, 2, 2, 2), nil, { groups = 2 }) end,
      "conv2d: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size "
      .. "[3, 2, 2, 2]")
  end)

  it("a bias of the wrong size names its size", function()
    -- torch: Given weight of size [4, 3, 2, 2], expected bias to be 1-dimensional with 4 elements, but got bias
    -- of size [3] instead
    err(function() F.conv2d(T.ones(1, 3, 5, 5), T.ones(4, 3, 2, 2), T.ones(3)) end,
      "conv2d: Given weight of size [4, 3, 2, 2], expected bias to be 1-dimensional with 4 elements, but got bias "
      .. "of size [3] instead")
    err(function() F.conv1d(T.ones(1, 3, 5), T.ones(4, 3, 2), T.ones(5)) end,
      "conv1d: Given weight of size [4, 3, 2], expected bias to be 1-dimensional with 4 elements, but got bias "
      .. "of size [5] instead")
    err(function() F.conv2d(T.ones(1, 3, 5, 5), T.ones(4, 3, 2, 2), T.ones(4, 1)) end, "but got bias of size [4, 1]")
  end)

  it("conv3d's kernel-larger-than-input error names all three dims", function()
    -- torch: Calculated padded input size per channel: (3 x 3 x 3). Kernel size: (2 x 4 x 2). Kernel size can't
    -- be greater than actual input size
    err(function() F.conv3d(T.ones(1, 2, 3, 3, 3), T.ones(4, 2, 2, 4, 2)) end,
      "conv3d: Calculated padded input size per channel: (3 x 3 x 3). Kernel size: (2 x 4 x 2). Kernel size can't "
      .. "be greater than actual input size")
  end)

  it("a padding string other than 'same' and 'valid' is named as such", function()
    -- torch: Invalid padding string: 'full'
    err(function() F.conv2d(T.ones(1, 3, 5, 5), T.ones(4, 3, 2, 2), nil, { padding = "full" }) end,
      "conv2d: Invalid padding string 'full', should be one of {'valid', 'same'}")
    err(function() F.conv1d(T.ones(1, 3, 5), T.ones(4, 3, 2), nil, { padding = "full" }) end,
      "conv1d: Invalid padding string 'full', should be one of {'valid', 'same'}")
  end)

  it("engine errors of conv1d/conv2d and the 2-d pools come without an internal file position", function()
    for _, f in ipairs {
      function() F.conv1d(T.ones(1, 3, 5), T.ones(4, 2, 2)) end,
      function() F.conv2d(T.ones(1, 3, 5, 5), T.ones(4, 2, 2, 2)) end,
      function() F.max_pool2d(T.ones(1, 1, 3, 3), 4) end,
      function() F.avg_pool2d(T.ones(1, 1, 3, 3), 4) end,
    } do
      local e = msg(f)
      assert.is_nil(e:find("functional.lua", 1, true), e)
    end
  end)
end)

describe("difftest round 8: every dim's options checked (torch 1.13)", function()
  local x5, w5 = T.ones(1, 2, 4, 4, 4), T.ones(2, 2, 2, 2, 2)

  it("conv_transpose3d checks the depth's stride, dilation, padding and output_padding", function()
    -- before: a depth stride or dilation of 0 and a negative output_padding gave an output
    -- torch: non-positive stride is not supported
    err(function() F.conv_transpose3d(x5, w5, nil, { stride = { 0, 1, 1 } }) end,
      "conv_transpose3d: non-positive stride is not supported")
    -- torch: dilation should be greater than zero, but got dilation_depth: 0, ...
    err(function() F.conv_transpose3d(x5, w5, nil, { dilation = { 0, 1, 1 } }) end,
      "conv_transpose3d: dilation should be greater than zero")
    -- torch: negative padding is not supported
    err(function() F.conv_transpose3d(x5, w5, nil, { padding = { -1, 1, 1 } }) end,
      "conv_transpose3d: negative padding is not supported")
    -- torch: negative output_padding is not supported
    err(function() F.conv_transpose3d(x5, w5, nil, { stride = 2, output_padding = { -1, 0, 0 } }) end,
      "conv_transpose3d: negative output_padding is not supported")
    -- the valid forms still work
    assert.equal("1,2,9,9,9", shape(F.conv_transpose3d(x5, w5, nil, { stride = 2, output_padding = 1 })))
  end)

  it("conv3d checks the depth's dilation", function()
    -- torch: dilation should be greater than zero, but got [0, 1, 1] (before: an output of 1,2,4,3,3)
    err(function() F.conv3d(x5, w5, nil, { dilation = { 0, 1, 1 } }) end,
      "conv3d: dilation should be greater than zero, but got [0, 1, 1]")
  end)

  it("conv_transpose1d/2d refuse groups 0 and a negative output_padding by name", function()
    -- torch: non-positive groups is not supported; negative output_padding is not supported
    -- (before: "must be divisible by groups (0)" and "expected grad_output of shape ...")
    for n, xs in ipairs { { 1, 2, 4 }, { 1, 2, 4, 4 } } do
      local f = F["conv_transpose" .. n .. "d"]
      local ws = { 2, 2, 2 }
      if n == 2 then ws[4] = 2 end
      local x, w = T.ones(unpack(xs)), T.ones(unpack(ws))
      err(function() f(x, w, nil, { groups = 0 }) end, "conv_transpose" .. n .. "d: non-positive groups is not supported")
      err(function() f(x, w, nil, { stride = 2, output_padding = -1 }) end,
        "conv_transpose" .. n .. "d: negative output_padding is not supported")
    end
    err(function() F.conv_transpose3d(x5, w5, nil, { groups = 0 }) end, "conv_transpose3d: non-positive groups is not supported")
  end)

  it("pools refuse a negative padding as such, not as more than half the kernel", function()
    -- torch: max_pool1d() padding must be non-negative, but got -1; pad must be non-negative, but got pad: -1
    err(function() F.max_pool1d(T.ones(1, 2, 5), 2, { padding = -1 }) end, "max_pool1d: pad must be non-negative")
    err(function() F.max_pool2d(T.ones(1, 2, 5, 5), 2, { padding = -1 }) end, "max_pool2d: pad must be non-negative")
    err(function() F.avg_pool1d(T.ones(1, 2, 5), 2, { padding = -1 }) end, "avg_pool1d: pad must be non-negative")
    err(function() F.avg_pool2d(T.ones(1, 2, 5, 5), 2, { padding = -1 }) end, "avg_pool2d: pad must be non-negative")
    err(function() F.max_pool3d(T.ones(1, 2, 5, 5, 5), 2, { padding = -1 }) end, "max_pool3d: pad must be non-negative")
    err(function() F.avg_pool3d(T.ones(1, 2, 5, 5, 5), 2, { padding = -1 }) end, "avg_pool3d: pad must be non-negative")
    -- more than half still names the rule
    err(function() F.max_pool2d(T.ones(1, 2, 5, 5), 2, { padding = 2 }) end,
      "max_pool2d: pad should be at most half of kernel size, but got pad=2 and kernel_size=2")
  end)
end)

describe("difftest round 8: conv and pool modules (torch 1.13)", function()
  it("Conv1d/2d/3d refuse groups below 1 as torch does", function()
    -- torch: ValueError: groups must be a positive integer (before: "in_channels must be divisible by groups")
    err(function() nn.Conv1d(4, 4, 3, { groups = 0 }) end, "Conv1d: groups must be a positive integer, got 0")
    err(function() nn.Conv2d(4, 4, 3, { groups = -2 }) end, "Conv2d: groups must be a positive integer, got -2")
    err(function() nn.ConvTranspose2d(4, 4, 3, { groups = 0 }) end,
      "ConvTranspose2d: groups must be a positive integer, got 0")
  end)

  it("ConvTranspose takes padding_mode = 'zeros' and refuses the others", function()
    -- torch: ConvTranspose2d(2, 2, 3, padding_mode='zeros') is the default; 'reflect' ->
    -- ValueError: Only 'zeros' padding mode is supported for ConvTranspose2d
    local m = nn.ConvTranspose1d(2, 3, 3, { padding_mode = "zeros", stride = 2 })
    assert.equal("1,3,9", shape(m(T.ones(1, 2, 4))))
    err(function() nn.ConvTranspose3d(2, 2, 3, { padding_mode = "circular" }) end,
      "ConvTranspose3d: Only 'zeros' padding mode is supported for ConvTranspose3d, got padding_mode='circular'")
  end)

  it("a padding too large for a Conv's padding_mode names the layer", function()
    -- torch: Argument #4: Padding size should be less than the corresponding input dimension, but got:
    -- padding (3, 3) at dimension 3 of input 4 (before: "<file>:<line>: pad: ...")
    local e = msg(function() nn.Conv2d(2, 2, 3, { padding = 3, padding_mode = "reflect" })(T.ones(1, 2, 3, 3)) end)
    assert.truthy(e:find("Conv2d: padding size should be less than the corresponding input dimension", 1, true), e)
    assert.truthy(e:find("(padding_mode='reflect')", 1, true), e)
    assert.is_nil(e:find("layers.lua", 1, true), e)
    err(function() nn.Conv1d(2, 2, 3, { padding = 4, padding_mode = "circular" })(T.ones(1, 2, 3)) end,
      "Conv1d: padding value causes wrapping around more than once")
  end)

  it("fractional_max_pool2d checks the height first, in torch's words", function()
    -- torch: fractional_max_pool2d(): pool height 3 too large relative to input height 9
    err(function() F.fractional_max_pool2d(T.ones(1, 1, 9, 9), 3, { output_size = { 8, 7 } }) end,
      "fractional_max_pool2d: pool height 3 too large relative to input height 9")
    err(function() F.fractional_max_pool2d(T.ones(1, 1, 9, 9), 3, { output_size = { 7, 8 } }) end,
      "fractional_max_pool2d: pool width 3 too large relative to input width 9")
  end)
end)

describe("difftest round 8: the 2-d pools' positional arguments (torch 1.13)", function()
  local x = (T.arange(1, 57, { dtype = T.float64 }) * 0.37):sin():reshape(1, 1, 7, 8)

  it("max_pool2d takes return_indices as its 7th argument", function()
    -- torch: F.max_pool2d(x, 3, 2, 1, 2, True, True) (before: "takes at most 6 arguments")
    local v, i = F.max_pool2d(x, 3, 2, 1, 2, true, true)
    U.near(v:reshape(-1), T.tensor({ -0.19398436125389723, -0.19398436125389723, -0.35525355998804264,
      -0.35525355998804264, 0.16717462746353695, 0.16717462746353695, -0.35525355998804264, -0.35525355998804264,
      0.16717462746353695, 0.16717462746353695, -0.541345654977011, -0.6641607235200951 }, { dtype = T.float64 }),
      1e-15)
    -- torch (0-based): [25, 25, 15, 15, 41, 41, 15, 15, 41, 41, 43, 31]
    assert.are.same({ 26, 26, 16, 16, 42, 42, 16, 16, 42, 42, 44, 32 }, i:reshape(-1):tolist())
    assert.equal("1,1,3,4", shape(F.max_pool2d(x, 3, 2, 1, 2, true, false)))
  end)

  it("avg_pool2d takes divisor_override as its 7th argument", function()
    -- torch: F.avg_pool2d(x, 3, 2, 1, True, False, 2)
    local a = F.avg_pool2d(x, 3, 2, 1, true, false, 2)
    assert.equal("1,1,4,5", shape(a))
    U.near(a:reshape(-1):narrow(1, 1, 5), T.tensor({ 0.15938626957085528, 0.1361167940941027, -0.048648458010843554,
      -0.20796750743747172, -0.08732864604690486 }, { dtype = T.float64 }), 1e-15)
  end)
end)
