-- autograd, the rest of PyTorch's API in Lua: backward{inputs=},
-- T.inference_mode, custom Functions (T.autograd.Function), the functional
-- API (T.autograd.functional: jacobian, hessian, vjp, jvp, vhp, hvp) and
-- activation checkpointing (T.utils.checkpoint). Built on the engine's
-- T.autograd.grad and C._autograd_custom (docs/autograd.md).
return function(T, C)
  local A = T.autograd
  local M = C._methods
  local ARGS = require "ember.args"
  local fmt = string.format
  local unpack = table.unpack or unpack
  local function pack(...) return { n = select("#", ...), ... } end

  -- -- backward{inputs = {...}} -------------------------------------------------------
  -- Accumulates only into the listed tensors' .grad (leaves or not), as
  -- PyTorch's backward(inputs=): their gradients are taken with
  -- autograd.grad and added.
  function A._backward_inputs(op, tensors, grads, o)
    local inputs = o.inputs
    if T.is_tensor(inputs) then inputs = { inputs } end
    if type(inputs) ~= "table" or #inputs == 0 then
      error(op .. ": inputs must be a tensor or a non-empty list of tensors", 3)
    end
    for i, t in ipairs(inputs) do
      if not T.is_tensor(t) then error(fmt("%s: inputs[%d] is not a tensor", op, i), 3) end
      if not t.requires_grad then error(fmt("%s: inputs[%d] does not require grad", op, i), 3) end
    end
    local create = o.create_graph and true or false
    local retain = o.retain_graph
    if retain == nil then retain = create end
    local gs = A.grad(tensors, inputs, { grad_outputs = grads, retain_graph = retain, create_graph = create,
      allow_unused = true })
    for i, t in ipairs(inputs) do
      local g = gs[i]
      if g ~= nil then
        if not create then g = g:detach() end
        local old = t.grad
        t.grad = old == nil and g or (create and old + g or old:add_(g))
      end
    end
  end
  local real_backward = M.backward
  M.backward = function(t, g0, o, ...)
    local g, opts = g0, o
    if opts == nil and type(g) == "table" and not T.is_tensor(g) then opts = g; g = nil end
    if type(opts) == "table" and not T.is_tensor(opts) and opts.inputs ~= nil then
      ARGS.nomore("backward", 3, ...)
      local rest = {}
      for k, v in pairs(opts) do if k ~= "inputs" and k ~= "gradient" then rest[k] = v end end
      ARGS.checkopts("backward", rest, { "retain_graph", "create_graph" })
      rest.inputs = opts.inputs
      return A._backward_inputs("backward", { t }, (g or opts.gradient) and { g or opts.gradient } or nil, rest)
    end
    return real_backward(t, g0, o, ...)
  end

  -- -- inference_mode ------------------------------------------------------------
  -- T.inference_mode(fn, ...) / T.inference_mode(false, fn, ...): ember has no
  -- inference tensors; this is no_grad (the same results; PyTorch's
  -- inference tensors additionally refuse later use in autograd)
  function T.inference_mode(mode, fn, ...)
    if type(mode) == "function" then return T.no_grad(mode, fn, ...) end
    if type(mode) ~= "boolean" or type(fn) ~= "function" then
      error("inference_mode: expected a function, or a boolean and a function", 2)
    end
    if mode then return T.no_grad(fn, ...) end
    return fn(...)
  end
  A.inference_mode = T.inference_mode
  T.is_inference_mode_enabled = function(...)
    ARGS.nooptions("is_inference_mode_enabled", 1, 0, ...)
    return false
  end

  -- -- anomaly detection -------------------------------------------------------------
  -- T.autograd.set_detect_anomaly(b) (returns the previous mode),
  -- T.autograd.detect_anomaly(fn, ...) runs fn with it on, T.is_anomaly_enabled():
  -- a backward then fails naming the first node whose gradient holds NaN
  -- (PyTorch also prints the forward's traceback; ember names the node)
  function A.set_detect_anomaly(on, ...)
    ARGS.nomore("set_detect_anomaly", 1, ...)
    if type(on) ~= "boolean" then error("set_detect_anomaly: expected a boolean, got " .. type(on), 2) end
    return C._set_detect_anomaly(on)
  end
  function A.detect_anomaly(fn, ...)
    if type(fn) ~= "function" then error("detect_anomaly: expected a function, got " .. type(fn), 2) end
    return A._with_mode(C._set_detect_anomaly, true, fn, ...)
  end
  function T.is_anomaly_enabled(...)
    ARGS.nooptions("is_anomaly_enabled", 1, 0, ...)
    local on = C._set_detect_anomaly(false)
    C._set_detect_anomaly(on)
    return on
  end

  -- -- custom Functions --------------------------------------------------------------
  -- local Exp = T.autograd.Function:extend("Exp")
  -- function Exp.forward(ctx, x) local y = x:exp(); ctx:save_for_backward(y); return y end
  -- function Exp.backward(ctx, g) local y = ctx.saved_tensors[1]; return g * y end
  -- Exp.apply(x)
  -- forward runs under no_grad and returns one tensor; backward gets the
  -- output's gradient and returns one gradient per forward argument (nil
  -- for none; non-tensor arguments get none). ctx: save_for_backward(...),
  -- saved_tensors, needs_input_grad, mark_non_differentiable(t),
  -- set_materialize_grads(b), and any field the forward sets.
  local Function = {}
  Function.__index = Function
  A.Function = Function
  local Ctx = {}
  Ctx.__index = function(self, k)
    if k == "saved_tensors" then
      local s = rawget(self, "_saved")
      if s == nil then return {} end
      if rawget(self, "_freed") then
        error("saved_tensors: the saved tensors were freed by a backward (use retain_graph = true to "
          .. "backward twice)", 2)
      end
      return s
    end
    return Ctx[k]
  end
  function Ctx:save_for_backward(...)
    local s = pack(...)
    for i = 1, s.n do
      if s[i] ~= nil and not T.is_tensor(s[i]) then
        error(fmt("save_for_backward: argument %d is a %s, not a tensor (store other values on ctx)", i, type(s[i])), 2)
      end
    end
    rawset(self, "_saved", s)
  end
  function Ctx:mark_non_differentiable(...)
    local m = rawget(self, "_nondiff") or {}
    for i = 1, select("#", ...) do m[select(i, ...)] = true end
    rawset(self, "_nondiff", m)
  end
  function Ctx:mark_dirty()
    error("mark_dirty: in-place custom Functions are not supported (return a new tensor)", 2)
  end
  function Ctx:set_materialize_grads(b) rawset(self, "materialize_grads", b and true or false) end

  function Function:extend(name)
    if type(name) ~= "string" then error("Function:extend: expected a class name", 2) end
    local cls = setmetatable({ __name = name }, { __index = Function })
    cls.apply = function(...) return Function._apply(cls, ...) end
    return cls
  end
  function Function._apply(cls, ...)
    local name = cls.__name
    if type(rawget(cls, "forward")) ~= "function" or type(rawget(cls, "backward")) ~= "function" then
      error(fmt("%s.apply: the class must define forward(ctx, ...) and backward(ctx, grad)", name), 2)
    end
    local args = pack(...)
    local grad_on = T.is_grad_enabled()
    local needs, any = {}, false
    for i = 1, args.n do
      local a = args[i]
      needs[i] = grad_on and T.is_tensor(a) and a.requires_grad or false
      any = any or needs[i]
    end
    local ctx = setmetatable({ needs_input_grad = needs, materialize_grads = true }, Ctx)
    local out = pack(T.no_grad(cls.forward, ctx, unpack(args, 1, args.n)))
    if out.n == 0 then error(fmt("%s.forward returned nothing", name), 2) end
    -- the differentiable outputs: floating or complex tensors not marked
    local nondiff = rawget(ctx, "_nondiff") or {}
    local diff = {}
    for k = 1, out.n do
      local y = out[k]
      if T.is_tensor(y) and not nondiff[y] and (y.dtype.is_floating_point or y:is_complex()) then
        diff[#diff + 1] = k
      end
    end
    if not any or #diff == 0 then return unpack(out, 1, out.n) end
    local first = out[diff[1]]
    for _, k in ipairs(diff) do
      if out[k].dtype ~= first.dtype or tostring(out[k].device) ~= tostring(first.device) then
        error(fmt("%s.forward: its differentiable outputs must share a dtype and device (output %d is %s, "
          .. "output %d %s); mark the others non-differentiable", name, diff[1], tostring(first.dtype), k,
          tostring(out[k].dtype)), 2)
      end
    end
    local inputs = { n = args.n }
    for i = 1, args.n do if needs[i] then inputs[i] = args[i] end end
    -- one node whose output packs every differentiable output (flattened,
    -- one after another); the outputs handed back are views of it, so the
    -- node's backward gets all their gradients at once
    local shapes, sizes, pieces = {}, {}, {}
    for j, k in ipairs(diff) do
      shapes[j], sizes[j] = out[k].shape:totable(), out[k]:numel()
      pieces[j] = out[k]:detach():reshape(-1)
    end
    -- one output alone is its own node's output (no packing)
    local single = out.n == 1
    local packed
    if single then
      packed = out[1]
      for i = 1, args.n do if rawequal(args[i], packed) then packed = packed:view_as(packed) break end end
      packed = packed:detach()
    else
      packed = #diff == 1 and pieces[1]:clone() or T.cat(pieces)
    end
    local function bw(g)
      local gs, at = {}, 1
      if single then gs[1] = g end
      for j = 1, single and 0 or #diff do
        gs[diff[j]] = g:narrow(1, at, sizes[j]):reshape(shapes[j])
        at = at + sizes[j]
      end
      for k = 1, out.n do
        if gs[k] == nil and ctx.materialize_grads and T.is_tensor(out[k]) then gs[k] = T.zeros_like(out[k]) end
      end
      local r = pack(cls.backward(ctx, unpack(gs, 1, out.n)))
      if r.n == 1 and type(r[1]) == "table" and not T.is_tensor(r[1]) then r = r[1] end
      local res = {}
      for i = 1, args.n do
        local gi = r[i]
        if gi ~= nil and not T.is_tensor(gi) then
          error(fmt("%s.backward: gradient %d is a %s, not a tensor or nil", name, i, type(gi)))
        end
        if needs[i] then res[i] = gi end
      end
      return res
    end
    local node = C._autograd_custom(name .. "Backward", inputs, packed, bw)
    if single then return node end
    local res, at = pack(unpack(out, 1, out.n)), 1
    for j, k in ipairs(diff) do
      res[k] = node:narrow(1, at, sizes[j]):reshape(shapes[j])
      at = at + sizes[j]
    end
    return unpack(res, 1, res.n)
  end

  -- -- T.autograd.functional -------------------------------------------------------------
  local F = {}
  A.functional = F
  local FOPTS = { "create_graph", "strict", "vectorize", "strategy", "outer_jacobian_strategy" }
  -- inputs as a list, and whether it was one tensor
  local function as_list(op, x, what)
    if T.is_tensor(x) then return { x }, true end
    if type(x) ~= "table" or #x == 0 then
      error(fmt("%s: expected a tensor or a list of tensors for %s, got %s", op, what, type(x)), 3)
    end
    for i = 1, #x do
      if not T.is_tensor(x[i]) then error(fmt("%s: %s[%d] is not a tensor", op, what, i), 3) end
    end
    return x, false
  end
  local function opts_of(op, o)
    o = ARGS.checkopts(op, o, FOPTS)
    if o.vectorize then error(op .. ": vectorize = true is not supported (rows are taken one by one)", 3) end
    if o.strategy ~= nil and o.strategy ~= "reverse-mode" then
      error(op .. ": only strategy = 'reverse-mode' is supported", 3)
    end
    return o
  end
  -- fresh leaves that require grad, and the function's outputs as a list
  local function run(op, func, inputs)
    local xs = {}
    for i, x in ipairs(inputs) do xs[i] = x:detach():requires_grad_(true) end
    local out = T.enable_grad(func, unpack(xs))
    local outs, single = as_list(op, out, "the function's outputs")
    return xs, outs, single
  end
  local function grads(op, outs, xs, gos, create, strict)
    -- outputs that do not depend on the inputs give no gradient
    local o2, g2 = {}, gos and {} or nil
    for i, y in ipairs(outs) do
      if y.requires_grad then
        o2[#o2 + 1] = y
        if gos then g2[#o2] = gos[i] end
      end
    end
    local gs = #o2 > 0 and A.grad(o2, xs, { grad_outputs = g2, create_graph = create, retain_graph = true,
      allow_unused = true }) or {}
    for i, x in ipairs(xs) do
      if gs[i] == nil then
        if strict then
          error(fmt("%s: the output of the function is independent of input %d (strict = true)", op, i), 3)
        end
        gs[i] = T.zeros_like(x)
      end
    end
    return gs
  end
  local function shaped(list, single) if single then return list[1] end return list end
  local function finish(t, create) if create then return t end return t:detach() end
  -- (v, o) where v may be left out: an options table in v's place is o
  local function v_opts(v, o)
    if type(v) == "table" and not T.is_tensor(v) and #v == 0 and next(v) ~= nil then return nil, v end
    return v, o
  end
  -- v as a list; without v every tensor of `over` must be one element
  local function v_list(op, v, over, what)
    if v == nil then
      for _, t in ipairs(over) do
        if t:numel() ~= 1 then error(fmt("%s: v is required when %s is not a single element", op, what), 3) end
      end
      return nil
    end
    return T.is_tensor(v) and { v } or v
  end

  -- vjp(func, inputs, v, {create_graph, strict}) -> outputs, v^T J
  function F.vjp(func, inputs, v, o)
    v, o = v_opts(v, o)
    o = opts_of("vjp", o)
    local ins, one_in = as_list("vjp", inputs, "inputs")
    local xs, outs, one_out = run("vjp", func, ins)
    local vs = v_list("vjp", v, outs, "the function's output")
    local gs = grads("vjp", outs, xs, vs, o.create_graph, o.strict)
    local ro = {}
    for i, y in ipairs(outs) do ro[i] = finish(y, o.create_graph) end
    for i, g in ipairs(gs) do gs[i] = finish(g, o.create_graph) end
    return shaped(ro, one_out), shaped(gs, one_in)
  end

  -- jvp(func, inputs, v, {create_graph, strict}) -> outputs, J v (the
  -- double-backward trick: J v = d/du (u^T J) . v)
  function F.jvp(func, inputs, v, o)
    v, o = v_opts(v, o)
    o = opts_of("jvp", o)
    local ins, one_in = as_list("jvp", inputs, "inputs")
    local vs = v_list("jvp", v, ins, "the input")
    local xs, outs, one_out = run("jvp", func, ins)
    local us = {}
    for i, y in ipairs(outs) do us[i] = T.zeros_like(y):requires_grad_(true) end
    local gs = A.grad(outs, xs, { grad_outputs = us, create_graph = true, retain_graph = true, allow_unused = true })
    local gl, vl = {}, {}
    for i, g in ipairs(gs) do
      if g ~= nil then
        gl[#gl + 1] = g
        vl[#vl + 1] = vs and vs[i] or T.ones_like(xs[i])
      elseif o.strict then
        error(fmt("jvp: the output of the function is independent of input %d (strict = true)", i), 2)
      end
    end
    local jv
    if #gl == 0 then
      jv = {}
    else
      jv = A.grad(gl, us, { grad_outputs = vl, create_graph = o.create_graph, retain_graph = true, allow_unused = true })
    end
    local res = {}
    for i, y in ipairs(outs) do res[i] = finish(jv[i] or T.zeros_like(y), o.create_graph) end
    local ro = {}
    for i, y in ipairs(outs) do ro[i] = finish(y, o.create_graph) end
    return shaped(ro, one_out), shaped(res, one_out)
  end

  -- jacobian(func, inputs, {create_graph, strict}): J[i][j] has shape
  -- outputs[i].shape .. inputs[j].shape (one tensor when both are single)
  function F.jacobian(func, inputs, o)
    o = opts_of("jacobian", o)
    local ins, one_in = as_list("jacobian", inputs, "inputs")
    local xs, outs, one_out = run("jacobian", func, ins)
    local J = {}
    for i, y in ipairs(outs) do
      local flat = y:reshape(-1)
      local rows = {}
      for j = 1, #xs do rows[j] = {} end
      for k = 1, flat:numel() do
        local gs = grads("jacobian", { flat[k] }, xs, nil, o.create_graph, o.strict)
        for j = 1, #xs do rows[j][k] = gs[j] end
      end
      J[i] = {}
      for j, x in ipairs(xs) do
        local shape = y.shape:totable()
        for _, d in ipairs(x.shape:totable()) do shape[#shape + 1] = d end
        local m = flat:numel() > 0 and T.stack(rows[j]) or T.zeros(0, x:numel(), { dtype = x.dtype })
        J[i][j] = finish(m:reshape(shape), o.create_graph)
      end
      J[i] = shaped(J[i], one_in)
    end
    return shaped(J, one_out)
  end

  -- hessian(func, inputs, {create_graph, strict}): func returns one element
  function F.hessian(func, inputs, o)
    o = opts_of("hessian", o)
    local ins, one_in = as_list("hessian", inputs, "inputs")
    local function gradf(...)
      local xs = pack(...)
      local y = func(...)
      if not T.is_tensor(y) or y:numel() ~= 1 then
        error("hessian: the function must return a tensor with a single element", 0)
      end
      local gs = A.grad(y, { unpack(xs, 1, xs.n) }, { create_graph = true, allow_unused = true })
      for i = 1, xs.n do if gs[i] == nil then gs[i] = T.zeros_like(xs[i]) end end
      if one_in then return gs[1] end
      return gs
    end
    return F.jacobian(gradf, one_in and ins[1] or ins, { create_graph = o.create_graph, strict = o.strict })
  end

  -- vhp / hvp(func, inputs, v, {create_graph, strict}) -> output, v^T H / H v
  local function hv(op, func, inputs, v, o)
    v, o = v_opts(v, o)
    o = opts_of(op, o)
    local ins, one_in = as_list(op, inputs, "inputs")
    local vs = v_list(op, v, ins, "the input")
    local xs, outs = run(op, func, ins)
    if #outs ~= 1 or outs[1]:numel() ~= 1 then
      error(op .. ": the function must return a tensor with a single element", 3)
    end
    local gs = grads(op, outs, xs, nil, true, o.strict)
    local dot
    for i, g in ipairs(gs) do
      local term = (g * (vs and vs[i] or T.ones_like(g))):sum()
      dot = dot and dot + term or term
    end
    local res
    if dot.requires_grad then
      res = grads(op, { dot }, xs, nil, o.create_graph, o.strict)
    else
      res = {}
      for i, x in ipairs(xs) do res[i] = T.zeros_like(x) end
    end
    for i, r in ipairs(res) do res[i] = finish(r, o.create_graph) end
    return finish(outs[1], o.create_graph), shaped(res, one_in)
  end
  function F.vhp(func, inputs, v, o) return hv("vhp", func, inputs, v, o) end
  function F.hvp(func, inputs, v, o) return hv("hvp", func, inputs, v, o) end

  -- -- checkpointing -------------------------------------------------------------------
  -- T.utils.checkpoint(fn, ...[, {preserve_rng_state = true, use_reentrant}]):
  -- runs fn(...) without keeping its graph and runs it again in the
  -- backward (with the random state it had) to take the gradients; fn
  -- returns one tensor. T.utils.checkpoint_sequential(modules, segments, x).
  T.utils = T.utils or {}
  local CK = { preserve_rng_state = true, use_reentrant = true, determinism_check = true, debug = true }
  local function ck_opts(args)
    local last = args[args.n]
    if args.n >= 1 and type(last) == "table" and not T.is_tensor(last) and getmetatable(last) == nil then
      local only = next(last) ~= nil
      for k in pairs(last) do if not CK[k] then only = false end end
      if only then
        args.n = args.n - 1
        return last
      end
    end
    return {}
  end
  function T.utils.checkpoint(fn, ...)
    if type(fn) ~= "function" and not (type(fn) == "table" and getmetatable(fn) and getmetatable(fn).__call) then
      error("checkpoint: expected a function (or a module) for argument #1, got " .. type(fn), 2)
    end
    local args = pack(...)
    local o = ck_opts(args)
    local preserve = o.preserve_rng_state ~= false
    local needs, any = {}, false
    for i = 1, args.n do
      needs[i] = T.is_tensor(args[i]) and args[i].requires_grad
      any = any or needs[i]
    end
    if not T.is_grad_enabled() or not any then return fn(unpack(args, 1, args.n)) end
    local rng = preserve and T.get_rng_state() or nil
    local y = T.no_grad(fn, unpack(args, 1, args.n))
    if not T.is_tensor(y) then
      error("checkpoint: the function must return one tensor", 2)
    end
    local inputs = { n = args.n }
    for i = 1, args.n do if needs[i] then inputs[i] = args[i] end end
    local function bw(g)
      local again = {}
      for i = 1, args.n do
        again[i] = needs[i] and args[i]:detach():requires_grad_(true) or args[i]
      end
      local here = preserve and T.get_rng_state() or nil
      if rng then T.set_rng_state(rng) end
      local ok, out = pcall(T.enable_grad, fn, unpack(again, 1, args.n))
      if here then T.set_rng_state(here) end
      if not ok then error(out, 0) end
      -- a backward inside the backward (PyTorch's reentrant checkpoint):
      -- the leaves fn reads besides its arguments (a module's weights)
      -- accumulate their gradients too; the arguments' come back as the
      -- detached copies' .grad
      if not T.is_tensor(out) or not out.requires_grad then return {} end
      out:backward(g)
      local res = {}
      for i = 1, args.n do if needs[i] then res[i] = again[i].grad end end
      return res
    end
    return C._autograd_custom("CheckpointFunctionBackward", inputs, y:detach(), bw)
  end
  function T.utils.checkpoint_sequential(functions, segments, x, o)
    if type(functions) ~= "table" then error("checkpoint_sequential: expected a list of modules or a Sequential", 2) end
    local fs = {}
    for i = 1, #functions do fs[i] = functions[i] end
    if type(segments) ~= "number" or segments < 1 or segments % 1 ~= 0 then
      error("checkpoint_sequential: segments must be a positive integer", 2)
    end
    local n = #fs
    local size = math.floor(n / segments)
    if size < 1 then size = 1 end
    local i = 1
    while i <= n do
      local last = math.min(n, i + size - 1)
      if i + size > n or segments == 1 then last = n end
      local a, b = i, last
      local function seg(inp)
        for k = a, b do inp = fs[k](inp) end
        return inp
      end
      if b == n then
        x = seg(x)  -- the last segment runs normally, as PyTorch's
      else
        x = T.utils.checkpoint(seg, x, o)
      end
      i = b + 1
    end
    return x
  end
end
