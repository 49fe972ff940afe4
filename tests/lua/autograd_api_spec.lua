-- The autograd API beyond backward/grad (lua/ember/autograd2.lua): custom
-- Functions, T.autograd.functional, checkpointing, backward{inputs=},
-- several roots in one pass, inference_mode; and T.finfo/T.iinfo. Values
-- are torch 1.13's for the same calls (worked by hand where noted).
local T = require "ember"
local A = T.autograd

local function f64(t) return T.tensor(t, { dtype = T.float64 }) end
local function leaf(t) return f64(t):requires_grad_(true) end

describe("T.autograd.grad and backward (torch 1.13 semantics)", function()
  it("a tensor listed twice gets its gradient twice", function()
    local x = leaf { 1, 2 }
    local g = A.grad((x * x):sum(), { x, x })
    assert.same({ 2, 4 }, g[1]:tolist())
    assert.same({ 2, 4 }, g[2]:tolist())
    local z = leaf { 3 }
    local g3 = A.grad((x * x * z):sum(), { x, z, x })
    assert.same({ 6, 12 }, g3[3]:tolist())
    assert.same({ 5 }, g3[2]:tolist())
  end)
  it("T.autograd.backward of several roots is one pass: each hook runs once", function()
    local x = leaf { 1, 2 }
    local y = x * 1
    local calls = 0
    y:register_hook(function(g) calls = calls + 1; return g:clamp(nil, 2) end)
    x:register_hook(function(g) calls = calls + 1; return g:clamp(nil, 2.5) end)
    A.backward({ y:sum(), (y * 2):sum() })
    assert.same({ 2, 2 }, x.grad:tolist())   -- torch: [2., 2.]
    assert.equal(2, calls)
  end)
  it("backward{inputs = ...} accumulates into those tensors only", function()
    local a, b = leaf { 1, 2 }, leaf { 3, 4 }
    local s = (a * b):sum()
    s:backward({ inputs = { a } })
    assert.same({ 3, 4 }, a.grad:tolist())
    assert.is_nil(b.grad)
    local s2 = (a * b):sum()
    A.backward(s2, nil, { inputs = { b, a } })
    assert.same({ 6, 8 }, a.grad:tolist())
    assert.same({ 1, 2 }, b.grad:tolist())
    assert.has_error(function() (a * b):sum():backward({ inputs = {} }) end)
  end)
end)

describe("T.autograd.gradcheck on non-contiguous inputs", function()
  it("perturbs a transposed (column-major) leaf element by element", function()
    local x = T.tensor({ { 0.3, -0.7, 1.1 }, { 0.2, 0.9, -0.4 } }, { dtype = T.float64 }):t():requires_grad_()
    assert.is_false(x:is_contiguous())
    local w = T.tensor({ 1, 2, 3 }, { dtype = T.float64 })
    -- a function that is not symmetric in the elements: a perturbation of
    -- the wrong element (or order) gives a Jacobian mismatch
    assert.is_true(A.gradcheck(function(a) return (a:exp() * w:view(3, 1)):sum(1) end, { x }))
    assert.same({ 3, 2 }, x.shape:totable())
    -- and a wrong backward on that input is caught
    local Bad = A.Function:extend("BadScale")
    function Bad.forward(ctx, a) return a * w:view(3, 1) end
    function Bad.backward(ctx, g) return g * w:flip(1):view(3, 1) end
    assert.is_false(A.gradcheck(Bad.apply, { x }, { raise = false }))
  end)
end)

