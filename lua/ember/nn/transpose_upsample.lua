-- Transposed convolutions and resizing (issue 18, item 4):
-- F.conv_transpose1d/2d, nn.ConvTranspose1d/2d, F.interpolate (nearest,
-- linear, bilinear; align_corners) and nn.Upsample (docs/nn.md).
--
-- A transposed convolution is the gradient of a convolution w.r.t. its
-- input: conv_transpose2d(x, w) is the engine's conv2d_backward_input with
-- x as the output gradient (PyTorch computes it the same way), a recorded,
-- twice-differentiable engine op, so gradients w.r.t. x and w come from its
-- formula. interpolate is one index_select per resized dim (nearest) or two
-- and a lerp (linear), with PyTorch's source coordinates; the gradient
-- (index_select's index_add) sums over every output an input feeds, as
-- PyTorch's upsample backward kernels.
return function(T, C, nn)
  local F, Module, init = nn.functional, nn.Module, nn.init
  local unpack = table.unpack or unpack
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local is_opts, named, set = A.is_opts, A.named, A.set
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 2) end

  -- a number or n of them (argcheck.lua), raised at the op's caller
  local function tuple(op, v, n, what) return A.tuple(op, v, n, what, 3) end

  -- -- conv_transpose ---------------------------------------------------------------
  local CT = set { "stride", "padding", "output_padding", "groups", "dilation" }

  -- PyTorch's positional order: (x, w, b, stride, padding, output_padding, groups, dilation)
  local function ct_args(op, args, n)
    local o
    if is_opts(args[1]) then
      o = check_opts(op, args[1], CT)
    else
      o = { stride = args[1], padding = args[2], output_padding = args[3], groups = args[4], dilation = args[5] }
    end
    return tuple(op, o.stride or 1, n, "stride"), tuple(op, o.padding or 0, n, "padding"),
      tuple(op, o.output_padding or 0, n, "output_padding"), o.groups or 1, tuple(op, o.dilation or 1, n, "dilation")
  end

  -- x [N, Cin, H, W], w [Cin, Cout/groups, kH, kW] (all 4-d)
  local function conv_transpose(op, x, w, b, s, p, op_, g, d)
    local N, Cin, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    if (x.dtype == T.float16 or w.dtype == T.float16) and x.device.type == "cpu" then
      -- torch 1.13: "slow_conv_transpose2d_out_cpu" not implemented for 'Half' (bfloat16 is taken)
      error(string.format("%s: float16 input is not supported on the CPU (as torch 1.13); bfloat16, float32 and "
        .. "float64 are", op), 3)
    end
    if w:numel() == 0 then
      -- torch 1.13: "non-empty 2D or 4D weight tensor expected" (0 in or out channels, an empty kernel)
      error(string.format("%s: expected a non-empty weight, got one of size %s", op,
        A.fmt_shape(A.shape_of(w))), 3)
    end
    if w.shape[1] ~= Cin then
      error(string.format("%s: expected the weight's first dim (%d) to match the input's channels (%d)", op,
        w.shape[1], Cin), 3)
    end
    if type(g) ~= "number" or g < 1 then error(op .. ": non-positive groups is not supported", 3) end
    if Cin % g ~= 0 then
      error(string.format("%s: the input's channels (%d) must be divisible by groups (%d)", op, Cin, g), 3)
    end
    for i = 1, 2 do
      if op_[i] < 0 then error(op .. ": negative output_padding is not supported", 3) end
    end
    local out = { N, w.shape[2] * g }
    local sizes = { H, W }
    -- an output_padding of stride or more (allowed below the dilation) reaches
    -- past what a forward conv's input gradient gives: along such a dim the
    -- full transposed conv (padding 0), then its first `padding` rows dropped
    -- and cut or zero-filled to the output size (the rows past the full
    -- output are zeros, bias added after, as PyTorch's col2im gives)
    local pe, crop, any_extra = { p[1], p[2] }, { 0, 0, 0, 0 }, false
    for i = 1, 2 do
      if op_[i] >= s[i] and op_[i] >= d[i] then
        error(string.format("%s: output padding must be smaller than either stride or dilation, but got "
          .. "output_padding=%d, stride=%d, dilation=%d", op, op_[i], s[i], d[i]), 3)
      end
      local full = (sizes[i] - 1) * s[i] + d[i] * (w.shape[i + 2] - 1) + 1
      local o = full - 2 * p[i] + op_[i]
      if o <= 0 then
        error(string.format("%s: the output size %d is too small (input %d, kernel %d, stride %d, padding %d)",
          op, o, sizes[i], w.shape[i + 2], s[i], p[i]), 3)
      end
      out[i + 2] = o
      if op_[i] >= s[i] then
        any_extra, pe[i], out[i + 2] = true, 0, full
        crop[5 - 2 * i], crop[6 - 2 * i] = -p[i], o + p[i] - full
      end
    end
    local y = C._nn_conv2d_backward_input(x, w, out, s[1], s[2], pe[1], pe[2], d[1], d[2], g)
    if any_extra then y = F.pad(y, crop) end
    if b then
      if b.ndim ~= 1 or b:numel() ~= out[2] then
        error(string.format("%s: expected a bias of %d elements, got %d", op, out[2], b:numel()), 3)
      end
      y = y + b:view(1, -1, 1, 1)
    end
    return y
  end

  function F.conv_transpose2d(x, w, b, ...)
    local op = "conv_transpose2d"
    if is_opts(b) then return F.conv_transpose2d(x, w, nil, b, ...) end -- (x, w, {options}): no bias
    if not T.is_tensor(x) or not T.is_tensor(w) then error(op .. ": expected tensor input and weight", 2) end
    if b ~= nil and not T.is_tensor(b) then error(op .. ": bias must be a tensor or nil (pass options after it)", 2) end
    local s, p, opad, g, d = ct_args(op, { ... }, 2)
    if w.ndim ~= 4 then error(string.format("%s: expected a 4-d weight, got %d-d", op, w.ndim), 2) end
    local unbatched = x.ndim == 3
    if unbatched then x = x:unsqueeze(1) end
    if x.ndim ~= 4 then
      error(string.format("%s: expected a 3-d (unbatched) or 4-d (batched) input, got %d-d", op, x.ndim), 2)
    end
    local y = conv_transpose(op, x, w, b, s, p, opad, g, d)
    return unbatched and y:squeeze(1) or y
  end

  function F.conv_transpose1d(x, w, b, ...)
    local op = "conv_transpose1d"
    if is_opts(b) then return F.conv_transpose1d(x, w, nil, b, ...) end
    if not T.is_tensor(x) or not T.is_tensor(w) then error(op .. ": expected tensor input and weight", 2) end
    if b ~= nil and not T.is_tensor(b) then error(op .. ": bias must be a tensor or nil (pass options after it)", 2) end
    local s, p, opad, g, d = ct_args(op, { ... }, 1)
    if w.ndim ~= 3 then error(string.format("%s: expected a 3-d weight, got %d-d", op, w.ndim), 2) end
    local unbatched = x.ndim == 2
    if unbatched then x = x:unsqueeze(1) end
    if x.ndim ~= 3 then
      error(string.format("%s: expected a 2-d (unbatched) or 3-d (batched) input, got %d-d", op, x.ndim), 2)
    end
    -- [N, C, 1, L] and [Cin, Cout/groups, 1, k]: a transposed conv over a height of 1
    local y = conv_transpose(op, x:unsqueeze(3), w:unsqueeze(3), b, { 1, s[1] }, { 0, p[1] }, { 0, opad[1] }, g,
      { 1, d[1] }):squeeze(3)
    return unbatched and y:squeeze(1) or y
  end

  -- -- interpolate --------------------------------------------------------------------
  local MODES = { nearest = 1, ["nearest-exact"] = 1, linear = 1, bilinear = 2, bicubic = 2, trilinear = 3, area = 1 }
  local ANY_RANK = { nearest = true, ["nearest-exact"] = true, area = true }
  local INTERP = set { "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias" }

  -- PyTorch's source coordinates along one dim (in -> out), computed in the
  -- input's dtype as its kernels do (float32 for float32): scale is in / out,
  -- or 1 / scale_factor when that was given and not recomputed.
  -- PyTorch 1.13's channels-last 2-d and 3-d nearest kernels (nearest_idx)
  -- copy when the size is unchanged and halve the index when it doubles,
  -- whatever the scale_factor; its generic kernel (1-d, and 2-d/3-d input
  -- in the usual channels-first layout) always takes floor(dst * scale).
  local function nearest_index(n_in, n_out, scale, dev, shortcuts)
    if shortcuts and n_out == n_in then return T.arange(1, n_in + 1, { device = dev }) end
    if shortcuts and n_out == 2 * n_in then return T.arange(n_out, { device = dev }):div(2, { rounding_mode = "floor" }) + 1 end
    local dst = T.arange(n_out, { dtype = T.float32, device = dev })
    local i = (dst * T.full({}, scale, { dtype = T.float32, device = dev })):floor():to(T.int64)
    return i:clamp_max(n_in - 1) + 1
  end

  -- nearest-exact: floor((dst + 0.5) * scale) in float32 (PyTorch's
  -- nearest_neighbor_exact_compute_source_index), no shortcuts
  local function nearest_exact_index(n_in, n_out, scale, dev)
    local dst = T.arange(n_out, { dtype = T.float32, device = dev }) + 0.5
    local i = (dst * T.full({}, scale, { dtype = T.float32, device = dev })):floor():to(T.int64)
    return i:clamp_max(n_in - 1) + 1
  end

  -- bicubic along one dim: PyTorch's cubic convolution (A = -0.75) over the
  -- four inputs around the source coordinate (align_corners: dst * scale;
  -- else (dst + 0.5) * scale - 0.5, not clamped), their indices clamped to
  -- the border (upsample_get_value_bounded)
  local CUBIC_A = -0.75
  local function cubic_along(x, dim, n_in, n_out, scale, align)
    local dev, dt = x.device, x.dtype
    local dst = T.arange(n_out, { dtype = dt, device = dev })
    local src = align and dst * scale or (dst + 0.5) * scale - 0.5
    local fl = src:floor()
    local t = src - fl
    local base = fl:to(T.int64)
    local A = CUBIC_A
    local function cc1(v) return ((v * (A + 2)) - (A + 3)) * v * v + 1 end
    local function cc2(v) return ((v * A - 5 * A) * v + 8 * A) * v - 4 * A end
    local ws = { cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t) }
    local shape = {}
    for k = 1, x.ndim do shape[k] = 1 end
    shape[dim] = n_out
    local y
    for k = 1, 4 do
      local idx = (base + (k - 2)):clamp(0, n_in - 1) + 1
      local term = x:index_select(dim, idx) * ws[k]:view(shape)
      y = y and y + term or term
    end
    return y
  end

  -- torch's is_contiguous(memory_format=channels_last[_3d]) for a 4-d/5-d
  -- input: strides of C, W, H[, D], N in that order (size-1 dims ignored), so
  -- any contiguous input with one channel
  local function channels_last(x)
    if x.ndim < 4 then return false end
    local sz, st = x:size(), x:stride()
    local order = { 2 }
    for d = x.ndim, 3, -1 do order[#order + 1] = d end
    order[#order + 1] = 1
    local expected = 1
    for _, d in ipairs(order) do
      if sz[d] ~= 1 then
        if st[d] ~= expected then return false end
        expected = expected * sz[d]
      end
    end
    return true
  end

  local function linear_along(x, dim, n_in, n_out, scale, align)
    local dev, dt = x.device, x.dtype
    local dst = T.arange(n_out, { dtype = dt, device = dev })
    local src
    if align then
      src = dst * (n_out > 1 and (n_in - 1) / (n_out - 1) or 0)
    else
      src = ((dst + 0.5) * scale - 0.5):clamp_min(0)
    end
    local lo = src:to(T.int64) -- truncation: src >= 0
    local step = lo:lt(n_in - 1):to(T.int64)
    local l1 = src - lo:to(dt)
    local shape = {}
    for k = 1, x.ndim do shape[k] = 1 end
    shape[dim] = n_out
    local a, b = x:index_select(dim, lo + 1), x:index_select(dim, lo + step + 1)
    return a * (1 - l1):view(shape) + b * l1:view(shape)
  end

  -- PyTorch's antialiased resampling (_upsample_bilinear2d_aa and
  -- _upsample_bicubic2d_aa, after PIL): output i averages the inputs under
  -- the filter (triangle, or Keys' cubic with a = -0.5) centred at
  -- scale (i + 1/2) and stretched by the scale when downsampling, the
  -- weights normalised to sum 1; as an n_out x n_in matrix applied along
  -- one dim (so differentiable as a matmul)
  local function aa_filter(cubic, v)
    if v < 0 then v = -v end
    if not cubic then return v < 1 and 1 - v or 0 end
    local a = -0.5
    if v < 1 then return ((a + 2) * v - (a + 3)) * v * v + 1 end
    if v < 2 then return (((v - 5) * v + 8) * v - 4) * a end
    return 0
  end
  local function trunc(v) return v >= 0 and math.floor(v) or math.ceil(v) end
  -- Only the taps of each output's support are read (as torch's kernel): a
  -- NaN or infinity elsewhere along the dim does not reach it.
  local function aa_along(y, dim, n_in, n_out, scale, cubic)
    local interp = cubic and 4 or 2
    local support = scale >= 1 and interp * 0.5 * scale or interp * 0.5
    local invscale = scale >= 1 and 1 / scale or 1
    local xmins, xsizes, ws, maxsize = {}, {}, {}, 0
    for i = 0, n_out - 1 do
      local center = scale * (i + 0.5)
      local xmin = math.max(trunc(center - support + 0.5), 0)
      local xsize = math.max(math.min(trunc(center + support + 0.5), n_in) - xmin, 0)
      local w, total = {}, 0
      for j = 0, xsize - 1 do
        w[j + 1] = aa_filter(cubic, (j + xmin - center + 0.5) * invscale)
        total = total + w[j + 1]
      end
      if total ~= 0 then
        for j = 1, xsize do w[j] = w[j] / total end
      end
      xmins[i + 1], xsizes[i + 1], ws[i + 1] = xmin, xsize, w
      maxsize = math.max(maxsize, xsize)
    end
    local shape = {}
    for k = 1, y.ndim do shape[k] = 1 end
    shape[dim] = n_out
    local dev, out = y.device, nil
    for j = 1, maxsize do
      local idx, wt, valid, partial = {}, {}, {}, false
      for i = 1, n_out do
        local inside = j <= xsizes[i]
        idx[i] = (inside and xmins[i] + j - 1 or math.min(xmins[i], n_in - 1)) + 1
        wt[i] = inside and ws[i][j] or 0
        valid[i] = inside
        if not inside then partial = true end
      end
      local term = y:index_select(dim, T.tensor(idx, { dtype = T.int64, device = dev }))
        * T.tensor(wt, { dtype = y.dtype, device = dev }):view(shape)
      if partial then
        term = T.where(T.tensor(valid, { dtype = T.bool, device = dev }):view(shape), term,
          T.zeros({}, { dtype = y.dtype, device = dev }))
      end
      out = out and out + term or term
    end
    return out -- every support holds at least one tap (support >= 1, center < n_in)
  end

  function F.interpolate(x, o, ...)
    local op = "interpolate"
    -- PyTorch's positional form: size, scale_factor, mode, align_corners
    if type(o) == "number" or (o == nil and select("#", ...) > 0)
       or (type(o) == "table" and not T.is_tensor(o) and o[1] ~= nil) then
      local scale, mode, align = ...
      nomore(op, 5, select(4, ...))
      o = { size = o, scale_factor = scale, mode = mode, align_corners = align }
    else
      nomore(op, 2, ...)
    end
    if not T.is_tensor(x) then error(op .. ": expected a tensor input, got " .. type(x), 2) end
    o = check_opts(op, o, INTERP)
    local mode = o.mode or "nearest"
    local nd = MODES[mode]
    if not nd then
      error(string.format("%s: mode %s is not supported (nearest, nearest-exact, linear, bilinear, bicubic, "
        .. "trilinear, area)", op, tostring(mode)), 2)
    end
    local maxnd = 3
    if ANY_RANK[mode] then nd = x.ndim - 2 end
    if x.ndim - 2 ~= nd or nd < 1 or nd > maxnd then
      error(string.format("%s: mode %s expects a %s input (N, C, ...), got %d-d", op, mode,
        ANY_RANK[mode] and "3-d, 4-d or 5-d" or tostring(nd + 2) .. "-d",
        x.ndim), 2)
    end
    -- torch 1.13 has integer kernels for nearest only (uint8); the
    -- interpolating modes would promote to float (antialias: truncated weights)
    if mode ~= "nearest" and mode ~= "nearest-exact" and not x.dtype.is_floating_point then
      error(string.format("%s: mode %s expects a floating point input, got %s", op, mode, tostring(x.dtype)), 2)
    end
    if o.align_corners ~= nil and ANY_RANK[mode] then
      error(op .. ": align_corners option can only be set with the interpolating modes: linear | bilinear | "
        .. "bicubic | trilinear", 2)
    end
    if (o.size == nil) == (o.scale_factor == nil) then
      error(op .. ": either size or scale_factor should be defined (exactly one)", 2)
    end
    if o.size ~= nil and o.recompute_scale_factor then
      error(op .. ": recompute_scale_factor is not meaningful with an explicit size", 2)
    end
    if o.antialias and mode ~= "bilinear" and mode ~= "bicubic" then
      error(string.format("%s: anti-alias option is only supported for bilinear and bicubic modes, got %s", op, mode), 2)
    end
    local sizes, scales = {}, {}
    -- torch refuses a list of another length than the spatial dims (a number is broadcast)
    for _, k in ipairs { "size", "scale_factor" } do
      local v = o[k]
      if type(v) == "table" and not T.is_tensor(v) and #v ~= nd then
        local ins = {}
        for i = 1, nd do ins[i] = x.shape[2 + i] end
        error(string.format("%s: Input and %s must have the same number of spatial dimensions, but got input "
          .. "with spatial dimensions of [%s] and %s of %d value%s", op, k == "size" and "output" or "scale_factor",
          table.concat(ins, ", "), k == "size" and "output size" or "scale_factor", #v, #v == 1 and "" or "s"), 2)
      end
    end
    for i = 1, nd do
      local n_in = x.shape[2 + i]
      if o.size ~= nil then
        sizes[i] = tuple(op, o.size, nd, "size")[i]
        if sizes[i] % 1 ~= 0 then
          error(string.format("%s: expected size to be integers, got %s", op, tostring(sizes[i])), 2)
        end
        scales[i] = n_in / sizes[i]
      else
        local sf = tuple(op, o.scale_factor, nd, "scale_factor")[i]
        if type(sf) ~= "number" or sf ~= sf or sf == math.huge or sf == -math.huge then
          error(string.format("%s: expected scale_factor to be finite numbers, got %s", op, tostring(sf)), 2)
        end
        sizes[i] = math.floor(n_in * sf)
        scales[i] = o.recompute_scale_factor and n_in / sizes[i] or 1 / sf
      end
      if sizes[i] < 1 or n_in < 1 then
        error(string.format("%s: input and output sizes should be greater than 0, but got input size %d and "
          .. "output size %d along dim %d", op, n_in, sizes[i], 2 + i), 2)
      end
    end
    if mode == "area" then -- PyTorch's: adaptive average pooling to the output size
      if nd == 1 then return F.adaptive_avg_pool1d(x, sizes[1]) end
      if nd == 2 then return F.adaptive_avg_pool2d(x, { sizes[1], sizes[2] }) end
      return F.adaptive_avg_pool3d(x, { sizes[1], sizes[2], sizes[3] })
    end
    local y = x
    local shortcuts = mode == "nearest" and channels_last(x)
    for i = 1, nd do
      local dim, n_in = 2 + i, x.shape[2 + i]
      if o.antialias then
        local sc = scales[i]
        if o.align_corners then sc = sizes[i] > 1 and (n_in - 1) / (sizes[i] - 1) or 0 end
        y = aa_along(y, dim, n_in, sizes[i], sc, mode == "bicubic")
      elseif mode == "nearest" then
        y = y:index_select(dim, nearest_index(n_in, sizes[i], scales[i], x.device, shortcuts))
      elseif mode == "nearest-exact" then
        y = y:index_select(dim, nearest_exact_index(n_in, sizes[i], scales[i], x.device))
      elseif mode == "bicubic" then
        -- no unchanged-size shortcut (PyTorch 1.13's bicubic kernel has none)
        local sc = scales[i]
        if o.align_corners then sc = sizes[i] > 1 and (n_in - 1) / (sizes[i] - 1) or 0 end
        y = cubic_along(y, dim, n_in, sizes[i], sc, o.align_corners or false)
      elseif sizes[i] == n_in then
        -- PyTorch's linear kernels copy a dim whose size is unchanged
        -- (compute_source_index_and_lambda), whatever the scale_factor
      else
        y = linear_along(y, dim, n_in, sizes[i], scales[i], o.align_corners or false)
      end
    end
    return y
  end

  F.conv_transpose1d = named("conv_transpose1d", F.conv_transpose1d)
  F.conv_transpose2d = named("conv_transpose2d", F.conv_transpose2d)
  F.interpolate = named("interpolate", F.interpolate)
  F.upsample = named("upsample", F.interpolate)

  -- -- modules --------------------------------------------------------------------------
  local function fmt(v)
    if type(v) == "table" then return "(" .. table.concat(v, ", ") .. (#v == 1 and ",)" or ")") end
    return tostring(v)
  end

  local function conv_transpose_class(name, n)
    local M = Module:extend(name)
    local allowed = set { "stride", "padding", "output_padding", "groups", "bias", "dilation", "dtype",
      "padding_mode" }
    function M:init(cin, cout, kernel, o)
      if o ~= nil and not is_opts(o) then error(name .. ": pass the options in a table", 3) end
      o = o or {}
      for k in pairs(o) do
        if not allowed[k] then error(string.format("%s: unknown option '%s'", name, tostring(k)), 3) end
      end
      -- torch's padding_mode: "zeros" (the default) only
      if o.padding_mode ~= nil and o.padding_mode ~= "zeros" then
        error(string.format("%s: Only 'zeros' padding mode is supported for %s, got padding_mode='%s'", name,
          name, tostring(o.padding_mode)), 3)
      end
      local groups = o.groups or 1
      if type(groups) ~= "number" or groups < 1 or groups % 1 ~= 0 then
        error(string.format("%s: groups must be a positive integer, got %s", name, tostring(groups)), 3)
      end
      if cin % groups ~= 0 or cout % groups ~= 0 then
        error(string.format("%s: in_channels and out_channels must be divisible by groups", name), 3)
      end
      self.in_channels, self.out_channels, self.groups = cin, cout, groups
      self.kernel_size = tuple(name, kernel, n, "kernel_size")
      self.stride = tuple(name, o.stride or 1, n, "stride")
      self.padding = tuple(name, o.padding or 0, n, "padding")
      self.output_padding = tuple(name, o.output_padding or 0, n, "output_padding")
      self.dilation = tuple(name, o.dilation or 1, n, "dilation")
      local dt = o.dtype or T.get_default_dtype()
      local shape = { cin, cout / groups }
      for i = 1, n do shape[i + 2] = self.kernel_size[i] end
      local w = T.empty(shape, { dtype = dt })
      init.kaiming_uniform_(w, math.sqrt(5)) -- PyTorch's fan_in: weight.size(2) * kernel
      self.weight = w:requires_grad_(true)
      if o.bias ~= false then
        local fan_in = (cout / groups)
        for i = 1, n do fan_in = fan_in * self.kernel_size[i] end
        local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
        self.bias = init.uniform_(T.empty({ cout }, { dtype = dt }), -bound, bound):requires_grad_(true)
      end
    end
    -- PyTorch's _output_padding: the output_padding that gives output_size
    -- (the spatial sizes, or with the batch / channel dims in front)
    local function output_padding(self, x, size)
      if size == nil then return self.output_padding end
      if not T.is_tensor(x) then error(name .. ".forward: expected a tensor input, got " .. type(x), 4) end
      if type(size) == "number" then size = { size } end
      if type(size) == "table" and size.totable then size = size:totable() end
      if type(size) == "table" then
        for k in pairs(size) do
          if type(k) ~= "number" then
            error(string.format("%s.forward: unknown option '%s' (output_size is a list of sizes)", name,
              tostring(k)), 4)
          end
        end
      end
      if type(size) ~= "table" then
        error(string.format("%s: output_size must be a list of sizes, got %s", name, type(size)), 4)
      end
      local non = x.ndim == n + 2 and 2 or 1
      if #size == non + n then size = { unpack(size, non + 1, non + n) } end
      if #size ~= n then
        error(string.format("%s: for %dD input, output_size must have %d or %d elements (got %d)", name, x.ndim,
          n, non + n, #size), 4)
      end
      local mins, maxs, res = {}, {}, {}
      for d = 1, n do
        mins[d] = (x.shape[non + d] - 1) * self.stride[d] - 2 * self.padding[d]
          + self.dilation[d] * (self.kernel_size[d] - 1) + 1
        maxs[d] = mins[d] + self.stride[d] - 1
      end
      local ins = {}
      for d = 1, n do ins[d] = x.shape[non + d] end
      for d = 1, n do
        if type(size[d]) ~= "number" or size[d] < mins[d] or size[d] > maxs[d] then
          error(string.format("%s: requested an output size of %s, but valid sizes range from %s to %s (for an "
            .. "input of %s)", name, fmt(size), fmt(mins), fmt(maxs), fmt(ins)), 4)
        end
        res[d] = size[d] - mins[d]
      end
      return res
    end
    function M:forward(x, output_size, ...)
      nomore(name .. ".forward", 2, ...)
      local f = F["conv_transpose" .. n .. "d"] -- conv_transpose3d: nn/layers3d.lua
      local one = function(t) return n == 1 and t[1] or t end
      return f(x, self.weight, self.bias, { stride = one(self.stride), padding = one(self.padding),
        output_padding = one(output_padding(self, x, output_size)), groups = self.groups,
        dilation = one(self.dilation) })
    end
    function M:extra_repr()
      local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
        fmt(self.kernel_size), fmt(self.stride))
      local zero = function(t) for _, v in ipairs(t) do if v ~= 0 then return false end end return true end
      local ones = function(t) for _, v in ipairs(t) do if v ~= 1 then return false end end return true end
      if not zero(self.padding) then s = s .. ", padding=" .. fmt(self.padding) end
      if not zero(self.output_padding) then s = s .. ", output_padding=" .. fmt(self.output_padding) end
      if not ones(self.dilation) then s = s .. ", dilation=" .. fmt(self.dilation) end
      if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
      if self.bias == nil then s = s .. ", bias=false" end
      return s
    end
    nn[name] = M
  end
  conv_transpose_class("ConvTranspose1d", 1)
  conv_transpose_class("ConvTranspose2d", 2)
  conv_transpose_class("ConvTranspose3d", 3)

  local Upsample = Module:extend("Upsample")
  local UP = set { "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor" }
  function Upsample:init(o, ...)
    -- PyTorch's positional form: size, scale_factor, mode, align_corners,
    -- recompute_scale_factor (a number or a list first is a size)
    if type(o) == "number" or (o == nil and select("#", ...) > 0)
       or (type(o) == "table" and not T.is_tensor(o) and o[1] ~= nil) then
      local scale, mode, align, rsf = ...
      nomore("Upsample", 5, select(5, ...))
      o = { size = o, scale_factor = scale, mode = mode, align_corners = align, recompute_scale_factor = rsf }
    else
      nomore("Upsample", 1, ...)
    end
    if o ~= nil and not is_opts(o) then error("Upsample: pass the options in a table", 3) end
    o = o or {}
    for k in pairs(o) do
      if not UP[k] then error(string.format("Upsample: unknown option '%s'", tostring(k)), 3) end
    end
    self.size, self.scale_factor, self.mode = o.size, o.scale_factor, o.mode or "nearest"
    self.align_corners, self.recompute_scale_factor = o.align_corners, o.recompute_scale_factor
  end
  function Upsample:forward(x, ...)
    nomore("Upsample.forward", 1, ...)
    return F.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
      align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor })
  end
  function Upsample:extra_repr()
    local pf = require "ember.pyfloat"
    local s
    if self.scale_factor ~= nil then
      local sf = self.scale_factor
      if type(sf) == "table" then -- torch stores a tuple of floats: (2.0, 3.0)
        local f = {}
        for i = 1, #sf do f[i] = pf(sf[i]) end
        sf = fmt(f)
      else
        sf = pf(sf)
      end
      s = "scale_factor=" .. sf
    else
      s = "size=" .. fmt(self.size)
    end
    return s .. ", mode=" .. self.mode -- torch's text: mode=bilinear, no quotes
  end
  nn.Upsample = Upsample
end
