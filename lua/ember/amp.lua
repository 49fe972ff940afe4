-- Automatic mixed precision (docs/amp.md; issue 16 item 4): T.autocast and
-- T.amp.GradScaler with PyTorch's semantics, on the CPU (bfloat16) and, with
-- the cuda backend, on cuda (float16/bfloat16).
--   T.autocast(device_type, {dtype =, enabled =, cache_enabled = false}, fn, ...)
-- runs fn(...) with autocast on for device_type and returns fn's results;
-- the previous state comes back afterwards, also when fn raises. The casts
-- happen in the engine's ops (engine/src/ops/autocast.c), so layers, F.* and
-- methods all see them.
local ARGS = require("ember.args")

return function(T, C)
  local amp = T.amp or {}
  T.amp = amp
  local unpack = table.unpack or unpack
  local DEFAULT = { cpu = T.bfloat16, cuda = T.float16 }
  local AC_KEYS = { "dtype", "enabled", "cache_enabled" }

  local function device_type(op, d)
    if type(d) ~= "string" then
      error(string.format("%s: expected a device type ('cpu' or 'cuda') as argument #1, got %s", op, type(d)), 3)
    end
    local t = d:match("^(%a+)")
    if t ~= "cpu" and t ~= "cuda" then
      error(string.format("%s: device_type must be 'cpu' or 'cuda', got '%s'", op, d), 3)
    end
    return t
  end

  local function pack(...) return { n = select("#", ...), ... } end

  function T.autocast(dev, o, fn, ...)
    if type(o) == "function" then return T.autocast(dev, nil, o, fn, ...) end
    local d = device_type("autocast", dev)
    o = ARGS.checkopts("autocast", o, AC_KEYS)
    if type(fn) ~= "function" then
      error("autocast: expected the function to run as argument #3, got " .. type(fn), 2)
    end
    if o.cache_enabled then
      -- PyTorch caches the lower-precision casts of leaf weights inside the
      -- region; ember casts every time (the same values, more work): an
      -- explicit request for the cache is refused rather than ignored
      error("autocast: cache_enabled = true is not supported (ember does not cache the casts); " ..
        "leave it out or pass false", 2)
    end
    local dtype = o.dtype or DEFAULT[d]
    if not T.is_dtype(dtype) then
      error("autocast: dtype must be a dtype (T.bfloat16 or T.float16), got " .. tostring(dtype), 2)
    end
    local enabled = o.enabled
    if enabled == nil then enabled = true end
    if type(enabled) ~= "boolean" then error("autocast: enabled must be a boolean, got " .. type(enabled), 2) end
    if d == "cuda" and enabled and not (T.cuda and T.cuda.is_available and T.cuda.is_available()) then
      error("autocast: device_type 'cuda' needs a CUDA device (T.cuda.is_available() is false)", 2)
    end
    local was_on, was_dt = C._autocast_get(d)
    local ok, err = pcall(C._autocast_set, d, enabled, dtype)
    if not ok then error(err, 2) end
    local r = pack(pcall(fn, ...))
    C._autocast_set(d, was_on, was_dt)
    if not r[1] then error(r[2], 0) end
    return unpack(r, 2, r.n)
  end
  amp.autocast = T.autocast

  function T.is_autocast_enabled(dev, ...)
    ARGS.nomore("is_autocast_enabled", 1, ...)
    local on = C._autocast_get(dev == nil and "cuda" or device_type("is_autocast_enabled", dev))
    return on
  end
  function T.is_autocast_cpu_enabled(...)
    ARGS.nomore("is_autocast_cpu_enabled", 0, ...)
    local on = C._autocast_get("cpu")
    return on
  end
  function T.get_autocast_dtype(dev, ...)
    ARGS.nomore("get_autocast_dtype", 1, ...)
    local _, dt = C._autocast_get(device_type("get_autocast_dtype", dev))
    return dt
  end

  -- -- GradScaler -------------------------------------------------------------------
  -- PyTorch's torch.cuda.amp.GradScaler, for any device: the loss is scaled
  -- before backward so float16 gradients do not underflow; unscale_ divides
  -- the gradients back and looks for inf/nan; step skips the optimizer's step
  -- when it found any; update lowers the scale after such a step (backoff)
  -- and raises it after growth_interval clean ones.
  local GS_KEYS = { "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled" }
  local GradScaler = {}
  GradScaler.__index = GradScaler
  GradScaler.__name = "GradScaler"
  local READY, UNSCALED, STEPPED = 0, 1, 2

  local function number(v, what)
    if type(v) ~= "number" or v ~= v then error(string.format("GradScaler: %s must be a number, got %s", what, tostring(v)), 3) end
    return v
  end

  function amp.GradScaler(o, ...)
    ARGS.nomore("GradScaler", 1, ...)
    o = ARGS.checkopts("GradScaler", o, GS_KEYS)
    local self = setmetatable({}, GradScaler)
    self._enabled = o.enabled == nil and true or o.enabled
    if type(self._enabled) ~= "boolean" then error("GradScaler: enabled must be a boolean", 2) end
    self._init_scale = number(o.init_scale or 2.0 ^ 16, "init_scale")
    self._growth_factor = number(o.growth_factor or 2.0, "growth_factor")
    self._backoff_factor = number(o.backoff_factor or 0.5, "backoff_factor")
    local gi = o.growth_interval or 2000
    if type(gi) ~= "number" or gi % 1 ~= 0 or gi <= 0 then
      error("GradScaler: growth_interval must be a positive integer, got " .. tostring(gi), 2)
    end
    if self._growth_factor <= 1 then error("GradScaler: The growth factor must be > 1.0.", 2) end
    if self._backoff_factor >= 1 then error("GradScaler: The backoff factor must be < 1.0.", 2) end
    self._growth_interval = gi
    self._scale, self._growth_tracker = nil, 0
    self._per_opt = setmetatable({}, { __mode = "k" })
    return self
  end

  local function opt_state(self, opt)
    local s = self._per_opt[opt]
    if not s then
      s = { stage = READY, found_inf = nil }
      self._per_opt[opt] = s
    end
    return s
  end

  local function lazy_scale(self, dev)
    if not self._scale then
      self._scale = T.full({}, self._init_scale, { dtype = T.float32, device = dev })
    end
    return self._scale
  end

  function GradScaler:scale(outputs, ...)
    ARGS.nomore("GradScaler:scale", 1, ...)
    if not self._enabled then return outputs end
    if T.is_tensor(outputs) then
      local s = lazy_scale(self, outputs.device)
      return outputs * s:to(outputs.dtype)
    end
    if type(outputs) ~= "table" then
      error("GradScaler:scale: outputs must be a tensor or a table of tensors, got " .. type(outputs), 2)
    end
    local r = {}
    for k, v in pairs(outputs) do r[k] = self:scale(v) end
    return r
  end

  local function each_grad(opt, fn)
    for _, g in ipairs(opt.param_groups) do
      for _, p in ipairs(g.params) do
        if p.grad ~= nil then fn(p) end
      end
    end
  end

  function GradScaler:unscale_(opt, ...)
    ARGS.nomore("GradScaler:unscale_", 1, ...)
    if not self._enabled then return end
    if type(opt) ~= "table" or not opt.param_groups then
      error("GradScaler:unscale_: expected an optimizer, got " .. type(opt), 2)
    end
    local st = opt_state(self, opt)
    if st.stage == UNSCALED then
      error("GradScaler:unscale_: unscale_() has already been called on this optimizer since the last update().", 2)
    elseif st.stage == STEPPED then
      error("GradScaler:unscale_: unscale_() is being called after step().", 2)
    end
    if not self._scale then
      error("GradScaler:unscale_: no scale yet: call scaler:scale(loss) before unscaling", 2)
    end
    -- PyTorch's check is of the gradients before the unscaling
    local inv = 1.0 / self._scale:item()
    local found, checked = false, false
    T.no_grad(function()
      each_grad(opt, function(p)
        if p.grad.dtype == T.float16 then
          error("GradScaler:unscale_: Attempting to unscale FP16 gradients.", 0)
        end
        checked = true
        if not found and not p.grad:isfinite():all():item() then found = true end
        p.grad:mul_(inv)
      end)
    end)
    -- no gradient at all: no inf check recorded (PyTorch's empty
    -- found_inf_per_device), which step() and update() refuse
    if checked then st.found_inf = found end
    st.stage = UNSCALED
  end

  function GradScaler:step(opt, ...)
    if not self._enabled then return opt:step(...) end
    if type(opt) ~= "table" or not opt.param_groups then
      error("GradScaler:step: expected an optimizer, got " .. type(opt), 2)
    end
    local st = opt_state(self, opt)
    if st.stage == STEPPED then
      error("GradScaler:step: step() has already been called since the last update().", 2)
    end
    if st.stage == READY then self:unscale_(opt) end
    if st.found_inf == nil then
      error("GradScaler:step: No inf checks were recorded for this optimizer.", 2)
    end
    local r
    if not st.found_inf then r = pack(opt:step(...)) end
    st.stage = STEPPED
    if r then return unpack(r, 1, r.n) end
  end

  function GradScaler:update(new_scale, ...)
    ARGS.nomore("GradScaler:update", 1, ...)
    if not self._enabled then return end
    if not self._scale then error("GradScaler:update: no scale yet: call scaler:scale(loss) first", 2) end
    if new_scale ~= nil then
      local v = T.is_tensor(new_scale) and new_scale:item() or new_scale
      if type(v) ~= "number" then error("GradScaler:update: new_scale should be a number or a 1-element tensor", 2) end
      self._scale:fill_(v)
    else
      local any, seen = false, false
      for _, s in pairs(self._per_opt) do
        if s.found_inf ~= nil then seen = true; any = any or s.found_inf end
      end
      if not seen then error("GradScaler:update: No inf checks were recorded prior to update.", 2) end
      if any then
        self._scale:mul_(self._backoff_factor)
        self._growth_tracker = 0
      else
        self._growth_tracker = self._growth_tracker + 1
        if self._growth_tracker == self._growth_interval then
          -- PyTorch's _amp_update_scale_: a growth that would overflow
          -- float32 to inf keeps the scale (the tracker restarts anyway)
          local grown = self._scale * self._growth_factor
          if grown:isfinite():item() then self._scale:copy_(grown) end
          self._growth_tracker = 0
        end
      end
    end
    self._per_opt = setmetatable({}, { __mode = "k" })
  end

  function GradScaler:get_scale()
    if not self._enabled then return 1.0 end
    return self._scale and self._scale:item() or self._init_scale
  end
  function GradScaler:is_enabled() return self._enabled end
  function GradScaler:get_growth_factor() return self._growth_factor end
  function GradScaler:get_backoff_factor() return self._backoff_factor end
  function GradScaler:get_growth_interval() return self._growth_interval end
  function GradScaler:set_growth_factor(v) self._growth_factor = number(v, "growth_factor") end
  function GradScaler:set_backoff_factor(v) self._backoff_factor = number(v, "backoff_factor") end
  function GradScaler:set_growth_interval(v) self._growth_interval = v end
  function GradScaler:state_dict()
    if not self._enabled then return {} end
    return { scale = self:get_scale(), growth_factor = self._growth_factor, backoff_factor = self._backoff_factor,
      growth_interval = self._growth_interval, _growth_tracker = self._growth_tracker }
  end
  function GradScaler:load_state_dict(sd)
    if not self._enabled then return end
    if type(sd) ~= "table" or next(sd) == nil then
      error("GradScaler:load_state_dict: The source state dict is empty, possibly because it was saved from a " ..
        "disabled instance of GradScaler.", 2)
    end
    self._init_scale = sd.scale
    if self._scale then self._scale:fill_(sd.scale) end
    self._growth_factor, self._backoff_factor = sd.growth_factor, sd.backoff_factor
    self._growth_interval, self._growth_tracker = sd.growth_interval, sd._growth_tracker
  end
end
