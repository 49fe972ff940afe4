-- Differences from PyTorch 1.13 found by the sixth round of differential
-- tests of T.optim (optimizers over 5-20 steps with their options, float32
-- and float64; the schedulers over 30+ epochs, each with torch's value or
-- error). Epochs are counts, as torch's; betas' positions are 1-based.
local T = require "ember"
local U = require "specutil"
local err = U.err

local S = T.optim.lr_scheduler
local function sgd(lr)
  return T.optim.SGD({ T.zeros(2):requires_grad_() }, { lr = lr or 0.1, momentum = 0.9 })
end

describe("difftest round 6: optimizers and lr schedulers (torch 1.13)", function()
  it("CyclicLR refuses step_size_up = 0 (each cycle's start divides by it)", function()
    -- torch: CyclicLR(opt, 0.01, 0.1, step_size_up=0, step_size_down=3)
    -- -> ZeroDivisionError: float division by zero (when made); ember gave NaN lrs
    local opt = sgd()
    err(function() S.CyclicLR(opt, { base_lr = 0.01, max_lr = 0.1, step_size_up = 0, step_size_down = 3 }) end,
      "CyclicLR: step_size_up must be positive")
    assert.equal(0.1, opt.param_groups[1].lr)      -- refused before any group was touched
    assert.equal(0.9, opt.param_groups[1].momentum)
    -- step_size_down = 0 divides by nothing: torch's values
    -- lrs: 0.01, 0.04, 0.07, 0.01 (a cycle of 3 steps, all rising)
    local s = S.CyclicLR(opt, { base_lr = 0.01, max_lr = 0.1, step_size_up = 3, step_size_down = 0 })
    local want = { 0.01, 0.04, 0.07, 0.01, 0.04 }
    for i = 1, #want do
      assert(math.abs(opt.param_groups[1].lr - want[i]) < 1e-15, i)
      s:step()
    end
  end)

  it("OneCycleLR refuses div_factor = 0 and final_div_factor = 0", function()
    -- torch: OneCycleLR(opt, 0.1, total_steps=10, div_factor=0) -> ZeroDivisionError
    -- (ember went on with inf lrs)
    err(function() S.OneCycleLR(sgd(), 0.1, { total_steps = 10, div_factor = 0 }) end,
      "OneCycleLR: div_factor must not be 0")
    err(function() S.OneCycleLR(sgd(), 0.1, { total_steps = 10, final_div_factor = 0 }) end,
      "OneCycleLR: final_div_factor must not be 0")
  end)

  it("OneCycleLR raises at the step that falls in a phase of no length (pct_start = 1)", function()
    -- torch: OneCycleLR(opt, 0.5, total_steps=10, pct_start=1.0): the lrs of
    -- steps 0..9 rise from 0.02 to 0.5, then the 10th step() raises
    -- ZeroDivisionError (ember gave a NaN lr and momentum)
    local opt = sgd()
    local s = S.OneCycleLR(opt, 0.5, { total_steps = 10, pct_start = 1.0 })
    assert(math.abs(opt.param_groups[1].lr - 0.02) < 1e-15)
    for _ = 1, 9 do s:step() end
    assert(math.abs(opt.param_groups[1].lr - 0.5) < 1e-15)
    assert(math.abs(opt.param_groups[1].momentum - 0.85) < 1e-15)
    err(function() s:step() end, "OneCycleLR: step 10 falls in phase 2, which has no length")
    -- the default pct_start steps to total_steps as torch does (past the
    -- last phase's end: torch's lr there is 0.024759683993263115)
    local opt2 = sgd()
    local s2 = S.OneCycleLR(opt2, 0.5, { total_steps = 10 })
    for _ = 1, 10 do s2:step() end
    assert(math.abs(opt2.param_groups[1].lr - 0.024759683993263115) < 1e-15)
  end)

  it("an optimizer's bad option is reported at the caller's line, not at a line of ember", function()
    -- torch: ValueError: Invalid lr_decay value: -0.1 (and the others below);
    -- ember raised these at lines of lua/ember/optim/init.lua and lbfgs.lua
    local p = T.zeros(3):requires_grad_()
    local cases = {
      { function() local _ = T.optim.Adagrad({ p }, { lr_decay = -0.1 }) end, "Adagrad: Invalid lr_decay value: -0.1" },
      { function() local _ = T.optim.Adagrad({ p }, { lr = -1 }) end, "Adagrad: Invalid learning rate: -1" },
      { function() local _ = T.optim.NAdam({ p }, { betas = { 1, 0.9 } }) end, "NAdam: Invalid beta parameter at index 1: 1" },
      { function() local _ = T.optim.NAdam({ p }, { eps = -1 }) end, "NAdam: Invalid epsilon value: -1" },
      { function() local _ = T.optim.RAdam({ p }, { betas = { 0.9, -0.5 } }) end, "RAdam: Invalid beta parameter at index 2: -0.5" },
      { function() local _ = T.optim.SGD({ p }, { lr = 0.1, momentun = 0.9 }) end, "SGD: unknown option 'momentun'" },
      { function() local _ = T.optim.LBFGS({ p }, { lr = -1 }) end, "LBFGS: Invalid learning rate: -1" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(c[1])
      assert(not ok)
      assert(e:find("difftest6_optim_spec.lua:%d+: " .. c[2]:gsub("%p", "%%%0")), e)
    end
    -- Adagrad still has its state before the first step, complex parameters' real-shaped
    local a = T.optim.Adagrad({ p, T.zeros(2, { dtype = T.complex64 }):requires_grad_() }, { initial_accumulator_value = 0.5 })
    local n = 0
    for q, st in pairs(a.state) do
      n = n + 1
      assert.equal(0, st.step)
      assert.equal(q:is_complex() and "2,2" or "3", table.concat(st.sum:size(), ","))
      assert.equal(0.5, st.sum:max():item())
    end
    assert.equal(2, n)
  end)
  it("SequentialLR refuses milestones out of order", function()
    -- torch: SequentialLR(opt, [ExponentialLR(opt, 0.5), StepLR(opt, 2, gamma=0.5),
    -- LinearLR(opt, start_factor=0.5, total_iters=3)], milestones=[6, 3]) is accepted and
    -- bisects the unsorted list: lrs 0.1, 0.05, 0.025, 0.05, 0.0667, 0.0833, 0.1, 0.1, ...
    -- (no scheduler's own rule); ember switched at other epochs
    local opt = sgd()
    local function three()
      return { S.ExponentialLR(opt, 0.5), S.StepLR(opt, 2, { gamma = 0.5 }),
        S.LinearLR(opt, { start_factor = 0.5, total_iters = 3 }) }
    end
    err(function() S.SequentialLR(opt, three(), { milestones = { 6, 3 } }) end,
      "SequentialLR: milestones must be in increasing order, got 3 after 6")
    err(function() S.SequentialLR(opt, three(), { milestones = { 2, 2.5 } }) end,
      "SequentialLR: milestones[2] must be an integer epoch count, got 2.5")
    -- in order (a repeated milestone skips a scheduler, as torch's bisect_right)
    local opt2 = sgd()
    local s = S.SequentialLR(opt2, { S.ExponentialLR(opt2, 0.5), S.ConstantLR(opt2, { factor = 0.5 }),
      S.StepLR(opt2, 2, { gamma = 0.5 }) }, { milestones = { 3, 3 } })
    -- torch: 0.1, 0.05, 0.025, 0.1, 0.1, 0.05, 0.05
    local want = { 0.1, 0.05, 0.025, 0.1, 0.1, 0.05, 0.05 }
    for i = 1, #want do
      assert(math.abs(opt2.param_groups[1].lr - want[i]) < 1e-15, i)
      s:step()
    end
  end)

  it("SequentialLR and ChainedScheduler refuse a ReduceLROnPlateau (its step takes a metric)", function()
    -- torch 1.13: SequentialLR(opt, [LinearLR(opt, 0.1, total_iters=4), ReduceLROnPlateau(opt)],
    -- milestones=[4]) raises AttributeError ('ReduceLROnPlateau' object has no attribute
    -- 'get_last_lr') at the 4th step; ChainedScheduler([ExponentialLR(opt, 0.9),
    -- ReduceLROnPlateau(opt)]).step() raises TypeError (missing 'metrics').
    -- ember's SequentialLR took its step(0) as a metric of 0 and went on.
    local opt = sgd()
    err(function()
      S.SequentialLR(opt, { S.LinearLR(opt, { start_factor = 0.1, total_iters = 4 }), S.ReduceLROnPlateau(opt) },
        { milestones = { 4 } })
    end, "SequentialLR: schedulers[2] is a ReduceLROnPlateau, whose step takes a metric")
    err(function() S.ChainedScheduler({ S.ExponentialLR(opt, 0.9), S.ReduceLROnPlateau(opt) }) end,
      "ChainedScheduler: schedulers[2] is a ReduceLROnPlateau")
  end)
end)
