-- ConvTranspose1d/2d and interpolate/Upsample (issue 18 item 4;
-- lua/ember/nn/transpose_upsample.lua): the values against PyTorch are in
-- nn_extra_spec.lua (fixtures from gen_nn_extra.py); here gradcheck,
-- double backward, the modules and bad input.
local T = require "ember"
local F = T.nn.functional
local nn = T.nn

local function r(...) return T.randn(...):double():requires_grad_() end

describe("conv_transpose and interpolate", function()
  it("gradcheck (float64)", function()
    local gc = {
      function(x, w, b) return F.conv_transpose2d(x, w, b, { stride = 2, padding = 1, output_padding = 1 }) end,
      function(x, w) return F.conv_transpose2d(x, w, nil, { groups = 2 }) end,
      function(x, w, b) return F.conv_transpose1d(x, w, b, 2, 1) end,
    }
    assert.is_true(T.autograd.gradcheck(gc[1], { r(1, 2, 3, 3), r(2, 3, 3, 3), r(3) }))
    assert.is_true(T.autograd.gradcheck(gc[2], { r(1, 4, 2, 2), r(4, 1, 2, 2) }))
    assert.is_true(T.autograd.gradcheck(gc[3], { r(2, 2, 4), r(2, 3, 3), r(3) }))
    for _, o in ipairs {
      { size = 7, mode = "nearest" }, { size = 7, mode = "linear" },
      { size = 7, mode = "linear", align_corners = true }, { scale_factor = 0.6, mode = "linear" },
    } do
      assert.is_true(T.autograd.gradcheck(function(x) return F.interpolate(x, o) end, { r(1, 2, 5) }))
    end
    assert.is_true(T.autograd.gradcheck(function(x) return F.interpolate(x, { size = { 5, 3 }, mode = "bilinear" }) end,
      { r(1, 1, 3, 4) }))
  end)

  it("conv_transpose2d is the adjoint of conv2d", function()
    local x, w = T.randn(2, 3, 5, 5):double(), T.randn(3, 4, 3, 3):double()
    local y = F.conv_transpose2d(x, w, nil, { stride = 2, padding = 1 })
    local z = T.randn(y.shape):double()
    -- <conv_transpose(x), z> == <x, conv2d(z)>
    local lhs = (y * z):sum():item()
    local rhs = (x * F.conv2d(z, w, nil, { stride = 2, padding = 1 })):sum():item()
    assert(math.abs(lhs - rhs) < 1e-9 * math.max(1, math.abs(lhs)))
  end)

  it("modules: PyTorch's layouts, names and printouts", function()
    local m = nn.ConvTranspose2d(4, 6, 3, { stride = 2, groups = 2 })
    assert.same({ 4, 3, 3, 3 }, m.weight.shape:totable())
    assert.same({ "weight", "bias" }, m:state_dict():keys())
    assert.equal("ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), groups=2)", tostring(m))
    assert.same({ 1, 6, 11, 11 }, m(T.randn(1, 4, 5, 5)).shape:totable())
    local m1 = nn.ConvTranspose1d(2, 3, 4, { bias = false })
    assert.equal("ConvTranspose1d(2, 3, kernel_size=(4,), stride=(1,), bias=false)", tostring(m1))
    assert.same({ 3, 8 }, m1(T.randn(2, 5)).shape:totable())
    local up = nn.Upsample { scale_factor = 2, mode = "bilinear" }
    assert.equal("Upsample(scale_factor=2.0, mode=bilinear)", tostring(up))
    assert.same({ 1, 1, 6, 8 }, up(T.randn(1, 1, 3, 4)).shape:totable())
    assert.equal("Upsample(size=(5, 6), mode=nearest)", tostring(nn.Upsample { size = { 5, 6 } }))
  end)

  it("names bad input", function()
    assert.has_error(function() F.conv_transpose2d(T.randn(1, 2, 3, 3), T.randn(3, 2, 2, 2)) end,
      "conv_transpose2d: expected the weight's first dim (3) to match the input's channels (2)")
    assert.has_error(function() F.conv_transpose2d(T.randn(1, 2, 3, 3), T.randn(2, 2, 2, 2), nil, { output_padding = 1 }) end,
      "conv_transpose2d: output padding must be smaller than either stride or dilation, but got output_padding=1, "
      .. "stride=1, dilation=1")
    assert.has_error(function() F.interpolate(T.randn(1, 1, 4), { size = 3, scale_factor = 2 }) end,
      "interpolate: either size or scale_factor should be defined (exactly one)")
    assert.has_error(function() F.interpolate(T.randn(1, 1, 4), { size = 3, mode = "lanczos" }) end,
      "interpolate: mode lanczos is not supported (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area)")
    assert.has_error(function() F.interpolate(T.randn(1, 1, 4), { size = 3, mode = "bicubic" }) end,
      "interpolate: mode bicubic expects a 4-d input (N, C, ...), got 3-d")
    assert.has_error(function() F.interpolate(T.randn(1, 1, 4), { size = 3, mode = "bilinear" }) end,
      "interpolate: mode bilinear expects a 4-d input (N, C, ...), got 3-d")
    assert.has_error(function() F.interpolate(T.randn(1, 1, 4), { size = 3, align_corners = true }) end,
      "interpolate: align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    -- torch 1.13 takes padding_mode='zeros' (the default) and refuses the others
    assert.are.same({ 1, 4, 6, 6 }, nn.ConvTranspose2d(3, 4, 3, { padding_mode = "zeros" })(T.ones(1, 3, 4, 4)):size():totable())
    assert.has_error(function() nn.ConvTranspose2d(3, 4, 3, { padding_mode = "reflect" }) end,
      "ConvTranspose2d: Only 'zeros' padding mode is supported for ConvTranspose2d, got padding_mode='reflect'")
  end)
end)
