-- Differential round 10: T.nn.utils and nn.Module utilities against
-- torch 1.13 (values pasted from torch 1.13, CPU).
local T = require "ember"
local nn, U = T.nn, T.nn.utils
local F32 = { dtype = T.float32 }

local function close(t, want, tol)
  tol = tol or 1e-5
  local got = T.is_tensor(t) and t:reshape(-1):tolist() or t
  if type(want) == "number" then want = { want } end
  assert.are.equal(#want, #got)
  for i = 1, #want do
    local d = math.abs(got[i] - want[i])
    assert(d <= tol * (1 + math.abs(want[i])), string.format("[%d]: got %.9g, want %.9g", i, got[i], want[i]))
  end
end

-- a gradient with history: (w^3):sum() backward with create_graph
local function graph_grad()
  local w = T.tensor({ 1, 2 }, F32):requires_grad_()
  ;(w ^ 3):sum():backward { create_graph = true }
  return w, w.grad
end

describe("difftest10 nn.utils clip_grad on a create_graph gradient", function()
  it("clip_grad_norm_ records nothing: the norm needs no grad, the gradient keeps its history", function()
    local w, g = graph_grad()
    local r = U.clip_grad_norm_({ w }, 1.0)
    assert.is_false(r.requires_grad)
    close(r, 12.369317054748535)
    close(w.grad, { 0.24253559112548828, 0.9701423645019531 })
    -- torch: (tensor([ 6., 12.]),), the history unscaled
    close(T.autograd.grad(g:sum(), w), { 6, 12 })
    w.grad = nil -- w -> w.grad -> its graph -> w is a cycle (docs/autograd.md)
  end)
  it("clip_grad_value_ clamps the values, not the history", function()
    local w, g = graph_grad()
    U.clip_grad_value_({ w }, 5.0)
    close(w.grad, { 3, 5 })
    close(T.autograd.grad(g:sum(), w), { 6, 12 })
    w.grad = nil
  end)
end)

describe("difftest10 nn.utils weight_norm options tables", function()
  local W = { { 1, 2, -3 }, { 0.5, -1, 4 } }
  local X = { { 1, -2, 0.5 }, { 0.3, 0.2, -1 } }
  local function linear()
    local m = nn.Linear(3, 2)
    T.no_grad(function() m.weight:copy_(T.tensor(W, F32)); m.bias:fill_(0.1) end)
    return m
  end
  it("{dim = false} is torch's dim=None: values and gradients", function()
    local m = U.weight_norm(linear(), { dim = false })
    assert.are.equal(0, m.weight_g.ndim)
    close(m.weight_g, 5.590169906616211)
    local y = m(T.tensor(X, F32))
    close(y, { -4.400000095367432, 4.599999904632568, 3.799999952316284, -3.950000286102295 })
    ;(y ^ 2):sum():backward()
    close(m.weight_g.grad, 25.243417739868164)
    close(m.weight_v.grad, { -11.035679817199707, 10.088641166687012, 1.5470399856567383,
      4.572159767150879, -15.464319229125977, -5.562719345092773 }, 1e-4)
  end)
  it("(m, name, {dim =}) and {name =}; remove_weight_norm(m, {name =})", function()
    local m = U.weight_norm(linear(), "weight", { dim = 2 })   -- torch's dim=1
    close(m.weight_g, { 1.1180340051651, 2.2360680103302, 5.0 })
    local y = m(T.tensor(X, F32))
    ;(y ^ 2):sum():backward()
    close(m.weight_g.grad, { -2.7771966457366943, 26.036775588989258, 17.200000762939453 }, 1e-4)
    U.weight_norm(m, { name = "bias" })
    local names = {}
    for n in m:named_parameters() do names[#names + 1] = n end
    assert.are.same({ "weight_g", "weight_v", "bias_g", "bias_v" }, names)
    U.remove_weight_norm(m, { name = "bias" })
    close(m.bias, { 0.1, 0.1 })
    assert.has_error(function() U.weight_norm(linear(), { dims = 1 }) end,
      "weight_norm: unknown option 'dims' (expected one of: name, dim)")
  end)
end)

describe("difftest10 nn.Module utilities' errors", function()
  it("apply refuses a non-function at the caller (torch: 'int' object is not callable)", function()
    local ok, e = pcall(function() local m = nn.Linear(2, 2); m:apply(3); return m end)
    assert.is_false(ok)
    assert.truthy(e:find("apply: expected a function, got number", 1, true))
    assert.truthy(e:find("difftest10_nnutils_spec", 1, true))
    local seen = 0
    nn.Sequential(nn.ReLU()):apply(setmetatable({}, { __call = function() seen = seen + 1 end }))
    assert.are.equal(2, seen)
  end)
  it("to(bad device) is refused, a module without tensors included (torch parses the device first)", function()
    local ok, e = pcall(function() local m = nn.ReLU(); m:to("foo"); return m end)
    assert.is_false(ok)
    assert.truthy(e:find("to: unknown device 'foo'", 1, true))
    assert.has_error(function() nn.ReLU():to { device = "cuda:x" } end)
    local ok2, e2 = pcall(function() local m = nn.Linear(2, 2); m:to("foo"); return m end)
    assert.is_false(ok2)
    assert.truthy(e2:find("difftest10_nnutils_spec", 1, true))
    -- a tensor still gives its dtype
    local m = nn.Linear(2, 2):to(T.ones(2, { dtype = T.float64 }))
    assert.are.equal(T.float64, m.weight.dtype)
  end)
end)
