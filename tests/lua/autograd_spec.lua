-- autograd (issue 9): what a user sees of requires_grad, grad, grad_fn,
-- backward, autograd.grad, detach and grad mode; errors; gradients against
-- PyTorch's for composite expressions (tests/fixtures/autograd_cases.lua).
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack

local function f32(t) return T.tensor(t, { dtype = T.float32, requires_grad = true }) end
local function close(a, b, tol)
  tol = tol or 1e-5
  local av, bv = a:double():reshape(-1):tolist(), b:double():reshape(-1):tolist()
  assert.are.equal(#bv, #av)
  for i = 1, #av do
    assert(math.abs(av[i] - bv[i]) <= tol * (1 + math.abs(bv[i])),
      string.format("element %d: %.9g vs %.9g", i, av[i], bv[i]))
  end
end
local function list(t) return t:double():reshape(-1):tolist() end

describe("leaves, grad_fn and requires_grad", function()
  it("the seeds' y = x * 2: y requires grad, has a grad_fn, is not a leaf", function()
    local x = T.ones(2, 2, { requires_grad = true })
    local y = x * 2
    assert.is_true(y.requires_grad)
    assert.is_false(y.is_leaf)
    assert.is_true(x.is_leaf)
    assert.is_nil(x.grad_fn)
    assert.are.equal("MulBackward0", y.grad_fn:name())
    assert.are.equal("<MulBackward0>", tostring(y.grad_fn))
    assert.matches("grad_fn=<MulBackward0>", tostring(y))
    assert.matches("requires_grad=True", tostring(x))
    assert.are.equal("AccumulateGrad", y.grad_fn.next_functions[1][1]:name())
  end)

  it("grad_fn and next_functions are nodes to walk, as PyTorch's", function()
    -- torch: y = (x * 2 + w).sum(); y.grad_fn.next_functions
    --   ((<AddBackward0>, 0),); AddBackward0 -> ((<MulBackward0>, 0), (None, 0))
    --   MulBackward0 -> ((<AccumulateGrad>, 0), (None, 0)); .variable is x
    local x = T.randn(3, { requires_grad = true })
    local w = T.randn(3)
    local y = (x * 2 + w):sum()
    local g = y.grad_fn
    assert.equal("SumBackward0", g:name())
    assert.equal(1, #g.next_functions)
    local add, nr = g.next_functions[1][1], g.next_functions[1][2]
    assert.equal("AddBackward0", add:name()); assert.equal(1, nr)
    assert.equal("<AddBackward0>", tostring(add))
    assert.equal(2, #add.next_functions)
    assert.is_false(add.next_functions[2][1]) -- w needs no gradient (torch: None)
    local mul = add.next_functions[1][1]
    assert.equal("MulBackward0", mul:name())
    local acc = mul.next_functions[1][1]
    assert.equal("AccumulateGrad", acc:name())
    assert.equal("<AccumulateGrad>", tostring(acc))
    assert.equal(0, #acc.next_functions)
    assert.is_true(T.equal(acc.variable, x))
    local before = x:clone()
    T.no_grad(function() acc.variable:mul_(2) end) -- the leaf itself, not a copy
    assert.is_true(T.equal(x, before * 2))
    -- the same node compares equal through two paths
    assert.is_true(y.grad_fn == y.grad_fn)
    assert.is_true(add == y.grad_fn.next_functions[1][1])
    assert.is_false(add == mul)
    -- a node held from Lua outlives the tensor that made it
    y = nil
    collectgarbage(); collectgarbage()
    assert.equal("MulBackward0", add.next_functions[1][1]:name())
  end)

  it("grad_fn names follow PyTorch's", function()
    local x = T.randn(3, 4, { requires_grad = true })
    assert.are.equal("AddBackward0", (x + 1).grad_fn:name())
    assert.are.equal("SumBackward1", x:sum(1).grad_fn:name())
    assert.are.equal("SumBackward0", x:sum().grad_fn:name())
    assert.are.equal("MmBackward0", x:mm(x:t()).grad_fn:name())
    assert.are.equal("TBackward0", x:t().grad_fn:name())
    assert.are.equal("TransposeBackward0", x:transpose(1, 2).grad_fn:name())
    assert.are.equal("PermuteBackward0", x.T.grad_fn:name())
    assert.are.equal("ViewBackward0", x:view(12).grad_fn:name())
    -- the names torch 1.13 gives (tests/lua: /usr/bin/python3, type(t.grad_fn).__name__)
    assert.are.equal("ReshapeAliasBackward0", x:reshape(12).grad_fn:name())
    assert.are.equal("UnsafeViewBackward0", x:t():reshape(12).grad_fn:name())
    assert.are.equal("ReshapeAliasBackward0", x:flatten().grad_fn:name())
    assert.are.equal("ViewBackward0", x:t():ravel().grad_fn:name())
    assert.are.equal("SqueezeBackward0", x:unsqueeze(1):squeeze().grad_fn:name())
    assert.are.equal("SqueezeBackward1", x:unsqueeze(1):squeeze(1).grad_fn:name())
    assert.are.equal("SplitBackward0", x:split(2)[1].grad_fn:name())
    assert.are.equal("SplitBackward0", x:chunk(2)[2].grad_fn:name())
    assert.are.equal("SplitWithSizesBackward0", x:split({ 1, 2 })[1].grad_fn:name())
    assert.are.equal("SliceBackward0", x:tensor_split(2)[1].grad_fn:name())
    assert.are.equal("MaxBackward1", x:max().grad_fn:name())
    assert.are.equal("MinBackward1", x:min().grad_fn:name())
    assert.are.equal("MaxBackward0", (x:max(1)).grad_fn:name())
    assert.are.equal("AmaxBackward0", x:amax().grad_fn:name())
    assert.are.equal("MedianBackward0", x:median().grad_fn:name())
    assert.are.equal("MedianBackward1", (x:median(1)).grad_fn:name())
    assert.are.equal("ClampBackward1", x:clamp(0, 1).grad_fn:name())
    assert.are.equal("ClampBackward0", x:clamp(T.zeros(4)).grad_fn:name())
    assert.are.equal("ClampMinBackward0", x:clamp_min(0).grad_fn:name())
    assert.are.equal("ClampMaxBackward1", x:clamp_max(T.zeros(4)).grad_fn:name())
    assert.are.equal("LinalgVectorNormBackward0", T.linalg.vector_norm(x).grad_fn:name())
    assert.are.equal("LinalgVectorNormBackward0", T.linalg.norm(x).grad_fn:name())
    assert.are.equal("SelectBackward0", x[1].grad_fn:name())
    assert.are.equal("IndexBackward0", x[{ T.tensor { 1, 2 } }].grad_fn:name())
    assert.are.equal("CatBackward0", T.cat { x, x }.grad_fn:name())
    assert.are.equal("SoftmaxBackward0", x:softmax(1).grad_fn:name())
  end)

  it("requires_grad_ and the requires_grad option; only floating tensors", function()
    local x = T.zeros(3)
    assert.is_false(x.requires_grad)
    assert.are.equal(x, x:requires_grad_())
    assert.is_true(x.requires_grad)
    x.requires_grad = false
    assert.is_false(x.requires_grad)
    assert.has_error(function() T.zeros(3, { dtype = T.int64 }):requires_grad_() end,
      "requires_grad: only tensors of floating point and complex dtype can require gradients, got ember.int64")
    assert.has_error(function() T.arange(3, { requires_grad = true }) end)
  end)

  it("integer and bool results never require grad", function()
    local x = T.randn(3, { requires_grad = true })
    assert.is_false(x:gt(0).requires_grad)
    assert.is_false(x:argmax().requires_grad)
    local _, i = x:max(1)
    assert.is_false(i.requires_grad)
  end)

  it("only leaves may switch requires_grad off", function()
    local y = T.ones(2, { requires_grad = true }) * 2
    assert.has_error(function() y:requires_grad_(false) end)
  end)
end)

describe("backward", function()
  it("of a scalar fills the leaves' grad", function()
    local x = f32 { 1, 2, 3 }
    local y = (x * x):sum()
    assert.is_nil(x.grad)
    y:backward()
    assert.are.same({ 2, 4, 6 }, list(x.grad))
    assert.are.equal(T.float32, x.grad.dtype)
    assert.is_false(x.grad.requires_grad)
  end)

  it("with a gradient for a non-scalar", function()
    local x = f32 { 1, 2, 3 }
    local y = x * 3
    y:backward(T.tensor { 1, 0.5, -1 })
    assert.are.same({ 3, 1.5, -3 }, list(x.grad))
  end)

  it("accumulates into grad, and grad can be reset", function()
    local x = f32 { 1, 2 }
    local y = (x * x):sum()
    y:backward({ retain_graph = true })
    y:backward()
    assert.are.same({ 4, 8 }, list(x.grad))
    x.grad = nil
    assert.is_nil(x.grad)
    ;(x * 5):sum():backward()
    assert.are.same({ 5, 5 }, list(x.grad))
    x.grad:zero_()
    ;(x * 2):sum():backward()
    assert.are.same({ 2, 2 }, list(x.grad))
  end)

  it("sums the gradients of every use of a tensor (a diamond)", function()
    local x = f32 { 2 }
    local a = x * 3
    local y = a * a + a:exp() + a
    y:sum():backward()
    close(x.grad, T.tensor { 3 * (2 * 6 + math.exp(6) + 1) }, 1e-5)
  end)

  it("reduces gradients to the broadcast input's shape", function()
    local a = T.ones(3, 1, { requires_grad = true })
    local b = T.ones(4, { requires_grad = true })
    ;(a * b):sum():backward()
    assert.are.same({ 3, 1 }, { a.grad:size(1), a.grad:size(2) })
    assert.are.same({ 4, 4, 4 }, list(a.grad))
    assert.are.same({ 3, 3, 3, 3 }, list(b.grad))
  end)

  it("casts gradients back to each input's dtype", function()
    local a = T.ones(2, { dtype = T.float32, requires_grad = true })
    local b = T.ones(2, { dtype = T.float64, requires_grad = true })
    local y = a * b
    assert.are.equal(T.float64, y.dtype)
    y:sum():backward()
    assert.are.equal(T.float32, a.grad.dtype)
    assert.are.equal(T.float64, b.grad.dtype)
  end)

  it("retain_grad keeps a non-leaf's gradient", function()
    local x = f32 { 1, 2 }
    local h = x * 2
    h:retain_grad()
    assert.is_true(h.retains_grad)
    ;(h * h):sum():backward()
    assert.are.same({ 4, 8 }, list(h.grad))
    assert.are.same({ 8, 16 }, list(x.grad))
  end)

  it("runs a graph thousands of nodes deep", function()
    local x = f32 { 1 }
    local y = x
    for _ = 1, 20000 do y = y * 1 end
    y:sum():backward()
    assert.are.same({ 1 }, list(x.grad))
  end)
end)

describe("autograd.grad and higher order", function()
  it("returns gradients without touching .grad", function()
    local x = f32 { 1, 2 }
    local g = T.autograd.grad((x * x):sum(), x)
    assert.are.same({ 2, 4 }, list(g))
    assert.is_nil(x.grad)
  end)

  it("of a non-leaf input, and a list of inputs", function()
    local x = f32 { 1, 2 }
    local h = x * 3
    local y = (h * h):sum()
    local gs = T.autograd.grad(y, { h, x })
    assert.are.same({ 6, 12 }, list(gs[1]))
    assert.are.same({ 18, 36 }, list(gs[2]))
  end)

  it("second and third derivatives with create_graph", function()
    local x = T.tensor({ 0.5, 2 }, { dtype = T.float64, requires_grad = true })
    local y = (x ^ 3):sum()
    local g1 = T.autograd.grad(y, x, { create_graph = true })
    assert.are.same({ 0.75, 12 }, list(g1))
    assert.is_true(g1.requires_grad)
    local g2 = T.autograd.grad(g1:sum(), x, { create_graph = true })
    assert.are.same({ 3, 12 }, list(g2))
    local g3 = T.autograd.grad(g2:sum(), x)
    assert.are.same({ 6, 6 }, list(g3))
  end)

  it("higher order through tanh, matmul and softmax", function()
    local x = T.tensor({ { 0.3, -0.2 }, { 0.1, 0.4 } }, { dtype = T.float64, requires_grad = true })
    local w = T.tensor({ { 1.5, -0.5 }, { 0.25, 2 } }, { dtype = T.float64 })
    local function f(a) return (a:mm(w):tanh():softmax(2) * T.tensor { 1, 3 }):sum() end
    local g = T.autograd.grad(f(x), x, { create_graph = true })
    -- d/dx of sum(g * v) by finite differences of the first derivative
    local v = T.tensor({ { 1, -2 }, { 0.5, 1 } }, { dtype = T.float64 })
    local hv = T.autograd.grad((g * v):sum(), x)
    local eps = 1e-6
    local xp = (x:detach() + v * eps):requires_grad_()
    local xm = (x:detach() - v * eps):requires_grad_()
    local gp = T.autograd.grad(f(xp), xp)
    local gm = T.autograd.grad(f(xm), xm)
    close(hv, (gp - gm) / (2 * eps), 1e-6)
  end)

  it("backward with create_graph gives a grad that has a graph", function()
    local x = T.tensor({ 1.5 }, { dtype = T.float64, requires_grad = true })
    ;(x ^ 2):sum():backward({ create_graph = true })
    assert.is_true(x.grad.requires_grad)
    local gg = T.autograd.grad(x.grad:sum(), x)
    assert.are.same({ 2 }, list(gg))
    -- as in PyTorch, x -> x.grad -> its graph -> x is a reference cycle
    -- (docs/autograd.md); resetting .grad breaks it
    x.grad = nil
  end)

  it("allow_unused", function()
    local x, z = f32 { 1 }, f32 { 2 }
    local y = (x * 2):sum()
    assert.has_error(function() T.autograd.grad(y, { x, z }, { retain_graph = true }) end,
      "grad: one of the differentiated tensors (input 2) appears to not have been used in the graph. Set allow_unused=true if this is the desired behavior.")
    local gs = T.autograd.grad(y, { x, z }, { allow_unused = true })
    assert.are.same({ 2 }, list(gs[1]))
    assert.is_nil(gs[2])
  end)
end)

describe("detach and grad mode", function()
  it("detach shares storage and has no history; detach_ cuts a tensor loose", function()
    local x = f32 { 1, 2 }
    local y = x * 2
    local d = y:detach()
    assert.is_false(d.requires_grad)
    assert.is_true(d.is_leaf)
    d[1] = 10
    assert.are.same({ 10, 4 }, list(y:detach()))
    y:detach_()
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
  end)

  it("no_grad records nothing and restores the mode, also after an error", function()
    local x = f32 { 1 }
    assert.is_true(T.is_grad_enabled())
    local y = T.no_grad(function()
      assert.is_false(T.is_grad_enabled())
      return x * 2
    end)
    assert.is_false(y.requires_grad)
    assert.is_true(T.is_grad_enabled())
    assert.has_error(function() T.no_grad(function() error("boom") end) end)
    assert.is_true(T.is_grad_enabled())
    local z = T.no_grad(function() return T.enable_grad(function() return x * 2 end) end)
    assert.is_true(z.requires_grad)
    assert.is_true(T.set_grad_enabled(false))
    assert.is_false((x * 2).requires_grad)
    T.set_grad_enabled(true)
    assert.is_true((x * 2).requires_grad)
  end)

  it("an optimizer step: in-place updates of leaves under no_grad", function()
    local w = f32 { 1, 2 }
    for _ = 1, 3 do
      w.grad = nil
      ;(w * w):sum():backward()
      T.no_grad(function() w:sub_(w.grad * 0.25) end)
    end
    assert.are.same({ 0.125, 0.25 }, list(w))
    assert.is_true(w.is_leaf)
  end)
end)

describe("in-place ops and views", function()
  it("views of a contiguous tensor give their gradient by a strided copy (and positions where they overlap)", function()
    -- x (3, 4, 5) = 1..60; a weight w of the view's shape makes every
    -- element's gradient distinct: x.grad at each element the view reads is
    -- the weight there, 0 elsewhere; the view kinds that do not overlap
    -- (transpose, permute, narrow, select, diagonal, a chain of them) take
    -- the strided path, unfold with an overlapping step the positions one
    local function check(name, view, want_overlap)
      local x = T.arange(1, 61, { dtype = T.float64 }):view(3, 4, 5):requires_grad_()
      local v = view(x)
      local w = T.arange(1, v:numel() + 1, { dtype = T.float64 }):view(v.shape)
      ;(v * w):sum():backward()
      -- the reference: the same view of an arange of positions
      local pos = view(T.arange(1, 61, { dtype = T.float64 }):view(3, 4, 5)):reshape(-1)
      local want = T.zeros(60, { dtype = T.float64 })
      want:index_add_(1, pos:long(), w:reshape(-1))
      assert.is_true(T.equal(x.grad:reshape(-1), want), name)
      if not want_overlap then assert.is_not_nil(v.grad_fn) end
    end
    check("transpose", function(x) return x:transpose(1, 3) end)
    check("permute", function(x) return x:permute(2, 3, 1) end)
    check("narrow", function(x) return x:narrow(2, 2, 2) end)
    check("select", function(x) return x:select(3, 4) end)
    check("diagonal", function(x) return x:diagonal(0, 2, 3) end)
    check("chain", function(x) return x:narrow(3, 2, 3):transpose(1, 2):select(1, 3) end)
    check("unfold, overlapping", function(x) return x:unfold(3, 3, 1) end, true)
    -- twice through one view: the gradients add
    local x = T.ones(2, 3, { dtype = T.float64 }):requires_grad_()
    local t = x:t()
    ;(t * 2 + t * 3):sum():backward()
    assert.is_true(T.equal(x.grad, T.full({ 2, 3 }, 5, { dtype = T.float64 })))
  end)

  it("a strided view's backward is itself differentiable (create_graph)", function()
    local x = T.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = T.float64 }):requires_grad_()
    local y = (x:t():narrow(1, 2, 2) ^ 3):sum()
    local g = T.autograd.grad(y, x, { create_graph = true })
    -- d/dx of x^3 on columns 2 and 3: 3 x^2 there, 0 in column 1
    assert.same({ { 0, 12, 27 }, { 0, 75, 108 } }, g:tolist())
    local gg = T.autograd.grad(g:sum(), x)
    assert.same({ { 0, 12, 18 }, { 0, 30, 36 } }, gg:tolist())
    -- a product of two views of the same tensor: y = sum(a[:, 2] * a[:, 1]) (a (3, 2))
    local a = T.randn(3, 2, { dtype = T.float64 }):requires_grad_()
    local ga = T.autograd.grad((a:t():select(1, 2) * a:select(2, 1)):sum(), a, { create_graph = true })
    assert.is_true(T.allclose(ga:detach(), T.stack({ a:select(2, 2), a:select(2, 1) }, 2):detach()))
    local h = T.autograd.grad(ga:select(2, 1):sum(), a)  -- d/da of sum(a[:, 2]) = column 2 ones
    assert.same({ { 0, 1 }, { 0, 1 }, { 0, 1 } }, h:tolist())
  end)

  it("an in-place op on a view rebases the base's history (CopySlices)", function()
    local x = f32 { 1, 2, 3 }
    local y = x * 1
    y[2]:mul_(5)
    assert.are.equal("CopySlices", y.grad_fn:name())
    ;(y * y):sum():backward()
    assert.are.same({ 2, 100, 6 }, list(x.grad))
  end)

  it("a view made before an in-place op on its base takes the base's new history", function()
    local x = f32 { 1, 2, 3, 4 }
    local y = x * 1
    local v = y:narrow(1, 2, 2)
    y:mul_(T.tensor { 1, 10, 100, 1000 })
    assert.are.same({ 20, 300 }, list(v:detach()))
    v:sum():backward()
    assert.are.same({ 0, 10, 100, 0 }, list(x.grad))
    -- a view kept across in-place updates of a leaf (an optimizer step)
    local w = f32 { 1, 2 }
    local wt = w:view(2, 1)
    T.no_grad(function() w:mul_(3) end)
    ;(wt * wt):sum():backward()
    assert.are.same({ 6, 12 }, list(w.grad))
  end)

  it("writing a value that requires grad into a view of a plain tensor", function()
    local x = f32 { 2, 3 }
    local y = T.zeros(4)
    y:narrow(1, 2, 2):copy_(x)
    assert.is_true(y.requires_grad)
    assert.are.equal("CopySlices", y.grad_fn:name())
    ;(y * T.tensor { 1, 10, 100, 1000 }):sum():backward()
    assert.are.same({ 10, 100 }, list(x.grad))
  end)

  it("setitem of a value that requires grad", function()
    local v = f32 { 7, 8 }
    local y = T.zeros(2, 3)
    y[{ {}, 2 }] = v
    assert.is_true(y.requires_grad)
    ;(y * T.arange(1, 7):view(2, 3)):sum():backward()
    assert.are.same({ 2, 5 }, list(v.grad))
  end)

  it("a changed saved tensor is an error, with PyTorch's message", function()
    local x = f32 { 1, 2 }
    local y = x:exp()
    local z = y * 2
    y:add_(1)
    assert.has_error(function() z:sum():backward() end)
    -- as in PyTorch, even y's own backward needs exp's saved output
    assert.has_error(function() y:sum():backward() end)
    local a = x * 1
    local b = a * a
    a:mul_(2)
    local ok, msg = pcall(function() b:sum():backward() end)
    assert.is_false(ok)
    assert.matches("one of the variables needed for gradient computation has been modified by an inplace operation", msg, 1, true)
  end)

  it("in place into a leaf that requires grad, or a view of one, is an error", function()
    local x = f32 { 1, 2 }
    assert.has_error(function() x:mul_(2) end,
      "mul_: a leaf tensor that requires grad is being used in an in-place operation")
    assert.has_error(function() x[1]:fill_(0) end,
      "fill_: a view of a leaf tensor that requires grad is being used in an in-place operation")
    assert.has_error(function() x[1] = 3 end)
    T.no_grad(function() x:mul_(2) end)
    assert.are.same({ 2, 4 }, list(x:detach()))
  end)

  it("random fills: an error on a leaf that requires grad; a filled non-leaf loses its history", function()
    local x = f32 { 1, 2 }
    assert.has_error(function() x:uniform_() end,
      "uniform_: a leaf tensor that requires grad is being used in an in-place operation")
    local y = x * 2
    y:bernoulli_(0.5)
    assert.are.equal("FillBackward0", y.grad_fn:name())
    ;(y * x):sum():backward()
    assert.are.same(list(y:detach()), list(x.grad))
    T.no_grad(function() x:normal_() end)
  end)

  it("in-place ops autograd cannot differentiate are errors, not wrong gradients", function()
    local x = f32 { 1, 2 }
    local y = T.zeros(3)
    assert.has_error(function() y:scatter_(1, T.tensor { 1, 1 }, x, "multiply") end)
    -- scatter_reduce_ is differentiable for every reduction (torch's gradient)
    y = T.zeros(3)
    y:scatter_reduce_(1, T.tensor { 1, 1 }, x, "amax")
    y:sum():backward()
    assert.are.same({ 0, 1 }, list(x.grad))
  end)
end)

describe("bad input", function()
  it("backward of a non-scalar without a gradient", function()
    local y = f32 { 1, 2 } * 2
    assert.has_error(function() y:backward() end,
      "backward: grad can be implicitly created only for scalar outputs (output 1 has shape [2])")
  end)

  it("backward twice through a freed graph", function()
    local x = f32 { 1, 2 }
    local y = (x:exp()):sum()
    y:backward()
    local ok, msg = pcall(function() y:backward() end)
    assert.is_false(ok)
    assert.matches("trying to backward through the graph a second time", msg, 1, true)
    assert.matches("retain_graph=true", msg, 1, true)
  end)

  it("a gradient of the wrong shape", function()
    local y = f32 { 1, 2 } * 2
    assert.has_error(function() y:backward(T.ones(3)) end,
      "backward: mismatch in shape: grad_output[1] has a shape of [3] and output[1] has a shape of [2]")
    -- an integer gradient is cast to the output's dtype, as torch's engine casts it
    local x = f32 { 1, 2 }:requires_grad_()
    ;(x * 2):backward(T.ones(2, { dtype = T.int64 }))
    assert.same({ 2, 2 }, x.grad:tolist())
  end)

  it("backward of a tensor that does not require grad", function()
    assert.has_error(function() T.ones(1):backward() end,
      "backward: element 1 of tensors does not require grad and does not have a grad_fn")
  end)

  it("assigning a grad of another shape or dtype", function()
    local x = f32 { 1, 2 }
    assert.has_error(function() x.grad = T.ones(3) end)
    assert.has_error(function() x.grad = T.ones(2, { dtype = T.float64 }) end)
  end)

  it("out= with inputs that require grad", function()
    local x = f32 { 1 }
    assert.has_error(function() T.mul(x, 2, { out = T.zeros(1) }) end,
      "mul: functions with out= arguments don't support automatic differentiation, but one of the arguments requires grad")
  end)
end)

describe("memory", function()
  it("graphs are freed with their tensors (no cycle through saved outputs)", function()
    -- this thread's bytes: the process-wide count also moves with whatever
    -- threads an earlier spec file left running in the same busted process
    -- collected until the count is steady: garbage an earlier spec left
    -- can take several cycles (a node's Lua backward, freed with the node,
    -- frees what it captured one cycle later)
    local function settle()
      local prev
      for _ = 1, 20 do
        collectgarbage()
        local now = T.memory_stats().thread_live_bytes
        if now == prev then return now end
        prev = now
      end
      return prev
    end
    local before = settle()
    do
      local x = T.randn(100, 100, { requires_grad = true })
      for _ = 1, 5 do
        local y = x:exp():tanh():sigmoid()   -- saves outputs
        local z = (y:mm(y) + y:t():relu()):softmax(2):sum()
        z:backward()
      end
      x = nil
    end
    assert.are.equal(before, settle())
  end)
end)

describe("gradients of composite expressions equal PyTorch's", function()
  local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
  local cases = dofile(here .. "../fixtures/autograd_cases.lua")
  for _, c in ipairs(cases) do
    it(c.name, function()
      local inputs = {}
      for i, v in ipairs(c.inputs) do
        inputs[i] = T.tensor(v.data, { dtype = T[v.dtype] }):view(v.shape)
        if v.grad then inputs[i]:requires_grad_() end
      end
      local fn = assert(load("return " .. c.lua, c.name))()
      local out = fn(T, unpack(inputs))
      out:backward()
      close(out:detach(), T.tensor(c.output, { dtype = T.float64 }), 1e-5)
      for i, v in ipairs(c.inputs) do
        if v.grad then
          close(inputs[i].grad, T.tensor(v.grad, { dtype = T.float64 }):view(v.shape), 1e-4)
        end
      end
    end)
  end
end)
