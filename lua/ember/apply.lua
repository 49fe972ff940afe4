-- t:apply_(fn), t:map_(other, fn), t:map2_(a, b, fn) (docs/helpers.md,
-- "Lua functions over elements"): PyTorch's Tensor.apply_/map_/map2_ (and
-- Torch7's apply/map/map2): a Lua function called on every element in
-- row-major order, its results written back in place. For scripts, not
-- speed: one Lua call per element.
return function(T, C)
  local ARGS = require "ember.args"
  local fmt, floor, ceil = string.format, math.floor, math.ceil
  local M = C._methods
  -- ember's own errors at the user's line; an error raised by fn itself
  -- passes through untouched (its own message and position)
  local function fail(msg) ARGS.raise(msg) end

  -- each integer dtype's range as doubles: [min, max + 1) (int64's
  -- limits are int64 cdata under LuaJIT; 2^63 is exact as a double)
  local ranges = {}
  for _, dt in ipairs { "uint8", "int8", "int16", "int32", "int64" } do
    local info = T.iinfo(T[dt])
    -- (+ 1.0: a float sum, where Lua 5.4's integer max + 1 would wrap)
    ranges[T[dt]] = { tonumber(info.min), tonumber(info.max) + 1.0, dt }
  end

  -- fn's result r for element i as the value the dtype holds (PyTorch's
  -- conversions: a float truncated toward zero into an integer dtype, an
  -- integer out of the dtype's range refused)
  local function convert(op, r, i, dtype)
    if type(r) == "cdata" then
      -- a 64-bit integer (LuaJIT's int64 cdata, as the elements of an
      -- int64 tensor beyond 2^53 come): kept exact for int64, else a number
      local ok, n = pcall(tonumber, r)
      if not ok or type(n) ~= "number" then
        fail(fmt("%s: the function must return a number, got cdata (element %d)", op, i))
      end
      if dtype == T.int64 and n == math.floor(n) and n >= -2 ^ 63 and n < 2 ^ 63 then return r end
      r = n
    end
    if dtype == T.bool then
      if type(r) == "boolean" then return r end
      if type(r) == "number" then return r ~= 0 end
    elseif type(r) == "number" then
      local range = ranges[dtype]
      if not range then return r end
      if r ~= r or r == math.huge or r == -math.huge then
        fail(fmt("%s: the function's result %s for element %d cannot be converted to %s", op,
          r ~= r and "nan" or tostring(r), i,
          range[3]))
      end
      r = r >= 0 and floor(r) or ceil(r)
      if r < range[1] or r >= range[2] then
        fail(fmt("%s: value %.17g (element %d) cannot be converted to type %s without overflow", op, r, i,
          range[3]))
      end
      return r
    elseif type(r) == "boolean" then
      return r and 1 or 0
    end
    fail(fmt("%s: the function must return a number%s, got %s (element %d)", op,
      dtype == T.bool and " or a boolean" or "", type(r), i))
  end

  local function run(op, self, others, fn)
    if not T.is_tensor(self) then fail(fmt("%s: expected a tensor, got %s", op, type(self))) end
    if type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
      fail(fmt("%s: expected a function, got %s", op, type(fn)))
    end
    for k, o in ipairs(others) do
      if not T.is_tensor(o) then
        fail(fmt("%s: expected a tensor for argument #%d, got %s", op, k + 1, type(o)))
      end
      if o.dtype ~= self.dtype then
        fail(fmt("%s: expected %s for argument #%d (got %s)", op, tostring(self.dtype), k + 1, tostring(o.dtype)))
      end
    end
    if self.requires_grad then
      fail(op .. ": can't call " .. op .. "() on a tensor that requires grad; use t:detach():" .. op ..
        "() instead")
    end
    if self:is_complex() then
      fail(op .. ": complex tensors are not supported (Lua has no complex numbers: apply it to t.real and " ..
        "t.imag)")
    end
    local dev = self.device.type
    if dev == "meta" then return self end
    if dev ~= "cpu" then fail(fmt("%s: only CPU tensors (got a %s tensor)", op, dev)) end
    local lists = {}
    for k, o in ipairs(others) do
      if o.device.type ~= "cpu" then fail(fmt("%s: only CPU tensors (argument #%d is on %s)", op, k + 1,
        o.device.type)) end
      local ok, e = pcall(o.expand, o, self.shape)
      if not ok then
        fail(fmt("%s: argument #%d of shape %s is not broadcastable to the tensor's shape %s", op, k + 1,
          tostring(o.shape), tostring(self.shape)))
      end
      lists[k] = e:reshape(-1):tolist()
    end
    local vals = self:reshape(-1):tolist()
    local a, b = lists[1], lists[2]
    for i = 1, #vals do
      local r
      if b then r = fn(vals[i], a[i], b[i])
      elseif a then r = fn(vals[i], a[i])
      else r = fn(vals[i]) end
      vals[i] = convert(op, r, i, self.dtype)
    end
    if #vals > 0 then
      local ok, e = pcall(self.copy_, self, T.tensor(vals, { dtype = self.dtype }):view(self.shape))
      if not ok then fail(op .. ": " .. tostring(e):gsub("^[^\n]-:%d+: ", "", 1):gsub("^[%w_]+: ", "", 1)) end
    end
    return self
  end

  function M.apply_(self, fn, ...)
    ARGS.nomore("apply_", 2, ...)
    return run("apply_", self, {}, fn)
  end
  function M.map_(self, other, fn, ...)
    ARGS.nomore("map_", 3, ...)
    return run("map_", self, { other }, fn)
  end
  function M.map2_(self, a, b, fn, ...)
    ARGS.nomore("map2_", 4, ...)
    return run("map2_", self, { a, b }, fn)
  end
end
