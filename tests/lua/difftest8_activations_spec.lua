-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests, activation functions (values, first and second derivatives at the
-- kinks, NaN, integer input, in-place forms), each with torch's value or
-- error. Dims are 1-based in ember: that shift is not a difference.
local T = require "ember"
local U = require "specutil"
local err = U.err
local F, nn = T.nn.functional, T.nn
local nan, inf = 0 / 0, 1 / 0

local function grads(f, vals, dtype)
  local x = T.tensor(vals, { dtype = dtype or T.float64 }):requires_grad_()
  local g = T.autograd.grad(f(x):sum(), { x }, { create_graph = true })[1]
  local gg = g.requires_grad and T.autograd.grad(g:sum(), { x }, { allow_unused = true })[1] or nil
  return U.flat(g), gg and U.flat(gg) or nil
end
local function same(want, got, tol)
  assert.equal(#want, #got)
  for i = 1, #want do
    if want[i] ~= want[i] then assert(got[i] ~= got[i], "expected NaN at " .. i)
    else assert(math.abs(got[i] - want[i]) <= (tol or 1e-12) * math.abs(want[i]),
      ("at %d: got %.17g, expected %.17g"):format(i, got[i], want[i])) end
  end
end

describe("difftest round 8: activations (torch 1.13)", function()
  it("elu, celu, selu: NaN takes the linear side, the second derivative at 0 is 0", function()
    -- torch: elu(x).sum().backward() at [nan, 0, -1] -> [1, 1, exp(-1)];
    -- the second derivative (elu_double_backward: x < 0 only) -> [0, 0, exp(-1)]
    local g, gg = grads(F.elu, { nan, 0, -1 })
    same({ 1, 1, math.exp(-1) }, g)
    same({ 0, 0, math.exp(-1) }, gg)
    g, gg = grads(function(x) return F.celu(x, 0.5) end, { nan, -0.0, -1 })
    -- torch (celu, alpha 0.5): [1, 1, exp(-2)] and [0, 0, 2 exp(-2)]
    same({ 1, 1, math.exp(-2) }, g)
    same({ 0, 0, 2 * math.exp(-2) }, gg)
    g, gg = grads(F.selu, { nan, 0 })
    -- torch: [1.0507009873554805, 1.7580993408473766], second [0, 0]
    same({ 1.0507009873554805, 1.7580993408473766 }, g)
    same({ 0, 0 }, gg)
  end)

  it("elu's gradient on the exp side is exp(x), also in float32 far below 0", function()
    -- torch (float32): elu(x) backward at -6 -> 0.0024787522852420807 (exp(-6));
    -- expm1's own result + 1 gave 0.0024787783622741699
    local x = T.tensor({ -6, -16 }, { dtype = T.float32 }):requires_grad_()
    F.elu(x):sum():backward()
    same({ 0.0024787522852420807, 1.1253517584464134e-07 }, U.flat(x.grad), 1e-6)
  end)

  it("hardtanh and relu6 pass the gradient at NaN, hardsigmoid does not", function()
    -- torch: hardtanh backward zeroes where x <= min or x >= max (NaN passes):
    -- hardtanh at [nan, 1, 0.5, -1] -> [1, 0, 1, 0]; relu6 at [nan, 6, 0] -> [1, 0, 0];
    -- hardsigmoid (x > -3 and x < 3) at [nan, 0] -> [0, 1/6]
    same({ 1, 0, 1, 0 }, (grads(F.hardtanh, { nan, 1, 0.5, -1 })))
    same({ 1, 0, 0 }, (grads(F.relu6, { nan, 6, 0 })))
    same({ 0, 1 / 6 }, (grads(F.hardsigmoid, { nan, 0 })))
  end)

  it("hardshrink and softshrink pass the gradient at NaN; softshrink keeps NaN", function()
    -- torch: hardshrink/softshrink backward at [nan, 0.5, 0.7] (lambda 0.5) -> [1, 0, 1]
    same({ 1, 0, 1 }, (grads(F.hardshrink, { nan, 0.5, 0.7 })))
    same({ 1, 0, 1 }, (grads(F.softshrink, { nan, 0.5, 0.7 })))
    -- torch 1.13's softshrink(nan) is 0 (later versions: nan); ember keeps NaN
    assert(F.softshrink(T.tensor { nan }):item() ~= F.softshrink(T.tensor { nan }):item())
    assert(F.hardshrink(T.tensor { nan }):item() ~= F.hardshrink(T.tensor { nan }):item())
  end)

  it("hardswish's second derivative is 0 at -3 and 3 (1/3 strictly inside)", function()
    -- torch: hardswish double backward at [-3, 3, 0] -> [0, 0, 1/3]
    local g, gg = grads(F.hardswish, { -3, 3, 0 })
    same({ -0.5, 1.5, 0.5 }, g)  -- torch float32: [-0.5, 1.5, 0.5] (float64 gives 1 at 3)
    same({ 0, 0, 1 / 3 }, gg)
  end)

  it("softplus's second derivative is 0 where beta x equals the threshold", function()
    -- torch: softplus_double_backward masks beta x < threshold
    -- softplus(x, 1, 20) at [20, 19] -> [0, sigmoid'(19) = 5.6027964176199655e-09]
    local _, gg = grads(function(x) return F.softplus(x, 1, 20) end, { 20, 19 })
    same({ 0, 5.6027964176199655e-09 }, gg, 1e-9)
    -- softplus(x, 2, 1) at [0.5, 0.25] -> [0, 2 * sigmoid'(0.5) = 0.470007424403189]
    _, gg = grads(function(x) return F.softplus(x, 2, 1) end, { 0.5, 0.25 })
    same({ 0, 0.470007424403189 }, gg, 1e-9)
  end)

  it("softsign, tanhshrink and threshold take integer input; leaky_relu and rrelu refuse it", function()
    -- torch: softsign(tensor([-3, 2])) -> float32 [-0.75, 0.6667]; tanhshrink -> [-2.0049, 1.0360]
    local s = F.softsign(T.tensor { -3, 2 })
    assert.equal(T.float32, s.dtype)
    same({ -0.75, 2 / 3 }, U.flat(s), 1e-6)
    same({ -3 - math.tanh(-3), 2 - math.tanh(2) }, U.flat(F.tanhshrink(T.tensor { -3, 2 })), 1e-6)
    err(function() return F.softsign(T.tensor({ 1, 0 }):to(T.bool)) end, "expected a floating point input")
    -- torch: threshold(tensor([-1, 0, 2, 5]), 1.5, -7) -> int64 [-7, -7, 2, 5]
    local t = F.threshold(T.tensor { -1, 0, 2, 5 }, 1.5, -7)
    assert.equal(T.int64, t.dtype)
    assert.are.same({ -7, -7, 2, 5 }, U.flat(t))
    -- torch: "value cannot be converted to type uint8_t without overflow"
    err(function() return F.threshold(T.tensor({ 1, 2 }):to(T.uint8), 1, -2) end, "cannot be converted")
    -- torch: "leaky_relu_cpu" not implemented for 'Long' (rrelu too)
    err(function() return F.leaky_relu(T.tensor { -3, 2 }) end, "leaky_relu: expected a floating point input")
    err(function() return F.rrelu(T.tensor { -3, 2 }) end, "rrelu: expected a floating point input")
  end)

  it("prelu refuses a 2-d weight and a weight of another dtype", function()
    -- torch: "prelu: Expected `weight` to be a scalar or 1D tensor, but got ndim = 2"
    err(function() return F.prelu(T.ones(2, 3), T.ones(1, 1)) end, "scalar or 1-d tensor")
    -- torch: "Found dtype Double but expected Float"
    err(function() return F.prelu(T.ones(2, 3), T.ones(1, { dtype = T.float64 })) end, "dtype")
  end)

  it("F.relu, F.silu, F.leaky_relu and nn.ReLU, nn.SiLU, nn.LeakyReLU take inplace", function()
    local x = T.tensor { -2, 0.5 }
    assert.equal(x, F.relu(x, true))
    assert.are.same({ 0, 0.5 }, U.flat(x))
    x = T.tensor { -2, 0.5 }
    F.leaky_relu(x, 0.25, true)
    assert.are.same({ -0.5, 0.5 }, U.flat(x))
    x = T.tensor { -2, 0.5 }
    F.leaky_relu(x, { negative_slope = 0.5, inplace = true })
    assert.are.same({ -1, 0.5 }, U.flat(x))
    x = T.tensor({ 1 }, { dtype = T.float64 })
    F.silu(x, { inplace = true })
    same({ 1 / (1 + math.exp(-1)) }, U.flat(x))
    local y = T.tensor { -1, 3 }
    assert.equal(y, nn.ReLU(true)(y))
    assert.are.same({ 0, 3 }, U.flat(y))
    y = T.tensor { -1, 3.5 }
    nn.LeakyReLU(0.5, true)(y)
    assert.are.same({ -0.5, 3.5 }, U.flat(y))
    y = T.tensor({ -1, 3 }, { dtype = T.float32 })
    nn.SiLU { inplace = true }(y)
    assert(math.abs(y[2]:item() - 3 / (1 + math.exp(-3))) < 1e-6)
    assert.equal("ReLU(inplace=true)", tostring(nn.ReLU(true)))
    assert.equal("LeakyReLU(negative_slope=0.5, inplace=true)", tostring(nn.LeakyReLU(0.5, true)))
    -- a non-leaf: the same gradient as out of place
    local w = T.tensor({ -1, 2 }, { dtype = T.float32, requires_grad = true })
    F.leaky_relu(w * 1, 0.1, true):sum():backward()
    same({ 0.1, 1 }, U.flat(w.grad), 1e-6)
    -- torch: "a leaf Variable that requires grad is being used in an in-place operation."
    err(function() return F.relu(T.ones(2, { requires_grad = true }), true) end, "a leaf tensor that requires grad")
    err(function() return F.silu(T.ones(2, { requires_grad = true }), true) end,
      "silu: a leaf tensor that requires grad")
    err(function() return nn.LeakyReLU(0.1, true)(T.ones(2, { requires_grad = true })) end,
      "leaky_relu: a leaf tensor that requires grad")
    err(function() return F.relu(T.ones(2), 1) end, "relu: expected a boolean for inplace")
    err(function() return nn.ReLU { inplce = true } end, "unknown option 'inplce'")
  end)

  it("gumbel_softmax with hard = true takes a 0-d input", function()
    -- torch: F.gumbel_softmax(torch.tensor(1.5), 1, True) -> tensor(1.)
    local y = F.gumbel_softmax(T.tensor(1.5), 1, true)
    assert.equal(0, y:dim())
    assert.equal(1, y:item())
  end)
end)
