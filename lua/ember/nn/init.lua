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
  local CLIP = { "norm_type", "error_if_nonfinite" }
  function nn.utils.clip_grad_norm_(params, max_norm, norm_type, ...)
    A.nomore("clip_grad_norm_", 3, ...)
    local nonfinite_error = false
    if type(norm_type) == "table" then
      local o = A.checkopts("clip_grad_norm_", norm_type, CLIP)
      norm_type, nonfinite_error = o.norm_type, o.error_if_nonfinite == true
    end
    norm_type = norm_type or 2
    if T.is_tensor(params) then params = { params } end
    local grads = {}
    for _, p in ipairs(params) do
      local g = T.optim.grad_of(p)
      if g ~= nil then grads[#grads + 1] = g end
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
    if T.is_tensor(params) then params = { params } end
    for _, p in ipairs(params) do
      local g = T.optim.grad_of(p)
      if g ~= nil then g:clamp_(-clip, clip) end
    end
  end
  -- vector_to_parameters(vec, params): vec's slices copied into params
  -- (in place, as PyTorch's replaces each parameter's data)
  function nn.utils.vector_to_parameters(vec, params, ...)
    A.nomore("vector_to_parameters", 2, ...)
    if not T.is_tensor(vec) then error("vector_to_parameters: expected vec to be a tensor, got " .. type(vec), 2) end
    local total = 0
    for _, p in ipairs(params) do total = total + p:numel() end
    if vec.ndim ~= 1 or vec:numel() ~= total then
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
    local flat = {}
    for i, p in ipairs(params) do flat[i] = p:reshape(-1) end
    return T.cat(flat)
  end
  require("ember.nn.rnn")(T, C, nn)
  return nn
end
