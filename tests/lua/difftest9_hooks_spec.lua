-- Differences from PyTorch 1.13's module hooks and nn.Module API found by
-- the ninth round of differential tests (ember against torch on the same
-- modules), each with torch's behaviour in a comment.
local T = require "ember"
local U = require "specutil"
local err = U.err
local nn = T.nn

local function f32(v) return T.tensor(v, { dtype = T.float32, requires_grad = true }) end

describe("difftest round 9: module hooks and nn.Module API (torch 1.13)", function()
  it("a forward hook's args keep their count (a nil argument included)", function()
    local Two = nn.Module:extend("Two")
    function Two:forward(a, b) return a end
    local m, n = Two(), nil
    m:register_forward_hook(function(_, args) n = args.n end)
    m(T.ones(1), nil)
    -- hook(m, input, output): len(input) -> 2 for m(x, None)
    assert.equal(2, n)
  end)

  it("full backward hook: grad_input has one entry per argument, nil for a non-tensor", function()
    local M = nn.Module:extend("M")
    function M:forward(a, k, b) return a * b * k end
    local m, gin, gout = M(), nil, nil
    m:register_full_backward_hook(function(_, gi, go) gin, gout = gi, go end)
    local a, b = f32({ 1, 2 }), f32({ 3, 4 })
    m(a, 2, b):sum():backward()
    -- grad_input -> (tensor([6., 8.]), None, tensor([2., 4.]))
    assert.equal(3, gin.n)
    assert.same({ 6, 8 }, gin[1]:tolist())
    assert.is_nil(gin[2])
    assert.same({ 2, 4 }, gin[3]:tolist())
    assert.equal(1, gout.n)
    -- several arguments' gradients may be replaced at once:
    -- return (gi[0] * 10, None, gi[2] + 1) -> a.grad [60, 80], b.grad [3, 5]
    m = M()
    m:register_full_backward_hook(function(_, gi) return { gi[1] * 10, nil, gi[3] + 1, n = 3 } end)
    a, b = f32({ 1, 2 }), T.tensor({ 3, 4 }, { dtype = T.float64, requires_grad = true })
    m(a, 2, b):sum():backward()
    assert.same({ 60, 80 }, a.grad:tolist())
    assert.same({ 3, 5 }, b.grad:tolist())
    assert.equal(T.float64, b.grad.dtype)
  end)

  it("full backward hook: an unused argument, or one without grad, gets zeros", function()
    local M = nn.Module:extend("M")
    function M:forward(a, b, c) return a * 2 end
    local m, gin = M(), nil
    m:register_full_backward_hook(function(_, gi) gin = gi end)
    local a, b = f32({ 1, 2 }), f32({ 1, 1, 1 })
    m(a, b, 5):sum():backward()
    -- grad_input -> (tensor([2., 2.]), tensor([0., 0., 0.]), None); b.grad -> zeros
    assert.is_not_nil(gin)
    assert.equal(3, gin.n)
    assert.same({ 2, 2 }, gin[1]:tolist())
    assert.same({ 0, 0, 0 }, gin[2]:tolist())
    assert.is_nil(gin[3])
    assert.same({ 0, 0, 0 }, b.grad:tolist())
    -- a tensor argument that does not require grad: zeros as well
    gin = nil
    m(a, T.ones(3)):sum():backward()
    assert.same({ 0, 0, 0 }, gin[2]:tolist())
  end)

  it("full backward hook: grad_output has one entry per output, and all of them", function()
    local S = nn.Module:extend("S")
    function S:init() self.w = nn.Parameter(T.ones(2)) end
    function S:forward(x) return { x * self.w * 2, 5, x * self.w * 3 } end
    local s, calls, gin, gout = S(), 0, nil, nil
    s:register_full_backward_hook(function(_, gi, go) calls, gin, gout = calls + 1, gi, go end)
    local o = s(T.ones(2))
    ;(o[1]:sum() + o[3]:sum() * 2):backward()
    -- one call: grad_input (None,), grad_output ([1., 1.], None, [2., 2.])
    assert.equal(1, calls)
    assert.equal(1, gin.n)
    assert.is_nil(gin[1])
    assert.equal(3, gout.n)
    assert.same({ 1, 1 }, gout[1]:tolist())
    assert.is_nil(gout[2])
    assert.same({ 2, 2 }, gout[3]:tolist())
  end)

  it("full backward hook: returning the wrong number of gradients is an error", function()
    local lin = nn.Linear(3, 2)
    lin:register_full_backward_hook(function(_, gi) return { gi[1], gi[1] } end)
    local x = T.randn(4, 3, { requires_grad = true })
    -- RuntimeError: Backward hook returned an invalid number of grad_input, got 2, but expected 1
    err(function() lin(x):sum():backward() end, "a hook returned 2 gradients, but grad_input has 1 entries")
  end)

  it("state_dict takes prefix and keep_vars", function()
    local l = nn.Linear(2, 2)
    -- list(l.state_dict(prefix='p.').keys()) -> ['p.weight', 'p.bias']
    assert.equal("p.weight,p.bias", table.concat(l:state_dict({ prefix = "p." }):keys(), ","))
    -- state_dict(keep_vars=True)['weight'] is l.weight
    local sd = l:state_dict({ keep_vars = true })
    assert.equal(l.weight, sd.weight)
    assert.is_true(sd.weight.requires_grad)
    assert.is_false(l:state_dict().weight.requires_grad)
    err(function() l:state_dict({ prefix = 1 }) end, "option 'prefix' must be a string")
  end)

  it("register_buffer takes {persistent = false}", function()
    local l = nn.Linear(2, 2)
    -- l.register_buffer('q', t, persistent=False): not in state_dict
    l:register_buffer("q", T.ones(1), { persistent = false })
    assert.equal("weight,bias", table.concat(l:state_dict():keys(), ","))
    assert.equal(1, #l:buffers())
    err(function() l:register_buffer("r", T.ones(1), { persist = false }) end, "unknown option 'persist'")
    err(function() l:register_buffer("r", T.ones(1), 1) end, "persistent must be a boolean")
  end)

  it("to(complex dtype) converts complex tensors too; double()/half() keep them", function()
    local M = nn.Module:extend("M")
    function M:init()
      self.w = nn.Parameter(T.ones(2))
      self:register_buffer("c", T.ones(2, { dtype = T.complex64 }))
      self:register_buffer("i", T.arange(2))
    end
    -- M().to(torch.complex128): w, c complex128, i int64
    local m = M():to(T.complex128)
    assert.equal(T.complex128, m.w.dtype)
    assert.equal(T.complex128, m.c.dtype)
    assert.equal(T.int64, m.i.dtype)
    -- M().double(): c stays complex64
    m = M():double()
    assert.equal(T.float64, m.w.dtype)
    assert.equal(T.complex64, m.c.dtype)
    assert.equal(T.complex64, M():half().c.dtype)
  end)
end)
