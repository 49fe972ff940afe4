-- T.optim.lr_scheduler: PyTorch 1.13's learning-rate schedulers
-- (docs/optim.md), each with PyTorch's update rule op for op: the chainable
-- form (the new lr from the group's current lr) where PyTorch uses it, the
-- closed form when step(epoch) is given an epoch, as PyTorch does.
--
-- A scheduler is made as Name(optimizer, first, options) or
-- Name(optimizer, options): first is the scheduler's first required argument
-- (StepLR's step_size, LambdaLR's lr_lambda, MultiStepLR's milestones, ...).
-- Every scheduler takes last_epoch (default -1: a fresh schedule) and
-- verbose (prints each lr change, as PyTorch does). Construction sets each
-- group's lr for epoch 0; step() moves one epoch (or batch) on.
-- Epochs and milestones are counts (epoch 0 is the first), not positions.
return function(T, optim)
  local unpack = table.unpack or unpack
  local ARGS = require "ember.args"
  local S = {}
  local floor, cos, pi = math.floor, math.cos, math.pi

  local Scheduler = {}
  Scheduler.__index = Scheduler
  S._Scheduler = Scheduler

  local function class(name)
    local cls = setmetatable({}, { __index = Scheduler })
    cls.__index = cls
    cls.__name = name
    return cls
  end

  local function is_optimizer(o)
    return type(o) == "table" and type(o.param_groups) == "table" and o.step ~= nil
  end

  -- ARGS.nomore, its error reported at the caller of the scheduler's
  -- constructor (3 levels up from here) instead of at a line of this file
  local function nomore(name, n, ...)
    local ok, e = pcall(ARGS.nomore, name, n, ...)
    if not ok then error((tostring(e):gsub("^[^\n]-lr_scheduler%.lua:%d+: ", "")), 4) end
  end

  -- (opt, first, o) or (opt, o): the options table with first under key
  local function args(name, opt, a, b, key, allowed, ...)
    if not is_optimizer(opt) then
      error(string.format("%s: expected an optimizer, got %s", name, type(opt)), 3)
    end
    local o
    if key and a ~= nil and not (ARGS.is_opts(a) and next(a) ~= nil and a[1] == nil) then
      nomore(name, 3, ...)
      o = ARGS.checkopts(name, b, allowed, 4)
      local c = {}
      for k, v in pairs(o) do c[k] = v end
      if c[key] ~= nil then error(string.format("%s: %s given twice", name, key), 3) end
      c[key] = a
      o = c
    else
      nomore(name, 2, b, ...)
      o = ARGS.checkopts(name, a, allowed, 4)
    end
    if key and o[key] == nil then error(string.format("%s: %s is required", name, key), 3) end
    return o
  end

  local function per_group(name, opt, what, v)
    local n = #opt.param_groups
    if type(v) == "table" and not T.is_tensor(v) then
      if #v ~= n then
        error(string.format("%s: expected %d values for %s, got %d", name, n, what, #v), 3)
      end
      return { unpack(v, 1, n) }
    end
    local out = {}
    for i = 1, n do out[i] = v end
    return out
  end

  local function fmt_epoch(e)
    if math.type and math.type(e) == "float" or (not math.type and e ~= floor(e)) then
      return string.format("%.2f", e)
    end
    return string.format("%.5d", e)
  end

  function Scheduler:print_lr(is_verbose, group, lr, epoch, ...)
    ARGS.nomore("print_lr", 5, ...)
    if not is_verbose then return end
    if epoch == nil then
      print(string.format("Adjusting learning rate of group %d to %.4e.", group, lr))
    else
      print(string.format("Epoch %s: adjusting learning rate of group %d to %.4e.", fmt_epoch(epoch), group, lr))
    end
  end

  -- the part of PyTorch's _LRScheduler.__init__ after the subclass's fields
  local function base_init(self, opt, o)
    self.optimizer = opt
    local last_epoch = o.last_epoch
    if last_epoch == nil then last_epoch = -1 end
    if type(last_epoch) ~= "number" or last_epoch ~= floor(last_epoch) then
      error(string.format("%s: last_epoch must be an integer, got %s", self.__name, tostring(last_epoch)), 3)
    end
    if last_epoch == -1 then
      for _, g in ipairs(opt.param_groups) do
        if g.initial_lr == nil then g.initial_lr = g.lr end
      end
    else
      for i, g in ipairs(opt.param_groups) do
        if g.initial_lr == nil then
          error(string.format("%s: param 'initial_lr' is not specified in param_groups[%d] when "
            .. "resuming an optimizer", self.__name, i), 3)
        end
      end
    end
    self.base_lrs = {}
    for i, g in ipairs(opt.param_groups) do self.base_lrs[i] = g.initial_lr end
    self.last_epoch = last_epoch
    self.verbose = o.verbose and true or false
    self:_initial_step()
    return self
  end

  -- step's argument: nil or a number of epochs (errors at step's caller)
  local function check_epoch(epoch)
    if epoch ~= nil and type(epoch) ~= "number" then
      error(string.format("step: epoch must be a number, got %s", type(epoch)), 3)
    end
  end

  function Scheduler:_initial_step()
    self._step_count = 0
    self:step()
  end

  function Scheduler:step(epoch, ...)
    ARGS.nooptions("step", 2, 2, epoch, ...)
    check_epoch(epoch)
    self._step_count = self._step_count + 1
    local values
    if epoch == nil then
      self.last_epoch = self.last_epoch + 1
      values = self:_compute_lr()
    else
      self.last_epoch = epoch
      if self._get_closed_form_lr then values = self:_get_closed_form_lr() else values = self:_compute_lr() end
    end
    for i, g in ipairs(self.optimizer.param_groups) do
      g.lr = values[i]
      self:print_lr(self.verbose, i, values[i], epoch)
    end
    self:_record()
  end

  function Scheduler:_record()
    self._last_lr = {}
    for i, g in ipairs(self.optimizer.param_groups) do self._last_lr[i] = g.lr end
  end

  function Scheduler:get_last_lr(...)
    ARGS.nomore("get_last_lr", 1, ...)
    return { unpack(self._last_lr) }
  end

  -- state_dict: every field but the optimizer (and functions), as PyTorch's
  -- {key: value for key, value in self.__dict__.items() if key != 'optimizer'}
  local function copy(v)
    if type(v) ~= "table" or T.is_tensor(v) then return v end
    local c = {}
    for k, x in pairs(v) do c[k] = copy(x) end
    return c
  end
  local function plain_state(self, skip)
    local sd = {}
    for k, v in pairs(self) do
      if k ~= "optimizer" and type(v) ~= "function" and not (skip and skip[k]) then sd[k] = copy(v) end
    end
    return sd
  end
  function Scheduler:state_dict(...)
    ARGS.nomore("state_dict", 1, ...)
    return plain_state(self)
  end
  function Scheduler:load_state_dict(sd, ...)
    ARGS.nomore("load_state_dict", 2, ...)
    if type(sd) ~= "table" then
      error("load_state_dict: expected a state dict table, got " .. type(sd), 2)
    end
    for k, v in pairs(sd) do
      if k ~= "optimizer" then self[k] = copy(v) end
    end
  end

  local function lrs(self, f)
    local out = {}
    for i, g in ipairs(self.optimizer.param_groups) do out[i] = f(g.lr, self.base_lrs[i], i, g) end
    return out
  end
  local function keep(lr) return lr end

  local function number(name, what, v, lo)
    if type(v) ~= "number" then
      error(string.format("%s: %s must be a number, got %s", name, what, type(v)), 3)
    end
    if lo and not (v > lo) then
      error(string.format("%s: %s must be greater than %g, got %g", name, what, lo, v), 3)
    end
    return v
  end
  local function posint(name, what, v)
    if type(v) ~= "number" or v ~= floor(v) or v <= 0 then
      error(string.format("%s: Expected positive integer %s, but got %s", name, what, tostring(v)), 3)
    end
    return v
  end

  -- -- LambdaLR, MultiplicativeLR ------------------------------------------------
  local function lambdas(name, opt, f)
    local n = #opt.param_groups
    if type(f) == "function" then
      local out = {}
      for i = 1, n do out[i] = f end
      return out
    end
    if type(f) ~= "table" then
      error(string.format("%s: lr_lambda must be a function or a list of functions, got %s", name, type(f)), 3)
    end
    if #f ~= n then error(string.format("%s: Expected %d lr_lambdas, but got %d", name, n, #f), 3) end
    for i = 1, n do
      if type(f[i]) ~= "function" then
        error(string.format("%s: lr_lambda[%d] must be a function, got %s", name, i, type(f[i])), 3)
      end
    end
    return { unpack(f, 1, n) }
  end
  -- the lambdas are functions: state_dict leaves them out (PyTorch keeps
  -- None for a plain function)
  local function lambda_state(self)
    local sd = plain_state(self, { lr_lambdas = true })
    sd.lr_lambdas = {}
    return sd
  end
  local function lambda_load(self, sd, ...)
    ARGS.nomore("load_state_dict", 2, ...)
    for k, v in pairs(sd) do
      if k ~= "lr_lambdas" and k ~= "optimizer" then self[k] = copy(v) end
    end
  end

  local LAMBDA = { "lr_lambda", "last_epoch", "verbose" }
  local LambdaLR = class("LambdaLR")
  function S.LambdaLR(opt, a, b, ...)
    local o = args("LambdaLR", opt, a, b, "lr_lambda", LAMBDA, ...)
    local self = setmetatable({}, LambdaLR)
    self.lr_lambdas = lambdas("LambdaLR", opt, o.lr_lambda)
    base_init(self, opt, o)
    return self
  end
  function LambdaLR:_compute_lr()
    return lrs(self, function(_, base, i) return base * self.lr_lambdas[i](self.last_epoch) end)
  end
  LambdaLR.state_dict = function(self, ...) ARGS.nomore("state_dict", 1, ...); return lambda_state(self) end
  LambdaLR.load_state_dict = lambda_load

  local MultiplicativeLR = class("MultiplicativeLR")
  function S.MultiplicativeLR(opt, a, b, ...)
    local o = args("MultiplicativeLR", opt, a, b, "lr_lambda", LAMBDA, ...)
    local self = setmetatable({}, MultiplicativeLR)
    self.lr_lambdas = lambdas("MultiplicativeLR", opt, o.lr_lambda)
    base_init(self, opt, o)
    return self
  end
  function MultiplicativeLR:_compute_lr()
    if self.last_epoch > 0 then
      return lrs(self, function(lr, _, i) return lr * self.lr_lambdas[i](self.last_epoch) end)
    end
    return lrs(self, keep)
  end
  MultiplicativeLR.state_dict = LambdaLR.state_dict
  MultiplicativeLR.load_state_dict = lambda_load

  -- -- StepLR, MultiStepLR, ExponentialLR -----------------------------------------
  local StepLR = class("StepLR")
  function S.StepLR(opt, a, b, ...)
    local o = args("StepLR", opt, a, b, "step_size", { "step_size", "gamma", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, StepLR)
    self.step_size = posint("StepLR", "step_size", o.step_size)
    self.gamma = number("StepLR", "gamma", o.gamma or 0.1)
    base_init(self, opt, o)
    return self
  end
  function StepLR:_compute_lr()
    if self.last_epoch == 0 or self.last_epoch % self.step_size ~= 0 then return lrs(self, keep) end
    return lrs(self, function(lr) return lr * self.gamma end)
  end
  function StepLR:_get_closed_form_lr()
    return lrs(self, function(_, base) return base * self.gamma ^ floor(self.last_epoch / self.step_size) end)
  end

  local MultiStepLR = class("MultiStepLR")
  function S.MultiStepLR(opt, a, b, ...)
    local o = args("MultiStepLR", opt, a, b, "milestones", { "milestones", "gamma", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, MultiStepLR)
    if type(o.milestones) ~= "table" then
      error("MultiStepLR: milestones must be a list of epoch counts, got " .. type(o.milestones), 2)
    end
    -- a Counter, as PyTorch's: a milestone listed twice decays twice
    self.milestones = {}
    for i, m in ipairs(o.milestones) do
      if type(m) ~= "number" or m ~= floor(m) then
        error(string.format("MultiStepLR: milestones[%d] must be an integer epoch count, got %s", i, tostring(m)), 2)
      end
      self.milestones[#self.milestones + 1] = m
    end
    table.sort(self.milestones)
    self.gamma = number("MultiStepLR", "gamma", o.gamma or 0.1)
    base_init(self, opt, o)
    return self
  end
  function MultiStepLR:_compute_lr()
    local count = 0
    for _, m in ipairs(self.milestones) do if m == self.last_epoch then count = count + 1 end end
    if count == 0 then return lrs(self, keep) end
    return lrs(self, function(lr) return lr * self.gamma ^ count end)
  end
  function MultiStepLR:_get_closed_form_lr()
    local passed = 0 -- bisect_right
    for _, m in ipairs(self.milestones) do if m <= self.last_epoch then passed = passed + 1 end end
    return lrs(self, function(_, base) return base * self.gamma ^ passed end)
  end

  local ExponentialLR = class("ExponentialLR")
  function S.ExponentialLR(opt, a, b, ...)
    local o = args("ExponentialLR", opt, a, b, "gamma", { "gamma", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, ExponentialLR)
    self.gamma = number("ExponentialLR", "gamma", o.gamma)
    base_init(self, opt, o)
    return self
  end
  function ExponentialLR:_compute_lr()
    if self.last_epoch == 0 then return lrs(self, keep) end
    return lrs(self, function(lr) return lr * self.gamma end)
  end
  function ExponentialLR:_get_closed_form_lr()
    return lrs(self, function(_, base) return base * self.gamma ^ self.last_epoch end)
  end

  -- -- ConstantLR, LinearLR ------------------------------------------------------
  local ConstantLR = class("ConstantLR")
  function S.ConstantLR(opt, a, b, ...)
    local o = args("ConstantLR", opt, a, b, nil, { "factor", "total_iters", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, ConstantLR)
    local f = number("ConstantLR", "factor", o.factor or 1.0 / 3)
    if f > 1 or f < 0 then
      error("ConstantLR: Constant multiplicative factor expected to be between 0 and 1, got " .. f, 2)
    end
    -- lifting a factor of 0 at total_iters divides by it (PyTorch raises
    -- ZeroDivisionError at that step; refused here, before any NaN lr)
    if f == 0 then error("ConstantLR: factor 0 cannot be lifted at total_iters (it divides by the factor)", 2) end
    self.factor = f
    self.total_iters = number("ConstantLR", "total_iters", o.total_iters or 5)
    base_init(self, opt, o)
    return self
  end
  function ConstantLR:_compute_lr()
    local e, n = self.last_epoch, self.total_iters
    if e == 0 then return lrs(self, function(lr) return lr * self.factor end) end
    if e ~= n then return lrs(self, keep) end
    return lrs(self, function(lr) return lr * (1.0 / self.factor) end)
  end
  function ConstantLR:_get_closed_form_lr()
    local past = self.last_epoch >= self.total_iters and 1 or 0
    return lrs(self, function(_, base) return base * (self.factor + past * (1 - self.factor)) end)
  end

  local LinearLR = class("LinearLR")
  function S.LinearLR(opt, a, b, ...)
    local o = args("LinearLR", opt, a, b, nil,
      { "start_factor", "end_factor", "total_iters", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, LinearLR)
    local s = number("LinearLR", "start_factor", o.start_factor or 1.0 / 3)
    local e = number("LinearLR", "end_factor", o.end_factor or 1.0)
    if s > 1 or s < 0 then
      error("LinearLR: Starting multiplicative factor expected to be between 0 and 1, got " .. s, 2)
    end
    -- the chainable step divides by start_factor (PyTorch: ZeroDivisionError at step 1)
    if s == 0 then error("LinearLR: start_factor 0 is not supported (each step divides by it); use a small positive factor", 2) end
    if e > 1 or e < 0 then
      error("LinearLR: Ending multiplicative factor expected to be between 0 and 1, got " .. e, 2)
    end
    self.start_factor, self.end_factor = s, e
    self.total_iters = number("LinearLR", "total_iters", o.total_iters or 5)
    base_init(self, opt, o)
    return self
  end
  function LinearLR:_compute_lr()
    local e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
    if e == 0 then return lrs(self, function(lr) return lr * s end) end
    if e > n then return lrs(self, keep) end
    return lrs(self, function(lr) return lr * (1. + (f - s) / (n * s + (e - 1) * (f - s))) end)
  end
  function LinearLR:_get_closed_form_lr()
    local e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
    return lrs(self, function(_, base) return base * (s + (f - s) * math.min(n, e) / n) end)
  end

  -- PolynomialLR(opt, total_iters = 5, power = 1): lr (1 - e / total_iters)^power
  -- for e <= total_iters, then constant (PyTorch 1.13's chainable form)
  local PolynomialLR = class("PolynomialLR")
  function S.PolynomialLR(opt, a, b, ...)
    local o = args("PolynomialLR", opt, a, b, nil, { "total_iters", "power", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, PolynomialLR)
    self.total_iters = number("PolynomialLR", "total_iters", o.total_iters or 5)
    self.power = number("PolynomialLR", "power", o.power or 1.0)
    -- (1 - e/n)^power at e = n: 0 to a negative power (PyTorch raises there)
    if self.power < 0 then error("PolynomialLR: power must be >= 0, got " .. self.power, 2) end
    base_init(self, opt, o)
    return self
  end
  function PolynomialLR:_compute_lr()
    local e, n, p = self.last_epoch, self.total_iters, self.power
    if e == 0 or e > n then return lrs(self, keep) end
    local f = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ^ p
    return lrs(self, function(lr) return lr * f end)
  end
  function PolynomialLR:_get_closed_form_lr()
    local e, n, p = self.last_epoch, self.total_iters, self.power
    return lrs(self, function(_, base) return base * (1.0 - math.min(n, e) / n) ^ p end)
  end

  -- -- CosineAnnealingLR ----------------------------------------------------------
  local Cosine = class("CosineAnnealingLR")
  function S.CosineAnnealingLR(opt, a, b, ...)
    local o = args("CosineAnnealingLR", opt, a, b, "T_max", { "T_max", "eta_min", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, Cosine)
    self.T_max = number("CosineAnnealingLR", "T_max", o.T_max, 0)
    self.eta_min = number("CosineAnnealingLR", "eta_min", o.eta_min or 0)
    base_init(self, opt, o)
    return self
  end
  function Cosine:_compute_lr()
    local e, Tm, eta = self.last_epoch, self.T_max, self.eta_min
    if e == 0 then return lrs(self, keep) end
    if self._step_count == 1 and e > 0 then
      return lrs(self, function(_, base) return eta + (base - eta) * (1 + cos(e * pi / Tm)) / 2 end)
    end
    if (e - 1 - Tm) % (2 * Tm) == 0 then
      return lrs(self, function(lr, base) return lr + (base - eta) * (1 - cos(pi / Tm)) / 2 end)
    end
    return lrs(self, function(lr)
      return (1 + cos(pi * e / Tm)) / (1 + cos(pi * (e - 1) / Tm)) * (lr - eta) + eta
    end)
  end
  function Cosine:_get_closed_form_lr()
    local e, Tm, eta = self.last_epoch, self.T_max, self.eta_min
    return lrs(self, function(_, base) return eta + (base - eta) * (1 + cos(pi * e / Tm)) / 2 end)
  end

  -- -- CosineAnnealingWarmRestarts -------------------------------------------------
  local Warm = class("CosineAnnealingWarmRestarts")
  function S.CosineAnnealingWarmRestarts(opt, a, b, ...)
    local name = "CosineAnnealingWarmRestarts"
    local o = args(name, opt, a, b, "T_0", { "T_0", "T_mult", "eta_min", "last_epoch", "verbose" }, ...)
    local self = setmetatable({}, Warm)
    local T0, Tm = o.T_0, o.T_mult or 1
    if type(T0) ~= "number" or T0 <= 0 or T0 ~= floor(T0) then
      error(string.format("%s: Expected positive integer T_0, but got %s", name, tostring(T0)), 2)
    end
    if type(Tm) ~= "number" or Tm < 1 or Tm ~= floor(Tm) then
      error(string.format("%s: Expected integer T_mult >= 1, but got %s", name, tostring(Tm)), 2)
    end
    self.T_0, self.T_i, self.T_mult = T0, T0, Tm
    self.eta_min = number(name, "eta_min", o.eta_min or 0)
    self.T_cur = o.last_epoch or -1
    base_init(self, opt, o)
    return self
  end
  function Warm:_compute_lr()
    local eta = self.eta_min
    return lrs(self, function(_, base) return eta + (base - eta) * (1 + cos(pi * self.T_cur / self.T_i)) / 2 end)
  end
  -- step(epoch) takes a fractional epoch (epoch + batch / batches)
  function Warm:step(epoch, ...)
    ARGS.nooptions("step", 2, 2, epoch, ...)
    check_epoch(epoch)
    self._step_count = self._step_count + 1
    if epoch == nil and self.last_epoch < 0 then epoch = 0 end
    if epoch == nil then
      epoch = self.last_epoch + 1
      self.T_cur = self.T_cur + 1
      if self.T_cur >= self.T_i then
        self.T_cur = self.T_cur - self.T_i
        self.T_i = self.T_i * self.T_mult
      end
    else
      if epoch < 0 then
        error(string.format("step: Expected non-negative epoch, but got %s", tostring(epoch)), 2)
      end
      if epoch >= self.T_0 then
        if self.T_mult == 1 then
          self.T_cur = math.fmod(epoch, self.T_0)
        else
          local Tm = self.T_mult
          local n = math.log(epoch / self.T_0 * (Tm - 1) + 1) / math.log(Tm)
          n = n >= 0 and floor(n) or -floor(-n) -- int(): toward zero
          self.T_cur = epoch - self.T_0 * (Tm ^ n - 1) / (Tm - 1)
          self.T_i = self.T_0 * Tm ^ n
        end
      else
        self.T_i = self.T_0
        self.T_cur = epoch
      end
    end
    self.last_epoch = floor(epoch)
    local values = self:_compute_lr()
    for i, g in ipairs(self.optimizer.param_groups) do
      g.lr = values[i]
      self:print_lr(self.verbose, i, values[i], epoch)
    end
    self:_record()
  end

  -- -- CyclicLR ----------------------------------------------------------------------
  local Cyclic = class("CyclicLR")
  local CYCLIC = { "base_lr", "max_lr", "step_size_up", "step_size_down", "mode", "gamma", "scale_fn",
    "scale_mode", "cycle_momentum", "base_momentum", "max_momentum", "last_epoch", "verbose" }
  function S.CyclicLR(opt, a, b, ...)
    local name = "CyclicLR"
    local o = args(name, opt, a, b, nil, CYCLIC, ...)
    if o.base_lr == nil then error("CyclicLR: base_lr is required", 2) end
    if o.max_lr == nil then error("CyclicLR: max_lr is required", 2) end
    local self = setmetatable({}, Cyclic)
    local last = o.last_epoch or -1
    local base_lrs = per_group(name, opt, "base_lr", o.base_lr)
    -- checked before the groups' lr is touched
    local up = number(name, "step_size_up", o.step_size_up or 2000) + 0.0
    local down = o.step_size_down and number(name, "step_size_down", o.step_size_down) + 0.0 or up
    if not (up >= 0 and down >= 0 and up + down > 0) then
      error(string.format("CyclicLR: step_size_up (%g) and step_size_down (%g) must be >= 0 with a positive sum", up, down), 2)
    end
    -- each cycle starts at x = 0, the rising half's x / step_ratio: 0 / 0
    -- when step_size_up is 0 (PyTorch raises ZeroDivisionError when made)
    if up == 0 then
      error("CyclicLR: step_size_up must be positive (the rising half of each cycle divides by it), got 0", 2)
    end
    self.max_lrs = per_group(name, opt, "max_lr", o.max_lr)
    self.total_size = up + down
    self.step_ratio = up / self.total_size
    local mode = o.mode or "triangular"
    if mode ~= "triangular" and mode ~= "triangular2" and mode ~= "exp_range" and o.scale_fn == nil then
      error("CyclicLR: mode is invalid and scale_fn is None: " .. tostring(mode), 2)
    end
    self.mode = mode
    self.gamma = number(name, "gamma", o.gamma or 1.0)
    if o.scale_fn ~= nil then
      if type(o.scale_fn) ~= "function" then
        error("CyclicLR: scale_fn must be a function, got " .. type(o.scale_fn), 2)
      end
      self._scale_fn_custom = o.scale_fn
      local sm = o.scale_mode or "cycle"
      if sm ~= "cycle" and sm ~= "iterations" then
        error("CyclicLR: scale_mode must be 'cycle' or 'iterations', got " .. tostring(sm), 2)
      end
      self.scale_mode = sm
    else
      self.scale_mode = mode == "exp_range" and "iterations" or "cycle"
    end
    self.cycle_momentum = o.cycle_momentum ~= false
    if self.cycle_momentum then
      if opt.defaults.momentum == nil then
        error("CyclicLR: optimizer must support momentum with `cycle_momentum` option enabled", 2)
      end
      local bm = per_group(name, opt, "base_momentum", o.base_momentum or 0.8)
      self.max_momentums = per_group(name, opt, "max_momentum", o.max_momentum or 0.9)
      if last == -1 then
        for i, g in ipairs(opt.param_groups) do g.momentum = bm[i] end
      end
      self.base_momentums = {}
      for i, g in ipairs(opt.param_groups) do self.base_momentums[i] = g.momentum end
    end
    -- every argument checked: now the groups start at base_lr
    if last == -1 then
      for i, g in ipairs(opt.param_groups) do g.lr = base_lrs[i] end
    end
    base_init(self, opt, o)
    self.base_lrs = base_lrs
    return self
  end
  function Cyclic:scale_fn(x)
    if self._scale_fn_custom then return self._scale_fn_custom(x) end
    if self.mode == "triangular" then return 1. end
    if self.mode == "triangular2" then return 1 / (2. ^ (x - 1)) end
    return self.gamma ^ x
  end
  function Cyclic:_compute_lr()
    local e = self.last_epoch
    local cycle = floor(1 + e / self.total_size)
    local x = 1. + e / self.total_size - cycle
    local sf
    if x <= self.step_ratio then sf = x / self.step_ratio else sf = (x - 1) / (self.step_ratio - 1) end
    local at = self.scale_mode == "cycle" and cycle or e
    local out = {}
    for i = 1, #self.optimizer.param_groups do
      local base_height = (self.max_lrs[i] - self.base_lrs[i]) * sf
      out[i] = self.base_lrs[i] + base_height * self:scale_fn(at)
    end
    if self.cycle_momentum then
      for i, g in ipairs(self.optimizer.param_groups) do
        local base_height = (self.max_momentums[i] - self.base_momentums[i]) * sf
        g.momentum = self.max_momentums[i] - base_height * self:scale_fn(at)
      end
    end
    return out
  end
  Cyclic.state_dict = function(self, ...)
    ARGS.nomore("state_dict", 1, ...)
    return plain_state(self, { _scale_fn_custom = true })
  end

  -- -- OneCycleLR -----------------------------------------------------------------------
  local OneCycle = class("OneCycleLR")
  local ONECYCLE = { "max_lr", "total_steps", "epochs", "steps_per_epoch", "pct_start", "anneal_strategy",
    "cycle_momentum", "base_momentum", "max_momentum", "div_factor", "final_div_factor", "three_phase",
    "last_epoch", "verbose" }
  function S.OneCycleLR(opt, a, b, ...)
    local name = "OneCycleLR"
    local o = args(name, opt, a, b, "max_lr", ONECYCLE, ...)
    local self = setmetatable({}, OneCycle)
    if o.total_steps == nil and o.epochs == nil and o.steps_per_epoch == nil then
      error("OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)", 2)
    elseif o.total_steps ~= nil then
      self.total_steps = posint(name, "total_steps", o.total_steps)
    else
      self.total_steps = posint(name, "epochs", o.epochs) * posint(name, "steps_per_epoch", o.steps_per_epoch)
    end
    local pct = o.pct_start or 0.3
    if type(pct) ~= "number" or pct < 0 or pct > 1 then
      error(string.format("OneCycleLR: Expected float between 0 and 1 pct_start, but got %s", tostring(pct)), 2)
    end
    local n = self.total_steps
    self._pct_start = pct
    if o.three_phase then
      self._schedule_phases = {
        { end_step = pct * n - 1, start_lr = "initial_lr", end_lr = "max_lr",
          start_momentum = "max_momentum", end_momentum = "base_momentum" },
        { end_step = 2 * pct * n - 2, start_lr = "max_lr", end_lr = "initial_lr",
          start_momentum = "base_momentum", end_momentum = "max_momentum" },
        { end_step = n - 1, start_lr = "initial_lr", end_lr = "min_lr",
          start_momentum = "max_momentum", end_momentum = "max_momentum" },
      }
    else
      self._schedule_phases = {
        { end_step = pct * n - 1, start_lr = "initial_lr", end_lr = "max_lr",
          start_momentum = "max_momentum", end_momentum = "base_momentum" },
        { end_step = n - 1, start_lr = "max_lr", end_lr = "min_lr",
          start_momentum = "base_momentum", end_momentum = "max_momentum" },
      }
    end
    local strategy = o.anneal_strategy or "cos"
    if strategy ~= "cos" and strategy ~= "linear" then
      error("OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got " .. tostring(strategy), 2)
    end
    self.anneal_strategy = strategy
    local div = number(name, "div_factor", o.div_factor or 25.)
    local fdiv = number(name, "final_div_factor", o.final_div_factor or 1e4)
    -- initial_lr = max_lr / div_factor, min_lr = initial_lr / final_div_factor
    -- (PyTorch raises ZeroDivisionError when made)
    if div == 0 then error("OneCycleLR: div_factor must not be 0 (initial_lr = max_lr / div_factor)", 2) end
    if fdiv == 0 then
      error("OneCycleLR: final_div_factor must not be 0 (min_lr = initial_lr / final_div_factor)", 2)
    end
    local max_lrs = per_group(name, opt, "max_lr", o.max_lr)
    local last = o.last_epoch or -1
    if last == -1 then
      for i, g in ipairs(opt.param_groups) do
        g.initial_lr = max_lrs[i] / div
        g.max_lr = max_lrs[i]
        g.min_lr = g.initial_lr / fdiv
      end
    end
    self.cycle_momentum = o.cycle_momentum ~= false
    if self.cycle_momentum then
      if opt.defaults.momentum == nil and opt.defaults.betas == nil then
        error("OneCycleLR: optimizer must support momentum with `cycle_momentum` option enabled", 2)
      end
      self.use_beta1 = opt.defaults.betas ~= nil
      local mm = per_group(name, opt, "max_momentum", o.max_momentum or 0.95)
      local bm = per_group(name, opt, "base_momentum", o.base_momentum or 0.85)
      if last == -1 then
        for i, g in ipairs(opt.param_groups) do
          if self.use_beta1 then g.betas = { mm[i], g.betas[2] } else g.momentum = mm[i] end
          g.max_momentum, g.base_momentum = mm[i], bm[i]
        end
      end
    end
    base_init(self, opt, o)
    return self
  end
  function OneCycle:_anneal(s, e, pct)
    if self.anneal_strategy == "cos" then return e + (s - e) / 2.0 * (cos(pi * pct) + 1) end
    return (e - s) * pct + s
  end
  function OneCycle:_compute_lr()
    local step_num = self.last_epoch
    if step_num > self.total_steps then
      error(string.format("OneCycleLR: Tried to step %d times. The specified number of total steps is %d",
        step_num + 1, self.total_steps), 3)
    end
    local out, phases = {}, self._schedule_phases
    for gi, g in ipairs(self.optimizer.param_groups) do
      local start_step, lr, mom = 0, nil, nil
      for i, ph in ipairs(phases) do
        local end_step = ph.end_step
        if step_num <= end_step or i == #phases then
          -- a phase of no length (pct_start = 1: the last phase starts
          -- and ends at total_steps - 1) divides by zero at the step that
          -- falls in it (PyTorch raises ZeroDivisionError there)
          if end_step == start_step then
            error(string.format("OneCycleLR: step %d falls in phase %d, which has no length (pct_start=%g, "
              .. "total_steps=%d): its position in the phase divides by zero", step_num, i,
              self._pct_start or 0, self.total_steps), 3)
          end
          local pct = (step_num - start_step) / (end_step - start_step)
          lr = self:_anneal(g[ph.start_lr], g[ph.end_lr], pct)
          if self.cycle_momentum then mom = self:_anneal(g[ph.start_momentum], g[ph.end_momentum], pct) end
          break
        end
        start_step = ph.end_step
      end
      out[gi] = lr
      if self.cycle_momentum then
        if self.use_beta1 then g.betas = { mom, g.betas[2] } else g.momentum = mom end
      end
    end
    return out
  end

  -- -- SequentialLR, ChainedScheduler ------------------------------------------------------
  local function check_list(name, scheds, opt)
    if type(scheds) ~= "table" or #scheds == 0 then
      error(name .. ": schedulers must be a non-empty list of schedulers", 3)
    end
    for i, s in ipairs(scheds) do
      if type(s) ~= "table" or getmetatable(s) == nil or s.optimizer == nil then
        error(string.format("%s: schedulers[%d] is not a scheduler", name, i), 3)
      end
      -- its step takes a metric, which neither passes (PyTorch 1.13 fails at
      -- the first step that reaches it; SequentialLR's step(0) would be
      -- taken as a metric of 0 here)
      if s.__name == "ReduceLROnPlateau" then
        error(string.format("%s: schedulers[%d] is a ReduceLROnPlateau, whose step takes a metric; "
          .. "step it on its own", name, i), 3)
      end
      if opt and s.optimizer ~= opt then
        error(string.format("%s: expects all schedulers to belong to the same optimizer, but got "
          .. "schedulers at index %d to be different than the optimizer passed in", name, i), 3)
      end
      if s.optimizer ~= scheds[1].optimizer then
        error(string.format("%s: expects all schedulers to belong to the same optimizer, but got "
          .. "schedulers at index 1 and %d to be different", name, i), 3)
      end
    end
  end
  local function nested_state(self)
    local sd = plain_state(self, { _schedulers = true })
    sd._schedulers = {}
    for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
    return sd
  end
  local function nested_load(self, sd, ...)
    ARGS.nomore("load_state_dict", 2, ...)
    for k, v in pairs(sd) do
      if k ~= "_schedulers" and k ~= "optimizer" then self[k] = copy(v) end
    end
    for i, s in ipairs(sd._schedulers or {}) do self._schedulers[i]:load_state_dict(s) end
  end

  local Sequential = class("SequentialLR")
  function S.SequentialLR(opt, a, b, ...)
    local o = args("SequentialLR", opt, a, b, "schedulers", { "schedulers", "milestones", "last_epoch", "verbose" }, ...)
    local scheds, ms = o.schedulers, o.milestones
    check_list("SequentialLR", scheds, opt)
    if type(ms) ~= "table" then error("SequentialLR: milestones (a list of epoch counts) is required", 2) end
    -- the scheduler of an epoch is found by bisection, as PyTorch's: the
    -- milestones must be in order (PyTorch takes any order and bisects a
    -- list out of order: its switches then follow no rule)
    for i, m in ipairs(ms) do
      if type(m) ~= "number" or m ~= floor(m) then
        error(string.format("SequentialLR: milestones[%d] must be an integer epoch count, got %s", i, tostring(m)), 2)
      end
      if i > 1 and m < ms[i - 1] then
        error(string.format("SequentialLR: milestones must be in increasing order, got %s after %s",
          tostring(m), tostring(ms[i - 1])), 2)
      end
    end
    if #ms ~= #scheds - 1 then
      error(string.format("SequentialLR: expects number of schedulers provided to be one more than the "
        .. "number of milestone points, but got number of schedulers %d and the number of milestones "
        .. "to be equal to %d", #scheds, #ms), 2)
    end
    local self = setmetatable({ _schedulers = { unpack(scheds) }, _milestones = { unpack(ms) } }, Sequential)
    self.last_epoch = (o.last_epoch or -1) + 1
    self.optimizer = opt
    self.verbose = o.verbose and true or false
    for _, g in ipairs(opt.param_groups) do g.lr = g.initial_lr end
    for _, s in ipairs(scheds) do s.last_epoch = s.last_epoch - 1 end
    scheds[1]:_initial_step()
    self._last_lr = scheds[1]:get_last_lr()
    return self
  end
  function Sequential:step(...)
    ARGS.nooptions("step", 1, 1, ...)
    self.last_epoch = self.last_epoch + 1
    local idx = 0 -- bisect_right
    for _, m in ipairs(self._milestones) do if m <= self.last_epoch then idx = idx + 1 end end
    local s = self._schedulers[idx + 1]
    if idx > 0 and self._milestones[idx] == self.last_epoch then s:step(0) else s:step() end
    self._last_lr = s:get_last_lr()
  end
  function Sequential:state_dict(...) ARGS.nomore("state_dict", 1, ...); return nested_state(self) end
  Sequential.load_state_dict = nested_load

  local Chained = class("ChainedScheduler")
  function S.ChainedScheduler(scheds, ...)
    ARGS.nomore("ChainedScheduler", 1, ...)
    check_list("ChainedScheduler", scheds)
    local self = setmetatable({ _schedulers = { unpack(scheds) }, optimizer = scheds[1].optimizer }, Chained)
    self:_record()
    return self
  end
  function Chained:step(...)
    ARGS.nooptions("step", 1, 1, ...)
    for _, s in ipairs(self._schedulers) do s:step() end
    self:_record()
  end
  Chained.state_dict = Sequential.state_dict
  Chained.load_state_dict = nested_load

  -- -- ReduceLROnPlateau --------------------------------------------------------------------
  local Plateau = {}
  Plateau.__index = Plateau
  Plateau.__name = "ReduceLROnPlateau"
  local PLATEAU = { "mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps",
    "verbose" }
  function S.ReduceLROnPlateau(opt, o, ...)
    local name = "ReduceLROnPlateau"
    o = args(name, opt, o, nil, nil, PLATEAU, ...)
    local self = setmetatable({ optimizer = opt }, Plateau)
    local factor = number(name, "factor", o.factor or 0.1)
    if factor >= 1.0 then error("ReduceLROnPlateau: Factor should be < 1.0, got " .. factor, 2) end
    self.factor = factor
    self.min_lrs = per_group(name, opt, "min_lr", o.min_lr or 0)
    self.patience = number(name, "patience", o.patience or 10)
    self.verbose = o.verbose and true or false
    self.cooldown = number(name, "cooldown", o.cooldown or 0)
    self.cooldown_counter = 0
    self.eps = number(name, "eps", o.eps or 1e-8)
    self.last_epoch = 0
    self:_init_is_better(o.mode or "min", number(name, "threshold", o.threshold or 1e-4), o.threshold_mode or "rel")
    self:_reset()
    self:_record()
    return self
  end
  function Plateau:_init_is_better(mode, threshold, threshold_mode)
    if mode ~= "min" and mode ~= "max" then
      error("ReduceLROnPlateau: mode " .. tostring(mode) .. " is unknown! (expected 'min' or 'max')", 3)
    end
    if threshold_mode ~= "rel" and threshold_mode ~= "abs" then
      error("ReduceLROnPlateau: threshold mode " .. tostring(threshold_mode)
        .. " is unknown! (expected 'rel' or 'abs')", 3)
    end
    self.mode_worse = mode == "min" and math.huge or -math.huge
    self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
  end
  function Plateau:_reset()
    self.best = self.mode_worse
    self.cooldown_counter = 0
    self.num_bad_epochs = 0
  end
  function Plateau:is_better(a, best)
    if self.mode == "min" and self.threshold_mode == "rel" then return a < best * (1. - self.threshold) end
    if self.mode == "min" then return a < best - self.threshold end
    if self.threshold_mode == "rel" then return a > best * (self.threshold + 1.) end
    return a > best + self.threshold
  end
  -- step(metrics [, epoch]): metrics a number or a one-element tensor
  function Plateau:step(metrics, epoch, ...)
    ARGS.nooptions("step", 2, 3, metrics, epoch, ...)
    local current = metrics
    if T.is_tensor(metrics) then current = metrics:item() end
    if type(current) ~= "number" then
      error("step: ReduceLROnPlateau's step takes the metric (a number), got " .. type(metrics), 2)
    end
    if epoch == nil then epoch = self.last_epoch + 1 end
    self.last_epoch = epoch
    if self:is_better(current, self.best) then
      self.best = current
      self.num_bad_epochs = 0
    else
      self.num_bad_epochs = self.num_bad_epochs + 1
    end
    if self.cooldown_counter > 0 then
      self.cooldown_counter = self.cooldown_counter - 1
      self.num_bad_epochs = 0
    end
    if self.num_bad_epochs > self.patience then
      self:_reduce_lr(epoch)
      self.cooldown_counter = self.cooldown
      self.num_bad_epochs = 0
    end
    self:_record()
  end
  function Plateau:_reduce_lr(epoch)
    for i, g in ipairs(self.optimizer.param_groups) do
      local old = g.lr
      local new = math.max(old * self.factor, self.min_lrs[i])
      if old - new > self.eps then
        g.lr = new
        if self.verbose then
          print(string.format("Epoch %s: reducing learning rate of group %d to %.4e.", fmt_epoch(epoch), i, new))
        end
      end
    end
  end
  Plateau._record = Scheduler._record
  Plateau.get_last_lr = Scheduler.get_last_lr
  function Plateau:state_dict(...) ARGS.nomore("state_dict", 1, ...); return plain_state(self) end
  function Plateau:load_state_dict(sd, ...)
    Scheduler.load_state_dict(self, sd, ...)
    self:_init_is_better(self.mode, self.threshold, self.threshold_mode)
  end

  return S
end
