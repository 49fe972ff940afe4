-- Differences from PyTorch 1.13 found by the ninth round of differential
-- tests (spatial functional ops: unfold/fold, pixel_shuffle, affine_grid,
-- grid_sample, interpolate, pad, Upsample, channel_shuffle), each with
-- torch's value or error. Positions are 1-based in ember (dims, indices):
-- those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err
local F, nn = T.nn.functional, T.nn

local function shape(t) return table.concat(t:size():totable(), ",") end

describe("difftest round 9 (spatial): interpolate", function()
  it("the interpolating modes refuse integer input (torch 1.13 has no integer kernel for them)", function()
    -- torch: F.interpolate(torch.arange(10).reshape(1, 2, 5), size=3, mode='linear') ->
    -- "compute_indices_weights_linear" not implemented for 'Long' (ember gave a float32 result;
    -- with antialias=True an int64 one of truncated weights, all zeros)
    local xi = T.arange(10):reshape(1, 2, 5)
    err(function() F.interpolate(xi, { size = 3, mode = "linear" }) end,
      "interpolate: mode linear expects a floating point input, got ember.int64")
    local x2 = T.arange(50):reshape(1, 2, 5, 5)
    for _, mode in ipairs { "bilinear", "bicubic" } do
      err(function() F.interpolate(x2, { size = 3, mode = mode }) end, "expects a floating point input")
      err(function() F.interpolate(x2, { size = 3, mode = mode, antialias = true }) end,
        "expects a floating point input")
    end
    err(function() F.interpolate(T.arange(250):reshape(1, 2, 5, 5, 5), { size = 3, mode = "trilinear" }) end,
      "expects a floating point input")
    err(function() F.interpolate(x2:to(T.uint8), { size = 3, mode = "area" }) end, "floating point input")
    -- nearest keeps the dtype (torch 1.13: uint8 and the floating types)
    local y = F.interpolate(x2:to(T.uint8), { size = 3 })
    assert.equal(T.uint8, y.dtype)
    assert.equal("1,2,3,3", shape(y))
  end)

  it("a non-finite scale_factor is refused by name", function()
    -- torch: F.interpolate(x, scale_factor=float('inf')) -> IntArrayRef contains an int that cannot be
    -- represented as a SymInt (ember: "unsupported range: 0 -> inf" from an inner arange)
    err(function() F.interpolate(T.ones(1, 1, 2, 2), { scale_factor = { 2, 1 / 0 } }) end,
      "interpolate: expected scale_factor to be finite numbers, got inf")
    err(function() F.interpolate(T.ones(1, 1, 2, 2), { scale_factor = 0 / 0 }) end,
      "interpolate: expected scale_factor to be finite numbers")
  end)
end)

describe("difftest round 9 (spatial): interpolate's antialias and list lengths", function()
  it("antialias reads only each output's support: a NaN or inf elsewhere does not spread", function()
    -- torch: x = arange(30.).reshape(1, 1, 5, 6); x[0, 0, 2, 2] = nan; x[0, 0, 4, 5] = inf
    -- F.interpolate(x, size=(2, 3), mode='bilinear', antialias=True) -> nan, nan, 10.2857..., nan, nan, inf
    -- (ember multiplied the whole row by a weight matrix: NaN everywhere)
    local x = T.arange(30, { dtype = T.float64 }):reshape(1, 1, 5, 6)
    x[1][1][3][3] = 0 / 0
    x[1][1][5][6] = math.huge
    local y = F.interpolate(x, { size = { 2, 3 }, mode = "bilinear", antialias = true }):reshape(-1):tolist()
    assert.is_true(y[1] ~= y[1] and y[2] ~= y[2] and y[4] ~= y[4] and y[5] ~= y[5])
    assert.near(10.285714285714285, y[3], 1e-12)
    assert.equal(math.huge, y[6])
    -- torch: x = arange(12.).reshape(1, 1, 1, 12); x[..., 0] = nan; bicubic antialias to (1, 4)
    -- -> nan, nan, 7.060975609756099, 9.933333333333334
    local x2 = T.arange(12, { dtype = T.float64 }):reshape(1, 1, 1, 12)
    x2[1][1][1][1] = 0 / 0
    local y2 = F.interpolate(x2, { size = { 1, 4 }, mode = "bicubic", antialias = true }):reshape(-1):tolist()
    assert.is_true(y2[1] ~= y2[1] and y2[2] ~= y2[2])
    assert.near(7.060975609756099, y2[3], 1e-12)
    assert.near(9.933333333333334, y2[4], 1e-12)
  end)

  it("a size or scale_factor list must have one value per spatial dim", function()
    -- torch: F.interpolate(ones(1, 1, 4, 5), size=(3,)) -> Input and output must have the same number of
    -- spatial dimensions, but got input with spatial dimensions of [4, 5] and output size of (3,). ...
    -- (ember broadcast the one value)
    err(function() F.interpolate(T.ones(1, 1, 4, 5), { size = { 3 } }) end,
      "interpolate: Input and output must have the same number of spatial dimensions, but got input with "
      .. "spatial dimensions of [4, 5] and output size of 1 value")
    err(function() F.interpolate(T.ones(1, 1, 4, 5), { scale_factor = { 2 }, mode = "bilinear" }) end,
      "Input and scale_factor must have the same number of spatial dimensions")
    err(function() F.interpolate(T.ones(1, 1, 4, 5), { scale_factor = { 2, 2, 2 } }) end, "scale_factor of 3 values")
    -- a number is still broadcast, a list of the right length (or a Size) taken
    assert.equal("1,1,3,3", shape(F.interpolate(T.ones(1, 1, 4, 5), { size = 3 })))
    assert.equal("1,1,3,4", shape(F.interpolate(T.ones(1, 1, 4, 5), { size = T.Size { 3, 4 } })))
    assert.equal("1,1,3", shape(F.interpolate(T.ones(1, 1, 5), { size = { 3 }, mode = "linear" })))
  end)
end)

