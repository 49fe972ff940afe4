-- Differences of ember's nn from PyTorch 1.13's torch.nn.functional found
-- by the fifth round of differential tests, each with torch's value or
-- error. Positions are 1-based in ember (dims, indices, class ids): those
-- shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local F = T.nn.functional
local inf, nan = math.huge, 0 / 0
local function shape(t) return table.concat(t:size(), ",") end
local function f32(v) return T.tensor(v, { dtype = T.float32 }) end
local function ids(v) return T.tensor(v, { dtype = T.int64 }) end

describe("difftest round 5 (nn): cross_entropy with non-finite logits", function()
  local function nan_row(g, r)
    for _, v in ipairs(g:select(1, r):tolist()) do assert.is_true(v ~= v, "expected NaN, got " .. tostring(v)) end
  end

  it("a +inf or NaN logit makes the row's loss and gradient NaN, the other rows untouched", function()
    -- torch: F.cross_entropy(x, t) for x = [[1, inf, 2], [0, 1, 2]], t = [0, 2]:
    -- loss nan, x.grad [[nan, nan, nan], [0.0450153, 0.1223642, -0.1673795]]
    for _, row in ipairs { { 1, inf, 2 }, { 1, nan, 2 }, { inf, inf, 1 }, { -inf, -inf, -inf } } do
      for _, o in ipairs { {}, { label_smoothing = 0.1 } } do
        local x = f32({ row, { 0, 1, 2 } }):requires_grad_()
        local l = F.cross_entropy(x, ids { 1, 3 }, o)
        assert.is_true(l:item() ~= l:item())
        l:backward()
        nan_row(x.grad, 1)
        local want = o.label_smoothing and { 0.0283486, 0.1056976, -0.1340462 } or { 0.0450153, 0.1223642, -0.1673795 }
        U.near(x.grad:select(1, 2), f32(want), 1e-6)
      end
      -- probabilities as the target: the same NaN row
      local x = f32({ row, { 0, 1, 2 } }):requires_grad_()
      F.cross_entropy(x, f32 { { 0.2, 0.3, 0.5 }, { 0.1, 0.1, 0.8 } }):backward()
      nan_row(x.grad, 1)
      U.near(x.grad:select(1, 2), f32 { -0.0049847, 0.0723642, -0.0673795 }, 1e-6)
    end
    -- float64 and reduction "none": loss [nan, 0.4076059]
    local x = T.tensor({ { 1, inf, 2 }, { 0, 1, 2 } }, { dtype = T.float64 }):requires_grad_()
    local l = F.cross_entropy(x, ids { 1, 3 }, { reduction = "none" })
    assert.is_true(l[1]:item() ~= l[1]:item())
    l:sum():backward()
    nan_row(x.grad, 1)
  end)

  it("an ignored row of non-finite logits still has a NaN gradient through log_softmax", function()
    -- torch: t = [-100, 2]: loss 0.4076059 (the row is ignored), but
    -- x.grad[0] = [nan, nan, nan] (0 - exp(nan) * 0); a finite ignored row: zeros
    for _, row in ipairs { { 1, inf, 2 }, { 1, nan, 2 }, { -inf, -inf, -inf } } do
      local x = f32({ row, { 0, 1, 2 } }):requires_grad_()
      local l = F.cross_entropy(x, ids { -100, 3 })
      assert.is_true(math.abs(l:item() - 0.4076059) < 1e-6)
      l:backward()
      nan_row(x.grad, 1)
      U.near(x.grad:select(1, 2), f32 { 0.0900306, 0.2447285, -0.3347590 }, 1e-6)
    end
    local x = f32({ { 1, -inf, 2 }, { 0, 1, 2 } }):requires_grad_()
    F.cross_entropy(x, ids { -100, 3 }):backward()
    assert.is_true(T.equal(x.grad:select(1, 1), T.zeros(3)))
    -- a weight of 0 for the target of a NaN row: loss NaN (0 * NaN), as torch
    local w = f32 { 0, 1, 1 }
    x = f32({ { 1, nan, 2 }, { 0, 1, 2 } })
    local l = F.cross_entropy(x, ids { 1, 3 }, { weight = w, reduction = "none" })
    assert.is_true(l[1]:item() ~= l[1]:item())
  end)
end)

