-- More of torch.nn's everyday pieces (docs/nn.md, "More layers"), each a
-- composite of ember's differentiable ops with PyTorch 1.13's semantics:
-- F.rrelu and RReLU (hardshrink, softshrink and threshold share
-- nn/activations.lua's act), Softmin and Softmax2d; pixel_shuffle/pixel_unshuffle; unfold (im2col) and fold
-- (col2im); the padding modules; CosineSimilarity and PairwiseDistance;
-- bilinear and Bilinear; soft_margin_loss, hinge_embedding_loss,
-- multilabel_soft_margin_loss and their modules; local_response_norm.
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore, positional = require("ember.args").nomore, require("ember.args").positional
  local is_opts, named, set = A.is_opts, A.named, A.set
  local fmt, unpack = string.format, table.unpack or unpack
  local fmtnum = require "ember.pyfloat"

  local function check_tensor(op, x, what)
    if not T.is_tensor(x) then error(fmt("%s: expected a tensor for %s, got %s", op, what or "input", type(x)), 3) end
  end
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 3) end
  local function num(op, v, what)
    if type(v) ~= "number" then error(fmt("%s: expected a number for %s, got %s", op, what, tostring(v)), 3) end
    return v
  end
  -- positional values for keys, or one options table (plus inplace)
  local function params(op, keys, defs, args, n, extra)
    local vals = {}
    local allowed = set(keys)
    for _, k in ipairs(extra or {}) do allowed[k] = true end
    local o
    if n >= 1 and is_opts(args[1]) then
      o = check_opts(op, args[1], allowed)
      for i, k in ipairs(keys) do vals[i] = o[k] end
    else
      o = {}
      for i = 1, #keys do vals[i] = args[i] end
      local ne = #(extra or {})
      for i, k in ipairs(extra or {}) do
        local v = args[#keys + i]
        if is_opts(v) then
          -- the flags may come as a trailing options table
          local t = check_opts(op, v, set(extra))
          for _, e in ipairs(extra) do o[e] = t[e] end
          ne = i
          break
        end
        if v ~= nil and type(v) ~= "boolean" then
          error(fmt("%s: expected a boolean for %s, got %s", op, k, type(v)), 3)
        end
        o[k] = v
      end
      if n > #keys + ne then
        error(fmt("%s: unexpected argument #%d (%s): %s takes at most %d arguments", op, #keys + ne + 2,
          type(args[#keys + ne + 1]), op, #keys + ne + 1), 3)
      end
    end
    for i = 1, #keys do if vals[i] == nil then vals[i] = defs[i] end end
    return vals, o
  end

  -- -- rrelu (hardshrink, softshrink and threshold are in nn/activations.lua) ---------------
  -- rrelu(x, lower=1/8, upper=1/3, training=false): eval: leaky_relu with
  -- slope (lower + upper) / 2; training: a slope drawn per element from
  -- U(lower, upper) for the negative inputs (T.manual_seed repeats it)
  F.rrelu = named("rrelu", function(x, ...)
    check_tensor("rrelu", x)
    local v, o = params("rrelu", { "lower", "upper" }, { 1 / 8, 1 / 3 }, { ... }, select("#", ...),
      { "training", "inplace" })
    local lo, hi = num("rrelu", v[1], "lower"), num("rrelu", v[2], "upper")
    -- PyTorch's kernel (leaky_relu's in evaluation) takes floating point input only
    if not x.dtype.is_floating_point then
      error(fmt("rrelu: expected a floating point input, got %s", tostring(x.dtype)), 2)
    end
    if lo > hi then error(fmt("rrelu: Lower bound should be less than or equal to the upper bound"), 0) end
    local slope
    if o.training then
      slope = T.empty(x.shape, { dtype = x.dtype, device = x.device }):uniform_(lo, hi)
    else
      slope = (lo + hi) / 2
    end
    -- inplace: computed from a copy, so the graph does not hold the x it overwrites
    local src = o.inplace and x:clone() or x
    local y = T.where(src:gt(0), src, src * slope)  -- x = 0 takes the slope (its gradient, as leaky_relu)
    if o.inplace then return x:copy_(y) end
    return y
  end)

  local RReLU = Module:extend("RReLU")
  function RReLU:init(...)
    local v, o = params("RReLU", { "lower", "upper" }, { 1 / 8, 1 / 3 }, { ... }, select("#", ...), { "inplace" })
    self.lower, self.upper, self.inplace = v[1], v[2], o.inplace
  end
  function RReLU:forward(x, ...)
    nomore("RReLU.forward", 1, ...)
    return F.rrelu(x, { lower = self.lower, upper = self.upper, inplace = self.inplace, training = self.training })
  end
  function RReLU:extra_repr() return "lower=" .. fmtnum(self.lower) .. ", upper=" .. fmtnum(self.upper) end
  nn.RReLU = RReLU

  local Softmin = Module:extend("Softmin")
  function Softmin:init(dim, ...) nomore("Softmin", 1, ...); self.dim = dim end
  function Softmin:forward(x, ...) nomore("Softmin.forward", 1, ...); return F.softmin(x, self.dim) end
  function Softmin:extra_repr() return "dim=" .. tostring(self.dim) end
  nn.Softmin = Softmin
  -- softmax over the channels of (C, H, W) or (N, C, H, W)
  local Softmax2d = Module:extend("Softmax2d")
  function Softmax2d:init(...) nomore("Softmax2d", 0, ...) end
  function Softmax2d:forward(x, ...)
    nomore("Softmax2d.forward", 1, ...)
    check_tensor("Softmax2d", x)
    if x.ndim ~= 3 and x.ndim ~= 4 then
      error(fmt("Softmax2d: expected an input of 3 or 4 dimensions, got %d", x.ndim), 2)
    end
    return x:softmax(-3)
  end
  nn.Softmax2d = Softmax2d

  -- -- pixel_shuffle / pixel_unshuffle ----------------------------------------------------
  -- (x [..., c, h, w], r): the checks both share; the leading dims, c, h, w
  local function shuffle_args(op, what, x, r, ...)
    nomore(op, 2, ...)
    check_tensor(op, x)
    if type(r) ~= "number" or r < 1 or r % 1 ~= 0 then
      error(fmt("%s: %s must be a positive integer, got %s", op, what, tostring(r)), 0)
    end
    local nd = x.ndim
    if nd < 3 then
      error(fmt("%s: expects input to have at least 3 dimensions, but got input with %d dimension(s)", op, nd), 0)
    end
    local lead = {}
    for i = 1, nd - 3 do lead[i] = x.shape[i] end
    return lead, x.shape[nd - 2], x.shape[nd - 1], x.shape[nd]
  end
  -- x viewed as lead ++ mid, permuted by lead ++ (b + order), reshaped to lead ++ out
  local function regroup(x, lead, mid, order, out)
    local b = #lead
    local sh, perm, o = {}, {}, {}
    for i = 1, b do sh[i], perm[i], o[i] = lead[i], i, lead[i] end
    for i = 1, #mid do sh[b + i] = mid[i] end
    for i = 1, #order do perm[b + i] = b + order[i] end
    for i = 1, #out do o[b + i] = out[i] end
    return x:reshape(sh):permute(perm):reshape(o)
  end
  F.pixel_shuffle = named("pixel_shuffle", function(x, r, ...)
    local lead, c, h, w = shuffle_args("pixel_shuffle", "upscale_factor", x, r, ...)
    if c % (r * r) ~= 0 then
      error(fmt("pixel_shuffle: expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=%d is not divisible by %d", c, r * r), 0)
    end
    local oc = math.floor(c / (r * r))
    return regroup(x, lead, { oc, r, r, h, w }, { 1, 4, 2, 5, 3 }, { oc, h * r, w * r })
  end)
  F.pixel_unshuffle = named("pixel_unshuffle", function(x, r, ...)
    local lead, c, h, w = shuffle_args("pixel_unshuffle", "downscale_factor", x, r, ...)
    if h % r ~= 0 or w % r ~= 0 then
      error(fmt("pixel_unshuffle: expects height and width to be divisible by downscale_factor, but got %d x %d and %d", h, w, r), 0)
    end
    local oh, ow = math.floor(h / r), math.floor(w / r)
    return regroup(x, lead, { c, oh, r, ow, r }, { 1, 3, 5, 2, 4 }, { c * r * r, oh, ow })
  end)
  for name, fname in pairs { PixelShuffle = "pixel_shuffle", PixelUnshuffle = "pixel_unshuffle" } do
    local Mc = Module:extend(name)
    function Mc:init(r, ...) nomore(name, 1, ...); self.factor = r end
    function Mc:forward(x, ...) nomore(name .. ".forward", 1, ...); return F[fname](x, self.factor) end
    function Mc:extra_repr()
      return (fname == "pixel_shuffle" and "upscale_factor=" or "downscale_factor=") .. tostring(self.factor)
    end
    nn[name] = Mc
  end

  -- -- unfold (im2col) / fold (col2im) ----------------------------------------------------
  local function pair(op, v, what)
    if type(v) == "number" then v = { v, v } end
    if type(v) ~= "table" or #v ~= 2 or type(v[1]) ~= "number" or type(v[2]) ~= "number" then
      error(fmt("%s: expected an integer or a pair of integers for %s, got %s", op, what,
        type(v) == "table" and not T.is_tensor(v) and #v .. " values" or tostring(v)), 0)
    end
    return v
  end
  local UF = set { "dilation", "padding", "stride" }
  -- an options table, not a pair such as a positional dilation {1, 2}
  local function uf_opts(v) return is_opts(v) and v[1] == nil end
  local function im2col_args(op, kernel, dilation, padding, stride)
    if uf_opts(dilation) and padding == nil then
      local o = check_opts(op, dilation, UF)
      dilation, padding, stride = o.dilation, o.padding, o.stride
    end
    local k = pair(op, kernel, "kernel_size")
    local d, p, s = pair(op, dilation or 1, "dilation"), pair(op, padding or 0, "padding"), pair(op, stride or 1, "stride")
    for i = 1, 2 do
      if k[i] < 1 or d[i] < 1 or s[i] < 1 or p[i] < 0 then
        error(fmt("%s: kernel_size, dilation and stride must be positive and padding non-negative", op), 0)
      end
    end
    return k, d, p, s
  end
  -- 1-based positions along one dim: rows[ki][o] = o * s + ki * d + 1
  local function positions(K, O, d, s)
    local idx = {}
    for ki = 0, K - 1 do
      for o = 0, O - 1 do idx[#idx + 1] = o * s + ki * d + 1 end
    end
    return T.tensor(idx, { dtype = T.int64 })
  end
  F.unfold = named("unfold", function(x, kernel, dilation, padding, stride, ...)
    nomore("unfold", 5, ...)
    check_tensor("unfold", x)
    local k, d, p, s = im2col_args("unfold", kernel, dilation, padding, stride)
    local batched = x.ndim == 4
    if x.ndim ~= 3 and x.ndim ~= 4 then
      error(fmt("unfold: Input Error: Only 3D or 4D input Tensors are supported (got %dD)", x.ndim), 0)
    end
    if not batched then x = x:unsqueeze(1) end
    local N, Cc, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    local xp = (p[1] > 0 or p[2] > 0) and F.pad(x, { p[2], p[2], p[1], p[1] }) or x
    local oh = math.floor((H + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1]) + 1
    local ow = math.floor((W + 2 * p[2] - d[2] * (k[2] - 1) - 1) / s[2]) + 1
    if oh < 1 or ow < 1 then
      error(fmt("unfold: the kernel, dilation and padding give an output of %d x %d for an input of %d x %d", oh, ow, H, W), 0)
    end
    local rows = xp:index_select(3, positions(k[1], oh, d[1], s[1]):to(x.device))
    local cols = rows:index_select(4, positions(k[2], ow, d[2], s[2]):to(x.device))
    local r = cols:reshape(N, Cc, k[1], oh, k[2], ow):permute(1, 2, 3, 5, 4, 6):reshape(N, Cc * k[1] * k[2], oh * ow)
    if not batched then r = r:squeeze(1) end
    return r
  end)
  F.fold = named("fold", function(x, output_size, kernel, dilation, padding, stride, ...)
    nomore("fold", 6, ...)
    check_tensor("fold", x)
    local osz = pair("fold", output_size, "output_size")
    local k, d, p, s = im2col_args("fold", kernel, dilation, padding, stride)
    local batched = x.ndim == 3
    if x.ndim ~= 2 and x.ndim ~= 3 then
      error(fmt("fold: Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got %dD)", x.ndim), 0)
    end
    if not batched then x = x:unsqueeze(1) end
    local N, CK, L = x.shape[1], x.shape[2], x.shape[3]
    local kk = k[1] * k[2]
    if CK % kk ~= 0 then
      error(fmt("fold: Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=%d and kernel_size=(%d, %d)", CK, k[1], k[2]), 0)
    end
    local Cc = math.floor(CK / kk)
    local Hp, Wp = osz[1] + 2 * p[1], osz[2] + 2 * p[2]
    local oh = math.floor((osz[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1]) + 1
    local ow = math.floor((osz[2] + 2 * p[2] - d[2] * (k[2] - 1) - 1) / s[2]) + 1
    if oh * ow ~= L then
      error(fmt("fold: Given output_size=(%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), padding=(%d, %d), stride=(%d, %d), expected size of input's dimension 2 to match the calculated number of sliding blocks %d * %d = %d, but got input.size(2)=%d.",
        osz[1], osz[2], k[1], k[2], d[1], d[2], p[1], p[2], s[1], s[2], oh, ow, oh * ow, L), 0)
    end
    -- each (ki, kj, oi, oj) adds into the flat padded position
    local pos = {}
    for ki = 0, k[1] - 1 do
      for kj = 0, k[2] - 1 do
        for oi = 0, oh - 1 do
          for oj = 0, ow - 1 do
            pos[#pos + 1] = (oi * s[1] + ki * d[1]) * Wp + (oj * s[2] + kj * d[2]) + 1
          end
        end
      end
    end
    local idx = T.tensor(pos, { dtype = T.int64 }):to(x.device)
    local src = x:reshape(N, Cc, kk * L)
    local out = T.zeros(N, Cc, Hp * Wp, { dtype = x.dtype, device = x.device }):index_add(3, idx, src)
    out = out:reshape(N, Cc, Hp, Wp)
    if p[1] > 0 or p[2] > 0 then out = out:narrow(3, p[1] + 1, osz[1]):narrow(4, p[2] + 1, osz[2]) end
    if not batched then out = out:squeeze(1) end
    return out
  end)
  local Unfold = Module:extend("Unfold")
  -- Unfold(kernel, {dilation, padding, stride}) or torch's positional
  -- Unfold(kernel, dilation, padding, stride)
  -- the trailing (dilation, padding, stride) of Unfold and Fold: an options
  -- table or torch's positional order; n: the arguments before them
  local function uf_args(op, n, o, padding, stride, ...)
    nomore(op, n + 3, ...)
    if uf_opts(o) then
      nomore(op, n + 1, padding, stride)
      o = check_opts(op, o, UF)
    else
      o = { dilation = o, padding = padding, stride = stride }
    end
    return o.dilation or 1, o.padding or 0, o.stride or 1
  end
  function Unfold:init(kernel, ...)
    self.kernel_size = kernel
    self.dilation, self.padding, self.stride = uf_args("Unfold", 1, ...)
  end
  function Unfold:forward(x, ...)
    nomore("Unfold.forward", 1, ...)
    return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)
  end
  local function tup(v) return type(v) == "table" and "(" .. table.concat(v, ", ") .. ")" or tostring(v) end
  function Unfold:extra_repr()
    return fmt("kernel_size=%s, dilation=%s, padding=%s, stride=%s", tup(self.kernel_size), tup(self.dilation),
      tup(self.padding), tup(self.stride))
  end
  nn.Unfold = Unfold
  local Fold = Module:extend("Fold")
  -- Fold(output_size, kernel, {dilation, padding, stride}) or torch's
  -- positional Fold(output_size, kernel, dilation, padding, stride)
  function Fold:init(output_size, kernel, ...)
    self.output_size, self.kernel_size = output_size, kernel
    self.dilation, self.padding, self.stride = uf_args("Fold", 2, ...)
  end
  function Fold:forward(x, ...)
    nomore("Fold.forward", 1, ...)
    return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
  end
  function Fold:extra_repr()
    return fmt("output_size=%s, kernel_size=%s, dilation=%s, padding=%s, stride=%s", tup(self.output_size),
      tup(self.kernel_size), tup(self.dilation), tup(self.padding), tup(self.stride))
  end
  nn.Fold = Fold

  -- -- padding modules ------------------------------------------------------------------
  local function pad_module(name, mode, n)
    local Mc = Module:extend(name)
    function Mc:init(padding, value, ...)
      if mode == "constant" and name ~= "ZeroPad2d" then nomore(name, 2, ...) else nomore(name, 1, value, ...) end
      if type(padding) == "number" then
        local pd = {}
        for i = 1, 2 * n do pd[i] = padding end
        padding = pd
      end
      if type(padding) ~= "table" or #padding ~= 2 * n then
        error(fmt("%s: expected an integer or %d paddings, got %s", name, 2 * n,
          type(padding) == "table" and not T.is_tensor(padding) and #padding .. " values" or tostring(padding)), 2)
      end
      self.padding = padding
      if mode == "constant" then
        if name ~= "ZeroPad2d" then num(name, value, "value") end
        self.value = value or 0
      end
    end
    function Mc:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      if mode == "constant" then return F.pad(x, self.padding, { mode = "constant", value = self.value }) end
      return F.pad(x, self.padding, mode)
    end
    function Mc:extra_repr()
      -- PyTorch's: "(1, 1)" for the reflection/replication pads,
      -- "padding=(1, 1), value=0" for the constant ones (a Lua number has no
      -- int/float kind: an integral value prints as an int)
      local r = "(" .. table.concat(self.padding, ", ") .. ")"
      if mode == "constant" and name ~= "ZeroPad2d" then
        local v = self.value
        r = "padding=" .. r .. ", value=" .. (v == math.floor(v) and math.abs(v) < 2 ^ 53 and fmt("%d", v) or fmtnum(v))
      end
      return r
    end
    nn[name] = Mc
  end
  pad_module("ZeroPad2d", "constant", 2)
  for n = 1, 3 do
    pad_module("ConstantPad" .. n .. "d", "constant", n)
    pad_module("ReplicationPad" .. n .. "d", "replicate", n)
    pad_module("ReflectionPad" .. n .. "d", "reflect", n)
  end

  -- -- distances as modules ---------------------------------------------------------------
  local CosineSimilarity = Module:extend("CosineSimilarity")
  -- CosineSimilarity{dim, eps} or torch's positional CosineSimilarity(dim, eps)
  function CosineSimilarity:init(...)
    local o = check_opts("CosineSimilarity", positional("CosineSimilarity", { "dim", "eps" }, 1, ...),
      set { "dim", "eps" })
    self.dim, self.eps = o.dim or 2, o.eps or 1e-8
  end
  function CosineSimilarity:forward(a, b, ...)
    nomore("CosineSimilarity.forward", 2, ...)
    return F.cosine_similarity(a, b, { dim = self.dim, eps = self.eps })
  end
  nn.CosineSimilarity = CosineSimilarity
  local PairwiseDistance = Module:extend("PairwiseDistance")
  -- PairwiseDistance{p, eps, keepdim} or torch's positional
  -- PairwiseDistance(p, eps, keepdim)
  function PairwiseDistance:init(...)
    local o = check_opts("PairwiseDistance", positional("PairwiseDistance", { "p", "eps", "keepdim" }, 1, ...),
      set { "p", "eps", "keepdim" })
    self.p, self.eps, self.keepdim = o.p or 2, o.eps or 1e-6, o.keepdim or false
  end
  function PairwiseDistance:forward(a, b, ...)
    nomore("PairwiseDistance.forward", 2, ...)
    return F.pairwise_distance(a, b, { p = self.p, eps = self.eps, keepdim = self.keepdim })
  end
  nn.PairwiseDistance = PairwiseDistance

  -- -- bilinear ---------------------------------------------------------------------------
  -- y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o]
  F.bilinear = named("bilinear", function(x1, x2, weight, bias, ...)
    nomore("bilinear", 4, ...)
    if is_opts(bias) then
      local k = next(bias)
      error(fmt("bilinear: unknown option '%s' (bilinear takes no options)", tostring(k)), 0)
    end
    check_tensor("bilinear", x1, "input1")
    check_tensor("bilinear", x2, "input2")
    check_tensor("bilinear", weight, "weight")
    if weight.ndim ~= 3 or x1.ndim == 0 or x2.ndim == 0 then
      error(fmt("bilinear: input1 %s, input2 %s and weight %s do not match (weight: [out, in1, in2])",
        tostring(x1.shape), tostring(x2.shape), tostring(weight.shape)), 0)
    end
    -- torch's checks: the batch dims equal (no broadcasting), the feature
    -- sizes and the bias's those of weight
    if x1.ndim ~= x2.ndim then
      error(fmt("bilinear: input dimensions do not match: got %d and %d", x1.ndim, x2.ndim), 0)
    end
    for i = 1, x1.ndim - 1 do
      if x1.shape[i] ~= x2.shape[i] then
        error(fmt("bilinear: input batch dimensions do not match at dim %d: got %d and %d", i,
          x1.shape[i], x2.shape[i]), 0)
      end
    end
    for k, x in ipairs { x1, x2 } do
      if x.shape[x.ndim] ~= weight.shape[k + 1] then
        error(fmt("bilinear: input%d size does not match weight size: got %d but expected %d", k,
          x.shape[x.ndim], weight.shape[k + 1]), 0)
      end
    end
    if T.is_tensor(bias) and (bias.ndim ~= 1 or bias.shape[1] ~= weight.shape[1]) then
      error(fmt("bilinear: bias size does not match weight size: got %s but expected [%d]",
        tostring(bias.shape):gsub("^ember%.Size%((.*)%)$", "%1"), weight.shape[1]), 0)
    end
    local lead = {}
    for i = 1, x1.ndim - 1 do lead[i] = x1.shape[i] end
    local a = x1:reshape(-1, weight.shape[2])
    local b2 = x2:reshape(-1, weight.shape[3])
    local y = T.einsum("bi,oij,bj->bo", a, weight, b2)
    if bias ~= nil then y = y + bias end
    lead[#lead + 1] = weight.shape[1]
    return y:reshape(lead)
  end)
  local Bilinear = Module:extend("Bilinear")
  function Bilinear:init(in1, in2, out, o, ...)
    nomore("Bilinear", 4, ...)
    o = check_opts("Bilinear", o, set { "bias", "dtype", "device" })
    self.in1_features, self.in2_features, self.out_features = in1, in2, out
    local bound = 1 / math.sqrt(in1)
    local opts = { dtype = o.dtype, device = o.device }
    self.weight = nn.Parameter(T.empty(out, in1, in2, opts):uniform_(-bound, bound))
    if o.bias ~= false then self.bias = nn.Parameter(T.empty(out, opts):uniform_(-bound, bound)) end
  end
  function Bilinear:forward(a, b, ...)
    nomore("Bilinear.forward", 2, ...)
    return F.bilinear(a, b, self.weight, self.bias)
  end
  function Bilinear:extra_repr()
    return fmt("in1_features=%d, in2_features=%d, out_features=%d, bias=%s", self.in1_features,
      self.in2_features, self.out_features, tostring(self.bias ~= nil))
  end
  nn.Bilinear = Bilinear

  -- -- losses ---------------------------------------------------------------------------------
  local function reduce(op, l, red)
    if red == "none" then return l end
    if red == "sum" then return l:sum() end
    if red == "mean" then return l:mean() end
    error(fmt("%s: %s is not a valid value for reduction", op, tostring(red)), 0)
  end
  local function loss(name, cname, keys, fn)
    local allowed = set(keys)
    allowed.reduction = true
    F[name] = named(name, function(input, target, o, ...)
      nomore(name, 3, ...)
      check_tensor(name, input)
      check_tensor(name, target, "target")
      if type(o) == "string" then o = { reduction = o } end
      o = check_opts(name, o, allowed)
      return reduce(name, fn(input, target, o), o.reduction or "mean")
    end)
    local Lc = Module:extend(cname)
    function Lc:init(opts, ...)
      nomore(cname, 1, ...)
      self.opts = check_opts(cname, opts, allowed)
    end
    function Lc:forward(a, b, ...)
      nomore(cname .. ".forward", 2, ...)
      return F[name](a, b, self.opts)
    end
    return Lc
  end
  -- log(1 + exp(-y x)) as -logsigmoid(y x): exact everywhere (softplus's
  -- threshold of 20 would drop the exp(-y x) term above it) and finite
  -- where torch's log1p(exp(-y x)) overflows
  nn.SoftMarginLoss = loss("soft_margin_loss", "SoftMarginLoss", {}, function(x, y) return -F.logsigmoid(y * x) end)
  -- x where y = 1, max(0, margin - x) where y = -1
  nn.HingeEmbeddingLoss = loss("hinge_embedding_loss", "HingeEmbeddingLoss", { "margin" }, function(x, y, o)
    local margin = o.margin or 1.0
    local zero = T.zeros_like(x)  -- not x * 0: inf * 0 is NaN (PyTorch's zeros_like)
    return T.where(y:ne(1), (margin - x):clamp_min(0), zero) + T.where(y:ne(-1), x, zero)
  end)
  -- -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, averaged over classes
  nn.MultiLabelSoftMarginLoss = loss("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss", { "weight" }, function(x, y, o)
    local l = -(y * F.logsigmoid(x) + (1 - y) * F.logsigmoid(-x))
    if o.weight ~= nil then l = l * o.weight end
    return l:mean(-1)
  end)

  -- -- local_response_norm --------------------------------------------------------------------
  -- x / (k + alpha / size * sum of x^2 over the `size` neighbouring channels)^beta
  F.local_response_norm = named("local_response_norm", function(x, size, alpha, beta, k, ...)
    nomore("local_response_norm", 5, ...)
    check_tensor("local_response_norm", x)
    if is_opts(alpha) then
      local o = check_opts("local_response_norm", alpha, set { "alpha", "beta", "k" })
      alpha, beta, k = o.alpha, o.beta, o.k
    end
    alpha, beta, k = alpha or 1e-4, beta or 0.75, k or 1.0
    if type(size) ~= "number" or size < 1 or size % 1 ~= 0 then
      error(fmt("local_response_norm: expected a positive integer size, got %s", tostring(size)), 0)
    end
    if x.ndim < 3 then
      error(fmt("local_response_norm: Expected 3D or higher dimensionality input (got %d dimensions)", x.ndim), 0)
    end
    local Cc = x.shape[2]
    local sq = x * x
    local pd = {}
    for _ = 1, 2 * (x.ndim - 2) do pd[#pd + 1] = 0 end
    pd[#pd + 1], pd[#pd + 2] = math.floor(size / 2), math.floor((size - 1) / 2)
    local padded = F.pad(sq, pd)
    local acc = padded:narrow(2, 1, Cc)
    for i = 2, size do acc = acc + padded:narrow(2, i, Cc) end
    local div = (acc * (alpha / size) + k):pow(beta)
    return x / div
  end)
  local LRN = Module:extend("LocalResponseNorm")
  -- LocalResponseNorm(size, {alpha, beta, k}) or torch's positional
  -- LocalResponseNorm(size, alpha, beta, k)
  function LRN:init(size, ...)
    local o = check_opts("LocalResponseNorm", positional("LocalResponseNorm", { "alpha", "beta", "k" }, 2, ...),
      set { "alpha", "beta", "k" })
    self.size, self.alpha, self.beta, self.k = size, o.alpha or 1e-4, o.beta or 0.75, o.k or 1.0
  end
  function LRN:forward(x, ...)
    nomore("LocalResponseNorm.forward", 1, ...)
    return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)
  end
  function LRN:extra_repr()
    return fmt("%d, alpha=%s, beta=%s, k=%s", self.size, fmtnum(self.alpha), fmtnum(self.beta), fmtnum(self.k))
  end
  nn.LocalResponseNorm = LRN
end
