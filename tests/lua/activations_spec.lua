-- The activations of issue 18 item 4 (lua/ember/nn/activations.lua):
-- values and gradients against PyTorch 1.13 (tests/fixtures/
-- activations_cases.lua from gen_activations.py; inputs include the kinks
-- and large values), gradcheck in float64, the modules, inplace, options.
local T = require "ember"
local F = T.nn.functional
local nn = T.nn
local cases = dofile("tests/fixtures/activations_cases.lua")

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end

local TOL = { float32 = 2e-6, float64 = 1e-13 }
local function close(got, rec, what, tol_scale)
  local want = tensor(rec)
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  local d = (got:detach() - want):abs():max():item()
  local tol = TOL[rec.dtype] * (tol_scale or 1) * math.max(1, want:abs():max():item())
  assert(d <= tol, string.format("%s: max difference %g (tolerance %g)", what, d, tol))
end

local function call(c, x, w)
  local o = c.opts or {}
  if c.op == "prelu" then return F.prelu(x, w) end
  if c.op == "softplus" then return F.softplus(x, o.beta or 1, o.threshold or 20) end
  if next(o) == nil then return F[c.op](x) end
  return F[c.op](x, o)
end

describe("activations against PyTorch 1.13", function()
  for i, c in ipairs(cases) do
    it(string.format("%s #%d %s", c.op, i, c.out.dtype), function()
      local ins = {}
      for k, rec in ipairs(c.x) do ins[k] = tensor(rec):requires_grad_() end
      local y = call(c, ins[1], ins[2])
      close(y, c.out, "output")
      local gs = T.autograd.grad({ y }, ins, { grad_outputs = { tensor(c.v) } })
      -- PyTorch 1.13's hardsigmoid backward multiplies by the float32
      -- constant 1/6 also in float64 (0.16666667163...): ember's is 1/6
      local scale = (c.op == "hardsigmoid" and c.out.dtype == "float64") and 1e6 or 1
      for k = 1, #ins do close(gs[k], c.g[k], "gradient " .. k, scale) end
    end)
  end
end)

describe("activations: gradcheck (float64)", function()
  local function r(...) return (T.randn(...):double() * 2):requires_grad_() end
  for _, name in ipairs { "elu", "selu", "celu", "relu6", "hardtanh", "hardswish", "hardsigmoid", "mish",
                          "softsign", "logsigmoid", "tanhshrink", "glu" } do
    it(name, function()
      assert.is_true(T.autograd.gradcheck(function(x) return F[name](x) end, { r(3, 4) }))
    end)
  end
  it("prelu (input and weight)", function()
    assert.is_true(T.autograd.gradcheck(F.prelu, { r(2, 3, 4), r(3) }))
  end)
  it("twice differentiable (elu, mish, logsigmoid)", function()
    for _, name in ipairs { "elu", "mish", "logsigmoid" } do
      local x = r(5)
      local g = T.autograd.grad(F[name](x):sum(), x, { create_graph = true })
      local h = T.autograd.grad(g:sum(), x)
      assert.is_true(T.is_tensor(h), name)
    end
  end)
end)

describe("activation modules", function()
  it("print as PyTorch's and forward to F", function()
    local x = T.randn(2, 4)
    local cases = {
      { nn.ELU(), "ELU(alpha=1.0)", F.elu(x) },
      { nn.ELU { alpha = 0.5 }, "ELU(alpha=0.5)", F.elu(x, 0.5) },
      { nn.SELU(), "SELU()", F.selu(x) },
      { nn.CELU(2), "CELU(alpha=2.0)", F.celu(x, 2) },
      { nn.ReLU6(), "ReLU6()", F.relu6(x) },
      { nn.Hardtanh(-2, 2), "Hardtanh(min_val=-2.0, max_val=2.0)", F.hardtanh(x, -2, 2) },
      { nn.Hardswish(), "Hardswish()", F.hardswish(x) },
      { nn.Hardsigmoid(), "Hardsigmoid()", F.hardsigmoid(x) },
      { nn.Mish(), "Mish()", F.mish(x) },
      { nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)", x:softplus(2, 10) },
      { nn.Softsign(), "Softsign()", F.softsign(x) },
      { nn.LogSigmoid(), "LogSigmoid()", F.logsigmoid(x) },
      { nn.GLU(), "GLU(dim=-1)", F.glu(x) },
      { nn.Tanhshrink(), "Tanhshrink()", F.tanhshrink(x) },
    }
    for _, c in ipairs(cases) do
      assert.equal(c[2], tostring(c[1]))
      assert.is_true(T.equal(c[1](x), c[3]), c[2])
    end
  end)

  it("PReLU has PyTorch's parameter name and layout", function()
    local m = nn.PReLU(3)
    assert.equal("PReLU(num_parameters=3)", tostring(m))
    local sd = m:state_dict()
    assert.same({ 3 }, sd.weight.shape:totable())
    assert.same({ 0.25, 0.25, 0.25 }, sd.weight:tolist())
    local y = m(T.tensor({ { -4, 1, -2 } }, { dtype = T.float32 }))
    assert.same({ { -1, 1, -0.5 } }, y:tolist())
    y:sum():backward()
    assert.same({ -4, 0, -2 }, m.weight.grad:tolist())
    assert.has_error(function() F.prelu(T.ones(2, 4), T.ones(3)) end,
      "prelu: mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 4")
  end)

  it("inplace writes the input and keeps the graph valid", function()
    local x = T.tensor({ -1, 2 }, { dtype = T.float32 })
    local y = F.elu(x, { inplace = true })
    assert.equal(x, y)
    assert.is_true(T.allclose(x, T.tensor { math.exp(-1) - 1, 2.5 } - T.tensor { 0, 0.5 }))
    local w = T.tensor({ -1, 0.5, 4 }, { requires_grad = true })
    local h = w * 1
    nn.ReLU6 { inplace = true }(h)
    h:sum():backward()
    assert.same({ 0, 1, 1 }, (w.grad * 1):tolist())
    assert.same({ 0, 0.5, 4 }, h:tolist())
  end)

  it("refuses unknown options and bad input", function()
    assert.has_error(function() F.elu(T.ones(2), { alpha = 1, beta = 2 }) end, "elu: unknown option 'beta' (expected one of: alpha, inplace)")
    assert.has_error(function() nn.Hardtanh { min = 1 } end, "Hardtanh: unknown option 'min'")
    assert.has_error(function() F.glu(T.ones(2, 3)) end, "glu: halving dimension must be even, but dimension -1 is size 3")
    assert.has_error(function() F.hardtanh(T.ones(2), 2, 1) end,
      "hardtanh: min_val cannot be greater than max_val, got 2 > 1")
    assert.has_error(function() F.selu(T.ones(2, { dtype = T.int64 })) end,
      "selu: expected a floating point input, got ember.int64")
  end)
end)