describe("T.autograd.Function", function()
  local Exp = A.Function:extend("Exp")
  function Exp.forward(ctx, x)
    local y = x:exp()
    ctx:save_for_backward(y)
    return y
  end
  function Exp.backward(ctx, g) return g * ctx.saved_tensors[1] end

  it("forward/backward with saved tensors; gradcheck passes", function()
    local z = leaf { 0.5, 1 }
    local r = Exp.apply(z)
    assert.equal("ExpBackward", r.grad_fn:name())
    r:sum():backward()
    assert.is_true(T.allclose(z.grad, z:detach():exp()))
    assert.is_true(A.gradcheck(Exp.apply, { leaf { 0.1, -0.3 } }))
  end)
  it("needs_input_grad, non-tensor arguments, mark_non_differentiable", function()
    local Scale = A.Function:extend("Scale")
    local seen
    function Scale.forward(ctx, x, k, w)
      seen = ctx.needs_input_grad
      ctx.k = k
      ctx:save_for_backward(x, w)
      return x * w * k
    end
    function Scale.backward(ctx, g)
      local x, w = ctx.saved_tensors[1], ctx.saved_tensors[2]
      return g * w * ctx.k, nil, g * x * ctx.k
    end
    local x, w = leaf { 1, 2 }, f64 { 3, 4 }
    Scale.apply(x, 2, w):sum():backward()
    assert.same({ true, false, false }, seen)
    assert.same({ 6, 8 }, x.grad:tolist())
    local Arg = A.Function:extend("Arg")
    function Arg.forward(ctx, x)
      local i = x:argmax()
      ctx:mark_non_differentiable(i)
      return i
    end
    function Arg.backward() error("not reached") end
    local i = Arg.apply(leaf { 1, 5, 2 })
    assert.is_false(i.requires_grad)
    -- no input requires grad: no node
    assert.is_nil(Exp.apply(f64 { 1 }).grad_fn)
  end)
  it("several outputs: backward gets one gradient per output", function()
    local SinCos = A.Function:extend("SinCos")
    function SinCos.forward(ctx, x)
      ctx:save_for_backward(x)
      return x:sin(), x:cos(), x:argmax()
    end
    function SinCos.backward(ctx, gs, gc, gi)
      local x = ctx.saved_tensors[1]
      assert(gi == nil or gi:sum():item() == 0)
      return gs * x:cos() - gc * x:sin()
    end
    local x = leaf { 0.3, 1.2 }
    local s, c, i = SinCos.apply(x)
    assert.equal(2, i:item())
    assert.is_false(i.requires_grad)
    ;(s * 2 + c):sum():backward()
    assert.is_true(T.allclose(x.grad, (x:detach():cos() * 2 - x:detach():sin())))
    -- an output left unused gets zeros
    local y = leaf { 0.5 }
    local s2 = SinCos.apply(y)
    s2:sum():backward()
    assert.is_true(T.allclose(y.grad, y:detach():cos()))
  end)
  it("refuses what it cannot record", function()
    local Mixed = A.Function:extend("Mixed")
    function Mixed.forward(ctx, x) return x * 2, x:double() end
    function Mixed.backward() end
    assert.has_error(function() Mixed.apply(T.ones(2, { requires_grad = true })) end)
    local Bad = A.Function:extend("Bad")
    function Bad.forward(ctx, x) return x * 2 end
    function Bad.backward() return 5 end
    assert.has_error(function() Bad.apply(leaf { 1 }):sum():backward() end)
    local NoBw = A.Function:extend("NoBw")
    function NoBw.forward(ctx, x) return x end
    assert.has_error(function() NoBw.apply(leaf { 1 }) end)
  end)
end)