describe("difftest round 5 (nn): gaussian_nll_loss var shapes", function()
  it("a 0-d input takes a var of shape [1] (torch compares size()[:-1])", function()
    -- torch: F.gaussian_nll_loss(tensor(1.), tensor(2.), tensor([0.5])) -> 0.6534264 (0-d);
    -- reduction='none' -> shape (1,)
    local l = F.gaussian_nll_loss(f32(1), f32(2), f32 { 0.5 })
    assert.equal("", shape(l))
    assert.is_true(math.abs(l:item() - 0.6534264) < 1e-6)
    l = F.gaussian_nll_loss(f32(1), f32(2), f32 { 0.5 }, { reduction = "none" })
    assert.equal("1", shape(l))
    -- torch: var (2,) or (1, 1) for a 0-d input -> "var is of incorrect size"
    err(function() F.gaussian_nll_loss(f32(1), f32(2), f32 { 0.5, 2 }) end, "var is of incorrect size")
    err(function() F.gaussian_nll_loss(f32(1), f32(2), f32 { { 0.5 } }) end, "var is of incorrect size")
    -- the other small shapes, as torch: var one dim short, var last dim 1
    assert.equal("2,2", shape(F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } },
      f32 { 0.5, 1 }, { reduction = "none" })))
    assert.equal("2,2", shape(F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } },
      f32 { { 0.5 }, { 1 } }, { reduction = "none" })))
    assert.equal("2", shape(F.gaussian_nll_loss(f32 { 1, 3 }, f32 { 2, 2 }, f32(0.5), { reduction = "none" })))
    assert.equal("2", shape(F.gaussian_nll_loss(f32 { 1, 3 }, f32 { 2, 2 }, f32 { 0.5 }, { reduction = "none" })))
    -- torch: var (1, 2) or (1,) for a (2, 2) input, (1, 1) for a (2,) one -> refused
    err(function() F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } }, f32 { { 0.5, 1 } }) end,
      "var is of incorrect size")
    err(function() F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } }, f32 { 0.5 }) end,
      "var is of incorrect size")
    err(function() F.gaussian_nll_loss(f32 { 1, 3 }, f32 { 2, 2 }, f32 { { 0.5 } }) end, "var is of incorrect size")
  end)
end)

