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
  local function is_int(v) return type(v) == "number" and v == math.floor(v) and v == v and v ~= math.huge and v ~= -math.huge end

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
    if not is_int(iters) then
      error(fmt("%s: expected n_power_iterations to be an integer, got %s", op, tostring(iters)), 2)
    end
    if iters <= 0 then
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

  -- -- AdaptiveLogSoftmaxWithLoss (torch.nn.AdaptiveLogSoftmaxWithLoss) ------------------------
  -- Efficient softmax approximation (Grave et al.): a head over the
  -- shortlist classes 1..cutoffs[1] plus one entry per tail cluster, and per
  -- cluster i a two-layer projection (in -> floor(in / div^i) -> its size)
  -- over the classes cutoffs[i] + 1 .. cutoffs[i + 1]. Targets and classes
  -- are 1-based; the cutoffs are torch's numbers (class counts).
  -- forward(input, target) returns a table { output = , loss = } (torch's
  -- namedtuple _ASMoutput): output[n] = log p(target[n] | input[n]), loss
  -- the mean of -output.
  local ASM_ARGS = { "div_value", "head_bias", "device", "dtype" }
  local ASMMsg = "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, " ..
    "where each value is between 1 and n_classes-1"
  local ASM = Module:extend("AdaptiveLogSoftmaxWithLoss")
  function ASM:init(in_features, n_classes, cutoffs, ...)
    local op = "AdaptiveLogSoftmaxWithLoss"
    local a = positional_or_opts(op, ASM_ARGS, 4, ...)
    if not is_int(in_features) or in_features < 1 then
      error(fmt("%s: expected in_features to be a positive integer, got %s", op, tostring(in_features)), 2)
    end
    if not is_int(n_classes) or n_classes < 2 then
      error(fmt("%s: expected n_classes to be an integer of at least 2, got %s", op, tostring(n_classes)), 2)
    end
    if type(cutoffs) ~= "table" or T.is_tensor(cutoffs) or #cutoffs == 0 then
      error(fmt("%s: %s (got %s)", op, ASMMsg, type(cutoffs)), 2)
    end
    local cut = {}
    for i, c in ipairs(cutoffs) do
      if not is_int(c) or c <= 0 or c > n_classes - 1 or (i > 1 and c <= cut[i - 1]) then
        error(fmt("%s: %s (got {%s} for %d classes)", op, ASMMsg, table.concat(cutoffs, ", "), n_classes), 2)
      end
      cut[i] = c
    end
    local div = a.div_value == nil and 4 or a.div_value
    if type(div) ~= "number" or not (div > 0) then
      error(fmt("%s: expected div_value to be a positive number, got %s", op, tostring(div)), 2)
    end
    local head_bias = a.head_bias == true
    if a.head_bias ~= nil and type(a.head_bias) ~= "boolean" then
      error(fmt("%s: expected head_bias to be a boolean, got %s", op, type(a.head_bias)), 2)
    end
    local fk = { dtype = a.dtype, device = a.device }
    self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, div, head_bias
    cut[#cut + 1] = n_classes
    self.cutoffs = cut
    self.shortlist_size = cut[1]
    self.n_clusters = #cut - 1
    self.head_size = self.shortlist_size + self.n_clusters
    self.head = nn.Linear(in_features, self.head_size, { bias = head_bias, dtype = fk.dtype, device = fk.device })
    local tail = nn.ModuleList {}
    for i = 1, self.n_clusters do
      local hsz = math.floor(in_features / div ^ i)
      local osz = cut[i + 1] - cut[i]
      tail:append(nn.Sequential(
        nn.Linear(in_features, hsz, { bias = false, dtype = fk.dtype, device = fk.device }),
        nn.Linear(hsz, osz, { bias = false, dtype = fk.dtype, device = fk.device })))
    end
    self.tail = tail
  end
  function ASM:forward(input, target, ...)
    local op = "AdaptiveLogSoftmaxWithLoss.forward"
    nomore(op, 2, ...)
    check_tensor(op, input, "input")
    check_tensor(op, target, "target")
    if target.dtype.is_floating_point or target.dtype == T.bool or target.dtype.is_complex then
      error(fmt("%s: expected target to hold integer class ids, got %s", op, tostring(target.dtype)), 2)
    end
    if target.ndim == 1 then
      if input.ndim ~= 2 then
        error(fmt("%s: 1D target tensor expects 2D input tensors, but found inputs with size %s", op,
          tostring(input.shape)), 2)
      end
      if input.shape[1] ~= target.shape[1] then
        error(fmt("%s: Input and target should have the same size in the batch dimension (%d and %d).", op,
          input.shape[1], target.shape[1]), 2)
      end
    elseif target.ndim == 0 then
      if input.ndim ~= 1 then
        error(fmt("%s: 0D target tensor expects 1D input tensors, but found inputs with size %s", op,
          tostring(input.shape)), 2)
      end
    else
      error(fmt("%s: 0D or 1D target tensor expected, multi-target not supported (got %d-d)", op, target.ndim), 2)
    end
    if input.shape[input.ndim] ~= self.in_features then
      error(fmt("%s: expected input with %d features, got %s", op, self.in_features, tostring(input.shape)), 2)
    end
    local batched = target.ndim == 1
    local x = batched and input or input:unsqueeze(1)
    local t = (batched and target or target:unsqueeze(1)):long()
    local B = t.shape[1]
    if B > 0 then
      local lo, hi = t:min():item(), t:max():item()
      if lo < 1 or hi > self.n_classes then
        error(fmt("%s: Target values should be in [1, %d], but values in range [%d, %d] were found.", op,
          self.n_classes, lo, hi), 2)
      end
    end
    local out = T.zeros({ B }, { dtype = x.dtype, device = x.device })
    local head_idx = t
    for i = 1, self.n_clusters do
      local low, high = self.cutoffs[i], self.cutoffs[i + 1]
      local mask = t:gt(low):logical_and(t:le(high))
      local rows = mask:nonzero():reshape(-1)
      if rows:numel() > 0 then
        local rel = t:index_select(1, rows) - low -- 1-based within the cluster
        local lp = F.log_softmax(self.tail[i](x:index_select(1, rows)), 2)
        out = out:index_add(1, rows, lp:gather(2, rel:unsqueeze(2)):reshape(-1))
        head_idx = T.where(mask, self.shortlist_size + i, head_idx)
      end
    end
    local head_lp = F.log_softmax(self.head(x), 2)
    out = out + head_lp:gather(2, head_idx:unsqueeze(2)):reshape(-1)
    local loss = (-out):mean()
    if not batched then out = out:squeeze(1) end
    return { output = out, loss = loss }
  end
  local function asm_input(self, op, input)
    check_tensor(op, input, "input")
    if input.ndim ~= 2 or input.shape[2] ~= self.in_features then
      error(fmt("%s: expected a 2-d input (N, %d), got %s", op, self.in_features, tostring(input.shape)), 3)
    end
  end
  local function full_log_prob(self, input, head_out)
    local head_lp = F.log_softmax(head_out, 2)
    local parts = { head_lp:narrow(2, 1, self.shortlist_size) }
    for i = 1, self.n_clusters do
      local lp = F.log_softmax(self.tail[i](input), 2)
      parts[#parts + 1] = lp + head_lp:narrow(2, self.shortlist_size + i, 1)
    end
    return T.cat(parts, 2)
  end
  -- log_prob(input): (N, n_classes) log-probabilities of every class
  function ASM:log_prob(input, ...)
    nomore("AdaptiveLogSoftmaxWithLoss.log_prob", 1, ...)
    asm_input(self, "AdaptiveLogSoftmaxWithLoss.log_prob", input)
    return full_log_prob(self, input, self.head(input))
  end
  -- predict(input): (N) int64 1-based ids of the most likely class; the full
  -- distribution only for rows whose head argmax is a cluster, as torch's
  function ASM:predict(input, ...)
    nomore("AdaptiveLogSoftmaxWithLoss.predict", 1, ...)
    asm_input(self, "AdaptiveLogSoftmaxWithLoss.predict", input)
    local head_out = self.head(input)
    local pred = head_out:argmax(2)
    local outside = pred:gt(self.shortlist_size)
    if not outside:any():item() then return pred end
    local rows = outside:nonzero():reshape(-1)
    local full = full_log_prob(self, input:index_select(1, rows), head_out:index_select(1, rows)):argmax(2)
    return pred:index_copy(1, rows, full)
  end
  nn.AdaptiveLogSoftmaxWithLoss = ASM

  -- -- fractional_max_pool3d and the *_with_indices forms -------------------------------------
  -- torch's FractionalMaxPool3d: per (sample, channel) three samples u in
  -- [0, 1), the first for T (depth), the second for H, the third for W
  -- (unlike the 2-d pool's W-then-H); for O outputs over L inputs with
  -- windows of K, alpha = (L - K) / (O - 1) and window i starts at
  -- trunc((i + u) alpha) - trunc(u alpha) (the last at L - K), computed in the
  -- input's dtype; each output is its window's first max, its index the
  -- 1-based flat position in the T x H x W volume.
  local FMP, starts = nn._fractional_opts, nn._fractional_starts -- more_layers3.lua
  local function triple(op, v, what)
    if type(v) == "number" then return { v, v, v } end
    if type(v) ~= "table" or T.is_tensor(v) or #v ~= 3 then
      error(fmt("%s: expected %s as a number or three numbers, got %s", op, what, tostring(v)), 3)
    end
    return { v[1], v[2], v[3] }
  end
  local function fmp3d(x, kernel, o, ...)
    local op = "fractional_max_pool3d"
    nomore(op, 3, ...)
    check_tensor(op, x)
    o = check_opts(op, o, FMP)
    if kernel == nil then error(op .. ": kernel_size is required", 2) end
    local k = triple(op, kernel, "kernel_size")
    for d = 1, 3 do
      if not is_int(k[d]) or k[d] < 1 then
        error(fmt("%s: kernel_size must be positive integers, got %s", op, tostring(k[d])), 2)
      end
    end
    if x.ndim ~= 4 and x.ndim ~= 5 then
      error(fmt("%s: fractional_max_pool3d_out(): Expected 4D or 5D tensor, but got: %s", op, tostring(x.shape)), 2)
    end
    if not x.dtype.is_floating_point then
      error(fmt("%s: expected a floating point input, got %s", op, tostring(x.dtype)), 2)
    end
    local unb = x.ndim == 4
    if unb then x = x:unsqueeze(1) end
    local N, Cc, D, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4], x.shape[5]
    local out
    if o.output_size ~= nil then
      if o.output_ratio ~= nil then
        error(op .. ": only one of output_size and output_ratio may be specified", 2)
      end
      out = triple(op, o.output_size, "output_size")
    elseif o.output_ratio ~= nil then
      local r = triple(op, o.output_ratio, "output_ratio")
      for i = 1, 3 do
        if type(r[i]) ~= "number" or not (r[i] > 0 and r[i] < 1) then
          error(fmt("%s: output_ratio must be between 0 and 1 (got %s)", op, tostring(r[i])), 2)
        end
      end
      out = { math.floor(D * r[1]), math.floor(H * r[2]), math.floor(W * r[3]) }
    else
      error(op .. ": fractional_max_pool3d requires specifying either an output_size or an output_ratio", 2)
    end
    local sizes, names = { D, H, W }, { "time", "height", "width" }
    for d = 1, 3 do
      if not is_int(out[d]) or out[d] < 1 then
        error(fmt("%s: output_size must be positive integers, got %s", op, tostring(out[d])), 2)
      end
      -- torch's 3-d check is strict (the 2-d one allows equality)
      if out[d] + k[d] - 1 >= sizes[d] then
        error(fmt("%s: fractional_max_pool3d_out(): pool %s %d too large relative to input %s %d", op, names[d],
          k[d], names[d], sizes[d]), 2)
      end
    end
    local samples = o._random_samples
    if samples == nil then
      samples = T.rand({ N, Cc, 3 }, { dtype = x.dtype, device = x.device })
    else
      check_tensor(op, samples, "_random_samples")
      if samples.ndim == 2 and unb then samples = samples:unsqueeze(1) end
      if samples.ndim ~= 3 or samples.shape[1] ~= N or samples.shape[2] ~= Cc or samples.shape[3] ~= 3 then
        error(fmt("%s: expected _random_samples of shape (%d, %d, 3), got %s", op, N, Cc,
          A.fmt_shape(shape_of(samples))), 2)
      end
      samples = samples:to(x.dtype)
    end
    local oD, oH, oW = out[1], out[2], out[3]
    local sd = starts(samples:narrow(3, 1, 1), D, oD, k[1], x.dtype) -- (N, C, oD)
    local sh = starts(samples:narrow(3, 2, 1), H, oH, k[2], x.dtype)
    local sw = starts(samples:narrow(3, 3, 1), W, oW, k[3], x.dtype)
    local function ar(n) return T.arange(0, n, { dtype = T.int64, device = x.device }) end
    local dd = (sd:view(N, Cc, oD, 1, 1, 1, 1, 1) + ar(k[1]):view(1, 1, 1, 1, 1, k[1], 1, 1)) * (H * W)
    local hh = (sh:view(N, Cc, 1, oH, 1, 1, 1, 1) + ar(k[2]):view(1, 1, 1, 1, 1, 1, k[2], 1)) * W
    local ww = sw:view(N, Cc, 1, 1, oW, 1, 1, 1) + ar(k[3]):view(1, 1, 1, 1, 1, 1, 1, k[3])
    local kk = k[1] * k[2] * k[3]
    local idx = (dd + hh + ww + 1):reshape(N, Cc, oD * oH * oW * kk) -- 1-based
    local win = x:reshape(N, Cc, D * H * W):gather(3, idx):view(N, Cc, oD, oH, oW, kk)
    local v, am = win:max(6)
    local ind = idx:view(N, Cc, oD, oH, oW, kk):gather(6, am:unsqueeze(6)):squeeze(6)
    if unb then v, ind = v:squeeze(1), ind:squeeze(1) end
    if o.return_indices then return v, ind end
    return v
  end
  F.fractional_max_pool3d = named("fractional_max_pool3d", fmp3d)
  -- the *_with_indices forms: always values, 1-based indices (return_indices
  -- is accepted and ignored, as torch's)
  for _, n in ipairs { 2, 3 } do
    local name, base = fmt("fractional_max_pool%dd_with_indices", n), fmt("fractional_max_pool%dd", n)
    F[name] = named(name, function(x, kernel, o, ...)
      nomore(name, 3, ...)
      o = check_opts(name, o, FMP)
      return F[base](x, kernel, { output_size = o.output_size, output_ratio = o.output_ratio,
        return_indices = true, _random_samples = o._random_samples })
    end)
  end
  local FractionalMaxPool3d = Module:extend("FractionalMaxPool3d")
  function FractionalMaxPool3d:init(kernel, o, ...)
    local op = "FractionalMaxPool3d"
    nomore(op, 2, ...)
    o = check_opts(op, o, FMP)
    if kernel == nil then error(op .. ": kernel_size is required", 2) end
    if o.output_size == nil and o.output_ratio == nil then
      error("FractionalMaxPool3d requires specifying either an output size, or a pooling ratio", 2)
    end
    if o.output_size ~= nil and o.output_ratio ~= nil then
      error(op .. ": only one of output_size and output_ratio may be specified", 2)
    end
    if o.output_ratio ~= nil then
      local r = triple(op, o.output_ratio, "output_ratio")
      for i = 1, 3 do
        if type(r[i]) ~= "number" or not (r[i] > 0 and r[i] < 1) then
          error(fmt("%s: output_ratio must be between 0 and 1 (got %s)", op, tostring(r[i])), 2)
        end
      end
    end
    self.kernel_size, self.output_size, self.output_ratio = kernel, o.output_size, o.output_ratio
    self.return_indices = o.return_indices or false
    if o._random_samples ~= nil then self:register_buffer("_random_samples", o._random_samples) end
  end
  function FractionalMaxPool3d:forward(x, ...)
    nomore("FractionalMaxPool3d.forward", 1, ...)
    return F.fractional_max_pool3d(x, self.kernel_size, { output_size = self.output_size,
      output_ratio = self.output_ratio, return_indices = self.return_indices,
      _random_samples = self._random_samples })
  end
  nn.FractionalMaxPool3d = FractionalMaxPool3d
end