describe("T.autograd.functional (torch.autograd.functional's values)", function()
  local F = A.functional
  it("jacobian and hessian", function()
    local J = F.jacobian(function(u) return u * u end, f64 { 1, 2, 3 })
    assert.same({ { 2, 0, 0 }, { 0, 4, 0 }, { 0, 0, 6 } }, J:tolist())
    local H = F.hessian(function(u) return (u ^ 3):sum() end, f64 { 1, 2 })
    assert.same({ { 6, 0 }, { 0, 12 } }, H:tolist())
    -- two inputs: J[1][j] per input, shapes out .. in
    local Jl = F.jacobian(function(a, b) return a * b end, { f64 { 1, 2 }, f64 { 3, 4 } })
    assert.same({ { 3, 0 }, { 0, 4 } }, Jl[1]:tolist())
    assert.same({ { 1, 0 }, { 0, 2 } }, Jl[2]:tolist())
    local Jm = F.jacobian(function(m) return m:sum(1) end, f64 { { 1, 2 }, { 3, 4 } })
    assert.same({ 2, 2, 2 }, Jm.shape:totable())
    -- vectorize gives the same values (rows still taken one by one); with strict it is refused, as torch's
    assert.same({ { 1 } }, F.jacobian(function(u) return u end, f64 { 1 }, { vectorize = true }):tolist())
    assert.has_error(function() F.jacobian(function(u) return u end, f64 { 1 }, { vectorize = true, strict = true }) end)
  end)
  it("vjp, jvp, vhp, hvp", function()
    local out, v = F.vjp(function(u) return u * u end, f64 { 1, 2 }, f64 { 1, 1 })
    assert.same({ 1, 4 }, out:tolist())
    assert.same({ 2, 4 }, v:tolist())
    local _, jv = F.jvp(function(u) return u * u end, f64 { 1, 2 }, f64 { 1, 0 })
    assert.same({ 2, 0 }, jv:tolist())
    local o, hv = F.hvp(function(u) return (u ^ 3):sum() end, f64 { 1, 2 }, f64 { 1, 1 })
    assert.equal(9, o:item())
    assert.same({ 6, 12 }, hv:tolist())
    local _, vh = F.vhp(function(u) return (u[1] * u[2] * u[2]) end, f64 { 1, 2 }, f64 { 1, 0 })
    assert.same({ 0, 4 }, vh:tolist())   -- H = [[0, 2u2], [2u2, 2u1]] at (1, 2)
    -- independent of the input: zeros, or an error with strict
    local _, z = F.vjp(function(u) return f64 { 1 } end, f64 { 1 }, f64 { 1 })
    assert.same({ 0 }, z:tolist())
    assert.has_error(function() F.vjp(function(u) return f64 { 1 } end, f64 { 1 }, f64 { 1 }, { strict = true }) end)
  end)
end)

describe("T.utils.checkpoint", function()
  it("the same values and gradients, weights from the closure included", function()
    T.manual_seed(3)
    local w = T.randn(4, 4, { requires_grad = true })
    local inp = T.randn(2, 4, { requires_grad = true })
    local f = function(t) return T.nn.functional.dropout(t:mm(w):tanh(), 0.5, true):mm(w) end
    T.manual_seed(7)
    local out = T.utils.checkpoint(f, inp)
    assert.equal("CheckpointFunctionBackward", out.grad_fn:name())
    out:sum():backward()
    local gi, gw = inp.grad:clone(), w.grad:clone()
    inp.grad, w.grad = nil, nil
    T.manual_seed(7)
    local ref = f(inp)
    ref:sum():backward()
    assert.is_true(T.equal(out, ref))
    -- the dropout mask is the forward's (the random state is replayed)
    assert.is_true(T.allclose(gi, inp.grad))
    assert.is_true(T.allclose(gw, w.grad))
  end)
  it("checkpoint_sequential of a Sequential", function()
    T.manual_seed(1)
    local nn = T.nn
    local seq = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 2))
    local x = T.randn(4, 3, { requires_grad = true })
    local y = T.utils.checkpoint_sequential(seq, 2, x)
    assert.is_true(T.allclose(y, seq(x)))
    y:sum():backward()
    local g = x.grad:clone()
    x.grad = nil
    seq(x):sum():backward()
    assert.is_true(T.allclose(g, x.grad))
  end)
end)

describe("inference_mode, finfo, iinfo", function()
  it("inference_mode runs without recording", function()
    local x = leaf { 1 }
    assert.is_false(T.inference_mode(function() return (x * 2).requires_grad end))
    assert.is_true(T.inference_mode(false, function() return (x * 2).requires_grad end))
  end)
  it("finfo and iinfo give torch's limits", function()
    local f = T.finfo(T.float32)
    assert.equal(2 ^ -23, f.eps)
    assert.equal(2 ^ -126, f.tiny)
    assert.equal(-3.4028234663852886e38, f.min)
    assert.equal(1e-6, f.resolution)
    assert.equal(32, f.bits)
    assert.equal("float32", f.dtype)
    assert.equal(65504, T.finfo(T.float16).max)
    assert.equal(2 ^ -7, T.finfo(T.bfloat16).eps)
    assert.equal("float64", T.finfo(T.complex128).dtype)
    assert.equal(T.finfo(T.get_default_dtype()).eps, T.finfo().eps)
    assert.equal(255, T.iinfo(T.uint8).max)
    assert.equal(-2147483648, T.iinfo(T.int32).min)
    assert.equal("9223372036854775807", tostring(T.iinfo(T.int64).max):gsub("LL$", ""))
    assert.has_error(function() T.finfo(T.int32) end, "finfo: int32 is not a floating point dtype (use T.iinfo)")
    assert.has_error(function() T.iinfo(T.float32) end, "iinfo: float32 is not an integer dtype (use T.finfo)")
  end)
end)

