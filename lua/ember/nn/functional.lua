-- T.nn.functional: PyTorch's functional forms over the engine's nn kernels
-- (engine/src/ops/conv.c, nn.c, norm.c, loss.c; bindings/l_nn.c).
--
-- Options come in a trailing table ({stride = 2, padding = 1}) or, for the
-- common ones, positionally in PyTorch's order. Class ids and embedding ids
-- are 1-based.
--
-- Gradients: nothing here. Each engine entry (em_conv2d, em_cross_entropy,
-- ...) records its own autograd node in C when grad mode is on and an input
-- requires grad (docs/nn.md); ops made of other ember ops (linear, relu,
-- softmax, ...) get their gradients from those ops.
return function(T, C)
  local F = {}
  local A = require "ember.args"
  local AC = require("ember.argcheck")(T)
  local single, pool_nonempty = AC.single, AC.pool_nonempty
  local checkopts, nomore = A.checkopts, A.nomore
  local unpack = table.unpack or unpack

  -- the options table at position n, if any: a list there ({2, 1}: a
  -- stride or padding per dim, PyTorch's tuple) is a positional value
  local function opts_at(args, n)
    local o = args[n]
    if type(o) == "table" and not T.is_tensor(o) and o[1] == nil then return o end
    return nil
  end

  -- a number or a list of 1 or 2 numbers as a pair; any other length is
  -- refused (PyTorch: "expected stride to be a single integer value or a
  -- list of 2 values")
  local function pair(v, what, op)
    if v == nil then return nil end
    if type(v) == "number" then return { v, v } end
    if type(v) == "table" and not T.is_tensor(v) and type(v[1]) == "number" then
      if #v == 2 and type(v[2]) == "number" then return { v[1], v[2] } end
      if #v == 1 then return { v[1], v[1] } end
      error(string.format("%s: expected %s to be a single number or a list of 2 numbers, got a list of %d",
        op, what, #v), 3)
    end
    error(string.format("%s: expected %s to be a number or a pair, got %s", op, what, tostring(v)), 3)
  end

  -- a tensor argument, or an error naming the op and what came instead
  local function need_tensor(op, v, what, level)
    if not T.is_tensor(v) then
      error(string.format("%s: expected a tensor for %s, got %s", op, what, type(v)), (level or 2) + 1)
    end
  end

  -- -- activations (ember ops; autograd sees them directly) ----------------
  -- inplace: true, or {inplace = true}, after the other arguments (PyTorch's
  -- inplace=True): the result written into x, which is returned
  local INPLACE = { "inplace" }
  local function inplace_arg(op, v)
    if type(v) == "table" and not T.is_tensor(v) then v = checkopts(op, v, INPLACE, 4).inplace end
    if v ~= nil and type(v) ~= "boolean" then
      error(string.format("%s: expected a boolean for inplace, got %s", op, type(v)), 3)
    end
    return v or false
  end
  local function need_float(op, x)
    if not x.dtype.is_floating_point then
      error(string.format("%s: expected a floating point input, got %s", op, tostring(x.dtype)), 3)
    end
  end
  function F.relu(x, inplace, ...)
    need_tensor("relu", x, "the input"); nomore("relu", 2, ...)
    if inplace_arg("relu", inplace) then return x:relu_() end
    return x:relu()
  end
  local GELU = { "approximate" }
  function F.gelu(x, o, ...)
    need_tensor("gelu", x, "the input")
    nomore("gelu", 2, ...)
    if type(o) == "string" then o = { approximate = o } end
    o = checkopts("gelu", o, GELU)
    if o.approximate and o.approximate ~= "none" then return x:gelu { approximate = o.approximate } end
    return x:gelu()
  end
  function F.tanh(x, ...) need_tensor("tanh", x, "the input"); nomore("tanh", 1, ...); return x:tanh() end
  function F.sigmoid(x, ...) need_tensor("sigmoid", x, "the input"); nomore("sigmoid", 1, ...); return x:sigmoid() end
  -- the in-place forms: computed from a copy, written into x (copy_'s
  -- errors, a leaf that requires grad, under the op's name)
  local named = AC.named
  local silu_ = named("silu", function(x) return x:copy_(x:clone():silu()) end)
  local leaky_ = named("leaky_relu", function(x, slope)
    local c = x:clone()
    return x:copy_(T.where(c:gt(0), c, c * slope))
  end)
  function F.silu(x, inplace, ...)
    need_tensor("silu", x, "the input"); nomore("silu", 2, ...)
    if inplace_arg("silu", inplace) then
      need_float("silu", x)
      return silu_(x)
    end
    return x:silu()
  end
  function F.softplus(x, ...) need_tensor("softplus", x, "the input"); return x:softplus(...) end
  local LEAKY = { "negative_slope", "inplace" }
  function F.leaky_relu(x, slope, inplace, ...)
    need_tensor("leaky_relu", x, "the input")
    nomore("leaky_relu", 3, ...)
    if type(slope) == "table" and not T.is_tensor(slope) then
      if inplace ~= nil then error("leaky_relu: unexpected argument #3 after the options table", 2) end
      local o = checkopts("leaky_relu", slope, LEAKY)
      slope, inplace = o.negative_slope, o.inplace
    end
    inplace = inplace_arg("leaky_relu", inplace)
    slope = slope or 0.01
    if type(slope) ~= "number" then
      error("leaky_relu: expected a number for negative_slope, got " .. type(slope), 2)
    end
    -- PyTorch's kernel takes floating point input only
    need_float("leaky_relu", x)
    if inplace then return leaky_(x, slope) end
    return T.where(x:gt(0), x, x * slope)
  end
  -- softmax(x, dim, {dtype}) or softmax(x, {dim, dtype}); softmin(x) =
  -- softmax(-x)
  local DIM_DT = { "dim", "dtype" }
  local function softmax_args(op, dim, o, ...)
    nomore(op, 3, ...)
    if type(dim) == "table" then
      if o ~= nil then error(op .. ": expected a dim and an options table, got two tables", 3) end
      o = dim
      dim = nil
    end
    o = checkopts(op, o, DIM_DT, 4)
    dim = dim or o.dim
    if dim == nil then error(op .. ": the dim argument is required", 3) end
    return dim, o.dtype and { dtype = o.dtype } or nil
  end
  function F.softmax(x, dim, o, ...)
    need_tensor("softmax", x, "the input")
    return x:softmax(softmax_args("softmax", dim, o, ...))
  end
  function F.log_softmax(x, dim, o, ...)
    need_tensor("log_softmax", x, "the input")
    return x:log_softmax(softmax_args("log_softmax", dim, o, ...))
  end
  local function softmin_core(x, d, opts)
    if opts then x = x:to(opts.dtype) end
    return (-x):softmax(d)
  end
  function F.softmin(x, dim, o, ...)
    local d, opts = softmax_args("softmin", dim, o, ...)
    if not T.is_tensor(x) then error("softmin: expected a tensor, got " .. type(x), 2) end
    -- softmax's messages (a bad dim) under softmin's name
    local ok, r = pcall(softmin_core, x, d, opts)
    if not ok then
      if type(r) ~= "string" then error(r, 0) end
      error("softmin: " .. AC.unpos(r):gsub("^softmax: ", ""), 2)
    end
    return r
  end

  -- T.linear's messages (matmul's: "mv: size mismatch") under linear's name
  F.linear = AC.named("linear", function(x, w, b, ...)
    nomore("linear", 3, ...)
    return T.linear(x, w, b)
  end)

  -- -- convolution ------------------------------------------------------------
  local CONV = { "stride", "padding", "dilation", "groups" }
  local function conv_opts(op, args, first)
    local o = checkopts(op, opts_at(args, first), CONV, 4)
    local last = opts_at(args, first) and first or first + 3
    nomore(op, last + 3, unpack(args, last + 1, args.n))
    local stride = o.stride or (not opts_at(args, first) and args[first]) or 1
    local padding = o.padding or (not opts_at(args, first) and args[first + 1]) or 0
    local dilation = o.dilation or (not opts_at(args, first) and args[first + 2]) or 1
    local groups = o.groups or (not opts_at(args, first) and args[first + 3]) or 1
    return stride, padding, dilation, groups
  end

  -- padding='same': dilation * (kernel - 1) in all, total // 2 before and
  -- the rest after (PyTorch's conv_padding_same: an odd total puts the extra
  -- one on the right / bottom); returns the before and after lists
  local function same_padding(op, k, d, s, n)
    local l, r = {}, {}
    for i = 1, n do
      if s[i] ~= 1 then error(op .. ": padding='same' is not supported for strided convolutions", 4) end
      local total = d[i] * (k[i] - 1)
      l[i] = math.floor(total / 2)
      r[i] = total - l[i]
    end
    return l, r
  end
  -- an asymmetric 'same': the extra zeros by F.pad (last dim first), then
  -- the convolution with the symmetric part
  local function pad_extra(x, l, r)
    local pads, any = {}, false
    for i = #l, 1, -1 do
      pads[#pads + 1], pads[#pads + 2] = 0, r[i] - l[i]
      if r[i] ~= l[i] then any = true end
    end
    if any then return F.pad(x, pads) end
    return x
  end

  -- torch's message for a padding string other than 'same' and 'valid'
  local function bad_padding_string(op, padding)
    if type(padding) == "string" and padding ~= "same" and padding ~= "valid" then
      error(string.format("%s: Invalid padding string '%s', should be one of {'valid', 'same'}", op, padding), 3)
    end
  end

  local function conv2d_core(x, w, b, s, p, d, g)
    return C._nn_conv2d(x, w, b, s[1], s[2], p[1], p[2], d[1], d[2], g)
  end

  function F.conv2d(x, w, b, ...)
    local op = "conv2d"
    -- F.conv2d(x, w, {options}): no bias
    if A.is_opts(b) then return F.conv2d(x, w, nil, b, ...) end
    if not T.is_tensor(x) then error(op .. ": expected a tensor input", 2) end
    if b ~= nil and not T.is_tensor(b) then
      error(op .. ": bias must be a tensor or nil (pass options after it)", 2)
    end
    local stride, padding, dilation, groups = conv_opts(op, { n = select("#", ...), ... }, 1)
    bad_padding_string(op, padding)
    local s, d = pair(stride, "stride", op), pair(dilation, "dilation", op)
    local p
    if padding == "valid" then p = { 0, 0 }
    elseif padding == "same" then
      local r
      p, r = same_padding(op, { w.shape[3], w.shape[4] }, d, s, 2)
      x = pad_extra(x, p, r)
    else p = pair(padding, "padding", op) end
    if x.ndim == 3 then
      return conv2d_core(x:unsqueeze(1), w, b, s, p, d, groups):squeeze(1)
    end
    if x.ndim ~= 4 then
      error(string.format("%s: expected a 3-d (unbatched) or 4-d (batched) input, got %d-d", op, x.ndim), 2)
    end
    return conv2d_core(x, w, b, s, p, d, groups)
  end

  function F.conv1d(x, w, b, ...)
    local op = "conv1d"
    need_tensor(op, x, "the input")
    need_tensor(op, w, "the weight")
    -- F.conv1d(x, w, {options}): no bias
    if A.is_opts(b) then return F.conv1d(x, w, nil, b, ...) end
    if b ~= nil and not T.is_tensor(b) then
      error(op .. ": bias must be a tensor or nil (pass options after it)", 2)
    end
    local stride, padding, dilation, groups = conv_opts(op, { n = select("#", ...), ... }, 1)
    bad_padding_string(op, padding)
    local function one(v, what)
      v = single(op, v, what, 3)
      if type(v) ~= "number" and v ~= "same" and v ~= "valid" then
        error(string.format("%s: expected %s to be a number", op, what), 3)
      end
      return v
    end
    stride, dilation = one(stride, "stride"), one(dilation, "dilation")
    padding = one(padding, "padding")
    if padding == "valid" then padding = 0
    elseif padding == "same" then
      local l, r = same_padding(op, { w.shape[3] }, { dilation }, { stride }, 1)
      x = pad_extra(x, l, r)
      padding = l[1]
    end
    local unbatched = x.ndim == 2
    if unbatched then x = x:unsqueeze(1) end
    if x.ndim ~= 3 then
      error(string.format("%s: expected a 2-d (unbatched) or 3-d (batched) input, got %d-d", op, x.ndim), 2)
    end
    if w.ndim ~= 3 then error(string.format("%s: expected a 3-d weight, got %d-d", op, w.ndim), 2) end
    local out = C._nn_conv1d(x, w, b, stride, padding, dilation, groups)
    if unbatched then out = out:squeeze(1) end
    return out
  end

  -- conv_tbc(x, w, b, pad): x (time, batch, in), w (kernel, in, out), b (out),
  -- output (time + 2 pad - kernel + 1, batch, out): conv1d over the time
  -- axis (a negative pad cuts the input's ends; no rows left is an empty
  -- output, as torch 1.13)
  function F.conv_tbc(x, w, b, pad, ...)
    local op = "conv_tbc"
    need_tensor(op, x, "the input")
    need_tensor(op, w, "the weight")
    need_tensor(op, b, "the bias")
    nomore(op, 5, ...)
    pad = pad == nil and 0 or pad
    if type(pad) ~= "number" or pad ~= math.floor(pad) then
      error(string.format("%s: expected an integer pad, got %s", op, tostring(pad)), 2)
    end
    if x.ndim ~= 3 then error(string.format("%s: Input must have 3 dims: time, batch, in_channel (got %d-d)",
      op, x.ndim), 2) end
    if w.ndim ~= 3 then error(string.format("%s: Weight tensor must have 3 dims: kernel_width, in_channels, "
      .. "out_channels (got %d-d)", op, w.ndim), 2) end
    if b.ndim ~= 1 then error(string.format("%s: Bias must be 1-D (got %d-d)", op, b.ndim), 2) end
    if x.shape[3] ~= w.shape[2] then
      error(string.format("%s: Input dim 3 (input channels, %d) is not == dim 2 in the weight tensor (%d)", op,
        x.shape[3], w.shape[2]), 2)
    end
    if b.shape[1] ~= w.shape[3] then
      error(string.format("%s: Bias size (%d) must equal dim 3 in the weight tensor (output channels, %d)", op,
        b.shape[1], w.shape[3]), 2)
    end
    local len = x.shape[1] + 2 * pad - w.shape[1] + 1
    if len < 0 then
      error(string.format("%s: the input's time (%d) + 2 * pad (%d) is shorter than the kernel (%d) less one: "
        .. "an output length of %d", op, x.shape[1], pad, w.shape[1], len), 2)
    end
    if len == 0 then
      return T.zeros({ 0, x.shape[2], w.shape[3] }, { dtype = x.dtype, device = x.device })
    end
    if pad < 0 then x, pad = x:narrow(1, 1 - pad, x.shape[1] + 2 * pad), 0 end
    return F.conv1d(x:permute(2, 3, 1), w:permute(3, 2, 1), b, { padding = pad }):permute(3, 1, 2)
  end

  -- -- pooling ----------------------------------------------------------------
  local POOL = {
    max_pool2d = { "stride", "padding", "dilation", "ceil_mode", "return_indices" },
    avg_pool2d = { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" },
  }
  local function pool_args(op, kernel, ...)
    local args = { n = select("#", ...), ... }
    local o = checkopts(op, opts_at(args, 1), POOL[op], 4)
    local last = opts_at(args, 1) and 1 or #POOL[op]
    nomore(op, last + 2, unpack(args, last + 1, args.n))
    local pos = not opts_at(args, 1)
    local k = pair(kernel, "kernel_size", op)
    if not k then error(op .. ": kernel_size is required", 3) end
    local s = pair(o.stride or (pos and args[1]) or k, "stride", op)
    local p = pair(o.padding or (pos and args[2]) or 0, "padding", op)
    return k, s, p, o, args, pos
  end

  local function batched(op, x)
    need_tensor(op, x, "the input", 3)
    if x.ndim == 3 then
      pool_nonempty(op, x, 2, 3)
      return x:unsqueeze(1), true
    end
    if x.ndim ~= 4 then
      error(string.format("%s: expected a 3-d or 4-d input, got %d-d", op, x.ndim), 3)
    end
    pool_nonempty(op, x, 2, 3)
    return x, false
  end

  -- the kernel may come in the options table: f(x, {kernel_size = k, ...})
  local function kernel_in_opts(kernel, ...)
    if type(kernel) == "table" and kernel.kernel_size ~= nil and select("#", ...) == 0 then
      local o = {}
      for key, v in pairs(kernel) do if key ~= "kernel_size" then o[key] = v end end
      return kernel.kernel_size, o
    end
    return kernel, ...
  end
  function F.max_pool2d(x, kernel, ...)
    local op = "max_pool2d"
    local k, s, p, o, args, pos = pool_args(op, kernel_in_opts(kernel, ...))
    local d = pair(o.dilation or (pos and args[3]) or 1, "dilation", op)
    local ceil = o.ceil_mode or (pos and args[4]) or false
    local xb, unb = batched(op, x)
    local out, idx = C._nn_max_pool2d(xb, k[1], k[2], s[1], s[2], p[1], p[2], d[1], d[2], ceil)
    if unb then out, idx = out:squeeze(1), idx:squeeze(1) end
    if o.return_indices or (pos and args[5]) then return out, idx end
    return out
  end

  function F.avg_pool2d(x, kernel, ...)
    local op = "avg_pool2d"
    local k, s, p, o, args, pos = pool_args(op, kernel_in_opts(kernel, ...))
    local ceil = o.ceil_mode or (pos and args[3]) or false
    local cip = o.count_include_pad
    if cip == nil and pos then cip = args[4] end  -- an options table without it: the default
    if cip == nil then cip = true end
    local div = o.divisor_override or (pos and args[5]) or nil
    if div ~= nil then
      -- torch 1.13 takes any non-zero integer (a negative one too)
      if type(div) ~= "number" or div ~= math.floor(div) or math.abs(div) == math.huge then
        error(string.format("%s: expected an integer for divisor_override, got %s", op, tostring(div)), 2)
      end
      if div == 0 then error(op .. ": divisor must be not zero, got 0", 2) end
    end
    local xb, unb = batched(op, x)
    local out
    if xb.dtype == T.int64 then
      -- torch 1.13's int64 kernel: each window's sum divided by its divisor,
      -- truncated (C's integer division); the sums made in float64 (exact
      -- below 2^53), the divisors from pooling ones
      local function pool(t, dv) return C._nn_avg_pool2d(t, k[1], k[2], s[1], s[2], p[1], p[2], ceil, cip, dv) end
      local sums = pool(xb:double(), 1):round():long()
      local divisor = div
      if divisor == nil then
        local ones = T.ones({ 1, 1, xb.shape[3], xb.shape[4] }, { dtype = T.float64, device = xb.device })
        divisor = (pool(ones, 1) / pool(ones, nil)):round():long()
      end
      out = T.div(sums, divisor, { rounding_mode = "trunc" })
    else
      out = C._nn_avg_pool2d(xb, k[1], k[2], s[1], s[2], p[1], p[2], ceil, cip, div)
    end
    if unb then out = out:squeeze(1) end
    return out
  end

  -- an engine error raised at the caller's position, not at this file's line
  -- that called the engine (as conv3d's and the 3-d pools')
  do
    local named = AC.named
    F.conv1d, F.conv2d = named("conv1d", F.conv1d), named("conv2d", F.conv2d)
    F.max_pool2d, F.avg_pool2d = named("max_pool2d", F.max_pool2d), named("avg_pool2d", F.avg_pool2d)
  end

  -- -- embedding, normalisation, dropout -------------------------------------------
  -- max_norm: the rows looked up whose norm_type-norm exceeds max_norm are
  -- rescaled in place to max_norm / (norm + 1e-7) first, under no_grad
  -- (PyTorch's embedding_renorm_); the ids are checked before any row is
  -- touched. scale_grad_by_freq: each row's gradient is divided by how often
  -- the ids name it, by a hook on an alias of the weight (so the output's own
  -- gradient, a retained out.grad, is unscaled, as PyTorch's)
  local EMB = { "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse" }
  local NU = require("ember.nn.util")
  local padding_idx = NU.padding_idx
  function F.embedding(ids, weight, o, ...)
    if o == nil or type(o) ~= "table" then
      -- PyTorch's positional form: padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse
      local max_norm, norm_type, sgbf, sparse = ...
      nomore("embedding", 7, select(5, ...))
      o = { padding_idx = o, max_norm = max_norm, norm_type = norm_type, scale_grad_by_freq = sgbf, sparse = sparse }
    else
      nomore("embedding", 3, ...)
    end
    o = checkopts("embedding", o, EMB)
    local pidx = o.padding_idx
    if pidx ~= nil and T.is_tensor(weight) and weight.ndim >= 1 then
      pidx = padding_idx("embedding", pidx, weight.shape[1], 2)
    end
    if o.sparse then
      error("embedding: sparse gradients are not supported (sparse = true): ember has no sparse tensors", 2)
    end
    if o.max_norm ~= nil and T.is_tensor(ids) and T.is_tensor(weight) and tostring(weight.device) ~= "meta"
       and ids:numel() > 0 then
      if weight.ndim == 2 then NU.check_ids(T, "embedding", ids, weight.shape[1], 2) end
      local p = o.norm_type or 2
      T.no_grad(function()
        local u = T.unique(ids:reshape(-1))
        local rows = weight:index_select(1, u)
        local norms = rows:norm(p, 2, true)
        local scale = T.where(norms:gt(o.max_norm), (norms + 1e-7):reciprocal() * o.max_norm, 1)
        weight:index_copy_(1, u, rows * scale)
      end)
    end
    if o.scale_grad_by_freq and T.is_tensor(ids) and T.is_tensor(weight) and weight.ndim == 2 then
      NU.check_ids(T, "embedding", ids, weight.shape[1], 2)
      return C._nn_embedding(NU.freq_scaled(T, weight, ids), ids, pidx)
    end
    return C._nn_embedding(weight, ids, pidx)
  end

  local LN = { "weight", "bias", "eps" }
  function F.layer_norm(x, normalized_shape, weight, bias, eps, ...)
    if type(weight) == "table" and not T.is_tensor(weight) then
      nomore("layer_norm", 3, bias, eps, ...)
      local o = checkopts("layer_norm", weight, LN)
      weight, bias, eps = o.weight, o.bias, o.eps
    end
    need_tensor("layer_norm", x, "the input")
    if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
    if T.is_tensor(normalized_shape) or type(normalized_shape) ~= "table" then
      error(string.format("layer_norm: expected normalized_shape as a number or a list of numbers, got %s",
        T.is_tensor(normalized_shape) and "a tensor" or type(normalized_shape)), 2)
    end
    for i = 1, #normalized_shape do
      if type(normalized_shape[i]) ~= "number" then
        error(string.format("layer_norm: normalized_shape[%d] must be a number, got %s", i,
          type(normalized_shape[i])), 2)
      end
    end
    local nd = #normalized_shape
    for i = 1, nd do
      local got = x.shape[x.ndim - nd + i]
      if got ~= normalized_shape[i] then
        error(string.format("layer_norm: the input's last %d dims %s do not match normalized_shape %s",
          nd, tostring(T.Size and x.shape or ""), table.concat(normalized_shape, ", ")), 2)
      end
    end
    eps = eps or 1e-5
    return (C._nn_layer_norm(x, nd, weight, bias, eps))
  end

  -- PyTorch's order: (input, running_mean, running_var, weight, bias,
  -- training, momentum, eps), or (input, running_mean, running_var, opts)
  local BN = { "weight", "bias", "training", "momentum", "eps" }
  function F.batch_norm(x, rm, rv, weight, bias, training, momentum, eps, ...)
    if type(weight) == "table" and not T.is_tensor(weight) then
      nomore("batch_norm", 4, bias, training, momentum, eps, ...)
      local o = checkopts("batch_norm", weight, BN)
      weight, bias, training, momentum, eps = o.weight, o.bias, o.training, o.momentum, o.eps
    end
    training = training and true or false
    -- false would be PyTorch's None, which batch_norm refuses (a module's
    -- momentum=false, the cumulative average, passes 1 / num_batches_tracked)
    if momentum ~= nil and type(momentum) ~= "number" then
      error(string.format("batch_norm: momentum must be a number, got %s", tostring(momentum)), 2)
    end
    if eps ~= nil and type(eps) ~= "number" then
      error(string.format("batch_norm: eps must be a number, got %s", tostring(eps)), 2)
    end
    momentum = momentum or 0.1
    eps = eps or 1e-5
    -- evaluation normalises with the running statistics: they must be given
    -- (PyTorch's error; a module without them passes training = true)
    if not training and (rm == nil or rv == nil) then
      error(string.format("batch_norm: running_%s must be defined in evaluation mode",
        rm == nil and "mean" or "var"), 2)
    end
    local use_batch = training
    if T.is_tensor(x) and x.ndim >= 2 and x:numel() == 0 then
      -- an empty batch: an empty result, still in weight's and bias's graph;
      -- the running statistics are left as they are (PyTorch)
      local y = x:clone()
      if T.is_tensor(weight) and weight:numel() > 0 then y = y * weight[1] end
      if T.is_tensor(bias) and bias:numel() > 0 then y = y + bias[1] end
      return y
    end
    return (C._nn_batch_norm(x, weight, bias, rm, rv, use_batch, momentum, eps))
  end

  -- dropout(x, p=0.5, training=true, inplace=false) or (x, {p, training, inplace}),
  -- PyTorch's signature: inplace writes the result into x and returns x
  local DROP = { "p", "training", "inplace" }
  -- the draw, and the in-place write, with errors under dropout's name at
  -- the caller's line (not copy_'s: a leaf that requires grad, an expanded x)
  local dropout_ = named("dropout", function(x, p, inplace)
    local y = C._nn_dropout(x, p)
    if inplace then return x:copy_(y) end
    return y
  end)
  function F.dropout(x, p, training, inplace, ...)
    if type(p) == "table" then
      nomore("dropout", 2, training, inplace, ...)
      local o = checkopts("dropout", p, DROP)
      p, training, inplace = o.p, o.training, o.inplace
    else
      nomore("dropout", 4, ...)
    end
    need_tensor("dropout", x, "the input")
    p = p or 0.5
    if training == nil then training = true end
    if type(p) ~= "number" then error(string.format("dropout: expected a number for p, got %s", type(p)), 2) end
    if type(training) ~= "boolean" then
      error(string.format("dropout: expected a boolean for training, got %s", type(training)), 2)
    end
    if p < 0 or p > 1 or p ~= p then
      error(string.format("dropout: dropout probability has to be between 0 and 1, but got %g", p), 2)
    end
    if inplace ~= nil and type(inplace) ~= "boolean" then
      error(string.format("dropout: expected a boolean for inplace, got %s", type(inplace)), 2)
    end
    if not training or p == 0 then return x end
    return dropout_(x, p, inplace)
  end

  -- -- attention (docs/attention.md) -----------------------------------------
  -- PyTorch 2.x's scaled_dot_product_attention: one fused kernel (engine/src/
  -- cpu/attention.c) that never holds the L x S scores; the batch dims of
  -- q, k, v broadcast (expanded here, so autograd sums the gradients back).
  local SDPA = { "attn_mask", "dropout_p", "is_causal", "scale" }
  function F.scaled_dot_product_attention(q, k, v, o, ...)
    local op = "scaled_dot_product_attention"
    nomore(op, 4, ...)
    o = checkopts(op, o, SDPA)
    local qkv = { q, k, v }
    for i = 1, 3 do
      local t = qkv[i]
      if not T.is_tensor(t) then
        error(string.format("%s: expected %s to be a tensor, got %s", op, ({ "query", "key", "value" })[i], type(t)), 2)
      end
      if t.ndim < 2 then
        error(string.format("%s: expected query, key and value of at least 2 dims, got a %d-d %s",
          op, t.ndim, ({ "query", "key", "value" })[i]), 2)
      end
    end
    local m = o.attn_mask
    if m ~= nil and not T.is_tensor(m) then
      error(string.format("%s: expected attn_mask to be a tensor, got %s", op, type(m)), 2)
    end
    local p = o.dropout_p or 0
    if type(p) ~= "number" then error(string.format("%s: expected dropout_p to be a number, got %s", op, type(p)), 2) end
    if o.is_causal ~= nil and type(o.is_causal) ~= "boolean" then
      error(string.format("%s: expected is_causal to be a boolean, got %s", op, type(o.is_causal)), 2)
    end
    if o.scale ~= nil and type(o.scale) ~= "number" then
      error(string.format("%s: expected scale to be a number, got %s", op, type(o.scale)), 2)
    end
    -- the broadcast batch dims
    local nb = math.max(q.ndim, k.ndim, v.ndim) - 2
    local batch = {}
    for d = 1, nb do
      local size = 1
      for _, t in ipairs({ q, k, v }) do
        local td = d - (nb - (t.ndim - 2))
        local s = td >= 1 and t.shape[td] or 1
        if s ~= 1 then
          if size ~= 1 and size ~= s then
            error(string.format("%s: the batch dims of query %s, key %s and value %s do not broadcast",
              op, tostring(q.shape), tostring(k.shape), tostring(v.shape)), 2)
          end
          size = s
        end
      end
      batch[d] = size
    end
    local function fit(t)
      if t.ndim - 2 == nb then
        local same = true
        for d = 1, nb do if t.shape[d] ~= batch[d] then same = false end end
        if same then return t end
      end
      local sz = {}
      for d = 1, nb do sz[d] = batch[d] end
      sz[nb + 1], sz[nb + 2] = t.shape[t.ndim - 1], t.shape[t.ndim]
      return t:expand(sz)
    end
    return (C._nn_scaled_dot_product_attention(fit(q), fit(k), fit(v), m, p, o.is_causal, o.scale))
  end

  -- -- losses -----------------------------------------------------------------
  local function loss_opts(op, o, allowed)
    if type(o) == "string" then return { reduction = o } end
    o = o or {}
    for k in pairs(o) do
      if not allowed[k] then error(string.format("%s: unknown option '%s'", op, tostring(k)), 3) end
    end
    return o
  end

  -- the class and binary losses' weights are constants: with grad mode on,
  -- one that requires grad is refused (torch 1.13: "The function
  -- 'binary_cross_entropy' is not differentiable with respect to argument
  -- 'weight'"), not left without a gradient
  local function constant_arg(op, t, name)
    if T.is_tensor(t) and t.requires_grad and T.is_grad_enabled() then
      error(string.format("%s: not differentiable with respect to argument '%s': this input cannot have "
        .. "requires_grad true (detach it)", op, name), 3)
    end
  end

  local CLS = { weight = true, ignore_index = true, reduction = true, label_smoothing = true }
  function F.cross_entropy(input, target, o)
    o = loss_opts("cross_entropy", o, CLS)
    constant_arg("cross_entropy", o.weight, "weight")
    local w, red, ig, ls = o.weight, o.reduction or "mean", o.ignore_index or -100, o.label_smoothing or 0
    if type(ig) == "number" and ig >= 0 and T.is_tensor(target) and target.dtype.is_floating_point then
      error("cross_entropy: ignore_index is not supported for floating point target", 2)
    end
    return C._nn_cross_entropy(input, target, w, red, ig, ls)
  end

  local NLL = { weight = true, ignore_index = true, reduction = true }
  function F.nll_loss(input, target, o)
    o = loss_opts("nll_loss", o, NLL)
    constant_arg("nll_loss", o.weight, "weight")
    local w, red, ig = o.weight, o.reduction or "mean", o.ignore_index or -100
    return (C._nn_nll_loss(input, target, w, red, ig))
  end
  -- the engine's errors at the caller's position, not at this file's
  F.nll_loss = AC.named("nll_loss", F.nll_loss)

  -- float input and target of different dtypes compute in the promoted one
  -- (PyTorch: mse_loss(float32, float64) is float64)
  local function promote(input, target)
    if T.is_tensor(input) and T.is_tensor(target) and input.dtype ~= target.dtype
        and input.dtype.is_floating_point and target.dtype.is_floating_point then
      local dt = T.promote_types(input.dtype, target.dtype)
      return input:to(dt), target:to(dt)
    end
    return input, target
  end
  local RED = { reduction = true }
  local function pointwise(name)
    local fwd = C["_nn_" .. name]
    F[name] = function(input, target, o)
      o = loss_opts(name, o, RED)
      input, target = promote(input, target)
      return fwd(input, target, o.reduction or "mean")
    end
  end
  pointwise("mse_loss")
  pointwise("l1_loss")

  -- the binary losses take a target of the input's size (PyTorch raises
  -- rather than broadcast an (N) input against an (N, 1) target)
  local function same_size(op, input, target)
    if T.is_tensor(input) and T.is_tensor(target) and input.shape ~= target.shape then
      error(string.format("%s: target size %s must be the same as input size %s", op,
        tostring(target.shape), tostring(input.shape)), 3)
    end
  end
  -- a weight (or pos_weight) broadcasts to the input's shape, never beyond
  -- it (PyTorch multiplies in place: "output with shape [3, 4] doesn't match
  -- the broadcast shape [2, 3, 4]"); a shape that does not broadcast at all
  -- is left to the engine's message
  local function no_growth(input, w)
    if not (T.is_tensor(input) and T.is_tensor(w)) then return end
    local n, m = input.ndim, w.ndim
    local grows = m > n
    for i = 0, math.min(n, m) - 1 do
      local a, b = input.shape[n - i], w.shape[m - i]
      if a ~= b and a ~= 1 and b ~= 1 then return end -- not broadcastable: the engine says so
      if a == 1 and b ~= 1 then grows = true end
    end
    if grows then
      local out = {}
      for i = 1, math.max(n, m) do
        local a = input.shape[n - math.max(n, m) + i] or 1
        local b = w.shape[m - math.max(n, m) + i] or 1
        out[i] = a == 1 and b or a
      end
      error(string.format("output with shape %s doesn't match the broadcast shape [%s]",
        tostring(input.shape):match("%b[]") or tostring(input.shape), table.concat(out, ", ")), 0)
    end
  end
  local BCE = { weight = true, reduction = true }
  function F.binary_cross_entropy(input, target, o)
    same_size("binary_cross_entropy", input, target)
    o = loss_opts("binary_cross_entropy", o, BCE)
    constant_arg("binary_cross_entropy", o.weight, "weight")
    local w, red = o.weight, o.reduction or "mean"
    local ok, e = pcall(no_growth, input, w)
    if not ok then error("binary_cross_entropy: " .. e, 2) end
    return C._nn_binary_cross_entropy(input, target, w, red)
  end

  local BCEL = { weight = true, reduction = true, pos_weight = true }
  function F.binary_cross_entropy_with_logits(input, target, o)
    same_size("binary_cross_entropy_with_logits", input, target)
    o = loss_opts("binary_cross_entropy_with_logits", o, BCEL)
    constant_arg("binary_cross_entropy_with_logits", o.weight, "weight")
    constant_arg("binary_cross_entropy_with_logits", o.pos_weight, "pos_weight")
    local w, pw, red = o.weight, o.pos_weight, o.reduction or "mean"
    local ok, e = pcall(no_growth, input, pw)
    if ok then ok, e = pcall(no_growth, input, w) end
    if not ok then error("binary_cross_entropy_with_logits: " .. e, 2) end
    input, target = promote(input, target)
    return C._nn_binary_cross_entropy_with_logits(input, target, w, pw, red)
  end

  return F
end
