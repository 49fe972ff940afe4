-- T.optim: SGD, Adam, AdamW, RMSprop with PyTorch's update rules, their
-- state (state_dict / load_state_dict), and the schedulers of
-- T.optim.lr_scheduler (docs/training.md).
--
-- Gradients are read through one function, T.optim.grad_of(p) (p.grad),
-- and cleared through T.optim.set_grad(p, g); a host or a test may replace
-- them. Parameters are updated in place by fused C kernels (C._optim_*,
-- engine/src/ops/optim.c over the loops of engine/src/cpu/optim.c), which
-- record nothing for autograd.
return function(T, C)
  local optim = {}
  T.optim = optim

  local ARGS = require "ember.args"
  local named = require("ember.argcheck")(T).named
  function optim.grad_of(p, ...)
    ARGS.nomore("grad_of", 1, ...)
    return p.grad
  end
  function optim.set_grad(p, g, ...)
    ARGS.nomore("set_grad", 2, ...)
    p.grad = g
  end


  -- zero_grad for a list of parameters: set_to_none (default true) drops
  -- the gradients, otherwise they are zeroed in place
  -- (one call per parameter: dropping needs no read of the old gradient)
  function optim._zero_grads(params, set_to_none)
    if set_to_none == nil then set_to_none = true end
    local set_grad, grad_of = optim.set_grad, optim.grad_of
    for i = 1, #params do
      local p = params[i]
      if set_to_none then
        set_grad(p, nil)
      else
        local g = grad_of(p)
        if g ~= nil then
          -- a gradient with history (create_graph) is detached first, as
          -- PyTorch's zero_grad: the zeros record nothing
          if g.grad_fn ~= nil then
            if not pcall(g.detach_, g) then   -- a view: a fresh detached gradient
              g = g:detach():clone()
              set_grad(p, g)
            end
          elseif g.requires_grad then
            g:requires_grad_(false)
          end
          T.no_grad(function() g:zero_() end)
        end
      end
    end
  end

  -- -- the base class --------------------------------------------------------------
  local Optimizer = {}
  Optimizer.__index = Optimizer
  optim.Optimizer = Optimizer

  local function is_list(t) return type(t) == "table" and not T.is_tensor(t) end
  -- A complex parameter is optimized as its real view (PyTorch's
  -- view_as_real in every optimizer): its state is real-shaped.
  -- add_param_group notes which parameters are complex (complex_params),
  -- so a step tests a table instead of each parameter's dtype.
  local function real_view(t)
    local r
    T.no_grad(function() r = T.view_as_real(t) end)
    return r
  end
  -- an option's value for one group: a table (betas, etas) copied, so a
  -- group's or optimizer's change never reaches another's (PyTorch's are
  -- tuples, which cannot change in place)
  -- a copy of an option's plain tables (betas), so no two groups,
  -- optimizers or state dicts share one; with clone, tensors are cloned
  -- too (state: LBFGS's history lists hold tensors)
  local function own(v, clone)
    if clone and T.is_tensor(v) then return v:clone() end
    -- plain tables, and the lists and dicts T.load_torch makes (a
    -- PyTorch state dict's): copied as plain tables
    if is_list(v) and (getmetatable(v) == nil or T.torch_kind(v) ~= nil) then
      local c = {}
      for k, x in pairs(v) do c[k] = own(x, clone) end
      return c
    end
    return v
  end

  -- params: a list of tensors, a Module's parameters(), or a list of groups
  -- {params = {...}, lr = ...}; defaults fill what a group leaves out
  function Optimizer.create(cls, name, params, defaults, o)
    o = o or {}
    for k in pairs(o) do
      if defaults[k] == nil then
        local names = {}
        for n in pairs(defaults) do names[#names + 1] = n end
        table.sort(names)
        error(string.format("%s: unknown option '%s' (expected one of: %s)", name, tostring(k),
          table.concat(names, ", ")), 3)
      end
    end
    local self = setmetatable({ name = name, defaults = {}, param_groups = {}, state = {} }, cls)
    for k, v in pairs(defaults) do
      if o[k] ~= nil then self.defaults[k] = own(o[k]) else self.defaults[k] = own(v) end
    end
    if T.is_tensor(params) then params = { params } end
    if not is_list(params) or #params == 0 then
      error(name .. ": optimizer got an empty parameter list", 3)
    end
    -- a list of tensors (anything but a list of group tables) is one group
    if not is_list(params[1]) then params = { { params = params } } end
    for _, g in ipairs(params) do self:add_param_group(g) end
    return self
  end

  function Optimizer:add_param_group(g, ...)
    ARGS.nomore("add_param_group", 2, ...)
    for k in pairs(g) do
      if k ~= "params" and self.defaults[k] == nil then
        error(string.format("%s: unknown option '%s' in a parameter group", self.name, tostring(k)), 3)
      end
    end
    local group = { params = {} }
    local ps = g.params
    if T.is_tensor(ps) then ps = { ps } end
    if not is_list(ps) then
      error(string.format("%s: a parameter group needs params (a tensor or a list of tensors), got %s",
        self.name, type(ps)), 3)
    end
    -- PyTorch's checks: tensors, leaves, each in one group only
    local seen = {}
    for _, pg in ipairs(self.param_groups) do for _, p in ipairs(pg.params) do seen[p] = true end end
    for i, p in ipairs(ps) do
      if not T.is_tensor(p) then
        error(string.format("%s: optimizer can only optimize Tensors, but one of the params is %s",
          self.name, type(p)), 3)
      end
      if not p.is_leaf then error(self.name .. ": can't optimize a non-leaf Tensor", 3) end
      if seen[p] then error(self.name .. ": some parameters appear in more than one parameter group", 3) end
      group.params[i] = p
      if p:is_complex() then
        self.complex_params = self.complex_params or {}
        self.complex_params[p] = true
      end
    end
    for k, v in pairs(g) do if k ~= "params" then group[k] = own(v) end end
    for k, v in pairs(self.defaults) do if group[k] == nil then group[k] = own(v) end end
    if group.lr == nil or group.lr == false then error(self.name .. ": lr is required", 3) end
    if type(group.lr) ~= "number" then
      error(string.format("%s: lr must be a number, got %s%s", self.name, T.is_tensor(group.lr) and "a tensor" or type(group.lr),
        T.is_tensor(group.lr) and " (use lr:item())" or ""), 3)
    end
    if not (group.lr >= 0) then
      error(string.format("%s: Invalid learning rate: %s", self.name,
        group.lr ~= group.lr and "nan" or string.format("%g", group.lr)), 3)
    end
    self.param_groups[#self.param_groups + 1] = group
  end

  local ZERO = { "set_to_none" }
  function Optimizer:zero_grad(set_to_none, ...)
    ARGS.nomore("zero_grad", 2, ...)
    if type(set_to_none) == "table" then set_to_none = ARGS.checkopts("zero_grad", set_to_none, ZERO).set_to_none end
    for _, g in ipairs(self.param_groups) do optim._zero_grads(g.params, set_to_none) end
  end

  -- step(closure): calls closure() (which re-evaluates the loss) first when
  -- given, runs the update, and returns the closure's loss
  -- The updates write the parameters' memory directly (a fused kernel per
  -- parameter); they record nothing, so no grad-mode switch is needed.
  -- The built-in updates call only their fused C step, so their loop runs
  -- gathered (C._optim_gather, docs/optim.md "One launch for many
  -- parameters"): the updates of contiguous parameters are queued and run
  -- together (on cuda one kernel launch per up to 64 parameters), and
  -- whatever is queued runs before step returns or raises. A subclass's own
  -- update runs ungathered.
  local gathered = setmetatable({}, { __mode = "k" })
  local gather = C._optim_gather

  local function step_loop(self)
    local grad_of, state, cx = optim.grad_of, self.state, self.complex_params
    for _, group in ipairs(self.param_groups) do
      local params = group.params
      for i = 1, #params do
        local p = params[i]
        local g = grad_of(p)
        if g ~= nil then
          local st = state[p]
          if st == nil then
            st = {}
            state[p] = st
          end
          if cx and cx[p] then p, g = real_view(p), real_view(g) end
          self:update(p, g, st, group)
        end
      end
    end
  end

  function Optimizer:step(closure, ...)
    ARGS.nooptions("step", 2, 2, closure, ...)
    local loss
    -- the closure recomputes the loss and its gradients: with grad mode on
    -- even when step is called under no_grad (PyTorch's enable_grad)
    if closure then loss = T.enable_grad(closure) end
    if gathered[self.update] then
      gather(true)
      local ok, err = pcall(step_loop, self)
      local flushed, ferr = pcall(gather, false)
      if not ok then error(err, 0) end
      if not flushed then error(ferr, 0) end
    else
      step_loop(self)
    end
    return loss
  end

  -- {state = {[i] = {...}}, param_groups = {{lr = ..., params = {i, ...}}}}
  -- with parameters numbered 1.. in group order, as PyTorch's.
  function Optimizer:state_dict(...)
    ARGS.nomore("state_dict", 1, ...)
    local index, n, groups, state = {}, 0, {}, {}
    for gi, g in ipairs(self.param_groups) do
      local pg = { params = {} }
      for k, v in pairs(g) do if k ~= "params" then pg[k] = own(v) end end
      for _, p in ipairs(g.params) do
        if index[p] == nil then
          n = n + 1
          index[p] = n
        end
        pg.params[#pg.params + 1] = index[p]
        local st = self.state[p]
        if st then
          local copy = {}
          local scalars = self.scalar_state
          for k, v in pairs(st) do
            if scalars and scalars[k] then v = T.tensor(v, { dtype = T.float32 }) end
            copy[k] = own(v, true)
          end
          state[index[p]] = copy
        end
      end
      groups[gi] = pg
    end
    -- state's keys are 1..n: T.save_torch writes it as the dict PyTorch has
    return { state = T.torch_kind(state, "dict"), param_groups = groups }
  end

  function Optimizer:load_state_dict(sd, ...)
    ARGS.nomore("load_state_dict", 2, ...)
    local groups = sd.param_groups
    if #groups ~= #self.param_groups then
      error("load_state_dict: loaded state dict has a different number of parameter groups", 2)
    end
    local byindex = {}
    for gi, g in ipairs(self.param_groups) do
      local sg = groups[gi]
      if #sg.params ~= #g.params then
        error("load_state_dict: loaded state dict contains a parameter group that doesn't match the "
          .. "size of optimizer's group", 2)
      end
      for i, p in ipairs(g.params) do byindex[sg.params[i]] = p end
      -- options PyTorch leaves None (foreach) mean "the default": not copied
      for k, v in pairs(sg) do if k ~= "params" and v ~= T.None then g[k] = own(v) end end
    end
    self.state = {}
    local cx = self.complex_params
    for i, st in pairs(sd.state) do
      local p = byindex[i]
      if p then
        local copy = {}
        -- a complex parameter's state is real-shaped (its real view's);
        -- PyTorch's is complex: viewed as real here
        local pdtype = (cx and cx[p]) and real_view(p).dtype or p.dtype
        for k, v in pairs(st) do
          if (k == "step" or (self.scalar_state and self.scalar_state[k])) and T.is_tensor(v)
              and v:numel() == 1 then
            v = v:item() -- PyTorch >= 1.12 keeps Adam's step as a 0-d tensor
          elseif T.is_tensor(v) then
            v = v:clone()
            if v:is_complex() and cx and cx[p] then v = real_view(v) end
            if v.dtype.is_floating_point and v.dtype ~= pdtype and v.ndim > 0 then v = v:to(pdtype) end
          else
            v = own(v, true)
          end
          copy[k] = v
        end
        self.state[p] = copy
      end
    end
  end

  local function class(name, defaults, update, check)
    local cls = setmetatable({}, { __index = Optimizer })
    cls.__index = cls
    cls.update = update
    gathered[update] = true
    -- named: an error from the checks below, at whatever depth, is
    -- raised at the caller's position, not at a line of this file
    optim[name] = named(name, function(params, o, ...)
      ARGS.nomore(name, 2, ...)
      if type(o) == "number" then o = { lr = o } end
      if check then check(o or {}) end
      return Optimizer.create(cls, name, params, defaults, o)
    end)
    return cls
  end

  local function need(cond, name, msg, v)
    if not cond then error(string.format("%s: Invalid %s: %s", name, msg, tostring(v)), 4) end
  end
  -- a numeric option given as something else is named, not compared
  -- ("attempt to compare number with string")
  local function number_opt(name, what, v)
    if v ~= nil and type(v) ~= "number" then
      error(string.format("%s: %s must be a number, got %s", name, what, type(v)), 4)
    end
  end
  local function betas_pair(name, v)
    if v ~= nil and (type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number") then
      error(string.format("%s: betas must be a pair of numbers", name), 4)
    end
  end

  -- The updates are fused C kernels (engine/src/cpu/optim.c): one call per
  -- parameter and step does PyTorch 1.13's whole update in one pass, in the
  -- parameter's dtype, writing the parameter and its state in place. State
  -- tensors start as nil; the kernel creates them on the first step.

  -- -- SGD ----------------------------------------------------------------------------
  local sgd_step = C._optim_sgd
  class("SGD", { lr = false, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false },
    function(self, p, g, st, o)
      st.momentum_buffer = sgd_step(p, g, st.momentum_buffer, o.lr, o.momentum, o.dampening,
        o.weight_decay, o.nesterov, o.maximize)
    end,
    function(o)
      number_opt("SGD", "momentum", o.momentum)
      number_opt("SGD", "dampening", o.dampening)
      number_opt("SGD", "weight_decay", o.weight_decay)
      need((o.momentum or 0) >= 0, "SGD", "momentum value", o.momentum)
      need((o.weight_decay or 0) >= 0, "SGD", "weight_decay value", o.weight_decay)
      if o.nesterov and ((o.momentum or 0) <= 0 or (o.dampening or 0) ~= 0) then
        error("SGD: Nesterov momentum requires a momentum and zero dampening", 3)
      end
    end)

  -- -- Adam and AdamW -------------------------------------------------------------------
  local adam_step = C._optim_adam
  local function adam_update(decoupled)
    return function(self, p, g, st, o)
      local step = (st.step or 0) + 1
      local m, v, vmax = adam_step(p, g, st.exp_avg, st.exp_avg_sq, st.max_exp_avg_sq, step, o.lr,
        o.betas[1], o.betas[2], o.eps, o.weight_decay, o.amsgrad, o.maximize, decoupled)
      st.step, st.exp_avg, st.exp_avg_sq = step, m, v
      if o.amsgrad then st.max_exp_avg_sq = vmax end
    end
  end
  local function adam_check(name)
    return function(o)
      number_opt(name, "eps", o.eps)
      number_opt(name, "weight_decay", o.weight_decay)
      betas_pair(name, o.betas)
      need((o.eps or 1) >= 0, name, "epsilon value", o.eps)
      need((o.weight_decay or 0) >= 0, name, "weight_decay value", o.weight_decay)
      if o.betas then
        need(o.betas[1] >= 0 and o.betas[1] < 1, name, "beta parameter at index 1", o.betas[1])
        need(o.betas[2] >= 0 and o.betas[2] < 1, name, "beta parameter at index 2", o.betas[2])
      end
    end
  end
  class("Adam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false, maximize = false },
    adam_update(false), adam_check("Adam"))
  class("AdamW", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, amsgrad = false, maximize = false },
    adam_update(true), adam_check("AdamW"))

  -- -- RMSprop --------------------------------------------------------------------------
  local rmsprop_step = C._optim_rmsprop
  class("RMSprop", { lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false, maximize = false },
    function(self, p, g, st, o)
      local sq, buf, ga = rmsprop_step(p, g, st.square_avg, st.momentum_buffer, st.grad_avg, o.lr,
        o.alpha, o.eps, o.weight_decay, o.momentum, o.centered, o.maximize)
      st.step, st.square_avg = (st.step or 0) + 1, sq
      if o.momentum > 0 then st.momentum_buffer = buf end
      if o.centered then st.grad_avg = ga end
    end,
    function(o)
      for _, k in ipairs({ "alpha", "eps", "momentum", "weight_decay" }) do number_opt("RMSprop", k, o[k]) end
      need((o.alpha or 0) >= 0, "RMSprop", "alpha value", o.alpha)
      need((o.eps or 0) >= 0, "RMSprop", "epsilon value", o.eps)
      need((o.momentum or 0) >= 0, "RMSprop", "momentum value", o.momentum)
      need((o.weight_decay or 0) >= 0, "RMSprop", "weight_decay value", o.weight_decay)
    end)


  -- -- Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop -------------------------
  -- (docs/optim.md) one fused C step per parameter (C._optim_other,
  -- engine/src/cpu/optim.c), PyTorch 1.13's single-tensor updates. Scalar
  -- state PyTorch keeps in float32 0-d tensors (NAdam's mu_product, ASGD's
  -- eta and mu) is a Lua number here, rounded as float32 by the step, and
  -- a 0-d float32 tensor in state_dict().
  local other_step = C._optim_other
  local KIND = { Adagrad = 1, Adadelta = 2, Adamax = 3, NAdam = 4, RAdam = 5, ASGD = 6, Rprop = 7 }
  local SLOTS = {
    Adagrad = { "sum" }, Adadelta = { "square_avg", "acc_delta" }, Adamax = { "exp_avg", "exp_inf" },
    NAdam = { "exp_avg", "exp_avg_sq" }, RAdam = { "exp_avg", "exp_avg_sq" }, ASGD = { "ax" },
    Rprop = { "prev", "step_size" },
  }
  local function other_update(name)
    local kind, slots = KIND[name], SLOTS[name]
    local s1, s2 = slots[1], slots[2]
    return function(self, p, g, st, o)
      local step = (st.step or 0) + 1
      local b = o.betas or {}
      local etas, sizes = o.etas or {}, o.step_sizes or {}
      local a, c
      if name == "NAdam" then a = st.mu_product or 1
      elseif name == "ASGD" then a, c = st.eta or o.lr, st.mu or 1 end
      local x1, x2, r1, r2 = other_step(kind, p, g, st[s1], s2 and st[s2], step, a or 0, c or 0,
        o.lr, o.weight_decay or 0, o.eps or 0, b[1] or 0, b[2] or 0, o.lr_decay or 0,
        o.initial_accumulator_value or 0, o.rho or 0, o.momentum_decay or 0, o.lambd or 0,
        o.alpha or 0, o.t0 or 0, etas[1] or 0, etas[2] or 0, sizes[1] or 0, sizes[2] or 0,
        o.maximize)
      st.step, st[s1] = step, x1
      if s2 then st[s2] = x2 end
      if name == "NAdam" then st.mu_product = r1
      elseif name == "ASGD" then st.eta, st.mu = r1, r2 end
    end
  end
  local function nonneg(name, what, v)
    if v ~= nil and not (type(v) == "number" and v >= 0) then
      error(string.format("%s: Invalid %s value: %s", name, what, tostring(v)), 4)
    end
  end
  local function pair(name, what, v, check)
    if v == nil then return end
    if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or v[3] ~= nil then
      error(string.format("%s: %s must be a pair of numbers", name, what), 4)
    end
    if check then check(v) end
  end
  local function betas_check(name)
    return function(o)
      nonneg(name, "epsilon", o.eps)
      nonneg(name, "weight_decay", o.weight_decay)
      pair(name, "betas", o.betas, function(v)
        need(v[1] >= 0 and v[1] < 1, name, "beta parameter at index 1", v[1])
        need(v[2] >= 0 and v[2] < 1, name, "beta parameter at index 2", v[2])
      end)
    end
  end
  local function other_class(name, defaults, check, scalar_state)
    local cls = class(name, defaults, other_update(name), check)
    cls.scalar_state = scalar_state
    return cls
  end

  local Adagrad = other_class("Adagrad", { lr = 1e-2, lr_decay = 0, weight_decay = 0,
    initial_accumulator_value = 0, eps = 1e-10, maximize = false }, function(o)
      nonneg("Adagrad", "lr_decay", o.lr_decay)
      nonneg("Adagrad", "weight_decay", o.weight_decay)
      nonneg("Adagrad", "initial_accumulator_value", o.initial_accumulator_value)
      nonneg("Adagrad", "epsilon", o.eps)
    end)
  -- PyTorch makes Adagrad's state at construction (step 0, sum full of
  -- initial_accumulator_value), so a state_dict before any step has it:
  -- made as each group is added (construction adds them all)
  function Adagrad:add_param_group(g, ...)
    Optimizer.add_param_group(self, g, ...)
    local group = self.param_groups[#self.param_groups]
    for _, p in ipairs(group.params) do
      if not self.state[p] then
        local like = self.complex_params and self.complex_params[p] and real_view(p) or p
        self.state[p] = { step = 0, sum = T.full_like(like, group.initial_accumulator_value) }
      end
    end
  end
  other_class("Adadelta", { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false },
    function(o)
      if o.rho ~= nil and not (type(o.rho) == "number" and o.rho >= 0 and o.rho <= 1) then
        error("Adadelta: Invalid rho value: " .. tostring(o.rho), 3)
      end
      nonneg("Adadelta", "epsilon", o.eps)
      nonneg("Adadelta", "weight_decay", o.weight_decay)
    end)
  other_class("Adamax", { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, maximize = false },
    betas_check("Adamax"))
  other_class("NAdam", { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, momentum_decay = 4e-3 },
    function(o)
      betas_check("NAdam")(o)
      nonneg("NAdam", "momentum_decay", o.momentum_decay)
    end, { mu_product = true })
  other_class("RAdam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0 }, betas_check("RAdam"))
  other_class("ASGD", { lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0, maximize = false },
    function(o) nonneg("ASGD", "weight_decay", o.weight_decay) end, { eta = true, mu = true })
  other_class("Rprop", { lr = 1e-2, etas = { 0.5, 1.2 }, step_sizes = { 1e-6, 50 }, maximize = false },
    function(o)
      pair("Rprop", "etas", o.etas, function(v)
        if not (0 < v[1] and v[1] < 1 and 1 < v[2]) then
          error(string.format("Rprop: Invalid eta values: %s, %s", tostring(v[1]), tostring(v[2])), 5)
        end
      end)
      pair("Rprop", "step_sizes", o.step_sizes)
    end)

  optim.LBFGS = require("ember.optim.lbfgs")(T, optim, Optimizer)

  optim.lr_scheduler = require("ember.optim.lr_scheduler")(T, optim)
  optim.StepLR = optim.lr_scheduler.StepLR
  optim.CosineAnnealingLR = optim.lr_scheduler.CosineAnnealingLR
  return optim
end
