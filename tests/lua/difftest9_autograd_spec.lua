-- Differences from PyTorch 1.13 found by the ninth round of differential
-- tests, in the user-facing autograd API (custom Functions, grad modes,
-- T.autograd.grad's options, the functional API, gradcheck). Each case gives
-- torch's value or error. Positions are 1-based in ember.
local T = require "ember"
local U = require "specutil"
local err = U.err
local A = T.autograd

local function d(v) return T.tensor(v, { dtype = T.float64 }) end
local function dr(v) return T.tensor(v, { dtype = T.float64, requires_grad = true }) end
local function near(got, want, tol)
  U.near(got, d(want):reshape(got.shape), tol or 1e-12)
end

describe("difftest round 9: custom Functions (torch 1.13)", function()
  local Exp = A.Function:extend("Exp")
  function Exp.forward(ctx, x) local y = x:exp(); ctx:save_for_backward(y); return y end
  function Exp.backward(ctx, g) return g * ctx.saved_tensors[1] end

  it("an in-place change of a saved output fails the backward", function()
    -- torch: y = Exp.apply(x); y.add_(1); y.sum().backward() -> one of the
    -- variables needed for gradient computation has been modified by an
    -- inplace operation: ... output 0 of ExpBackward, is at version 1;
    -- expected version 0 instead (ember gave x.grad = [2, 3.718...])
    local x = dr { 0, 1 }
    local y = Exp.apply(x)
    y:add_(1)
    err(function() y:sum():backward() end, "which is output 1 of ExpBackward, is at version")
    -- a saved input too: x * 1 saved, then h.add_(1) -> the same error
    local S = A.Function:extend("S")
    function S.forward(ctx, a) ctx:save_for_backward(a); return a * a end
    function S.backward(ctx, g) return 2 * g * ctx.saved_tensors[1] end
    local h = x * 1
    local z = S.apply(h)
    h:add_(1)
    err(function() z:sum():backward() end, "modified by an inplace operation")
  end)

  it("a saved output carries the node's history under create_graph", function()
    -- torch: g = grad(Exp.apply(x).sum(), x, create_graph=True);
    -- grad(g.sum(), x) -> [1, e] (ember: "does not require grad")
    local x = dr { 0, 1 }
    local g = A.grad(Exp.apply(x):sum(), x, { create_graph = true })
    near(A.grad(g:sum(), x), { 1, math.exp(1) })
    -- two outputs, both saved: y = exp(x), z = 3x; g = exp(x) + 3 = [4, 5.718...],
    -- its gradient [1, e]; an in-place change of z fails the backward
    local M2 = A.Function:extend("M2")
    function M2.forward(ctx, a) local y, z = a:exp(), a * 3; ctx:save_for_backward(y, z); return y, z end
    function M2.backward(ctx, gy, gz)
      local s = ctx.saved_tensors
      return gy * s[1] + gz * 3 + s[2] * 0
    end
    local y, z = M2.apply(x)
    g = A.grad(y:sum() + z:sum(), x, { create_graph = true })
    near(g, { 4, 1 + math.exp(1) + 3 - 1 })
    near(A.grad(g:sum(), x), { 1, math.exp(1) })
    y, z = M2.apply(x)
    z:mul_(2)
    err(function() y:sum():backward() end, "which is output 1 of M2Backward")
  end)

  it("a Function that saves nothing backwards twice and ignores in-place changes of its input", function()
    -- torch: h = x + 0; y = K.apply(h); h.add_(1); two backwards -> x.grad [4, 4]
    -- (ember: the inputs were always saved: "modified by an inplace operation")
    local K = A.Function:extend("K")
    function K.forward(ctx, a) return a * 2 end
    function K.backward(ctx, g) return g * 2 end
    local x = dr { 1, 2 }
    local h = x + 0
    local y = K.apply(h)
    h:add_(1)
    y:sum():backward()
    y:sum():backward()
    near(x.grad, { 4, 4 })
  end)

  it("backward's gradients: extras must be nil, none for a non-tensor argument", function()
    -- torch: function BadBackward returned an incorrect number of gradients (expected 1, got 2)
    local Bad = A.Function:extend("Bad")
    function Bad.forward(ctx, a) return a * 2 end
    function Bad.backward(ctx, g) return g, g end
    err(function() Bad.apply(dr { 1, 2 }):sum():backward() end,
      "function BadBackward returned an incorrect number of gradients (expected 1, got 2)")
    -- trailing nils are fine (torch: None)
    local Ok = A.Function:extend("Ok")
    function Ok.forward(ctx, a) return a * 2 end
    function Ok.backward(ctx, g) return g * 2, nil, nil end
    local x = dr { 1, 2 }
    Ok.apply(x):sum():backward()
    near(x.grad, { 2, 2 })
    -- torch: function NTBackward returned a gradient different than None at
    -- position 2, but the corresponding forward input was not a Variable
    local NT = A.Function:extend("NT")
    function NT.forward(ctx, a, k) return a * k end
    function NT.backward(ctx, g) return g * 2, g end
    err(function() NT.apply(dr { 1, 2 }, 2):sum():backward() end,
      "returned a gradient different than nil at position 2, but the corresponding forward input was not a tensor")
  end)
end)

describe("difftest round 9: grad modes and T.autograd.grad options (torch 1.13)", function()
  it("inference_mode(false) turns grad mode on; is_inference_mode_enabled follows the scopes", function()
    -- torch: with no_grad(): with inference_mode(False): (x*2).requires_grad
    -- True, is_inference_mode_enabled() False (ember: false, as no_grad)
    local x = dr { 1, 2 }
    local r, inf = T.no_grad(function()
      return T.inference_mode(false, function() return (x * 2).requires_grad, T.is_inference_mode_enabled() end)
    end)
    assert.is_true(r)
    assert.is_false(inf)
    -- torch: inside inference_mode(): is_inference_mode_enabled() True,
    -- is_grad_enabled() False; after: False (ember: always false)
    local a, b = T.inference_mode(function() return T.is_inference_mode_enabled(), T.is_grad_enabled() end)
    assert.is_true(a)
    assert.is_false(b)
    assert.is_false(T.is_inference_mode_enabled())
    assert.is_true(T.is_grad_enabled())
    -- nested inference_mode(False) in inference_mode(): False, True
    a, b = T.inference_mode(function()
      return T.inference_mode(false, function() return T.is_inference_mode_enabled(), T.is_grad_enabled() end)
    end)
    assert.is_false(a)
    assert.is_true(b)
    -- restored after an error
    pcall(T.inference_mode, function() error("x") end)
    assert.is_false(T.is_inference_mode_enabled())
    assert.is_true(T.is_grad_enabled())
  end)

  it("grad: is_grads_batched", function()
    -- torch: grad(x*x, x, grad_outputs=eye(2), is_grads_batched=True) ->
    -- [[2, 0], [0, 4]] (ember: unknown option 'is_grads_batched')
    local x = dr { 1, 2 }
    local g = A.grad(x * x, x, { grad_outputs = T.eye(2):double(), is_grads_batched = true })
    near(g, { 2, 0, 0, 4 })
    assert.same({ 2, 2 }, g.shape:totable())
    -- lists: grad([x*z], [x, z], [[[1,0],[0,1],[1,1]]]) -> [[3,0],[0,3],[3,3]], [[1],[2],[3]]
    local z = dr { 3 }
    local gs = A.grad({ x * z }, { x, z }, { grad_outputs = { d { { 1, 0 }, { 0, 1 }, { 1, 1 } } },
      is_grads_batched = true })
    near(gs[1], { 3, 0, 0, 3, 3, 3 })
    near(gs[2], { 1, 2, 3 })
    assert.same({ 3, 1 }, gs[2].shape:totable())
  end)
end)

describe("difftest round 9: functional and gradcheck options (torch 1.13)", function()
  local AF = A.functional
  it("jacobian/hessian take vectorize and the strategies, with torch's checks", function()
    -- torch: jacobian(lambda a: a**2, [1, 2], vectorize=True) -> [[2, 0], [0, 4]]
    -- (ember refused vectorize); strategy="forward-mode" too
    local sq = function(a) return a:pow(2) end
    near(AF.jacobian(sq, d { 1, 2 }, { vectorize = true }), { 2, 0, 0, 4 })
    near(AF.jacobian(sq, d { 1, 2 }, { vectorize = true, strategy = "forward-mode" }), { 2, 0, 0, 4 })
    near(AF.hessian(function(a) return a:pow(3):sum() end, d { 1, 2 },
      { vectorize = true, outer_jacobian_strategy = "forward-mode" }), { 6, 0, 0, 12 })
    -- torch: `strict=True` and `vectorized=True` are not supported together
    err(function() AF.jacobian(sq, d { 1, 2 }, { vectorize = true, strict = true }) end,
      "jacobian: strict = true and vectorize = true are not supported together")
    -- torch: Computing Jacobian using forward-AD ... only implemented for `vectorize=True`
    err(function() AF.jacobian(sq, d { 1, 2 }, { strategy = "forward-mode" }) end,
      "only implemented for vectorize = true")
    -- torch: `create_graph=True` and `strategy="forward-mode"` are not supported together
    err(function() AF.jacobian(sq, d { 1, 2 }, { strategy = "forward-mode", vectorize = true, create_graph = true }) end,
      "create_graph = true and strategy = 'forward-mode' are not supported together")
    -- vjp has no vectorize (torch: unexpected keyword argument)
    err(function() AF.vjp(function(a) return a:sum() end, d { 1, 2 }, nil, { vectorize = true }) end,
      "unknown option 'vectorize'")
  end)

  it("gradcheck takes raise_exception; gradgradcheck", function()
    local Wrong = A.Function:extend("Wrong")
    function Wrong.forward(ctx, a) return a * 2 end
    function Wrong.backward(ctx, g) return g * 3 end
    -- torch: gradcheck(Wrong.apply, x, raise_exception=False) -> False
    -- (ember: unknown option 'raise_exception')
    assert.is_false(A.gradcheck(Wrong.apply, dr { 1, 2 }, { raise_exception = false }))
    err(function() A.gradcheck(Wrong.apply, dr { 1, 2 }, { raise_exception = true }) end, "Jacobian mismatch")
    -- torch: gradgradcheck(lambda a: a.sin() * a, x) -> True; with grad_outputs; eps
    assert.is_true(A.gradgradcheck(function(a) return a:sin() * a end, dr { 1, 2 }))
    assert.is_true(A.gradgradcheck(function(a, b) return { a:sin() * b, a * b } end, { dr { 1, 2 }, dr { 3, 4 } }))
    assert.is_true(A.gradgradcheck(function(a) return a:pow(3) end, dr { 1, 2 }, dr { 0.5, -1 }))
    assert.is_true(A.gradgradcheck(function(a) return a:pow(3) end, dr { 1, 2 }, { eps = 1e-5 }))
    -- a wrong first derivative whose derivative is consistent passes (torch: True);
    -- a wrong second derivative fails (torch: False)
    local W = A.Function:extend("W")
    function W.forward(ctx, a) ctx:save_for_backward(a); return a:pow(3) end
    function W.backward(ctx, g) local a = ctx.saved_tensors[1]; return g * a * a * 3.3 end
    assert.is_true(A.gradgradcheck(W.apply, dr { 1, 2 }, nil, { raise_exception = false }))
    local W2 = A.Function:extend("W2")
    function W2.forward(ctx, a) ctx:save_for_backward(a); return a:pow(3) end
    function W2.backward(ctx, g) local a = ctx.saved_tensors[1]; return g * a:detach() * a * 3 end
    assert.is_false(A.gradgradcheck(W2.apply, dr { 1, 2 }, nil, { raise_exception = false }))
    err(function() A.gradgradcheck(W2.apply, dr { 1, 2 }) end, "gradcheck: Jacobian mismatch")
  end)
end)
