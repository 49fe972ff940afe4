-- T.nn: modules, layers, T.nn.functional, T.nn.init and T.nn.utils
-- (docs/nn.md).
return function(T, C)
  local nn = {}
  T.nn = nn
  nn.functional = require("ember.nn.functional")(T, C)
  nn.init = require("ember.nn.init_fns")(T, C)
  nn.Module = require("ember.nn.module")(T, C)

  -- A parameter: the tensor itself, requiring grad and marked as a
  -- parameter. nn.Parameter(t, false) is a frozen parameter: it does not
  -- require grad (t itself when t does not, else t:detach(), sharing t's
  -- memory, as PyTorch's Parameter(t, requires_grad=False) is a new tensor
  -- on t's data) but carries the mark, so assigning it to a module field
  -- registers it as a parameter (parameters(), state_dict) where a plain
  -- tensor that does not require grad is a plain field (docs/nn.md).
  local A = require "ember.args"
  function nn.Parameter(t, requires_grad, ...)
    A.nooptions("Parameter", 2, 2, requires_grad, ...)
    if not T.is_tensor(t) then error("Parameter: expected a tensor, got " .. type(t), 2) end
    if requires_grad ~= nil and type(requires_grad) ~= "boolean" then
      error("Parameter: expected requires_grad to be a boolean, got " .. type(requires_grad), 2)
    end
    if requires_grad == false then
      if t.requires_grad then t = t:detach() end
      return nn.Module._mark_param(t)
    end
    if not t.requires_grad then t:requires_grad_(true) end
    return nn.Module._mark_param(t)
  end

  require("ember.nn.layers")(T, C, nn)
  require("ember.nn.activations")(T, C, nn)
  require("ember.nn.containers")(T, C, nn)
  require("ember.nn.extra_layers")(T, C, nn)
  require("ember.nn.more_layers")(T, C, nn)
  require("ember.nn.more_layers2")(T, C, nn)
  require("ember.nn.transpose_upsample")(T, C, nn)
  require("ember.nn.layers3d")(T, C, nn)
  require("ember.nn.more_layers3")(T, C, nn)
  require("ember.nn.ctc")(T, C, nn)
  require("ember.nn.attention")(T, C, nn)
  require("ember.nn.summary")(T, nn)

  nn.utils = {}
  -- Scales the gradients of params in place so that their joint norm is at
  -- most max_norm; returns the norm before clipping (a 0-d tensor).
  -- a number, or a one-element tensor's value (PyTorch's float(max_norm))
  local function number_arg(op, v, what)
    if T.is_tensor(v) and v:numel() == 1 then v = v:item() end
    if type(v) ~= "number" then
      error(string.format("%s: expected %s to be a number, got %s", op, what, T.is_tensor(v) and
        string.format("a tensor of %d elements", v:numel()) or type(v)), 3)
    end
    return v
  end
  -- params: a tensor (one parameter) or a list of tensors; level: the
  -- error's, from this function
  local function param_list(op, params, level, one_ok)
    if T.is_tensor(params) then
      if one_ok then return { params } end
      error(string.format("%s: expected a list of tensors for parameters, got a tensor (pass {t} for one)", op), level)
    end
    if type(params) ~= "table" then
      error(string.format("%s: expected a tensor or a list of tensors for parameters, got %s", op, type(params)), level)
    end
    for i, p in ipairs(params) do
      if not T.is_tensor(p) then
        error(string.format("%s: expected a tensor at parameters[%d], got %s", op, i, type(p)), level)
      end
    end
    return params
  end
  local CLIP = { "norm_type", "error_if_nonfinite" }
  -- clip_grad_norm_(params, max_norm[, norm_type[, error_if_nonfinite]]),
  -- torch 1.13's positional order, or (params, max_norm, {norm_type=,
  -- error_if_nonfinite=})
  function nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite, ...)
    A.nomore("clip_grad_norm_", 4, ...)
    max_norm = number_arg("clip_grad_norm_", max_norm, "max_norm")
    if type(norm_type) == "table" and not T.is_tensor(norm_type) then
      A.nomore("clip_grad_norm_", 3, error_if_nonfinite)
      local o = A.checkopts("clip_grad_norm_", norm_type, CLIP)
      norm_type, error_if_nonfinite = o.norm_type, o.error_if_nonfinite
    end
    if error_if_nonfinite ~= nil and type(error_if_nonfinite) ~= "boolean" then
      error("clip_grad_norm_: expected error_if_nonfinite to be a boolean, got " .. type(error_if_nonfinite), 2)
    end
    local nonfinite_error = error_if_nonfinite == true
    norm_type = norm_type or 2
    params = param_list("clip_grad_norm_", params, 3, true)
    -- the gradients detached (sharing their memory), as PyTorch's
    -- p.grad.detach(): a create_graph gradient keeps its own history, and
    -- neither the norm returned nor the scaling records anything
    local grads = {}
    for _, p in ipairs(params) do
      local g = T.optim.grad_of(p)
      if g ~= nil then grads[#grads + 1] = g:detach() end
    end
    if #grads == 0 then return T.zeros({}, { dtype = T.get_default_dtype() }) end
    local norms = {}
    for i, g in ipairs(grads) do norms[i] = g:norm(norm_type) end
    local total = T.stack(norms):norm(norm_type)
    local tv = total:item()
    if nonfinite_error and (tv ~= tv or tv == math.huge or tv == -math.huge) then
      error(string.format("clip_grad_norm_: The total norm of order %s for gradients from `parameters` is " ..
        "non-finite, so it cannot be clipped. To disable this error and scale the gradients by the " ..
        "non-finite norm anyway, set `error_if_nonfinite=False`", tostring(norm_type)), 2)
    end
    local coef = max_norm / (tv + 1e-6)
    -- a NaN norm scales every gradient to NaN, as PyTorch's clamped coefficient does
    if coef ~= coef or coef < 1 then
      for _, g in ipairs(grads) do g:mul_(coef) end
    end
    return total
  end
  function nn.utils.clip_grad_value_(params, clip, ...)
    A.nooptions("clip_grad_value_", 2, 2, clip, ...)
    clip = number_arg("clip_grad_value_", clip, "clip_value")
    params = param_list("clip_grad_value_", params, 3, true)
    for _, p in ipairs(params) do
      local g = T.optim.grad_of(p)
      if g ~= nil then g:detach():clamp_(-clip, clip) end   -- PyTorch's p.grad.data.clamp_
    end
  end
  -- vector_to_parameters(vec, params): vec's slices copied into params
  -- (in place, each keeping its dtype, where PyTorch's rebinds each
  -- parameter's data to a view of vec); vec 1-d with exactly the
  -- parameters' element count (PyTorch takes the leading elements of a
  -- longer one)
  function nn.utils.vector_to_parameters(vec, params, ...)
    A.nomore("vector_to_parameters", 2, ...)
    if not T.is_tensor(vec) then error("vector_to_parameters: expected vec to be a tensor, got " .. type(vec), 2) end
    params = param_list("vector_to_parameters", params, 3, false)
    local total = 0
    for _, p in ipairs(params) do total = total + p:numel() end
    if vec.ndim ~= 1 then
      error(string.format("vector_to_parameters: expected vec to be 1-d, got %d-d", vec.ndim), 2)
    end
    if vec:numel() ~= total then
      error(string.format("vector_to_parameters: vec has %d elements, the parameters %d", vec:numel(), total), 2)
    end
    local at = 1
    T.no_grad(function()
      for _, p in ipairs(params) do
        local n = p:numel()
        p:copy_(vec:narrow(1, at, n):view(p.shape))
        at = at + n
      end
    end)
  end
  function nn.utils.parameters_to_vector(params, ...)
    A.nomore("parameters_to_vector", 1, ...)
    -- one tensor: flattened (torch iterates over its first dim)
    params = param_list("parameters_to_vector", params, 3, true)
    if #params == 0 then error("parameters_to_vector: expected a non-empty list of parameters", 2) end
    local flat = {}
    for i, p in ipairs(params) do flat[i] = p:reshape(-1) end
    return T.cat(flat)
  end

  -- -- weight_norm / remove_weight_norm (PyTorch 1.13's torch.nn.utils.weight_norm) --
  -- weight_norm(module[, name="weight"[, dim=1]]): the parameter `name` is
  -- replaced by name_g (its norm over every dim but `dim`, keepdim) and
  -- name_v (its value), registered after the module's other parameters
  -- (state_dict keys weight_g, weight_v as PyTorch's); module[name] becomes a
  -- plain field, v * (g / ||v||), recomputed by a forward pre-hook before
  -- every call. dim is 1-based (PyTorch's dim=0 is 1); dim = false is
  -- PyTorch's dim=None (one norm over the whole tensor). Returns the module.
  local function norm_except_dim(v, dim)
    if dim == false then return v:norm() end
    local x = v:pow(2)
    for d = 1, v.ndim do
      if d ~= dim then x = x:sum(d, true) end
    end
    return x:sqrt()
  end
  local function wn_compute(m, name, dim)
    local g, v = m._parameters[name .. "_g"], m._parameters[name .. "_v"]
    return v * (g / norm_except_dim(v, dim))
  end
  -- name and dim positional, or any trailing run of them one table:
  -- weight_norm(m, {dim = false}), weight_norm(m, "weight", {dim = 2})
  local WN = { "name", "dim" }
  function nn.utils.weight_norm(module, name, dim, ...)
    if A.is_opts(name) then
      A.nomore("weight_norm", 2, dim, ...)
      local o = A.checkopts("weight_norm", name, WN)
      name, dim = o.name, o.dim
    elseif A.is_opts(dim) then
      A.nomore("weight_norm", 3, ...)
      dim = A.checkopts("weight_norm", dim, { "dim" }).dim
    else
      A.nooptions("weight_norm", 2, 3, name, dim, ...)
    end
    if not nn.Module._is_module(module) then
      error("weight_norm: expected a Module, got " .. type(module), 2)
    end
    name = name or "weight"
    if type(name) ~= "string" then error("weight_norm: expected name to be a string, got " .. type(name), 2) end
    local hooks = rawget(module, "_weight_norm_hooks") or {}
    if hooks[name] then
      error(string.format("weight_norm: Cannot register two weight_norm hooks on the same parameter %s", name), 2)
    end
    local w = module._parameters[name]
    if w == nil then
      error(string.format("weight_norm: %s has no parameter named %s", module.__name, name), 2)
    end
    if dim == nil then dim = 1 end
    if dim ~= false then
      if type(dim) ~= "number" or dim ~= math.floor(dim) or dim == 0 or dim > w.ndim or dim < -w.ndim then
        error(string.format("weight_norm: dim %s is out of range for a %d-d parameter (1-based; false: the whole tensor)",
          tostring(dim), w.ndim), 2)
      end
      if dim < 0 then dim = w.ndim + 1 + dim end
    end
    module:register_parameter(name, nil)
    local g, v
    T.no_grad(function()
      g = norm_except_dim(w, dim):detach():clone()
      v = w:detach():clone()
    end)
    module:register_parameter(name .. "_g", nn.Parameter(g))
    module:register_parameter(name .. "_v", nn.Parameter(v))
    rawset(module, name, wn_compute(module, name, dim))
    local handle = module:register_forward_pre_hook(function(m)
      rawset(m, name, wn_compute(m, name, dim))
    end)
    hooks[name] = { handle = handle, dim = dim }
    rawset(module, "_weight_norm_hooks", hooks)
    return module
  end
  -- remove_weight_norm(module[, name="weight"]): name is a parameter again,
  -- holding the current v * (g / ||v||); name_g and name_v are dropped
  function nn.utils.remove_weight_norm(module, name, ...)
    if A.is_opts(name) then
      A.nomore("remove_weight_norm", 2, ...)
      name = A.checkopts("remove_weight_norm", name, { "name" }).name
    else
      A.nooptions("remove_weight_norm", 2, 2, name, ...)
    end
    if not nn.Module._is_module(module) then
      error("remove_weight_norm: expected a Module, got " .. type(module), 2)
    end
    name = name or "weight"
    local hooks = rawget(module, "_weight_norm_hooks")
    local h = hooks and hooks[name]
    if h == nil then
      error(string.format("remove_weight_norm: weight_norm of '%s' not found in %s", name, module.__name), 2)
    end
    local w
    T.no_grad(function() w = wn_compute(module, name, h.dim):detach() end)
    h.handle.remove()
    hooks[name] = nil
    rawset(module, name, nil)
    module:register_parameter(name .. "_g", nil)
    module:register_parameter(name .. "_v", nil)
    module:register_parameter(name, nn.Parameter(w))
    return module
  end

  require("ember.nn.more_layers4")(T, C, nn)
  require("ember.nn.rnn")(T, C, nn)
  return nn
end