describe("difftest round 5 (nn): grid_sample with NaN and +-inf in the grid", function()
  local G4 = { { nan, 0 }, { 0, nan }, { inf, 0 }, { -inf, 0 }, { 0, inf }, { 0, -inf }, { nan, nan }, { inf, inf }, { 0.5, 0.2 } }
  -- torch 1.13 (CPU), x = arange(1, 13).reshape(1, 1, 3, 4), the grid above, either align_corners
  -- (the last point is finite: its value depends on align_corners)
  local want4 = {
    bilinear = { zeros = { nan, nan, nan, nan, nan, nan, nan, nan },
                 border = { 5, 2.5, 8, 5, 10.5, 2.5, 1, 12 },
                 reflection = { 5, 2.5, 5, 5, 2.5, 2.5, 1, 1 } },
    nearest = { zeros = { 0, 0, 0, 0, 0, 0, 0, 0 },
                border = { 5, 3, 8, 5, 11, 3, 1, 12 },
                reflection = { 5, 3, 5, 5, 3, 3, 1, 1 } },
    bicubic = { zeros = { nan, nan, nan, nan, nan, nan, nan, nan },
                border = { nan, nan, nan, nan, nan, nan, nan, nan },
                reflection = { nan, nan, nan, nan, nan, nan, nan, nan } },
  }
  local function check(got, want)
    for i, w in ipairs(want) do
      local g = got[i]
      if w ~= w then assert.is_true(g ~= g, ("at %d: expected NaN, got %s"):format(i, tostring(g)))
      else assert.is_true(math.abs(g - w) < 1e-5, ("at %d: expected %s, got %s"):format(i, tostring(w), tostring(g))) end
    end
  end

  it("4-d input: torch's values for every mode, padding and align_corners, float32 and float64", function()
    for _, dt in ipairs { T.float32, T.float64 } do
      local x = T.arange(1, 13, { dtype = dt }):reshape(1, 1, 3, 4)
      local g = T.tensor({ { G4 } }, { dtype = dt })
      for mode, pads in pairs(want4) do
        for pm, want in pairs(pads) do
          for _, ac in ipairs { false, true } do
            local y = F.grid_sample(x, g, { mode = mode, padding_mode = pm, align_corners = ac })
            check(y:reshape(-1):tolist(), want)
          end
        end
      end
    end
    -- the gradient through bilinear zeros: torch's grid.grad [0, nan, nan, 0, 4, 12], input grad sum 2
    local x = T.arange(1, 25, { dtype = T.float32 }):reshape(1, 2, 3, 4):requires_grad_()
    local g = f32({ { { { nan, 0 }, { 0, inf }, { 0.5, 0.2 } } } }):requires_grad_()
    F.grid_sample(x, g):sum():backward()
    check(g.grad:reshape(-1):tolist(), { 0, nan, nan, 0, 4, 12 })
    assert.is_true(math.abs(x.grad:sum():item() - 2) < 1e-5)
  end)

  it("5-d input: NaN clips to size - 1, zeros padding gives 0, nearest rounds half away from zero", function()
    local x = T.arange(1, 25, { dtype = T.float32 }):reshape(1, 1, 2, 3, 4)
    local g = f32 { { { { { nan, 0, 0 }, { 0, nan, 0 }, { 0, 0, nan }, { inf, 0, 0 }, { -inf, 0, 0 }, { 0, inf, 0 },
      { 0, -inf, 0 }, { 0, 0, inf }, { 0, 0, -inf } } } } }
    -- torch 1.13, either align_corners
    local want = {
      bilinear = { zeros = { 0, 0, 0, 0, 0, 0, 0, 0, 0 },
                   border = { 14, 16.5, 18.5, 14, 11, 16.5, 8.5, 18.5, 6.5 },
                   reflection = { 14, 16.5, 18.5, 14, 14, 16.5, 16.5, 18.5, 18.5 } },
      nearest = { zeros = { 0, 0, 0, 0, 0, 0, 0, 0, 0 },
                  border = { 20, 23, 19, 20, 17, 23, 15, 19, 7 },
                  reflection = { 20, 23, 19, 20, 20, 23, 23, 19, 19 } },
    }
    for mode, pads in pairs(want) do
      for pm, w in pairs(pads) do
        for _, ac in ipairs { false, true } do
          check(F.grid_sample(x, g, { mode = mode, padding_mode = pm, align_corners = ac }):reshape(-1):tolist(), w)
        end
      end
    end
    -- torch 1.13's 3-d nearest is std::round: x coordinates -0.5, 0.5, 1.5, 2.5, 3.5 (align_corners
    -- false, y -0.125, z 0) -> [0, 2, 3, 4, 0] (half to even would give [1, 1, 3, 3, 4])
    local gx = {}
    for i, ix in ipairs { -0.5, 0.5, 1.5, 2.5, 3.5 } do gx[i] = { (2 * ix + 1) / 4 - 1, -0.75, -0.5 } end
    check(F.grid_sample(x, f32 { { { gx } } }, { mode = "nearest" }):reshape(-1):tolist(), { 0, 2, 3, 4, 0 })
  end)
end)

