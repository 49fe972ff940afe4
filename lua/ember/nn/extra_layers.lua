-- Layers of issue 18, item 4 around the sequence models: 1-d and adaptive
-- pooling, GroupNorm, RMSNorm, InstanceNorm1d/2d, and the losses
-- SmoothL1/Huber/KLDiv/CosineEmbedding/MarginRanking/TripletMargin/
-- PoissonNLL/GaussianNLL (with F.pairwise_distance); functional forms and
-- modules (docs/nn.md, "Layers of issue 18").
--
-- Each is a composite of ember's engine ops, following PyTorch 1.13's own
-- formulas (its ATen composites, or the Python of torch.nn.functional), so
-- values and gradients are PyTorch's: max_pool1d/avg_pool1d are the 2-d
-- kernels over (1, k) windows; the adaptive pools take PyTorch's windows
-- (start = floor(i L / O), end = ceil((i + 1) L / O)), separably per dim;
-- instance_norm is PyTorch's batch_norm over (1, N C, ...) with the
-- running stats repeated and averaged back.
return function(T, C, nn)
  local F, Module, init = nn.functional, nn.Module, nn.init
  local unpack = table.unpack or unpack
  local A = require("ember.argcheck")(T)
  local ARGS = require("ember.args")
  local nomore = ARGS.nomore
  local is_opts, named, set, shape_of = A.is_opts, A.named, A.set, A.shape_of
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 2) end
  local function check_tensor(op, x, what) return A.check_tensor(op, x, what, 2) end

  -- "mean" / "sum" / "none"
  local function reduce(op, l, red)
    if red == "none" then return l end
    if red == "mean" then return l:mean() end
    if red == "sum" then return l:sum() end
    error(string.format("%s: %s is not a valid value for reduction", op, tostring(red)), 3)
  end

  -- -- 1-d pooling --------------------------------------------------------------
  local function one(op, v, what)
    v = A.single(op, v, what, 3)
    if type(v) ~= "number" then error(string.format("%s: expected a number for %s, got %s", op, what, tostring(v)), 3) end
    return v
  end

  local function pool1d_input(op, x)
    check_tensor(op, x, "the input")
    if x.ndim ~= 2 and x.ndim ~= 3 then
      error(string.format("%s: expected a 2-d (unbatched) or 3-d (batched) input, got %d-d", op, x.ndim), 3)
    end
    A.pool_nonempty(op, x, 1, 3)
    return x:unsqueeze(-2)
  end

  -- the options table (not a list: {2} is a stride, PyTorch's (2,)); the
  -- kernel may come in it as the 2-d pools': f(x, {kernel_size = k, ...})
  local function opts1d(v) return is_opts(v) and v[1] == nil end
  local function kernel_in_opts(kernel, stride)
    if opts1d(kernel) and kernel.kernel_size ~= nil and stride == nil then
      local o = {}
      for key, v in pairs(kernel) do if key ~= "kernel_size" then o[key] = v end end
      return kernel.kernel_size, o
    end
    return kernel, stride
  end

  -- max_pool1d(x, kernel, stride=kernel, padding=0, dilation=1, ceil_mode=false, return_indices=false)
  local MP1 = set { "stride", "padding", "dilation", "ceil_mode", "return_indices" }
  function F.max_pool1d(x, kernel, stride, padding, dilation, ceil_mode, return_indices)
    local op = "max_pool1d"
    kernel, stride = kernel_in_opts(kernel, stride)
    if opts1d(stride) then
      local o = check_opts(op, stride, MP1)
      stride, padding, dilation, ceil_mode, return_indices = o.stride, o.padding, o.dilation, o.ceil_mode, o.return_indices
    end
    local k = one(op, kernel, "kernel_size")
    local s = one(op, stride or k, "stride")
    local p, d = one(op, padding or 0, "padding"), one(op, dilation or 1, "dilation")
    local xb = pool1d_input(op, x)
    local out, idx = F.max_pool2d(xb, { 1, k }, { stride = { 1, s }, padding = { 0, p }, dilation = { 1, d },
      ceil_mode = ceil_mode or false, return_indices = true })
    out, idx = out:squeeze(-2), idx:squeeze(-2)
    if return_indices then return out, idx end
    return out
  end

  -- avg_pool1d(x, kernel, stride=kernel, padding=0, ceil_mode=false, count_include_pad=true)
  local AP1 = set { "stride", "padding", "ceil_mode", "count_include_pad" }
  function F.avg_pool1d(x, kernel, stride, padding, ceil_mode, count_include_pad)
    local op = "avg_pool1d"
    kernel, stride = kernel_in_opts(kernel, stride)
    if opts1d(stride) then
      local o = check_opts(op, stride, AP1)
      stride, padding, ceil_mode, count_include_pad = o.stride, o.padding, o.ceil_mode, o.count_include_pad
    end
    local k = one(op, kernel, "kernel_size")
    local s = one(op, stride or k, "stride")
    local p = one(op, padding or 0, "padding")
    if count_include_pad == nil then count_include_pad = true end
    local xb = pool1d_input(op, x)
    return F.avg_pool2d(xb, { 1, k }, { stride = { 1, s }, padding = { 0, p }, ceil_mode = ceil_mode or false,
      count_include_pad = count_include_pad }):squeeze(-2)
  end

  -- -- adaptive pooling ------------------------------------------------------------
  -- PyTorch's window i of O over a dim of size L: [floor(i L / O), ceil((i + 1) L / O)),
  -- as index tensors: pos [O, K] (0-based, each row clamped to its window's
  -- last element), valid [O, K] (inside the window), len [O]; K the longest
  local function windows(L, O, device)
    local s, e, K = {}, {}, 0
    for i = 0, O - 1 do
      s[i + 1] = math.floor(i * L / O)
      e[i + 1] = math.floor(((i + 1) * L + O - 1) / O)
      if e[i + 1] - s[i + 1] > K then K = e[i + 1] - s[i + 1] end
    end
    -- made on the CPU and moved (a meta tensor holds no data to write)
    local st = T.tensor(s, { dtype = T.int64 }):to(device)
    local en = T.tensor(e, { dtype = T.int64 }):to(device)
    local pos = st:unsqueeze(2) + T.arange(K, { device = device }):unsqueeze(1)
    local last = (en - 1):unsqueeze(2)
    return T.minimum(pos, last), pos:le(last), en - st, K
  end

  -- mean (or max, with its 1-based position along dim) over each of the O
  -- windows of dim, all windows at once: the window elements gathered into
  -- a trailing dim of K (padding repeats a window's last element, which a
  -- max ignores and a mean masks out)
  local function adaptive_dim(x, dim, O, kind)
    local L = x.shape[dim]
    local xm = x:movedim(dim, -1)
    local pos, valid, len, K = windows(L, O, x.device)
    local shape = shape_of(xm)
    shape[#shape], shape[#shape + 1] = O, K
    local g = xm:index_select(-1, pos:reshape(-1) + 1):view(shape) -- 1-based positions
    if kind == "avg" then
      local r = T.where(valid, g, 0):sum(-1) / len:to(x.dtype)
      return r:movedim(-1, dim)
    end
    local v, a = g:max(-1)
    -- several NaNs in a window: the last one's index (PyTorch's kernels take
    -- val > max || isnan(val)); max(-1) gives the first
    local isn = x.device.type ~= "meta" and g:isnan()
    if isn and isn:any():item() then
      isn = isn:logical_and(valid)
      local last = (isn:long() * T.arange(1, K + 1, { device = x.device })):argmax(-1)
      a = T.where(isn:any(-1), last, a)
    end
    local ix = pos:expand(g.shape):gather(-1, a:unsqueeze(-1)):squeeze(-1) + 1
    return v:movedim(-1, dim), ix:movedim(-1, dim)
  end
  nn._adaptive_dim = adaptive_dim

  -- the checks, then adaptive_dim; O = 0 gives an empty dim
  local function adaptive_1d(op, x, dim, O, kind)
    local L = x.shape[dim]
    if type(O) ~= "number" or O < 0 or O ~= math.floor(O) then
      error(string.format("%s: output size must be a non-negative integer, got %s", op, tostring(O)), 4)
    end
    if O > 2 ^ 31 - 1 then
      error(string.format("%s: output size %s is too large (at most 2^31 - 1)", op, tostring(O)), 4)
    end
    if L == 0 and O > 0 then
      error(string.format("%s: expected input to have non-zero size for non-batch dimensions, but input has "
        .. "sizes %s with dimension %d being empty", op, "[" .. table.concat(shape_of(x), ", ") .. "]", dim), 4)
    end
    if kind == "avg" and not x.dtype.is_floating_point then
      error(string.format("%s: expected a floating point input, got %s", op, tostring(x.dtype)), 4)
    end
    if O == 0 then
      local shape = shape_of(x)
      shape[dim] = 0
      -- an empty output (torch's), still on x's graph
      local z = L > 0 and x:narrow(dim, 1, 0) or x
      return z, T.zeros(shape, { dtype = T.int64, device = x.device })
    end
    return adaptive_dim(x, dim, O, kind)
  end

  local function out_sizes(op, size, n, x)
    if type(size) == "number" then size = { size } end
    if type(size) ~= "table" then error(string.format("%s: expected output_size as a number or a table", op), 4) end
    if #size ~= 1 and #size ~= n then
      error(string.format("%s: output_size must be a number or a list of %d, got a list of %d", op, n, #size), 4)
    end
    local out = {}
    for i = 1, n do
      local v = size[i]
      if v == nil and #size == 1 then v = size[1] end
      if v == T.None or v == false then v = x.shape[x.ndim - n + i] end -- None keeps the input's size
      out[i] = v
    end
    return out
  end

  -- max: torch 1.13's adaptive max pools also refuse an empty dim 2 (the
  -- channels, or an unbatched input's first spatial dim)
  local function adaptive_input(op, x, nd, max)
    check_tensor(op, x, "the input")
    if x.ndim ~= nd + 1 and x.ndim ~= nd + 2 then
      error(string.format("%s: expected a %d-d (unbatched) or %d-d (batched) input, got %d-d", op, nd + 1, nd + 2,
        x.ndim), 4)
    end
    if max then A.pool_nonempty(op, x, nd, 3, 2) end
    -- the spatial dims, named in the input's sizes (adaptive_1d sees a
    -- pooled intermediate for the second dim)
    for d = x.ndim - nd + 1, x.ndim do
      if x.shape[d] == 0 then
        error(string.format("%s: expected input to have non-zero size for non-batch dimensions, but input has "
          .. "sizes %s with dimension %d being empty", op, "[" .. table.concat(shape_of(x), ", ") .. "]", d), 4)
      end
    end
  end

  -- half types: the means in float32, rounded once (torch's kernels
  -- accumulate in float; the separable passes would round in between)
  local function half(x) return x.dtype == T.bfloat16 or x.dtype == T.float16 end
  nn._half_dtype = half

  function F.adaptive_avg_pool1d(x, output_size, ...)
    local op = "adaptive_avg_pool1d"
    nomore(op, 2, ...)
    adaptive_input(op, x, 1)
    local o = out_sizes(op, output_size, 1, x)
    if half(x) then return (adaptive_1d(op, x:float(), x.ndim, o[1], "avg")):to(x.dtype) end
    return (adaptive_1d(op, x, x.ndim, o[1], "avg"))
  end

  function F.adaptive_avg_pool2d(x, output_size, ...)
    local op = "adaptive_avg_pool2d"
    nomore(op, 2, ...)
    adaptive_input(op, x, 2)
    local o = out_sizes(op, output_size, 2, x)
    -- a rectangle's mean is the mean of its rows' means (equal lengths)
    local h = half(x)
    local y = adaptive_1d(op, h and x:float() or x, x.ndim, o[2], "avg")
    y = adaptive_1d(op, y, x.ndim - 1, o[1], "avg")
    return h and y:to(x.dtype) or y
  end

  local AMP = set { "return_indices" }
  local function ret_idx(op, o)
    if is_opts(o) then return check_opts(op, o, AMP).return_indices end
    return o
  end

  function F.adaptive_max_pool1d(x, output_size, return_indices)
    local op = "adaptive_max_pool1d"
    return_indices = ret_idx(op, return_indices)
    adaptive_input(op, x, 1, true)
    local o = out_sizes(op, output_size, 1, x)
    local v, i = adaptive_1d(op, x, x.ndim, o[1], "max")
    if return_indices then return v, i end
    return v
  end

  function F.adaptive_max_pool2d(x, output_size, return_indices)
    local op = "adaptive_max_pool2d"
    return_indices = ret_idx(op, return_indices)
    adaptive_input(op, x, 2, true)
    local o = out_sizes(op, output_size, 2, x)
    if not return_indices then
      local y = adaptive_1d(op, x, x.ndim, o[2], "max")
      return (adaptive_1d(op, y, x.ndim - 1, o[1], "max"))
    end
    -- with indices: the max of the rows' maxes, the first maximum in
    -- row-major order (torch's scan); its flat 1-based position in H x W
    local nd = x.ndim
    local v1, iw = adaptive_1d(op, x, nd, o[2], "max")
    local v2, ih = adaptive_1d(op, v1, nd - 1, o[1], "max")
    if o[1] == 0 or o[2] == 0 then return v2, ih end
    iw = iw:gather(nd - 1, ih)
    return v2, (ih - 1) * x.shape[nd] + iw
  end

  -- -- normalisation ---------------------------------------------------------------
  -- the (1, C, 1, ...) view of a per-channel tensor for an input of nd dims
  local function per_channel(t, nd)
    local s = {}
    for i = 1, nd do s[i] = 1 end
    s[2] = t:numel()
    return t:view(s)
  end

  -- group_norm(x, num_groups, weight, bias, eps=1e-5)
  function F.group_norm(x, num_groups, weight, bias, eps)
    local op = "group_norm"
    check_tensor(op, x, "the input")
    if is_opts(weight) then
      local o = check_opts(op, weight, set { "weight", "bias", "eps" })
      weight, bias, eps = o.weight, o.bias, o.eps
    end
    eps = eps or 1e-5
    if x.ndim < 2 then error(string.format("%s: expected at least 2 dims (N, C, ...), got %d", op, x.ndim), 2) end
    local N, Cc = x.shape[1], x.shape[2]
    if type(num_groups) ~= "number" or num_groups < 1 or Cc % num_groups ~= 0 then
      error(string.format("%s: expected number of channels in input to be divisible by num_groups, but got input of "
        .. "shape %s and num_groups=%s", op, "[" .. table.concat(shape_of(x), ", ") .. "]", tostring(num_groups)), 2)
    end
    for _, t in ipairs { weight or false, bias or false } do
      if t and t:numel() ~= Cc then
        error(string.format("%s: expected weight and bias of %d elements (the channels), got %d", op, Cc, t:numel()), 2)
      end
    end
    local per = math.floor(Cc / num_groups)  -- the group's size spelled out (-1 is ambiguous for N = 0)
    for i = 3, x.ndim do per = per * x.shape[i] end
    local xr = x:reshape(N, num_groups, per)
    local mean = xr:mean(3, true)
    local var = xr:var({ 3 }, { correction = 0, keepdim = true })
    local y = ((xr - mean) * (var + eps):rsqrt()):view(shape_of(x))
    if weight then y = y * per_channel(weight, x.ndim) end
    if bias then y = y + per_channel(bias, x.ndim) end
    return y
  end

  local EPS = { float32 = 1.1920928955078125e-07, float64 = 2.220446049250313e-16,
                float16 = 0.0009765625, bfloat16 = 0.0078125 }

  -- rms_norm(x, normalized_shape, weight, eps=the dtype's machine epsilon)
  function F.rms_norm(x, normalized_shape, weight, eps)
    local op = "rms_norm"
    check_tensor(op, x, "the input")
    if is_opts(weight) then
      local o = check_opts(op, weight, set { "weight", "eps" })
      weight, eps = o.weight, o.eps
    end
    if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
    local nd = #normalized_shape
    local dims = {}
    for i = 1, nd do
      local d = x.ndim - nd + i
      if d < 1 or x.shape[d] ~= normalized_shape[i] then
        error(string.format("%s: the input's last %d dims do not match normalized_shape [%s]", op, nd,
          table.concat(normalized_shape, ", ")), 2)
      end
      dims[i] = d
    end
    eps = eps or EPS[tostring(x.dtype):gsub("^ember%.", "")] or EPS.float32
    local y = x * (x:pow(2):mean(dims, true) + eps):rsqrt()
    if weight then y = y * weight end
    return y
  end

  -- instance_norm(x, running_mean, running_var, weight, bias, use_input_stats=true, momentum=0.1, eps=1e-5)
  function F.instance_norm(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)
    local op = "instance_norm"
    check_tensor(op, x, "the input")
    if is_opts(running_mean) then
      local o = check_opts(op, running_mean, set { "running_mean", "running_var", "weight", "bias",
        "use_input_stats", "momentum", "eps" })
      running_mean, running_var, weight, bias = o.running_mean, o.running_var, o.weight, o.bias
      use_input_stats, momentum, eps = o.use_input_stats, o.momentum, o.eps
    end
    if use_input_stats == nil then use_input_stats = true end
    -- PyTorch's instance_norm takes no None (false) momentum, even for a module
    if momentum ~= nil and type(momentum) ~= "number" then
      error(string.format("%s: momentum must be a number, got %s", op, tostring(momentum)), 2)
    end
    momentum, eps = momentum or 0.1, eps or 1e-5
    if x.ndim < 3 then error(string.format("%s: expected at least 3 dims (N, C, ...), got %d", op, x.ndim), 2) end
    if not use_input_stats and (running_mean == nil or running_var == nil) then
      error(op .. ": expected running_mean and running_var when use_input_stats is false", 2)
    end
    local N, Cc = x.shape[1], x.shape[2]
    local shape = shape_of(x)
    if use_input_stats then
      -- PyTorch's _verify_spatial_size: the statistics of one element are not defined
      local spatial = 1
      for i = 3, #shape do spatial = spatial * shape[i] end
      if spatial == 1 then
        error(string.format("%s: Expected more than 1 spatial element when training, got input size [%s]", op,
          table.concat(shape, ", ")), 2)
      end
    end
    local rs = { 1, N * Cc }
    for i = 3, x.ndim do rs[i] = shape[i] end
    -- t repeated N times (PyTorch's t.repeat(N))
    local function rep(t) return t and t:reshape(1, -1):expand(N, -1):reshape(-1) end
    local rm, rv = rep(running_mean), rep(running_var)
    if rm then rm, rv = rm:clone(), rv:clone() end
    local y = F.batch_norm(x:reshape(rs), rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    if running_mean and use_input_stats then
      T.no_grad(function()
        running_mean:copy_(rm:view(N, Cc):mean(1))
        running_var:copy_(rv:view(N, Cc):mean(1))
      end)
    end
    return y:view(shape)
  end

  -- -- losses ----------------------------------------------------------------------
  -- o: a reduction string or an options table of allowed keys
  local function loss_opts(op, o, allowed)
    if type(o) == "string" then return { reduction = o } end
    return check_opts(op, o, allowed)
  end

  local function check_pair(op, a, b)
    check_tensor(op, a, "the input")
    check_tensor(op, b, "the target")
  end

  local SL1 = set { "reduction", "beta" }
  function F.smooth_l1_loss(input, target, o)
    local op = "smooth_l1_loss"
    check_pair(op, input, target)
    o = loss_opts(op, o, SL1)
    local beta = o.beta or 1.0
    if beta < 0 then error(string.format("%s: smooth_l1_loss does not support negative values for beta, got %g", op, beta), 2) end
    local d = (input - target):abs()
    local l
    if beta == 0 then
      l = d
    else
      -- the quadratic branch on d clamped to beta: where it is not taken its
      -- gradient is 0, not 0 * inf = NaN at an infinite difference
      l = T.where(d:lt(beta), d:clamp_max(beta):pow(2) * (0.5 / beta), d - 0.5 * beta)
    end
    return reduce(op, l, o.reduction or "mean")
  end

  local HUB = set { "reduction", "delta" }
  function F.huber_loss(input, target, o)
    local op = "huber_loss"
    check_pair(op, input, target)
    o = loss_opts(op, o, HUB)
    local delta = o.delta or 1.0
    if delta <= 0 then error(string.format("%s: huber_loss does not support non-positive values for delta, got %g", op, delta), 2) end
    local d = (input - target):abs()
    local l = T.where(d:lt(delta), d:clamp_max(delta):pow(2) * 0.5, (d - 0.5 * delta) * delta)
    return reduce(op, l, o.reduction or "mean")
  end

  -- kl_div(input (log-probabilities), target, {reduction="mean", log_target=false});
  -- "batchmean" divides the sum by the batch size (dim 1)
  local KL = set { "reduction", "log_target" }
  function F.kl_div(input, target, o)
    local op = "kl_div"
    check_pair(op, input, target)
    o = loss_opts(op, o, KL)
    local l
    if o.log_target then
      l = target:exp() * (target - input)
    else
      l = T.xlogy(target, target) - target * input -- 0 where t = 0, NaN where t < 0
    end
    local red = o.reduction or "mean"
    if red == "batchmean" then
      local n = input.ndim > 0 and input.shape[1] or 1
      return l:sum() / n
    end
    return reduce(op, l, red)
  end

  local CEL = set { "margin", "reduction" }
  function F.cosine_embedding_loss(x1, x2, y, o)
    local op = "cosine_embedding_loss"
    check_pair(op, x1, x2)
    check_tensor(op, y, "the target")
    o = loss_opts(op, o, CEL)
    if x1.ndim ~= 1 and x1.ndim ~= 2 then
      error(string.format("%s: expected 1-d or 2-d inputs, got %d-d", op, x1.ndim), 2)
    end
    if y.ndim ~= x1.ndim - 1 then
      error(string.format("%s: %d-d target tensor expects %d-d input tensors, but found inputs with sizes [%s] and [%s]",
        op, y.ndim, y.ndim + 1, table.concat(shape_of(x1), ", "), table.concat(shape_of(x2), ", ")), 2)
    end
    local margin = o.margin or 0
    local EPSILON = 1e-12
    local prod = (x1 * x2):sum(-1)
    local m1 = (x1 * x1):sum(-1) + EPSILON
    local m2 = (x2 * x2):sum(-1) + EPSILON
    local cos = prod / (m1 * m2):sqrt()
    local zeros = cos * 0
    local l = T.where(y:eq(1), 1 - cos, zeros) + T.where(y:eq(-1), (cos - margin):clamp_min(0), zeros)
    return reduce(op, l, o.reduction or "mean")
  end

  local MRL = set { "margin", "reduction" }
  function F.margin_ranking_loss(x1, x2, y, o)
    local op = "margin_ranking_loss"
    check_pair(op, x1, x2)
    check_tensor(op, y, "the target")
    if x1.ndim ~= x2.ndim or x1.ndim ~= y.ndim then
      error(string.format("%s: all input tensors should have the same number of dimensions, got input1 %s, input2 %s, target %s",
        op, tostring(x1.shape), tostring(x2.shape), tostring(y.shape)), 2)
    end
    o = loss_opts(op, o, MRL)
    local l = (-y * (x1 - x2) + (o.margin or 0)):clamp_min(0)
    return reduce(op, l, o.reduction or "mean")
  end

  -- pairwise_distance(x1, x2, p=2, eps=1e-6, keepdim=false): ||x1 - x2 + eps||_p over the last dim
  local PD = set { "p", "eps", "keepdim" }
  function F.pairwise_distance(x1, x2, p, eps, keepdim)
    local op = "pairwise_distance"
    check_pair(op, x1, x2)
    if is_opts(p) then
      local o = check_opts(op, p, PD)
      p, eps, keepdim = o.p, o.eps, o.keepdim
    end
    local d = x1 - x2 + (eps or 1e-6)
    return d:norm(p or 2, -1, keepdim or false)
  end

  local TML = set { "margin", "p", "eps", "swap", "reduction" }
  function F.triplet_margin_loss(anchor, positive, negative, o)
    local op = "triplet_margin_loss"
    check_tensor(op, anchor, "anchor")
    check_tensor(op, positive, "positive")
    check_tensor(op, negative, "negative")
    o = loss_opts(op, o, TML)
    local nd = anchor.ndim
    if positive.ndim ~= nd or negative.ndim ~= nd then
      error(string.format("%s: the anchor, positive and negative tensors are expected to have the same number of "
        .. "dimensions, but got: anchor %d-d, positive %d-d, and negative %d-d", op, nd, positive.ndim, negative.ndim), 2)
    end
    local p, eps = o.p or 2, o.eps or 1e-6
    local dp = F.pairwise_distance(anchor, positive, p, eps)
    local dn = F.pairwise_distance(anchor, negative, p, eps)
    if o.swap then dn = T.minimum(dn, F.pairwise_distance(positive, negative, p, eps)) end
    local l = ((o.margin or 1.0) + dp - dn):clamp_min(0)
    return reduce(op, l, o.reduction or "mean")
  end

  local PNL = set { "log_input", "full", "eps", "reduction" }
  function F.poisson_nll_loss(input, target, o)
    local op = "poisson_nll_loss"
    check_pair(op, input, target)
    o = loss_opts(op, o, PNL)
    local log_input = o.log_input
    if log_input == nil then log_input = true end
    local l
    if log_input then
      l = input:exp() - target * input
    else
      l = input - target * (input + (o.eps or 1e-8)):log()
    end
    if o.full then
      local big = target:gt(1)
      local safe = T.where(big, target, 2)
      local st = safe * safe:log() - safe + (safe * (2 * math.pi)):log() * 0.5
      l = l + T.where(big, st, 0)
    end
    return reduce(op, l, o.reduction or "mean")
  end

  local GNL = set { "full", "eps", "reduction" }
  function F.gaussian_nll_loss(input, target, var, o)
    local op = "gaussian_nll_loss"
    check_pair(op, input, target)
    check_tensor(op, var, "var")
    o = loss_opts(op, o, GNL)
    local si, sv = shape_of(input), shape_of(var)
    local function same(a, b, n)
      if #a < n or #b < n then return false end
      for i = 1, n do if a[i] ~= b[i] then return false end end
      return true
    end
    if not (#si == #sv and same(si, sv, #si)) then
      if #sv == #si - 1 and same(si, sv, #sv) then
        var = var:unsqueeze(-1)
      -- torch compares input.size()[:-1] with var.size()[:-1]: a 0-d
      -- input's [:-1] is empty, so a var of [1] passes (the loss broadcasts)
      elseif not (#sv >= 1 and #sv - 1 == math.max(#si - 1, 0) and same(si, sv, #sv - 1) and sv[#sv] == 1) then
        error(string.format("%s: var is of incorrect size: [%s] for an input of [%s]", op, table.concat(sv, ", "),
          table.concat(si, ", ")), 2)
      end
    end
    local red = o.reduction or "mean"
    if red ~= "none" and red ~= "mean" and red ~= "sum" then
      error(string.format("%s: %s is not valid", op, tostring(red)), 2)
    end
    if var:numel() > 0 and tostring(var.device) ~= "meta" and var:lt(0):any():item() then
      error(op .. ": var has negative entry/entries", 2)
    end
    -- PyTorch clamps a copy in place under no_grad: the gradient passes the clamp
    local v = var:clone()
    T.no_grad(function() v:clamp_min_(o.eps or 1e-6) end)
    local l = (v:log() + (input - target):pow(2) / v) * 0.5
    if o.full then l = l + 0.5 * math.log(2 * math.pi) end
    return reduce(op, l, red)
  end

  -- embedding_bag(ids, weight, offsets, {mode="mean", per_sample_weights=, include_last_offset=,
  -- padding_idx=, max_norm=, norm_type=}): ids 2-d (one bag per row) or 1-d with offsets, the
  -- 1-based positions where the bags start (PyTorch's 0-based offsets + 1); ids and
  -- padding_idx are 1-based as F.embedding's.
  local EB = set { "mode", "per_sample_weights", "include_last_offset", "padding_idx", "max_norm", "norm_type",
                   "scale_grad_by_freq", "sparse" }
  function F.embedding_bag(ids, weight, offsets, o)
    local op = "embedding_bag"
    check_tensor(op, ids, "the ids")
    check_tensor(op, weight, "the weight")
    if is_opts(offsets) then offsets, o = nil, offsets end
    o = check_opts(op, o, EB)
    local mode = o.mode or "mean"
    if mode ~= "sum" and mode ~= "mean" and mode ~= "max" then
      error(string.format("%s: mode has to be one of sum, mean or max, got %s", op, tostring(mode)), 2)
    end
    if o.sparse then
      error(op .. ": sparse gradients are not supported (sparse = true): ember has no sparse tensors", 2)
    end
    if o.scale_grad_by_freq and mode == "max" then
      error(op .. ": max mode does not support scaling the gradient by the frequency", 2)
    end
    if ids.dtype ~= T.int64 and ids.dtype ~= T.int32 then
      error(string.format("%s: expected int64 or int32 ids, got %s", op, tostring(ids.dtype)), 2)
    end
    if not weight.dtype.is_floating_point then
      error(string.format("%s: expected a floating-point weight, got %s", op, tostring(weight.dtype)), 2)
    end
    if weight.ndim ~= 2 then
      error(string.format("%s: expected a 2-d weight [num, dim], got %d-d", op, weight.ndim), 2)
    end
    local psw = o.per_sample_weights
    if psw ~= nil and mode ~= "sum" then
      error(string.format("%s: per_sample_weights was not None. per_sample_weights is only "
        .. "supported for mode='sum' (got mode='%s'). Please open a feature request on GitHub.", op, mode), 2)
    end
    if psw ~= nil then
      check_tensor(op, psw, "per_sample_weights")
      local same = psw.ndim == ids.ndim
      for i = 1, ids.ndim do same = same and psw.shape[i] == ids.shape[i] end
      if not same then
        local function dims(t)
          local d = {}
          for i = 1, t.ndim do d[i] = tostring(t.shape[i]) end
          return "[" .. table.concat(d, ", ") .. "]"
        end
        error(string.format("%s: per_sample_weights (shape %s) must have the same shape as the ids (%s)", op,
          dims(psw), dims(ids)), 2)
      end
      if psw.dtype ~= weight.dtype then
        error(string.format("%s: per_sample_weights (%s) must have the weight's dtype (%s)", op,
          tostring(psw.dtype), tostring(weight.dtype)), 2)
      end
    end
    local dev = weight.device
    local flat, starts
    if ids.ndim == 2 then
      if offsets ~= nil then
        error(string.format("%s: if input is 2-d, then offsets has to be nil, as input is treated is a mini-batch "
          .. "of fixed length sequences", op), 2)
      end
      local B, N = ids.shape[1], ids.shape[2]
      flat = ids:reshape(-1)
      starts = T.arange(1, B * N + 1, math.max(N, 1), { device = dev })
      if N == 0 then starts = T.ones(B, { dtype = T.int64, device = dev }) end
      if psw ~= nil then psw = psw:reshape(-1) end
    elseif ids.ndim == 1 then
      if offsets == nil then error(op .. ": offsets has to be a 1-d tensor but got nil", 2) end
      check_tensor(op, offsets, "offsets")
      if offsets.ndim ~= 1 then error(string.format("%s: offsets has to be a 1-d tensor but got a %d-d one", op, offsets.ndim), 2) end
      if offsets.dtype ~= T.int64 and offsets.dtype ~= T.int32 then
        error(string.format("%s: expected int64 or int32 offsets, got %s", op, tostring(offsets.dtype)), 2)
      end
      flat, starts = ids, offsets:to(T.int64)
      if o.include_last_offset then
        if starts:numel() < 1 then error(op .. ": include_last_offset needs at least one offset", 2) end
        -- the last offset ends the last bag (CSR): ids after it are in no bag
        local last = tostring(dev) ~= "meta" and starts[-1]:item() or nil
        if last and (last < 1 or last > flat:numel() + 1) then
          error(string.format("%s: the last offset (%d) must be in 1..%d (#ids + 1) with include_last_offset",
            op, last, flat:numel() + 1), 2)
        end
        if last and last <= flat:numel() then
          flat = flat:narrow(1, 1, last - 1)
          if psw ~= nil then psw = psw:narrow(1, 1, last - 1) end
        end
        starts = starts:narrow(1, 1, starts:numel() - 1)
      end
    else
      error(string.format("%s: input has to be 1-d or 2-d, but got a %d-d tensor", op, ids.ndim), 2)
    end
    local n, B, D = flat:numel(), starts:numel(), weight.shape[2]
    if tostring(dev) ~= "meta" and B > 0 then
      if starts[1]:item() ~= 1 then
        error(string.format("%s: offsets[1] has to be 1, i.e., the first sequence in the mini-batch has to start "
          .. "from position 1; got %d", op, starts[1]:item()), 2)
      end
      if B > 1 and (starts:narrow(1, 2, B - 1) - starts:narrow(1, 1, B - 1)):lt(0):any():item() then
        error(op .. ": offsets must be non-decreasing", 2)
      end
      if starts[B]:item() > n + 1 then
        error(string.format("%s: offsets[%d] (%d) is out of bounds for %d ids", op, B, starts[B]:item(), n), 2)
      end
    end
    if o.max_norm ~= nil then F.embedding(flat, weight, { max_norm = o.max_norm, norm_type = o.norm_type }) end
    -- the bag (1-based) of each id: how many bags start at or before it
    local marks = T.zeros(n + 1, { dtype = T.int64, device = dev })
    marks:index_add_(1, starts, T.ones(B, { dtype = T.int64, device = dev }))
    local bag_of = marks:cumsum(1):narrow(1, 1, n)
    local NU = require("ember.nn.util")
    NU.check_ids(T, op, flat, weight.shape[1], 2)
    local emb = (o.scale_grad_by_freq and NU.freq_scaled(T, weight, flat) or weight):index_select(1, flat)
    local keep = nil
    local pidx = require("ember.nn.util").padding_idx(op, o.padding_idx, weight.shape[1], 2)
    if pidx ~= nil then
      keep = flat:ne(pidx)
      emb = emb * keep:to(weight.dtype):unsqueeze(2)
    end
    if psw ~= nil then emb = emb * psw:unsqueeze(2) end
    local counts = T.zeros(B, { dtype = weight.dtype, device = dev })
    counts:index_add_(1, bag_of, keep and keep:to(weight.dtype) or T.ones(n, { dtype = weight.dtype, device = dev }))
    if mode ~= "max" then
      local out = T.zeros({ B, D }, { dtype = weight.dtype, device = dev }):index_add(1, bag_of, emb)
      if mode == "mean" then out = out / counts:clamp_min(1):unsqueeze(2) end
      return out
    end
    -- max: each bag's rows into a (B, longest, D) block of -inf, then the max along the bag
    local ends = T.cat({ starts:narrow(1, 2, math.max(B - 1, 0)), T.full({ 1 }, n + 1, { dtype = T.int64, device = dev }) })
    local longest = B > 0 and tostring(dev) ~= "meta" and (ends - starts):max():item() or 0
    if longest == 0 then   -- every bag empty: zeros, still on the graph (the weight's gradient is 0)
      return T.zeros({ B, D }, { dtype = weight.dtype, device = dev }):index_add(1, bag_of, emb)
    end
    local within = T.arange(1, n + 1, { device = dev }) - starts:index_select(1, bag_of)
    local pos = (bag_of - 1) * longest + within + 1
    local block = T.full({ B * longest, D }, -math.huge, { dtype = weight.dtype, device = dev })
    if keep then emb = T.where(keep:unsqueeze(2), emb, -math.huge) end
    block = block:index_copy(1, pos, emb)
    local v = block:view(B, longest, D):max(2)
    return T.where(counts:gt(0):unsqueeze(2), v, 0)
  end

  for _, name in ipairs { "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
                          "adaptive_max_pool1d", "adaptive_max_pool2d", "group_norm", "rms_norm", "instance_norm",
                          "smooth_l1_loss", "huber_loss", "kl_div", "cosine_embedding_loss", "margin_ranking_loss",
                          "pairwise_distance", "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
                          "embedding_bag" } do
    F[name] = named(name, F[name])
  end

  -- -- modules ------------------------------------------------------------------------
  local function opt(o, k, def)
    if o == nil or o[k] == nil then return def end
    return o[k]
  end
  local function fmt(v)
    if type(v) == "table" then return require("ember.nn.util").size_repr(T, v) end
    if v == T.None then return "None" end
    if type(v) == "number" then return string.format("%g", v) end
    return tostring(v)
  end
  local function checked(name, o, allowed) return A.check_opts(name, o, allowed, 3) end

  local MaxPool1d = Module:extend("MaxPool1d")
  function MaxPool1d:init(kernel, o)
    o = checked("MaxPool1d", o, MP1)
    self.kernel_size, self.stride = kernel, opt(o, "stride", kernel)
    self.padding, self.dilation = opt(o, "padding", 0), opt(o, "dilation", 1)
    self.ceil_mode, self.return_indices = opt(o, "ceil_mode", false), opt(o, "return_indices", false)
  end
  function MaxPool1d:forward(x, ...)
    nomore("MaxPool1d.forward", 1, ...)
    return F.max_pool1d(x, self.kernel_size, { stride = self.stride, padding = self.padding, dilation = self.dilation,
      ceil_mode = self.ceil_mode, return_indices = self.return_indices })
  end
  function MaxPool1d:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s", fmt(self.kernel_size),
      fmt(self.stride), fmt(self.padding), fmt(self.dilation), tostring(self.ceil_mode))
  end
  nn.MaxPool1d = MaxPool1d

  local AvgPool1d = Module:extend("AvgPool1d")
  function AvgPool1d:init(kernel, o)
    o = checked("AvgPool1d", o, AP1)
    self.kernel_size, self.stride, self.padding = kernel, opt(o, "stride", kernel), opt(o, "padding", 0)
    self.ceil_mode, self.count_include_pad = opt(o, "ceil_mode", false), opt(o, "count_include_pad", true)
  end
  function AvgPool1d:forward(x, ...)
    nomore("AvgPool1d.forward", 1, ...)
    return F.avg_pool1d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
      ceil_mode = self.ceil_mode, count_include_pad = self.count_include_pad })
  end
  function AvgPool1d:extra_repr()
    return string.format("kernel_size=(%s,), stride=(%s,), padding=(%s,)", fmt(self.kernel_size), fmt(self.stride),
      fmt(self.padding))
  end
  nn.AvgPool1d = AvgPool1d

  for _, spec in ipairs { { "AdaptiveAvgPool1d", "adaptive_avg_pool1d", false },
                          { "AdaptiveAvgPool2d", "adaptive_avg_pool2d", false },
                          { "AdaptiveMaxPool1d", "adaptive_max_pool1d", true },
                          { "AdaptiveMaxPool2d", "adaptive_max_pool2d", true } } do
    local name, fname, has_idx = spec[1], spec[2], spec[3]
    local M = Module:extend(name)
    function M:init(output_size, o)
      o = checked(name, o, has_idx and AMP or {})
      self.output_size, self.return_indices = output_size, opt(o, "return_indices", false)
    end
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      if has_idx then return F[fname](x, self.output_size, self.return_indices) end
      return F[fname](x, self.output_size)
    end
    function M:extra_repr() return "output_size=" .. fmt(self.output_size) end
    nn[name] = M
  end

  local GroupNorm = Module:extend("GroupNorm")
  function GroupNorm:init(num_groups, num_channels, o)
    o = checked("GroupNorm", o, set { "eps", "affine", "dtype" })
    if num_channels % num_groups ~= 0 then
      error("GroupNorm: num_channels must be divisible by num_groups", 3)
    end
    self.num_groups, self.num_channels = num_groups, num_channels
    self.eps, self.affine = opt(o, "eps", 1e-5), opt(o, "affine", true)
    if self.affine then
      local dt = opt(o, "dtype", nil) or T.get_default_dtype()
      self.weight = init.ones_(T.empty({ num_channels }, { dtype = dt })):requires_grad_(true)
      self.bias = init.zeros_(T.empty({ num_channels }, { dtype = dt })):requires_grad_(true)
    end
  end
  function GroupNorm:forward(x, ...)
    nomore("GroupNorm.forward", 1, ...)
    return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps) end
  function GroupNorm:extra_repr()
    return string.format("%d, %d, eps=%g, affine=%s", self.num_groups, self.num_channels, self.eps, tostring(self.affine))
  end
  nn.GroupNorm = GroupNorm

  local RMSNorm = Module:extend("RMSNorm")
  function RMSNorm:init(shape, o)
    o = checked("RMSNorm", o, set { "eps", "elementwise_affine", "dtype" })
    if type(shape) == "number" then shape = { shape } end
    self.normalized_shape, self.eps = shape, opt(o, "eps", nil)
    self.elementwise_affine = opt(o, "elementwise_affine", true)
    if self.elementwise_affine then
      local dt = opt(o, "dtype", nil) or T.get_default_dtype()
      self.weight = init.ones_(T.empty(shape, { dtype = dt })):requires_grad_(true)
    end
  end
  function RMSNorm:forward(x, ...)
    nomore("RMSNorm.forward", 1, ...)
    return F.rms_norm(x, self.normalized_shape, self.weight, self.eps) end
  function RMSNorm:extra_repr()
    return string.format("(%s,), eps=%s, elementwise_affine=%s", table.concat(self.normalized_shape, ", "),
      self.eps and require("ember.pyfloat")(self.eps) or "None", tostring(self.elementwise_affine))
  end
  nn.RMSNorm = RMSNorm

  local function instance_class(name, nd)
    local IN = Module:extend(name)
    function IN:init(n, o)
      o = checked(name, o, set { "eps", "momentum", "affine", "track_running_stats", "dtype" })
      self.num_features, self.eps, self.momentum = n, opt(o, "eps", 1e-5), opt(o, "momentum", 0.1)
      self.affine, self.track_running_stats = opt(o, "affine", false), opt(o, "track_running_stats", false)
      local dt = opt(o, "dtype", nil) or T.get_default_dtype()
      if self.affine then
        self.weight = init.ones_(T.empty({ n }, { dtype = dt })):requires_grad_(true)
        self.bias = init.zeros_(T.empty({ n }, { dtype = dt })):requires_grad_(true)
      end
      if self.track_running_stats then
        self:register_buffer("running_mean", T.zeros({ n }, { dtype = dt }))
        self:register_buffer("running_var", T.ones({ n }, { dtype = dt }))
        self:register_buffer("num_batches_tracked", T.tensor(0, { dtype = T.int64 }))
      end
    end
    IN._state_defaults = Module._nbt_defaults
    function IN:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      if x.ndim ~= nd + 1 and x.ndim ~= nd + 2 then
        error(string.format("%s: expected %dD or %dD input (got %dD input)", name, nd + 1, nd + 2, x.ndim), 2)
      end
      local unbatched = x.ndim == nd + 1
      if unbatched then x = x:unsqueeze(1) end
      if self.affine and x.shape[2] ~= self.num_features then
        error(string.format("%s: expected input's size at dim=%d to match num_features (%d), but got: %d", name,
          unbatched and 1 or 2, self.num_features, x.shape[2]), 2)
      end
      local use_input_stats = self.training or not self.track_running_stats
      local y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
        self.momentum, self.eps)
      if unbatched then y = y:squeeze(1) end
      return y
    end
    function IN:extra_repr()
      return string.format("%d, eps=%g, momentum=%g, affine=%s, track_running_stats=%s", self.num_features,
        self.eps, self.momentum, tostring(self.affine), tostring(self.track_running_stats))
    end
    nn[name] = IN
  end
  instance_class("InstanceNorm1d", 1)
  instance_class("InstanceNorm2d", 2)
  instance_class("InstanceNorm3d", 3)

  -- losses as modules: the options of F, the inputs of F's call
  local function loss_class(name, fn, keys, ninputs)
    local L = Module:extend(name)
    local allowed = set(keys)
    function L:init(o)
      o = checked(name, o, allowed)
      self.opts = {}
      for _, k in ipairs(keys) do self.opts[k] = o[k] end
    end
    function L:forward(...)
      local n = ninputs
      nomore(name .. ".forward", n, select(n + 1, ...))
      local args = { ... }
      args[n + 1] = self.opts
      return fn(unpack(args, 1, n + 1))
    end
    nn[name] = L
  end
  loss_class("SmoothL1Loss", F.smooth_l1_loss, { "reduction", "beta" }, 2)
  loss_class("HuberLoss", F.huber_loss, { "reduction", "delta" }, 2)
  loss_class("KLDivLoss", F.kl_div, { "reduction", "log_target" }, 2)
  loss_class("CosineEmbeddingLoss", F.cosine_embedding_loss, { "margin", "reduction" }, 3)
  loss_class("MarginRankingLoss", F.margin_ranking_loss, { "margin", "reduction" }, 3)
  loss_class("TripletMarginLoss", F.triplet_margin_loss, { "margin", "p", "eps", "swap", "reduction" }, 3)
  loss_class("PoissonNLLLoss", F.poisson_nll_loss, { "log_input", "full", "eps", "reduction" }, 2)
  loss_class("GaussianNLLLoss", F.gaussian_nll_loss, { "full", "eps", "reduction" }, 3)

  -- EmbeddingBag(num, dim, {mode="mean", padding_idx=, max_norm=, norm_type=, include_last_offset=}),
  -- or torch's positional order after dim (max_norm, norm_type,
  -- scale_grad_by_freq, mode, sparse, _weight, include_last_offset, padding_idx)
  local EmbeddingBag = Module:extend("EmbeddingBag")
  local BAG_ARGS = { "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse", "_weight",
    "include_last_offset", "padding_idx" }
  function EmbeddingBag:init(num, dim, ...)
    local o = ARGS.positional("EmbeddingBag", BAG_ARGS, 3, ...)
    o = checked("EmbeddingBag", o, set { "mode", "padding_idx", "max_norm", "norm_type", "include_last_offset",
      "scale_grad_by_freq", "sparse", "dtype", "_weight" })
    self.num_embeddings, self.embedding_dim = num, dim
    self.mode = opt(o, "mode", "mean")
    self.padding_idx = require("ember.nn.util").padding_idx("EmbeddingBag", opt(o, "padding_idx", nil), num, 2)
    self.max_norm, self.norm_type = opt(o, "max_norm", nil), opt(o, "norm_type", 2)
    self.include_last_offset = opt(o, "include_last_offset", false)
    if o.sparse then
      error("EmbeddingBag: sparse gradients are not supported (sparse = true): ember has no sparse tensors", 3)
    end
    self.scale_grad_by_freq = o.scale_grad_by_freq and true or false
    if o._weight ~= nil then
      self.weight = o._weight
      return
    end
    local w = T.empty({ num, dim }, { dtype = opt(o, "dtype", nil) or T.get_default_dtype() })
    init.normal_(w, 0, 1)
    if self.padding_idx then w[self.padding_idx]:fill_(0) end
    self.weight = w:requires_grad_(true)
  end
  function EmbeddingBag.from_pretrained(emb, o, ...)
    ARGS.nomore("EmbeddingBag.from_pretrained", 2, ...)
    return nn._from_pretrained(EmbeddingBag, "EmbeddingBag", { "max_norm", "norm_type", "scale_grad_by_freq",
      "mode", "sparse", "include_last_offset", "padding_idx" }, emb, o, 2)
  end
  function EmbeddingBag:forward(ids, offsets, per_sample_weights, ...)
    ARGS.nooptions("EmbeddingBag.forward", 2, 3, offsets, per_sample_weights, ...)
    return F.embedding_bag(ids, self.weight, offsets, { mode = self.mode, padding_idx = self.padding_idx,
      max_norm = self.max_norm, norm_type = self.norm_type, include_last_offset = self.include_last_offset,
      per_sample_weights = per_sample_weights, scale_grad_by_freq = self.scale_grad_by_freq })
  end
  function EmbeddingBag:extra_repr()
    -- PyTorch's: max_norm, norm_type when set, mode unquoted
    local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
    if self.max_norm ~= nil then s = s .. ", max_norm=" .. require("ember.pyfloat")(self.max_norm) end
    if self.norm_type ~= 2 then s = s .. ", norm_type=" .. require("ember.pyfloat")(self.norm_type) end
    if self.scale_grad_by_freq then s = s .. ", scale_grad_by_freq=True" end
    s = s .. ", mode=" .. self.mode
    if self.padding_idx then s = s .. ", padding_idx=" .. self.padding_idx end
    return s
  end
  nn.EmbeddingBag = EmbeddingBag
end
