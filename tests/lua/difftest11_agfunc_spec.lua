-- Differences from PyTorch 1.13 found by the eleventh round of differential
-- tests, in the higher-level autograd API: T.autograd.functional under
-- T.no_grad, T.autograd.grad's arguments, and where their errors point.
-- Each case gives torch's value (float64) or behaviour.
local T = require "ember"
local U = require "specutil"
local A = T.autograd
local AF = A.functional

local function f64(v) return T.tensor(v, { dtype = T.float64 }) end
local function near(got, want, tol) U.close_list(got, want, tol or 1e-12, "got") end
-- the error raised by f starts with this file's name and a line (the
-- caller's position, as a C function's error) and holds msg
local function err_here(f, msg)
  local ok, e = pcall(f)
  assert(not ok, "expected an error: " .. msg)
  e = tostring(e)
  assert(e:find("^[^\n]-difftest11_agfunc_spec%.lua:%d+: "), "error not at the caller's line: " .. e)
  assert(e:find(msg, 1, true), ("expected %q in the error, got %q"):format(msg, e))
end

describe("difftest round 11: T.autograd.functional (torch 1.13)", function()
  local x0, v0 = { 0.3, -0.7, 1.2 }, { 1, -2, 0.5 }
  local function sin(y) return y:sin() end
  local function sinsum(y) return y:sin():sum() end

  it("runs in grad mode under T.no_grad, as torch's (enable_grad around the body)", function()
    -- torch: with torch.no_grad(): jacobian(lambda y: (y.sin(), y.sum()), x)
    -- -> (diag(cos x), ones(3)); hessian(lambda y: y.sin().sum(), x) -> diag(-sin x)
    local x = f64(x0):requires_grad_()
    local J, Hs, mode = T.no_grad(function()
      return AF.jacobian(function(y) return { y:sin(), y:sum() } end, x), AF.hessian(sinsum, x), T.is_grad_enabled()
    end)
    near(J[1], { 0.955336489125606, 0, 0, 0, 0.7648421872844885, 0, 0, 0, 0.3623577544766736 })
    near(J[2], { 1, 1, 1 })
    near(Hs, { -0.29552020666133955, 0, 0, 0, 0.644217687237691, 0, 0, 0, -0.9320390859672263 })
    assert.is_false(J[1].requires_grad)
    assert.is_false(mode)  -- the mode is restored
  end)

  it("with create_graph under T.no_grad the results have their graph", function()
    -- torch: with torch.no_grad(): vjp/jvp(sin, x, v, create_graph=True),
    -- hvp/vhp(lambda y: y.sin().sum(), x, v, create_graph=True), hessian(...):
    -- every result requires grad
    local x, v = f64(x0):requires_grad_(), f64(v0)
    local r = T.no_grad(function()
      local o1, g1 = AF.vjp(sin, x, v, { create_graph = true })
      local o2, g2 = AF.jvp(sin, x, v, { create_graph = true })
      local o3, g3 = AF.hvp(sinsum, x, v, { create_graph = true })
      local o4, g4 = AF.vhp(sinsum, x, v, { create_graph = true })
      local Hs = AF.hessian(sinsum, x, { create_graph = true })
      return { o1, g1, o2, g2, o3, g3, o4, g4, Hs }
    end)
    for i, t in ipairs(r) do assert(t.requires_grad, "result " .. i .. " requires grad") end
    near(r[1], { 0.29552020666133955, -0.644217687237691, 0.9320390859672263 })
    near(r[2], { 0.955336489125606, -1.529684374568977, 0.1811788772383368 })
    near(r[4], { 0.955336489125606, -1.529684374568977, 0.1811788772383368 })
    near(r[5], { 0.5833416053908749 })
    near(r[6], { -0.29552020666133955, -1.288435374475382, -0.46601954298361314 })
    near(r[8], { -0.29552020666133955, -1.288435374475382, -0.46601954298361314 })
    near(r[9], { -0.29552020666133955, 0, 0, 0, 0.644217687237691, 0, 0, 0, -0.9320390859672263 })
    -- the graph leads back to x: d/dx sum(hvp) = -cos(x) * v
    local g = A.grad(r[6]:sum(), x)
    near(g, { -0.955336489125606 * 1, -0.7648421872844885 * -2, -0.3623577544766736 * 0.5 })
  end)

  it("raises its errors at the caller's line", function()
    local x = f64(x0)
    -- torch: RuntimeError: Output 0 of the user-provided function is
    -- independent of input 1. This is not allowed in strict mode.
    err_here(function()
      local J = AF.jacobian(function(a, b) return a * 2 end, { x, f64 { 1 } }, { strict = true })
      return J
    end, "jacobian: output 1 of the function is independent of input 2 (strict = true)")
    -- torch: RuntimeError: The Tensor returned by the function given to
    -- hessian should contain a single element
    err_here(function()
      local Hs = AF.hessian(function(a) return a * a end, x)
      return Hs
    end, "hessian: the function must return a tensor with a single element")
    -- torch: only Tensors of floating point dtype can require gradients
    err_here(function()
      local J = AF.jacobian(function(a) return a end, T.tensor { 1, 2 })
      return J
    end, "only tensors of floating point and complex dtype can require gradients")
  end)
end)

