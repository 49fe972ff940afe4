-- T.optim: SGD, Adam, AdamW, RMSprop with PyTorch's update rules, their
-- state (state_dict / load_state_dict), and the schedulers of
-- T.optim.lr_scheduler (docs/training.md).
--
-- Gradients are read through one function, T.optim.grad_of(p) (p.grad),
-- and cleared through T.optim.set_grad(p, g); a host or a test may replace
-- them. Parameters are updated in place through p:detach() (an alias of
-- the same memory without gradient tracking) inside T.no_grad when autograd
-- is present.
return function(T, C)
  local optim = {}
  T.optim = optim

  function optim.grad_of(p) return p.grad end
  function optim.set_grad(p, g) p.grad = g end

  local function no_grad(fn)
    if T.no_grad then return T.no_grad(fn) end
    return fn()
  end
  local function data_of(p)
    if p.detach then return p:detach() end
    return p
  end
  optim._data_of = data_of

  -- zero_grad for a list of parameters: set_to_none (default true) drops
  -- the gradients, otherwise they are zeroed in place
  function optim._zero_grads(params, set_to_none)
    if set_to_none == nil then set_to_none = true end
    for _, p in ipairs(params) do
      local g = optim.grad_of(p)
      if g ~= nil then
        if set_to_none then optim.set_grad(p, nil) else g:zero_() end
      end
    end
  end

  -- -- the base class --------------------------------------------------------------
  local Optimizer = {}
  Optimizer.__index = Optimizer
  optim.Optimizer = Optimizer

  local function is_list(t) return type(t) == "table" and not T.is_tensor(t) end

  -- params: a list of tensors, a Module's parameters(), or a list of groups
  -- {params = {...}, lr = ...}; defaults fill what a group leaves out
  function Optimizer.create(cls, name, params, defaults, o)
    o = o or {}
    for k in pairs(o) do
      if defaults[k] == nil then error(string.format("%s: unknown option '%s'", name, tostring(k)), 3) end
    end
    local self = setmetatable({ name = name, defaults = {}, param_groups = {}, state = {} }, cls)
    for k, v in pairs(defaults) do
      if o[k] ~= nil then self.defaults[k] = o[k] else self.defaults[k] = v end
    end
    if T.is_tensor(params) then params = { params } end
    if not is_list(params) or #params == 0 then
      error(name .. ": optimizer got an empty parameter list", 3)
    end
    if T.is_tensor(params[1]) then params = { { params = params } } end
    for _, g in ipairs(params) do self:add_param_group(g) end
    return self
  end

  function Optimizer:add_param_group(g)
    local group = { params = {} }
    local ps = g.params
    if T.is_tensor(ps) then ps = { ps } end
    for i, p in ipairs(ps) do group.params[i] = p end
    for k, v in pairs(g) do if k ~= "params" then group[k] = v end end
    for k, v in pairs(self.defaults) do if group[k] == nil then group[k] = v end end
    if group.lr == nil or group.lr == false then error(self.name .. ": lr is required", 3) end
    if group.lr < 0 then error(string.format("%s: Invalid learning rate: %g", self.name, group.lr), 3) end
    group.initial_lr = group.initial_lr or group.lr
    self.param_groups[#self.param_groups + 1] = group
  end

  function Optimizer:zero_grad(set_to_none)
    if type(set_to_none) == "table" then set_to_none = set_to_none.set_to_none end
    for _, g in ipairs(self.param_groups) do optim._zero_grads(g.params, set_to_none) end
  end

  -- step(closure): calls closure() (which re-evaluates the loss) first when
  -- given, runs the update, and returns the closure's loss
  function Optimizer:step(closure)
    local loss
    if closure then loss = closure() end
    no_grad(function()
      for _, group in ipairs(self.param_groups) do
        for _, p in ipairs(group.params) do
          local g = optim.grad_of(p)
          if g ~= nil then
            local st = self.state[p]
            if st == nil then
              st = {}
              self.state[p] = st
            end
            if group.maximize then g = -g end
            self:update(data_of(p), g, st, group)
          end
        end
      end
    end)
    return loss
  end

  -- {state = {[i] = {...}}, param_groups = {{lr = ..., params = {i, ...}}}}
  -- with parameters numbered 1.. in group order, as PyTorch's.
  function Optimizer:state_dict()
    local index, n, groups, state = {}, 0, {}, {}
    for gi, g in ipairs(self.param_groups) do
      local pg = { params = {} }
      for k, v in pairs(g) do if k ~= "params" then pg[k] = v end end
      for _, p in ipairs(g.params) do
        if index[p] == nil then
          n = n + 1
          index[p] = n
        end
        pg.params[#pg.params + 1] = index[p]
        local st = self.state[p]
        if st then
          local copy = {}
          for k, v in pairs(st) do copy[k] = T.is_tensor(v) and v:clone() or v end
          state[index[p]] = copy
        end
      end
      groups[gi] = pg
    end
    return { state = state, param_groups = groups }
  end

  function Optimizer:load_state_dict(sd)
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
      for k, v in pairs(sg) do if k ~= "params" then g[k] = v end end
    end
    self.state = {}
    for i, st in pairs(sd.state) do
      local p = byindex[i]
      if p then
        local copy = {}
        for k, v in pairs(st) do
          if T.is_tensor(v) then
            v = v:clone()
            if v.dtype.is_floating_point and v.dtype ~= p.dtype and v.ndim > 0 then v = v:to(p.dtype) end
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
    optim[name] = function(params, o)
      if type(o) == "number" then o = { lr = o } end
      if check then check(o or {}) end
      return Optimizer.create(cls, name, params, defaults, o)
    end
    return cls
  end

  local function need(cond, name, msg, v)
    if not cond then error(string.format("%s: Invalid %s: %s", name, msg, tostring(v)), 4) end
  end

  -- -- SGD ----------------------------------------------------------------------------
  class("SGD", { lr = false, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false },
    function(self, p, g, st, o)
      local d = g
      if o.weight_decay ~= 0 then d = d:add(p, { alpha = o.weight_decay }) end
      if o.momentum ~= 0 then
        local buf = st.momentum_buffer
        if buf == nil then
          buf = d:clone()
          st.momentum_buffer = buf
        else
          buf:mul_(o.momentum):add_(d, { alpha = 1 - o.dampening })
        end
        if o.nesterov then d = d:add(buf, { alpha = o.momentum }) else d = buf end
      end
      p:add_(d, { alpha = -o.lr })
    end,
    function(o)
      need((o.momentum or 0) >= 0, "SGD", "momentum value", o.momentum)
      need((o.weight_decay or 0) >= 0, "SGD", "weight_decay value", o.weight_decay)
      if o.nesterov and ((o.momentum or 0) <= 0 or (o.dampening or 0) ~= 0) then
        error("SGD: Nesterov momentum requires a momentum and zero dampening", 3)
      end
    end)

  -- -- Adam and AdamW -------------------------------------------------------------------
  local function adam_update(decoupled)
    return function(self, p, g, st, o)
      local b1, b2 = o.betas[1], o.betas[2]
      if st.step == nil then
        st.step = 0
        st.exp_avg = T.zeros_like(p)
        st.exp_avg_sq = T.zeros_like(p)
        if o.amsgrad then st.max_exp_avg_sq = T.zeros_like(p) end
      end
      st.step = st.step + 1
      if o.weight_decay ~= 0 then
        if decoupled then p:mul_(1 - o.lr * o.weight_decay)
        else g = g:add(p, { alpha = o.weight_decay }) end
      end
      st.exp_avg:mul_(b1):add_(g, { alpha = 1 - b1 })
      st.exp_avg_sq:mul_(b2):add_(g * g, { alpha = 1 - b2 })
      local bc1, bc2 = 1 - b1 ^ st.step, 1 - b2 ^ st.step
      local sq = st.exp_avg_sq
      if o.amsgrad then
        st.max_exp_avg_sq = T.maximum(st.max_exp_avg_sq, st.exp_avg_sq)
        sq = st.max_exp_avg_sq
      end
      local denom = (sq:sqrt() / math.sqrt(bc2)):add_(o.eps)
      p:add_(st.exp_avg / denom, { alpha = -o.lr / bc1 })
    end
  end
  local function adam_check(name)
    return function(o)
      need((o.eps or 1) >= 0, name, "epsilon value", o.eps)
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
  class("RMSprop", { lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false, maximize = false },
    function(self, p, g, st, o)
      if st.step == nil then
        st.step = 0
        st.square_avg = T.zeros_like(p)
        if o.momentum > 0 then st.momentum_buffer = T.zeros_like(p) end
        if o.centered then st.grad_avg = T.zeros_like(p) end
      end
      st.step = st.step + 1
      if o.weight_decay ~= 0 then g = g:add(p, { alpha = o.weight_decay }) end
      st.square_avg:mul_(o.alpha):add_(g * g, { alpha = 1 - o.alpha })
      local avg
      if o.centered then
        st.grad_avg:mul_(o.alpha):add_(g, { alpha = 1 - o.alpha })
        avg = (st.square_avg - st.grad_avg * st.grad_avg):sqrt():add_(o.eps)
      else
        avg = st.square_avg:sqrt():add_(o.eps)
      end
      if o.momentum > 0 then
        st.momentum_buffer:mul_(o.momentum):add_(g / avg)
        p:add_(st.momentum_buffer, { alpha = -o.lr })
      else
        p:add_(g / avg, { alpha = -o.lr })
      end
    end,
    function(o)
      need((o.alpha or 0) >= 0, "RMSprop", "alpha value", o.alpha)
      need((o.eps or 0) >= 0, "RMSprop", "epsilon value", o.eps)
    end)

  optim.lr_scheduler = require("ember.optim.lr_scheduler")(T, optim)
  optim.StepLR = optim.lr_scheduler.StepLR
  optim.CosineAnnealingLR = optim.lr_scheduler.CosineAnnealingLR
  return optim
end
