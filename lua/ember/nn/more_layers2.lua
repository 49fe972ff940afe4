-- Pieces the second differential test against PyTorch 1.13 found absent
-- (docs/nn.md, "More layers, second round"), each a composite of ember's
-- differentiable ops with PyTorch 1.13's semantics: F.lp_pool1d/2d and
-- LPPool1d/2d, F.max_unpool1d/2d/3d and MaxUnpool1d/2d/3d (1-based indices, as
-- max_pool's), channel dropout (F.dropout1d/2d/3d, Dropout1d/2d/3d) and
-- alpha dropout (F.alpha_dropout, F.feature_alpha_dropout, AlphaDropout,
-- FeatureAlphaDropout).
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local is_opts, named, set = A.is_opts, A.named, A.set
  local fmt, unpack = string.format, table.unpack or unpack
  local pyfloat = require "ember.pyfloat"

  local function check_tensor(op, x, what)
    if not T.is_tensor(x) then error(fmt("%s: expected a tensor for %s, got %s", op, what or "input", type(x)), 3) end
  end
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 3) end
  -- a number, or n of them (a list of one repeats)
  -- a number or n of them (argcheck.lua), raised at the op's caller
  local function tuple(op, v, n, what) return A.tuple(op, v, n, what, 3) end
  local function repr(v)
    if type(v) == "table" then return "(" .. table.concat(v, ", ") .. (#v == 1 and ",)" or ")") end
    if type(v) == "number" then return pyfloat(v) end
    if v == nil then return "None" end
    return tostring(v)
  end
  local function int_repr(v)
    if type(v) == "table" then return "(" .. table.concat(v, ", ") .. (#v == 1 and ",)" or ")") end
    if v == nil then return "None" end
    return tostring(v)
  end

  -- -- lp_pool --------------------------------------------------------------------------
  -- PyTorch's: avg_pool of x^p (no padding), then (sign(out) relu(|out|) * kernel
  -- elements)^(1/p)
  local LP = set { "stride", "ceil_mode" }
  local function lp_pool(op, n, x, norm_type, kernel, stride, ceil_mode, ...)
    check_tensor(op, x)
    if is_opts(stride) and stride[1] == nil then
      nomore(op, 4, ceil_mode, ...)
      local o = check_opts(op, stride, LP)
      stride, ceil_mode = o.stride, o.ceil_mode
    else
      nomore(op, 5, ...)
    end
    if type(norm_type) ~= "number" then
      error(fmt("%s: expected a number for norm_type, got %s", op, tostring(norm_type)), 3)
    end
    if norm_type == 0 then
      -- torch 1.13: its 1.0 / norm_type raises ZeroDivisionError
      error(fmt("%s: norm_type must not be 0 (the result is a power 1 / norm_type), got %s", op, tostring(norm_type)), 3)
    end
    if kernel == nil then error(op .. ": kernel_size is required", 3) end
    local k = tuple(op, kernel, n, "kernel_size")
    local s = stride ~= nil and tuple(op, stride, n, "stride") or k
    local out
    if n == 1 then
      out = F.avg_pool1d(x:pow(norm_type), k[1], { stride = s[1], padding = 0, ceil_mode = ceil_mode or false })
    else
      out = F.avg_pool2d(x:pow(norm_type), k, { stride = s, padding = 0, ceil_mode = ceil_mode or false })
    end
    local count = n == 1 and k[1] or k[1] * k[2]
    return (out:sign() * out:abs():relu()):mul(count):pow(1 / norm_type)
  end
  function F.lp_pool1d(x, norm_type, kernel, ...) return lp_pool("lp_pool1d", 1, x, norm_type, kernel, ...) end
  function F.lp_pool2d(x, norm_type, kernel, ...) return lp_pool("lp_pool2d", 2, x, norm_type, kernel, ...) end
  F.lp_pool1d = named("lp_pool1d", F.lp_pool1d)
  F.lp_pool2d = named("lp_pool2d", F.lp_pool2d)

  local function lp_class(name, n)
    local M = Module:extend(name)
    function M:init(norm_type, kernel, o, ...)
      nomore(name, 3, ...)
      o = check_opts(name, o, LP)
      if type(norm_type) ~= "number" then error(fmt("%s: expected a number for norm_type, got %s", name, tostring(norm_type)), 3) end
      if kernel == nil then error(name .. ": kernel_size is required", 3) end
      self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel, o.stride, o.ceil_mode or false
    end
    local f = n == 1 and F.lp_pool1d or F.lp_pool2d
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      return f(x, self.norm_type, self.kernel_size, { stride = self.stride, ceil_mode = self.ceil_mode })
    end
    function M:extra_repr()
      local nt = self.norm_type
      return fmt("norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s", nt == math.floor(nt) and fmt("%d", nt) or repr(nt),
        int_repr(self.kernel_size), int_repr(self.stride), tostring(self.ceil_mode))
    end
    nn[name] = M
  end
  lp_class("LPPool1d", 1)
  lp_class("LPPool2d", 2)

  -- -- max_unpool -----------------------------------------------------------------------
  -- zeros of the output size with each input value written at its (1-based,
  -- flat in the spatial plane) index: one scatter, whose gradient w.r.t. the
  -- input is the gather of the output's gradient at the indices (PyTorch's
  -- max_unpool backward)
  local UNPOOL = set { "stride", "padding", "output_size" }
  local function unpool_size(op, x, k, s, p, size, n)
    local def = {}
    for d = 1, n do def[d] = (x.shape[x.ndim - n + d] - 1) * s[d] + k[d] - 2 * p[d] end
    if size == nil then return def end
    if type(size) == "number" then size = { size } end
    if type(size) == "table" and size.totable then size = size:totable() end
    if type(size) ~= "table" then error(fmt("%s: output_size must be a list of sizes, got %s", op, type(size)), 4) end
    if #size == n + 2 then size = { unpack(size, 3, n + 2) } end
    if #size ~= n then
      error(fmt("%s: output_size should be a sequence containing %d or %d elements, but it has a length of '%d'",
        op, n, n + 2, #size), 4)
    end
    for d = 1, n do
      local lo, hi = def[d] - s[d], def[d] + s[d]
      if not (type(size[d]) == "number" and lo < size[d] and size[d] < hi) then
        error(fmt('%s: invalid output_size "%s" (dim %d must be between %d and %d)', op, int_repr(size), d, lo, hi), 4)
      end
    end
    return size
  end
  local function max_unpool(op, n, x, indices, kernel, stride, padding, output_size, ...)
    check_tensor(op, x)
    check_tensor(op, indices, "indices")
    if is_opts(stride) and stride[1] == nil then
      nomore(op, 4, padding, output_size, ...)
      local o = check_opts(op, stride, UNPOOL)
      stride, padding, output_size = o.stride, o.padding, o.output_size
    else
      nomore(op, 6, ...)
    end
    if kernel == nil then error(op .. ": kernel_size is required", 3) end
    local k = tuple(op, kernel, n, "kernel_size")
    local s = stride ~= nil and tuple(op, stride, n, "stride") or k
    local p = tuple(op, padding or 0, n, "padding")
    if x.ndim ~= n + 1 and x.ndim ~= n + 2 then
      error(fmt("%s: expected a %dd or %dd input, got %dd", op, n + 1, n + 2, x.ndim), 3)
    end
    if indices.dtype ~= T.int64 then
      error(fmt("%s: expected indices of dtype int64, got %s", op, tostring(indices.dtype)), 3)
    end
    local same = indices.ndim == x.ndim
    for d = 1, x.ndim do if same and indices.shape[d] ~= x.shape[d] then same = false end end
    if not same then
      error(fmt("%s: expected indices of the input's shape %s, got %s", op, tostring(x.shape), tostring(indices.shape)), 3)
    end
    local size = unpool_size(op, x, k, s, p, output_size, n)
    local plane = 1
    for d = 1, n do plane = plane * size[d] end
    local lead = {}
    for d = 1, x.ndim - n do lead[d] = x.shape[d] end
    local m = #lead
    local fshape = { unpack(lead) }
    fshape[m + 1] = -1
    local flatx = x:reshape(fshape)
    local fidx = indices:reshape(fshape)
    if fidx:numel() > 0 and tostring(x.device) ~= "meta" then
      local lo, hi = fidx:min():item(), fidx:max():item()
      if lo < 1 or hi > plane then
        error(fmt("%s: Found an invalid max index: %d (output volumes are of size %s)", op, lo < 1 and lo or hi,
          table.concat(size, "x")), 3)
      end
    end
    local oshape = { unpack(lead) }
    oshape[m + 1] = plane
    local out = T.zeros(oshape, { dtype = x.dtype, device = x.device }):scatter(m + 1, fidx, flatx)
    local full = { unpack(lead) }
    for d = 1, n do full[m + d] = size[d] end
    return out:view(full)
  end
  function F.max_unpool1d(x, indices, kernel, ...) return max_unpool("max_unpool1d", 1, x, indices, kernel, ...) end
  function F.max_unpool2d(x, indices, kernel, ...) return max_unpool("max_unpool2d", 2, x, indices, kernel, ...) end
  function F.max_unpool3d(x, indices, kernel, ...) return max_unpool("max_unpool3d", 3, x, indices, kernel, ...) end
  F.max_unpool1d = named("max_unpool1d", F.max_unpool1d)
  F.max_unpool2d = named("max_unpool2d", F.max_unpool2d)
  F.max_unpool3d = named("max_unpool3d", F.max_unpool3d)

  local function unpool_class(name, n)
    local M = Module:extend(name)
    local allowed = set { "stride", "padding" }
    function M:init(kernel, o, ...)
      nomore(name, 2, ...)
      o = check_opts(name, o, allowed)
      if kernel == nil then error(name .. ": kernel_size is required", 3) end
      self.kernel_size = tuple(name, kernel, n, "kernel_size")
      self.stride = o.stride ~= nil and tuple(name, o.stride, n, "stride") or self.kernel_size
      self.padding = tuple(name, o.padding or 0, n, "padding")
    end
    local f = F["max_unpool" .. n .. "d"]
    function M:forward(x, indices, output_size, ...)
      nomore(name .. ".forward", 3, ...)
      if is_opts(output_size) and output_size[1] == nil and next(output_size) ~= nil then
        local k = next(output_size)
        error(fmt("%s.forward: unknown option '%s' (output_size is a list of sizes)", name, tostring(k)), 2)
      end
      return f(x, indices, self.kernel_size, { stride = self.stride, padding = self.padding, output_size = output_size })
    end
    function M:extra_repr()
      local one = function(t) return n == 1 and "(" .. tostring(t[1]) .. ",)" or int_repr(t) end -- PyTorch's _single: (2,)
      return fmt("kernel_size=%s, stride=%s, padding=%s", one(self.kernel_size), one(self.stride), one(self.padding))
    end
    nn[name] = M
  end
  unpool_class("MaxUnpool1d", 1)
  unpool_class("MaxUnpool2d", 2)
  unpool_class("MaxUnpool3d", 3)

  -- -- channel and alpha dropout ------------------------------------------------------------
  -- PyTorch's _dropout_impl: p = 0 or evaluation gives the input itself;
  -- p = 1 multiplies by 0; otherwise a Bernoulli(1 - p) mask, one per
  -- element or (feature forms) one per (sample, channel), broadcast over the
  -- remaining dims, with 1 / (1 - p) scaling, or, for alpha dropout,
  -- x * mask * a + (mask - 1) * alpha * a + alpha * a * p with alpha = 1.7580993408473766
  -- and a = 1 / sqrt((alpha^2 p + 1)(1 - p)), which keeps SELU's mean and variance
  local ALPHA = 1.7580993408473766
  local DROPOPTS = set { "p", "training", "inplace" }
  local function drop_args(op, p, training, inplace, def_training, ...)
    if is_opts(p) then
      nomore(op, 2, training, inplace, ...)
      local o = check_opts(op, p, DROPOPTS)
      p, training, inplace = o.p, o.training, o.inplace
    else
      nomore(op, 4, ...)
    end
    if p == nil then p = 0.5 end
    if type(p) ~= "number" then error(fmt("%s: expected a number for p, got %s", op, tostring(p)), 4) end
    if not (p >= 0 and p <= 1) then  -- NaN too
      error(fmt("%s: dropout probability has to be between 0 and 1, but got %s", op, pyfloat(p)), 4)
    end
    if training == nil then training = def_training end
    return p, training, inplace
  end
  local function apply(op, x, p, training, inplace, feature, alpha)
    if p == 0 or not training or x:numel() == 0 then return x end
    if feature and x.ndim < 2 then
      error(fmt("%s: Feature dropout requires at least 2 dimensions in the input", op), 4)
    end
    local y
    if p == 1 then
      y = x * T.zeros({}, { dtype = x.dtype, device = x.device })
    else
      local shape = x.shape:totable()
      if feature then for d = 3, #shape do shape[d] = 1 end end
      local mask = T.rand(shape, { dtype = x.dtype, device = x.device }):lt(1 - p):to(x.dtype)
      if alpha then
        local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
        y = x * (mask * a) + ((mask - 1) * (ALPHA * a) + ALPHA * a * p)
      else
        y = x * (mask / (1 - p))
      end
    end
    if inplace then return x:copy_(y) end
    return y
  end
  -- dims: the batched rank (nil: any), the unbatched rank that gets a batch
  -- dim for the draw (PyTorch's dropout1d and dropout3d; its dropout2d takes a
  -- 3-d input as (N, C, L), as 1.13 does)
  local function channel_dropout(op, batched, unbatched_rank, def_training, alpha, feature)
    return named(op, function(x, p, training, inplace, ...)
      check_tensor(op, x)
      p, training, inplace = drop_args(op, p, training, inplace, def_training, ...)
      if op == "dropout1d" and x.ndim ~= 2 and x.ndim ~= 3 then
        error(fmt("dropout1d: Expected 2D or 3D input, but received a %dD input. Note that dropout1d exists to "
          .. "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an "
          .. "optional batch dimension (i.e. 2D or 3D inputs).", x.ndim), 2)
      end
      if p == 0 or not training or x:numel() == 0 then return x end
      if unbatched_rank and x.ndim == unbatched_rank then
        local y = apply(op, x:unsqueeze(1), p, training, false, feature, alpha)
        y = rawequal(y, x) and x or y:squeeze(1)
        if inplace and not rawequal(y, x) then return x:copy_(y) end
        return y
      end
      return apply(op, x, p, training, inplace, feature, alpha)
    end)
  end
  F.dropout1d = channel_dropout("dropout1d", 3, 2, true, false, true)
  F.dropout2d = channel_dropout("dropout2d", 4, nil, true, false, true)
  F.dropout3d = channel_dropout("dropout3d", 5, 4, true, false, true)
  F.alpha_dropout = channel_dropout("alpha_dropout", nil, nil, false, true, false)
  F.feature_alpha_dropout = channel_dropout("feature_alpha_dropout", nil, nil, false, true, true)

  local function dropout_class(name, f)
    local M = Module:extend(name)
    local allowed = set { "p", "inplace" }
    function M:init(p, inplace, ...)
      nomore(name, 2, ...)
      if is_opts(p) then
        nomore(name, 1, inplace, ...)
        local o = check_opts(name, p, allowed)
        p, inplace = o.p, o.inplace
      end
      if p == nil then p = 0.5 end
      if type(p) ~= "number" or not (p >= 0 and p <= 1) then
        error(fmt("%s: dropout probability has to be between 0 and 1, but got %s", name, tostring(p)), 3)
      end
      self.p, self.inplace = p, inplace or false
    end
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      return f(x, self.p, self.training, self.inplace)
    end
    function M:extra_repr() return fmt("p=%s, inplace=%s", pyfloat(self.p), tostring(self.inplace)) end
    nn[name] = M
  end
  dropout_class("Dropout1d", F.dropout1d)
  dropout_class("Dropout2d", F.dropout2d)
  dropout_class("Dropout3d", F.dropout3d)
  dropout_class("AlphaDropout", F.alpha_dropout)
  dropout_class("FeatureAlphaDropout", F.feature_alpha_dropout)
end
