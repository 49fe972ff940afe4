-- Complex autograd (issue 19; docs/autograd.md, "Complex"): gradients of the
-- complex ops against torch 1.13 (tests/fixtures/gen_complex_grad.py ->
-- complex_grad_cases.lua), gradcheck over the real views, accumulation,
-- second order, and the refusals PyTorch makes.
local T = require "ember"
local CASES = dofile("tests/fixtures/complex_grad_cases.lua")

local VALUE = { complex64 = "float32", complex128 = "float64" }
local function build(e)
  local t = T.tensor(e.v, { dtype = T[VALUE[e.dtype] or e.dtype] }):reshape(e.shape)
  if e.cplx then t = T.view_as_complex(t) end
  return t
end
local function close(got, e, what)
  assert.are.equal(e.dtype, tostring(got.dtype):gsub("^ember%.", ""), what .. ": dtype")
  local r = got:is_complex() and T.view_as_real(got) or got
  local g = r:contiguous():reshape(-1):tolist()
  assert.are.equal(#e.v, #g, what .. ": size")
  for i = 1, #e.v do
    if math.abs(g[i] - e.v[i]) > 1e-10 * math.max(1, math.abs(e.v[i])) then
      error(string.format("%s: value %d is %.17g, torch has %.17g", what, i, g[i], e.v[i]))
    end
  end
end

local OPS = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b * 2 end,
  mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
  neg = function(a) return -a end, conj = function(a) return a:conj() end,
  real = function(a) return a.real end, imag = function(a) return a.imag end,
  abs = function(a) return a:abs() end, angle = function(a) return T.angle(a) end,
  exp = function(a) return a:exp() end, log = function(a) return a:log() end,
  sqrt = function(a) return a:sqrt() end, sin = function(a) return a:sin() end,
  cos = function(a) return a:cos() end, tanh = function(a) return a:tanh() end,
  square = function(a) return a:square() end, reciprocal = function(a) return a:reciprocal() end,
  pow = function(a, b) return a:pow(b) end, pow3 = function(a) return a:pow(3) end,
  sum = function(a) return a:sum() end, sum_dim = function(a) return a:sum(2) end,
  mean = function(a) return a:mean(1) end,
  complex = function(a, b) return T.complex(a, b) end,
  view_as_real = function(a) return T.view_as_real(a) end,
  mul_real = function(a, b) return a * b end, bcast = function(a, b) return a * b end,
  to_complex = function(a)
    return a:to(T.complex128) * T.complex(T.zeros(1, { dtype = T.float64 }),
      T.full({ 1 }, 2, { dtype = T.float64 }))
  end,
  index = function(a) return a[{ { 2, -1 }, 1 }] end,
  t_reshape = function(a) return a:t():reshape(-1) end,
  cat_flip = function(a, b) return T.cat({ a, b:flip({ 1 }) }) end,
  chain = function(a) return (a * a:conj() + a:exp()):abs():sum() end,
  mm = function(a, b) return T.mm(a, b) end, mv = function(a, b) return T.mv(a, b) end,
  vecmat = function(a, b) return T.matmul(a, b) end,
  outer = function(a, b) return T.outer(a, b) end,
  addmm = function(a, b) return T.addmm(T.mm(a, b), a, b, { beta = 0.5, alpha = 2 }) end,
  linear = function(a, b) return T.nn.functional.linear(a, b) end,
}

local function cz(...)
  return T.complex(T.randn({ ... }, { dtype = T.float64 }),
    T.randn({ ... }, { dtype = T.float64 })):requires_grad_()
end

describe("complex autograd", function()
  it("matches torch's gradients of every complex op", function()
    assert.is_true(#CASES >= 38)
    for _, c in ipairs(CASES) do
      local fn = assert(OPS[c.op], c.op)
      local ins = {}
      for k, e in ipairs(c.ins) do ins[k] = build(e):requires_grad_() end
      local y = fn((table.unpack or unpack)(ins))
      local gs = T.autograd.grad({ y }, ins, { grad_outputs = { build(c.g):view(y.shape) } })
      for k = 1, #ins do close(gs[k], c.grads[k], c.op .. " input " .. k) end
    end
  end)

  it("gradchecks the complex ops over their real views", function()
    T.manual_seed(3)
    for _, name in ipairs { "mul", "div", "abs", "angle", "exp", "log", "sqrt", "tanh", "pow",
      "conj", "real", "imag", "sum", "cat_flip", "view_as_real" } do
      local fn = OPS[name]
      assert.is_true(T.autograd.gradcheck(fn, { cz(3), cz(3) }), name)
    end
    local x = T.randn(3, { dtype = T.float64, requires_grad = true })
    assert.is_true(T.autograd.gradcheck(function(a, b) return a * b end, { x, cz(2, 3) }))
    assert.is_true(T.autograd.gradcheck(function(a, b) return T.complex(a, b):exp() end,
      { x, T.randn(3, { dtype = T.float64, requires_grad = true }) }))
    assert.is_true(T.autograd.gradcheck(function(a) return T.view_as_complex(a * 2) end,
      { T.randn(3, 2, { dtype = T.float64, requires_grad = true }) }))
    -- in-place and indexed writes into complex tensors
    assert.is_true(T.autograd.gradcheck(function(a, b)
      local c = a * 1
      c[2] = b[1]
      c:mul_(b)
      return c
    end, { cz(3), cz(3) }))
    assert.is_true(T.autograd.gradcheck(function(a)
      local b = T.zeros(5, { dtype = T.complex128 })
      b:narrow(1, 2, 3):copy_(a)
      return b:roll(1, 1)
    end, { cz(3) }))
    local ok, msg = T.autograd.gradcheck(function(a) return a * 2 end, { cz(2):detach():to(T.complex64):requires_grad_() }, { raise = false })
    assert.is_false(ok)
    assert.is_truthy(msg:find("float64 or complex128", 1, true))
  end)

  it("accumulates complex gradients and differentiates twice", function()
    local a = cz(2)
    for _ = 1, 2 do (a * a):sum().real:backward() end
    -- d Re(a^2) = 2 conj(a), twice
    close(a.grad, { dtype = "complex128", v = T.view_as_real(a:detach():conj() * 4):reshape(-1):tolist() }, "accumulated")
    local z = cz(3)
    local g = T.autograd.grad({ (z * z * z):abs():sum() }, { z }, { create_graph = true })[1]
    assert.is_true(g.requires_grad)
    assert.is_true(T.autograd.gradcheck(function(b)
      return T.autograd.grad({ (b * b):abs():sum() }, { b }, { create_graph = true })[1]
    end, { cz(2) }))
  end)

  it("refuses what torch refuses", function()
    local z = cz(3)
    local ok, e = pcall(function() (z * 2):sum():backward() end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("grad can be implicitly created only for real scalar outputs", 1, true), e)
    ok, e = pcall(function() (z * 2):backward(T.ones(3, { dtype = T.float64 })) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("both grad_output and output are required to have the same dtype", 1, true), e)
    -- a complex gradient for a complex output works
    local w = cz(3)
    local go = T.complex(T.ones(3, { dtype = T.float64 }), T.zeros(3, { dtype = T.float64 }))
    w:mul(2):backward(go)
    assert.are.equal(T.complex128, w.grad.dtype)
    -- in-place writes through a dtype-reinterpreting view are refused, not miscomputed
    ok, e = pcall(function() local b = z * 1; b.real:mul_(3) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("viewed as another dtype", 1, true), e)
    assert.is_true(T.zeros(2, { dtype = T.complex64 }):requires_grad_().requires_grad)
  end)
end)
