-- T.optim.lr_scheduler against torch.optim.lr_scheduler (python3-torch 1.13):
-- tests/fixtures/sched_cases.lua, made by tests/fixtures/gen_sched.py.
local T = require "ember"
local fx = dofile("tests/fixtures/sched_cases.lua")
local S = T.optim.lr_scheduler
local unpack = table.unpack or unpack

-- the lambdas of gen_sched.py, by name
local LAMBDAS = {
  pow95 = function(e) return 0.95 ^ e end,
  warmup = function(e) return math.min(1.0, (e + 1) / 5) end,
  half_every3 = function(e) return e % 3 == 0 and 0.5 or 1.0 end,
  inv = function(e) return 1.0 / (1 + e) end,
}

local function make_opt(kind)
  local p1, p2 = T.zeros(2, { requires_grad = true }), T.zeros(3, { requires_grad = true })
  if kind == "adam" then
    return T.optim.Adam({ { params = { p1 } }, { params = { p2 }, lr = 0.05 } }, { lr = 0.1 })
  end
  return T.optim.SGD({ { params = { p1 } }, { params = { p2 }, lr = 0.05 } }, { lr = 0.1, momentum = 0.9 })
end

local function resolve(opts)
  local o = {}
  for k, v in pairs(opts) do
    if k == "lr_lambda" then
      if type(v) == "table" then
        o[k] = {}
        for i, n in ipairs(v) do o[k][i] = LAMBDAS[n] end
      else
        o[k] = LAMBDAS[v]
      end
    else
      o[k] = v
    end
  end
  return o
end

local function build(opt, c)
  if c.name == "SequentialLR" or c.name == "ChainedScheduler" then
    local subs = {}
    for i, s in ipairs(c.subs) do subs[i] = S[s.name](opt, resolve(s.opts)) end
    if c.name == "ChainedScheduler" then return S.ChainedScheduler(subs) end
    local o = resolve(c.opts)
    o.schedulers = subs
    return S.SequentialLR(opt, o)
  end
  return S[c.name](opt, resolve(c.opts))
end

local function close(a, b)
  return math.abs(a - b) <= 1e-12 * math.max(1, math.abs(b))
end

local function check_groups(opt, k, c, label)
  for gi, g in ipairs(opt.param_groups) do
    assert(close(g.lr, c.lrs[k][gi]), string.format("%s: step %d group %d lr %.17g, torch %.17g",
      label, k - 1, gi, g.lr, c.lrs[k][gi]))
    if c.momentum[k] then
      assert(close(g.momentum, c.momentum[k][gi]), string.format("%s: step %d group %d momentum %.17g, torch %.17g",
        label, k - 1, gi, g.momentum, c.momentum[k][gi]))
    end
    if c.beta1[k] then
      assert(close(g.betas[1], c.beta1[k][gi]), string.format("%s: step %d group %d beta1 %.17g, torch %.17g",
        label, k - 1, gi, g.betas[1], c.beta1[k][gi]))
    end
  end
end