describe("difftest round 5 (nn): missing errors (padding, empty pools, lp_pool norm 0, empty conv weights)", function()
  local x1 = T.arange(0, 3, { dtype = T.float32 }):reshape(1, 1, 3)
  local x2 = T.arange(0, 9, { dtype = T.float32 }):reshape(1, 1, 3, 3)
  local x3 = T.arange(0, 27, { dtype = T.float32 }):reshape(1, 1, 3, 3, 3)

  it("reflect and replicate padding refuse an output whose padded dims are all below 1", function()
    for _, mode in ipairs { "reflect", "replicate" } do
      -- torch: F.pad(x1, (-3, 0), mode) -> "input (W: 3) is too small. Calculated output W: 0"
      err(function() F.pad(x1, { -3, 0 }, mode) end, "input (W: 3) is too small. Calculated output W: 0")
      err(function() F.pad(x1, { -2, -1 }, mode) end, "is too small")
      err(function() F.pad(x1[1], { -3, 0 }, mode) end, "is too small")
      err(function() F.pad(x2, { -3, 0, -3, 0 }, mode) end, "input (H: 3, W: 3) is too small. Calculated output H: 0 W: 0")
      err(function() F.pad(x3, { -3, 0, -3, 0, -3, 0 }, mode) end, "is too small")
      -- one padded dim of 0 is an empty result, as torch: (1, 1, 3, 0), (1, 1, 3, 0, 0)
      assert.equal("1,1,3,0", shape(F.pad(x2, { -3, 0, 0, 0 }, mode)))
      assert.equal("1,1,3,0,0", shape(F.pad(x3, { -3, 0, -3, 0, 0, 0 }, mode)))
      assert.equal("1,1,1", shape(F.pad(x1, { -2, 0 }, mode)))
    end
    -- reflect: a pad of the input's size or more, as before
    err(function() F.pad(x1, { 3, 0 }, "reflect") end, "padding size should be less than the corresponding input dimension")
    -- circular (-3, 1) on 3: torch reads outside the input; refused here. (-3, 0): empty, as torch
    err(function() F.pad(x1, { -3, 1 }, "circular") end, "crops the whole dimension")
    assert.equal("1,1,0", shape(F.pad(x1, { -3, 0 }, "circular")))
  end)

  it("reflect and replicate padding refuse empty non-batch dims as torch", function()
    -- torch: replicate wants every dim but a batch non-zero; reflect 1-d/2-d every dim but the first
    err(function() F.pad(T.zeros(1, 0, 3), { 1, 1 }, "replicate") end, "non-zero")
    err(function() F.pad(T.zeros(0, 3), { 1, 1 }, "replicate") end, "non-zero dimensions")
    err(function() F.pad(T.zeros(1, 0, 3), { 1, 1 }, "reflect") end, "non-zero dimensions after the first")
    err(function() F.pad(T.zeros(1, 0, 3, 3, 3), { 1, 1, 1, 1, 1, 1 }, "reflect") end, "non-zero")
    err(function() F.pad(T.zeros(0, 3, 3, 3), { 1, 1, 1, 1, 1, 1 }, "reflect") end, "non-zero dimensions")
    -- torch accepts: a 0 batch, the 0 channels of an unbatched 1-d/2-d reflect, circular's 0 channels
    assert.equal("0,1,5", shape(F.pad(T.zeros(0, 1, 3), { 1, 1 }, "replicate")))
    assert.equal("0,5", shape(F.pad(T.zeros(0, 3), { 1, 1 }, "reflect")))
    assert.equal("0,5,5", shape(F.pad(T.zeros(0, 3, 3), { 1, 1, 1, 1 }, "reflect")))
    assert.equal("1,0,5", shape(F.pad(T.zeros(1, 0, 3), { 1, 1 }, "circular")))
  end)

  it("pools refuse empty non-batch dims, take a 0 batch (torch 1.13)", function()
    -- torch: F.max_pool2d(zeros(1, 0, 4, 4), 2) -> "Expected 3D or 4D (batch mode) tensor with
    -- optional 0 dim batch size for input"; zeros(0, 1, 4, 4) -> (0, 1, 2, 2)
    local empty_c, empty_b = T.zeros(1, 0, 4, 4), T.zeros(0, 1, 4, 4)
    for _, f in ipairs {
      function(x) return F.max_pool2d(x, 2) end, function(x) return F.avg_pool2d(x, 2) end,
      function(x) return F.lp_pool2d(x, 2, 2) end, function(x) return F.adaptive_max_pool2d(x, 2) end,
    } do
      err(function() f(empty_c) end, "dimension 2 is empty")
      assert.equal("0,1,2,2", shape(f(empty_b)))
    end
    err(function() F.max_pool2d(T.zeros(0, 4, 4), 2) end, "dimension 1 is empty")
    err(function() F.max_pool1d(T.zeros(1, 0, 4), 2) end, "max_pool1d: expected a 2-d or 3-d")
    err(function() F.avg_pool1d(T.zeros(0, 4), 2) end, "avg_pool1d: expected a 2-d or 3-d")
    err(function() F.max_pool3d(T.zeros(1, 0, 4, 4, 4), 2) end, "max_pool3d: expected a 4-d or 5-d")
    err(function() F.avg_pool3d(T.zeros(0, 4, 4, 4), 2) end, "avg_pool3d: expected a 4-d or 5-d")
    err(function() F.adaptive_max_pool1d(T.zeros(1, 0, 4), 2) end, "dimension 2 is empty")
    err(function() F.adaptive_avg_pool3d(T.zeros(1, 0, 4, 4, 4), 2) end, "dimension 2 being empty")
    -- torch accepts: adaptive_avg over 0 channels, the adaptive pools' unbatched 0 channels
    assert.equal("1,0,2,2", shape(F.adaptive_avg_pool2d(empty_c, 2)))
    assert.equal("0,2,2", shape(F.adaptive_max_pool2d(T.zeros(0, 4, 4), 2)))
    assert.equal("0,2,2,2", shape(F.adaptive_max_pool3d(T.zeros(0, 4, 4, 4), 2)))
    -- the message names the input's sizes, not an intermediate's
    err(function() F.adaptive_avg_pool2d(T.zeros(1, 1, 0, 4), 2) end, "sizes [1, 1, 0, 4] with dimension 3 being empty")
  end)

  it("lp_pool refuses norm_type 0; conv refuses a weight of 0 out channels", function()
    -- torch: F.lp_pool2d(x, 0, 2) -> ZeroDivisionError: float division by zero
    local x = f32 { { { { 1, 2 }, { 3, -4 } } } }
    err(function() F.lp_pool2d(x, 0, 2) end, "lp_pool2d: norm_type must not be 0")
    err(function() F.lp_pool1d(x[1], 0, 2) end, "lp_pool1d: norm_type must not be 0")
    assert.is_true(math.abs(F.lp_pool2d(x, -1, 2):item() - 0.6315789) < 1e-6) -- torch: 0.6315789
    -- torch: "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size [0, 3, 3, 3]"
    local xi = T.randn(2, 3, 5, 5)
    err(function() F.conv2d(xi, T.zeros(0, 3, 3, 3)) end, "expected weight to be at least 1 at dimension 1")
    err(function() F.conv2d(xi, T.zeros(0, 1, 3, 3), nil, { groups = 3 }) end, "expected weight to be at least 3")
    err(function() F.conv1d(T.randn(2, 3, 5), T.zeros(0, 3, 3)) end, "weight of size [0, 3, 3]")
    err(function() F.conv3d(T.randn(2, 3, 5, 5, 5), T.zeros(0, 3, 3, 3, 3)) end, "weight of size [0, 3, 3, 3, 3]")
    -- torch: "non-empty 2D or 4D weight tensor expected, but got: [3, 0, 3, 3]"
    err(function() F.conv_transpose2d(xi, T.zeros(3, 0, 3, 3)) end, "expected a non-empty weight")
  end)
end)