describe("difftest round 11: T.autograd.grad's arguments (torch 1.13)", function()
  it("takes grad_outputs as its third argument, as torch's positional one", function()
    -- torch: grad(x ** 2, x, torch.tensor([1., 0., 2.])) -> (2, 0, 12)
    local x = f64 { 1, 2, 3 }:requires_grad_()
    local y = x ^ 2
    near(A.grad(y, x, f64 { 1, 0, 2 }, { retain_graph = true }), { 2, 0, 12 })
    -- a list of them: grad([x ** 2, x * 3], x, [ones, (2, 0, 0)]) -> (8, 4, 6)
    local g = A.grad({ y, x * 3 }, { x }, { f64 { 1, 1, 1 }, f64 { 2, 0, 0 } })
    near(g[1], { 8, 4, 6 })
    -- false (None) for a one-element output: grad([x.sum(), x * 2], x, [None, ones])
    near(A.grad({ x:sum(), x * 2 }, x, { false, f64 { 1, 1, 1 } }), { 3, 3, 3 })
    U.err(function() A.grad(x * 2, x, f64 { 1, 1, 1 }, { grad_outputs = f64 { 1, 1, 1 } }) end,
      "grad: grad_outputs given twice")
  end)

  it("takes only_inputs = true (deprecated; torch 1.13 ignores it), refuses false", function()
    -- torch: grad((x * z).sum(), x, only_inputs=True) -> (2, 2, 2), z.grad None
    local x, z = f64 { 1, 2, 3 }:requires_grad_(), f64 { 2 }:requires_grad_()
    near(A.grad((x * z):sum(), x, { only_inputs = true }), { 2, 2, 2 })
    assert.is_nil(z.grad)
    -- false (accumulate into the other leaves too) is refused, not ignored
    U.err(function() A.grad((x * z):sum(), x, { only_inputs = false }) end,
      "grad: only_inputs = false is not supported")
  end)

  it("raises the engine's errors at the caller's line", function()
    local x = f64 { 1, 2, 3 }:requires_grad_()
    -- torch: RuntimeError: grad can be implicitly created only for scalar outputs
    err_here(function()
      local g = A.grad(x * 2, x)
      return g
    end, "grad can be implicitly created only for scalar outputs")
    -- torch: Trying to backward through the graph a second time ...
    local y = x:exp():sum()
    A.grad(y, x)
    err_here(function()
      local g = A.grad(y, x)
      return g
    end, "trying to backward through the graph a second time")
    err_here(function()
      A.backward({ x * 2 })
    end, "grad can be implicitly created only for scalar outputs")
    -- a hook's own error keeps its own position
    local w = f64 { 1, 2 }:requires_grad_()
    local u = w * 2
    u:register_hook(function() error("hook failed") end)
    local ok, e = pcall(A.grad, (u * 1):sum(), w)
    assert.is_false(ok)
    assert(tostring(e):find("difftest11_agfunc_spec%.lua:%d+: hook failed"), tostring(e))
  end)
end)
