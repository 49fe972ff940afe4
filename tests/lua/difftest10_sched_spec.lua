-- Differential round 10: T.optim.lr_scheduler against torch 1.13
-- (values below computed with python3-torch 1.13 and pasted in).
local T = require "ember"
local S = T.optim.lr_scheduler

local function sgd()
  return T.optim.SGD({ { params = { T.zeros(2, { requires_grad = true }) } },
    { params = { T.zeros(2, { requires_grad = true }) }, lr = 0.05 } }, { lr = 0.1, momentum = 0.9 })
end

describe("difftest10 lr_scheduler", function()
  it("ReduceLROnPlateau:step(metric, epoch) takes the (deprecated) epoch as PyTorch does", function()
    -- torch: s.step(m, e) sets last_epoch = e; ember refused the epoch
    -- ("step: unexpected argument #4")
    local opt = sgd()
    local s = S.ReduceLROnPlateau(opt, { patience = 1, factor = 0.5 })
    local want = {
      { 1.0, 3, 0.1, 0.05 }, { 1.0, 7, 0.1, 0.05 }, { 1.0, 2, 0.05, 0.025 }, { 0.5, 10, 0.05, 0.025 },
      { 0.6, 11, 0.05, 0.025 }, { 0.7, 12, 0.025, 0.0125 }, { 0.8, 20, 0.025, 0.0125 },
    }
    for _, w in ipairs(want) do
      s:step(w[1], w[2])
      assert.equal(w[2], s.last_epoch)
      local lr = s:get_last_lr()
      assert(math.abs(lr[1] - w[3]) < 1e-15 and math.abs(lr[2] - w[4]) < 1e-15)
      assert(math.abs(opt.param_groups[1].lr - w[3]) < 1e-15)
    end
    local ok, e = pcall(function() s:step(1, 2, 3) end)
    assert(not ok and e:find("difftest10_sched_spec.lua:%d+: step: unexpected argument #4"), e)
  end)

  it("bad scheduler arguments are reported at the caller's line", function()
    -- torch raises these ValueErrors; ember raised some with no position
    -- (or at the caller's caller, or at a line of lr_scheduler.lua)
    local cases = {
      { function() local s = S.StepLR(sgd(), 0); return s end, "StepLR: Expected positive integer step_size, but got 0" },
      { function() local s = S.StepLR(sgd(), 3, { gamma = "x" }); return s end, "StepLR: gamma must be a number, got string" },
      { function() local s = S.StepLR(sgd(), 3, {}, 5); return s end, "StepLR: unexpected argument #4 (number)" },
      { function() local s = S.StepLR(sgd(), 3, { last_epoch = 4 }); return s end,
        "StepLR: param 'initial_lr' is not specified in param_groups[1] when resuming an optimizer" },
      { function() local s = S.ExponentialLR(sgd(), 0.9, { last_epoch = 1.5 }); return s end,
        "ExponentialLR: last_epoch must be an integer, got 1.5" },
      { function() local s = S.LambdaLR(sgd(), { function() return 1 end }); return s end,
        "LambdaLR: Expected 2 lr_lambdas, but got 1" },
      { function() local s = S.MultiplicativeLR(sgd(), 5); return s end,
        "MultiplicativeLR: lr_lambda must be a function or a list of functions, got number" },
      { function() local s = S.ConstantLR(sgd(), { total_iters = "a" }); return s end,
        "ConstantLR: total_iters must be a number, got string" },
      { function() local s = S.CosineAnnealingLR(sgd(), 0); return s end,
        "CosineAnnealingLR: T_max must be greater than 0, got 0" },
      { function() local s = S.CyclicLR(sgd(), { base_lr = { 1 }, max_lr = 1 }); return s end,
        "CyclicLR: expected 2 values for base_lr, got 1" },
      { function() local s = S.OneCycleLR(sgd(), 1, { total_steps = 0 }); return s end,
        "OneCycleLR: Expected positive integer total_steps, but got 0" },
      { function() local s = S.OneCycleLR(sgd(), 1, { epochs = 2, steps_per_epoch = -3 }); return s end,
        "OneCycleLR: Expected positive integer steps_per_epoch, but got -3" },
      { function() local s = S.ReduceLROnPlateau(sgd(), { patience = "a" }); return s end,
        "ReduceLROnPlateau: patience must be a number, got string" },
      { function() local s = S.ReduceLROnPlateau(sgd(), { min_lr = { 1 } }); return s end,
        "ReduceLROnPlateau: expected 2 values for min_lr, got 1" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(c[1])
      assert(not ok)
      assert(e:find("difftest10_sched_spec.lua:%d+: " .. c[2]:gsub("%p", "%%%0")), e)
    end
  end)
end)
