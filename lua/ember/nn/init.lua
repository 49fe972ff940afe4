-- T.nn: modules, layers, T.nn.functional, T.nn.init and T.nn.utils
-- (docs/nn.md).
return function(T, C)
  local nn = {}
  T.nn = nn
  nn.functional = require("ember.nn.functional")(T, C)
  nn.init = require("ember.nn.init_fns")(T, C)
  nn.Module = require("ember.nn.module")(T, C)

  -- A parameter: the tensor itself, marked as requiring grad.
  local A = require "ember.args"
  function nn.Parameter(t, requires_grad, ...)
    A.nooptions("Parameter", 2, 2, requires_grad, ...)
    if not T.is_tensor(t) then error("Parameter: expected a tensor", 2) end
    if requires_grad == false then return t end
    if not t.requires_grad then t:requires_grad_(true) end
    return t
  end

  require("ember.nn.layers")(T, C, nn)
  require("ember.nn.activations")(T, C, nn)
  require("ember.nn.containers")(T, C, nn)
  require("ember.nn.extra_layers")(T, C, nn)
  require("ember.nn.more_layers")(T, C, nn)
  require("ember.nn.transpose_upsample")(T, C, nn)
  require("ember.nn.ctc")(T, C, nn)
  require("ember.nn.attention")(T, C, nn)
  require("ember.nn.summary")(T, nn)

  nn.utils = {}
  -- Scales the gradients of params in place so that their joint norm is at
  -- most max_norm; returns the norm before clipping (a 0-d tensor).
  local CLIP = { "norm_type" }
  function nn.utils.clip_grad_norm_(params, max_norm, norm_type, ...)
    A.nomore("clip_grad_norm_", 3, ...)
    if type(norm_type) == "table" then norm_type = A.checkopts("clip_grad_norm_", norm_type, CLIP).norm_type end
    norm_type = norm_type or 2
    if T.is_tensor(params) then params = { params } end
    local grads = {}
    for _, p in ipairs(params) do
      local g = T.optim.grad_of(p)
      if g ~= nil then grads[#grads + 1] = g end
    end
    if #grads == 0 then return T.tensor(0.0) end
    local norms = {}
    for i, g in ipairs(grads) do norms[i] = g:norm(norm_type) end
    local total = T.stack(norms):norm(norm_type)
    local coef = max_norm / (total:item() + 1e-6)
    if coef < 1 then
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
  function nn.utils.parameters_to_vector(params, ...)
    A.nomore("parameters_to_vector", 1, ...)
    local flat = {}
    for i, p in ipairs(params) do flat[i] = p:reshape(-1) end
    return T.cat(flat)
  end
  require("ember.nn.rnn")(T, C, nn)
  return nn
end