describe("zero_grad(false) of a gradient with history", function()
  it("detaches it first (PyTorch's), then zeroes it in place", function()
    local x = T.tensor({ 1.5 }, { dtype = T.float64, requires_grad = true })
    local o = T.optim.SGD({ x }, { lr = 0.1 })
    ;(x ^ 2):sum():backward({ create_graph = true })
    assert.is_true(x.grad.requires_grad)
    local g = x.grad
    o:zero_grad(false)
    assert.is_false(x.grad.requires_grad)
    assert.is_nil(x.grad.grad_fn)
    ;(x ^ 2):sum():backward()
    assert.same({ 3 }, g:tolist())   -- the same tensor accumulated
    local m = T.nn.Linear(1, 1)
    m(T.ones(1, 1)):sum():backward({ create_graph = true })
    m:zero_grad(false)
    assert.is_false(m.weight.grad.requires_grad)
  end)
end)

describe("views made in no_grad mode (PyTorch's CreationMeta rule)", function()
  it("an in-place write to one in grad mode is refused; in no_grad mode it is fine", function()
    local x = T.tensor({ 1, 2, 3 }, { dtype = T.float32, requires_grad = true })
    local v = T.no_grad(function() return x:narrow(1, 1, 2) end)
    assert.has_error(function() v:mul_(2) end,
      "mul_: a view was created in no_grad mode and is being modified in-place with grad mode enabled; "
      .. "this is ambiguous and refused (PyTorch's rule): make the view in grad mode, or write into a clone")
    assert.same({ 1, 2, 3 }, x:tolist())
    local y = x * 1
    local w = T.no_grad(function() return y:narrow(1, 1, 2) end)
    assert.has_error(function() w:copy_(T.zeros(2)) end)
    assert.has_error(function() w[1] = 0 end)
    assert.has_error(function() w:narrow(1, 1, 1):fill_(0) end)   -- a view of the view, too
    T.no_grad(function() v:mul_(2) end)
    assert.same({ 2, 4, 3 }, x:tolist())
    -- detach is no such view, nor is a view of a tensor that needs no grad
    local d = T.no_grad(function() return x:detach() end)
    d[3] = 5
    assert.equal(5, x[3]:item())
    local z = T.zeros(3)
    local zv = T.no_grad(function() return z[1] end)
    zv:fill_(2)
    assert.equal(2, z[1]:item())
  end)
end)

describe("T.tensor of 0-d tensors takes their dtypes (torch.tensor's promotion)", function()
  it("promotes the elements' dtypes", function()
    assert.equal(T.float64, T.tensor({ T.tensor(1.5, { dtype = T.float64 }), 2 }).dtype)
    assert.equal(T.int32, T.tensor({ T.tensor(1, { dtype = T.int32 }), T.tensor(2, { dtype = T.int32 }) }).dtype)
    assert.equal(T.int64, T.tensor({ T.tensor(1, { dtype = T.int32 }), 2 }).dtype)
    assert.equal(T.float32, T.tensor({ T.tensor(1, { dtype = T.float16 }), 2.5 }).dtype)
    assert.equal(T.int64, T.tensor({ math.mininteger or -2 ^ 63 }).dtype)  -- an integer (5.4: math.type)
  end)
end)

