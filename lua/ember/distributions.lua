-- distributions: T.distributions, PyTorch's torch.distributions over
-- tensor ops (issue 19 item 4; docs/distributions.md). Every density,
-- entropy and reparameterised sample is written with engine ops, so
-- autograd runs through them. Draws use ember's Philox streams (T.rand,
-- T.randn, t:exponential_, T.multinomial, T.bernoulli): T.manual_seed
-- makes them repeatable. Categorical samples are 1-based class ids, as
-- cross_entropy takes them.
return function(T, C)
  local M = C._methods
  local A = require("ember.argcheck")(T)
  local fmt = string.format
  local pi = math.pi
  local LOG2PI = math.log(2 * pi)

  local D = {}
  T.distributions = D

  -- -- shapes and parameters ------------------------------------------------------
  local function totable(s)
    if s == nil then return {} end
    if type(s) == "number" then return { s } end
    local r = {}
    if T.is_tensor(s) then s = s.shape end
    for i = 1, #s do r[i] = s[i] end
    return r
  end
  local function concat(a, b)
    local r = {}
    for i = 1, #a do r[#r + 1] = a[i] end
    for i = 1, #b do r[#r + 1] = b[i] end
    return r
  end
  local function sub(s, i, j)
    local r = {}
    for k = i, j or #s do r[#r + 1] = s[k] end
    return r
  end
  local function bshape(name, shapes, what)
    local n = 0
    for _, s in ipairs(shapes) do n = math.max(n, #s) end
    local out = {}
    for i = 1, n do
      local v = 1
      for _, s in ipairs(shapes) do
        local x = s[#s - n + i] or 1
        if x ~= 1 then
          if v ~= 1 and v ~= x then
            error(fmt("%s: %s cannot be broadcast together (size %d against %d at dim %d)",
              name, what or "the parameters' shapes", v, x, i), 4)
          end
          v = x
        end
      end
      out[i] = v
    end
    return out
  end
  local function fdtype(ts)
    for _, t in ipairs(ts) do
      if T.is_tensor(t) and t:is_floating_point() then return t.dtype end
    end
    return T.get_default_dtype()
  end
  local user_level = A.user_level
  -- the parameters as tensors of one floating dtype, broadcast together
  -- (list.n: how many, a missing one (nil) included)
  local function params(name, list, level)
    level = level or 3
    local n = list.n or #list
    local dt = fdtype(list)
    local dev
    for i = 1, n do if T.is_tensor(list[i]) then dev = list[i].device; break end end
    local ts, shapes = {}, {}
    for i = 1, n do
      local v = list[i]
      if T.is_tensor(v) then
        ts[i] = v:is_floating_point() and v or v:to(dt)
      elseif type(v) == "number" then
        local ok, t = pcall(T.full, {}, v, { dtype = dt, device = dev })
        if not ok then -- a number out of the dtype's range
          error(fmt("%s: %s", name, A.unpos(t):gsub("^full: ", "")), level)
        end
        ts[i] = t
      else
        error(fmt("%s: expected a tensor or a number for a parameter, got %s", name, type(v)), level)
      end
      shapes[i] = totable(ts[i].shape)
    end
    local s = bshape(name, shapes)
    for i = 1, n do ts[i] = ts[i]:expand(s) end
    return ts, s
  end

  -- -- constraints -----------------------------------------------------------------
  local Cn = {}
  D.constraints = Cn
  -- event_dim: how many rightmost dims make one event (PyTorch's
  -- Constraint.event_dim: 1 for simplex, 2 for lower_cholesky)
  local function constraint(name, check, event_dim)
    return { name = name, check = check, event_dim = event_dim or 0 }
  end
  Cn.real = constraint("real", function(v) return v:eq(v) end)
  Cn.positive = constraint("positive", function(v) return v:gt(0) end)
  Cn.nonnegative = constraint("nonnegative", function(v) return v:ge(0) end)
  Cn.unit_interval = constraint("unit_interval", function(v) return v:ge(0):logical_and(v:le(1)) end)
  Cn.boolean = constraint("boolean", function(v) return v:eq(0):logical_or(v:eq(1)) end)
  -- integer as PyTorch tests it, value % 1 == 0: false for +-inf and nan
  local function is_int(v) return v:remainder(1):eq(0) end
  Cn.nonnegative_integer = constraint("nonnegative_integer", function(v) return v:ge(0):logical_and(is_int(v)) end)
  Cn.simplex = constraint("simplex", function(v)
    return v:ge(0):all(-1):logical_and((v:sum(-1) - 1):abs():lt(1e-6))
  end, 1)
  Cn.lower_cholesky = constraint("lower_cholesky", function(v)
    local n = v.shape[v.ndim]
    local low = v:tril():eq(v):flatten(-2):all(-1)
    return low:logical_and(v:diagonal(0, -2, -1):gt(0):all(-1))
  end, 2)
  -- symmetric as torch.isclose(v, v.mT, atol=1e-6) (rtol 1e-5) and a
  -- Cholesky factor exists (cholesky_ex's info == 0), per matrix
  Cn.positive_definite = constraint("positive_definite", function(v)
    local vt = v:transpose(-1, -2)
    local close = (v - vt):abs():le(vt:abs() * 1e-5 + 1e-6):logical_or(v:eq(vt))
    local sym = close:flatten(-2):all(-1)
    return sym:logical_and(D._cholesky_ok(v))
  end, 2)
  -- a parameter whose constraint depends on another (Uniform's low and
  -- high): not checkable alone, as PyTorch's constraints.dependent
  Cn.dependent = constraint("dependent", function()
    error("constraints.dependent: cannot determine the validity of a dependent constraint", 2)
  end)
  -- the support of an interval that depends on parameters (Uniform):
  -- closed, lo <= v <= hi, as PyTorch's constraints.interval
  local function interval(lo, hi)
    return constraint("interval", function(v) return v:ge(lo):logical_and(v:le(hi)) end)
  end
  Cn.interval = interval
  Cn.greater_than_eq = function(lo) return constraint("greater_than_eq", function(v) return v:ge(lo) end) end
  -- independent(c, n): c with its n rightmost batch dims made event dims
  -- (checked all together), as PyTorch's constraints.independent
  Cn.independent = function(c, n)
    return constraint("independent", function(v)
      local r = c.check(v)
      for _ = 1, n do if r.ndim > 0 then r = r:all(-1) end end
      return r
    end, (c.event_dim or 0) + n)
  end
  Cn.real_vector = Cn.independent(Cn.real, 1)
  local function integer_interval(lo, hi)
    return constraint("integer_interval", function(v)
      return v:ge(lo):logical_and(v:le(hi)):logical_and(is_int(v))
    end)
  end

  local validate_default = true
  local function check(d, what, t, con)
    if t:numel() == 0 or tostring(t.device) == "meta" then return end
    local ok = con.check(t:detach())
    if not ok:all():item() then
      error(fmt("%s: expected %s to satisfy the constraint %s, but found invalid values",
        d.__name, what, con.name), user_level())
    end
  end

  -- -- the base class -----------------------------------------------------------
  local Distribution = {}
  Distribution.__name = "Distribution"
  D.Distribution = Distribution
  local props = { mean = true, variance = true, stddev = true, mode = true, probs = true, logits = true,
    covariance_matrix = true, precision_matrix = true, scale_tril = true, support = true }
  local function class(name, parent)
    local cls = setmetatable({}, { __index = parent })
    cls.__name = name
    cls.__index = function(self, k)
      local v = cls[k]
      if v ~= nil then return v end
      if props[k] then
        local getter = cls["_" .. k]
        if getter then return getter(self) end
      end
      return nil
    end
    cls.__tostring = function(self) return name .. "()" end
    return cls
  end
  D._class = class

  function Distribution.set_default_validate_args(v) validate_default = not not v end
  local function init(d, batch_shape, event_shape, validate_args)
    d.batch_shape = T.Size(batch_shape)
    d.event_shape = T.Size(event_shape or {})
    if validate_args == nil then validate_args = validate_default end
    d._validate_args = validate_args
    return d
  end
  local function new(cls, o) return setmetatable(o or {}, cls) end
  -- a distribution argument, or an error naming the op and what came instead
  local function is_dist(v) return type(v) == "table" and v.batch_shape ~= nil and v.__name ~= nil end
  local function check_dist(op, v, what)
    if not is_dist(v) then
      error(fmt("%s: expected a distribution for %s, got %s", op, what,
        T.is_tensor(v) and "a tensor" or type(v)), 4)
    end
  end

  function Distribution:_extended_shape(sample_shape)
    return concat(concat(totable(sample_shape), totable(self.batch_shape)), totable(self.event_shape))
  end
  function Distribution:sample(sample_shape)
    if self.has_rsample then
      local s = sample_shape
      return T.no_grad(function() return self:rsample(s) end)
    end
    error(fmt("%s: sample is not implemented", self.__name), 2)
  end
  function Distribution:rsample()
    error(fmt("%s: rsample is not implemented (has_rsample is false: use sample)", self.__name), 2)
  end
  function Distribution:sample_n(n) return self:sample({ n }) end
  function Distribution:_stddev() return self.variance:sqrt() end
  function Distribution:_validate_sample(value)
    if not self._validate_args then return end
    if not T.is_tensor(value) then
      error(fmt("%s: the value argument must be a tensor, got %s", self.__name, type(value)), 3)
    end
    local es = totable(self.event_shape)
    local vs = totable(value.shape)
    for i = 1, #es do
      if vs[#vs - #es + i] ~= es[i] then
        error(fmt("%s: the rightmost dims of value (%s) must match the event shape %s", self.__name,
          A.fmt_shape(vs), A.fmt_shape(es)), 3)
      end
    end
    -- as PyTorch: the value must broadcast against batch_shape .. event_shape
    local full = concat(totable(self.batch_shape), es)
    for i = 1, math.min(#vs, #full) do
      local a, b = vs[#vs - i + 1], full[#full - i + 1]
      if a ~= b and a ~= 1 and b ~= 1 then
        error(fmt("%s: value is not broadcastable with batch_shape + event_shape: %s vs %s", self.__name,
          A.fmt_shape(vs), A.fmt_shape(full)), 3)
      end
    end
    local sup = self.support
    if sup and value:numel() > 0 and tostring(value.device) ~= "meta" then
      if not sup.check(value:detach()):all():item() then
        error(fmt("%s: expected value argument to be within the support (%s) of the distribution, "
          .. "but found invalid values", self.__name, sup.name), 3)
      end
    end
  end
  for _, m in ipairs { "log_prob", "cdf", "icdf", "entropy", "_mean", "_mode", "_variance" } do
    Distribution[m] = function(self)
      error(fmt("%s: %s is not implemented", self.__name, m:gsub("^_", "")), 2)
    end
  end
  function Distribution:perplexity() return self:entropy():exp() end
  -- PyTorch's class attributes: arg_constraints (parameter name ->
  -- constraint, what validate_args checks), has_enumerate_support
  Distribution.arg_constraints = {}
  Distribution.has_enumerate_support = false
  function Distribution:enumerate_support()
    error(fmt("%s: enumerate_support is not implemented", self.__name), 2)
  end
  -- enumerate_support(expand = true): the support's values shaped
  -- (n, 1, ..., 1) or expanded to (n, batch_shape...), as PyTorch's
  local function enumerate(self, values, expand)
    if expand ~= nil and type(expand) ~= "boolean" then
      error(fmt("%s: enumerate_support: expand must be a boolean, got %s", self.__name, type(expand)), 3)
    end
    local bs = totable(self.batch_shape)
    local shape = { values:numel() }
    for i = 1, #bs do shape[i + 1] = 1 end
    values = values:reshape(shape)
    if expand ~= false then values = values:expand(concat({ values:numel() }, bs)) end
    return values
  end
  -- expand: the same distribution with a larger batch shape (parameters
  -- expanded, no copy)
  function Distribution:expand(batch_shape)
    local bs = totable(batch_shape)
    local cls = getmetatable(self)
    local o = {}
    for k, v in pairs(self) do o[k] = v end
    for _, k in ipairs(cls._params or {}) do
      local p = self[k]
      local es = cls._param_event_dims and cls._param_event_dims[k] or 0
      local tail = sub(totable(p.shape), p.ndim - es + 1)
      o[k] = p:expand(concat(bs, tail))
    end
    o.batch_shape = T.Size(bs)
    return setmetatable(o, cls)
  end

  -- make(cls, name): the constructor D[name](...) with validation
  local function ctor(cls, f)
    D[cls.__name] = setmetatable({}, {
      __index = cls,
      __call = function(_, ...) return f(...) end,
      __tostring = function() return "distributions." .. cls.__name end,
    })
    cls.class = D[cls.__name]
  end
  local function take_opts(name, o, allowed)
    local level = user_level()
    o = o or {}
    if type(o) ~= "table" or T.is_tensor(o) then
      error(fmt("%s: expected an options table, got %s", name, type(o)), level)
    end
    for k in pairs(o) do
      local ok = false
      for _, a in ipairs(allowed) do if a == k then ok = true end end
      if not ok then
        error(fmt("%s: unknown option '%s' (expected one of: %s)", name, tostring(k), table.concat(allowed, ", ")), level)
      end
    end
    return o
  end

  -- -- Normal ----------------------------------------------------------------------
  -- A location-scale family on the real line (Normal, Laplace, Cauchy): its
  -- class with the constructor (loc, scale[, {validate_args=}]) they share
  local function loc_scale_class(name)
    local C = class(name, Distribution)
    C._params = { "loc", "scale" }
    C.arg_constraints = { loc = Cn.real, scale = Cn.positive }
    C.has_rsample = true
    C.support = Cn.real
    ctor(C, function(loc, scale, o)
      o = take_opts(name, o, { "validate_args" })
      local p, s = params(name, { loc, scale, n = 2 })
      local d = init(new(C, { loc = p[1], scale = p[2] }), s, {}, o.validate_args)
      if d._validate_args then check(d, "parameter loc", d.loc, Cn.real); check(d, "parameter scale", d.scale, Cn.positive) end
      return d
    end)
    return C
  end

  local Normal = loc_scale_class("Normal")
  function Normal:_mean() return self.loc end
  function Normal:_mode() return self.loc end
  function Normal:_stddev() return self.scale end
  function Normal:_variance() return self.scale:pow(2) end
  function Normal:rsample(shape)
    local eps = T.randn(self:_extended_shape(shape), { dtype = self.loc.dtype, device = self.loc.device })
    return self.loc + eps * self.scale
  end
  function Normal:log_prob(v)
    self:_validate_sample(v)
    return -((v - self.loc):pow(2)) / (self.scale:pow(2) * 2) - self.scale:log() - 0.5 * LOG2PI
  end
  function Normal:cdf(v)
    self:_validate_sample(v)
    return ((v - self.loc) / (self.scale * math.sqrt(2))):erf():add(1):mul(0.5)
  end
  function Normal:icdf(p) return self.loc + self.scale * (p * 2 - 1):erfinv() * math.sqrt(2) end
  function Normal:entropy() return self.scale:log() + 0.5 + 0.5 * LOG2PI end

  -- -- Uniform ---------------------------------------------------------------------
  local Uniform = class("Uniform", Distribution)
  Uniform._params = { "low", "high" }
  Uniform.arg_constraints = { low = Cn.dependent, high = Cn.dependent }
  Uniform.has_rsample = true
  function Uniform:_support() return interval(self.low, self.high) end
  ctor(Uniform, function(low, high, o)
    o = take_opts("Uniform", o, { "validate_args" })
    local p, s = params("Uniform", { low, high, n = 2 })
    local d = init(new(Uniform, { low = p[1], high = p[2] }), s, {}, o.validate_args)
    if d._validate_args and p[1]:numel() > 0 and tostring(p[1].device) ~= "meta" and
        not p[1]:lt(p[2]):all():item() then
      error("Uniform: expected parameter low to be less than high, but found invalid values", 2)
    end
    return d
  end)
  function Uniform:_mean() return (self.high + self.low) / 2 end
  function Uniform:_mode() return self.high * (0 / 0) end
  function Uniform:_variance() return (self.high - self.low):pow(2) / 12 end
  function Uniform:_stddev() return (self.high - self.low) / math.sqrt(12) end
  function Uniform:rsample(shape)
    local u = T.rand(self:_extended_shape(shape), { dtype = self.low.dtype, device = self.low.device })
    return self.low + u * (self.high - self.low)
  end
  -- the support is closed (validation takes high) while the density is
  -- that of [low, high): log_prob(high) = -inf, as PyTorch 1.13
  function Uniform:log_prob(v)
    self:_validate_sample(v)
    local inside = v:ge(self.low):logical_and(v:lt(self.high)):to(self.low.dtype)
    return inside:log() - (self.high - self.low):log()
  end
  function Uniform:cdf(v)
    self:_validate_sample(v)
    return ((v - self.low) / (self.high - self.low)):clamp(0, 1)
  end
  function Uniform:icdf(p) return p * (self.high - self.low) + self.low end
  function Uniform:entropy() return (self.high - self.low):log() end

  -- -- probs / logits ------------------------------------------------------------------
  local function clamp_probs(p)
    local eps = p.dtype == T.float64 and 2.220446049250313e-16 or 1.1920928955078125e-07
    return p:clamp(eps, 1 - eps)
  end
  -- D.Bernoulli(probs, {opts}) / D.Categorical(probs, {opts}): the
  -- positional probs joined with the options (validate_args, ...)
  local function positional_probs(name, p, o, allowed)
    o = take_opts(name, o, allowed)
    local r = {}
    for k, v in pairs(o) do r[k] = v end
    if r.probs ~= nil or r.logits ~= nil then
      error(fmt("%s: either probs or logits must be specified, but not both", name), 4)
    end
    r.probs = p
    return r
  end
  local function probs_or_logits(name, probs, logits, o)
    if (probs == nil) == (logits == nil) then
      error(fmt("%s: either probs or logits must be specified, but not both", name), 4)
    end
    return probs, logits
  end

  -- -- Bernoulli -------------------------------------------------------------------------
  local Bernoulli = class("Bernoulli", Distribution)
  Bernoulli.arg_constraints = { probs = Cn.unit_interval, logits = Cn.real }
  Bernoulli.has_rsample = false
  Bernoulli.support = Cn.boolean
  ctor(Bernoulli, function(o, o2)
    local allowed = { "probs", "logits", "validate_args" }
    if T.is_tensor(o) or type(o) == "number" then
      o = positional_probs("Bernoulli", o, o2, allowed)
    elseif o2 ~= nil then
      error("Bernoulli: unexpected second argument (give the options in one table)", 2)
    end
    o = take_opts("Bernoulli", o, allowed)
    probs_or_logits("Bernoulli", o.probs, o.logits)
    local d
    if o.probs ~= nil then
      local p, s = params("Bernoulli", { o.probs, n = 1 })
      d = init(new(Bernoulli, { _p = p[1] }), s, {}, o.validate_args)
      if d._validate_args then check(d, "parameter probs", p[1], Cn.unit_interval) end
    else
      local p, s = params("Bernoulli", { o.logits, n = 1 })
      d = init(new(Bernoulli, { _l = p[1] }), s, {}, o.validate_args)
      if d._validate_args then check(d, "parameter logits", p[1], Cn.real) end
    end
    return d
  end)
  function Bernoulli:_probs() return rawget(self, "_p") or rawget(self, "_l"):sigmoid() end
  function Bernoulli:_logits()
    local l = rawget(self, "_l")
    if l then return l end
    local p = clamp_probs(rawget(self, "_p"))
    return p:log() - (-p):log1p()
  end
  function Bernoulli:_mean() return self.probs end
  -- 1 where probs > 1/2, 0 below, nan at exactly 1/2
  function Bernoulli:_mode()
    local p = self.probs
    return T.where(p:eq(0.5), 0 / 0, p:ge(0.5):to(p.dtype))
  end
  function Bernoulli:_variance() local p = self.probs; return p * (-p + 1) end
  Bernoulli.has_enumerate_support = true
  function Bernoulli:enumerate_support(expand)
    local p = self.probs
    return enumerate(self, T.arange(2, { dtype = p.dtype, device = p.device }), expand)
  end
  function Bernoulli:sample(shape)
    local p = self.probs:detach():expand(self:_extended_shape(shape))
    return T.bernoulli(p:contiguous())
  end
  function Bernoulli:log_prob(v)
    self:_validate_sample(v)
    local l = self.logits
    local s = bshape("Bernoulli", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    return -T.nn.functional.binary_cross_entropy_with_logits(l:expand(s), v:to(l.dtype):expand(s),
      { reduction = "none" })
  end
  function Bernoulli:entropy()
    return T.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" })
  end
  -- expand for a family held as _p or _l (probs or logits) and the named
  -- fields of the batch shape: the same distribution, those expanded
  local function probs_logits_expand(cls, fields)
    return function(self, bs)
      local o = {}
      for k, v in pairs(self) do o[k] = v end
      bs = totable(bs)
      for _, f in ipairs(fields or {}) do o[f] = self[f]:expand(bs) end
      if rawget(self, "_p") then o._p = self._p:expand(bs) else o._l = self._l:expand(bs) end
      o.batch_shape = T.Size(bs)
      return setmetatable(o, cls)
    end
  end
  Bernoulli.expand = probs_logits_expand(Bernoulli)

  -- -- Categorical (1-based class ids) ----------------------------------------------------
  local Categorical = class("Categorical", Distribution)
  Categorical.arg_constraints = { probs = Cn.simplex, logits = Cn.real }
  Categorical.has_rsample = false
  function Categorical:_support() return integer_interval(1, self._num_events) end
  ctor(Categorical, function(o, o2)
    local allowed = { "probs", "logits", "validate_args" }
    if T.is_tensor(o) then
      o = positional_probs("Categorical", o, o2, allowed)
    elseif o2 ~= nil then
      error("Categorical: unexpected second argument (give the options in one table)", 2)
    end
    o = take_opts("Categorical", o, allowed)
    probs_or_logits("Categorical", o.probs, o.logits)
    local t = o.probs or o.logits
    A.check_tensor("Categorical", t, o.probs and "probs" or "logits", 3)
    if t.ndim < 1 then error("Categorical: probs or logits must be at least one-dimensional", 3) end
    if not t:is_floating_point() then t = t:to(T.get_default_dtype()) end
    local d = new(Categorical, {})
    local bs = sub(totable(t.shape), 1, t.ndim - 1)
    init(d, bs, {}, o.validate_args)
    d._num_events = t.shape[t.ndim]
    if o.probs then
      -- validated after normalising, as PyTorch: a row summing to 0 is nan
      d._p = t / t:sum(-1, true)
      if d._validate_args then check(d, "parameter probs", d._p, Cn.simplex) end
    else
      -- validated after normalising, as PyTorch: +inf, or a row of
      -- -inf, normalises to nan
      d._l = t - t:logsumexp(-1, true)
      if d._validate_args then check(d, "parameter logits", d._l, Cn.real) end
    end
    return d
  end)
  function Categorical:_probs() return rawget(self, "_p") or rawget(self, "_l"):softmax(-1) end
  function Categorical:_logits()
    local l = rawget(self, "_l")
    if l then return l end
    return clamp_probs(rawget(self, "_p")):log()
  end
  function Categorical:_mean()
    return T.full(self:_extended_shape(), 0 / 0, { dtype = self.probs.dtype })
  end
  Categorical._variance = Categorical._mean
  -- the 1-based class ids 1..K (int64)
  Categorical.has_enumerate_support = true
  function Categorical:enumerate_support(expand)
    return enumerate(self, T.arange(1, self._num_events + 1, { dtype = T.int64, device = self.probs.device }), expand)
  end
  -- the 1-based id of the largest probability (the first of ties)
  function Categorical:_mode() return self.probs:argmax(-1) end
  function Categorical:sample(shape)
    local ss = totable(shape)
    local n = 1
    for _, v in ipairs(ss) do n = n * v end
    local p = self.probs:detach():reshape(-1, self._num_events)
    local s = T.multinomial(p, n, true) -- (batch, n), 1-based
    local bs = totable(self.batch_shape)
    return s:t():contiguous():reshape(concat(ss, bs))
  end
  function Categorical:log_prob(v)
    self:_validate_sample(v)
    local l = self.logits
    local vs, ls = totable(v.shape), sub(totable(l.shape), 1, l.ndim - 1)
    local s = bshape("Categorical", { vs, ls }, "the value and the batch shape")
    local idx = v:long():expand(s):unsqueeze(-1)
    local lp = l:expand(concat(s, { self._num_events }))
    return lp:gather(-1, idx):squeeze(-1)
  end
  function Categorical:entropy()
    local l = self.logits
    local minr = l.dtype == T.float64 and -1.7976931348623157e308 or -3.4028234663852886e38
    return -(l:clamp(minr) * self.probs):sum(-1)
  end
  function Categorical:expand(bs)
    bs = totable(bs)
    local o = {}
    for k, v in pairs(self) do o[k] = v end
    if rawget(self, "_p") then o._p = self._p:expand(concat(bs, { self._num_events })) end
    if rawget(self, "_l") then o._l = self._l:expand(concat(bs, { self._num_events })) end
    o.batch_shape = T.Size(bs)
    return setmetatable(o, Categorical)
  end

  -- -- Exponential -------------------------------------------------------------------
  local Exponential = class("Exponential", Distribution)
  Exponential._params = { "rate" }
  Exponential.arg_constraints = { rate = Cn.positive }
  Exponential.has_rsample = true
  Exponential.support = Cn.nonnegative
  ctor(Exponential, function(rate, o)
    o = take_opts("Exponential", o, { "validate_args" })
    local p, s = params("Exponential", { rate, n = 1 })
    local d = init(new(Exponential, { rate = p[1] }), s, {}, o.validate_args)
    if d._validate_args then check(d, "parameter rate", d.rate, Cn.positive) end
    return d
  end)
  function Exponential:_mean() return self.rate:reciprocal() end
  function Exponential:_mode() return T.zeros_like(self.rate) end
  function Exponential:_stddev() return self.rate:reciprocal() end
  function Exponential:_variance() return self.rate:pow(-2) end
  function Exponential:rsample(shape)
    local e = T.empty(self:_extended_shape(shape), { dtype = self.rate.dtype, device = self.rate.device })
    return e:exponential_() / self.rate
  end
  function Exponential:log_prob(v)
    self:_validate_sample(v)
    return self.rate:log() - self.rate * v
  end
  function Exponential:cdf(v) self:_validate_sample(v); return -(-self.rate * v):exp() + 1 end
  function Exponential:icdf(p) return -(-p):log1p() / self.rate end
  function Exponential:entropy() return -self.rate:log() + 1 end

  -- -- Laplace -------------------------------------------------------------------------
  local Laplace = loc_scale_class("Laplace")
  function Laplace:_mean() return self.loc end
  function Laplace:_mode() return self.loc end
  function Laplace:_variance() return self.scale:pow(2) * 2 end
  function Laplace:_stddev() return self.scale * math.sqrt(2) end
  function Laplace:rsample(shape)
    local dt = self.loc.dtype
    local eps = dt == T.float64 and 2.220446049250313e-16 or 1.1920928955078125e-07
    local u = T.empty(self:_extended_shape(shape), { dtype = dt, device = self.loc.device }):uniform_(eps - 1, 1)
    return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
  end
  function Laplace:log_prob(v)
    self:_validate_sample(v)
    return -(self.scale * 2):log() - (v - self.loc):abs() / self.scale
  end
  function Laplace:cdf(v)
    self:_validate_sample(v)
    local z = v - self.loc
    return 0.5 - 0.5 * z:sign() * (-z:abs() / self.scale):expm1()
  end
  function Laplace:icdf(p)
    local t = p - 0.5
    return self.loc - self.scale * t:sign() * (-t:abs() * 2):log1p()
  end
  function Laplace:entropy() return (self.scale * 2):log() + 1 end

  -- -- Gamma (Marsaglia-Tsang) ----------------------------------------------------------
  -- Standard gamma draws of concentration a (a tensor, any shape): for a >= 1
  -- Marsaglia and Tsang's squeeze (d = a - 1/3, c = 1 / sqrt(9 d), accept
  -- (1 + c z)^3 d when log u < z^2 / 2 + d - d v + d log v); for a < 1 the
  -- draw for a + 1 times u^(1/a). Vectorised: rounds of draws for the
  -- elements not yet accepted (acceptance > 95% per round).
  local function standard_gamma(a)
    a = a:detach():contiguous()
    local dt, dev = a.dtype, a.device
    local small = a:lt(1)
    local b = T.where(small, a + 1, a)
    local d = b - 1 / 3
    local c = (d * 9):rsqrt()
    local out = T.zeros(a.shape, { dtype = dt, device = dev })
    local todo = T.ones(a.shape, { dtype = T.bool, device = dev })
    for _ = 1, 200 do
      if a:numel() == 0 or not todo:any():item() then break end
      local z = T.randn(a.shape, { dtype = dt, device = dev })
      local u = T.rand(a.shape, { dtype = dt, device = dev })
      local v = (c * z + 1):pow(3)
      local pos = v:gt(0)
      local vs = T.where(pos, v, 1)
      local ok = pos:logical_and(u:log():lt(z * z * 0.5 + d - d * vs + d * vs:log()))
      local take = ok:logical_and(todo)
      out = T.where(take, d * vs, out)
      todo = todo:logical_and(ok:logical_not())
    end
    local u = T.rand(a.shape, { dtype = dt, device = dev })
    local boost = T.where(small, u:pow(a:reciprocal()), 1)
    local tiny = dt == T.float64 and 2.2250738585072014e-308 or 1.1754943508222875e-38
    return (out * boost):clamp(tiny)
  end
  D._standard_gamma = standard_gamma

  -- PyTorch's _standard_gamma_grad (ATen's standard_gamma_grad_one): the
  -- implicit reparameterisation gradient dx/dalpha = -(d/dalpha cdf(x;
  -- alpha)) / pdf(x; alpha) of a standard gamma draw x, with PyTorch's
  -- approximations (a Taylor series below x = 0.8, Rice's saddle point
  -- expansion above alpha = 8, a bivariate rational fit elsewhere),
  -- computed in float64 elementwise
  local GRAD_UV = {
    { 0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084 },
    { 0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623 },
    { 0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07 },
  }
  local function standard_gamma_grad(alpha, x)
    local dt = x.dtype
    alpha, x = alpha:detach():double(), x:detach():double()
    -- small x: the series of the cdf and of its alpha-derivative
    local numer, denom = T.ones_like(x), alpha:clone()
    local s1, s2 = numer / denom, numer / (denom * denom)
    for i = 1, 5 do
      numer = numer * (-x / i)
      denom = denom + 1
      s1 = s1 + numer / denom
      s2 = s2 + numer / (denom * denom)
    end
    local pxa = x:pow(alpha)
    local pdf = x:pow(alpha - 1) * (-x):exp()
    local cdf = pxa * s1
    local cdf_a = (x:log() - alpha:digamma()) * cdf - pxa * s2
    local small = -cdf_a / pdf
    small = T.where(small:isnan(), 0, small)
    -- large alpha: Rice's saddle point expansion (near the mode, its series)
    local n1 = alpha * (alpha * 12 + 1) * 24 + 1
    local n2 = alpha:pow(2) * 1440 + x * (-x * 120 + 53) * 6 - x:pow(2) * 65 / alpha + alpha * (x * 3600 + 107)
    local near = n1 * n2 / (alpha:pow(2):pow(2) * 1244160)
    local den = (alpha * 8):sqrt()
    local t2 = den / (alpha - x)
    local t3 = (x - alpha - alpha * (x / alpha):log()):pow(-1.5)
    local t23 = T.where(x:lt(alpha), t2 - t3, t2 + t3)
    local t1 = (x / alpha):log() * t23 - (alpha:reciprocal() * 2):sqrt() * (alpha + x) / (alpha - x):pow(2)
    local stirling = (alpha * 12):reciprocal() * ((alpha * 24):reciprocal() + 1) + 1
    local far = -stirling * x * t1 / den
    local big = T.where(x:ge(alpha * 0.9):logical_and(x:le(alpha * 1.1)), near, far)
    -- elsewhere: the rational approximation in u = log(x / alpha), v = log(alpha)
    local u, v = (x / alpha):log(), alpha:log()
    local cv = {}
    for i = 1, 8 do cv[i] = (u * GRAD_UV[3][i] + GRAD_UV[2][i]) * u + GRAD_UV[1][i] end
    local pp = cv[1] + v * (cv[2] + v * (cv[3] + v * cv[4]))
    local qq = cv[5] + v * (cv[6] + v * (cv[7] + v * cv[8]))
    local mid = (pp / qq):exp()
    local r = T.where(x:lt(0.8), small, T.where(alpha:gt(8), big, mid))
    return r:to(dt)
  end
  D._standard_gamma_grad = standard_gamma_grad
  -- a standard gamma draw whose gradient in the concentration is the
  -- implicit one above (PyTorch's _standard_gamma's backward)
  local StdGamma = T.autograd.Function:extend("StandardGamma")
  function StdGamma.forward(ctx, a)
    local x = standard_gamma(a)
    ctx:save_for_backward(a, x)
    return x
  end
  function StdGamma.backward(ctx, g)
    local a, x = ctx.saved_tensors[1], ctx.saved_tensors[2]
    return g * standard_gamma_grad(a, x)
  end
  local function rgamma(a)
    if a.requires_grad then return StdGamma.apply(a) end
    return standard_gamma(a)
  end

  local Gamma = class("Gamma", Distribution)
  Gamma._params = { "concentration", "rate" }
  Gamma.arg_constraints = { concentration = Cn.positive, rate = Cn.positive }
  Gamma.has_rsample = true
  Gamma.support = Cn.nonnegative
  ctor(Gamma, function(concentration, rate, o)
    o = take_opts("Gamma", o, { "validate_args" })
    local p, s = params("Gamma", { concentration, rate, n = 2 })
    local d = init(new(Gamma, { concentration = p[1], rate = p[2] }), s, {}, o.validate_args)
    if d._validate_args then
      check(d, "parameter concentration", d.concentration, Cn.positive)
      check(d, "parameter rate", d.rate, Cn.positive)
    end
    return d
  end)
  function Gamma:_mean() return self.concentration / self.rate end
  function Gamma:_mode() return ((self.concentration - 1) / self.rate):clamp(0) end
  function Gamma:_variance() return self.concentration / self.rate:pow(2) end
  -- x = g / rate, g a standard gamma draw differentiable in the
  -- concentration through PyTorch's implicit gradient (standard_gamma_grad)
  function Gamma:rsample(shape)
    local es = self:_extended_shape(shape)
    local g = rgamma(self.concentration:expand(es))
    return g / self.rate
  end
  function Gamma:log_prob(v)
    self:_validate_sample(v)
    local a, b = self.concentration, self.rate
    return T.xlogy(a, b) + T.xlogy(a - 1, v) - b * v - a:lgamma()
  end
  function Gamma:entropy()
    local a = self.concentration
    return a - self.rate:log() + a:lgamma() + (-a + 1) * a:digamma()
  end

  -- the mode of Dirichlet(a) (and Beta's), PyTorch's: (a - 1)+ normalised
  -- (nan where that sums to 0), and the first vertex where every
  -- concentration is below 1 (torch's argmax of that all-nan row)
  local function dirichlet_mode(a)
    local am1 = (a - 1):clamp(0)
    local corner = a:lt(1):all(-1, true)
    -- a safe denominator at the corner rows, so their gradient is 0, not nan
    local m = am1 / T.where(corner, 1, am1:sum(-1, true))
    local k = a.shape[a.ndim]
    local first = T.arange(1, k + 1, { device = a.device }):eq(1):to(a.dtype)
    return T.where(corner:expand(m.shape), first:expand(m.shape), m)
  end

  -- -- Beta --------------------------------------------------------------------------------
  local Beta = class("Beta", Distribution)
  Beta._params = { "concentration1", "concentration0" }
  Beta.arg_constraints = { concentration1 = Cn.positive, concentration0 = Cn.positive }
  Beta.has_rsample = true
  Beta.support = Cn.unit_interval
  ctor(Beta, function(c1, c0, o)
    o = take_opts("Beta", o, { "validate_args" })
    local p, s = params("Beta", { c1, c0, n = 2 })
    local d = init(new(Beta, { concentration1 = p[1], concentration0 = p[2] }), s, {}, o.validate_args)
    if d._validate_args then
      check(d, "parameter concentration1", p[1], Cn.positive)
      check(d, "parameter concentration0", p[2], Cn.positive)
    end
    return d
  end)
  function Beta:_mean() return self.concentration1 / (self.concentration1 + self.concentration0) end
  function Beta:_mode()
    return dirichlet_mode(T.stack({ self.concentration1, self.concentration0 }, -1)):select(-1, 1)
  end
  function Beta:_variance()
    local a, b = self.concentration1, self.concentration0
    local t = a + b
    return a * b / (t:pow(2) * (t + 1))
  end
  function Beta:rsample(shape)
    local es = self:_extended_shape(shape)
    local x = rgamma(self.concentration1:expand(es))
    local y = rgamma(self.concentration0:expand(es))
    return x / (x + y)
  end
  local function lbeta(a, b) return a:lgamma() + b:lgamma() - (a + b):lgamma() end
  function Beta:log_prob(v)
    self:_validate_sample(v)
    local a, b = self.concentration1, self.concentration0
    return T.xlogy(a - 1, v) + T.special.xlog1py(b - 1, -v) - lbeta(a, b)
  end
  function Beta:entropy()
    local a, b = self.concentration1, self.concentration0
    local t = a + b
    return lbeta(a, b) - (a - 1) * a:digamma() - (b - 1) * b:digamma() + (t - 2) * t:digamma()
  end

  -- -- Dirichlet ---------------------------------------------------------------------------
  local Dirichlet = class("Dirichlet", Distribution)
  Dirichlet._params = { "concentration" }
  Dirichlet._param_event_dims = { concentration = 1 }
  Dirichlet.arg_constraints = { concentration = Cn.positive }
  Dirichlet.has_rsample = true
  Dirichlet.support = Cn.simplex
  ctor(Dirichlet, function(conc, o)
    o = take_opts("Dirichlet", o, { "validate_args" })
    A.check_tensor("Dirichlet", conc, "concentration", 3)
    if conc.ndim < 1 then error("Dirichlet: concentration must be at least one-dimensional", 3) end
    if not conc:is_floating_point() then conc = conc:to(T.get_default_dtype()) end
    local s = totable(conc.shape)
    local d = init(new(Dirichlet, { concentration = conc }), sub(s, 1, #s - 1), { s[#s] }, o.validate_args)
    if d._validate_args then check(d, "parameter concentration", conc, Cn.positive) end
    return d
  end)
  function Dirichlet:_mean() return self.concentration / self.concentration:sum(-1, true) end
  function Dirichlet:_mode() return dirichlet_mode(self.concentration) end
  function Dirichlet:_variance()
    local a = self.concentration
    local a0 = a:sum(-1, true)
    return a * (a0 - a) / (a0:pow(2) * (a0 + 1))
  end
  function Dirichlet:rsample(shape)
    local g = rgamma(self.concentration:expand(self:_extended_shape(shape)))
    return g / g:sum(-1, true)
  end
  function Dirichlet:log_prob(v)
    self:_validate_sample(v)
    local a = self.concentration
    return T.xlogy(a - 1, v):sum(-1) + a:sum(-1):lgamma() - a:lgamma():sum(-1)
  end
  function Dirichlet:entropy()
    local a = self.concentration
    local k = a.shape[a.ndim]
    local a0 = a:sum(-1)
    return a:lgamma():sum(-1) - a0:lgamma() - (a - 1):mul(a:digamma()):sum(-1) + (a0 - k) * a0:digamma()
  end

  -- -- Poisson (Knuth below 10, Hormann's PTRS above: the draws of NumPy and
  -- PyTorch) ---------------------------------------------------------------
  local function poisson_draw(rate)
    rate = rate:detach():contiguous()
    local dt, dev = rate.dtype, rate.device
    local out = T.zeros(rate.shape, { dtype = dt, device = dev })
    if rate:numel() == 0 then return out end
    local small = rate:lt(10)
    -- Knuth: count uniforms until their product falls below exp(-rate)
    local lim = (-rate):exp()
    local prod = T.ones(rate.shape, { dtype = dt, device = dev })
    local live = small:logical_and(rate:gt(0))
    local k = T.zeros(rate.shape, { dtype = dt, device = dev })
    for _ = 1, 2000 do
      if not live:any():item() then break end
      prod = prod * T.rand(rate.shape, { dtype = dt, device = dev })
      local more = live:logical_and(prod:gt(lim))
      k = k + more:to(dt)
      live = more
    end
    out = T.where(small, k, out)
    -- PTRS for rate >= 10
    local big = small:logical_not()
    if big:any():item() then
      local lam = T.where(big, rate, 10)
      local slam, loglam = lam:sqrt(), lam:log()
      local b = slam * 2.53 + 0.931
      local a = b * 0.02483 - 0.059
      local invalpha = (b - 3.4):reciprocal() * 1.1328 + 1.1239
      local vr = -(b - 2):reciprocal() * 3.6224 + 0.9277
      local todo = big:clone()
      for _ = 1, 500 do
        if not todo:any():item() then break end
        local U = T.rand(rate.shape, { dtype = dt, device = dev }) - 0.5
        local V = T.rand(rate.shape, { dtype = dt, device = dev })
        local us = -U:abs() + 0.5
        local kk = ((a * 2 / us + b) * U + lam + 0.43):floor()
        local quick = us:ge(0.07):logical_and(V:le(vr))
        local reject = kk:lt(0):logical_or(us:lt(0.013):logical_and(V:gt(us)))
        local lhs = V:log() + invalpha:log() - (a / (us * us) + b):log()
        local rhs = -lam + kk * loglam - (kk + 1):lgamma()
        local ok = quick:logical_or(reject:logical_not():logical_and(lhs:le(rhs)))
        local take = ok:logical_and(todo)
        out = T.where(take, kk, out)
        todo = todo:logical_and(ok:logical_not())
      end
    end
    return out
  end
  D._poisson = poisson_draw

  local Poisson = class("Poisson", Distribution)
  Poisson._params = { "rate" }
  Poisson.arg_constraints = { rate = Cn.nonnegative }
  Poisson.has_rsample = false
  Poisson.support = Cn.nonnegative_integer
  ctor(Poisson, function(rate, o)
    o = take_opts("Poisson", o, { "validate_args" })
    local p, s = params("Poisson", { rate, n = 1 })
    local d = init(new(Poisson, { rate = p[1] }), s, {}, o.validate_args)
    if d._validate_args then check(d, "parameter rate", d.rate, Cn.nonnegative) end
    return d
  end)
  function Poisson:_mean() return self.rate end
  function Poisson:_mode() return self.rate:floor() end
  function Poisson:_variance() return self.rate end
  function Poisson:sample(shape)
    return poisson_draw(self.rate:detach():expand(self:_extended_shape(shape)))
  end
  function Poisson:log_prob(v)
    self:_validate_sample(v)
    return T.xlogy(v, self.rate) - self.rate - (v + 1):lgamma()
  end

  -- -- transforms ------------------------------------------------------------------------
  -- PyTorch's torch.distributions.transforms (docs/distributions.md), under
  -- T.distributions.transforms (and T.distributions). Each has domain and
  -- codomain (constraints with an event_dim), event_dim, bijective, sign,
  -- inv (the inverse transform: t.inv(y) or t:inv(y); t.inv.inv is t),
  -- log_abs_det_jacobian(x, y), forward_shape/inverse_shape, with_cache and
  -- the option cache_size (0, or 1: the latest x, y pair is remembered, so
  -- the inverse of a forward result is the very input).
  local TR = {}
  D.transforms = TR
  local Transform = {}
  Transform.__name = "Transform"
  Transform._is_transform = true
  Transform._cache_size = 0
  TR.Transform = Transform
  local unpack = table.unpack or unpack
  -- a transform instance (not a class, nor a constructor)
  local function is_transform(v)
    local mt = type(v) == "table" and getmetatable(v)
    return type(mt) == "table" and rawget(mt, "__call") ~= nil and mt._is_transform == true
  end
  local function sum_right(x, n)
    for _ = 1, n do x = x:sum(-1) end
    return x
  end
  -- properties: a field of the class (or the instance), else the getter
  -- _get_<name>; t(x) and t:forward(x) run the transform, t(t2, x) is the
  -- method form of an inverse (t:inv(x) calls t.inv(t, x))
  local function tclass(name, parent)
    local cls = setmetatable({}, { __index = parent or Transform })
    cls.__name = name
    cls.__index = function(_, k)
      local v = cls[k]
      if v ~= nil then return v end
      local g = cls["_get_" .. k]
      if g then return g(_) end
      return nil
    end
    cls.__call = function(self, a, b, ...)
      if is_transform(a) and (b ~= nil or select("#", ...) > 0) then a, b = b, ... end
      if b ~= nil then error(fmt("%s: takes one tensor (and no options)", self.__name), 2) end
      return self:forward(a)
    end
    cls.__tostring = function(self) return self:_repr() end
    return cls
  end
  local function check_cache(name, n)
    if n ~= 0 and n ~= 1 then error(fmt("%s: cache_size must be 0 or 1, got %s", name, tostring(n)), 4) end
    return n
  end
  -- the constructor T.distributions.transforms[name](...), also as
  -- T.distributions[name]
  local function tctor(cls, f)
    local c = setmetatable({}, { __index = cls, __call = function(_, ...) return f(...) end,
      __tostring = function() return "distributions.transforms." .. cls.__name end })
    TR[cls.__name], D[cls.__name] = c, c
    cls.class = c
  end
  local function tnew(cls, o, fields)
    fields = fields or {}
    fields._cache_size = check_cache(cls.__name, o.cache_size == nil and 0 or o.cache_size)
    return setmetatable(fields, cls)
  end
  function Transform:_repr() return self.__name .. "()" end
  function Transform:_get_bijective() return false end
  function Transform:_get_sign() error(fmt("%s: sign is not implemented", self.__name), 3) end
  function Transform:_get_event_dim()
    local a, b = self.domain.event_dim, self.codomain.event_dim
    if a == b then return a end
    error(fmt("%s: the domain's event_dim (%d) and the codomain's (%d) differ: use domain.event_dim or "
      .. "codomain.event_dim", self.__name, a, b), 3)
  end
  function Transform:_call() error(fmt("%s: the forward map is not implemented", self.__name), 3) end
  function Transform:_inverse() error(fmt("%s: the inverse map is not implemented", self.__name), 3) end
  function Transform:log_abs_det_jacobian()
    error(fmt("%s: log_abs_det_jacobian is not implemented", self.__name), 2)
  end
  function Transform:forward_shape(s) return totable(s) end
  function Transform:inverse_shape(s) return totable(s) end
  local function check_input(self, x)
    if not T.is_tensor(x) then
      error(fmt("%s: expected a tensor, got %s", self.__name, type(x)), 4)
    end
  end
  -- with cache_size 1 the last (input, output) pair is kept, either way
  -- round (a tail call from forward/_inv_call: check_input's level holds)
  local function cached_call(self, v, kin, kout, method)
    check_input(self, v)
    if self._cache_size ~= 1 then return self[method](self, v) end
    local cv = rawget(self, kin)
    if cv ~= nil and rawequal(cv, v) then return rawget(self, kout) end
    local r = self[method](self, v)
    rawset(self, kin, v); rawset(self, kout, r)
    return r
  end
  function Transform:forward(x) return cached_call(self, x, "_cx", "_cy", "_call") end
  function Transform:_inv_call(y) return cached_call(self, y, "_cy", "_cx", "_inverse") end
  -- with_cache(n = 1): the same transform with cache_size n (itself when
  -- it already has it); the parts of a composite follow
  function Transform:with_cache(n, o)
    if n == nil then n = 1 end
    if o ~= nil then error(fmt("%s: with_cache takes one number, cache_size", self.__name), 2) end
    check_cache(self.__name, n)
    if self._cache_size == n then return self end
    local c = {}
    for k, v in pairs(self) do c[k] = v end
    c._cx, c._cy, c._inv_obj, c._cache_size = nil, nil, nil, n
    local parts_key = rawget(self, "parts") and "parts" or rawget(self, "transforms") and "transforms"
    if parts_key and n ~= 0 then
      local ps = {}
      for i, p in ipairs(self[parts_key]) do ps[i] = p:with_cache(n) end
      c[parts_key] = ps
    end
    if rawget(self, "base_transform") then c.base_transform = self.base_transform:with_cache(n) end
    return setmetatable(c, getmetatable(self))
  end

  -- the inverse of a transform (PyTorch's _InverseTransform)
  local Inverse = tclass("_InverseTransform")
  function Inverse:_get_domain() return self._inv.codomain end
  function Inverse:_get_codomain() return self._inv.domain end
  function Inverse:_get_bijective() return self._inv.bijective end
  function Inverse:_get_sign() return self._inv.sign end
  function Inverse:_get_event_dim() return self._inv.event_dim end
  function Inverse:_get_inv() return self._inv end
  function Inverse:with_cache(n) return self._inv:with_cache(n).inv end
  function Inverse:forward(x) return self._inv:_inv_call(x) end
  function Inverse:_inv_call(y) return self._inv:forward(y) end
  function Inverse:log_abs_det_jacobian(x, y) return -self._inv:log_abs_det_jacobian(y, x) end
  function Inverse:forward_shape(s) return self._inv:inverse_shape(s) end
  function Inverse:inverse_shape(s) return self._inv:forward_shape(s) end
  function Inverse:_repr() return "_InverseTransform(" .. self._inv:_repr() .. ")" end
  function Transform:_get_inv()
    local i = rawget(self, "_inv_obj")
    if not i then
      i = setmetatable({ _inv = self }, Inverse)
      rawset(self, "_inv_obj", i)
    end
    return i
  end

  local function finfo(dt)
    if dt == T.float64 then return 2.220446049250313e-16, 2.2250738585072014e-308 end
    return 1.1920928955078125e-07, 1.1754943508222875e-38
  end
  local function clipped_sigmoid(x)
    local eps, tiny = finfo(x.dtype)
    return x:sigmoid():clamp(tiny, 1 - eps)
  end
  local function only_opts(name, o) return take_opts(name, o, { "cache_size" }) end
  -- an elementwise transform without parameters
  local function simple(name, dom, cod, bij, call, inverse, ladj)
    local cls = tclass(name)
    cls.domain, cls.codomain = dom, cod
    if bij then cls.bijective, cls.sign = true, 1 end
    cls._call, cls._inverse = call, inverse
    if ladj then cls.log_abs_det_jacobian = ladj end
    tctor(cls, function(o) return tnew(cls, only_opts(name, o)) end)
    return cls
  end
  local softplus = function(x) return T.nn.functional.softplus(x) end
  simple("ExpTransform", Cn.real, Cn.positive, true,
    function(_, x) return x:exp() end, function(_, y) return y:log() end,
    function(_, x) return x end)
  -- sigmoid and logit clamped to [finfo.tiny, 1 - finfo.eps], as PyTorch's
  -- _clipped_sigmoid and SigmoidTransform._inverse
  simple("SigmoidTransform", Cn.real, Cn.unit_interval, true,
    function(_, x) return clipped_sigmoid(x) end,
    function(_, y)
      local eps, tiny = finfo(y.dtype)
      local c = y:clamp(tiny, 1 - eps)
      return c:log() - (-c):log1p()
    end,
    function(_, x) return -softplus(-x) - softplus(x) end)
  simple("SoftplusTransform", Cn.real, Cn.positive, true,
    function(_, x) return softplus(x) end,
    function(_, y) return (-y):expm1():neg():log() + y end,
    function(_, x) return -softplus(-x) end)
  simple("TanhTransform", Cn.real, interval(-1, 1), true,
    function(_, x) return x:tanh() end, function(_, y) return y:atanh() end,
    function(_, x) return (-x - softplus(x * -2) + math.log(2)) * 2 end)
  -- |x|: not bijective; its inverse is the identity (the positive branch)
  simple("AbsTransform", Cn.real, Cn.positive, false,
    function(_, x) return x:abs() end, function(_, y) return y end)
  -- softmax over the last dim (not bijective; its inverse is log)
  local Softmax = simple("SoftmaxTransform", Cn.real_vector, Cn.simplex, false,
    function(_, x)
      local p = (x - x:amax(-1, true)):exp()
      return p / p:sum(-1, true)
    end, function(_, y) return y:log() end)
  local function need_dims(name, s, n)
    if #s < n then error(fmt("%s: too few dimensions on input (%s, need at least %d)", name, A.fmt_shape(s), n), 4) end
  end
  function Softmax:forward_shape(s) s = totable(s); need_dims(self.__name, s, 1); return s end
  Softmax.inverse_shape = Softmax.forward_shape
  -- stick breaking: R^K -> the simplex of K + 1 entries
  local function sb_offset(x, k) -- k, k - 1, ..., 1
    return T.arange(k, 0, -1, { dtype = x.dtype, device = x.device })
  end
  local function last_pad(t, before, v)
    local s = totable(t.shape)
    s[#s] = 1
    local c = T.full(s, v, { dtype = t.dtype, device = t.device })
    return before and T.cat({ c, t }, -1) or T.cat({ t, c }, -1)
  end
  local SB = simple("StickBreakingTransform", Cn.real_vector, Cn.simplex, true,
    function(_, x)
      local k = x.shape[x.ndim]
      local z = clipped_sigmoid(x - sb_offset(x, k):log())
      local zc = (-z + 1):cumprod(-1)
      return last_pad(z, false, 1) * last_pad(zc, true, 1)
    end,
    function(_, y)
      local k = y.shape[y.ndim] - 1
      local yc = y:narrow(-1, 1, k)
      local _, tiny = finfo(y.dtype)
      local sf = (-yc:cumsum(-1) + 1):clamp(tiny)
      return yc:log() - sf:log() + sb_offset(y, k):log()
    end,
    function(_, x, y)
      local k = x.shape[x.ndim]
      local xo = x - sb_offset(x, k):log()
      return (-xo + T.nn.functional.logsigmoid(xo) + y:narrow(-1, 1, k):log()):sum(-1)
    end)
  SB.sign = nil -- bijective, but not elementwise: no sign (PyTorch's NotImplementedError)
  function SB:forward_shape(s)
    s = totable(s); need_dims(self.__name, s, 1); s[#s] = s[#s] + 1; return s
  end
  function SB:inverse_shape(s)
    s = totable(s); need_dims(self.__name, s, 1); s[#s] = s[#s] - 1; return s
  end
  -- unconstrained matrices -> lower triangular with a positive diagonal
  simple("LowerCholeskyTransform", Cn.independent(Cn.real, 2), Cn.lower_cholesky, false,
    function(_, x) return x:tril(-1) + x:diagonal(0, -2, -1):exp():diag_embed() end,
    function(_, y) return y:tril(-1) + y:diagonal(0, -2, -1):log():diag_embed() end)

  -- PowerTransform(exponent): x^exponent on the positive reals
  local Pow = tclass("PowerTransform")
  Pow.domain, Pow.codomain, Pow.bijective, Pow.sign = Cn.positive, Cn.positive, true, 1
  tctor(Pow, function(exponent, o)
    o = only_opts("PowerTransform", o)
    local p = params("PowerTransform", { exponent, n = 1 })
    return tnew(Pow, o, { exponent = p[1] })
  end)
  function Pow:_call(x) return x:pow(self.exponent) end
  function Pow:_inverse(y) return y:pow(self.exponent:reciprocal()) end
  function Pow:log_abs_det_jacobian(x, y) return (self.exponent * y / x):abs():log() end
  function Pow:forward_shape(s) return bshape("PowerTransform", { totable(s), totable(self.exponent.shape) }) end
  Pow.inverse_shape = Pow.forward_shape
  function Pow:_repr() return "PowerTransform(exponent=" .. tostring(self.exponent) .. ")" end

  -- AffineTransform(loc, scale, {event_dim=, cache_size=}): loc + scale x
  local Aff = tclass("AffineTransform")
  Aff.bijective = true
  tctor(Aff, function(loc, scale, o)
    o = take_opts("AffineTransform", o, { "event_dim", "cache_size" })
    for _, p in ipairs { { "loc", loc }, { "scale", scale } } do
      if type(p[2]) ~= "number" and not T.is_tensor(p[2]) then
        error(fmt("AffineTransform: expected a tensor or a number for %s, got %s", p[1], type(p[2])), 3)
      end
    end
    local ed = o.event_dim or 0
    if type(ed) ~= "number" or ed ~= math.floor(ed) or ed < 0 then
      error(fmt("AffineTransform: event_dim must be a non-negative integer, got %s", tostring(ed)), 3)
    end
    return tnew(Aff, o, { loc = loc, scale = scale, event_dim = ed })
  end)
  function Aff:_get_domain()
    return self.event_dim == 0 and Cn.real or Cn.independent(Cn.real, self.event_dim)
  end
  Aff._get_codomain = Aff._get_domain
  function Aff:_get_sign()
    local s = self.scale
    if type(s) == "number" then return s > 0 and 1 or s < 0 and -1 or 0 end
    return s:sign()
  end
  function Aff:_call(x) return x * self.scale + self.loc end
  function Aff:_inverse(y) return (y - self.loc) / self.scale end
  function Aff:forward_shape(s)
    local shapes = { totable(s) }
    for _, p in ipairs { self.loc, self.scale } do
      if T.is_tensor(p) then shapes[#shapes + 1] = totable(p.shape) end
    end
    return bshape("AffineTransform", shapes)
  end
  Aff.inverse_shape = Aff.forward_shape
  -- log|scale| broadcast against x, summed over the event dims (torch 1.13
  -- sums the scale's own trailing dims before broadcasting, which drops the
  -- count of the event's elements a broadcast scale covers)
  function Aff:log_abs_det_jacobian(x, y)
    local s = self.scale
    local r
    if T.is_tensor(s) then
      r = s:abs():log()
      r = r:expand(bshape("AffineTransform", { totable(x.shape), totable(r.shape) }))
    else
      r = T.full(x.shape, math.log(math.abs(s)), { dtype = x.dtype, device = x.device })
    end
    return sum_right(r, self.event_dim)
  end
  function Aff:_repr() return "AffineTransform()" end

  -- ComposeTransform(parts, {cache_size=}): parts applied in order
  local Compose = tclass("ComposeTransform")
  local function check_list(name, list, what)
    if type(list) ~= "table" or is_transform(list) or getmetatable(list) ~= nil then
      error(fmt("%s: expected a list of transforms for %s, got %s", name, what,
        is_transform(list) and "a transform" or T.is_tensor(list) and "a tensor" or type(list)), 4)
    end
    local r = {}
    for i = 1, #list do
      if not is_transform(list[i]) then
        error(fmt("%s: %s[%d] is not a transform", name, what, i), 4)
      end
      r[i] = list[i]
    end
    return r
  end
  local function compose(parts, n)
    if n ~= 0 then for i, p in ipairs(parts) do parts[i] = p:with_cache(n) end end
    return setmetatable({ parts = parts, _cache_size = n }, Compose)
  end
  tctor(Compose, function(parts, o)
    o = only_opts("ComposeTransform", o)
    local ps = check_list("ComposeTransform", parts, "parts")
    return compose(ps, check_cache("ComposeTransform", o.cache_size or 0))
  end)
  TR.identity_transform = compose({}, 0)
  function Compose:_get_domain()
    local ps = self.parts
    if #ps == 0 then return Cn.real end
    local dom = ps[1].domain
    local ed = ps[#ps].codomain.event_dim
    for i = #ps, 1, -1 do
      ed = ed + ps[i].domain.event_dim - ps[i].codomain.event_dim
      ed = math.max(ed, ps[i].domain.event_dim)
    end
    if ed > dom.event_dim then dom = Cn.independent(dom, ed - dom.event_dim) end
    return dom
  end
  function Compose:_get_codomain()
    local ps = self.parts
    if #ps == 0 then return Cn.real end
    local cod = ps[#ps].codomain
    local ed = ps[1].domain.event_dim
    for i = 1, #ps do
      ed = ed + ps[i].codomain.event_dim - ps[i].domain.event_dim
      ed = math.max(ed, ps[i].codomain.event_dim)
    end
    if ed > cod.event_dim then cod = Cn.independent(cod, ed - cod.event_dim) end
    return cod
  end
  function Compose:_get_bijective()
    for _, p in ipairs(self.parts) do if not p.bijective then return false end end
    return true
  end
  -- the product of the parts' signs (a tensor where one is)
  function Compose:_get_sign()
    local s = 1
    for _, p in ipairs(self.parts) do
      local ps = p.sign
      if type(ps) == "number" and type(s) == "number" then s = s * ps
      elseif type(ps) == "number" then s = s * ps
      else s = ps * s end
    end
    return s
  end
  function Compose:_get_inv()
    local i = rawget(self, "_inv_obj")
    if not i then
      local ps = {}
      for k = #self.parts, 1, -1 do ps[#ps + 1] = self.parts[k].inv end
      i = setmetatable({ parts = ps, _cache_size = 0, _inv_obj = self }, Compose)
      rawset(self, "_inv_obj", i)
    end
    return i
  end
  function Compose:forward(x)
    check_input(self, x)
    for _, p in ipairs(self.parts) do x = p:forward(x) end
    return x
  end
  function Compose:_inv_call(y) return self.inv:forward(y) end
  function Compose:log_abs_det_jacobian(x, y)
    local ps = self.parts
    if #ps == 0 then return T.zeros_like(x) end
    local xs = { x }
    for i = 1, #ps - 1 do xs[i + 1] = ps[i]:forward(xs[i]) end
    xs[#ps + 1] = y
    local ed = self.domain.event_dim
    local r
    for i, p in ipairs(ps) do
      local term = sum_right(p:log_abs_det_jacobian(xs[i], xs[i + 1]), ed - p.domain.event_dim)
      ed = ed + p.codomain.event_dim - p.domain.event_dim
      r = r and r + term or term
    end
    return r
  end
  function Compose:forward_shape(s)
    s = totable(s)
    for _, p in ipairs(self.parts) do s = p:forward_shape(s) end
    return s
  end
  function Compose:inverse_shape(s)
    s = totable(s)
    for i = #self.parts, 1, -1 do s = self.parts[i]:inverse_shape(s) end
    return s
  end
  function Compose:_repr()
    local r = {}
    for i, p in ipairs(self.parts) do r[i] = p:_repr() end
    return "ComposeTransform(" .. table.concat(r, ", ") .. ")"
  end

  local function nonneg_int(name, v, what)
    if type(v) ~= "number" or v ~= math.floor(v) or v < 0 then
      error(fmt("%s: %s must be a non-negative integer, got %s", name, what, tostring(v)), 4)
    end
    return v
  end
  -- IndependentTransform(base, n, {cache_size=}): base with n more
  -- rightmost dims taken as event dims (log_abs_det_jacobian sums them)
  local IndT = tclass("IndependentTransform")
  tctor(IndT, function(base, n, o)
    o = only_opts("IndependentTransform", o)
    if not is_transform(base) then
      error(fmt("IndependentTransform: expected a transform for base_transform, got %s",
        T.is_tensor(base) and "a tensor" or type(base)), 2)
    end
    nonneg_int("IndependentTransform", n, "reinterpreted_batch_ndims")
    local c = check_cache("IndependentTransform", o.cache_size or 0)
    return setmetatable({ base_transform = base:with_cache(c), reinterpreted_batch_ndims = n, _cache_size = c }, IndT)
  end)
  function IndT:_get_domain() return Cn.independent(self.base_transform.domain, self.reinterpreted_batch_ndims) end
  function IndT:_get_codomain() return Cn.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims) end
  function IndT:_get_bijective() return self.base_transform.bijective end
  function IndT:_get_sign() return self.base_transform.sign end
  function IndT:_call(x)
    if x.ndim < self.domain.event_dim then
      error(fmt("IndependentTransform: too few dimensions on input (%d, need at least %d)", x.ndim, self.domain.event_dim), 4)
    end
    return self.base_transform:forward(x)
  end
  function IndT:_inverse(y)
    if y.ndim < self.codomain.event_dim then
      error(fmt("IndependentTransform: too few dimensions on input (%d, need at least %d)", y.ndim, self.codomain.event_dim), 4)
    end
    return self.base_transform.inv:forward(y)
  end
  function IndT:log_abs_det_jacobian(x, y)
    return sum_right(self.base_transform:log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)
  end
  function IndT:forward_shape(s) return self.base_transform:forward_shape(s) end
  function IndT:inverse_shape(s) return self.base_transform:inverse_shape(s) end
  function IndT:_repr()
    return fmt("IndependentTransform(%s, %d)", self.base_transform:_repr(), self.reinterpreted_batch_ndims)
  end

  -- ReshapeTransform(in_shape, out_shape, {cache_size=}): the rightmost
  -- in_shape dims reshaped to out_shape (unit Jacobian)
  local Resh = tclass("ReshapeTransform")
  Resh.bijective = true
  local function shape_arg(name, s, what)
    if T.is_tensor(s) or type(s) ~= "table" and type(s) ~= "userdata" then
      error(fmt("%s: expected a shape (a list of sizes) for %s, got %s", name, what, type(s)), 4)
    end
    s = totable(s)
    for _, v in ipairs(s) do nonneg_int(name, v, what .. "'s sizes") end
    return s
  end
  local function numel(s) local n = 1; for _, v in ipairs(s) do n = n * v end; return n end
  tctor(Resh, function(ins, outs, o)
    o = only_opts("ReshapeTransform", o)
    ins, outs = shape_arg("ReshapeTransform", ins, "in_shape"), shape_arg("ReshapeTransform", outs, "out_shape")
    if numel(ins) ~= numel(outs) then
      error(fmt("ReshapeTransform: in_shape %s and out_shape %s have different numbers of elements",
        A.fmt_shape(ins), A.fmt_shape(outs)), 2)
    end
    return tnew(Resh, o, { in_shape = T.Size(ins), out_shape = T.Size(outs), _ins = ins, _outs = outs })
  end)
  function Resh:_get_domain() return Cn.independent(Cn.real, #self._ins) end
  function Resh:_get_codomain() return Cn.independent(Cn.real, #self._outs) end
  function Resh:_call(x)
    local s = totable(x.shape)
    return x:reshape(concat(sub(s, 1, #s - #self._ins), self._outs))
  end
  function Resh:_inverse(y)
    local s = totable(y.shape)
    return y:reshape(concat(sub(s, 1, #s - #self._outs), self._ins))
  end
  function Resh:log_abs_det_jacobian(x)
    local s = totable(x.shape)
    return T.zeros(sub(s, 1, #s - #self._ins), { dtype = x.dtype, device = x.device })
  end
  local function reshape_shape(name, s, from, to)
    s = totable(s)
    need_dims(name, s, #from)
    local cut = #s - #from
    for i = 1, #from do
      if s[cut + i] ~= from[i] then
        error(fmt("%s: shape mismatch: expected %s but got %s", name, A.fmt_shape(from), A.fmt_shape(sub(s, cut + 1))), 4)
      end
    end
    return concat(sub(s, 1, cut), to)
  end
  function Resh:forward_shape(s) return reshape_shape(self.__name, s, self._ins, self._outs) end
  function Resh:inverse_shape(s) return reshape_shape(self.__name, s, self._outs, self._ins) end

  -- a dim argument: 1-based, negative from the end (-1 the last)
  local function dim_arg(name, d)
    if d == nil then return 1 end
    if type(d) ~= "number" or d ~= math.floor(d) or d == 0 then
      error(fmt("%s: dim must be a nonzero integer (1-based, or negative from the end), got %s", name, tostring(d)), 4)
    end
    return d
  end
  local function check_dim(name, x, d, size, what)
    if d > x.ndim or d < -x.ndim then
      error(fmt("%s: dim %d is out of range for a tensor of %d dims", name, d, x.ndim), 5)
    end
    if x.shape[d > 0 and d or x.ndim + d + 1] ~= size then
      error(fmt("%s: the size of dim %d is %d, expected %d (%s)", name, d, x.shape[d > 0 and d or x.ndim + d + 1],
        size, what), 5)
    end
  end
  -- a constraint made of the pieces' constraints along dim (PyTorch's
  -- constraints.cat and constraints.stack)
  local function pieces_constraint(name, cs, pieces)
    local ed = 0
    for _, c in ipairs(cs) do ed = math.max(ed, c.event_dim) end
    return constraint(name, function(v)
      local ok = true
      for i, c in ipairs(cs) do ok = ok and c.check(pieces(v, i)):all():item() end
      return T.tensor(ok)
    end, ed)
  end
  -- CatTransform(tseq, dim = 1, lengths = {1, ...}, {cache_size=}): each
  -- transform on its slice of dim (lengths[i] long), as torch.cat
  local Cat = tclass("CatTransform")
  tctor(Cat, function(tseq, dim, lengths, o)
    -- the options (also dim= and lengths=) may follow tseq or dim
    if type(dim) == "table" and lengths == nil and o == nil then o, dim = dim, nil
    elseif type(lengths) == "table" and o == nil and lengths[1] == nil and next(lengths) ~= nil then o, lengths = lengths, nil end
    o = take_opts("CatTransform", o, { "dim", "lengths", "cache_size" })
    if (dim ~= nil and o.dim ~= nil) or (lengths ~= nil and o.lengths ~= nil) then
      error("CatTransform: dim or lengths given twice (positionally and as an option)", 2)
    end
    if dim == nil then dim = o.dim end
    if lengths == nil then lengths = o.lengths end
    local ts = check_list("CatTransform", tseq, "tseq")
    dim = dim_arg("CatTransform", dim)
    local ls = {}
    if lengths == nil then
      for i = 1, #ts do ls[i] = 1 end
    else
      if type(lengths) ~= "table" or #lengths ~= #ts then
        error(fmt("CatTransform: lengths must be a list of %d lengths (one per transform)", #ts), 2)
      end
      for i = 1, #ts do ls[i] = nonneg_int("CatTransform", lengths[i], "lengths") end
    end
    local c = check_cache("CatTransform", o.cache_size or 0)
    if c ~= 0 then for i, t in ipairs(ts) do ts[i] = t:with_cache(c) end end
    local ed, len = 0, 0
    for i, t in ipairs(ts) do ed = math.max(ed, t.event_dim); len = len + ls[i] end
    return setmetatable({ transforms = ts, lengths = ls, dim = dim, event_dim = ed, length = len, _cache_size = c }, Cat)
  end)
  local function cat_map(self, x, f)
    check_dim(self.__name, x, self.dim, self.length, "the sum of lengths")
    local out, start = {}, 1
    for i, t in ipairs(self.transforms) do
      out[i] = f(t, x:narrow(self.dim, start, self.lengths[i]))
      start = start + self.lengths[i]
    end
    return T.cat(out, self.dim)
  end
  function Cat:_call(x) return cat_map(self, x, function(t, s) return t:forward(s) end) end
  function Cat:_inverse(y) return cat_map(self, y, function(t, s) return t.inv:forward(s) end) end
  function Cat:log_abs_det_jacobian(x, y)
    check_dim(self.__name, x, self.dim, self.length, "the sum of lengths")
    check_dim(self.__name, y, self.dim, self.length, "the sum of lengths")
    local out, start = {}, 1
    for i, t in ipairs(self.transforms) do
      local l = t:log_abs_det_jacobian(x:narrow(self.dim, start, self.lengths[i]), y:narrow(self.dim, start, self.lengths[i]))
      if t.event_dim < self.event_dim then l = sum_right(l, self.event_dim - t.event_dim) end
      out[i] = l
      start = start + self.lengths[i]
    end
    local d = self.dim > 0 and self.dim - 1 - x.ndim or self.dim -- from the end: -1 the last
    d = d + self.event_dim
    if d < 0 then return T.cat(out, d) end
    local r = out[1]
    for i = 2, #out do r = r + out[i] end
    return r
  end
  function Cat:_get_bijective()
    for _, t in ipairs(self.transforms) do if not t.bijective then return false end end
    return true
  end
  local function cat_constraint(self, which)
    local cs = {}
    for i, t in ipairs(self.transforms) do cs[i] = t[which] end
    return pieces_constraint("cat", cs, function(v, i)
      local start = 1
      for k = 1, i - 1 do start = start + self.lengths[k] end
      return v:narrow(self.dim, start, self.lengths[i])
    end)
  end
  function Cat:_get_domain() return cat_constraint(self, "domain") end
  function Cat:_get_codomain() return cat_constraint(self, "codomain") end

  -- StackTransform(tseq, dim = 1, {cache_size=}): the i-th transform on
  -- the i-th slice of dim, as torch.stack
  local Stack = tclass("StackTransform")
  tctor(Stack, function(tseq, dim, o)
    if type(dim) == "table" and o == nil then o, dim = dim, nil end
    o = take_opts("StackTransform", o, { "dim", "cache_size" })
    if dim ~= nil and o.dim ~= nil then error("StackTransform: dim given twice (positionally and as an option)", 2) end
    if dim == nil then dim = o.dim end
    local ts = check_list("StackTransform", tseq, "tseq")
    dim = dim_arg("StackTransform", dim)
    local c = check_cache("StackTransform", o.cache_size or 0)
    if c ~= 0 then for i, t in ipairs(ts) do ts[i] = t:with_cache(c) end end
    return setmetatable({ transforms = ts, dim = dim, _cache_size = c }, Stack)
  end)
  local function stack_map(self, f, ...)
    local args = { ... }
    for _, a in ipairs(args) do check_dim(self.__name, a, self.dim, #self.transforms, "the number of transforms") end
    local out = {}
    for i, t in ipairs(self.transforms) do
      local sl = {}
      for k, a in ipairs(args) do sl[k] = a:select(self.dim, i) end
      out[i] = f(t, unpack(sl))
    end
    return T.stack(out, self.dim)
  end
  function Stack:_call(x) return stack_map(self, function(t, s) return t:forward(s) end, x) end
  function Stack:_inverse(y) return stack_map(self, function(t, s) return t.inv:forward(s) end, y) end
  function Stack:log_abs_det_jacobian(x, y)
    return stack_map(self, function(t, a, b) return t:log_abs_det_jacobian(a, b) end, x, y)
  end
  Stack._get_bijective = Cat._get_bijective
  local function stack_constraint(self, which)
    local cs = {}
    for i, t in ipairs(self.transforms) do cs[i] = t[which] end
    return pieces_constraint("stack", cs, function(v, i) return v:select(self.dim, i) end)
  end
  function Stack:_get_domain() return stack_constraint(self, "domain") end
  function Stack:_get_codomain() return stack_constraint(self, "codomain") end

  -- CumulativeDistributionTransform(distribution, {cache_size=}): its cdf
  -- (inverse: icdf; log_abs_det_jacobian: log_prob)
  local CDT = tclass("CumulativeDistributionTransform")
  CDT.bijective, CDT.codomain, CDT.sign = true, Cn.unit_interval, 1
  tctor(CDT, function(dist, o)
    check_dist("CumulativeDistributionTransform", dist, "distribution")
    o = only_opts("CumulativeDistributionTransform", o)
    return tnew(CDT, o, { distribution = dist })
  end)
  function CDT:_get_domain() return self.distribution.support end
  function CDT:_call(x) return self.distribution:cdf(x) end
  function CDT:_inverse(y) return self.distribution:icdf(y) end
  function CDT:log_abs_det_jacobian(x) return self.distribution:log_prob(x) end

  -- -- TransformedDistribution / LogNormal ------------------------------------------------
  -- Shapes as PyTorch's TransformedDistribution: the base is expanded to
  -- the transforms' broadcast shape, and base batch dims the transforms
  -- treat as event dims (the composed domain's event_dim above the
  -- base's) are reinterpreted through Independent.
  local TD = class("TransformedDistribution", Distribution)
  local function td_new(cls, base, transforms, o)
    check_dist(cls.__name, base, "base_distribution")
    o = take_opts(cls.__name, o, { "validate_args" })
    if is_transform(transforms) then transforms = { transforms } end
    if type(transforms) ~= "table" or getmetatable(transforms) ~= nil then
      error(fmt("%s: transforms must be a transform or a list of transforms, got %s", cls.__name,
        T.is_tensor(transforms) and "a tensor" or type(transforms)), 3)
    end
    local ts = {}
    for i = 1, #transforms do
      if not is_transform(transforms[i]) then
        error(fmt("%s: transforms[%d] is not a transform", cls.__name, i), 3)
      end
      ts[i] = transforms[i]
    end
    local comp = compose({ unpack(ts) }, 0)
    local base_shape = concat(totable(base.batch_shape), totable(base.event_shape))
    local base_ed = #totable(base.event_shape)
    local ded = comp.domain.event_dim
    if #base_shape < ded then
      error(fmt("%s: base_distribution needs to have shape with size at least %d, but got %s", cls.__name, ded,
        A.fmt_shape(base_shape)), 3)
    end
    local shape = comp:forward_shape(base_shape)
    local back = comp:inverse_shape(shape)
    local same = #back == #base_shape
    for i = 1, #back do if back[i] ~= base_shape[i] then same = false end end
    if not same then base = base:expand(sub(back, 1, #back - base_ed)) end
    if ded > base_ed then base = D.Independent(base, ded - base_ed) end
    local event_dim = comp.codomain.event_dim + math.max(base_ed - ded, 0)
    local d = new(cls, { base_dist = base, transforms = ts })
    init(d, sub(shape, 1, #shape - event_dim), sub(shape, #shape - event_dim + 1), o.validate_args)
    d.has_rsample = base.has_rsample
    return d
  end
  ctor(TD, function(base, transforms, o) return td_new(TD, base, transforms, o) end)
  -- the last transform's codomain (the base's support without
  -- transforms), reinterpreted over the event dims it does not cover
  function TD:_support()
    local n = #self.transforms
    if n == 0 then return self.base_dist.support end
    local s = self.transforms[n].codomain
    local ne = #totable(self.event_shape)
    if ne > s.event_dim then s = Cn.independent(s, ne - s.event_dim) end
    return s
  end
  function TD:rsample(shape)
    local x = self.base_dist:rsample(shape)
    for _, t in ipairs(self.transforms) do x = t:forward(x) end
    return x
  end
  function TD:sample(shape)
    return T.no_grad(function()
      local x = self.base_dist:sample(shape)
      for _, t in ipairs(self.transforms) do x = t:forward(x) end
      return x
    end)
  end
  function TD:log_prob(y)
    self:_validate_sample(y)
    local event_dim = #totable(self.event_shape)
    local lp = 0
    for i = #self.transforms, 1, -1 do
      local t = self.transforms[i]
      local x = t.inv:forward(y)
      event_dim = event_dim + t.domain.event_dim - t.codomain.event_dim
      lp = lp - sum_right(t:log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
      y = x
    end
    return lp + sum_right(self.base_dist:log_prob(y), event_dim - #totable(self.base_dist.event_shape))
  end
  -- PyTorch's _monotonize_cdf: value flipped around 1/2 where the product
  -- of the transforms' signs is negative (elementwise for a tensor sign)
  local function monotonize(self, v)
    local s = 1
    for _, t in ipairs(self.transforms) do
      local ok, ts = pcall(function() return t.sign end)
      if not ok then
        error(fmt("%s: cdf and icdf need transforms of known sign (%s has none)", self.__name, t.__name), 3)
      end
      s = ts * s
    end
    if s == 1 then return v end
    return (v - 0.5) * s + 0.5
  end
  function TD:cdf(y)
    for i = #self.transforms, 1, -1 do y = self.transforms[i].inv:forward(y) end
    if self._validate_args then -- the base's support, as PyTorch's (whatever the base's own flag)
      local b = self.base_dist
      local prev = rawget(b, "_validate_args")
      b._validate_args = true
      local ok, e = pcall(b._validate_sample, b, y)
      b._validate_args = prev
      if not ok then error(A.unpos(e), 2) end
    end
    return monotonize(self, self.base_dist:cdf(y))
  end
  function TD:icdf(p)
    local x = self.base_dist:icdf(monotonize(self, p))
    for _, t in ipairs(self.transforms) do x = t:forward(x) end
    return x
  end
  -- the base expanded to the batch shape the transforms map back to; the
  -- class's own parameters (_td_params) expanded with it
  function TD:expand(bs)
    bs = totable(bs)
    local shape = concat(bs, totable(self.event_shape))
    for i = #self.transforms, 1, -1 do shape = self.transforms[i]:inverse_shape(shape) end
    local o = {}
    for k, v in pairs(self) do o[k] = v end
    o.base_dist = self.base_dist:expand(sub(shape, 1, #shape - #totable(self.base_dist.event_shape)))
    o.batch_shape = T.Size(bs)
    local cls = getmetatable(self)
    for _, k in ipairs(cls._td_params or {}) do
      if rawget(self, k) then o[k] = self[k]:expand(bs) end
    end
    return setmetatable(o, cls)
  end

  local LogNormal = class("LogNormal", TD)
  LogNormal.support = Cn.positive
  LogNormal.arg_constraints = { loc = Cn.real, scale = Cn.positive }
  LogNormal.has_rsample = true
  ctor(LogNormal, function(loc, scale, o)
    o = take_opts("LogNormal", o, { "validate_args" })
    -- Normal's messages (a bad loc or scale) under LogNormal's name
    local ok, base = pcall(D.Normal, loc, scale, { validate_args = o.validate_args })
    if not ok then
      if type(base) ~= "string" then error(base, 0) end
      error("LogNormal: " .. A.unpos(base):gsub("^Normal: ", ""), 2)
    end
    local d = td_new(LogNormal, base, { D.ExpTransform() }, { validate_args = o.validate_args })
    d.loc, d.scale = base.loc, base.scale
    return d
  end)
  function LogNormal:_support() return Cn.positive end
  function LogNormal:_mean() return (self.loc + self.scale:pow(2) / 2):exp() end
  function LogNormal:_mode() return (self.loc - self.scale:pow(2)):exp() end
  function LogNormal:_variance()
    local s2 = self.scale:pow(2)
    return s2:expm1() * (self.loc * 2 + s2):exp()
  end
  function LogNormal:entropy() return self.base_dist:entropy() + self.loc end
  function LogNormal:expand(bs)
    local o = TD.expand(self, bs)
    o.loc, o.scale = o.base_dist.loc, o.base_dist.scale
    return o
  end

  D._td_new = td_new
  D._sum_right = sum_right

  -- -- Cauchy and the distributions PyTorch builds from transforms -------------------------
  local EULER_GAMMA = 0.57721566490153286061
  local INFINITY = 1 / 0
  local Cauchy = loc_scale_class("Cauchy")
  function Cauchy:_mean() return T.full(self:_extended_shape(), 0 / 0, { dtype = self.loc.dtype, device = self.loc.device }) end
  function Cauchy:_mode() return self.loc end
  function Cauchy:_variance() return T.full(self:_extended_shape(), INFINITY, { dtype = self.loc.dtype, device = self.loc.device }) end
  function Cauchy:rsample(shape)
    local eps = T.empty(self:_extended_shape(shape), { dtype = self.loc.dtype, device = self.loc.device }):cauchy_()
    return self.loc + eps * self.scale
  end
  function Cauchy:log_prob(v)
    self:_validate_sample(v)
    return -math.log(pi) - self.scale:log() - (((v - self.loc) / self.scale):pow(2) + 1):log()
  end
  function Cauchy:cdf(v)
    self:_validate_sample(v)
    return ((v - self.loc) / self.scale):atan() / pi + 0.5
  end
  function Cauchy:icdf(p) return ((p - 0.5) * pi):tan() * self.scale + self.loc end
  function Cauchy:entropy() return self.scale:log() + math.log(4 * pi) end

  -- a distribution built on TransformedDistribution: the constructor
  -- checks its own parameters (under its name) and builds base and
  -- transforms from them
  local function td_class(name, arg_constraints, support, td_params)
    local cls = class(name, TD)
    cls.arg_constraints = arg_constraints
    cls.support = support
    cls._td_params = td_params
    return cls
  end
  local function check_params(d, names, cons)
    if not d._validate_args then return end
    for i, k in ipairs(names) do check(d, "parameter " .. k, d[k], cons[i]) end
  end

  -- HalfNormal(scale) / HalfCauchy(scale): |X| for X centred at 0
  local function half(name, base_ctor, extra)
    local cls = td_class(name, { scale = Cn.positive }, Cn.nonnegative, { "scale" })
    cls.has_rsample = true
    ctor(cls, function(scale, o)
      o = take_opts(name, o, { "validate_args" })
      local p = params(name, { scale, n = 1 })
      local base = base_ctor(0, p[1], { validate_args = false })
      local d = td_new(cls, base, { TR.AbsTransform() }, { validate_args = o.validate_args })
      d.scale = base.scale
      check_params(d, { "scale" }, { Cn.positive })
      return d
    end)
    function cls:_mode() return T.zeros_like(self.scale) end
    function cls:log_prob(v)
      self:_validate_sample(v)
      local lp = self.base_dist:log_prob(v) + math.log(2)
      return T.where(v:ge(0), lp, -INFINITY)
    end
    function cls:cdf(v)
      self:_validate_sample(v)
      return self.base_dist:cdf(v) * 2 - 1
    end
    function cls:icdf(p) return self.base_dist:icdf((p + 1) / 2) end
    function cls:entropy() return self.base_dist:entropy() - math.log(2) end
    extra(cls)
    return cls
  end
  half("HalfNormal", D.Normal, function(cls)
    function cls:_mean() return self.scale * math.sqrt(2 / pi) end
    function cls:_variance() return self.scale:pow(2) * (1 - 2 / pi) end
  end)
  half("HalfCauchy", D.Cauchy, function(cls)
    function cls:_mean() return T.full(self:_extended_shape(), INFINITY, { dtype = self.scale.dtype, device = self.scale.device }) end
    function cls:_variance() return self.base_dist.variance end
  end)

  -- Gumbel(loc, scale): loc - scale log(-log U), U uniform on [tiny, 1 - eps]
  local Gumbel = td_class("Gumbel", { loc = Cn.real, scale = Cn.positive }, Cn.real, { "loc", "scale" })
  Gumbel.has_rsample = true
  ctor(Gumbel, function(loc, scale, o)
    o = take_opts("Gumbel", o, { "validate_args" })
    local p = params("Gumbel", { loc, scale, n = 2 })
    local eps, tiny = finfo(p[1].dtype)
    local base = D.Uniform(T.full_like(p[1], tiny), T.full_like(p[1], 1 - eps))
    local ts = { TR.ExpTransform().inv, TR.AffineTransform(0, -T.ones_like(p[2])), TR.ExpTransform().inv,
      TR.AffineTransform(T.is_tensor(loc) and loc or p[1], -p[2]) }
    local d = td_new(Gumbel, base, ts, { validate_args = o.validate_args })
    d.loc, d.scale = p[1], p[2]
    check_params(d, { "loc", "scale" }, { Cn.real, Cn.positive })
    return d
  end)
  function Gumbel:log_prob(v)
    self:_validate_sample(v)
    local y = (self.loc - v) / self.scale
    return y - y:exp() - self.scale:log()
  end
  -- exp(-exp(-(v - loc) / scale)): torch 1.13 takes the cdf through its
  -- base Uniform(tiny, 1 - eps), whose support check raises where the
  -- value rounds to 1 (cdf(50) of Gumbel(0, 1)), even with validate_args off
  function Gumbel:cdf(v)
    self:_validate_sample(v)
    return (-((self.loc - v) / self.scale):exp()):exp()
  end
  function Gumbel:_mean() return self.loc + self.scale * EULER_GAMMA end
  function Gumbel:_mode() return self.loc end
  function Gumbel:_stddev() return self.scale * (pi / math.sqrt(6)) end
  function Gumbel:_variance() return self.stddev:pow(2) end
  function Gumbel:entropy() return self.scale:log() + (1 + EULER_GAMMA) end

  -- The prologue of the transformed distributions of two positive
  -- parameters (Weibull, Pareto, Kumaraswamy): the options, the parameters
  -- broadcast to one floating dtype, and their checks in torch's order
  -- (order: {index, name} pairs).
  local function positive_pair(name, a, b, o, order)
    o = take_opts(name, o, { "validate_args" })
    local p = params(name, { a, b, n = 2 }, 4)
    local d0 = { _validate_args = o.validate_args == nil and validate_default or o.validate_args, __name = name }
    if d0._validate_args then
      for _, c in ipairs(order) do check(d0, "parameter " .. c[2], p[c[1]], Cn.positive) end
    end
    return p, o
  end

  -- Weibull(scale, concentration): scale E^(1 / concentration), E ~ Exponential(1)
  local Weibull = td_class("Weibull", { scale = Cn.positive, concentration = Cn.positive }, Cn.positive,
    { "scale", "concentration", "concentration_reciprocal" })
  Weibull.has_rsample = true
  ctor(Weibull, function(scale, conc, o)
    local p
    p, o = positive_pair("Weibull", scale, conc, o, { { 1, "scale" }, { 2, "concentration" } })
    local cr = p[2]:reciprocal()
    local base = D.Exponential(T.ones_like(p[1]), { validate_args = o.validate_args })
    local d = td_new(Weibull, base, { TR.PowerTransform(cr), TR.AffineTransform(0, p[1]) }, { validate_args = o.validate_args })
    d.scale, d.concentration, d.concentration_reciprocal = p[1], p[2], cr
    return d
  end)
  function Weibull:_mean() return self.scale * (self.concentration_reciprocal + 1):lgamma():exp() end
  function Weibull:_mode()
    local c = self.concentration
    return self.scale * ((c - 1) / c):pow(c:reciprocal())
  end
  function Weibull:_variance()
    local cr = self.concentration_reciprocal
    return self.scale:pow(2) * ((cr * 2 + 1):lgamma():exp() - ((cr + 1):lgamma() * 2):exp())
  end
  function Weibull:entropy()
    local cr = self.concentration_reciprocal
    return (-cr + 1) * EULER_GAMMA + (self.scale * cr):log() + 1
  end
  -- as PyTorch's: the transforms rebuilt from the expanded parameters
  function Weibull:expand(bs)
    local o = TD.expand(self, bs)
    o.transforms = { TR.PowerTransform(o.concentration_reciprocal), TR.AffineTransform(0, o.scale) }
    return o
  end

  -- Pareto(scale, alpha): scale exp(E), E ~ Exponential(alpha); support >= scale
  local Pareto = td_class("Pareto", { alpha = Cn.positive, scale = Cn.positive }, nil, { "scale", "alpha" })
  Pareto.has_rsample = true
  function Pareto:_support() return Cn.greater_than_eq(self.scale) end
  ctor(Pareto, function(scale, alpha, o)
    local p
    p, o = positive_pair("Pareto", scale, alpha, o, { { 2, "alpha" }, { 1, "scale" } })
    local base = D.Exponential(p[2], { validate_args = o.validate_args })
    local d = td_new(Pareto, base, { TR.ExpTransform(), TR.AffineTransform(0, p[1]) }, { validate_args = o.validate_args })
    d.scale, d.alpha = p[1], p[2]
    return d
  end)
  function Pareto:_mean()
    local a = self.alpha:clamp(1)
    return a * self.scale / (a - 1)
  end
  function Pareto:_mode() return self.scale end
  function Pareto:_variance()
    local a = self.alpha:clamp(2)
    return self.scale:pow(2) * a / ((a - 1):pow(2) * (a - 2))
  end
  function Pareto:entropy() return (self.scale / self.alpha):log() + (self.alpha:reciprocal() + 1) end

  -- LogisticNormal(loc, scale): StickBreakingTransform of a Normal (event
  -- size one more than loc's last dim)
  local LogisticNormal = td_class("LogisticNormal", { loc = Cn.real, scale = Cn.positive }, Cn.simplex, {})
  LogisticNormal.has_rsample = true
  ctor(LogisticNormal, function(loc, scale, o)
    o = take_opts("LogisticNormal", o, { "validate_args" })
    local ok, base = pcall(D.Normal, loc, scale, { validate_args = o.validate_args })
    if not ok then
      if type(base) ~= "string" then error(base, 0) end
      error("LogisticNormal: " .. A.unpos(base):gsub("^Normal: ", ""), 2)
    end
    if #totable(base.batch_shape) == 0 then base = base:expand({ 1 }) end
    return td_new(LogisticNormal, base, { TR.StickBreakingTransform() }, { validate_args = o.validate_args })
  end)
  function LogisticNormal:_loc() return self.base_dist.base_dist.loc end
  function LogisticNormal:_scale() return self.base_dist.base_dist.scale end
  LogisticNormal.__index = function(self, k)
    if k == "loc" then return self.base_dist.base_dist.loc end
    if k == "scale" then return self.base_dist.base_dist.scale end
    local v = LogisticNormal[k]
    if v ~= nil then return v end
    if props[k] then
      local g = LogisticNormal["_" .. k]
      if g then return g(self) end
    end
    return nil
  end

  -- Kumaraswamy(concentration1, concentration0): (1 - (1 - U)^(1 / c0))^(1 / c1)
  local Kumaraswamy = td_class("Kumaraswamy", { concentration1 = Cn.positive, concentration0 = Cn.positive },
    Cn.unit_interval, { "concentration1", "concentration0" })
  Kumaraswamy.has_rsample = true
  ctor(Kumaraswamy, function(c1, c0, o)
    local p
    p, o = positive_pair("Kumaraswamy", c1, c0, o, { { 1, "concentration1" }, { 2, "concentration0" } })
    local base = D.Uniform(T.zeros_like(p[2]), T.ones_like(p[2]), { validate_args = o.validate_args })
    local ts = { TR.PowerTransform(p[2]:reciprocal()), TR.AffineTransform(1.0, -1.0), TR.PowerTransform(p[1]:reciprocal()) }
    local d = td_new(Kumaraswamy, base, ts, { validate_args = o.validate_args })
    d.concentration1, d.concentration0 = p[1], p[2]
    return d
  end)
  local function kuma_moment(a, b, n)
    local a1 = a:reciprocal() * n + 1
    return b * (a1:lgamma() + b:lgamma() - (a1 + b):lgamma()):exp()
  end
  function Kumaraswamy:_mean() return kuma_moment(self.concentration1, self.concentration0, 1) end
  function Kumaraswamy:_mode()
    local c1, c0 = self.concentration1, self.concentration0
    -- ((c1 - 1) / (c1 c0 - 1))^(1 / c1), the density's maximum; torch 1.13's
    -- formula takes log1p(-c0), nan for every c0 >= 1
    local m = ((c1 - 1) / (c1 * c0 - 1)):pow(c1:reciprocal())
    return T.where(c0:lt(1):logical_or(c1:lt(1)), 0 / 0, m)
  end
  function Kumaraswamy:_variance()
    return kuma_moment(self.concentration1, self.concentration0, 2) - self.mean:pow(2)
  end
  function Kumaraswamy:entropy()
    local c1, c0 = self.concentration1, self.concentration0
    local t1 = -c1:reciprocal() + 1
    local t0 = -c0:reciprocal() + 1
    local h0 = (c0 + 1):digamma() + EULER_GAMMA
    return t0 + t1 * h0 - c1:log() - c0:log()
  end

  -- -- Independent -------------------------------------------------------------------------
  local Ind = class("Independent", Distribution)
  ctor(Ind, function(base, n, o)
    check_dist("Independent", base, "base_distribution")
    o = take_opts("Independent", o, { "validate_args" })
    if type(n) ~= "number" or n ~= math.floor(n) or n < 0 then
      error("Independent: reinterpreted_batch_ndims must be a non-negative integer", 2)
    end
    local bs = totable(base.batch_shape)
    if n > #bs then
      error(fmt("Independent: expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape) = %d, "
        .. "actual %d", #bs, n), 2)
    end
    local d = new(Ind, { base_dist = base, reinterpreted_batch_ndims = n,
      has_enumerate_support = n == 0 and base.has_enumerate_support or false })
    init(d, sub(bs, 1, #bs - n), concat(sub(bs, #bs - n + 1), totable(base.event_shape)), o.validate_args)
    d.has_rsample = base.has_rsample
    return d
  end)
  function Ind:_support() return self.base_dist.support end
  function Ind:_mean() return self.base_dist.mean end
  function Ind:_mode() return self.base_dist.mode end
  function Ind:_variance() return self.base_dist.variance end
  function Ind:sample(s) return self.base_dist:sample(s) end
  function Ind:enumerate_support(expand)
    if self.reinterpreted_batch_ndims > 0 then
      error("Independent: enumerate_support: enumeration over the cartesian product is not implemented", 2)
    end
    return self.base_dist:enumerate_support(expand)
  end
  function Ind:rsample(s) return self.base_dist:rsample(s) end
  function Ind:log_prob(v) return sum_right(self.base_dist:log_prob(v), self.reinterpreted_batch_ndims) end
  function Ind:entropy() return sum_right(self.base_dist:entropy(), self.reinterpreted_batch_ndims) end
  -- the base expanded to batch_shape .. the reinterpreted dims
  function Ind:expand(bs)
    bs = totable(bs)
    local o = {}
    for k, v in pairs(self) do o[k] = v end
    local n = self.reinterpreted_batch_ndims
    o.base_dist = self.base_dist:expand(concat(bs, sub(totable(self.event_shape), 1, n)))
    o.batch_shape = T.Size(bs)
    return setmetatable(o, Ind)
  end

  -- -- MultivariateNormal --------------------------------------------------------------------
  -- A private Cholesky factor (T.linalg is another helper's work, not
  -- relied on here): column by column with tensor ops, batched over the
  -- leading dims and differentiable; a non-positive pivot is an error
  -- naming the column.
  local function cholesky(a, op)
    local n = a.shape[a.ndim]
    -- the values of the lower triangle, as linalg.cholesky reads them (a
    -- non-symmetric matrix passes only with validation off), and a
    -- gradient that is symmetric, as linalg.cholesky's
    local s = (a + a:transpose(-1, -2)) * 0.5
    a = s + (a:tril() + a:tril(-1):transpose(-1, -2) - s):detach()
    local cols = {}
    for j = 1, n do
      local ajj = a:select(-1, j):select(-1, j)
      local col = a:select(-1, j) -- (..., n)
      if j > 1 then
        local lprev = T.stack(cols, -1) -- (..., n, j-1)
        local lj = lprev:select(-2, j) -- (..., j-1)
        col = col - lprev:matmul(lj:unsqueeze(-1)):squeeze(-1)
        ajj = ajj - lj:pow(2):sum(-1)
      end
      if ajj:numel() > 0 and tostring(ajj.device) ~= "meta" and not ajj:detach():gt(0):all():item() then
        error(fmt("%s: the matrix is not positive-definite (the leading minor of order %d is not positive)",
          op or "cholesky", j), 0)
      end
      local d = ajj:sqrt()
      local mask = T.arange(1, n + 1, { device = a.device }):ge(j):to(a.dtype)
      cols[j] = col / d:unsqueeze(-1) * mask
    end
    return T.stack(cols, -1)
  end
  D._cholesky = cholesky
  -- per matrix of a (..., n, n): whether the factorisation of its lower
  -- triangle completes (every pivot positive), as cholesky_ex's info == 0;
  -- a failed matrix continues with pivot 1 so the others are still judged
  local function cholesky_ok(a)
    a = a:detach()
    local n = a.shape[a.ndim]
    a = a:tril() + a:tril(-1):transpose(-1, -2)
    local ok = T.ones(sub(totable(a.shape), 1, a.ndim - 2), { dtype = T.bool, device = a.device })
    local cols = {}
    for j = 1, n do
      local ajj = a:select(-1, j):select(-1, j)
      local col = a:select(-1, j)
      if j > 1 then
        local lprev = T.stack(cols, -1)
        local lj = lprev:select(-2, j)
        col = col - lprev:matmul(lj:unsqueeze(-1)):squeeze(-1)
        ajj = ajj - lj:pow(2):sum(-1)
      end
      local good = ajj:gt(0)
      ok = ok:logical_and(good)
      local d = T.where(good, ajj, 1):sqrt()
      local mask = T.arange(1, n + 1, { device = a.device }):ge(j):to(a.dtype)
      cols[j] = col / d:unsqueeze(-1) * mask
    end
    return ok
  end
  D._cholesky_ok = cholesky_ok
  -- x with L x = b for lower-triangular L (..., n, n) and b (..., n, k)
  local function solve_lower(L, b)
    local n = L.shape[L.ndim]
    local rows = {}
    for i = 1, n do
      local r = b:select(-2, i)
      if i > 1 then
        local prev = T.stack(rows, -2) -- (..., i-1, k)
        local li = L:select(-2, i):narrow(-1, 1, i - 1) -- (..., i-1)
        r = r - li:unsqueeze(-2):matmul(prev):squeeze(-2)
      end
      rows[i] = r / L:select(-1, i):select(-1, i):unsqueeze(-1)
    end
    return T.stack(rows, -2)
  end
  D._solve_lower = solve_lower

  local MVN = class("MultivariateNormal", Distribution)
  MVN.arg_constraints = { loc = Cn.real, covariance_matrix = Cn.positive_definite,
    precision_matrix = Cn.positive_definite, scale_tril = Cn.lower_cholesky }
  MVN.has_rsample = true
  MVN.support = Cn.real
  ctor(MVN, function(loc, o, extra)
    if extra ~= nil then
      if type(extra) == "table" then
        for k in pairs(extra) do
          error(fmt("MultivariateNormal: unknown option '%s' after the options table (give every option in one table)",
            tostring(k)), 2)
        end
      end
      error("MultivariateNormal: unexpected argument after the options table", 2)
    end
    o = take_opts("MultivariateNormal", o,
      { "covariance_matrix", "precision_matrix", "scale_tril", "validate_args" })
    A.check_tensor("MultivariateNormal", loc, "loc", 3)
    if loc.ndim < 1 then error("MultivariateNormal: loc must be at least one-dimensional", 2) end
    local given = (o.covariance_matrix and 1 or 0) + (o.precision_matrix and 1 or 0) + (o.scale_tril and 1 or 0)
    if given ~= 1 then
      error("MultivariateNormal: exactly one of covariance_matrix or precision_matrix or scale_tril may be specified", 2)
    end
    local m = o.covariance_matrix or o.precision_matrix or o.scale_tril
    local which = o.covariance_matrix and "covariance_matrix" or o.precision_matrix and "precision_matrix" or "scale_tril"
    A.check_tensor("MultivariateNormal", m, which, 3)
    if m.ndim < 2 then
      error(fmt("MultivariateNormal: %s must be at least two-dimensional, with optional leading batch dimensions", which), 2)
    end
    local k = loc.shape[loc.ndim]
    if m.shape[m.ndim] ~= k or m.shape[m.ndim - 1] ~= k then
      error(fmt("MultivariateNormal: %s must be of shape (..., %d, %d) for loc of event size %d", which, k, k, k), 2)
    end
    local d = new(MVN, {})
    local bs = bshape("MultivariateNormal", { sub(totable(m.shape), 1, m.ndim - 2), sub(totable(loc.shape), 1, loc.ndim - 1) })
    init(d, bs, { k }, o.validate_args)
    if d._validate_args then
      check(d, "parameter loc", loc, Cn.real)
      -- PyTorch's constraints: lower_cholesky, or positive_definite
      -- (symmetric within isclose's atol 1e-6, and a Cholesky factor exists)
      check(d, "parameter " .. which, m, which == "scale_tril" and Cn.lower_cholesky or Cn.positive_definite)
    end
    local function chol(x)
      local ok, r = pcall(cholesky, x, "MultivariateNormal")
      if not ok then
        error(fmt("MultivariateNormal: expected parameter %s to satisfy the constraint positive_definite, "
          .. "but found invalid values (%s)", which, tostring(r):gsub("^MultivariateNormal: ", "")), 3)
      end
      return r
    end
    local L
    if which == "scale_tril" then L = m
    elseif which == "covariance_matrix" then L = chol(m)
    else
      -- P = Lp Lp^T, cov = Lp^-T Lp^-1, scale_tril = chol(cov)
      local Lp = chol(m)
      local eye = T.eye(k, { dtype = m.dtype, device = m.device })
      local inv = solve_lower(Lp, eye:expand(Lp.shape))
      L = chol(inv:transpose(-1, -2):matmul(inv))
    end
    d._unbroadcasted_scale_tril = L
    d.loc = loc:expand(concat(bs, { k }))
    d._k = k
    return d
  end)
  function MVN:_scale_tril() return self._unbroadcasted_scale_tril:expand(concat(totable(self.batch_shape), { self._k, self._k })) end
  function MVN:_covariance_matrix()
    local L = self._unbroadcasted_scale_tril
    return L:matmul(L:transpose(-1, -2)):expand(concat(totable(self.batch_shape), { self._k, self._k }))
  end
  function MVN:_precision_matrix()
    local L = self._unbroadcasted_scale_tril
    local eye = T.eye(self._k, { dtype = L.dtype, device = L.device })
    local inv = solve_lower(L, eye:expand(L.shape))
    return inv:transpose(-1, -2):matmul(inv):expand(concat(totable(self.batch_shape), { self._k, self._k }))
  end
  function MVN:_mean() return self.loc end
  function MVN:_mode() return self.loc end
  function MVN:_variance()
    return self._unbroadcasted_scale_tril:pow(2):sum(-1):expand(concat(totable(self.batch_shape), { self._k }))
  end
  function MVN:rsample(shape)
    local es = self:_extended_shape(shape)
    local eps = T.randn(es, { dtype = self.loc.dtype, device = self.loc.device })
    return self.loc + self._unbroadcasted_scale_tril:matmul(eps:unsqueeze(-1)):squeeze(-1)
  end
  local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end
  function MVN:log_prob(v)
    self:_validate_sample(v)
    local diff = v - self.loc
    local L = self._unbroadcasted_scale_tril
    local s = bshape("MultivariateNormal", { totable(diff.shape), concat(sub(totable(L.shape), 1, L.ndim - 2), { self._k }) })
    diff = diff:expand(s)
    local Lb = L:expand(concat(sub(s, 1, #s - 1), { self._k, self._k }))
    local z = solve_lower(Lb, diff:unsqueeze(-1)):squeeze(-1)
    local maha = z:pow(2):sum(-1)
    return -0.5 * (self._k * LOG2PI + maha) - half_log_det(L)
  end
  function MVN:entropy()
    local h = 0.5 * self._k * (1 + LOG2PI) + half_log_det(self._unbroadcasted_scale_tril)
    return h:expand(totable(self.batch_shape))
  end
  function MVN:expand(bs)
    bs = totable(bs)
    local o = {}
    for kk, v in pairs(self) do o[kk] = v end
    o.loc = self.loc:expand(concat(bs, { self._k }))
    o.batch_shape = T.Size(bs)
    return setmetatable(o, MVN)
  end

  -- -- Chi2, StudentT, Geometric, Binomial, Multinomial, OneHotCategorical --------------
  -- PyTorch 1.13's formulas (torch/distributions/*.py), on ember's samplers.

  -- Chi2(df): Gamma(df / 2, 1 / 2), as PyTorch's subclass of Gamma
  local Chi2 = class("Chi2", Gamma)
  Chi2._params = { "concentration", "rate", "df" }
  Chi2.arg_constraints = { df = Cn.positive }
  ctor(Chi2, function(df, o)
    o = take_opts("Chi2", o, { "validate_args" })
    local p, s = params("Chi2", { df, n = 1 })
    local d = init(new(Chi2, { df = p[1], concentration = p[1] * 0.5, rate = T.full_like(p[1], 0.5) }), s, {},
      o.validate_args)
    if d._validate_args then check(d, "parameter df", d.df, Cn.positive) end
    return d
  end)

  -- StudentT(df[, loc = 0[, scale = 1]]): loc + scale Z / sqrt(V / df), Z
  -- standard normal, V a Chi2(df) draw (differentiable in df through
  -- Gamma's implicit gradient)
  local StudentT = class("StudentT", Distribution)
  StudentT._params = { "df", "loc", "scale" }
  StudentT.arg_constraints = { df = Cn.positive, loc = Cn.real, scale = Cn.positive }
  StudentT.has_rsample = true
  StudentT.support = Cn.real
  ctor(StudentT, function(df, loc, scale, o)
    if A.is_opts(loc) and o == nil and scale == nil then o, loc = loc, nil end
    if A.is_opts(scale) and o == nil then o, scale = scale, nil end
    o = take_opts("StudentT", o, { "validate_args" })
    local p, s = params("StudentT", { df, loc == nil and 0 or loc, scale == nil and 1 or scale, n = 3 })
    local d = init(new(StudentT, { df = p[1], loc = p[2], scale = p[3] }), s, {}, o.validate_args)
    if d._validate_args then
      check(d, "parameter df", d.df, Cn.positive)
      check(d, "parameter loc", d.loc, Cn.real)
      check(d, "parameter scale", d.scale, Cn.positive)
    end
    return d
  end)
  function StudentT:_mean() return T.where(self.df:le(1), 0 / 0, self.loc) end
  function StudentT:_mode() return self.loc end
  function StudentT:_variance()
    local df = self.df
    local v = self.scale:pow(2) * df / (df - 2)
    return T.where(df:gt(2), v, T.where(df:gt(1), 1 / 0, 0 / 0))
  end
  function StudentT:rsample(shape)
    local es = self:_extended_shape(shape)
    local z = T.randn(es, { dtype = self.loc.dtype, device = self.loc.device })
    local v = rgamma((self.df * 0.5):expand(es)) * 2 -- Chi2(df): 2 Gamma(df / 2, 1)
    return self.loc + self.scale * z * (v / self.df):rsqrt()
  end
  function StudentT:log_prob(v)
    self:_validate_sample(v)
    local df = self.df
    local y = (v - self.loc) / self.scale
    local z = self.scale:log() + df:log() * 0.5 + 0.5 * math.log(math.pi) + (df * 0.5):lgamma()
      - ((df + 1) * 0.5):lgamma()
    return -((df + 1) * 0.5) * (y:pow(2) / df):log1p() - z
  end
  function StudentT:entropy()
    local df = self.df
    local lbeta = (df * 0.5):lgamma() + 0.5723649429247001 - ((df + 1) * 0.5):lgamma() -- lgamma(1/2) = log(sqrt(pi))
    return self.scale:log() + ((df + 1) * 0.5) * (((df + 1) * 0.5):digamma() - (df * 0.5):digamma())
      + df:log() * 0.5 + lbeta
  end

  -- probs or logits (a positional probs, or {probs=} / {logits=}) as Bernoulli
  -- takes them; returns the options with exactly one of the two
  local function probs_logits_args(name, o, o2, extra)
    local allowed = { "probs", "logits", "validate_args" }
    for _, k in ipairs(extra or {}) do allowed[#allowed + 1] = k end
    if T.is_tensor(o) or type(o) == "number" then
      o = positional_probs(name, o, o2, allowed)
    elseif o2 ~= nil then
      error(fmt("%s: unexpected second argument (give the options in one table)", name), 3)
    end
    o = take_opts(name, o, allowed)
    probs_or_logits(name, o.probs, o.logits)
    return o
  end
  local function logits_of(p)
    p = clamp_probs(p)
    return p:log() - (-p):log1p()
  end

  -- Geometric(probs | {logits=}): the number of failures before the first
  -- success, support 0, 1, 2, ...
  local Geometric = class("Geometric", Distribution)
  Geometric.arg_constraints = { probs = Cn.unit_interval, logits = Cn.real }
  Geometric.support = Cn.nonnegative_integer
  ctor(Geometric, function(o, o2)
    o = probs_logits_args("Geometric", o, o2)
    local p, s = params("Geometric", { o.probs or o.logits, n = 1 })
    local d = init(new(Geometric, o.probs and { _p = p[1] } or { _l = p[1] }), s, {}, o.validate_args)
    if d._validate_args then
      if o.probs then
        check(d, "parameter probs", p[1], Cn.unit_interval)
        check(d, "parameter probs", p[1], Cn.positive)
      else
        check(d, "parameter logits", p[1], Cn.real)
      end
    end
    return d
  end)
  function Geometric:_probs() return rawget(self, "_p") or rawget(self, "_l"):sigmoid() end
  function Geometric:_logits() return rawget(self, "_l") or logits_of(rawget(self, "_p")) end
  function Geometric:_mean() return self.probs:reciprocal() - 1 end
  function Geometric:_mode() return T.zeros_like(self.probs) end
  function Geometric:_variance() local p = self.probs; return (p:reciprocal() - 1) / p end
  function Geometric:sample(shape)
    local p = self.probs:detach()
    local tiny = p.dtype == T.float64 and 2.2250738585072014e-308 or 1.1754943508222875e-38
    local u = T.rand(self:_extended_shape(shape), { dtype = p.dtype, device = p.device }):clamp(tiny)
    return (u:log() / (-p):log1p()):floor()
  end
  function Geometric:log_prob(v)
    self:_validate_sample(v)
    local p = self.probs
    local s = bshape("Geometric", { totable(p.shape), totable(v.shape) }, "the value and the batch shape")
    local pv, vv = p:expand(s), v:to(p.dtype):expand(s)
    -- 0 * log(0) is 0 at probs = 1, value = 0
    local q = T.where(pv:eq(1):logical_and(vv:eq(0)), 0, pv)
    return vv * (-q):log1p() + pv:log()
  end
  function Geometric:entropy()
    return T.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" })
      / self.probs
  end
  Geometric.expand = probs_logits_expand(Geometric)

  -- Binomial draws: exact, by Devroye's recursion on order statistics
  -- (Non-Uniform Random Variate Generation, X.4): while n > SMALL, the i-th
  -- of n uniforms (i = floor((n + 1) / 2)) is Y ~ Beta(i, n + 1 - i); if Y <= p
  -- the i below it count and the n - i above are uniform on (Y, 1), else the
  -- i - 1 below are uniform on (0, Y); then a sum of Bernoulli draws for the
  -- last n <= SMALL. O(log n) rounds, each a tensor op over all elements.
  local BINOMIAL_SMALL = 32
  local function binomial_draw(n, p)
    local dt = p.dtype
    n, p = n:to(T.float64):contiguous():clone(), p:to(T.float64):contiguous():clone()
    local acc = T.zeros_like(n)
    while true do
      local big = n:gt(BINOMIAL_SMALL)
      if not big:any():item() then break end
      local i = ((n + 1) * 0.5):floor()
      local ga = rgamma(T.where(big, i, 1))
      local gb = rgamma(T.where(big, n + 1 - i, 1))
      local y = ga / (ga + gb)
      local below = y:le(p)
      local take = big:logical_and(below)
      local drop = big:logical_and(below:logical_not())
      acc = acc + T.where(take, i, 0)
      -- (y = 1 or 0 exactly would divide 0 by 0: the limits, 1 and 0)
      local p_take = T.where(y:ge(1), 1, (p - y) / (-y + 1)):clamp(0, 1)
      local p_drop = T.where(y:le(0), 0, p / y):clamp(0, 1)
      p = T.where(take, p_take, T.where(drop, p_drop, p))
      n = T.where(take, n - i, T.where(drop, i - 1, n))
    end
    local u = T.rand(concat(totable(n.shape), { BINOMIAL_SMALL }), { dtype = T.float64, device = n.device })
    local k = T.arange(BINOMIAL_SMALL, { dtype = T.float64, device = n.device })
    local hit = u:lt(p:unsqueeze(-1)):logical_and(k:lt(n:unsqueeze(-1)))
    return (acc + hit:sum(-1):to(T.float64)):to(dt)
  end
  D._binomial_draw = binomial_draw

  -- Binomial(total_count = 1, probs | {logits=}): D.Binomial(n, p) or
  -- D.Binomial(n, {probs=} / {logits=}) or D.Binomial{total_count=, probs=}
  local Binomial = class("Binomial", Distribution)
  Binomial.arg_constraints = { total_count = Cn.nonnegative_integer, probs = Cn.unit_interval, logits = Cn.real }
  Binomial.has_enumerate_support = true
  function Binomial:_support() return integer_interval(0, self.total_count) end
  ctor(Binomial, function(n, o, o2)
    if A.is_opts(n) and o == nil then o, n = n, nil end
    local extra = { "total_count" }
    if A.is_opts(o) and o.total_count ~= nil then
      if n ~= nil then error("Binomial: total_count given twice", 2) end
      n = o.total_count
    end
    o = probs_logits_args("Binomial", o, o2, extra)
    if n == nil then n = 1 end
    local p, s = params("Binomial", { n, o.probs or o.logits, n = 2 })
    local d = init(new(Binomial, { total_count = p[1]:to(p[2].dtype) }), s, {}, o.validate_args)
    if o.probs then d._p = p[2] else d._l = p[2] end
    if d._validate_args then
      check(d, "parameter total_count", d.total_count, Cn.nonnegative_integer)
      if o.probs then check(d, "parameter probs", p[2], Cn.unit_interval)
      else check(d, "parameter logits", p[2], Cn.real) end
    end
    return d
  end)
  Binomial._probs, Binomial._logits = Geometric._probs, Geometric._logits
  function Binomial:_mean() return self.total_count * self.probs end
  function Binomial:_mode() return T.minimum(((self.total_count + 1) * self.probs):floor(), self.total_count) end
  function Binomial:_variance() local p = self.probs; return self.total_count * p * (-p + 1) end
  function Binomial:sample(shape)
    local es = self:_extended_shape(shape)
    return T.no_grad(function()
      return binomial_draw(self.total_count:expand(es), self.probs:detach():expand(es))
    end)
  end
  function Binomial:log_prob(v)
    self:_validate_sample(v)
    local n, l = self.total_count, self.logits
    local s = bshape("Binomial", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    n, l, v = n:expand(s), l:expand(s), v:to(l.dtype):expand(s)
    local lcomb = (n + 1):lgamma() - (v + 1):lgamma() - (n - v + 1):lgamma()
    -- k log p + (n - k) log(1 - p) = k l - n max(l, 0) - n log1p(e^-|l|);
    -- max(l, 0) as PyTorch's _clamp_by_zero (gradient 1/2 at l = 0)
    local clamp0 = (l:clamp(0) + l - l:clamp(nil, 0)) / 2
    return lcomb + v * l - n * clamp0 - n * (-l:abs()):exp():log1p()
  end
  function Binomial:enumerate_support(expand)
    local n = self.total_count
    if n:numel() > 0 and not n:eq(n:reshape(-1)[1]):all():item() then
      error("Binomial: Inhomogeneous total count not supported by `enumerate_support`.", 2)
    end
    local m = n:numel() > 0 and n:reshape(-1)[1]:item() or 0
    return enumerate(self, T.arange(m + 1, { dtype = n.dtype, device = n.device }), expand)
  end
  function Binomial:entropy()
    local n = self.total_count
    if n:numel() > 0 and not n:eq(n:reshape(-1)[1]):all():item() then
      error("Binomial: Inhomogeneous total count not supported by `entropy`.", 2)
    end
    local ks = self:enumerate_support(false)
    return -(self:log_prob(ks):exp() * self:log_prob(ks)):sum(1)
  end
  Binomial.expand = probs_logits_expand(Binomial, { "total_count" })

  -- OneHotCategorical(probs | {logits=}): Categorical's draws as one-hot
  -- vectors (event shape (K)); the position of the one is the class id
  local OneHot = class("OneHotCategorical", Distribution)
  OneHot.arg_constraints = { probs = Cn.simplex, logits = Cn.real_vector }
  OneHot.support = constraint("one_hot", function(v)
    return v:eq(0):logical_or(v:eq(1)):all(-1):logical_and(v:sum(-1):eq(1))
  end, 1)
  OneHot.has_enumerate_support = true
  -- the options checked under the caller's name, then Categorical's constructor
  local function categorical_of(name, o, o2)
    if T.is_tensor(o) then
      take_opts(name, o2, { "validate_args" })
    else
      if o2 ~= nil then error(fmt("%s: unexpected second argument (give the options in one table)", name), 3) end
      take_opts(name, o, { "probs", "logits", "validate_args" })
    end
    local ok, cat = pcall(D.Categorical, o, o2)
    if not ok then
      if type(cat) ~= "string" then error(cat, 0) end
      error(name .. ": " .. A.unpos(cat):gsub("^Categorical: ", ""), user_level())
    end
    return cat
  end
  ctor(OneHot, function(o, o2)
    local cat = categorical_of("OneHotCategorical", o, o2)
    local d = init(new(OneHot, { _categorical = cat }), totable(cat.batch_shape), { cat._num_events },
      cat._validate_args)
    return d
  end)
  function OneHot:_probs() return self._categorical.probs end
  function OneHot:_logits() return self._categorical.logits end
  function OneHot:_mean() return self.probs end
  function OneHot:_mode()
    local p = self.probs
    return T.nn.functional.one_hot(p:argmax(-1), p:size(-1)):to(p.dtype)
  end
  function OneHot:_variance() local p = self.probs; return p * (-p + 1) end
  function OneHot:sample(shape)
    local k = self._categorical._num_events
    return T.nn.functional.one_hot(self._categorical:sample(shape), k):to(self.probs.dtype)
  end
  function OneHot:log_prob(v)
    self:_validate_sample(v)
    return self._categorical:log_prob(v:argmax(-1))
  end
  function OneHot:entropy() return self._categorical:entropy() end
  function OneHot:enumerate_support(expand)
    local k = self._categorical._num_events
    local eye = T.eye(k, { dtype = self.probs.dtype, device = self.probs.device })
    local bs = totable(self.batch_shape)
    local shape = { k }
    for i = 1, #bs do shape[#shape + 1] = 1 end
    shape[#shape + 1] = k
    local v = eye:reshape(shape)
    if expand ~= false then v = v:expand(concat(concat({ k }, bs), { k })) end
    return v
  end
  -- expand for a family built on a Categorical (self._categorical)
  local function categorical_expand(cls)
    return function(self, bs)
      local o = {}
      for k, v in pairs(self) do o[k] = v end
      o._categorical = self._categorical:expand(bs)
      o.batch_shape = T.Size(totable(bs))
      return setmetatable(o, cls)
    end
  end
  OneHot.expand = categorical_expand(OneHot)

  -- Multinomial(total_count = 1, probs | {logits=}): counts of total_count
  -- Categorical draws over the last dim (event shape (K))
  local Multinomial = class("Multinomial", Distribution)
  Multinomial.arg_constraints = { probs = Cn.simplex, logits = Cn.real_vector }
  function Multinomial:_support()
    local n = self.total_count
    return constraint("multinomial", function(v)
      return v:ge(0):all(-1):logical_and(is_int(v):all(-1)):logical_and(v:sum(-1):le(n))
    end, 1)
  end
  ctor(Multinomial, function(n, o, o2)
    if A.is_opts(n) and o == nil then o, n = n, nil end
    if A.is_opts(o) and o.total_count ~= nil then
      if n ~= nil then error("Multinomial: total_count given twice", 2) end
      n = o.total_count
      local c = {}
      for k, v in pairs(o) do if k ~= "total_count" then c[k] = v end end
      o = c
    end
    if n == nil then n = 1 end
    if type(n) ~= "number" or n ~= math.floor(n) or n < 0 then
      error(fmt("Multinomial: total_count must be a non-negative integer, got %s", tostring(n)), 2)
    end
    local cat = categorical_of("Multinomial", o, o2)
    local d = init(new(Multinomial, { _categorical = cat, total_count = n }), totable(cat.batch_shape),
      { cat._num_events }, cat._validate_args)
    return d
  end)
  function Multinomial:_probs() return self._categorical.probs end
  function Multinomial:_logits() return self._categorical.logits end
  function Multinomial:_mean() return self.probs * self.total_count end
  function Multinomial:_variance() local p = self.probs; return p * (-p + 1) * self.total_count end
  function Multinomial:sample(shape)
    local n, k = self.total_count, self._categorical._num_events
    local ss = totable(shape or {})
    local es = self:_extended_shape(shape)
    local counts = T.zeros(es, { dtype = self.probs.dtype, device = self.probs.device })
    if n == 0 then return counts end
    -- n class ids for each (sample, batch) position, counted into the last dim
    local ids = self._categorical:sample(concat({ n }, ss)) -- (n, sample..., batch...), 1-based
    local perm = {}
    for i = 2, ids.ndim do perm[#perm + 1] = i end
    perm[#perm + 1] = 1
    ids = ids:permute(perm)
    return counts:scatter_add_(-1, ids, T.ones(ids.shape, { dtype = counts.dtype, device = counts.device }))
  end
  function Multinomial:log_prob(v)
    self:_validate_sample(v)
    local l = self.logits
    local s = bshape("Multinomial", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    l, v = l:expand(s), v:to(l.dtype):expand(s)
    -- 0 * -inf is 0 (a class of probability 0 not drawn)
    local lv = T.where(v:eq(0):logical_and(l:eq(-1 / 0)), 0, l * v)
    return (v:sum(-1) + 1):lgamma() - (v + 1):lgamma():sum(-1) + lv:sum(-1)
  end
  -- PyTorch's: n H(Categorical) - lgamma(n + 1) + E[sum_k lgamma(x_k + 1)],
  -- x_k ~ Binomial(n, p_k), the expectation summed over k = 1..n
  function Multinomial:entropy()
    local n, p = self.total_count, self.probs
    local lgn1 = T.tensor(n + 1, { dtype = T.float64 }):lgamma():item()
    local term1 = self._categorical:entropy() * n - lgn1
    if n == 0 then return term1 end
    local shape = { n }
    for _ = 1, p.ndim do shape[#shape + 1] = 1 end
    local ks = T.arange(1, n + 1, { dtype = p.dtype, device = p.device }):reshape(shape)
    -- Binomial(n, p_k)'s log pmf as torch computes it, from the logits of
    -- the clamped probs (finite gradients where a p_k is 0 or 1)
    local l = logits_of(p)
    local clamp0 = (l:clamp(0) + l - l:clamp(nil, 0)) / 2
    local lp = -(ks + 1):lgamma() - (-ks + n + 1):lgamma() + lgn1 + ks * l - clamp0 * n
      - (-l:abs()):exp():log1p() * n
    return term1 + (lp:exp() * (ks + 1):lgamma()):sum(1):sum(-1)
  end
  Multinomial.expand = categorical_expand(Multinomial)

  -- NegativeBinomial(total_count, probs | {logits=}): failures before
  -- total_count successes of probability 1 - probs (torch's convention:
  -- probs is each trial's probability of the counted outcome); a
  -- Gamma-Poisson mixture when sampled
  local NegBin = class("NegativeBinomial", Distribution)
  Cn.half_open_interval = function(lo, hi)
    return constraint("half_open_interval", function(v) return v:ge(lo):logical_and(v:lt(hi)) end)
  end
  NegBin.arg_constraints = { total_count = Cn.greater_than_eq(0), probs = Cn.half_open_interval(0, 1), logits = Cn.real }
  NegBin.support = Cn.nonnegative_integer
  ctor(NegBin, function(n, o, o2)
    if A.is_opts(n) and o == nil then o, n = n, nil end
    if A.is_opts(o) and o.total_count ~= nil then
      if n ~= nil then error("NegativeBinomial: total_count given twice", 2) end
      n = o.total_count
    end
    o = probs_logits_args("NegativeBinomial", o, o2, { "total_count" })
    if n == nil then error("NegativeBinomial: total_count is required", 2) end
    local p, s = params("NegativeBinomial", { n, o.probs or o.logits, n = 2 })
    local d = init(new(NegBin, { total_count = p[1]:to(p[2].dtype) }), s, {}, o.validate_args)
    if o.probs then d._p = p[2] else d._l = p[2] end
    if d._validate_args then
      check(d, "parameter total_count", d.total_count, Cn.greater_than_eq(0))
      if o.probs then check(d, "parameter probs", p[2], Cn.half_open_interval(0, 1))
      else check(d, "parameter logits", p[2], Cn.real) end
    end
    return d
  end)
  NegBin._probs, NegBin._logits = Geometric._probs, Geometric._logits
  function NegBin:_mean() return self.total_count * self.logits:exp() end
  function NegBin:_mode() return ((self.total_count - 1) * self.logits:exp()):floor():clamp(0) end
  function NegBin:_variance() return self.mean / (-self.logits):sigmoid() end
  function NegBin:sample(shape)
    local es = self:_extended_shape(shape)
    return T.no_grad(function()
      -- Gamma(total_count, rate e^-logits), then Poisson of it
      local g = standard_gamma(self.total_count:detach():expand(es):contiguous()) * self.logits:detach():exp()
      return T.poisson(g)
    end)
  end
  function NegBin:log_prob(v)
    self:_validate_sample(v)
    local n, l = self.total_count, self.logits
    local s = bshape("NegativeBinomial", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    n, l, v = n:expand(s), l:expand(s), v:to(l.dtype):expand(s)
    local F = T.nn.functional
    local unnorm = n * F.logsigmoid(-l) + v * F.logsigmoid(l)
    local norm = -(n + v):lgamma() + (v + 1):lgamma() + n:lgamma()
    norm = T.where((n + v):eq(0), 0, norm)
    return unnorm - norm
  end
  NegBin.expand = probs_logits_expand(NegBin, { "total_count" })

  -- the class of a family whose constructor takes its parameters
  -- positionally ((p1, p2, ...[, {validate_args=}]), broadcast together),
  -- each checked against its constraint (names: the parameters in order;
  -- cons: name -> constraint)
  local function params_class(name, names, cons, support, has_rsample)
    local cls = class(name, Distribution)
    cls._params = names
    cls.arg_constraints = cons
    cls.support = support
    cls.has_rsample = has_rsample
    ctor(cls, function(...)
      local args = { ... }
      if select("#", ...) > #names + 1 then
        error(fmt("%s: takes %d parameters and an options table, got %d arguments", name, #names,
          select("#", ...)), 2)
      end
      local o = take_opts(name, args[#names + 1], { "validate_args" })
      local list = { n = #names }
      for i = 1, #names do list[i] = args[i] end
      local p, s = params(name, list)
      local fields = {}
      for i, k in ipairs(names) do fields[k] = p[i] end
      local d = init(new(cls, fields), s, {}, o.validate_args)
      if d._validate_args then
        for _, k in ipairs(names) do check(d, "parameter " .. k, d[k], cons[k]) end
      end
      return d
    end)
    return cls
  end

  -- FisherSnedecor(df1, df2): X1 / X2, Xi ~ Gamma(dfi / 2, dfi)
  local FisherSnedecor = params_class("FisherSnedecor", { "df1", "df2" }, { df1 = Cn.positive, df2 = Cn.positive },
    Cn.positive, true)
  function FisherSnedecor:_mean() local d2 = self.df2; return T.where(d2:le(2), 0 / 0, d2 / (d2 - 2)) end
  function FisherSnedecor:_mode()
    local d1, d2 = self.df1, self.df2
    return T.where(d1:le(2), 0 / 0, (d1 - 2) / d1 * d2 / (d2 + 2))
  end
  function FisherSnedecor:_variance()
    local d1, d2 = self.df1, self.df2
    local v = d2:pow(2) * 2 * (d1 + d2 - 2) / (d1 * (d2 - 2):pow(2) * (d2 - 4))
    return T.where(d2:le(4), 0 / 0, v)
  end
  function FisherSnedecor:rsample(shape)
    local es = self:_extended_shape(shape)
    local tiny = self.df1.dtype == T.float64 and 2.2250738585072014e-308 or 1.1754943508222875e-38
    local x1 = rgamma((self.df1 * 0.5):expand(es)) / self.df1
    local x2 = (rgamma((self.df2 * 0.5):expand(es)) / self.df2):clamp(tiny)
    return (x1 / x2):clamp(tiny)
  end
  function FisherSnedecor:log_prob(v)
    self:_validate_sample(v)
    local c1, c2, c3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
    local t1 = (c1 + c2):lgamma() - c1:lgamma() - c2:lgamma()
    local t2 = c1 * c3:log() + (c1 - 1) * v:log()
    local t3 = (c1 + c2) * (c3 * v):log1p()
    return t1 + t2 - t3
  end

  -- MixtureSameFamily(mixture, components): a Categorical over the last
  -- batch dim of the component distribution (K components); batch shape
  -- the components' without that dim
  local Mixture = class("MixtureSameFamily", Distribution)
  Mixture.arg_constraints = {}
  Mixture.has_rsample = false
  function Mixture:_support() return self.component_distribution.support end
  ctor(Mixture, function(mix, comp, o)
    o = take_opts("MixtureSameFamily", o, { "validate_args" })
    if not (is_dist(mix) and mix.__name == "Categorical") then
      error("MixtureSameFamily: the mixture distribution must be a Categorical, got " ..
        (is_dist(mix) and mix.__name or type(mix)), 2)
    end
    if not is_dist(comp) then
      error("MixtureSameFamily: the component distribution must be a distribution, got " ..
        (T.is_tensor(comp) and "a tensor" or type(comp)), 2)
    end
    local cb = totable(comp.batch_shape)
    if #cb < 1 then
      error("MixtureSameFamily: the component distribution needs a batch dim of components (its batch shape is [])", 2)
    end
    local mb, cdbs = totable(mix.batch_shape), sub(cb, 1, #cb - 1)
    for i = 1, math.min(#mb, #cdbs) do
      local a, b = mb[#mb - i + 1], cdbs[#cdbs - i + 1]
      if a ~= 1 and b ~= 1 and a ~= b then
        error(fmt("MixtureSameFamily: mixture_distribution.batch_shape (%s) is not compatible with " ..
          "component_distribution.batch_shape (%s)", A.fmt_shape(mb), A.fmt_shape(cdbs)), 2)
      end
    end
    local km, kc = mix._num_events, cb[#cb]
    if km ~= kc then
      error(fmt("MixtureSameFamily: mixture_distribution component (%d) does not equal " ..
        "component_distribution.batch_shape[-1] (%d)", km, kc), 2)
    end
    local d = new(Mixture, { mixture_distribution = mix, component_distribution = comp, _num_component = km })
    init(d, cdbs, totable(comp.event_shape), o.validate_args)
    d._event_ndims = #totable(comp.event_shape)
    return d
  end)
  function Mixture:_pad(x) return x:unsqueeze(-1 - self._event_ndims) end
  -- the mixture's probs shaped to broadcast against the components' (B, K, E)
  function Mixture:_pad_mixture(x)
    local pad = #totable(self.batch_shape) - #totable(self.mixture_distribution.batch_shape)
    local xs = totable(x.shape)
    local shape = sub(xs, 1, #xs - 1)
    for _ = 1, pad do shape[#shape + 1] = 1 end
    shape[#shape + 1] = xs[#xs]
    for _ = 1, self._event_ndims do shape[#shape + 1] = 1 end
    return x:reshape(shape)
  end
  function Mixture:_mean()
    local p = self:_pad_mixture(self.mixture_distribution.probs)
    return (p * self.component_distribution.mean):sum(-1 - self._event_ndims)
  end
  function Mixture:_variance()
    local p = self:_pad_mixture(self.mixture_distribution.probs)
    local c = self.component_distribution
    local mean_var = (p * c.variance):sum(-1 - self._event_ndims)
    local var_mean = (p * (c.mean - self:_pad(self.mean)):pow(2)):sum(-1 - self._event_ndims)
    return mean_var + var_mean
  end
  function Mixture:cdf(x)
    local cx = self.component_distribution:cdf(self:_pad(x))
    return (cx * self.mixture_distribution.probs):sum(-1)
  end
  function Mixture:log_prob(x)
    self:_validate_sample(x)
    local lp = self.component_distribution:log_prob(self:_pad(x))
    local lm = self.mixture_distribution.logits:log_softmax(-1)
    return (lp + lm):logsumexp(-1)
  end
  function Mixture:sample(shape)
    return T.no_grad(function()
      local ss = totable(shape or {})
      local es = totable(self.event_shape)
      local gather_dim = #ss + #totable(self.batch_shape) + 1 -- 1-based: the components' dim
      local ids = self.mixture_distribution:sample(ss) -- (S, B), 1-based
      local comps = self.component_distribution:sample(ss) -- (S, B, K, E)
      local ms = totable(ids.shape)
      -- the drawn component's id at each position, over the event dims
      local ones, full = { 1 }, { 1 }
      for i = 1, #es do ones[#ones + 1] = 1; full[#full + 1] = es[i] end
      local r = ids:reshape(concat(ms, ones)):expand(concat(ms, full))
      return comps:gather(gather_dim, r):squeeze(gather_dim)
    end)
  end
  function Mixture:expand(bs)
    bs = totable(bs)
    local o = {}
    for k, v in pairs(self) do o[k] = v end
    o.component_distribution = self.component_distribution:expand(concat(bs, { self._num_component }))
    o.mixture_distribution = self.mixture_distribution:expand(bs)
    o.batch_shape = T.Size(bs)
    return setmetatable(o, Mixture)
  end

  -- -- the relaxed (Concrete / Gumbel-softmax) distributions ----------------------------
  -- the temperature as a tensor of the parameters' dtype (torch takes a tensor)
  local function temperature_of(name, t, dtype)
    if T.is_tensor(t) then return t end
    if type(t) == "number" then return T.tensor(t, { dtype = dtype }) end
    error(fmt("%s: expected a tensor or a number for temperature, got %s", name, type(t)), 4)
  end

  -- LogitRelaxedBernoulli(temperature, probs | {logits=}): the logit of a
  -- relaxed Bernoulli draw, (logit(u) + logit(p)) / temperature
  local LRB = class("LogitRelaxedBernoulli", Distribution)
  LRB.arg_constraints = { probs = Cn.unit_interval, logits = Cn.real }
  LRB.support = Cn.real
  LRB.has_rsample = true
  ctor(LRB, function(temperature, o, o2)
    o = probs_logits_args("LogitRelaxedBernoulli", o, o2)
    local p, s = params("LogitRelaxedBernoulli", { o.probs or o.logits, n = 1 })
    local d = init(new(LRB, o.probs and { _p = p[1] } or { _l = p[1] }), s, {}, o.validate_args)
    d.temperature = temperature_of("LogitRelaxedBernoulli", temperature, p[1].dtype)
    if d._validate_args then
      if o.probs then check(d, "parameter probs", p[1], Cn.unit_interval)
      else check(d, "parameter logits", p[1], Cn.real) end
    end
    return d
  end)
  LRB._probs, LRB._logits = Geometric._probs, Geometric._logits
  function LRB:rsample(shape)
    local es = self:_extended_shape(shape)
    local p = clamp_probs(self.probs:expand(es))
    local u = clamp_probs(T.rand(es, { dtype = p.dtype, device = p.device }))
    return (u:log() - (-u):log1p() + p:log() - (-p):log1p()) / self.temperature
  end
  function LRB:log_prob(v)
    self:_validate_sample(v)
    local l = self.logits
    local s = bshape("LogitRelaxedBernoulli", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    local diff = l:expand(s) - v:to(l.dtype):expand(s) * self.temperature
    return self.temperature:log() + diff - diff:exp():log1p() * 2
  end
  LRB.expand = probs_logits_expand(LRB)

  -- ExpRelaxedCategorical(temperature, probs | {logits=}): the log of a
  -- relaxed one-hot draw, log_softmax((logits + Gumbel noise) / temperature)
  local ERC = class("ExpRelaxedCategorical", Distribution)
  ERC.arg_constraints = { probs = Cn.simplex, logits = Cn.real_vector }
  ERC.support = Cn.real_vector
  ERC.has_rsample = true
  ctor(ERC, function(temperature, o, o2)
    local cat = categorical_of("ExpRelaxedCategorical", o, o2)
    local d = init(new(ERC, { _categorical = cat }), totable(cat.batch_shape), { cat._num_events },
      cat._validate_args)
    d.temperature = temperature_of("ExpRelaxedCategorical", temperature, cat.probs.dtype)
    return d
  end)
  function ERC:_probs() return self._categorical.probs end
  function ERC:_logits() return self._categorical.logits end
  function ERC:rsample(shape)
    local es = self:_extended_shape(shape)
    local l = self.logits
    local u = clamp_probs(T.rand(es, { dtype = l.dtype, device = l.device }))
    local scores = (l + (-(-u:log()):log())) / self.temperature
    return scores - scores:logsumexp(-1, true)
  end
  function ERC:log_prob(v)
    self:_validate_sample(v)
    local K = self._categorical._num_events
    local l = self.logits
    local s = bshape("ExpRelaxedCategorical", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    l, v = l:expand(s), v:to(l.dtype):expand(s)
    local t = self.temperature
    local log_scale = T.full_like(t, K):lgamma() + t:log() * (K - 1)
    local score = l - v * t
    score = (score - score:logsumexp(-1, true)):sum(-1)
    return score + log_scale
  end
  ERC.expand = categorical_expand(ERC)

  -- RelaxedBernoulli / RelaxedOneHotCategorical: the sigmoid / exp of the
  -- two above, as torch's TransformedDistributions (support (0, 1) / the
  -- simplex); their rsample is differentiable in probs (or logits)
  local function relaxed(name, base_name, transform, support)
    local cls = class(name, TD)
    cls.support = support
    cls.has_rsample = true
    cls.arg_constraints = D[base_name].arg_constraints
    ctor(cls, function(temperature, o, o2)
      -- the base's messages under this name
      local ok, base = pcall(D[base_name], temperature, o, o2)
      if not ok then
        if type(base) ~= "string" then error(base, 0) end
        error(name .. ": " .. A.unpos(base):gsub("^" .. base_name .. ": ", ""), 2)
      end
      local d = td_new(cls, base, { transform() }, { validate_args = base._validate_args })
      d.temperature = base.temperature
      return d
    end)
    function cls:_probs() return self.base_dist.probs end
    function cls:_logits() return self.base_dist.logits end
    function cls:expand(bs)
      local o = TD.expand(self, bs)
      o.temperature = self.temperature
      return o
    end
    return cls
  end
  relaxed("RelaxedBernoulli", "LogitRelaxedBernoulli", D.SigmoidTransform, Cn.unit_interval)
  relaxed("RelaxedOneHotCategorical", "ExpRelaxedCategorical", D.ExpTransform, Cn.simplex)

  -- ContinuousBernoulli(probs | {logits=}[, {lims=}]): the density
  -- C(p) p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham 2019),
  -- torch 1.13's formulas: closed forms outside lims = (0.499, 0.501) of p,
  -- Taylor expansions inside, where the closed forms lose their digits
  local CB = class("ContinuousBernoulli", Distribution)
  CB.arg_constraints = { probs = Cn.unit_interval, logits = Cn.real }
  CB.support = Cn.unit_interval
  CB.has_rsample = true
  ctor(CB, function(o, o2)
    local lims
    if A.is_opts(o) and o.lims ~= nil then
      lims = o.lims
      local c = {}
      for k, v in pairs(o) do if k ~= "lims" then c[k] = v end end
      o = c
    elseif A.is_opts(o2) and o2.lims ~= nil then
      lims = o2.lims
      local c = {}
      for k, v in pairs(o2) do if k ~= "lims" then c[k] = v end end
      o2 = c
    end
    if lims ~= nil and not (type(lims) == "table" and type(lims[1]) == "number" and type(lims[2]) == "number"
        and lims[1] < 0.5 and lims[2] > 0.5) then
      error("ContinuousBernoulli: lims must be a pair of numbers {lo, hi} with lo < 0.5 < hi", 2)
    end
    o = probs_logits_args("ContinuousBernoulli", o, o2)
    local p, s = params("ContinuousBernoulli", { o.probs or o.logits, n = 1 })
    local d = init(new(CB, {}), s, {}, o.validate_args)
    if o.probs then
      if d._validate_args then check(d, "parameter probs", p[1], Cn.unit_interval) end
      d._p = clamp_probs(p[1])
    else
      if d._validate_args then check(d, "parameter logits", p[1], Cn.real) end
      d._l = p[1]
    end
    d._lims = lims or { 0.499, 0.501 }
    return d
  end)
  function CB:_probs()
    return rawget(self, "_p") or clamp_probs(rawget(self, "_l"):sigmoid())
  end
  function CB:_logits() return rawget(self, "_l") or logits_of(rawget(self, "_p")) end
  function CB:_outside() local p = self.probs; return p:le(self._lims[1]):logical_or(p:gt(self._lims[2])) end
  function CB:_cut() local p = self.probs; return T.where(self:_outside(), p, T.full_like(p, self._lims[1])) end
  function CB:_log_norm()
    local cut = self:_cut()
    local below = T.where(cut:le(0.5), cut, 0)
    local above = T.where(cut:ge(0.5), cut, 1)
    local log_norm = ((-cut):log1p() - cut:log()):abs():log()
      - T.where(cut:le(0.5), (below * -2):log1p(), (above * 2 - 1):log())
    local x = (self.probs - 0.5):pow(2)
    local taylor = (x * (104 / 45) + 4 / 3) * x + math.log(2)
    return T.where(self:_outside(), log_norm, taylor)
  end
  function CB:_mean()
    local cut = self:_cut()
    local mus = cut / (cut * 2 - 1) + ((-cut):log1p() - cut:log()):reciprocal()
    local x = self.probs - 0.5
    local taylor = (x:pow(2) * (16 / 45) + 1 / 3) * x + 0.5
    return T.where(self:_outside(), mus, taylor)
  end
  function CB:_variance()
    local cut = self:_cut()
    local vars = cut * (cut - 1) / (-cut * 2 + 1):pow(2) + ((-cut):log1p() - cut:log()):pow(-2)
    local x = (self.probs - 0.5):pow(2)
    local taylor = -(-x * (128 / 945) + 1 / 15) * x + 1 / 12
    return T.where(self:_outside(), vars, taylor)
  end
  function CB:rsample(shape)
    local p = self.probs
    return self:icdf(T.rand(self:_extended_shape(shape), { dtype = p.dtype, device = p.device }))
  end
  function CB:sample(shape) return T.no_grad(function() return self:rsample(shape) end) end
  function CB:log_prob(v)
    self:_validate_sample(v)
    local l = self.logits
    local s = bshape("ContinuousBernoulli", { totable(l.shape), totable(v.shape) }, "the value and the batch shape")
    return -T.nn.functional.binary_cross_entropy_with_logits(l:expand(s), v:to(l.dtype):expand(s),
      { reduction = "none" }) + self:_log_norm()
  end
  function CB:cdf(v)
    self:_validate_sample(v)
    local cut = self:_cut()
    local cdfs = (cut:pow(v) * (-cut + 1):pow(-v + 1) + cut - 1) / (cut * 2 - 1)
    local unbounded = T.where(self:_outside(), cdfs, v)
    return T.where(v:le(0), 0, T.where(v:ge(1), 1, unbounded))
  end
  function CB:icdf(u)
    local cut = self:_cut()
    local inv = ((-cut + u * (cut * 2 - 1)):log1p() - (-cut):log1p()) / (cut:log() - (-cut):log1p())
    return T.where(self:_outside(), inv, u)
  end
  function CB:entropy()
    local p = self.probs
    local l0, l1 = (-p):log1p(), p:log()
    return self.mean * (l0 - l1) - self:_log_norm() - l0
  end
  CB.expand = probs_logits_expand(CB)

  -- VonMises(loc, concentration): the circular normal on [-pi, pi); draws
  -- by Best and Fisher's (1979) rejection sampler, as torch's; log I0 and
  -- log I1 from the scaled Bessel functions (T.special.i0e/i1e: exact to
  -- float64 where torch uses Abramowitz-Stegun polynomials, ~1e-7 apart)
  local VonMises = params_class("VonMises", { "loc", "concentration" }, { loc = Cn.real, concentration = Cn.positive },
    Cn.real, false)
  local function log_i0(k) return T.special.i0e(k):log() + k:abs() end
  local function log_i1(k) return T.special.i1e(k):log() + k:abs() end
  function VonMises:_mean() return self.loc end
  function VonMises:_mode() return self.loc end
  function VonMises:_variance()
    local k = self.concentration
    return -(log_i1(k) - log_i0(k)):exp() + 1
  end
  function VonMises:log_prob(v)
    self:_validate_sample(v)
    return self.concentration * (v - self.loc):cos() - math.log(2 * math.pi) - log_i0(self.concentration)
  end
  function VonMises:sample(shape)
    return T.no_grad(function()
      local es = self:_extended_shape(shape)
      local loc, k = self.loc:expand(es):double(), self.concentration:expand(es):double()
      local tau = (k:pow(2) * 4 + 1):sqrt() + 1
      local rho = (tau - (tau * 2):sqrt()) / (k * 2)
      local r = T.where(k:lt(1e-5), k:reciprocal() + k, (rho:pow(2) + 1) / (rho * 2))
      local x = T.zeros(es, { dtype = T.float64, device = loc.device })
      local done = T.zeros(es, { dtype = T.bool, device = loc.device })
      while not done:all():item() do
        local u1 = T.rand(es, { dtype = T.float64, device = loc.device })
        local u2 = T.rand(es, { dtype = T.float64, device = loc.device })
        local u3 = T.rand(es, { dtype = T.float64, device = loc.device })
        local z = (u1 * math.pi):cos()
        local f = (r * z + 1) / (r + z)
        local c = k * (r - f)
        local accept = (c * (-c + 2) - u2):gt(0):logical_or(((c / u2):log() + 1 - c):ge(0))
        accept = accept:logical_and(done:logical_not())
        x = T.where(accept, (u3 - 0.5):sign() * f:acos(), x)
        done = done:logical_or(accept)
      end
      return ((x + math.pi + loc):remainder(2 * math.pi) - math.pi):to(self.loc.dtype)
    end)
  end

  -- LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance
  -- W W^T + diag(D) (W n x r), torch's: log_prob and entropy through the
  -- r x r capacitance matrix I + W^T D^-1 W (Woodbury and the matrix
  -- determinant lemma), never an n x n factorisation
  local LRMVN = class("LowRankMultivariateNormal", Distribution)
  LRMVN.arg_constraints = { loc = Cn.real_vector, cov_factor = Cn.independent(Cn.real, 2),
    cov_diag = Cn.independent(Cn.positive, 1) }
  LRMVN.support = Cn.real_vector
  LRMVN.has_rsample = true
  ctor(LRMVN, function(loc, W, Dg, o)
    local name = "LowRankMultivariateNormal"
    o = take_opts(name, o, { "validate_args" })
    A.check_tensor(name, loc, "loc", 3)
    A.check_tensor(name, W, "cov_factor", 3)
    A.check_tensor(name, Dg, "cov_diag", 3)
    if loc.ndim < 1 then error(name .. ": loc must be at least one-dimensional.", 2) end
    if W.ndim < 2 then
      error(name .. ": cov_factor must be at least two-dimensional, with optional leading batch dimensions", 2)
    end
    local n = loc.shape[loc.ndim]
    if W.shape[W.ndim - 1] ~= n then
      error(fmt("%s: cov_factor must be a batch of matrices with shape %d x m", name, n), 2)
    end
    if Dg.ndim < 1 or Dg.shape[Dg.ndim] ~= n then
      error(fmt("%s: cov_diag must be a batch of vectors with shape %s", name, A.fmt_shape({ n })), 2)
    end
    local dt = fdtype({ loc, W, Dg })
    loc, W, Dg = loc:to(dt), W:to(dt), Dg:to(dt)
    local bs = bshape(name, { sub(totable(loc.shape), 1, loc.ndim - 1), sub(totable(W.shape), 1, W.ndim - 2),
      sub(totable(Dg.shape), 1, Dg.ndim - 1) })
    local r = W.shape[W.ndim]
    local d = init(new(LRMVN, { loc = loc:expand(concat(bs, { n })), cov_factor = W:expand(concat(bs, { n, r })),
      cov_diag = Dg:expand(concat(bs, { n })) }), bs, { n }, o.validate_args)
    if d._validate_args then
      check(d, "parameter loc", d.loc, Cn.real_vector)
      check(d, "parameter cov_factor", d.cov_factor, Cn.independent(Cn.real, 2))
      check(d, "parameter cov_diag", d.cov_diag, Cn.independent(Cn.positive, 1))
    end
    return d
  end)
  LRMVN._params = { "loc", "cov_factor", "cov_diag" }
  LRMVN._param_event_dims = { loc = 1, cov_factor = 2, cov_diag = 1 }
  function LRMVN:_capacitance_tril()
    local W, Dg = self.cov_factor, self.cov_diag
    local r = W.shape[W.ndim]
    local WtDinv = W:transpose(-1, -2) / Dg:unsqueeze(-2)
    local K = WtDinv:matmul(W) + T.eye(r, { dtype = W.dtype, device = W.device })
    return T.linalg.cholesky(K)
  end
  function LRMVN:_mean() return self.loc end
  function LRMVN:_mode() return self.loc end
  function LRMVN:_variance() return self.cov_factor:pow(2):sum(-1) + self.cov_diag end
  function LRMVN:_covariance_matrix()
    local W = self.cov_factor
    return W:matmul(W:transpose(-1, -2)) + T.diag_embed(self.cov_diag)
  end
  function LRMVN:_precision_matrix()
    -- Woodbury: D^-1 - D^-1 W K^-1 W^T D^-1, K = L L^T the capacitance
    local W, Dg = self.cov_factor, self.cov_diag
    local Dinv = Dg:reciprocal()
    local A_ = T.linalg.solve_triangular(self:_capacitance_tril(), W:transpose(-1, -2) * Dinv:unsqueeze(-2),
      { upper = false })
    return T.diag_embed(Dinv) - A_:transpose(-1, -2):matmul(A_)
  end
  function LRMVN:_scale_tril() return T.linalg.cholesky(self.covariance_matrix) end
  function LRMVN:rsample(shape)
    local es = self:_extended_shape(shape)
    local W = self.cov_factor
    local r = W.shape[W.ndim]
    local ws = sub(es, 1, #es - 1)
    ws[#ws + 1] = r
    local eW = T.randn(ws, { dtype = W.dtype, device = W.device })
    local eD = T.randn(es, { dtype = W.dtype, device = W.device })
    return self.loc + W:matmul(eW:unsqueeze(-1)):squeeze(-1) + self.cov_diag:sqrt() * eD
  end
  function LRMVN:_log_det(Lc)
    return Lc:diagonal(0, -2, -1):log():sum(-1) * 2 + self.cov_diag:log():sum(-1)
  end
  function LRMVN:log_prob(v)
    self:_validate_sample(v)
    local W, Dg = self.cov_factor, self.cov_diag
    local diff = v:to(self.loc.dtype) - self.loc
    local Lc = self:_capacitance_tril()
    local WtDinv_x = (W:transpose(-1, -2) / Dg:unsqueeze(-2)):matmul(diff:unsqueeze(-1))
    -- Lc's batch broadcast against the value's sample dims
    local sol = T.linalg.solve_triangular(Lc:expand(concat(sub(totable(WtDinv_x.shape), 1, WtDinv_x.ndim - 2),
      sub(totable(Lc.shape), Lc.ndim - 1))), WtDinv_x, { upper = false })
    local m = (diff:pow(2) / Dg):sum(-1) - sol:squeeze(-1):pow(2):sum(-1)
    local n = self.loc.shape[self.loc.ndim]
    return -(n * LOG2PI + self:_log_det(Lc) + m) * 0.5
  end
  function LRMVN:entropy()
    local n = self.loc.shape[self.loc.ndim]
    local h = (n * (1 + LOG2PI) + self:_log_det(self:_capacitance_tril())) * 0.5
    return h
  end

  -- -- kl_divergence ---------------------------------------------------------------------
  local KL = {}
  local function reg(p, q, f) KL[p .. "|" .. q] = f end
  function D.register_kl(p, q, f) reg(p.__name, q.__name, f) end
  function D.kl_divergence(p, q)
    local pn = type(p) == "table" and p.__name or nil
    local qn = type(q) == "table" and q.__name or nil
    local f = pn and qn and KL[pn .. "|" .. qn]
    -- a subclass's pairs are its parent's (torch looks them up along the
    -- classes' MRO): Chi2 is a Gamma
    local parent = { Chi2 = "Gamma" }
    if not f and pn and qn then
      f = KL[(parent[pn] or pn) .. "|" .. qn] or KL[pn .. "|" .. (parent[qn] or qn)]
        or KL[(parent[pn] or pn) .. "|" .. (parent[qn] or qn)]
    end
    if not f then
      error(fmt("kl_divergence: no KL(p || q) is implemented for p = %s and q = %s", tostring(pn), tostring(qn)), 2)
    end
    return f(p, q)
  end
  reg("Normal", "Normal", function(p, q)
    local vr = (p.scale / q.scale):pow(2)
    local t1 = ((p.loc - q.loc) / q.scale):pow(2)
    return (vr + t1 - 1 - vr:log()) * 0.5
  end)
  -- PyTorch's masks: infinite where q puts no mass (probs exactly 0 or 1)
  -- and p does, zero where p puts none; broadcast (torch 1.13's masked
  -- assignment raises for parameters of different shapes)
  reg("Bernoulli", "Bernoulli", function(p, q)
    local pp, qp = p.probs, q.probs
    local t1 = pp * (T.nn.functional.softplus(-q.logits) - T.nn.functional.softplus(-p.logits))
    t1 = T.where(qp:eq(0):expand(t1.shape), 1 / 0, t1)
    t1 = T.where(pp:eq(0):expand(t1.shape), 0, t1)
    local t2 = (-pp + 1) * (T.nn.functional.softplus(q.logits) - T.nn.functional.softplus(p.logits))
    t2 = T.where(qp:eq(1):expand(t2.shape), 1 / 0, t2)
    t2 = T.where(pp:eq(1):expand(t2.shape), 0, t2)
    return t1 + t2
  end)
  reg("Categorical", "Categorical", function(p, q)
    local t = p.probs * (p.logits - q.logits)
    t = T.where(q.probs:eq(0):expand(t.shape), 1 / 0, t)
    t = T.where(p.probs:eq(0):expand(t.shape), 0, t)
    return t:sum(-1)
  end)
  reg("Beta", "Beta", function(p, q)
    local a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    local s1 = a1 + b1
    return lbeta(a2, b2) - lbeta(a1, b1) + (a1 - a2) * a1:digamma() + (b1 - b2) * b1:digamma()
      + (a2 - a1 + b2 - b1) * s1:digamma()
  end)
  reg("Gamma", "Gamma", function(p, q)
    local a1, r1, a2, r2 = p.concentration, p.rate, q.concentration, q.rate
    local t1 = a2 * (r1 / r2):log()
    local t2 = a2:lgamma() - a1:lgamma()
    local t3 = (a1 - a2) * a1:digamma()
    local t4 = (r2 - r1) * (a1 / r1)
    return t1 + t2 + t3 + t4
  end)
  reg("Dirichlet", "Dirichlet", function(p, q)
    local a, b = p.concentration, q.concentration
    local a0, b0 = a:sum(-1), b:sum(-1)
    local t1 = a0:lgamma() - b0:lgamma()
    local t2 = (b:lgamma() - a:lgamma()):sum(-1)
    local t3 = ((a - b) * (a:digamma() - a0:unsqueeze(-1):digamma())):sum(-1)
    return t1 + t2 + t3
  end)
  reg("Exponential", "Exponential", function(p, q)
    local r = q.rate / p.rate
    return -r:log() + r - 1
  end)
  reg("Uniform", "Uniform", function(p, q)
    local r = ((q.high - q.low) / (p.high - p.low)):log()
    local outside = q.low:gt(p.low):logical_or(q.high:lt(p.high))
    return T.where(outside, 1 / 0, r)
  end)
  reg("Laplace", "Laplace", function(p, q)
    local sr = p.scale / q.scale
    local ld = (p.loc - q.loc):abs()
    local t1 = -sr:log()
    local t2 = ld / q.scale
    local t3 = sr * (-ld / p.scale):exp()
    return t1 + t2 + t3 - 1
  end)
  reg("MultivariateNormal", "MultivariateNormal", function(p, q)
    if p._k ~= q._k then
      error("kl_divergence: KL-divergence between two Multivariate Normals with different event shapes cannot be computed", 2)
    end
    local Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    local bs = bshape("kl_divergence", { totable(p.batch_shape), totable(q.batch_shape) })
    local mshape = concat(bs, { p._k, p._k })
    local LpB, LqB = Lp:expand(mshape), Lq:expand(mshape)
    local hld = half_log_det(Lq) - half_log_det(Lp)
    local term1 = solve_lower(LqB, LpB):pow(2):flatten(-2):sum(-1)
    local diff = (q.loc - p.loc):expand(concat(bs, { p._k }))
    local term2 = solve_lower(LqB, diff:unsqueeze(-1)):squeeze(-1):pow(2):sum(-1)
    return hld + (term1 + term2 - p._k) * 0.5
  end)
  reg("Independent", "Independent", function(p, q)
    if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
      error("kl_divergence: Independent distributions with different reinterpreted_batch_ndims", 2)
    end
    return sum_right(D.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
  end)
  reg("LogNormal", "LogNormal", function(p, q) return D.kl_divergence(p.base_dist, q.base_dist) end)
  reg("Geometric", "Geometric", function(p, q)
    return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
  end)
  reg("Binomial", "Binomial", function(p, q)
    if p.total_count:lt(q.total_count):any():item() then
      error("kl_divergence: KL between Binomials where q.total_count > p.total_count is not implemented", 0)
    end
    local kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
    return T.where(p.total_count:gt(q.total_count), 1 / 0, kl)
  end)
  reg("OneHotCategorical", "OneHotCategorical", function(p, q)
    return D.kl_divergence(p._categorical, q._categorical)
  end)

  reg("HalfNormal", "HalfNormal", function(p, q) return D.kl_divergence(p.base_dist, q.base_dist) end)
  reg("Gumbel", "Gumbel", function(p, q)
    local ct1 = p.scale / q.scale
    local ct2 = q.loc / q.scale
    local ct3 = p.loc / q.scale
    local t1 = -ct1:log() - ct2 + ct3
    local t3 = (ct2 + (ct1 + 1):lgamma() - ct3):exp()
    return t1 + ct1 * 0.57721566490153286061 + t3 - (1 + 0.57721566490153286061)
  end)
  -- infinite where p's support starts below q's (p.scale < q.scale)
  reg("Pareto", "Pareto", function(p, q)
    local ar = q.alpha / p.alpha
    local r = q.alpha * (p.scale / q.scale):log() - ar:log() + ar - 1
    return T.where(p.scale:lt(q.scale):expand(r.shape), 1 / 0, r)
  end)
  reg("Cauchy", "Cauchy", function(p, q)
    local t1 = ((p.scale + q.scale):pow(2) + (p.loc - q.loc):pow(2)):log()
    return t1 - (p.scale * q.scale * 4):log()
  end)
  reg("Poisson", "Poisson", function(p, q)
    return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
  end)

  -- Pairs of different families: PyTorch 1.13's closed forms
  -- (torch/distributions/kl.py), and an infinite KL where p puts mass
  -- where q has none (a tensor of inf shaped as p's parameter, as torch's
  -- _infinite_like). Masks broadcast as torch's masked assignment.
  local INF = 1 / 0
  local EULER = 0.57721566490153286061
  local function inf_like(t) return T.full_like(t, INF) end
  local function set_inf(r, mask) return T.where(mask:expand(r.shape), INF, r) end
  local function xlogx(t) return t * t:log() end
  for _, pair in ipairs {
    { "Exponential", "Beta", "rate" }, { "Exponential", "Uniform", "rate" },
    { "Gamma", "Beta", "concentration" }, { "Gamma", "Uniform", "concentration" },
    { "Laplace", "Beta", "loc" }, { "Laplace", "Exponential", "loc" },
    { "Laplace", "Gamma", "loc" }, { "Laplace", "Uniform", "loc" },
    { "Normal", "Beta", "loc" }, { "Normal", "Exponential", "loc" },
    { "Normal", "Gamma", "loc" }, { "Normal", "Uniform", "loc" },
    { "Poisson", "Bernoulli", "rate" },
  } do
    local param = pair[3]
    reg(pair[1], pair[2], function(p) return inf_like(p[param]) end)
  end
  reg("Bernoulli", "Poisson", function(p, q)
    return -p:entropy() - (p.probs * q.rate:log() - q.rate)
  end)
  reg("Beta", "Exponential", function(p, q)
    local a, b = p.concentration1, p.concentration0
    return -p:entropy() - q.rate:log() + q.rate * (a / (a + b))
  end)
  reg("Beta", "Gamma", function(p, q)
    local a, b, k, r = p.concentration1, p.concentration0, q.concentration, q.rate
    local t2 = k:lgamma() - k * r:log()
    local t3 = (k - 1) * (a:digamma() - (a + b):digamma())
    return -p:entropy() + t2 - t3 + r * a / (a + b)
  end)
  reg("Beta", "Normal", function(p, q)
    local a, b = p.concentration1, p.concentration0
    local e = a / (a + b)
    local var = q.scale:pow(2)
    local t2 = (var * (2 * math.pi)):log() * 0.5
    local t3 = (e * (-e + 1) / (a + b + 1) + e:pow(2)) * 0.5
    return -p:entropy() + t2 + (t3 - q.loc * e + q.loc:pow(2) * 0.5) / var
  end)
  reg("Beta", "Uniform", function(p, q)
    local r = -p:entropy() + (q.high - q.low):log()
    return set_inf(r, q.low:gt(0):logical_or(q.high:lt(1)))
  end)
  reg("Exponential", "Gamma", function(p, q)
    local ratio = q.rate / p.rate
    local k = q.concentration
    return -k * ratio:log() + ratio + k:lgamma() + k * EULER - (1 + EULER)
  end)
  reg("Exponential", "Normal", function(p, q)
    local var = q.scale:pow(2)
    local r2 = p.rate:pow(2)
    local t1 = (r2 * var * (2 * math.pi)):log() * 0.5
    return t1 - 1 + (r2:reciprocal() - q.loc / p.rate + q.loc:pow(2) * 0.5) / var
  end)
  reg("Gamma", "Exponential", function(p, q)
    return -p:entropy() - q.rate:log() + q.rate * p.concentration / p.rate
  end)
  reg("Gamma", "Normal", function(p, q)
    local k, r = p.concentration, p.rate
    local var = q.scale:pow(2)
    local b2 = r:pow(2)
    local t1 = (b2 * var * (2 * math.pi)):log() * 0.5 - k - k:lgamma()
    local t2 = (k:pow(2) + k) * 0.5 / b2
    local t3 = q.loc * k / r
    local t4 = q.loc:pow(2) * 0.5
    return t1 + (k - 1) * k:digamma() + (t2 - t3 + t4) / var
  end)
  reg("Laplace", "Normal", function(p, q)
    local var = q.scale:pow(2)
    local ratio = p.scale:pow(2) / var
    local t1 = (ratio * (2 / math.pi)):log() * 0.5
    local t2 = p.loc:pow(2) * 0.5
    local t3 = p.loc * q.loc
    local t4 = q.loc:pow(2) * 0.5
    return -t1 + ratio + (t2 - t3 + t4) / var - 1
  end)
  reg("Normal", "Laplace", function(p, q)
    local d = p.loc - q.loc
    local sr = p.scale / q.scale
    local dr = d / p.scale
    local t2 = p.scale * (dr:pow(2) * -0.5):exp() * math.sqrt(2 / math.pi)
    local t3 = d * (dr * math.sqrt(0.5)):erf()
    return -sr:log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))
  end)
  reg("Uniform", "Beta", function(p, q)
    local w = p.high - p.low
    local a, b = q.concentration1, q.concentration0
    local t1 = w:log()
    local t2 = (a - 1) * (xlogx(p.high) - xlogx(p.low) - w) / w
    local t3 = (b - 1) * (xlogx(-p.high + 1) - xlogx(-p.low + 1) + w) / w
    local t4 = a:lgamma() + b:lgamma() - (a + b):lgamma()
    return set_inf(t3 + t4 - t1 - t2, p.high:gt(1):logical_or(p.low:lt(0)))
  end)
  reg("Uniform", "Exponential", function(p, q)
    local r = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate):log()
    return set_inf(r, p.low:lt(0))
  end)
  reg("Uniform", "Gamma", function(p, q)
    local w = p.high - p.low
    local k, r = q.concentration, q.rate
    local t2 = k:lgamma() - k * r:log()
    local t3 = (-k + 1) * (xlogx(p.high) - xlogx(p.low) - w) / w
    local t4 = r * (p.high + p.low) / 2
    return set_inf(-w:log() + t2 + t3 + t4, p.low:lt(0))
  end)
  reg("Uniform", "Normal", function(p, q)
    local w = p.high - p.low
    local t1 = (q.scale * math.sqrt(2 * math.pi) / w):log()
    local t2 = w:pow(2) / 12
    local t3 = ((p.high + p.low - q.loc * 2) / 2):pow(2)
    return t1 + (t2 + t3) * 0.5 / q.scale:pow(2)
  end)

  -- -- T.normal and the in-place samplers ------------------------------------------------------
  -- A sample drawn from tensor parameters joins the graph as torch's does:
  -- a node whose gradient is zeros for each parameter that requires one
  -- (torch 1.13's NormalBackward1/2/3, BernoulliBackward0, PoissonBackward0),
  -- so a backward through it runs (and gives zeros) instead of failing.
  local function zero_grad_node(name, params_, r)
    if not T.is_grad_enabled() then return r end
    local ins, any = { n = #params_ }, false
    for i = 1, #params_ do
      local v = params_[i]
      if T.is_tensor(v) and v.requires_grad then ins[i], any = v, true end
    end
    if not any then return r end
    return C._autograd_custom(name, ins, r, function()
      local g = {}
      for i = 1, ins.n do
        if ins[i] then g[i] = T.zeros_like(ins[i]:detach()) end
      end
      return g
    end)
  end
  D._zero_grad_node = zero_grad_node

  -- T.normal(mean, std[, size], {generator-free options: dtype, device}):
  -- tensor/tensor (broadcast), tensor/number, number/tensor, or numbers with
  -- a size. As torch: the tensor forms give mean's dtype (std's when mean
  -- is a number), floating or complex (a complex sample has each part of
  -- variance std^2 / 2, as randn's), and take no dtype or device; std is
  -- real, and a negative or NaN one is refused. Integer tensors are taken
  -- as the default float dtype (torch refuses them; Lua's 3. is an integer).
  local NORMAL_OPTS = A.set { "dtype", "device", "requires_grad", "out" }
  T.normal = A.named("normal", function(mean, std, size, o)
    if A.is_opts(size) and not (type(size[1]) == "number") then o, size = size, nil end
    o = A.check_opts("normal", o, NORMAL_OPTS, 2)
    if std == nil then std = 1 end
    local r
    if T.is_tensor(mean) or T.is_tensor(std) then
      if size ~= nil then error("normal: size is only taken with a number mean and std", 2) end
      if o.dtype ~= nil or o.device ~= nil then
        error("normal: dtype and device are only taken with a number mean and std (a tensor's own are used)", 2)
      end
      for _, v in ipairs { { mean, "mean" }, { std, "std" } } do
        if not T.is_tensor(v[1]) and type(v[1]) ~= "number" then
          error(fmt("normal: expected a tensor or a number for %s, got %s", v[2], type(v[1])), 2)
        end
      end
      if T.is_tensor(std) and std:is_complex() then
        error("normal: expects the standard deviation to be non-complex", 2)
      end
      if type(std) == "number" and not (std >= 0) then
        error(fmt("normal: expected std >= 0.0, got %s", tostring(std)), 2)
      end
      if T.is_tensor(std) and std:numel() > 0 and tostring(std.device) ~= "meta" and not std:ge(0):all():item() then
        error("normal: expected all elements of std >= 0.0", 2)
      end
      local shape = bshape("normal", { T.is_tensor(mean) and totable(mean.shape) or {},
        T.is_tensor(std) and totable(std.shape) or {} })
      -- the first floating or complex tensor's dtype; integer and bool
      -- tensors (T.full({n}, 3.) is int64 under LuaJIT) become it, or the
      -- default float dtype (torch refuses them)
      local first = T.is_tensor(mean) and mean or std
      local dt, dev = T.get_default_dtype(), first.device
      for _, v in ipairs { mean, std } do
        if T.is_tensor(v) and (v:is_floating_point() or v:is_complex()) then dt = v.dtype; break end
      end
      local function value(v)
        if not T.is_tensor(v) then return v end
        v = v:detach()
        if not (v:is_floating_point() or v:is_complex()) then v = v:to(dt) end
        return v
      end
      local m, s = value(mean), value(std)
      local eps = T.randn(shape, { dtype = dt, device = dev })
      r = T.no_grad(function() return (eps * s + m):to(dt) end)
      r = zero_grad_node(not T.is_tensor(std) and "NormalBackward1" or not T.is_tensor(mean)
        and "NormalBackward2" or "NormalBackward3", { mean, std }, r)
    else
      if type(mean) ~= "number" or type(std) ~= "number" then
        error("normal: expected tensors or numbers for mean and std", 2)
      end
      if not (std >= 0) then error(fmt("normal: expected std >= 0.0, got %s", tostring(std)), 2) end
      if size == nil then error("normal: with a number mean and std, a size is required", 2) end
      r = T.empty(size, { dtype = o.dtype, device = o.device })
      if r:is_complex() then -- each part normal_(mean, std / sqrt 2), as torch's complex normal_
        T.view_as_real(r):normal_(mean, std / math.sqrt(2))
      else
        r:normal_(mean, std)
      end
    end
    if o.requires_grad and not r.requires_grad then r:requires_grad_() end
    if o.out ~= nil then return C._write_out("normal", r, o.out) end
    return r
  end)

  -- T.bernoulli(probs) / probs:bernoulli() join the graph (zero gradient);
  -- the form with a number p does not, as torch's
  -- (the engine's errors, "bernoulli_: expects p ..." as torch's, are raised
  -- at the caller's line, not this wrapper's)
  local real_bernoulli = M.bernoulli
  local function bernoulli(probs, ...)
    local ok, r = pcall(real_bernoulli, probs, ...)
    if not ok then error(type(r) == "string" and A.unpos(r) or r, 2) end
    if select("#", ...) == 0 and T.is_tensor(probs) and probs.requires_grad then
      r = zero_grad_node("BernoulliBackward0", { probs }, r)
    end
    return r
  end
  M.bernoulli, T.bernoulli = bernoulli, bernoulli

  -- T.poisson(rates): one Poisson draw per element (torch.poisson), in the
  -- rates' floating dtype; a negative or NaN rate is refused, an infinite
  -- one gives inf; in the graph with a zero gradient
  local NO_OPTS = A.set {}
  T.poisson = A.named("poisson", function(rates, o, ...)
    A.check_tensor("poisson", rates, "input", 2)
    A.check_opts("poisson", o, NO_OPTS, 2)
    if select("#", ...) > 0 then error("poisson: takes one tensor (and no other argument)", 2) end
    if not rates:is_floating_point() then
      error(fmt("poisson: expected a floating point tensor, got %s", rates.dtype.name), 2)
    end
    local x = rates:detach()
    local r
    if x:numel() > 0 and tostring(x.device) ~= "meta" then
      if not x:ge(0):all():item() then
        error("poisson: invalid Poisson rate, expected rate to be non-negative", 2)
      end
      local inf = x:eq(math.huge)
      if inf:any():item() then
        r = T.where(inf, x, poisson_draw(T.where(inf, 0, x)))
      end
    end
    r = r or poisson_draw(x)
    return zero_grad_node("PoissonBackward0", { rates }, r)
  end)

  -- T.binomial(count, prob): one Binomial(count, prob) draw per element
  -- (torch.binomial; the exact sampler of D.Binomial), count and prob of
  -- one floating dtype, broadcast together; a NaN prob gives NaN. A
  -- negative or non-integer count or a prob outside [0, 1] is refused
  -- (torch 1.13 returns numbers for them); in the graph with a zero gradient
  T.binomial = A.named("binomial", function(count, prob, o, ...)
    A.check_tensor("binomial", count, "count", 2)
    A.check_tensor("binomial", prob, "prob", 2)
    A.check_opts("binomial", o, NO_OPTS, 2)
    if select("#", ...) > 0 then error("binomial: takes two tensors (and no other argument)", 2) end
    if not count:is_floating_point() or count.dtype ~= prob.dtype then
      error(fmt("binomial: expected count and prob of one floating point dtype, got %s and %s",
        tostring(count.dtype):gsub("^ember%.", ""), tostring(prob.dtype):gsub("^ember%.", "")), 2)
    end
    local s = bshape("binomial", { totable(count.shape), totable(prob.shape) }, "count and prob")
    local n, p = count:detach():expand(s), prob:detach():expand(s)
    local r
    if n:numel() > 0 and tostring(n.device) ~= "meta" then
      if not n:ge(0):logical_and(is_int(n)):all():item() then
        error("binomial: expected count to hold non-negative integers", 2)
      end
      local nan = p:ne(p)
      if not p:ge(0):logical_and(p:le(1)):logical_or(nan):all():item() then
        error("binomial: expected prob to be in [0, 1]", 2)
      end
      r = T.where(nan, p, binomial_draw(n, T.where(nan, 0, p)))
    else
      r = T.empty(s, { dtype = count.dtype, device = count.device })
    end
    return zero_grad_node("BinomialBackward0", { count, prob }, r)
  end)

  local function check_float(op, t)
    A.check_tensor(op, t, "self", 3)
    if not t:is_floating_point() then
      error(fmt("%s: expected a floating point tensor, got %s", op, tostring(t.dtype):gsub("^ember%.", "")), 3)
    end
  end
  local function no_opts(op, o) A.check_opts(op, o, {}, 3) end
  -- uniform_/normal_ on a complex tensor, as torch's: each part uniform on
  -- [from, to), or each part normal with the mean and std / sqrt(2) (randn's
  -- complex convention); drawn into a real buffer, then copied in (a leaf
  -- that requires grad is refused, a non-leaf's history gets a zero gradient)
  local real_uniform, real_normal = M.uniform_, M.normal_
  local function complex_draw(t, fill)
    local r = T.view_as_real(T.empty_like(t:detach(), { memory_format = "contiguous" }))
    fill(r)
    return t:copy_(T.view_as_complex(r))
  end
  local complex_uniform = A.named("uniform_", function(t, from, to, o, ...)
    if select("#", ...) > 0 then error("uniform_: takes at most (from, to)", 2) end
    return complex_draw(t, function(r) real_uniform(r, from, to, o) end)
  end)
  local complex_normal = A.named("normal_", function(t, mean, std, o, ...)
    if select("#", ...) > 0 then error("normal_: takes at most (mean, std)", 2) end
    if std == nil then std = 1 end
    if type(std) == "number" and not (std >= 0) then
      error(fmt("normal_: expects std >= 0.0, but found std %s", tostring(std)), 2)
    end
    if type(std) == "number" then std = std / math.sqrt(2) end
    return complex_draw(t, function(r) real_normal(r, mean, std, o) end)
  end)
  -- (named: a real tensor's errors still point at the caller's line)
  M.uniform_ = A.named("uniform_", function(t, ...)
    if T.is_tensor(t) and t:is_complex() then return complex_uniform(t, ...) end
    return real_uniform(t, ...)
  end)
  M.normal_ = A.named("normal_", function(t, ...)
    if T.is_tensor(t) and t:is_complex() then return complex_normal(t, ...) end
    return real_normal(t, ...)
  end)

  -- These three sample as torch's in-place samplers do in autograd: the first
  -- in-place step (uniform_, normal_, copy_) runs with grad mode as the
  -- caller has it, so a leaf that requires grad is refused and a non-leaf's
  -- old history gets a zero gradient; the transform after it runs under no_grad.
  -- Cauchy: median + sigma tan(pi (u - 1/2))
  M.cauchy_ = A.named("cauchy_", function(t, median, sigma, o)
    check_float("cauchy_", t)
    no_opts("cauchy_", o)
    median, sigma = median or 0, sigma or 1
    if sigma <= 0 then error(fmt("cauchy_: expects sigma > 0.0, but found sigma=%s", tostring(sigma)), 2) end
    t:uniform_()
    return T.no_grad(function()
      return t:sub_(0.5):mul_(pi):tan_():mul_(sigma):add_(median)
    end)
  end)
  -- log-normal: exp(normal(mean, std))
  M.log_normal_ = A.named("log_normal_", function(t, mean, std, o)
    check_float("log_normal_", t)
    no_opts("log_normal_", o)
    mean, std = mean or 1, std or 2
    if std <= 0 then error(fmt("log_normal_: expects std > 0.0, but found std=%s", tostring(std)), 2) end
    t:normal_(mean, std)
    return T.no_grad(function() return t:exp_() end)
  end)
  -- log(1 + x) for x in (-1, 0], accurate for tiny x (Lua has no log1p):
  -- log(u) * x / (u - 1) with u = 1 + x rounded (Goldberg's trick)
  local function log1p(x)
    local u = 1 + x
    if u == 1 then return x end
    return math.log(u) * x / (u - 1)
  end
  -- geometric: the number of Bernoulli(p) trials to the first success (>= 1),
  -- ceil(log(u) / log1p(-p)) as torch's
  M.geometric_ = A.named("geometric_", function(t, p, o)
    A.check_tensor("geometric_", t, "self", 2)
    no_opts("geometric_", o)
    if type(p) ~= "number" or not (p > 0 and p < 1) then
      error(fmt("geometric_: p must be > 0 and < 1, but got p=%s", tostring(p)), 2)
    end
    local g = T.no_grad(function()
      local u = T.rand(t.shape, { dtype = T.float64, device = t.device })
      local lo = 2.2250738585072014e-308
      return (u:clamp(lo):log() / log1p(-p)):ceil():clamp(1)
    end)
    return t:copy_(g)
  end)
end
