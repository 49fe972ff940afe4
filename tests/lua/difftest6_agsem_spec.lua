-- Differences from PyTorch 1.13 in the autograd engine's semantics (in-place
-- ops and versions, backward/grad arguments), found by difftest round 6,
-- each with torch's value or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = { dtype = T.float64 }
local function vals(t)
  local r = {}
  for i, v in ipairs(t:tolist()) do r[i] = ("%g"):format(v) end
  return table.concat(r, ",")
end

describe("difftest round 6: autograd semantics (torch 1.13)", function()
  it("lerp saves its operands only for the gradients that read them", function()
    -- torch: y = x * 2; z = torch.lerp(y, e, 0.25); y.add_(1); backward works
    -- (LerpBackward0 with a scalar weight saves nothing): x.grad = [1.5, 4.5]
    local x = T.tensor({1, 2}, f64):requires_grad_()
    local e = T.tensor({3, 5}, f64):requires_grad_()
    local y = x * 2
    local z = T.lerp(y, e, 0.25)
    y:add_(1)
    assert.equal("LerpBackward0", z.grad_fn:name())
    local s = (z * T.tensor({1, 3}, f64)):sum(); s:backward()
    assert.equal("1.5,4.5", vals(x.grad)); assert.equal("0.25,0.75", vals(e.grad))
    -- a tensor weight that needs no grad: start and end are not saved
    -- (torch: LerpBackward1, x.grad = [1.5, 3])
    x.grad = nil
    local w = T.tensor({0.25, 0.5}, f64)
    y = x * 2
    z = T.lerp(y, e, w)
    y:add_(1)
    assert.equal("LerpBackward1", z.grad_fn:name())
    local s = (z * T.tensor({1, 3}, f64)):sum(); s:backward()
    assert.equal("1.5,3", vals(x.grad))
    -- a weight that requires grad reads start and end: modifying one fails
    w:requires_grad_()
    y = x * 2
    z = T.lerp(y, e, w)
    y:add_(1)
    err(function() z:sum():backward() end, "modified by an inplace operation")
    -- the gradients themselves (gradcheck, every operand requiring grad)
    assert.is_true(T.autograd.gradcheck(function(a, b, c) return T.lerp(a * 1, b, c) end,
      { T.randn(3, f64):requires_grad_(), T.randn(3, f64):requires_grad_(), T.rand(3, f64):requires_grad_() }))
  end)

  it("grad_outputs and grad_tensors take false (PyTorch's None) for a hole", function()
    -- torch.autograd.grad([y, z], x, grad_outputs=[ones(2), None]) with z
    -- one element: z's gradient is 1 -> [3, 3]
    local x = T.tensor({1, 2}, { dtype = T.float32, requires_grad = true })
    local y, z = x * 2, x:sum()
    local g = T.autograd.grad({ y, z }, x, { grad_outputs = { T.ones(2), false }, retain_graph = true })
    assert.equal("3,3", vals(g))
    g = T.autograd.grad({ z, y }, x, { grad_outputs = { false, T.ones(2) }, retain_graph = true })
    assert.equal("3,3", vals(g))
    -- {g, nil} has length 1 in Lua: an n field gives the length
    g = T.autograd.grad({ y, z }, x, { grad_outputs = { T.ones(2), nil, n = 2 }, retain_graph = true })
    assert.equal("3,3", vals(g))
    err(function() T.autograd.grad({ y, z }, x, { grad_outputs = { T.ones(2) }, retain_graph = true }) end,
      "give false")
    T.autograd.backward({ z, y }, { false, T.ones(2) })
    assert.equal("3,3", vals(x.grad))
  end)

  it("t._version counts in-place writes, shared by views and detach()", function()
    -- torch: zeros(3)._version 0; add_ 1; x[0] = 5 2; a view's mul_ 3 (the
    -- view reads 3 too); zero_ 4; copy_ 5; detach():add_ 6
    local x = T.zeros(3)
    assert.equal(0, x._version)
    x:add_(1); assert.equal(1, x._version)
    x[1] = 5; assert.equal(2, x._version)
    local v = x[{ { 2, 3 } }]
    v:mul_(2); assert.equal(3, x._version); assert.equal(3, v._version)
    x:zero_(); assert.equal(4, x._version)
    x:copy_(T.ones(3)); assert.equal(5, x._version)
    x:detach():add_(1); assert.equal(6, x._version)
    assert.equal(0, (x + 1)._version)
    -- the numbers in the error of a modified saved tensor are these
    local a = T.tensor({ 1, 2 }, f64):requires_grad_()
    local y = a:exp()
    local v0 = y._version
    y:add_(1)
    assert.equal(v0 + 1, y._version)
    err(function() y:sum():backward() end,
      ("is at version %d; expected version %d instead"):format(v0 + 1, v0))
  end)
end)