describe("difftest round 5 (nn): avg_pool divisor_override", function()
  it("takes a negative divisor, refuses 0 and a fraction, naming the op and value", function()
    local x = T.arange(0, 16, { dtype = T.float64 }):reshape(1, 1, 4, 4)
    -- torch: F.avg_pool2d(x, 2, divisor_override=-2) -> [-5, -9, -21, -25]
    U.near(F.avg_pool2d(x, 2, { divisor_override = -2 }):reshape(-1), T.tensor({ -5, -9, -21, -25 }, { dtype = T.float64 }), 0)
    U.near(F.avg_pool3d(x:unsqueeze(1), { 1, 2, 2 }, { divisor_override = -2 }):reshape(-1),
      T.tensor({ -5, -9, -21, -25 }, { dtype = T.float64 }), 0)
    -- the gradient: torch's [-2, -3, -3, -2, -3, -4.5, ...] for a 3x3 window, stride 1, padding 1, divisor -2
    local w = x:clone():requires_grad_()
    F.avg_pool2d(w, 3, { stride = 1, padding = 1, divisor_override = -2 }):sum():backward()
    U.near(w.grad:reshape(-1), T.tensor({ -2, -3, -3, -2, -3, -4.5, -4.5, -3, -3, -4.5, -4.5, -3, -2, -3, -3, -2 },
      { dtype = T.float64 }), 0)
    -- torch: "divisor must be not zero"; a float: "argument 'divisor_override' must be int, not float"
    err(function() F.avg_pool2d(x, 2, { divisor_override = 0 }) end, "avg_pool2d: divisor must be not zero, got 0")
    err(function() T.nn.AvgPool2d(2, { divisor_override = 0 }):forward(x) end, "avg_pool2d: divisor must be not zero")
    err(function() F.avg_pool2d(x, 2, { divisor_override = 0.5 }) end, "avg_pool2d: expected an integer for divisor_override, got 0.5")
    err(function() F.avg_pool3d(x:unsqueeze(1), 1, { divisor_override = 0.5 }) end,
      "avg_pool3d: expected an integer for divisor_override, got 0.5")
  end)
end)

