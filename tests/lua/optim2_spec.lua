-- Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS against
-- torch.optim (python3-torch 1.13): tests/fixtures/optim2_cases.lua, made by
-- tests/fixtures/gen_optim2.py.
local T = require "ember"
local fx = dofile("tests/fixtures/optim2_cases.lua")

local function tensor(f, dtype) return T.tensor(f.v, { dtype = dtype or T.float64 }):reshape(f.shape) end

local function label_of(c)
  local ks = {}
  for k, v in pairs(c.opts) do
    if type(v) == "table" then v = "{" .. v[1] .. "," .. v[2] .. "}" end
    ks[#ks + 1] = k .. "=" .. tostring(v)
  end
  table.sort(ks)
  return c.name .. "(" .. table.concat(ks, ", ") .. ")"
end

-- the quadratic's gradient, by the generator's ops
local function grad_of(p, i, dtype)
  local a, c, b = tensor(fx.qa[i], dtype), tensor(fx.qc[i], dtype), tensor(fx.qb[i], dtype)
  return a * (p:detach() - c) + b
end

local function run(c, dtype)
  local ps = {}
  for i, f in ipairs(fx.p0) do ps[i] = tensor(f, dtype):requires_grad_() end
  local opt = T.optim[c.name](ps, c.opts)
  local after = {}
  for k = 1, #c.after do
    for i, p in ipairs(ps) do p.grad = grad_of(p, i, dtype) end
    opt:step()
    local snap = {}
    for i, p in ipairs(ps) do snap[i] = p:detach():double():clone() end
    after[k] = snap
  end
  return after, opt, ps
end

local function maxdiff(a, f)
  return (a - tensor(f)):abs():max():item()
end

describe("more optimizers against torch.optim (fused C steps)", function()
  for _, c in ipairs(fx.cases) do
    local label = label_of(c)
    it(label .. " float64", function()
      local after = run(c, T.float64)
      for k, snap in ipairs(after) do
        for i, p in ipairs(snap) do
          local d = maxdiff(p, c.after[k][i])
          assert(d <= 1e-14, string.format("step %d param %d: max |diff| %g", k, i, d))
        end
      end
    end)
    it(label .. " float32", function()
      local after = run(c, T.float32)
      for k, snap in ipairs(after) do
        for i, p in ipairs(snap) do
          local d = maxdiff(p, c.after32[k][i])
          assert(d <= 2e-6, string.format("step %d param %d: max |diff| %g", k, i, d))
        end
      end
    end)
    it(label .. " state_dict has PyTorch's state keys and shapes", function()
      local _, opt = run(c, T.float64)
      local sd = opt:state_dict()
      local st = sd.state[1]
      local keys = {}
      for k in pairs(st) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.are.same(c.keys, keys)
      for k, shape in pairs(c.shapes) do
        local v = st[k]
        if shape == "number" then
          assert(type(v) == "number", k .. " should be a number")
        elseif k == "step" then
          -- PyTorch's 0-d step tensor is a Lua number here (as Adam's)
          assert(type(v) == "number", "step should be a number")
        else
          assert(T.is_tensor(v), k .. " should be a tensor")
          assert.are.same(shape, v:size():totable())
        end
      end
    end)
  end

  it("state_dict / load_state_dict continue a run exactly", function()
    for _, c in ipairs(fx.cases) do
      local ps = {}
      for i, f in ipairs(fx.p0) do ps[i] = tensor(f):requires_grad_() end
      local opt = T.optim[c.name](ps, c.opts)
      for _ = 1, 3 do
        for i, p in ipairs(ps) do p.grad = grad_of(p, i) end
        opt:step()
      end
      local ps2 = {}
      for i, p in ipairs(ps) do ps2[i] = p:detach():clone():requires_grad_() end
      local opt2 = T.optim[c.name](ps2, c.opts)
      opt2:load_state_dict(opt:state_dict())
      for _ = 1, 3 do
        for i, p in ipairs(ps) do p.grad = grad_of(p, i) end
        for i, p in ipairs(ps2) do p.grad = grad_of(p, i) end
        opt:step()
        opt2:step()
      end
      for i = 1, #ps do assert(T.equal(ps[i]:detach(), ps2[i]:detach()), label_of(c)) end
    end
  end)

  it("Adagrad has its state before the first step, as PyTorch", function()
    local p = T.ones(2, { requires_grad = true })
    local opt = T.optim.Adagrad({ p }, { initial_accumulator_value = 0.25 })
    local st = opt:state_dict().state[1]
    assert.are.equal(0, st.step)
    assert.are.same({ 0.25, 0.25 }, st.sum:tolist())
  end)

  it("explains bad options", function()
    local ps = { T.ones(2, { requires_grad = true }) }
    local cases = {
      { function() T.optim.Adagrad(ps, { lr_decay = -1 }) end, "Adagrad: Invalid lr_decay value: -1" },
      { function() T.optim.Adagrad(ps, { foreach = true }) end, "Adagrad: unknown option 'foreach'" },
      { function() T.optim.Adadelta(ps, { rho = 1.5 }) end, "Adadelta: Invalid rho value: 1.5" },
      { function() T.optim.Adamax(ps, { betas = { 1, 0.9 } }) end, "Adamax: Invalid beta parameter at index 1: 1" },
      { function() T.optim.NAdam(ps, { maximize = true }) end, "NAdam: unknown option 'maximize'" },
      { function() T.optim.NAdam(ps, { momentum_decay = -1 }) end, "NAdam: Invalid momentum_decay value: -1" },
      { function() T.optim.RAdam(ps, { eps = -1 }) end, "RAdam: Invalid epsilon value: -1" },
      { function() T.optim.ASGD(ps, { weight_decay = -1 }) end, "ASGD: Invalid weight_decay value: -1" },
      { function() T.optim.Rprop(ps, { etas = { 0.5, 0.9 } }) end, "Rprop: Invalid eta values: 0.5, 0.9" },
      { function() T.optim.Rprop(ps, { step_sizes = 1 }) end, "Rprop: step_sizes must be a pair of numbers" },
      { function() T.optim.LBFGS(ps, { line_search_fn = "armijo" }) end,
        "LBFGS: only 'strong_wolfe' is supported as line_search_fn, got armijo" },
      { function() T.optim.LBFGS({ { params = ps }, { params = { T.ones(1) } } }) end,
        "LBFGS: LBFGS doesn't support per-parameter options (parameter groups)" },
      { function() T.optim.LBFGS(ps):step() end, "step: LBFGS needs a closure" },
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert(not ok, "case " .. i .. " did not fail")
      assert(tostring(err):find(c[2], 1, true), "case " .. i .. ": " .. tostring(err))
    end
    -- the engine's own checks, with the op's name
    local opt = T.optim.Adamax(ps)
    ps[1].grad = T.ones(2)
    opt:step()
    opt.state[ps[1]].exp_inf = T.ones(3)
    local ok, err = pcall(function() opt:step() end)
    assert(not ok)
    assert(tostring(err):find("Adamax: exp_inf of shape [3] does not match the parameter's shape [2]", 1, true), err)
  end)
end)

describe("LBFGS against torch.optim.LBFGS on Rosenbrock", function()
  for _, c in ipairs(fx.lbfgs) do
    local ks = {}
    for k, v in pairs(c.opts) do ks[#ks + 1] = k .. "=" .. tostring(v) end
    table.sort(ks)
    it("LBFGS(" .. table.concat(ks, ", ") .. ")", function()
      local x = T.tensor({ -1.5, 2.0 }, { dtype = T.float64, requires_grad = true })
      local opt = T.optim.LBFGS({ x }, c.opts)
      local function closure()
        opt:zero_grad()
        local a, b = x[1]:detach(), x[2]:detach()
        local f = (1 - a) * (1 - a) + 100 * (b - a * a) * (b - a * a)
        local ga = -2 * (1 - a) - 400 * a * (b - a * a)
        local gb = 200 * (b - a * a)
        x.grad = T.stack({ ga, gb })
        return f
      end
      for k = 1, #c.xs do
        local loss = opt:step(closure)
        -- the direction's updates (add_ with alpha) may round differently
        -- from torch's (which may fuse the multiply-add) in the last bit; 25
        -- to 40 iterations of line search carry that on: 1e-6
        assert(math.abs(loss:item() - c.losses[k]) <= 1e-6 * math.max(1, math.abs(c.losses[k])),
          string.format("step %d: loss %.17g vs %.17g", k, loss:item(), c.losses[k]))
        local d = maxdiff(x:detach(), c.xs[k])
        assert(d <= 1e-6, string.format("step %d: max |diff| %g", k, d))
      end
      local st = opt.state[x]
      assert.are.equal(c.func_evals, st.func_evals)
      assert.are.equal(c.n_iter, st.n_iter)
    end)
  end

  it("float32 converges on Rosenbrock too", function()
    local x = T.tensor({ -1.5, 2.0 }, { requires_grad = true })
    local opt = T.optim.LBFGS({ x }, { line_search_fn = "strong_wolfe" })
    local function closure()
      opt:zero_grad()
      local f = (1 - x[1]) ^ 2 + 100 * (x[2] - x[1] * x[1]) ^ 2
      f:backward()
      return f
    end
    for _ = 1, 5 do opt:step(closure) end
    assert((x:detach() - T.ones(2)):abs():max():item() < 1e-3)
  end)
end)

describe("optimizer state is copied, arguments checked (difftest round 3)", function()
  local S = T.optim.lr_scheduler
  local function rosen(z) local a = z[2] - z[1] ^ 2; local b = 1 - z[1]; return 100 * a ^ 2 + b ^ 2 end
  it("LBFGS: a loaded state shares no history with the original", function()
    local function mk()
      local x = T.tensor({ -1.2, 1.0 }, { dtype = T.float64, requires_grad = true })
      local o = T.optim.LBFGS({ x }, { max_iter = 3, history_size = 4, line_search_fn = "strong_wolfe" })
      return x, o, function() o:zero_grad(); local l = rosen(x); l:backward(); return l end
    end
    local x, o, cl = mk()
    for _ = 1, 2 do o:step(cl) end
    local x2, o2, cl2 = mk()
    x2:detach():copy_(x:detach())
    o2:load_state_dict(o:state_dict())
    assert.is_false(o2.state[x2].old_dirs == o.state[x].old_dirs)
    -- both go on, interleaved: each reaches torch's point after 5 steps
    for _ = 1, 3 do o:step(cl); o2:step(cl2) end
    for _, z in ipairs { x, x2 } do
      assert.near(-0.7456203765, z[1]:item(), 1e-8)
      assert.near(0.5092844103, z[2]:item(), 1e-8)
    end
  end)
  it("betas are copied through state_dict and load_state_dict", function()
    local o1 = T.optim.Adam({ T.zeros(2, { requires_grad = true }) }, { betas = { 0.9, 0.999 } })
    local o2 = T.optim.Adam({ T.zeros(2, { requires_grad = true }) })
    o2:load_state_dict(o1:state_dict())
    o1.param_groups[1].betas[1] = 0.1
    assert.equal(0.9, o2.param_groups[1].betas[1])
    local sd = o1:state_dict()
    sd.param_groups[1].betas[1] = 0.2
    assert.equal(0.1, o1.param_groups[1].betas[1])
  end)
  it("lr: NaN and tensors refused", function()
    local p = T.zeros(2, { requires_grad = true })
    for _, name in ipairs { "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop" } do
      assert.has_error(function() T.optim[name]({ p }, { lr = 0 / 0 }) end, name .. ": Invalid learning rate: nan")
    end
    assert.has_error(function() T.optim.SGD({ p }, { lr = T.tensor(0.1) }) end,
      "SGD: lr must be a number, got a tensor (use lr:item())")

  end)
  it("schedulers refuse arguments whose steps would divide by zero", function()
    local o = T.optim.SGD({ T.zeros(2, { requires_grad = true }) }, { lr = 0.1, momentum = 0.9 })
    assert.has_error(function() S.LinearLR(o, { start_factor = 0 }) end,
      "LinearLR: start_factor 0 is not supported (each step divides by it); use a small positive factor")
    assert.has_error(function() S.ConstantLR(o, { factor = 0, total_iters = 2 }) end,
      "ConstantLR: factor 0 cannot be lifted at total_iters (it divides by the factor)")
    assert.has_error(function() S.CyclicLR(o, { base_lr = 0.01, max_lr = 0.1, step_size_up = 0 }) end,
      "CyclicLR: step_size_up (0) and step_size_down (0) must be >= 0 with a positive sum")
    assert.has_error(function() S.PolynomialLR(o, { total_iters = 3, power = -1 }) end,
      "PolynomialLR: power must be >= 0, got -1")
    -- the boundaries still work: power 0 keeps the lr, a tiny start factor ramps
    local s = S.LinearLR(o, { start_factor = 1e-3, total_iters = 2 })
    s:step(); s:step()
    assert.near(0.1, o.param_groups[1].lr, 1e-12)
  end)
end)
