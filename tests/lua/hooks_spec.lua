-- Tensor hooks (t:register_hook), module hooks (register_forward_pre_hook,
-- register_forward_hook, register_full_backward_hook) and T.nn.summary,
-- with PyTorch 1.13's semantics (docs/nn.md, docs/autograd.md).
local T = require "ember"
local nn = T.nn

local function vals(t) return t:tolist() end

describe("t:register_hook", function()
  it("a leaf's hook sees the sum of the backward's gradients once, and may replace it", function()
    local x = T.tensor({ 1.0, 2.0 }, { dtype = T.float32, requires_grad = true })
    local calls, seen = 0, nil
    x:register_hook(function(g)
      calls = calls + 1
      seen = g:clone()
      return g * 10
    end)
    local y = (x * 2):sum() + (x * 3):sum()
    y:backward()
    assert.are.equal(1, calls)
    assert.are.same({ 5, 5 }, vals(seen))
    assert.are.same({ 50, 50 }, vals(x.grad))
    -- a second backward accumulates the hooked gradient
    ;((x * 1):sum()):backward()
    assert.are.same({ 60, 60 }, vals(x.grad))
  end)

  it("a non-leaf's hook changes what flows on, even when registered after the tensor was used", function()
    local x = T.tensor({ 1.0, -1.0, 3.0 }, { dtype = T.float32, requires_grad = true })
    local y = x * 2
    local z = (y * y):sum()
    local seen
    y:register_hook(function(g) seen = g:clone(); return g:clamp(-4, 4) end)
    z:backward()
    assert.are.same({ 4, -4, 12 }, vals(seen))
    -- dz/dx = clamp(2y) * 2
    assert.are.same({ 8, -8, 8 }, vals(x.grad))
  end)

  it("hooks run in registration order, each on the previous one's result; nil keeps it", function()
    local x = T.tensor({ 1.0 }, { dtype = T.float32, requires_grad = true })
    local y = x * 1
    local order = {}
    y:register_hook(function(g) order[#order + 1] = "a"; return g + 1 end)
    y:register_hook(function(g) order[#order + 1] = string.format("b:%g", g:item()) end)
    y:register_hook(function(g) order[#order + 1] = "c"; return g * 3 end)
    y:sum():backward()
    assert.are.same({ "a", "b:2", "c" }, order)
    assert.are.same({ 6 }, vals(x.grad))
  end)

  it("a handle's remove() takes the hook off", function()
    local x = T.tensor({ 1.0 }, { dtype = T.float32, requires_grad = true })
    local h = x:register_hook(function(g) return g * 100 end)
    h:remove()
    ;(x * 2):sum():backward()
    assert.are.same({ 2 }, vals(x.grad))
  end)

  it("a retained grad is the hooked one", function()
    local x = T.tensor({ 1.0, 2.0 }, { dtype = T.float32, requires_grad = true })
    local y = x * 3
    y:retain_grad()
    y:register_hook(function(g) return g * 2 end)
    y:sum():backward()
    assert.are.same({ 2, 2 }, vals(y.grad))
    assert.are.same({ 6, 6 }, vals(x.grad))
  end)

  it("hooks on an output of a multi-output op see only that output's gradient", function()
    local x = T.tensor({ 1.0, 2.0, 3.0, 4.0 }, { dtype = T.float32, requires_grad = true })
    local a, b = x:split(2)[1], x:split(2)[2]
    a:register_hook(function(g) return g * 0 end)
    ;(a:sum() + (b * 2):sum()):backward()
    assert.are.same({ 0, 0, 2, 2 }, vals(x.grad))
  end)

  it("explains bad hooks", function()
    local x = T.tensor({ 1.0 }, { dtype = T.float32, requires_grad = true })
    assert.has_error(function() T.ones(1):register_hook(function() end) end,
      "register_hook: cannot register a hook on a tensor that doesn't require gradient")
    assert.has_error(function() x:register_hook(3) end, "register_hook: expected a function, got number")
    assert.has_error(function() x:register_hook(function() end, { zz = 1 }) end)
    local y = x * 1
    y:register_hook(function() return T.ones(2) end)
    local ok, err = pcall(function() y:sum():backward() end)
    assert(not ok)
    assert(tostring(err):find("hooks may not change the shape or the dtype", 1, true), err)
    local w = x * 1
    w:register_hook(function() return "no" end)
    ok, err = pcall(function() w:sum():backward() end)
    assert(not ok)
    assert(tostring(err):find("register_hook: a hook must return a tensor or nil, got string", 1, true), err)
    local v = x * 1
    v:register_hook(function() error("boom") end)
    ok, err = pcall(function() v:sum():backward() end)
    assert(not ok and tostring(err):find("boom", 1, true), err)
    -- the engine is usable after a failed backward
    x.grad = nil
    ;(x * 5):sum():backward()
    assert.are.same({ 5 }, vals(x.grad))
  end)

  it("register_post_accumulate_grad_hook refuses extra arguments", function()
    local x = T.tensor({ 1.0 }, { dtype = T.float32, requires_grad = true })
    assert.has_error(function() x:register_post_accumulate_grad_hook(function() end, { zz = 1 }) end)
  end)
end)

describe("module hooks", function()
  local function linear()
    local lin = nn.Linear(3, 2)
    T.no_grad(function()
      lin.weight:copy_(T.tensor({ { 1, 2, 3 }, { -1, 0, 1 } }))
      lin.bias:copy_(T.tensor({ 0.5, -0.5 }))
    end)
    return lin
  end

  it("forward pre-hooks may replace the arguments, forward hooks the output", function()
    local lin = linear()
    local order = {}
    local h1 = lin:register_forward_pre_hook(function(m, args)
      assert.are.equal(lin, m)
      order[#order + 1] = "pre"
      return args[1] * 2 -- a single value: the one new argument
    end)
    local h2 = lin:register_forward_hook(function(m, args, out)
      order[#order + 1] = "fwd"
      assert.are.same({ { 2, 2, 2 } }, vals(args[1]))
      return out + 100
    end)
    local y = lin(T.ones(1, 3))
    assert.are.same({ "pre", "fwd" }, order)
    assert.are.same({ { 112.5, 99.5 } }, vals(y))
    h1:remove()
    h2:remove()
    assert.is_nil(rawget(lin, "_module_hooks"))
    assert.are.same({ { 6.5, -0.5 } }, vals(lin(T.ones(1, 3))))
  end)

  it("a pre-hook returning a table gives all the arguments; hooks of children fire inside Sequential", function()
    local seq = nn.Sequential(nn.Identity(), nn.ReLU())
    local names = {}
    for _, m in ipairs(seq:modules()) do
      m:register_forward_hook(function(mod) names[#names + 1] = mod.__name end)
    end
    seq[1]:register_forward_pre_hook(function(_, args) return { args[1] - 1 } end)
    local y = seq(T.tensor({ 0.5, 3 }))
    assert.are.same({ 0, 2 }, vals(y))
    assert.are.same({ "Identity", "ReLU", "Sequential" }, names)
  end)

  it("full backward hooks get grad_input and grad_output as PyTorch, and may replace grad_input", function()
    local lin = linear()
    local gin, gout
    local h = lin:register_full_backward_hook(function(m, gi, go)
      assert.are.equal(lin, m)
      gin, gout = gi, go
    end)
    local x = T.ones(2, 3, { dtype = T.float32, requires_grad = true })
    local y = lin(x)
    ;(y * T.tensor({ { 1, 2 }, { 3, 4 } })):sum():backward()
    assert.are.equal(1, gin.n)
    assert.are.equal(1, gout.n)
    assert.are.same({ { 1, 2 }, { 3, 4 } }, vals(gout[1]))
    -- grad_input = grad_output @ W
    assert.are.same({ { -1, 2, 5 }, { -1, 6, 13 } }, vals(gin[1]))
    assert.are.same({ { -1, 2, 5 }, { -1, 6, 13 } }, vals(x.grad))
    h:remove()
    lin:register_full_backward_hook(function(_, gi) return { gi[1] * 0 } end)
    x.grad = nil
    lin(x):sum():backward()
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, vals(x.grad))
    -- the parameters' gradients are untouched by the hook
    assert.are.same({ 4 + 2, 6 + 2 }, vals(lin.bias.grad))
  end)

  it("a full backward hook with no input needing a gradient gets nil entries", function()
    local lin = linear()
    local got
    lin:register_full_backward_hook(function(_, gi, go) got = { gi = gi, go = go } end)
    lin(T.ones(1, 3)):sum():backward()
    assert.are.equal(1, got.gi.n)
    assert.is_nil(got.gi[1])
    assert.are.same({ { 1, 1 } }, vals(got.go[1]))
  end)

  it("explains bad hooks", function()
    local lin = linear()
    assert.has_error(function() lin:register_forward_hook(1) end, "register_forward_hook: expected a function, got number")
    assert.has_error(function() lin:register_forward_pre_hook(function() end, { zz = 1 }) end)
    assert.has_error(function() lin:register_full_backward_hook(nil) end)
  end)
end)

describe("T.nn.summary", function()
  it("returns torchinfo's table: output shapes, parameter counts, totals; prints unless verbose = 0", function()
    local m = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Sequential(nn.Linear(32, 16), nn.Tanh()), nn.Linear(16, 3))
    local printed = {}
    local saved = _G.print
    _G.print = function(s) printed[#printed + 1] = s end
    local ok, s, st = pcall(nn.summary, m, { 2, 4 })
    _G.print = saved
    assert(ok, s)
    assert.are.equal(1, #printed)
    assert.are.equal(s, printed[1])
    assert.are.equal(4 * 32 + 32 + 32 * 16 + 16 + 16 * 3 + 3, st.total_params)
    assert.are.equal(st.total_params, st.trainable_params)
    local lines = {}
    for l in s:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.truthy(lines[4]:find("^Sequential%s+%[2, 3%]%s+%-%-$"))
    assert.truthy(lines[5]:find("Linear: 1%-1%s+%[2, 32%]%s+160$"))
    assert.truthy(lines[8]:find("Linear: 2%-1%s+%[2, 16%]%s+528$"))
    assert.truthy(s:find("Total params: 739", 1, true))
    assert.truthy(s:find("Non-trainable params: 0", 1, true))
    assert.are.same(7, #st.layers)
    -- the model's hooks are gone after
    for _, sub in ipairs(m:modules()) do assert.is_nil(rawget(sub, "_module_hooks")) end
    _G.print = function() error("printed") end
    local ok2, err = pcall(nn.summary, m, { 2, 4 }, { verbose = 0 })
    _G.print = saved
    assert(ok2, err)
  end)

  it("counts frozen parameters apart; takes several inputs", function()
    local Two = nn.Module:extend("Two")
    function Two:init() self.a = nn.Linear(2, 2); self.b = nn.Linear(3, 2) end
    function Two:forward(x, y) return self.a(x) + self.b(y) end
    local m = Two()
    m.b.weight:requires_grad_(false)
    local _, st = nn.summary(m, { { 5, 2 }, { 5, 3 } }, { verbose = 0 })
    assert.are.equal(6 + 8, st.total_params)
    assert.are.equal(14 - 6, st.trainable_params)
  end)

  it("explains bad arguments", function()
    assert.has_error(function() nn.summary({}, { 1 }) end, "summary: expected a module, got table")
    assert.has_error(function() nn.summary(nn.Linear(2, 2), {}) end)
    local ok0, err0 = pcall(nn.summary, nn.Linear(2, 2), { 1, 2 }, { zz = 1 })
    assert(not ok0 and tostring(err0):find("summary: unknown option 'zz'", 1, true))
    local ok, err = pcall(nn.summary, nn.Linear(2, 2), { 1, 3 }, { verbose = 0 })
    assert(not ok and tostring(err):find("summary: the model's forward failed", 1, true), err)
  end)
end)
