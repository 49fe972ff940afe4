-- Pieces of torch.nn found absent in a fourth round (docs/nn.md, "More
-- layers, fourth round"), each a composite of ember's differentiable ops
-- with PyTorch 1.13's semantics: nn.utils.spectral_norm /
-- remove_spectral_norm (the power-iteration hook), nn.AdaptiveLogSoftmaxWithLoss
-- (1-based targets and classes), F.fractional_max_pool3d /
-- nn.FractionalMaxPool3d and the *_with_indices forms of the fractional pools.
-- (The volumetric F.grid_sample is in layers3d.lua, next to the 4-d one.)
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local is_opts, named, set, shape_of = A.is_opts, A.named, A.set, A.shape_of
  local fmt = string.format

  local function check_tensor(op, x, what)
    if not T.is_tensor(x) then error(fmt("%s: expected a tensor for %s, got %s", op, what or "input", type(x)), 3) end
  end
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 3) end
  local function is_int(v) return type(v) == "number" and v == math.floor(v) and v == v end

  -- Torch's positional arguments, any trailing run of them replaced by one
  -- options table holding the rest: args(op, names, first, ...) returns a
  -- table name -> value; `first` is the position of the first one (errors
  -- count from there).
  local function positional_or_opts(op, names, first, ...)
    local r, n = {}, select("#", ...)
    for i = 1, n do
      local v = select(i, ...)
      if is_opts(v) then
        nomore(op, first + i - 1, select(i + 1, ...))
        local allowed = {}
        for j = i, #names do allowed[names[j]] = true end
        local o = A.check_opts(op, v, allowed, 3)
        for k, val in pairs(o) do r[k] = val end
        return r
      end
      if i > #names then nomore(op, first + #names - 1, select(i, ...)) end
      r[names[i]] = v
    end
    return r
  end

  -- -- spectral_norm / remove_spectral_norm (torch.nn.utils.spectral_norm) -------------------
  -- The parameter `name` becomes name_orig (the same tensor, registered after
  -- the module's other parameters); buffers name_u (height h) and name_v
  -- (width w of the weight viewed as an h x w matrix, `dim` first), each a
  -- normal draw normalised, as torch's apply. A forward pre-hook sets
  -- module[name] = name_orig / sigma, sigma = u . (W v); in training mode it
  -- first runs n_power_iterations of v = normalize(W^T u), u = normalize(W v)
  -- (in place in the buffers, without grad), as torch's SpectralNorm.
  local SN_ARGS = { "name", "n_power_iterations", "eps", "dim" }
  local function weight_matrix(w, dim)
    if dim ~= 1 then
      local perm = { dim }
      for d = 1, w.ndim do if d ~= dim then perm[#perm + 1] = d end end
      w = w:permute(perm)
    end
    return w:reshape(w.shape[1], -1)
  end
  local function sn_compute(m, s, power)
    local w = m._parameters[s.name .. "_orig"]
    local u, v = m._buffers[s.name .. "_u"], m._buffers[s.name .. "_v"]
    local wm = weight_matrix(w, s.dim)
    if power then
      T.no_grad(function()
        local wd = wm:detach()
        for _ = 1, s.n_power_iterations do
          v:copy_(F.normalize(T.mv(wd:t(), u), 2, 1, s.eps))
          u:copy_(F.normalize(T.mv(wd, v), 2, 1, s.eps))
        end
        u, v = u:clone(), v:clone()
      end)
    end
    local sigma = T.dot(u, T.mv(wm, v))
    return w / sigma
  end
  local function is_conv_transpose(m)
    return m.__name == "ConvTranspose1d" or m.__name == "ConvTranspose2d" or m.__name == "ConvTranspose3d"
  end
  nn.utils.spectral_norm = named("spectral_norm", function(module, ...)
    local op = "spectral_norm"
    if not Module._is_module(module) then error(fmt("%s: expected a Module, got %s", op, type(module)), 2) end
    local a = positional_or_opts(op, SN_ARGS, 2, ...)
    local name = a.name == nil and "weight" or a.name
    if type(name) ~= "string" then error(fmt("%s: expected name to be a string, got %s", op, type(name)), 2) end
    local iters = a.n_power_iterations == nil and 1 or a.n_power_iterations
    if not is_int(iters) or iters <= 0 then
      error(fmt("%s: Expected n_power_iterations to be positive, but got n_power_iterations=%s", op,
        tostring(iters)), 2)
    end
    local eps = a.eps == nil and 1e-12 or a.eps
    if type(eps) ~= "number" then error(fmt("%s: expected eps to be a number, got %s", op, type(eps)), 2) end
    local hooks = rawget(module, "_spectral_norm_hooks") or {}
    if hooks[name] then
      error(fmt("%s: Cannot register two spectral_norm hooks on the same parameter %s", op, name), 2)
    end
    local w = module._parameters[name]
    if w == nil then
      error(fmt("%s: `SpectralNorm` cannot be applied as parameter `%s` is None (%s has no parameter %s)", op, name,
        module.__name, name), 2)
    end
    local dim = a.dim
    if dim == nil then dim = is_conv_transpose(module) and 2 or 1 end
    local nd = math.max(w.ndim, 1)
    if not is_int(dim) or dim == 0 or dim > nd or dim < -nd then
      error(fmt("%s: dim %s is out of range for a %d-d parameter (1-based)", op, tostring(dim), w.ndim), 2)
    end
    if dim < 0 then dim = nd + 1 + dim end
    local s = { name = name, dim = dim, n_power_iterations = iters, eps = eps }
    local u, v
    T.no_grad(function()
      local wm = weight_matrix(w:detach(), dim)
      local h, wd = wm.shape[1], wm.shape[2]
      u = F.normalize(T.randn({ h }, { dtype = w.dtype, device = w.device }), 2, 1, eps)
      v = F.normalize(T.randn({ wd }, { dtype = w.dtype, device = w.device }), 2, 1, eps)
    end)
    module:register_parameter(name, nil)
    module:register_parameter(name .. "_orig", w)
    rawset(module, name, w:detach())
    module:register_buffer(name .. "_u", u)
    module:register_buffer(name .. "_v", v)
    s.handle = module:register_forward_pre_hook(function(m)
      rawset(m, name, sn_compute(m, s, m.training))
    end)
    hooks[name] = s
    rawset(module, "_spectral_norm_hooks", hooks)
    return module
  end)
  -- remove_spectral_norm(module[, name="weight"]): name is a parameter again,
  -- holding name_orig / sigma with the current u, v (no power iteration)
  nn.utils.remove_spectral_norm = named("remove_spectral_norm", function(module, name, ...)
    local op = "remove_spectral_norm"
    if is_opts(name) then
      nomore(op, 2, ...)
      name = check_opts(op, name, set { "name" }).name
    else
      nomore(op, 2, ...)
    end
    if not Module._is_module(module) then error(fmt("%s: expected a Module, got %s", op, type(module)), 2) end
    name = name or "weight"
    local hooks = rawget(module, "_spectral_norm_hooks")
    local s = hooks and hooks[name]
    if s == nil then
      error(fmt("%s: spectral_norm of '%s' not found in %s", op, tostring(name), module.__name), 2)
    end
    local w
    T.no_grad(function() w = sn_compute(module, s, false):detach() end)
    s.handle.remove()
    hooks[name] = nil
    rawset(module, name, nil)
    module:register_parameter(name .. "_orig", nil)
    module._buffers[name .. "_u"], module._buffers[name .. "_v"] = nil, nil
    for _, b in ipairs { name .. "_u", name .. "_v" } do
      local names = module._buffer_names
      for i = #names, 1, -1 do if names[i] == b then table.remove(names, i) end end
    end
    module:register_parameter(name, nn.Parameter(w))
    return module
  end)
end
