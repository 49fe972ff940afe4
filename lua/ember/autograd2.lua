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
  -- T.inference_mode(fn, ...) / T.inference_mode(b, fn, ...): ember has no
  -- inference tensors; inference_mode(true) turns grad mode off and nothing
  -- records inside it, not even under an enable_grad (C's inference mode,
  -- as PyTorch's InferenceMode: is_grad_enabled() is then true and results
  -- still do not require grad); inference_mode(false) turns grad mode on
  -- (PyTorch's InferenceMode(false) does) and lifts an outer one.
  -- T.is_inference_mode_enabled() says which scope is innermost
  local inference = false
  local function set_inference(on)
    local prev = inference
    inference = on
    C._set_inference_mode(on)
    return prev
  end
  function T.inference_mode(mode, fn, ...)
    if type(mode) == "function" then return T.inference_mode(true, mode, fn, ...) end
    if type(mode) ~= "boolean" or type(fn) ~= "function" then
      error("inference_mode: expected a function, or a boolean and a function", 2)
    end
    local args = pack(...)
    return A._with_mode(set_inference, mode, function()
      return A._with_mode(C.set_grad_enabled, not mode, fn, unpack(args, 1, args.n))
    end)
  end
  A.inference_mode = T.inference_mode
  T.is_inference_mode_enabled = function(...)
    ARGS.nooptions("is_inference_mode_enabled", 1, 0, ...)
    return inference
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
  -- forward runs under no_grad; the node saves what save_for_backward names
  -- (an output as the node's own, for create_graph). backward gets the
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
      -- in the backward: the engine's unpacked copies (checked for in-place
      -- changes since the forward; under create_graph with their history)
      local s = rawget(self, "_unpacked") or rawget(self, "_saved")
      if s == nil then return {} end
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
    local saved, smap = nil, {}
    local function bw(g, sv)
      local gs, at = {}, 1
      if single then gs[1] = g end
      for j = 1, single and 0 or #diff do
        gs[diff[j]] = g:narrow(1, at, sizes[j]):reshape(shapes[j])
        at = at + sizes[j]
      end
      for k = 1, out.n do
        if gs[k] == nil and ctx.materialize_grads and T.is_tensor(out[k]) then gs[k] = T.zeros_like(out[k]) end
      end
      -- the saved tensors as the engine unpacked them
      local un
      if saved then
        un = { n = saved.n }
        for j = 1, saved.n do
          local m = smap[j]
          if m == nil then un[j] = sv[j]
          elseif sv[m.slot] ~= nil then
            un[j] = sv[m.slot]:narrow(1, m.at, m.size):reshape(m.shape)
          end
        end
      end
      rawset(ctx, "_unpacked", un)
      local ok, r = pcall(function() return pack(cls.backward(ctx, unpack(gs, 1, out.n))) end)
      rawset(ctx, "_unpacked", nil)
      if not ok then error(r, 0) end
      if r.n == 1 and type(r[1]) == "table" and not T.is_tensor(r[1]) then r = r[1] end
      -- PyTorch's: extra gradients must all be nil
      local nr = r.n or #r
      for i = args.n + 1, nr do
        if r[i] ~= nil then
          error(fmt("%s.backward: function %sBackward returned an incorrect number of gradients (expected %d, "
            .. "got %d)", name, name, args.n, nr), 0)
        end
      end
      local res = {}
      for i = 1, args.n do
        local gi = r[i]
        if gi ~= nil and not T.is_tensor(gi) then
          error(fmt("%s.backward: gradient %d is a %s, not a tensor or nil", name, i, type(gi)), 0)
        end
        if gi ~= nil and not T.is_tensor(args[i]) then
          error(fmt("%s.backward: function %sBackward returned a gradient different than nil at position %d, "
            .. "but the corresponding forward input was not a tensor", name, name, i), 0)
        end
        if needs[i] then res[i] = gi end
      end
      return res
    end
    -- what the node saves: ctx:save_for_backward's tensors, an output as
    -- the node's output (packed: its piece, cut again in the backward), so
    -- that an in-place change of a saved tensor fails the backward and
    -- create_graph sees the output's history (PyTorch's SavedVariable)
    saved = rawget(ctx, "_saved")
    local svlist
    if saved then
      svlist = { n = saved.n }
      local at, where = 1, {}
      for j, k in ipairs(diff) do where[k] = { at = at, size = sizes[j], shape = shapes[j] }; at = at + sizes[j] end
      for j = 1, saved.n do
        local t = saved[j]
        local k
        for kk = 1, out.n do if t ~= nil and rawequal(out[kk], t) then k = kk break end end
        local isarg = false
        for i = 1, args.n do if rawequal(args[i], t) then isarg = true break end end
        if k ~= nil and where[k] and not isarg then
          svlist[j] = packed
          if not single then smap[j] = { slot = j, at = where[k].at, size = where[k].size, shape = where[k].shape } end
        else
          svlist[j] = t
        end
      end
    end
    local node = C._autograd_custom(name .. "Backward", inputs, packed, bw, svlist or { n = 0 })
    if single then return node end
    local res, at = pack(unpack(out, 1, out.n)), 1
    for j, k in ipairs(diff) do
      res[k] = node:narrow(1, at, sizes[j]):reshape(shapes[j])
      at = at + sizes[j]
    end
    return unpack(res, 1, res.n)
  end

  -- -- T.autograd.functional -------------------------------------------------------------
  -- PyTorch 1.13's torch/autograd/functional.py, step for step (its
  -- preprocessing, strict-mode checks and messages, with 1-based numbers).
  local F = {}
  A.functional = F
  local FOPTS = { "create_graph", "strict" }
  local JOPTS = { "create_graph", "strict", "vectorize", "strategy" }
  local HOPTS = { "create_graph", "strict", "vectorize", "outer_jacobian_strategy" }
  -- inputs as a list, and whether it was one tensor
  local function as_list(op, x, what, level)
    if T.is_tensor(x) then return { x }, true end
    if type(x) ~= "table" or #x == 0 then
      error(fmt("%s: expected a tensor or a list of tensors for %s, got %s", op, what, type(x)), level or 3)
    end
    for i = 1, #x do
      if not T.is_tensor(x[i]) then error(fmt("%s: %s[%d] is not a tensor", op, what, i), level or 3) end
    end
    return x, false
  end
  local function opts_of(op, o, names)
    return ARGS.checkopts(op, o, names or FOPTS)
  end
  -- jacobian's vectorize and strategy: PyTorch's checks; the values are the
  -- same either way (vectorize is PyTorch's vmap over the rows, forward
  -- mode its forward AD: ember takes the rows one by one, by reverse mode)
  local function check_strategy(op, strategy, o, level)
    strategy = strategy or "reverse-mode"
    if strategy ~= "reverse-mode" and strategy ~= "forward-mode" then
      error(fmt("%s: expected strategy to be either 'forward-mode' or 'reverse-mode', got %s", op,
        tostring(strategy)), level)
    end
    if strategy == "forward-mode" then
      if o.create_graph then
        error(op .. ": create_graph = true and strategy = 'forward-mode' are not supported together "
          .. "(PyTorch's NotImplementedError); set create_graph = false or strategy = 'reverse-mode'", level)
      end
      if o.strict then
        error(op .. ": strict = true and strategy = 'forward-mode' are not supported together; "
          .. "set strict = false or strategy = 'reverse-mode'", level)
      end
      if not o.vectorize then
        error(op .. ": strategy = 'forward-mode' is only implemented for vectorize = true "
          .. "(PyTorch's NotImplementedError)", level)
      end
    elseif o.vectorize and o.strict then
      error(op .. ": strict = true and vectorize = true are not supported together; "
        .. "set strict = false or vectorize = false", level)
    end
  end
  -- PyTorch's _grad_preprocess: with create_graph, an input that requires
  -- grad is used through a view of it (so the results stay differentiable
  -- with respect to the caller's tensors); any other becomes a fresh leaf
  -- (requiring grad when `need`)
  local function preprocess(xs, create, need)
    local r = {}
    for i, x in ipairs(xs) do
      if create and x.requires_grad then r[i] = x:view_as(x)
      else r[i] = x:detach():requires_grad_(need and true or false) end
    end
    return r
  end
  local function check_outputs(op, outs, strict, level)
    if not strict then return end
    for i, y in ipairs(outs) do
      if not y.requires_grad then
        error(fmt("%s: output %d of the function does not require grad: the outputs must be computed "
          .. "in a differentiable manner from the inputs in strict mode", op, i), level or 3)
      end
    end
  end
  -- v as a list checked against `over` (PyTorch's _validate_v); without v
  -- every tensor of `over` must be one element
  local function v_list(op, v, over, one, what, create)
    if v == nil then
      if #over ~= 1 or over[1]:numel() ~= 1 then
        error(fmt("%s: v is required when %s is not a single tensor with a single element", op, what), 3)
      end
      return nil
    end
    local vs = T.is_tensor(v) and { v } or v
    if type(vs) ~= "table" then error(fmt("%s: v must be a tensor or a list of tensors, got %s", op, type(v)), 3) end
    if #vs ~= #over then
      if one then error(fmt("%s: v should be a single tensor, got a list of %d", op, #vs), 3) end
      error(fmt("%s: v is a list of invalid length: should be %d but got %d", op, #over, #vs), 3)
    end
    for i, t in ipairs(vs) do
      if not T.is_tensor(t) then error(fmt("%s: v[%d] is not a tensor", op, i), 3) end
      local a, b = t.shape:totable(), over[i].shape:totable()
      if table.concat(a, ",") ~= table.concat(b, ",") then
        error(fmt("%s: %sv has invalid size: should be [%s] but got [%s]", op, one and "" or fmt("entry %d of ", i),
          table.concat(b, ", "), table.concat(a, ", ")), 3)
      end
    end
    return preprocess(vs, create, false)
  end
  -- PyTorch's _autograd_grad: outputs that do not require grad are left
  -- out; a list the length of xs, with nil holes (allow_unused)
  local function agrad(outs, xs, gos, create)
    local o2, g2 = {}, gos and {} or nil
    for i = 1, #outs do
      local y = outs[i]
      if y ~= nil and y.requires_grad then
        o2[#o2 + 1] = y
        if gos then g2[#o2] = gos[i] end
      end
    end
    if #o2 == 0 then return {} end
    return A.grad(o2, xs, { grad_outputs = g2, create_graph = create, retain_graph = true, allow_unused = true })
  end
  -- PyTorch's _fill_in_zeros: nil gradients become zeros shaped as refs[i]
  -- (or an error in strict mode)
  local ZMSG = {
    back = "the output of the function is independent of input %d",
    back_trick = "the gradient with respect to the input is independent of entry %d in the grad_outputs "
      .. "of the double backward trick",
    double_back = "the jacobian of the function is independent of input %d",
    double_back_trick = "the hessian of the function is independent of entry %d in the grad_jacobian "
      .. "of the double backward trick",
  }
  local function fill_zeros(op, gs, refs, strict, create, stage)
    local r = {}
    for i = 1, #refs do
      local g = gs[i]
      if g == nil then
        if strict then error(fmt("%s: " .. ZMSG[stage] .. " (strict = true)", op, i), 0) end
        g = T.zeros_like(refs[i])
      elseif strict and create and not g.requires_grad then
        error(fmt("%s: the %s of the function is independent of input %d (strict = true with create_graph = true)",
          op, stage:find("double", 1, true) and "hessian" or "jacobian", i), 0)
      end
      r[i] = g
    end
    return r
  end
  local function shaped(list, single) if single then return list[1] end return list end
  local function finish(list, create)
    if create then return list end
    local r = {}
    for i, t in ipairs(list) do r[i] = t:detach() end
    return r
  end
  -- (v, o) where v may be left out: an options table in v's place is o
  local function v_opts(v, o)
    if type(v) == "table" and not T.is_tensor(v) and #v == 0 and next(v) ~= nil then return nil, v end
    return v, o
  end
  local function call(op, func, xs)
    local out = T.enable_grad(func, unpack(xs))
    local outs, single = as_list(op, out, "the function's outputs", 0)
    return outs, single
  end

  -- vjp(func, inputs, v, {create_graph, strict}) -> outputs, v^T J
  function F.vjp(func, inputs, v, o)
    v, o = v_opts(v, o)
    o = opts_of("vjp", o)
    local create, strict = o.create_graph and true or false, o.strict
    local ins, one_in = as_list("vjp", inputs, "inputs")
    local xs = preprocess(ins, create, true)
    local outs, one_out = call("vjp", func, xs)
    check_outputs("vjp", outs, strict)
    local vs = v_list("vjp", v, outs, one_out, "the function's output", create)
    local gs = T.set_grad_enabled(create or T.is_grad_enabled(), function()
      return fill_zeros("vjp", agrad(outs, xs, vs, create), xs, strict, create, "back")
    end)
    return shaped(finish(outs, create), one_out), shaped(finish(gs, create), one_in)
  end

  -- jvp(func, inputs, v, {create_graph, strict}) -> outputs, J v (the
  -- double-backward trick: J v = d/du (u^T J) . v)
  function F.jvp(func, inputs, v, o)
    v, o = v_opts(v, o)
    o = opts_of("jvp", o)
    local create, strict = o.create_graph and true or false, o.strict
    local ins, one_in = as_list("jvp", inputs, "inputs")
    local xs = preprocess(ins, create, true)
    local vs = v_list("jvp", v, xs, one_in, "the input", create)
    local outs, one_out = call("jvp", func, xs)
    check_outputs("jvp", outs, strict)
    local us = {}
    for i, y in ipairs(outs) do us[i] = T.zeros_like(y):requires_grad_(true) end
    local gi = T.enable_grad(agrad, outs, xs, us, true)
    if strict then
      for i = 1, #xs do
        if gi[i] == nil then
          error(fmt("jvp: the output of the function is independent of input %d (strict = true)", i), 2)
        elseif not gi[i].requires_grad then
          error(fmt("jvp: the gradient with respect to input %d is independent of the inputs of the function "
            .. "(strict = true)", i), 2)
        end
      end
    end
    -- the gradients that exist, each with its v (nil holes left out)
    local gl, vl = {}, {}
    for i = 1, #xs do
      if gi[i] ~= nil then
        gl[#gl + 1] = gi[i]
        vl[#gl] = vs and vs[i] or T.ones_like(xs[i])
      end
    end
    local jv = T.set_grad_enabled(create or T.is_grad_enabled(), function()
      return fill_zeros("jvp", #gl > 0 and agrad(gl, us, vl, create) or {}, outs, strict, create, "back_trick")
    end)
    return shaped(finish(outs, create), one_out), shaped(finish(jv, create), one_out)
  end

  -- jacobian(func, inputs, {create_graph, strict}): J[i][j] has shape
  -- outputs[i].shape .. inputs[j].shape (one tensor when both are single)
  local function jacobian(op, func, inputs, o)
    local create, strict = o.create_graph and true or false, o.strict
    local ins, one_in = as_list(op, inputs, "inputs")
    local xs = preprocess(ins, create, true)
    local outs, one_out = call(op, func, xs)
    check_outputs(op, outs, strict)
    local J = {}
    for i, y in ipairs(outs) do
      local flat = y:reshape(-1)
      local rows = {}
      for j = 1, #xs do rows[j] = {} end
      for k = 1, flat:numel() do
        local gs = T.enable_grad(agrad, { flat[k] }, xs, nil, create)
        for j = 1, #xs do
          local g = gs[j]
          if g ~= nil then
            if strict and create and not g.requires_grad then
              error(fmt("%s: the jacobian of the function is independent of input %d (strict = true with "
                .. "create_graph = true)", op, j), 0)
            end
          else
            if strict then
              error(fmt("%s: output %d of the function is independent of input %d (strict = true)", op, i, j), 0)
            end
            g = T.zeros_like(xs[j])
          end
          rows[j][k] = g
        end
      end
      J[i] = {}
      for j, x in ipairs(xs) do
        local shape = y.shape:totable()
        for _, d in ipairs(x.shape:totable()) do shape[#shape + 1] = d end
        local m = flat:numel() > 0 and T.stack(rows[j]) or T.zeros(0, x:numel(), { dtype = x.dtype })
        J[i][j] = m:reshape(shape)
        if not create then J[i][j] = J[i][j]:detach() end
      end
      J[i] = shaped(J[i], one_in)
    end
    return shaped(J, one_out)
  end
  function F.jacobian(func, inputs, o)
    o = opts_of("jacobian", o, JOPTS)
    check_strategy("jacobian", o.strategy, o, 2)
    return jacobian("jacobian", func, inputs, o)
  end

  -- a scalar function's single output (PyTorch's ensure_single_output_function)
  local function single_output(op, outs, one_out)
    if not one_out then error(op .. ": the function must return a single tensor", 0) end
    if outs[1]:numel() ~= 1 then error(op .. ": the function must return a tensor with a single element", 0) end
  end
  -- PyTorch's _check_requires_grad of the first gradients (nil holes:
  -- the output does not depend on that input)
  local function check_jac(op, gs, n, strict, what)
    if not strict then return end
    for i = 1, n do
      local g = gs[i]
      if g == nil then
        error(fmt("%s: the output of the function is independent of input %d (strict = true)", op, i), 0)
      elseif not g.requires_grad then
        if what == "hessian" then
          error(fmt("%s: the hessian of the function with respect to input %d is independent of the input "
            .. "(strict = true): the function must be thrice differentiable, with a hessian that depends on "
            .. "the inputs", op, i), 0)
        end
        error(fmt("%s: the jacobian of the function with respect to input %d is independent of the input "
          .. "(strict = true): the function must be twice differentiable, with a jacobian that depends on "
          .. "the inputs (a linear function is not)", op, i), 0)
      end
    end
  end

  -- hessian(func, inputs, {create_graph, strict}): func returns one element
  function F.hessian(func, inputs, o)
    o = opts_of("hessian", o, HOPTS)
    check_strategy("hessian", o.outer_jacobian_strategy, o, 2)
    local _, one_in = as_list("hessian", inputs, "inputs")
    local strict = o.strict
    local function gradf(...)
      local xs = pack(...)
      local list = { unpack(xs, 1, xs.n) }
      local outs, one_out = call("hessian", func, list)
      check_outputs("hessian", outs, strict, 0)
      single_output("hessian", outs, one_out)
      -- PyTorch's inner jacobian fills zeros before its strict check
      local gs = fill_zeros("hessian", agrad(outs, list, nil, true), list, false, true, "back")
      check_jac("hessian", gs, #list, strict, "jacobian")
      return shaped(gs, one_in)
    end
    return jacobian("hessian", gradf, inputs, { create_graph = o.create_graph, strict = strict })
  end

  -- vhp / hvp(func, inputs, v, {create_graph, strict}) -> output, v^T H / H v
  local function hv(op, func, inputs, v, o)
    v, o = v_opts(v, o)
    o = opts_of(op, o)
    local create, strict = o.create_graph and true or false, o.strict
    local ins, one_in = as_list(op, inputs, "inputs")
    local xs = preprocess(ins, create, true)
    local vs = v_list(op, v, xs, one_in, "the input", create)
    local outs, one_out = call(op, func, xs)
    check_outputs(op, outs, strict)
    if not one_out then error(op .. ": the function must return a single tensor", 2) end
    if outs[1]:numel() ~= 1 then error(op .. ": the function must return a tensor with a single element", 2) end
    local jac = T.enable_grad(agrad, outs, xs, nil, true)
    check_jac(op, jac, #xs, strict, "jacobian")
    jac = fill_zeros(op, jac, xs, false, true, "back")
    vs = vs or { T.ones_like(xs[1]) }
    local res
    if op == "vhp" then
      res = T.set_grad_enabled(create or T.is_grad_enabled(), function()
        return fill_zeros(op, agrad(jac, xs, vs, create), xs, strict, create, "double_back")
      end)
    else
      -- H v by the double-backward trick (H symmetric or not, as PyTorch)
      local gj = {}
      for i, x in ipairs(xs) do gj[i] = T.zeros_like(x):requires_grad_(true) end
      local db = T.enable_grad(agrad, jac, xs, gj, true)
      check_jac(op, jac, #xs, strict, "hessian")
      res = T.set_grad_enabled(create or T.is_grad_enabled(), function()
        return fill_zeros(op, agrad(db, gj, vs, create), xs, strict, create, "double_back_trick")
      end)
    end
    return shaped(finish(outs, create), true), shaped(finish(res, create), one_in)
  end
  function F.vhp(func, inputs, v, o) return hv("vhp", func, inputs, v, o) end
  function F.hvp(func, inputs, v, o) return hv("hvp", func, inputs, v, o) end
  -- Each runs wholly in grad mode, as torch's (`with torch.enable_grad()`
  -- around the body): under T.no_grad a Jacobian is not zeros, and with
  -- create_graph the results have their graph. Every error of the
  -- functional API comes at the user's line (as a C function's): its own
  -- checks run inside grad-mode scopes (pcall), where a level cannot reach
  -- the caller, and the engine's checks of what it passes (requires_grad_
  -- of an integer input) name ember's own line. An error the user's
  -- function raised with its own position passes as it is
  local function at_user(impl)
    return function(...)
      local r = pack(pcall(T.enable_grad, impl, ...))
      if r[1] then return unpack(r, 2, r.n) end
      require("ember.args").rethrow(r[2], true)
    end
  end
  for _, k in ipairs({ "vjp", "jvp", "jacobian", "hessian", "vhp", "hvp" }) do F[k] = at_user(F[k]) end

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