local function label_of(c)
  local ks = {}
  for k, v in pairs(c.opts) do
    if type(v) == "table" then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = tostring(x) end
      v = "{" .. table.concat(parts, ",") .. "}"
    end
    ks[#ks + 1] = k .. "=" .. tostring(v)
  end
  table.sort(ks)
  local l = c.name .. "(" .. table.concat(ks, ", ") .. ")"
  if c.subs then
    local n = {}
    for i, s in ipairs(c.subs) do n[i] = s.name end
    l = l .. " of " .. table.concat(n, ", ")
  end
  if c.epochs then l = l .. " stepped with fractional epochs" end
  if c.kind == "adam" then l = l .. " on Adam" end
  return l
end

describe("schedulers against torch.optim.lr_scheduler (30 steps)", function()
  for _, c in ipairs(fx.cases) do
    local label = label_of(c)
    it(label, function()
      local opt = make_opt(c.kind)
      local s = build(opt, c)
      check_groups(opt, 1, c, label)
      for k = 1, #c.lrs - 1 do
        opt:step()
        if c.name == "ReduceLROnPlateau" then
          s:step(fx.metrics[k])
        elseif c.epochs then
          s:step(c.epochs[k])
        else
          s:step()
        end
        check_groups(opt, k + 1, c, label)
        local last = s:get_last_lr()
        for gi, g in ipairs(opt.param_groups) do assert.are.equal(g.lr, last[gi]) end
      end
      for gi, v in ipairs(c.last_lr) do assert(close(s:get_last_lr()[gi], v)) end
    end)
  end
end)

describe("step(epoch) uses the closed form, as PyTorch", function()
  for _, c in ipairs(fx.closed) do
    it(c.name, function()
      local opt = make_opt("sgd")
      local s = S[c.name](opt, c.opts)
      for k, e in ipairs(c.epochs) do
        s:step(e)
        for gi, g in ipairs(opt.param_groups) do
          assert(close(g.lr, c.lrs[k][gi]), string.format("epoch %d group %d: %.17g vs %.17g", e, gi, g.lr, c.lrs[k][gi]))
        end
      end
    end)
  end
end)

describe("scheduler state", function()
  it("state_dict / load_state_dict continue a schedule exactly", function()
    local mk = {
      function(o) return S.OneCycleLR(o, { max_lr = 0.5, total_steps = 30 }) end,
      function(o) return S.CyclicLR(o, { base_lr = 0.01, max_lr = 0.1, step_size_up = 3, mode = "triangular2" }) end,
      function(o) return S.CosineAnnealingWarmRestarts(o, 3, { T_mult = 2 }) end,
      function(o) return S.ReduceLROnPlateau(o, { patience = 1 }) end,
      function(o) return S.LambdaLR(o, LAMBDAS.pow95) end,
      function(o)
        return S.SequentialLR(o, { schedulers = { S.LinearLR(o, { total_iters = 3 }), S.ExponentialLR(o, 0.9) },
          milestones = { 3 } })
      end,
      function(o) return S.ChainedScheduler({ S.StepLR(o, 2), S.ExponentialLR(o, 0.9) }) end,
    }
    for i, f in ipairs(mk) do
      local plateau = i == 4
      local o1 = make_opt("sgd")
      local s1 = f(o1)
      local function step(s, k) if plateau then s:step(fx.metrics[k]) else s:step() end end
      for k = 1, 7 do step(s1, k) end
      local sd = s1:state_dict()
      local osd = o1:state_dict()
      local o2 = make_opt("sgd")
      local s2 = f(o2)
      o2:load_state_dict(osd)
      s2:load_state_dict(sd)
      for k = 8, 20 do
        step(s1, k)
        step(s2, k)
        for gi = 1, 2 do
          assert.are.equal(o1.param_groups[gi].lr, o2.param_groups[gi].lr)
          assert.are.equal(o1.param_groups[gi].momentum, o2.param_groups[gi].momentum)
        end
      end
      -- the state dict is a copy
      sd.last_epoch = -100
      assert.are_not.equal(-100, s1.last_epoch)
    end
  end)

  it("last_epoch resumes a schedule from the groups' initial_lr", function()
    local o = make_opt("sgd")
    local a = S.StepLR(o, 3, { gamma = 0.5 })
    for _ = 1, 5 do a:step() end
    local s = S.StepLR(o, 3, { gamma = 0.5, last_epoch = 5 })
    assert.are.equal(6, s.last_epoch)
    assert.are.equal(0.1, s.base_lrs[1])
    local fresh = make_opt("sgd")
    assert.has_error(function() S.StepLR(fresh, 3, { last_epoch = 4 }) end,
      "StepLR: param 'initial_lr' is not specified in param_groups[1] when resuming an optimizer")
  end)

  it("verbose prints each change as PyTorch does; off by default", function()
    local lines = {}
    local saved = _G.print
    _G.print = function(s) lines[#lines + 1] = s end
    local ok, err = pcall(function()
      local o = make_opt("sgd")
      local s = S.ExponentialLR(o, 0.5, { verbose = true })
      s:step()
      s:step(3)
      local q = S.ExponentialLR(make_opt("sgd"), 0.5)
      q:step()
      local p = S.ReduceLROnPlateau(make_opt("sgd"), { patience = 0, verbose = true })
      p:step(1)
      p:step(2)
    end)
    _G.print = saved
    assert(ok, err)
    assert.are.same({
      "Adjusting learning rate of group 1 to 1.0000e-01.",
      "Adjusting learning rate of group 2 to 5.0000e-02.",
      "Adjusting learning rate of group 1 to 5.0000e-02.",
      "Adjusting learning rate of group 2 to 2.5000e-02.",
      "Epoch 00003: adjusting learning rate of group 1 to 1.2500e-02.",
      "Epoch 00003: adjusting learning rate of group 2 to 6.2500e-03.",
      "Epoch 00002: reducing learning rate of group 1 to 1.0000e-02.",
      "Epoch 00002: reducing learning rate of group 2 to 5.0000e-03.",
    }, lines)
  end)

  it("ReduceLROnPlateau takes a one-element tensor metric", function()
    local o = make_opt("sgd")
    local p = S.ReduceLROnPlateau(o, { patience = 0 })
    p:step(T.tensor(1.0))
    p:step(T.tensor(2.0))
    assert(close(o.param_groups[1].lr, 0.01))
  end)
end)

describe("scheduler errors", function()
  it("explains bad arguments and options", function()
    local o = make_opt("sgd")
    local adam = make_opt("adam")
    local cases = {
      { function() S.StepLR(o, { gamma = 0.5 }) end, "StepLR: step_size is required" },
      { function() S.StepLR(o, 0) end, "StepLR: Expected positive integer step_size, but got 0" },
      { function() S.StepLR(o, 2, { zz = 1 }) end, "StepLR: unknown option 'zz'" },
      { function() S.StepLR({}, 2) end, "StepLR: expected an optimizer, got table" },
      { function() S.LambdaLR(o, { LAMBDAS.inv }) end, "LambdaLR: Expected 2 lr_lambdas, but got 1" },
      { function() S.LambdaLR(o, 3) end, "LambdaLR: lr_lambda must be a function or a list of functions, got number" },
      { function() S.MultiStepLR(o, { 1.5 }) end, "MultiStepLR: milestones[1] must be an integer epoch count, got 1.5" },
      { function() S.ConstantLR(o, { factor = 2 }) end, "ConstantLR: Constant multiplicative factor expected to be between 0 and 1" },
      { function() S.LinearLR(o, { start_factor = -1 }) end, "LinearLR: Starting multiplicative factor expected to be between 0 and 1" },
      { function() S.LinearLR(o, { end_factor = 1.5 }) end, "LinearLR: Ending multiplicative factor expected to be between 0 and 1" },
      { function() S.CosineAnnealingWarmRestarts(o, 0) end, "CosineAnnealingWarmRestarts: Expected positive integer T_0, but got 0" },
      { function() S.CosineAnnealingWarmRestarts(o, 2, { T_mult = 1.5 }) end, "Expected integer T_mult >= 1, but got 1.5" },
      { function() S.CyclicLR(o, { base_lr = 0.1 }) end, "CyclicLR: max_lr is required" },
      { function() S.CyclicLR(o, { base_lr = 0.1, max_lr = 1, mode = "tri" }) end, "CyclicLR: mode is invalid and scale_fn is None: tri" },
      { function() S.CyclicLR(adam, { base_lr = 0.1, max_lr = 1 }) end, "CyclicLR: optimizer must support momentum with `cycle_momentum` option enabled" },
      { function() S.CyclicLR(o, { base_lr = { 0.1 }, max_lr = 1 }) end, "CyclicLR: expected 2 values for base_lr, got 1" },
      { function() S.OneCycleLR(o, 0.1) end, "OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)" },
      { function() S.OneCycleLR(o, 0.1, { total_steps = 10, anneal_strategy = "exp" }) end, "anneal_strategy must by one of 'cos' or 'linear', instead got exp" },
      { function() S.OneCycleLR(o, 0.1, { total_steps = 10, pct_start = 2 }) end, "OneCycleLR: Expected float between 0 and 1 pct_start, but got 2" },
      { function() S.ReduceLROnPlateau(o, { factor = 1 }) end, "ReduceLROnPlateau: Factor should be < 1.0" },
      { function() S.ReduceLROnPlateau(o, { mode = "up" }) end, "ReduceLROnPlateau: mode up is unknown!" },
      { function() S.ReduceLROnPlateau(o, { threshold_mode = "x" }) end, "ReduceLROnPlateau: threshold mode x is unknown!" },
      { function() S.ReduceLROnPlateau(o):step("a") end, "step: ReduceLROnPlateau's step takes the metric (a number), got string" },
      { function() S.SequentialLR(o, { schedulers = { S.StepLR(o, 2) }, milestones = { 2 } }) end,
        "SequentialLR: expects number of schedulers provided to be one more than the number of milestone points" },
      { function() S.SequentialLR(o, { schedulers = { S.StepLR(adam, 2), S.StepLR(o, 2) }, milestones = { 2 } }) end,
        "SequentialLR: expects all schedulers to belong to the same optimizer" },
      { function() S.ChainedScheduler({ S.StepLR(o, 2), S.StepLR(adam, 2) }) end,
        "ChainedScheduler: expects all schedulers to belong to the same optimizer, but got schedulers at index 1 and 2" },
      { function() S.ChainedScheduler({}) end, "ChainedScheduler: schedulers must be a non-empty list of schedulers" },
      { function() S.StepLR(o, 2):step({ zz = 1 }) end, "step" },
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert(not ok, "case " .. i .. " did not fail")
      assert(tostring(err):find(c[2], 1, true), "case " .. i .. ": " .. tostring(err))
    end
    local s = S.OneCycleLR(make_opt("sgd"), 0.1, { total_steps = 2 })
    s:step(); s:step()
    assert.has_error(function() s:step() end, "OneCycleLR: Tried to step 4 times. The specified number of total steps is 2")
  end)
end)
