-- Activations of issue 18, item 4: F.elu/selu/celu/prelu/relu6/hardtanh/
-- hardswish/hardsigmoid/mish/softsign/logsigmoid/glu/tanhshrink (softplus
-- was there: an engine op), hardshrink/softshrink/threshold, and their
-- modules (docs/nn.md, "Activations" and "More layers").
--
-- Each is a composite of ember's differentiable ops, written so that its
-- gradient is PyTorch's everywhere, also at the kinks PyTorch's own backward
-- kernels decide: hardtanh/relu6/hardsigmoid pass the gradient strictly
-- inside (min, max) (a clamp would pass it at the bounds too), hardswish's
-- is (2x + 3) / 6 on [-3, 3], elu/celu/selu take the exp side at 0, and the
-- exp of the branch a where does not select is taken of a clamped input, so
-- it never overflows into a 0 * inf gradient. `inplace = true` is honoured:
-- the result is computed from a copy and written into the input (so the
-- graph stays valid when the input requires grad), and the input returned.
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local is_opts, named = A.is_opts, A.named
  local function check_opts(op, o, allowed) A.check_opts(op, o, allowed, 3) end

  local function check_tensor(op, x)
    if not T.is_tensor(x) then error(string.format("%s: expected a tensor input, got %s", op, type(x)), 4) end
    if not x.dtype.is_floating_point then
      error(string.format("%s: expected a floating point input, got %s", op, tostring(x.dtype)), 4)
    end
  end

  -- Defines F[name](x, p1, p2, ..., inplace) and F[name](x, {key = ...,
  -- inplace = }) for parameters keys (with defaults defs); fn(x, values...)
  -- int_fn(x, values...), when given, takes integer (not bool) input
  local function act(name, keys, defs, fn, int_fn)
    local allowed = { inplace = true }
    for _, k in ipairs(keys) do allowed[k] = true end
    F[name] = function(x, ...)
      local f = fn
      if int_fn and T.is_tensor(x) and not x.dtype.is_floating_point and x.dtype ~= T.bool
        and not x.dtype.is_complex then
        f = int_fn
      else
        check_tensor(name, x)
      end
      local args, n = { ... }, select("#", ...)
      local vals, inplace = {}, false
      if n >= 1 and is_opts(args[1]) then
        local o = args[1]
        check_opts(name, o, allowed)
        for i, k in ipairs(keys) do vals[i] = o[k] end
        inplace = o.inplace or false
      else
        for i = 1, #keys do vals[i] = args[i] end
        -- after the positional values: inplace, or an options table for it
        local last = args[#keys + 1]
        if is_opts(last) then last = A.check_opts(name, last, { inplace = true }, 2).inplace end
        inplace = last or false
      end
      for i = 1, #keys do
        if vals[i] == nil then vals[i] = defs[i] end
        if type(vals[i]) ~= "number" then
          error(string.format("%s: expected a number for %s, got %s", name, keys[i], tostring(vals[i])), 2)
        end
      end
      -- float16/bfloat16: composed in float32 and rounded once at the end
      -- (docs/dtypes.md), not rounded after every step of the composition
      local half = x.dtype == T.float16 or x.dtype == T.bfloat16
      if inplace then
        local y = f(half and x:float() or x:clone(), (table.unpack or unpack)(vals, 1, #keys))
        return x:copy_(y)
      end
      if half then return f(x:float(), (table.unpack or unpack)(vals, 1, #keys)):to(x.dtype) end
      return f(x, (table.unpack or unpack)(vals, 1, #keys))
    end
    F[name] = named(name, F[name])
  end

  -- x <= 0: alpha * (exp(x * input_scale) - 1) * scale, else x * scale
  -- (PyTorch's elu kernel: NaN takes the x side, its gradient included).
  -- The gradient of the exp side is alpha scale input_scale exp(x
  -- input_scale) (exp's, not expm1's result + 1, which loses the small
  -- values in float32), and at exactly 0 it is the linear term alone, so the
  -- second derivative there is 0 (PyTorch's elu double backward: x < 0 only)
  local function elu(x, alpha, scale, input_scale)
    local z = x:clamp_max(0) * input_scale
    local em = z:expm1()
    -- (input_scale > 0: z <= 0, so exp(z) is finite and e - e:detach() is 0)
    if input_scale > 0 and x.requires_grad and T.is_grad_enabled() then
      local e = z:exp()
      em = em:detach() + (e - e:detach())
    end
    local c = alpha * scale
    local neg = T.where(x:lt(0), em * c, x * (c * input_scale))
    local pos = scale == 1 and x or x * scale
    return T.where(x:le(0), neg, pos)
  end

  act("elu", { "alpha" }, { 1.0 }, function(x, alpha) return elu(x, alpha, 1, 1) end)
  local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
  act("selu", {}, {}, function(x) return elu(x, SELU_ALPHA, SELU_SCALE, 1) end)
  act("celu", { "alpha" }, { 1.0 }, function(x, alpha)
    if alpha == 0 then error("celu: ZeroDivisionError: alpha must not be 0", 4) end
    return elu(x, alpha, 1, 1 / alpha)
  end)

  -- clamp to [lo, hi] with the gradient passed strictly inside (lo, hi),
  -- and at NaN (PyTorch's hardtanh backward zeroes it where x <= lo or
  -- x >= hi; hardsigmoid's, nan_zero, where not lo < x < hi)
  local function hardtanh(x, lo, hi, nan_zero)
    if lo > hi then
      error(string.format("hardtanh: min_val cannot be greater than max_val, got %g > %g", lo, hi), 4)
    end
    if nan_zero then return T.where(x:gt(lo):logical_and(x:lt(hi)), x, x:detach():clamp(lo, hi)) end
    return T.where(x:le(lo):logical_or(x:ge(hi)), x:detach():clamp(lo, hi), x)
  end
  -- integer input (PyTorch's hardtanh takes it): the limits truncated to
  -- integers, no negative limit for uint8
  local function hardtanh_int(x, lo, hi)
    if lo > hi then
      error(string.format("hardtanh: min_val cannot be greater than max_val, got %g > %g", lo, hi), 4)
    end
    if x.dtype == T.uint8 and (lo < 0 or hi < 0) then
      error("hardtanh: cannot do hardtanh on an unsigned type with negative limits", 4)
    end
    local function trunc(v) return v < 0 and math.ceil(v) or math.floor(v) end
    return x:clamp(trunc(lo), trunc(hi))
  end
  act("hardtanh", { "min_val", "max_val" }, { -1.0, 1.0 }, hardtanh, hardtanh_int)
  act("relu6", {}, {}, function(x) return hardtanh(x, 0, 6) end,
    function(x) return hardtanh_int(x, 0, 6) end)
  act("hardsigmoid", {}, {}, function(x) return hardtanh(x + 3, 0, 6, true) / 6 end)
  act("hardswish", {}, {}, function(x)
    -- 0 below -3, x (x + 3) / 6 on [-3, 3], x above 3
    -- (the middle branch on x clamped to [-3, 3]: finite where not taken, so
    -- an infinite x gets PyTorch's gradient 0 / 1, not NaN). At exactly -3
    -- and 3 the middle branch is its tangent line: the gradient (2x + 3) / 6,
    -- and a second derivative of 0 (PyTorch's: 1/3 strictly inside only)
    local xc = x:clamp(-3, 3)
    local mid = T.where(x:gt(-3):logical_and(x:lt(3)), xc * (xc + 3) / 6,
      T.where(x:lt(0), (xc + 3) * -0.5, (xc - 3) * 1.5 + 3))
    -- below -3 x * 0 without a gradient: -0, and NaN at -inf (PyTorch's
    -- x * relu6(x + 3) / 6)
    return T.where(x:lt(-3), x:detach() * 0, T.where(x:le(3), mid, x))
  end)
  act("mish", {}, {}, function(x) return x * x:softplus():tanh() end)
  -- integer input (not bool): PyTorch's composites promote it to the default dtype
  local function to_default(f)
    return function(x, ...) return f(x:to(T.get_default_dtype()), ...) end
  end
  local function softsign(x) return x / (x:abs() + 1) end
  local function tanhshrink(x) return x - x:tanh() end
  act("softsign", {}, {}, softsign, to_default(softsign))
  act("tanhshrink", {}, {}, tanhshrink, to_default(tanhshrink))
  -- PyTorch's rules: 0 where -l <= x <= l, else x (NaN passes, and its gradient)
  act("hardshrink", { "lambd" }, { 0.5 }, function(x, l)
    return T.where(x:ge(-l):logical_and(x:le(l)), T.zeros_like(x), x)
  end)
  act("softshrink", { "lambd" }, { 0.5 }, function(x, l)
    if l < 0 then
      error(string.format("softshrink: lambda must be greater or equal to 0, but found to be %s.",
        require("ember.pyfloat")(l)), 0)
    end
    -- x - l above l, x + l below -l, else 0; NaN stays NaN (torch 1.13
    -- gives 0 there, later versions NaN) with the gradient 1, torch's
    return T.where(x:ge(-l):logical_and(x:le(l)), T.zeros_like(x), T.where(x:lt(-l), x + l, x - l))
  end)
  local function threshold(x, th, v)
    -- PyTorch's rule, x <= threshold ? value : x: NaN passes through
    return T.where(x:le(th), T.full({}, v, { dtype = x.dtype, device = x.device }):expand(x.shape), x)
  end
  -- integer input (PyTorch's threshold takes it): threshold and value
  -- converted to the dtype (truncated), a value out of its range refused
  local function threshold_int(x, th, v)
    local function trunc(u) return u < 0 and math.ceil(u) or math.floor(u) end
    local info = T.iinfo(x.dtype)
    local imin, imax = tonumber(info.min), tonumber(info.max)
    if v ~= v or v < imin or v > imax then
      error(string.format("threshold: value %s cannot be converted to type %s without overflow",
        tostring(v), tostring(x.dtype)), 4)
    end
    if th ~= th then return x:clone() end
    th = math.max(math.min(trunc(th), imax), imin)
    return threshold(x, th, trunc(v))
  end
  act("threshold", { "threshold", "value" }, {}, threshold, threshold_int)
  F.threshold_ = named("threshold_", function(x, th, v, ...)
    nomore("threshold_", 3, ...)
    return F.threshold(x, th, v, true)
  end)
  -- log(sigmoid(x)): -log1p(exp(-x)) for x >= 0, x - log1p(exp(x)) below
  act("logsigmoid", {}, {}, function(x)
    local p, n = x:clamp_min(0), x:clamp_max(0)
    -- (0 - ..., not a negation: +0 for large x, PyTorch's min(x, 0) - ...)
    return T.where(x:ge(0), 0 - (-p):exp():log1p(), n - n:exp():log1p())
  end)

  -- glu(x, dim=-1): a * sigmoid(b) of the two halves along dim
  function F.glu(x, dim)
    local op = "glu"
    check_tensor(op, x)
    if is_opts(dim) then
      check_opts(op, dim, { dim = true })
      dim = dim.dim
    end
    dim = dim or -1
    if x.ndim == 0 then error("glu: does not support scalars because halving size must be even", 2) end
    local d = dim < 0 and dim + x.ndim + 1 or dim
    if d < 1 or d > x.ndim then
      error(string.format("glu: dimension %d out of range (expected to be in range of [%d, %d])", dim, -x.ndim, x.ndim), 2)
    end
    local s = x.shape[d]
    if s % 2 ~= 0 then
      error(string.format("glu: halving dimension must be even, but dimension %d is size %d", dim, s), 2)
    end
    return x:narrow(d, 1, s / 2) * x:narrow(d, s / 2 + 1, s / 2):sigmoid()
  end
  F.glu = named("glu", F.glu)

  -- prelu(x, weight): x > 0: x, else weight * x, weight (one value, or one
  -- per channel: dim 2 of a batched input)
  function F.prelu(x, weight, ...)
    local op = "prelu"
    nomore(op, 2, ...)
    check_tensor(op, x)
    if not T.is_tensor(weight) then error("prelu: expected a weight tensor, got " .. type(weight), 2) end
    -- PyTorch: "prelu: Expected `weight` to be a scalar or 1D tensor, but got
    -- ndim = 2", and one dtype for both (no promotion)
    if weight.ndim > 1 then
      error(string.format("prelu: expected weight to be a scalar or 1-d tensor, but got ndim = %d", weight.ndim), 2)
    end
    if weight.dtype ~= x.dtype then
      error(string.format("prelu: expected weight of the input's dtype %s, got %s", tostring(x.dtype),
        tostring(weight.dtype)), 2)
    end
    local n = weight:numel()
    local w = weight
    if n ~= 1 then
      local ch = x.ndim >= 2 and x.shape[2] or 1
      if weight.ndim ~= 1 or n ~= ch then
        error(string.format("prelu: mismatch of parameter numbers and input channel size. Found parameter "
          .. "numbers = %d and channel size = %d", n, ch), 2)
      end
      local shape = {}
      for i = 1, x.ndim do shape[i] = 1 end
      shape[2] = n
      w = weight:view(shape)
    elseif weight.ndim > 0 then
      w = weight:reshape({})
    end
    return T.where(x:gt(0), x, w * x)
  end
  F.prelu = named("prelu", F.prelu)

  -- -- modules ----------------------------------------------------------------
  local fmtnum = require "ember.pyfloat" -- PyTorch prints its float arguments as Python floats

  -- A module whose init takes PyTorch's positional arguments (or one
  -- options table) for keys, with defs
  -- check(self): the constructor's own argument rules (PyTorch's asserts)
  local function act_module(name, fname, keys, defs, repr, check)
    local M = Module:extend(name)
    local allowed = { inplace = true }
    for _, k in ipairs(keys) do allowed[k] = true end
    function M:init(...)
      local a = { ... }
      local o = {}
      if is_opts(a[1]) then
        o = a[1]
        for k in pairs(o) do
          if not allowed[k] then error(string.format("%s: unknown option '%s'", name, tostring(k)), 3) end
        end
      else
        for i, k in ipairs(keys) do o[k] = a[i] end
        -- after the positional values: inplace, or an options table for it
        local last = a[#keys + 1]
        if is_opts(last) then
          for k in pairs(last) do
            if k ~= "inplace" then error(string.format("%s: unknown option '%s'", name, tostring(k)), 3) end
          end
          last = last.inplace
        end
        o.inplace = last
      end
      for i, k in ipairs(keys) do
        local v = o[k]
        if v == nil then v = defs[i] end
        self[k] = v
      end
      self.inplace = o.inplace or false
      if check then check(self) end
    end
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      local o = { inplace = self.inplace }
      for _, k in ipairs(keys) do o[k] = self[k] end
      return F[fname](x, o)
    end
    function M:extra_repr()
      if repr then return repr(self) end
      local parts = {}
      for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. fmtnum(self[k]) end
      if self.inplace then parts[#parts + 1] = "inplace=true" end
      return table.concat(parts, ", ")
    end
    nn[name] = M
    return M
  end

  act_module("ELU", "elu", { "alpha" }, { 1.0 }, function(s)
    return "alpha=" .. fmtnum(s.alpha) .. (s.inplace and ", inplace=true" or "")
  end)
  act_module("SELU", "selu", {}, {}, function(s) return s.inplace and "inplace=true" or "" end)
  act_module("CELU", "celu", { "alpha" }, { 1.0 }, function(s)
    return "alpha=" .. fmtnum(s.alpha) .. (s.inplace and ", inplace=true" or "")
  end)
  act_module("ReLU6", "relu6", {}, {}, function(s) return s.inplace and "inplace=true" or "" end)
  act_module("Hardtanh", "hardtanh", { "min_val", "max_val" }, { -1.0, 1.0 }, function(s)
    return string.format("min_val=%s, max_val=%s", fmtnum(s.min_val), fmtnum(s.max_val))
      .. (s.inplace and ", inplace=true" or "")
  end, function(s)
    if not (type(s.min_val) == "number" and type(s.max_val) == "number" and s.max_val > s.min_val) then
      error(string.format("Hardtanh: max_val must be greater than min_val, got min_val=%s, max_val=%s",
        tostring(s.min_val), tostring(s.max_val)), 4)
    end
  end)
  act_module("Hardswish", "hardswish", {}, {}, function() return "" end)
  act_module("Hardsigmoid", "hardsigmoid", {}, {}, function() return "" end)
  act_module("Mish", "mish", {}, {}, function() return "" end)
  act_module("Softsign", "softsign", {}, {}, function() return "" end)
  act_module("Tanhshrink", "tanhshrink", {}, {}, function() return "" end)
  act_module("Hardshrink", "hardshrink", { "lambd" }, { 0.5 }, function(s) return fmtnum(s.lambd) end)
  act_module("Softshrink", "softshrink", { "lambd" }, { 0.5 }, function(s) return fmtnum(s.lambd) end)
  act_module("Threshold", "threshold", { "threshold", "value" }, {}, nil, function(s)
    for _, k in ipairs { "threshold", "value" } do
      if type(s[k]) ~= "number" then
        error(string.format("Threshold: expected a number for %s, got %s", k, type(s[k])), 4)
      end
    end
  end)
  act_module("LogSigmoid", "logsigmoid", {}, {}, function() return "" end)

  local Softplus = Module:extend("Softplus")
  function Softplus:init(beta, threshold)
    if is_opts(beta) then
      local o = beta
      for k in pairs(o) do
        if k ~= "beta" and k ~= "threshold" then
          error(string.format("Softplus: unknown option '%s'", tostring(k)), 3)
        end
      end
      beta, threshold = o.beta, o.threshold
    end
    self.beta, self.threshold = beta or 1, threshold or 20
  end
  function Softplus:forward(x, ...)
    nomore("Softplus.forward", 1, ...)
    return x:softplus(self.beta, self.threshold) end
  function Softplus:extra_repr() return string.format("beta=%g, threshold=%g", self.beta, self.threshold) end
  nn.Softplus = Softplus

  local GLU = Module:extend("GLU")
  function GLU:init(dim)
    if is_opts(dim) then
      for k in pairs(dim) do
        if k ~= "dim" then error(string.format("GLU: unknown option '%s'", tostring(k)), 3) end
      end
      dim = dim.dim
    end
    self.dim = dim or -1
  end
  function GLU:forward(x, ...)
    nomore("GLU.forward", 1, ...)
    return F.glu(x, self.dim) end
  function GLU:extra_repr() return "dim=" .. tostring(self.dim) end
  nn.GLU = GLU

  -- PReLU(num_parameters=1, init=0.25): weight of num_parameters values
  local PReLU = Module:extend("PReLU")
  function PReLU:init(num_parameters, init_value, o)
    if is_opts(num_parameters) then
      o = num_parameters
      for k in pairs(o) do
        if k ~= "num_parameters" and k ~= "init" and k ~= "dtype" then
          error(string.format("PReLU: unknown option '%s'", tostring(k)), 3)
        end
      end
      num_parameters, init_value = o.num_parameters, o.init
    end
    self.num_parameters = num_parameters or 1
    local init = init_value or 0.25
    local dt = (o and o.dtype) or T.get_default_dtype()
    self.weight = nn.Parameter(T.full({ self.num_parameters }, init, { dtype = dt }))
  end
  function PReLU:forward(x, ...)
    nomore("PReLU.forward", 1, ...)
    return F.prelu(x, self.weight) end
  function PReLU:extra_repr() return "num_parameters=" .. self.num_parameters end
  nn.PReLU = PReLU
end