describe("difftest round 9 (spatial): nn.Upsample", function()
  it("takes torch's positional size, scale_factor, mode, align_corners, recompute_scale_factor", function()
    -- torch: nn.Upsample((3, 7))(x).shape -> (1, 1, 3, 7); nn.Upsample(None, 2, 'linear') ->
    -- Upsample(scale_factor=2.0, mode=linear) (ember: "Upsample: unknown option '1'" and
    -- "Upsample takes at most 1 arguments")
    local x = T.arange(8, { dtype = T.float64 }):reshape(1, 2, 4)
    assert.equal("1,1,3,7", shape(nn.Upsample({ 3, 7 }):forward(T.ones(1, 1, 2, 2))))
    assert.equal("1,1,4,4", shape(nn.Upsample(4):forward(T.ones(1, 1, 2, 2))))
    local m = nn.Upsample(nil, 2, "linear")
    assert.equal("Upsample(scale_factor=2.0, mode=linear)", tostring(m))
    U.near(m:forward(x), F.interpolate(x, { scale_factor = 2, mode = "linear" }), 0)
    -- torch: nn.Upsample(None, 1.5, 'bilinear', True)(arange(4.).reshape(1, 1, 2, 2))[0, 0, 0] -> 0, 0.5, 1
    local y = nn.Upsample(nil, 1.5, "bilinear", true):forward(T.arange(4, { dtype = T.float64 }):reshape(1, 1, 2, 2))
    U.close_list(y[1][1][1], { 0, 0.5, 1 }, 1e-15, "row")
    -- torch: nn.Upsample(scale_factor=(2, 3)) -> Upsample(scale_factor=(2.0, 3.0), mode=nearest)
    assert.equal("Upsample(scale_factor=(2.0, 3.0), mode=nearest)", tostring(nn.Upsample({ scale_factor = { 2, 3 } })))
    assert.equal("Upsample(scale_factor=(1.5,), mode=nearest)", tostring(nn.Upsample({ scale_factor = { 1.5 } })))
    -- the options table still works, a sixth argument is refused
    assert.equal("Upsample(scale_factor=2.0, mode=nearest)", tostring(nn.Upsample({ scale_factor = 2 })))
    err(function() nn.Upsample(nil, 2, "bilinear", true, false, 1) end, "Upsample takes at most 5 arguments")
  end)
end)

describe("difftest round 9 (spatial): grid_sample messages", function()
  it("name the shapes as torch's lists", function()
    -- torch: grid_sampler(): expected grid and input to have same batch size, but got input with sizes
    -- [2, 2, 4, 5] and grid with sizes [1, 3, 4, 2] (ember printed ember.Size([2, 2, 4, 5]))
    local f64 = { dtype = T.float64 }
    err(function() F.grid_sample(T.zeros(2, 2, 4, 5, f64), T.zeros(1, 3, 4, 2, f64)) end,
      "but got input with sizes [2, 2, 4, 5] and grid with sizes [1, 3, 4, 2]")
    err(function() F.grid_sample(T.zeros(2, 2, 4, 5, f64), T.zeros(2, 3, 4, 3, f64)) end,
      "but got grid with sizes [2, 3, 4, 3]")
    err(function() F.grid_sample(T.zeros(1, 2, 3, 4, 5, f64), T.zeros(2, 1, 1, 1, 3, f64)) end,
      "but got input with sizes [1, 2, 3, 4, 5] and grid with sizes [2, 1, 1, 1, 3]")
    err(function() F.grid_sample(T.zeros(2, 2, 0, 5, f64), T.zeros(2, 3, 4, 2, f64)) end,
      "non-empty spatial dimensions, but input has sizes [2, 2, 0, 5]")
  end)
end)
