-- Pieces of torch.nn found absent in a third round (docs/nn.md, "More
-- layers, third round"), each a composite of ember's differentiable ops with
-- PyTorch 1.13's semantics: the in-place functional activations (F.relu_,
-- F.elu_, ...), the *_with_indices pooling forms, F.upsample_bilinear /
-- F.upsample_nearest and their modules, channel_shuffle, gumbel_softmax,
-- multi_margin_loss, multilabel_margin_loss (1-based class ids ended by the
-- first id below 1), triplet_margin_with_distance_loss, NLLLoss2d,
-- CrossMapLRN2d, fractional_max_pool2d and the lazy modules (LazyLinear,
-- LazyConv1d/2d, LazyConvTranspose1d/2d, LazyBatchNorm1d/2d,
-- LazyInstanceNorm1d/2d).
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local is_opts, named, set, shape_of = A.is_opts, A.named, A.set, A.shape_of
  local fmt, unpack = string.format, table.unpack or unpack
  local pyfloat = require "ember.pyfloat"

  local function check_tensor(op, x, what)
    if not T.is_tensor(x) then error(fmt("%s: expected a tensor for %s, got %s", op, what or "input", type(x)), 3) end
  end
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 3) end
  local function reduce(op, l, red)
    if red == "none" then return l end
    if red == "sum" then return l:sum() end
    if red == "mean" then return l:mean() end
    error(fmt("%s: %s is not a valid value for reduction", op, tostring(red)), 3)
  end

  -- -- in-place functional activations -------------------------------------------------
  -- F.name_(x, positional values... | {keys}): the out-of-place form with
  -- inplace = true (x written and returned, as torch's)
  local function inplace(name, base, keys, extra)
    local allowed = set(keys)
    for _, k in ipairs(extra or {}) do allowed[k] = true end
    F[name] = named(name, function(x, ...)
      check_tensor(name, x)
      local n, args = select("#", ...), { ... }
      local o = {}
      if n >= 1 and is_opts(args[1]) then
        nomore(name, 2, select(2, ...))
        o = check_opts(name, args[1], allowed)
      else
        local np = #keys + #(extra or {})
        nomore(name, 1 + np, select(np + 1, ...))
        for i, k in ipairs(keys) do o[k] = args[i] end
        for i, k in ipairs(extra or {}) do o[k] = args[#keys + i] end
      end
      local opts = { inplace = true }
      for k, v in pairs(o) do opts[k] = v end
      return F[base](x, opts)
    end)
  end
  inplace("elu_", "elu", { "alpha" })
  inplace("celu_", "celu", { "alpha" })
  inplace("selu_", "selu", {})
  inplace("hardtanh_", "hardtanh", { "min_val", "max_val" })
  inplace("rrelu_", "rrelu", { "lower", "upper" }, { "training" })
  F.relu_ = named("relu_", function(x, ...)
    nomore("relu_", 1, ...)
    check_tensor("relu_", x)
    return x:relu_()
  end)
  F.leaky_relu_ = named("leaky_relu_", function(x, slope, ...)
    nomore("leaky_relu_", 2, ...)
    check_tensor("leaky_relu_", x)
    if is_opts(slope) then slope = check_opts("leaky_relu_", slope, set { "negative_slope" }).negative_slope end
    if slope ~= nil and type(slope) ~= "number" then
      error(fmt("leaky_relu_: expected a number for negative_slope, got %s", tostring(slope)), 2)
    end
    return x:copy_(F.leaky_relu(x:clone(), slope or 0.01))
  end)

  -- -- pooling with indices ---------------------------------------------------------------
  -- torch's *_with_indices: always (values, 1-based indices)
  local MPI = set { "stride", "padding", "dilation", "ceil_mode" }
  local function with_indices(name, base)
    F[name] = named(name, function(x, kernel, stride, padding, dilation, ceil_mode, ...)
      if is_opts(stride) and stride[1] == nil then
        nomore(name, 3, padding, dilation, ceil_mode, ...)
        local o = check_opts(name, stride, MPI)
        stride, padding, dilation, ceil_mode = o.stride, o.padding, o.dilation, o.ceil_mode
      else
        nomore(name, 6, ...)
      end
      return F[base](x, kernel, { stride = stride, padding = padding or 0, dilation = dilation or 1,
        ceil_mode = ceil_mode or false, return_indices = true })
    end)
  end
  with_indices("max_pool1d_with_indices", "max_pool1d")
  with_indices("max_pool2d_with_indices", "max_pool2d")
  for _, n in ipairs { 1, 2 } do
    local name, base = fmt("adaptive_max_pool%dd_with_indices", n), fmt("adaptive_max_pool%dd", n)
    F[name] = named(name, function(x, output_size, ...)
      nomore(name, 2, ...)
      return F[base](x, output_size, true)
    end)
  end

  -- -- deprecated upsampling forms ------------------------------------------------------------
  -- (x, size, scale_factor) or (x, {size=, scale_factor=}); a list is a size
  local UPS = set { "size", "scale_factor" }
  local function upsample_args(op, size, scale, ...)
    if is_opts(size) and size[1] == nil then
      nomore(op, 2, scale, ...)
      local o = check_opts(op, size, UPS)
      size, scale = o.size, o.scale_factor
    else
      nomore(op, 3, ...)
    end
    return size, scale
  end
  F.upsample_nearest = named("upsample_nearest", function(x, size, scale, ...)
    size, scale = upsample_args("upsample_nearest", size, scale, ...)
    return F.interpolate(x, { size = size, scale_factor = scale, mode = "nearest" })
  end)
  F.upsample_bilinear = named("upsample_bilinear", function(x, size, scale, ...)
    size, scale = upsample_args("upsample_bilinear", size, scale, ...)
    return F.interpolate(x, { size = size, scale_factor = scale, mode = "bilinear", align_corners = true })
  end)
  for name, mode in pairs { UpsamplingNearest2d = "nearest", UpsamplingBilinear2d = "bilinear" } do
    local M = nn.Upsample:extend(name)
    function M:init(size, scale, ...)
      size, scale = upsample_args(name, size, scale, ...)
      self.size, self.scale_factor, self.mode = size, scale, mode
      if mode == "bilinear" then self.align_corners = true end
    end
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      return F.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
        align_corners = self.align_corners })
    end
    nn[name] = M
  end

  -- -- channel_shuffle ----------------------------------------------------------------------
  -- (N, C, *) viewed as (N, g, C / g, *), the two group dims swapped
  F.channel_shuffle = named("channel_shuffle", function(x, groups, ...)
    nomore("channel_shuffle", 2, ...)
    check_tensor("channel_shuffle", x)
    if is_opts(groups) then groups = check_opts("channel_shuffle", groups, set { "groups" }).groups end
    if type(groups) ~= "number" or groups < 1 or groups % 1 ~= 0 then
      error(fmt("channel_shuffle: Number of groups to divide channels in must be positive. Value of groups:%s",
        tostring(groups)), 2)
    end
    if x.ndim < 3 then
      error(fmt("channel_shuffle: expects input to have at least 3 dimensions, but got input with %d dimension(s)",
        x.ndim), 2)
    end
    local Cc = x.shape[2]
    if Cc % groups ~= 0 then
      error(fmt("channel_shuffle: Number of channels must be divisible by groups. Got %d channels and %d groups.",
        Cc, groups), 2)
    end
    local s = shape_of(x)
    local v = { s[1], groups, Cc / groups }
    for d = 3, #s do v[#v + 1] = s[d] end
    return x:reshape(v):transpose(2, 3):reshape(s)
  end)
  local ChannelShuffle = Module:extend("ChannelShuffle")
  function ChannelShuffle:init(groups, ...)
    nomore("ChannelShuffle", 1, ...)
    if is_opts(groups) then groups = check_opts("ChannelShuffle", groups, set { "groups" }).groups end
    if type(groups) ~= "number" then error(fmt("ChannelShuffle: expected a number of groups, got %s", tostring(groups)), 2) end
    self.groups = groups
  end
  function ChannelShuffle:forward(x, ...)
    nomore("ChannelShuffle.forward", 1, ...)
    return F.channel_shuffle(x, self.groups)
  end
  function ChannelShuffle:extra_repr() return "groups=" .. tostring(self.groups) end
  nn.ChannelShuffle = ChannelShuffle

  -- -- gumbel_softmax -----------------------------------------------------------------------
  -- softmax((logits + g) / tau) with g ~ Gumbel(0, 1) drawn from the global
  -- generator; hard: the one-hot of the argmax, with the soft sample's gradient
  -- (y_hard - y_soft:detach() + y_soft, PyTorch's straight-through form)
  local GUMBEL = set { "tau", "hard", "dim" }
  F.gumbel_softmax = named("gumbel_softmax", function(logits, tau, hard, ...)
    local op = "gumbel_softmax"
    check_tensor(op, logits, "logits")
    local dim
    if is_opts(tau) then
      nomore(op, 2, hard, ...)
      local o = check_opts(op, tau, GUMBEL)
      tau, hard, dim = o.tau, o.hard, o.dim
    elseif is_opts(hard) then
      -- (logits, tau, {hard, dim})
      nomore(op, 3, ...)
      local o = check_opts(op, hard, set { "hard", "dim" })
      hard, dim = o.hard, o.dim
    else
      nomore(op, 3, ...)
    end
    if hard ~= nil and type(hard) ~= "boolean" then
      error(fmt("%s: expected a boolean for hard, got %s", op, type(hard)), 2)
    end
    tau, dim = tau or 1, dim or -1
    if type(tau) ~= "number" then error(fmt("%s: expected a number for tau, got %s", op, tostring(tau)), 2) end
    if not logits.dtype.is_floating_point then
      error(fmt("%s: expected floating point logits, got %s", op, tostring(logits.dtype)), 2)
    end
    local g = -T.empty(logits.shape, { dtype = logits.dtype, device = logits.device }):exponential_():log()
    local y = ((logits + g) / tau):softmax(dim)
    if not hard then return y end
    -- dim as given (a negative one too): a 0-d input has dims -1 and 1 only
    local d = dim
    local _, idx = y:max(d, true)
    local y_hard = T.zeros(logits.shape, { dtype = logits.dtype, device = logits.device }):scatter(d, idx, 1.0)
    return y_hard - y:detach() + y
  end)

  -- -- margin losses ----------------------------------------------------------------------
  -- target as (N) 1-based class ids for input (N, C), or one id for input (C)
  local function as_batch(op, input, target)
    if input.ndim == 1 then
      if target.ndim > 1 or target:numel() ~= 1 then
        error(fmt("%s: inconsistent target size %s for input of size %s", op, tostring(target.shape),
          tostring(input.shape)), 3)
      end
      return input:unsqueeze(1), target:reshape(1), true
    end
    if input.ndim ~= 2 then
      error(fmt("%s: expected a 1-d or 2-d input, got %d-d", op, input.ndim), 3)
    end
    if target.ndim ~= 1 or target.shape[1] ~= input.shape[1] then
      error(fmt("%s: inconsistent target size %s for input of size %s", op, tostring(target.shape),
        tostring(input.shape)), 3)
    end
    return input, target, false
  end
  local function check_ids(op, target, Cc)
    if target.dtype.is_floating_point or target.dtype == T.bool then
      error(fmt("%s: expected class ids of an integer dtype, got %s", op, tostring(target.dtype)), 3)
    end
  end

  -- sum over i ~= y of max(0, margin - x[y] + x[i])^p * weight[y], / C
  local MM = set { "p", "margin", "weight", "reduction" }
  F.multi_margin_loss = named("multi_margin_loss", function(input, target, o, ...)
    local op = "multi_margin_loss"
    nomore(op, 3, ...)
    check_tensor(op, input)
    check_tensor(op, target, "target")
    if type(o) == "string" then o = { reduction = o } end
    o = check_opts(op, o, MM)
    local p, margin = o.p or 1, o.margin or 1
    if p ~= 1 and p ~= 2 then error(fmt("%s: only p == 1 and p == 2 supported, got %s", op, tostring(p)), 2) end
    check_ids(op, target, 0)
    local x, y, unb = as_batch(op, input, target)
    local Cc = x.shape[2]
    if y:numel() > 0 then
      local lo, hi = y:min():item(), y:max():item()
      if lo < 1 or hi > Cc then
        error(fmt("%s: target out of range: class ids are 1..%d, got %d", op, Cc, lo < 1 and lo or hi), 2)
      end
    end
    local yi = y:long():unsqueeze(2)
    local xy = x:gather(2, yi)
    local others = F.one_hot(y:long(), Cc):logical_not()
    local z = (x - xy + margin):relu()
    if p == 2 then z = z * z end
    local l = (z * others:to(x.dtype)):sum(2) / Cc
    if o.weight ~= nil then
      check_tensor(op, o.weight, "weight")
      if o.weight.ndim ~= 1 then error(fmt("%s: weight must be one-dimensional, got %d-d", op, o.weight.ndim), 2) end
      -- one weight per class (PyTorch 1.13 reads past a shorter one; later versions refuse it)
      if o.weight.shape[1] ~= Cc then
        error(fmt("%s: inconsistent weight size, expected %d but got %s", op, Cc, tostring(o.weight.shape)), 2)
      end
      l = l * o.weight:index_select(1, y:long())
    end
    -- unbatched: the per-sample loss takes the target's shape (0-d or [1])
    if unb and target.ndim == 0 then l = l:squeeze(1) end
    return reduce(op, l, o.reduction or "mean")
  end)

  -- the targets of a sample are its ids up to the first one below 1 (0, or
  -- torch's -1 terminator); sum over those ids j and the non-target
  -- classes i of max(0, 1 - (x[j] - x[i])), / C
  F.multilabel_margin_loss = named("multilabel_margin_loss", function(input, target, o, ...)
    local op = "multilabel_margin_loss"
    nomore(op, 3, ...)
    check_tensor(op, input)
    check_tensor(op, target, "target")
    if type(o) == "string" then o = { reduction = o } end
    o = check_opts(op, o, set { "reduction" })
    check_ids(op, target, 0)
    local unb = input.ndim <= 1
    local x, y = input, target
    if input.ndim == 0 then x, y = input:reshape(1, 1), target:reshape(1, 1)
    elseif unb then x, y = input:unsqueeze(1), target:unsqueeze(1) end
    if x.ndim ~= 2 or y.ndim ~= 2 or y.shape[1] ~= x.shape[1] or y.shape[2] ~= x.shape[2] then
      error(fmt("%s: inconsistent target size %s for input of size %s", op, tostring(target.shape),
        tostring(input.shape)), 2)
    end
    local Cc = x.shape[2]
    y = y:long()
    if y:numel() > 0 and y:max():item() > Cc then
      error(fmt("%s: target out of range: class ids are 1..%d, got %d", op, Cc, y:max():item()), 2)
    end
    -- the ids before the first one below 1
    local valid = y:ge(1):long():cumprod(2)
    local counts = (F.one_hot(y:clamp_min(1), Cc) * valid:unsqueeze(3)):sum(2) -- (N, C): times j is a target
    local is_target = counts:gt(0)
    local cnt = counts:to(x.dtype):unsqueeze(3)                                    -- (N, C_j, 1)
    local non = is_target:logical_not():to(x.dtype):unsqueeze(2)                    -- (N, 1, C_i)
    local z = (1 - x:unsqueeze(3) + x:unsqueeze(2)):relu()                          -- (N, j, i)
    local l = (z * cnt * non):sum({ 2, 3 }) / Cc
    if unb then l = l:squeeze(1) end
    return reduce(op, l, o.reduction or "mean")
  end)

  -- max(0, margin + d(a, p) - d(a, n)), d(a, n) replaced by min(d(a, n), d(p, n)) with swap
  local TMD = set { "distance_function", "margin", "swap", "reduction" }
  F.triplet_margin_with_distance_loss = named("triplet_margin_with_distance_loss", function(a, p, n, o, ...)
    local op = "triplet_margin_with_distance_loss"
    nomore(op, 4, ...)
    check_tensor(op, a, "anchor")
    check_tensor(op, p, "positive")
    check_tensor(op, n, "negative")
    if type(o) == "string" then o = { reduction = o } end
    o = check_opts(op, o, TMD)
    local margin = o.margin or 1.0
    -- any number, 0 and negative ones too: torch 1.13 checks nothing (torch 2's
    -- TripletMarginWithDistanceLoss constructor, not the functional, refuses margin <= 0)
    if type(margin) ~= "number" then
      error(fmt("%s: margin must be a number, got %s", op, type(margin)), 2)
    end
    if a.ndim ~= p.ndim or a.ndim ~= n.ndim then
      error(fmt("%s: The anchor, positive, and negative input tensors must have the same number of dimensions, "
        .. "got %d, %d and %d", op, a.ndim, p.ndim, n.ndim), 2)
    end
    local d = o.distance_function or F.pairwise_distance
    if type(d) ~= "function" and not (type(d) == "table" and getmetatable(d) and getmetatable(d).__call) then
      error(fmt("%s: distance_function must be a function, got %s", op, type(d)), 2)
    end
    local dp, dn = d(a, p), d(a, n)
    if o.swap then dn = T.minimum(dn, d(p, n)) end
    return reduce(op, (dp - dn + margin):clamp_min(0), o.reduction or "mean")
  end)

  -- check(o): the constructor's own argument rules (PyTorch's)
  local function loss_class(name, fn, keys, ninputs, check)
    local L = Module:extend(name)
    local allowed = set(keys)
    function L:init(o, ...)
      nomore(name, 1, ...)
      o = check_opts(name, o, allowed)
      if check then check(o) end
      self.opts = {}
      for _, k in ipairs(keys) do self.opts[k] = o[k] end
    end
    function L:forward(...)
      nomore(name .. ".forward", ninputs, select(ninputs + 1, ...))
      local args = { ... }
      args[ninputs + 1] = self.opts
      return fn(unpack(args, 1, ninputs + 1))
    end
    nn[name] = L
  end
  loss_class("MultiMarginLoss", F.multi_margin_loss, { "p", "margin", "weight", "reduction" }, 2, function(o)
    if o.p ~= nil and o.p ~= 1 and o.p ~= 2 then
      error(fmt("MultiMarginLoss: only p == 1 and p == 2 supported, got %s", tostring(o.p)), 4)
    end
    if o.weight ~= nil and not (T.is_tensor(o.weight) and o.weight.ndim == 1) then
      error("MultiMarginLoss: weight must be a one-dimensional tensor", 4)
    end
  end)
  loss_class("MultiLabelMarginLoss", F.multilabel_margin_loss, { "reduction" }, 2)
  loss_class("TripletMarginWithDistanceLoss", F.triplet_margin_with_distance_loss,
    { "distance_function", "margin", "swap", "reduction" }, 3)
  -- PyTorch's deprecated NLLLoss2d: NLLLoss under its own name
  local NLLLoss2d = nn.NLLLoss:extend("NLLLoss2d")
  local NLL_KEYS = { "weight", "ignore_index", "reduction" }
  function NLLLoss2d:init(o, ...)
    nomore("NLLLoss2d", 1, ...)
    o = check_opts("NLLLoss2d", o, set(NLL_KEYS))
    self.opts = {}
    for _, k in ipairs(NLL_KEYS) do self.opts[k] = o[k] end
  end
  nn.NLLLoss2d = NLLLoss2d

  -- -- CrossMapLRN2d ------------------------------------------------------------------------
  -- PyTorch's legacy cross-channel LRN (torch/nn/modules/_functions.py), 4-d
  -- input only: channel c (0-based) is divided by (k + alpha / size * s_c)^beta
  -- where s_c sums x^2 over channels c - pp + 1 .. c + pp - 1 (pp = floor((size
  -- - 1) / 2) + 1, clipped to the input) and, from c = pp on, also channel 0
  -- (its running sum never takes channel 0 out again)
  local CrossMapLRN2d = Module:extend("CrossMapLRN2d")
  local CML = set { "alpha", "beta", "k" }
  function CrossMapLRN2d:init(size, alpha, beta, k, ...)
    nomore("CrossMapLRN2d", 4, ...)
    if is_opts(alpha) then
      nomore("CrossMapLRN2d", 2, beta, k)
      local o = check_opts("CrossMapLRN2d", alpha, CML)
      alpha, beta, k = o.alpha, o.beta, o.k
    end
    if type(size) ~= "number" or size < 1 or size % 1 ~= 0 then
      error(fmt("CrossMapLRN2d: expected a positive integer size, got %s", tostring(size)), 2)
    end
    self.size, self.alpha, self.beta, self.k = size, alpha or 1e-4, beta or 0.75, k or 1
  end
  function CrossMapLRN2d:forward(x, ...)
    nomore("CrossMapLRN2d.forward", 1, ...)
    check_tensor("CrossMapLRN2d", x)
    if x.ndim ~= 4 then error(fmt("CrossMapLRN2d: expected a 4-d input (N, C, H, W), got %d-d", x.ndim), 2) end
    local Cc = x.shape[2]
    local pp = math.floor((self.size - 1) / 2) + 1
    local sq = x * x
    local padded = F.pad(sq, { 0, 0, 0, 0, pp - 1, pp - 1 })
    local acc = padded:narrow(2, 1, Cc)
    for i = 2, 2 * pp - 1 do acc = acc + padded:narrow(2, i, Cc) end
    if Cc > pp then
      local first = sq:narrow(2, 1, 1)
      local extra = T.cat({ T.zeros_like(sq:narrow(2, 1, pp)), first:expand(-1, Cc - pp, -1, -1) }, 2)
      acc = acc + extra
    end
    return x * (acc * (self.alpha / self.size) + self.k):pow(-self.beta)
  end
  function CrossMapLRN2d:extra_repr()
    local function num(v) return v == math.floor(v) and tostring(math.floor(v)) or pyfloat(v) end
    return fmt("%d, alpha=%s, beta=%s, k=%s", self.size, num(self.alpha), num(self.beta), num(self.k))
  end
  nn.CrossMapLRN2d = CrossMapLRN2d

  -- -- fractional_max_pool2d ----------------------------------------------------------------
  -- PyTorch's: per (sample, channel) plane, two samples u in [0, 1) (the first
  -- for W, the second for H) place the windows: for an output of O over an
  -- input of L with windows of K, alpha = (L - K) / (O - 1) and window i starts
  -- at trunc((i + u) alpha) - trunc(u alpha) (the last at L - K), computed in
  -- the input's dtype; each output is its window's max (the first one), its
  -- index the 1-based flat position in the H x W plane
  local FMP = set { "output_size", "output_ratio", "return_indices", "_random_samples" }
  local function starts(u, L, O, K, dt)
    -- u: (..., 1) samples; returns (..., O) int64 starts
    if O == 1 then
      return T.full(shape_of(u), L - K, { dtype = T.int64, device = u.device })
    end
    local alpha = T.tensor(L - K, { dtype = dt }) / T.tensor(O - 1, { dtype = dt })
    local i = T.arange(0, O - 1, { dtype = dt, device = u.device })
    local s = ((i + u) * alpha):trunc():long() - (u * alpha):trunc():long()
    local last = T.full(shape_of(u), L - K, { dtype = T.int64, device = u.device })
    return T.cat({ s, last }, -1)
  end
  nn._fractional_starts, nn._fractional_opts = starts, FMP -- the 3-d pool's too (more_layers4.lua)
  F.fractional_max_pool2d = named("fractional_max_pool2d", function(x, kernel, o, ...)
    local op = "fractional_max_pool2d"
    nomore(op, 3, ...)
    check_tensor(op, x)
    o = check_opts(op, o, FMP)
    if kernel == nil then error(op .. ": kernel_size is required", 2) end
    local k = type(kernel) == "number" and { kernel, kernel } or kernel
    if type(k) ~= "table" or #k ~= 2 then
      error(fmt("%s: expected kernel_size as a number or two numbers, got %s", op, tostring(kernel)), 2)
    end
    if x.ndim ~= 3 and x.ndim ~= 4 then
      error(fmt("%s: expected a 3-d or 4-d input, got %d-d", op, x.ndim), 2)
    end
    local unb = x.ndim == 3
    if unb then x = x:unsqueeze(1) end
    local N, Cc, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    local out
    if o.output_size ~= nil then
      if o.output_ratio ~= nil then
        error(op .. ": only one of output_size and output_ratio may be specified", 2)
      end
      out = type(o.output_size) == "number" and { o.output_size, o.output_size } or o.output_size
    elseif o.output_ratio ~= nil then
      local r = type(o.output_ratio) == "number" and { o.output_ratio, o.output_ratio } or o.output_ratio
      for i = 1, 2 do
        if not (r[i] > 0 and r[i] < 1) then
          error(fmt("%s: output_ratio must be between 0 and 1 (got %s)", op, tostring(r[i])), 2)
        end
      end
      out = { math.floor(H * r[1]), math.floor(W * r[2]) }
    else
      error(op .. ": fractional_max_pool2d requires specifying either an output_size or an output_ratio", 2)
    end
    local oH, oW = out[1], out[2]
    -- torch 1.13's checks, height first
    if oH + k[1] - 1 > H then
      error(fmt("%s: pool height %d too large relative to input height %d (output height %d)", op, k[1], H, oH), 2)
    end
    if oW + k[2] - 1 > W then
      error(fmt("%s: pool width %d too large relative to input width %d (output width %d)", op, k[2], W, oW), 2)
    end
    local samples = o._random_samples
    if samples == nil then
      samples = T.rand({ N, Cc, 2 }, { dtype = x.dtype, device = x.device })
    else
      check_tensor(op, samples, "_random_samples")
      if samples.ndim == 2 and unb then samples = samples:unsqueeze(1) end
      if samples.ndim ~= 3 or samples.shape[1] ~= N or samples.shape[2] ~= Cc or samples.shape[3] ~= 2 then
        error(fmt("%s: expected _random_samples of shape (%d, %d, 2), got %s", op, N, Cc, tostring(samples.shape)), 2)
      end
      samples = samples:to(x.dtype)
    end
    local sw = starts(samples:narrow(3, 1, 1), W, oW, k[2], x.dtype) -- (N, C, oW)
    local sh = starts(samples:narrow(3, 2, 1), H, oH, k[1], x.dtype) -- (N, C, oH)
    local a = T.arange(0, k[1], { dtype = T.int64, device = x.device })
    local b = T.arange(0, k[2], { dtype = T.int64, device = x.device })
    local rows = sh:view(N, Cc, oH, 1, 1, 1) + a:view(1, 1, 1, 1, k[1], 1)
    local cols = sw:view(N, Cc, 1, oW, 1, 1) + b:view(1, 1, 1, 1, 1, k[2])
    local idx = (rows * W + cols + 1):reshape(N, Cc, oH * oW * k[1] * k[2]) -- 1-based
    local win = x:reshape(N, Cc, H * W):gather(3, idx):view(N, Cc, oH, oW, k[1] * k[2])
    local v, am = win:max(5)
    local ind = idx:view(N, Cc, oH, oW, k[1] * k[2]):gather(5, am:unsqueeze(5)):squeeze(5)
    if unb then v, ind = v:squeeze(1), ind:squeeze(1) end
    if o.return_indices then return v, ind end
    return v
  end)
  local FractionalMaxPool2d = Module:extend("FractionalMaxPool2d")
  function FractionalMaxPool2d:init(kernel, o, ...)
    nomore("FractionalMaxPool2d", 2, ...)
    o = check_opts("FractionalMaxPool2d", o, FMP)
    if kernel == nil then error("FractionalMaxPool2d: kernel_size is required", 2) end
    if (o.output_size == nil) == (o.output_ratio == nil) then
      error("FractionalMaxPool2d requires specifying either an output size, or a pooling ratio", 2)
    end
    self.kernel_size, self.output_size, self.output_ratio = kernel, o.output_size, o.output_ratio
    self.return_indices = o.return_indices or false
    if o._random_samples ~= nil then self:register_buffer("_random_samples", o._random_samples) end
  end
  function FractionalMaxPool2d:forward(x, ...)
    nomore("FractionalMaxPool2d.forward", 1, ...)
    return F.fractional_max_pool2d(x, self.kernel_size, { output_size = self.output_size,
      output_ratio = self.output_ratio, return_indices = self.return_indices,
      _random_samples = self._random_samples })
  end
  nn.FractionalMaxPool2d = FractionalMaxPool2d

  -- -- lazy modules -------------------------------------------------------------------------
  -- A lazy module holds its constructor's arguments and no parameters (so
  -- parameters() is empty and an optimizer built from it refuses, "optimizer
  -- got an empty parameter list"); its first forward reads in_features /
  -- in_channels / num_features from the input, builds the regular module
  -- with them and becomes it (its class, parameters, buffers and fields),
  -- as PyTorch's cls_to_become, then runs that module's forward.
  local function lazy(name, target, feature_of, build)
    local L = Module:extend(name)
    function L:init(...)
      local args = { n = select("#", ...), ... }
      -- the regular module's checks run now on a placeholder size, so a bad
      -- option is refused at construction, as PyTorch's (the generator's
      -- state is kept: the parameters are drawn at the first forward)
      local st = T.get_rng_state()
      local ok, e = pcall(build, target, 1, args)
      T.set_rng_state(st)
      if not ok then
        -- the regular module's message, under the lazy module's name
        local m = A.unpos(e)
        error(name .. ": " .. m:gsub("^[%w_]+: ", ""), 2)
      end
      rawset(self, "_lazy_args", args)
    end
    function L:has_uninitialized_params() return true end
    function L:forward(x, ...)
      check_tensor(name .. ".forward", x)
      local nf = feature_of(x)
      local real = build(target, nf, rawget(self, "_lazy_args"))
      for k, v in pairs(real) do
        if k ~= "training" and k ~= "_module_hooks" then rawset(self, k, v) end
      end
      rawset(self, "_lazy_args", nil)
      setmetatable(self, getmetatable(real))
      return self:forward(x, ...)
    end
    function L:extra_repr() return "uninitialized" end
    nn[name] = L
  end
  local function build_plain(cls, nf, args) return cls(nf, unpack(args, 1, args.n)) end
  -- the channel dim: 2 of a batched input, 1 of an unbatched one (spatial dims sd)
  local function channels(sd, what)
    return function(x)
      if x.ndim ~= sd + 1 and x.ndim ~= sd + 2 then
        error(fmt("%s: Expected %dD (unbatched) or %dD (batched) input, but got input of size: %s", what, sd + 1,
          sd + 2, tostring(x.shape)), 3)
      end
      return x.ndim == sd + 2 and x.shape[2] or x.shape[1]
    end
  end
  lazy("LazyLinear", nn.Linear, function(x)
    if x.ndim < 1 then error("LazyLinear: expected an input of at least 1 dim", 3) end
    return x.shape[x.ndim]
  end, build_plain)
  lazy("LazyConv1d", nn.Conv1d, channels(1, "LazyConv1d"), build_plain)
  lazy("LazyConv2d", nn.Conv2d, channels(2, "LazyConv2d"), build_plain)
  lazy("LazyConvTranspose1d", nn.ConvTranspose1d, channels(1, "LazyConvTranspose1d"), build_plain)
  lazy("LazyConvTranspose2d", nn.ConvTranspose2d, channels(2, "LazyConvTranspose2d"), build_plain)
  local function bn_feature(what)
    return function(x)
      if x.ndim < 2 then error(fmt("%s: expected an input of at least 2 dims, got %d", what, x.ndim), 3) end
      return x.shape[2]
    end
  end
  lazy("LazyBatchNorm1d", nn.BatchNorm1d, bn_feature("LazyBatchNorm1d"), build_plain)
  lazy("LazyBatchNorm2d", nn.BatchNorm2d, bn_feature("LazyBatchNorm2d"), build_plain)
  lazy("LazyInstanceNorm1d", nn.InstanceNorm1d, channels(1, "LazyInstanceNorm1d"), build_plain)
  lazy("LazyInstanceNorm2d", nn.InstanceNorm2d, channels(2, "LazyInstanceNorm2d"), build_plain)
end
