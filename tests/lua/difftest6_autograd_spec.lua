-- Differences from PyTorch 1.13 found by the sixth round of differential
-- tests, in autograd: second-order gradients, T.autograd.functional, and
-- gradients at special points. Each case gives torch's value or error.
-- Positions are 1-based in ember (dims, indices, input numbers).
local T = require "ember"
local U = require "specutil"
local err = U.err
local AF = T.autograd.functional

local function f64(v) return T.tensor(v, { dtype = T.float64 }) end
local function near(got, want, tol)
  U.near(got, f64(want):reshape(got.shape), tol or 1e-12)
end

describe("difftest round 6: T.autograd.functional (torch 1.13)", function()
  local x0 = { 0.5, -1.0, 2.0 }
  local function sc(u) return T.pow(u, 3):sum() * u:prod() end

  it("with create_graph the results stay differentiable w.r.t. the caller's inputs", function()
    -- torch: J = jacobian(lambda u: sin(u) * u.sum(), x, create_graph=True);
    -- J.sum().backward() -> x.grad [2.915347408976184, 3.8848514260276343, -1.6106486186685796]
    local x = f64(x0):requires_grad_()
    local J = AF.jacobian(function(u) return T.sin(u) * u:sum() end, x, { create_graph = true })
    J:sum():backward()
    near(x.grad, { 2.915347408976184, 3.8848514260276343, -1.6106486186685796 })
    -- hvp(f, x, [1, 2, 3], create_graph=True): hv [-82.5, 75.1875, -75.375],
    -- hv.sum().backward() -> x.grad [28.5, 246.0, -49.5]
    x.grad = nil
    local _, hv = AF.hvp(sc, x, f64 { 1, 2, 3 }, { create_graph = true })
    near(hv, { -82.5, 75.1875, -75.375 })
    hv:sum():backward()
    near(x.grad, { 28.5, 246.0, -49.5 })
    -- without create_graph the results need no grad
    local _, hv2 = AF.hvp(sc, x, f64 { 1, 2, 3 })
    assert.is_false(hv2.requires_grad)
  end)

  it("jvp: an input whose gradient is missing does not hide the next one's", function()
    -- torch: jvp(lambda a, b: b * 2, (X, Y), (ones(3), [1, 3]))[1] == [2, 6]
    local _, jv = AF.jvp(function(a, b) return b * 2 end, { f64(x0), f64 { 1, 2 } }, { T.ones(3):double(), f64 { 1, 3 } })
    near(jv, { 2, 6 })
    -- an output that needs no grad gets zeros: (tensor([2., 2., 2.]), tensor([0., 0.]))
    local _, jv2 = AF.jvp(function(a) return { a * 2, T.ones(2):double() } end, f64(x0), T.ones(3):double())
    near(jv2[1], { 2, 2, 2 })
    near(jv2[2], { 0, 0 })
    err(function()
      AF.jvp(function(a, b) return a * 2 end, { f64(x0), f64 { 1, 2 } }, { T.ones(3):double(), f64 { 1, 3 } },
        { strict = true })
    end, "jvp: the output of the function is independent of input 2 (strict = true)")
  end)

  it("v is checked against the shapes (torch: 'v has invalid size')", function()
    -- torch: v has invalid size: should be torch.Size([3]) but got torch.Size([1]).
    -- (ember broadcast it and returned H (1, 1, 1)^T v)
    err(function() AF.hvp(sc, f64(x0), f64 { 2 }) end, "hvp: v has invalid size: should be [3] but got [1]")
    err(function() AF.vhp(sc, f64(x0), f64 { 2 }) end, "vhp: v has invalid size")
    err(function() AF.vjp(function(u) return u * 2 end, f64(x0), f64 { 1, 2 }) end, "vjp: v has invalid size")
    -- torch: v is a tuple of invalid length: should be 2 but got 1.
    err(function() AF.jvp(function(a, b) return a end, { f64(x0), f64 { 1 } }, { T.ones(3):double() }) end,
      "jvp: v is a list of invalid length: should be 2 but got 1")
  end)

  it("strict mode refuses a linear function in hvp/vhp and outputs that need no grad", function()
    -- torch: While computing the hessian, found that the jacobian of the
    -- user-provided function with respect to input 0 is independent of the input.
    local lin = function(u) return u:sum() * 3 end
    err(function() AF.hvp(lin, f64(x0), T.ones(3):double(), { strict = true }) end,
      "hvp: the jacobian of the function with respect to input 1 is independent of the input (strict = true)")
    err(function() AF.vhp(lin, f64(x0), T.ones(3):double(), { strict = true }) end, "vhp: the jacobian")
    -- non-strict: zeros
    local _, z = AF.hvp(lin, f64(x0), T.ones(3):double())
    near(z, { 0, 0, 0 })
    -- torch: Output 0 of the user-provided function does not require gradients.
    err(function() AF.jacobian(function(u) return T.ones(2):double() end, f64(x0), { strict = true }) end,
      "jacobian: output 1 of the function does not require grad")
    -- torch: The jacobian of the user-provided function is independent of input 0.
    -- This is not allowed in strict mode when create_graph=True.
    err(function() AF.vjp(function(u) return u * 3 end, f64(x0), T.ones(3):double(), { strict = true, create_graph = true }) end,
      "vjp: the jacobian of the function is independent of input 1 (strict = true with create_graph = true)")
  end)
end)