describe("difftest round 5 (nn): bfloat16 pools and conv_transpose", function()
  -- values exact in bfloat16: ((i * 37) % 101) / 7 - 7
  local function mk(...)
    local shape, n = { ... }, 1
    for _, s in ipairs(shape) do n = n * s end
    local i = T.arange(0, n, { dtype = T.int64 })
    return (((i * 37) % 101):float() / 7 - 7):reshape(shape):to(T.bfloat16)
  end
  local function same_bits(a, b, what)
    assert.equal(T.bfloat16, a.dtype, what)
    local av, bv = a:float():reshape(-1):tolist(), b:float():reshape(-1):tolist()
    assert.equal(#bv, #av, what)
    for i = 1, #av do
      assert.is_true(av[i] == bv[i] or (av[i] ~= av[i] and bv[i] ~= bv[i]),
        ("%s at %d: %s vs %s"):format(what, i, tostring(av[i]), tostring(bv[i])))
    end
  end

  it("computes in float32 and rounds once, as torch 1.13's bfloat16 CPU kernels", function()
    local x, x1 = mk(2, 3, 7, 7), mk(2, 3, 9)
    local w, w1 = mk(3, 2, 3, 3) / 10, mk(3, 2, 3) / 10
    -- torch: F.adaptive_avg_pool2d(x[:1, :2], (3, 4)) in bfloat16 starts
    -- [-1.0234375, 0.49609375, -0.158203125, 1.3515625, -1.578125, 0.74609375];
    -- F.avg_pool2d(x, 3, stride=2, padding=1): [-0.1259765625, 0.2890625, -0.6796875, ...]
    local xs = mk(1, 2, 7, 7)
    U.near(F.adaptive_avg_pool2d(xs, { 3, 4 }):float():reshape(-1):narrow(1, 1, 6),
      f32 { -1.0234375, 0.49609375, -0.158203125, 1.3515625, -1.578125, 0.74609375 }, 0)
    U.near(F.avg_pool2d(xs, 3, { stride = 2, padding = 1 }):float():reshape(-1):narrow(1, 1, 3),
      f32 { -0.1259765625, 0.2890625, -0.6796875 }, 0)
    -- every op: the float32 result rounded (torch's bits for each, checked against torch 1.13)
    local cases = {
      { "max_pool2d", function(t) return F.max_pool2d(t, 3, { stride = 2, padding = 1 }) end, x },
      { "avg_pool2d", function(t) return F.avg_pool2d(t, 3, { stride = 2, padding = 1, count_include_pad = false }) end, x },
      { "adaptive_avg_pool2d", function(t) return F.adaptive_avg_pool2d(t, { 3, 4 }) end, x },
      { "adaptive_max_pool2d", function(t) return F.adaptive_max_pool2d(t, { 3, 4 }) end, x },
      { "max_pool1d", function(t) return F.max_pool1d(t, 3, 2) end, x1 },
      { "avg_pool1d", function(t) return F.avg_pool1d(t, 3, 2) end, x1 },
      { "adaptive_avg_pool1d", function(t) return F.adaptive_avg_pool1d(t, 4) end, x1 },
      { "conv_transpose2d", function(t) return F.conv_transpose2d(t, t.dtype == T.bfloat16 and w or w:float(), nil,
        { stride = 2, padding = 1 }) end, x },
      { "conv_transpose1d", function(t) return F.conv_transpose1d(t, t.dtype == T.bfloat16 and w1 or w1:float(), nil,
        { stride = 2 }) end, x1 },
      { "max_pool3d", function(t) return F.max_pool3d(t, 2) end, mk(1, 2, 4, 5, 5) },
      { "avg_pool3d", function(t) return F.avg_pool3d(t, 2) end, mk(1, 2, 4, 5, 5) },
    }
    for _, c in ipairs(cases) do
      same_bits(c[2](c[3]), c[2](c[3]:float()):to(T.bfloat16), c[1])
    end
    -- lp_pool is torch's chain of bfloat16 ops (pow, avg_pool, ...): shape and dtype
    assert.equal(T.bfloat16, F.lp_pool2d(x, 2, 2).dtype)
    assert.equal("2,3,4", shape(F.lp_pool1d(x1, 3, 2)))
    -- max_pool2d's indices, and gradients in bfloat16
    local _, idx = F.max_pool2d(x, 2, { return_indices = true })
    local _, idx32 = F.max_pool2d(x:float(), 2, { return_indices = true })
    assert.is_true(T.equal(idx, idx32))
    local xg = x:clone():requires_grad_()
    F.avg_pool2d(xg, 2):sum():backward()
    assert.equal(T.bfloat16, xg.grad.dtype)
  end)

  it("refuses float16 on the CPU where torch 1.13 does", function()
    -- torch: "max_pool2d" not implemented for 'Half'; "slow_conv_transpose2d_out_cpu" not implemented for 'Half'
    local h = T.randn(1, 2, 5, 5):to(T.float16)
    local msg = "float16 input is not supported on the CPU"
    err(function() F.max_pool2d(h, 2) end, "max_pool2d: " .. msg)
    err(function() F.avg_pool2d(h, 2) end, "avg_pool2d: " .. msg)
    err(function() F.lp_pool2d(h, 2, 2) end, "lp_pool2d: " .. msg)
    err(function() F.max_pool1d(h[1], 2) end, "max_pool1d: " .. msg)
    err(function() F.conv_transpose2d(h, T.randn(2, 3, 3, 3):to(T.float16)) end, "conv_transpose2d: " .. msg)
  end)
end)

describe("difftest round 5 (nn): 3-d layers on meta tensors", function()
  it("max_pool3d, avg_pool3d, conv3d and conv_transpose3d give the output shape on meta, as max_pool2d", function()
    -- torch: F.max_pool3d(torch.empty(2, 3, 4, 8, 8, device='meta'), 2) -> (2, 3, 2, 4, 4) on meta
    local m3 = T.empty({ 2, 3, 4, 8, 8 }, { device = "meta" })
    local y, i = F.max_pool3d(m3, 2, { return_indices = true })
    assert.equal("2,3,2,4,4", shape(y)); assert.equal("meta", y.device.type)
    assert.equal("2,3,2,4,4", shape(i)); assert.equal(T.int64, i.dtype)
    assert.equal("2,3,3,5,5", shape(F.max_pool3d(m3, 3, { stride = 2, padding = 1, ceil_mode = true })))
    assert.equal("2,3,2,4,4", shape(F.avg_pool3d(m3, 2)))
    assert.equal("2,3,2,4,4", shape(T.nn.MaxPool3d(2):forward(m3)))
    assert.equal("2,5,4,8,8", shape(F.conv3d(m3, T.empty({ 5, 3, 3, 3, 3 }, { device = "meta" }), nil, { padding = 1 })))
    assert.equal("2,5,6,10,10", shape(F.conv_transpose3d(m3, T.empty({ 3, 5, 3, 3, 3 }, { device = "meta" }))))
    local g = T.empty({ 2, 3, 4, 8, 8 }, { device = "meta" }):requires_grad_()
    F.max_pool3d(g, 2):sum():backward()
    assert.equal("2,3,4,8,8", shape(g.grad))
  end)
end)
