-- T.optim.lr_scheduler: StepLR and CosineAnnealingLR (closed forms of
-- PyTorch's schedules). Construction sets each group's lr for epoch 0;
-- step() moves one epoch on.
return function(T, optim)
  local unpack = table.unpack or unpack
  local S = {}
  local Scheduler = {}
  Scheduler.__index = Scheduler

  local function make(cls, opt, lr_at)
    local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lrs = {}, lr_at = lr_at }, cls)
    for i, g in ipairs(opt.param_groups) do
      g.initial_lr = g.initial_lr or g.lr
      self.base_lrs[i] = g.initial_lr
    end
    self:_apply()
    return self
  end
  function Scheduler:_apply()
    self._last_lr = {}
    for i, g in ipairs(self.optimizer.param_groups) do
      g.lr = self.lr_at(self, self.base_lrs[i], self.last_epoch)
      self._last_lr[i] = g.lr
    end
  end
  local A = require "ember.args"
  function Scheduler:step(epoch, ...)
    A.nooptions("step", 2, 2, epoch, ...)
    self.last_epoch = epoch or self.last_epoch + 1
    self:_apply()
  end
  function Scheduler:get_last_lr(...)
    A.nomore("get_last_lr", 1, ...)
    return self._last_lr
  end
  function Scheduler:state_dict(...)
    A.nomore("state_dict", 1, ...)
    return { last_epoch = self.last_epoch, base_lrs = { unpack(self.base_lrs) } }
  end
  function Scheduler:load_state_dict(sd, ...)
    A.nomore("load_state_dict", 2, ...)
    self.last_epoch = sd.last_epoch
    self.base_lrs = { unpack(sd.base_lrs) }
    self:_apply()
  end

  local StepLR = setmetatable({}, { __index = Scheduler })
  StepLR.__index = StepLR
  local ARGS = require "ember.args"
  local STEP = { "step_size", "gamma" }
  function S.StepLR(opt, o, ...)
    ARGS.nomore("StepLR", 2, ...)
    if type(o) == "number" then o = { step_size = o } end
    o = ARGS.checkopts("StepLR", o, STEP)
    if not o.step_size then error("StepLR: step_size is required", 2) end
    local gamma = o.gamma or 0.1
    local self = make(StepLR, opt, function(_, base, e) return base * gamma ^ math.floor(e / o.step_size) end)
    self.step_size, self.gamma = o.step_size, gamma
    return self
  end

  local Cosine = setmetatable({}, { __index = Scheduler })
  Cosine.__index = Cosine
  local COS = { "T_max", "eta_min" }
  function S.CosineAnnealingLR(opt, o, ...)
    ARGS.nomore("CosineAnnealingLR", 2, ...)
    if type(o) == "number" then o = { T_max = o } end
    o = ARGS.checkopts("CosineAnnealingLR", o, COS)
    if not o.T_max then error("CosineAnnealingLR: T_max is required", 2) end
    local eta = o.eta_min or 0
    local self = make(Cosine, opt, function(_, base, e)
      return eta + (base - eta) * (1 + math.cos(math.pi * e / o.T_max)) / 2
    end)
    self.T_max, self.eta_min = o.T_max, eta
    return self
  end
  return S
end