describe("a product saves an operand only for the other's gradient (torch 1.13)", function()
  -- x requires grad, w does not: changing x in place after the forward (as
  -- an optimizer step does) leaves the backward valid, since x's gradient
  -- needs only w
  local function check(name, f, want)
    local x = T.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = T.float64, requires_grad = true })
    local w = T.tensor({ { 2, 0.5 }, { -1, 3 } }, { dtype = T.float64 })
    local y = f(x, w):sum()
    T.no_grad(function() x:add_(1) end)
    y:backward()
    assert.is_true(T.allclose(x.grad, want(w)), name)
  end
  it("mul, div, mm, matmul, linear, addmm", function()
    local ones = T.ones(2, 2, { dtype = T.float64 })
    check("x * w", function(x, w) return x * w end, function(w) return w end)
    check("x * 3", function(x) return x * 3 end, function() return ones * 3 end)
    check("x / w", function(x, w) return x / w end, function(w) return 1 / w end)
    check("x / 4", function(x) return x / 4 end, function() return ones / 4 end)
    check("x @ w", function(x, w) return x:mm(w) end, function(w) return ones:mm(w:t()) end)
    check("w @ x", function(x, w) return T.matmul(w, x) end, function(w) return w:t():mm(ones) end)
    check("linear", function(x, w) return T.nn.functional.linear(x, w) end, function(w) return ones:mm(w) end)
    check("addmm", function(x, w) return T.addmm(w, w, x) end, function(w) return w:t():mm(ones) end)
    check("x @ v", function(x, w) return T.matmul(x, w[1]) end, function(w) return T.stack({ w[1], w[1] }) end)
  end)
  it("the operand that is read is still checked", function()
    local x = T.tensor({ 1, 2 }, { dtype = T.float64, requires_grad = true })
    local w = T.tensor({ 3, 4 }, { dtype = T.float64 })
    local y = (x * w):sum()
    w:add_(1)
    assert.has_error(function() y:backward() end)
    -- both need grad: both saved, both checked
    local a = T.tensor({ 1, 2 }, { dtype = T.float64, requires_grad = true })
    local b = T.tensor({ 3, 4 }, { dtype = T.float64, requires_grad = true })
    local z = (a * b):sum()
    T.no_grad(function() a:add_(1) end)
    assert.has_error(function() z:backward() end)
  end)
end)

describe("retain_grad under T.autograd.grad", function()
  it("a retained non-leaf gets its gradient (PyTorch's retain_grad hook)", function()
    local x = T.tensor({ 1, 2 }, { dtype = T.float64, requires_grad = true })
    local y = x * 2
    y:retain_grad()
    A.grad((y * y):sum(), x)
    assert.same({ 4, 8 }, y.grad:tolist())
    assert.is_nil(x.grad)
  end)
end)

describe("T.autograd.grad argument checks", function()
  it("refuses empty inputs", function()
    local x = T.tensor({ 1 }, { dtype = T.float64, requires_grad = true })
    assert.has_error(function() A.grad((x * 2):sum(), {}) end, "grad: requires non-empty inputs")
  end)
end)

describe("full backward hooks and in-place writes to the module's output", function()
  it("are refused, as PyTorch's BackwardHookFunction outputs", function()
    local Mul = T.nn.Module:extend("Mul2")
    function Mul:forward(a, b) return a * b end
    local m = Mul()
    local seen
    m:register_full_backward_hook(function(_, gi, go) seen = go[1] end)
    local a = T.tensor({ 1, 2 }, { dtype = T.float32, requires_grad = true })
    local y = m(a, T.tensor({ 3, 4 }, { dtype = T.float32 }))
    assert.has_error(function() y:mul_(2) end,
      "mul_: the output of a module with a full backward hook is a view and is being modified in-place; "
      .. "this is refused (PyTorch's BackwardHookFunction rule): clone() the output first")
    local z = y:clone()
    z:mul_(2)
    z:sum():backward()
    assert.same({ 2, 2 }, seen:tolist())
    assert.same({ 6, 8 }, a.grad:tolist())
  end)
end)

describe("anomaly detection", function()
  it("names the node whose gradient holds NaN; off by default", function()
    local function run()
      local x = T.tensor({ 0, 1 }, { dtype = T.float64, requires_grad = true })
      local z = (x:sqrt() * 0):sum()
      z:backward()
      return x
    end
    assert.is_false(T.is_anomaly_enabled())
    assert.is_true(run().grad[1]:isnan():item())
    assert.has_error(function() A.detect_anomaly(run) end,
      "backward: Function 'SqrtBackward0' returned nan values in its gradient for input 1 (anomaly detection)")
    assert.is_false(T.is_anomaly_enabled())   -- the scope restored it
    assert.is_false(A.set_detect_anomaly(true))
    assert.is_true(T.is_anomaly_enabled())
    A.set_detect_anomaly(false)
  end)
end)
