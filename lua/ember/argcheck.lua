-- Argument helpers shared by the functions written in Lua on top of engine
-- ops (lua/ember/tools.lua, nn/activations.lua, nn/extra_layers.lua,
-- nn/transpose_upsample.lua): require("ember.argcheck")(T).
local ARGS = require("ember.args")

return function(T)
  local A = {}

  -- a table that is not a tensor: an options table (or a list)
  function A.is_opts(v) return type(v) == "table" and not T.is_tensor(v) end

  -- o (nil: {}) checked against the allowed keys (a set) by ember.args, so
  -- the messages are the ones every other entry point gives; errors at
  -- level + 1 from here (level as the caller counts it)
  local lists = setmetatable({}, { __mode = "k" })
  function A.check_opts(op, o, allowed, level)
    if o == nil then return {} end
    if not A.is_opts(o) then
      error(string.format("%s: expected an options table, got %s", op, type(o)), level + 1)
    end
    local list = lists[allowed]
    if not list then
      list = {}
      for k in pairs(allowed) do list[#list + 1] = k end
      table.sort(list)
      lists[allowed] = list
    end
    return ARGS.checkopts(op, o, list, level + 2)
  end

  function A.check_tensor(op, t, what, level)
    if not T.is_tensor(t) then
      error(string.format("%s: expected a tensor for %s, got %s", op, what, type(t)), level + 1)
    end
    return t
  end

  -- a 1-d argument given as a list: its one entry (a longer list is
  -- refused, as PyTorch's "a single integer value or a list of 1 value");
  -- anything else is returned as it is, for the caller's own check
  function A.single(op, v, what, level)
    if type(v) == "table" and not T.is_tensor(v) then
      if #v ~= 1 then
        error(string.format("%s: expected %s to be a single number or a list of 1 number, got a list of %d",
          op, what, #v), (level or 3) + 1)
      end
      return v[1]
    end
    return v
  end

  -- v as a list of n numbers: a number repeated, n of them, or a list of
  -- one repeated (the nn layers' kernel/stride/padding arguments); the
  -- error is raised at `level` (the op's caller, counted as for error())
  function A.tuple(op, v, n, what, level)
    if type(v) == "number" then
      local t = {}
      for i = 1, n do t[i] = v end
      return t
    end
    if type(v) == "table" and #v == n then return { (table.unpack or unpack)(v, 1, n) } end
    if type(v) == "table" and #v == 1 and type(v[1]) == "number" then return A.tuple(op, v[1], n, what) end
    local got = tostring(v)
    if type(v) == "table" and not T.is_tensor(v) then got = #v .. (#v == 1 and " value" or " values") end
    error(string.format("%s: expected %s to be a number or %d numbers, got %s", op, what, n, got),
      (level or 3) + 1)
  end

  -- {k = true} for the keys listed
  function A.set(list)
    local s = {}
    for _, k in ipairs(list) do s[k] = true end
    return s
  end

  function A.shape_of(t)
    local s = {}
    for i = 1, t.ndim do s[i] = t.shape[i] end
    return s
  end

  function A.fmt_shape(s) return "[" .. table.concat(s, ", ") .. "]" end

  -- torch 1.13's pool input check: a pool over n dims takes an (n+1)-d or
  -- (n+2)-d input whose dims are all non-zero but a batch (the first of an
  -- (n+2)-d input); from = 2 checks dims 2.. whatever the rank (the
  -- adaptive max pools')
  function A.pool_nonempty(op, x, n, level, from)
    local first = from or (x.ndim == n + 2 and 2 or 1)
    for d = first, x.ndim do
      if x.shape[d] == 0 then
        error(string.format("%s: expected a %d-d or %d-d (batch mode) input with %s, but got %s (dimension %d "
          .. "is empty)", op, n + 1, n + 2, first == 1 and "non-zero dimensions"
            or (from and "non-zero dimensions after the first" or "an optional 0 batch size and non-zero "
              .. "other dimensions"), A.fmt_shape(A.shape_of(x)), d), (level or 3) + 1)
      end
    end
  end

  -- named(op, f [, rule]): f with its errors naming op: an error raised
  -- inside by an engine op ("masked_fill_: ...") is re-raised as "op: ...",
  -- and every error is raised at the caller's position, as a C function's
  -- is. rule (optional): {keep = pattern} an inner name that stays
  -- ("linalg.inv: " under linalg.matrix_power), {strip = pattern} the inner
  -- name dropped (default "^[%w_]+: ").
  -- errors at the user's line (args.lua)
  A.user_level, A.raise = ARGS.user_level, ARGS.raise
  -- out=: res written into out by the engine's out rules (C._write_out:
  -- out's dtype exactly, an empty out resized, out returned), else res
  function A.write_out(op, res, out)
    if out ~= nil then return T._C._write_out(op, res, out) end
    return res
  end
  -- the same with the options table o (or nil) that may hold out
  function A.finish(op, res, o) return A.write_out(op, res, o and o.out) end
  -- what an in-place form composed as t:copy_(f(t, ...)) computes f from: a
  -- clone while autograd records (t or a tensor argument requires grad),
  -- so that the values f's nodes saved from t (and views such as z.real)
  -- are not the storage copy_ overwrites (PyTorch's in-place cumprod_,
  -- igamma_, renorm_ backward runs; it failed the version check)
  function A.inplace_source(t, ...)
    if not T.is_tensor(t) or not T.is_grad_enabled() then return t end
    if t.requires_grad then return t:clone() end
    for i = 1, select("#", ...) do
      local v = select(i, ...)
      if T.is_tensor(v) and v.requires_grad then return t:clone() end
    end
    return t
  end
  -- the dtype a name stands for ("float16", "ember.float16"), as wherever
  -- ember takes a dtype; nil for a name that is none
  function A.dtype_named(name)
    local ok, d = pcall(function() return T.empty(0, { dtype = name }).dtype end)
    return ok and d or nil
  end
  -- an error message without the "file:line: " a Lua error() put in front
  function A.unpos(e) return (tostring(e):gsub("^[^\n]-:%d+: ", "")) end
  local function rethrow(op, e, rule)
    if type(e) ~= "string" then error(e, 0) end
    local m = A.unpos(e)
    if m:sub(1, #op + 1) ~= op .. ":" then
      if not (rule and rule.keep and m:find(rule.keep)) then
        m = m:gsub(rule and rule.strip or "^[%w_]+: ", "", 1)
      end
      m = op .. ": " .. m
    end
    error(m, 3)
  end
  function A.named(op, f, rule)
    local function pass(ok, ...)
      if ok then return ... end
      rethrow(op, (...), rule)
    end
    return function(...) return pass(pcall(f, ...)) end
  end

  return A
end