describe("difftest round 6: gradients at special points (torch 1.13)", function()
  it("binary_cross_entropy: the target's gradient and torch's float EPSILON", function()
    local F = T.nn.functional
    -- torch: p=[0.2, 0.7, 0.5], t=[0, 1, 0.3], weight [1, 2, 3], sum:
    -- dL/dt = [1.3862943611198906, -1.694595720774407, 0.0]; its gradient
    -- w.r.t. p (create_graph) [-6.25, -9.523809523809524, -12.0]
    local p = f64 { 0.2, 0.7, 0.5 }:requires_grad_()
    local t = f64 { 0, 1, 0.3 }:requires_grad_()
    local gt = T.autograd.grad(F.binary_cross_entropy(p, t, { weight = f64 { 1, 2, 3 }, reduction = "sum" }), t,
      { create_graph = true })
    near(gt, { 1.3862943611198906, -1.694595720774407, 0.0 })
    near(T.autograd.grad(gt:sum(), p), { -6.25, -9.523809523809524, -12.0 }, 1e-12)
    -- p = 0 and 1 with t = 0.5: t.grad [inf, -inf]; p.grad +-1 / (2 * float(1e-12))
    -- = [-500000001997.9014, 500000001997.9014]
    local p2 = f64 { 0, 1 }:requires_grad_()
    local t2 = f64 { 0.5, 0.5 }:requires_grad_()
    F.binary_cross_entropy(p2, t2, { reduction = "sum" }):backward()
    assert.equal(math.huge, t2.grad[1]:item())
    assert.equal(-math.huge, t2.grad[2]:item())
    near(p2.grad, { -500000001997.9014, 500000001997.9014 }, 1e-3)
  end)

  it("clamp with tensor bounds: neither bound gets the gradient when min == max", function()
    -- torch: clamp([0.3, -1.5, 2], [-1, -1, 0], [1, -1, 1]).sum().backward():
    -- x [1, 0, 0], min [0, 0, 0], max [0, 0, 1]
    local x = f64 { 0.3, -1.5, 2 }:requires_grad_()
    local lo = f64 { -1, -1, 0 }:requires_grad_()
    local hi = f64 { 1, -1, 1 }:requires_grad_()
    T.clamp(x, lo, hi):sum():backward()
    near(x.grad, { 1, 0, 0 })
    near(lo.grad, { 0, 0, 0 })
    near(hi.grad, { 0, 0, 1 })
  end)

  it("renorm's gradient at a zero slice is finite", function()
    -- torch: renorm([[0, 0], [3, 4]], 2, 0, 1).sum().backward() ->
    -- [[1, 1], [0.03200000271999987, -0.023999995040000194]] (ember: NaN in row 1)
    local r = f64({ { 0, 0 }, { 3, 4 } }):requires_grad_()
    T.renorm(r, 2, 1, 1):sum():backward()
    near(r.grad, { 1, 1, 0.03200000271999987, -0.023999995040000194 }, 1e-15)
  end)
end)
