-- autograd (issue 9): the parts written in Lua. The graph, the formulas and
-- the backward engine are in C (engine/src/autograd*.c); this file adds
-- grad-mode scopes, T.autograd.grad/backward and gradcheck.
return function(T, C)
  local A = {}
  T.autograd = A
  local unpack = table.unpack or unpack
  local function pack(...) return { n = select("#", ...), ... } end
  -- the largest integer key (table.maxn, which Lua 5.4 lacks): the inputs
  -- list of gradcheck may hold nils between tensors
  local function maxn(t)
    local n = 0
    for k in pairs(t) do if type(k) == "number" and k > n then n = k end end
    return n
  end

  -- Runs fn(...) with a mode set to `on` by set (which returns the old
  -- mode), restoring the old mode after, also when fn raises.
  function A._with_mode(set, on, fn, ...)
    local prev = set(on)
    local res = pack(pcall(fn, ...))
    set(prev)
    if not res[1] then error(res[2], 0) end
    return unpack(res, 2, res.n)
  end
  local function with_mode(on, fn, ...) return A._with_mode(C.set_grad_enabled, on, fn, ...) end

  function T.no_grad(fn, ...)
    if type(fn) ~= "function" then error("no_grad: expected a function, got " .. type(fn), 2) end
    return with_mode(false, fn, ...)
  end
  function T.enable_grad(fn, ...)
    if type(fn) ~= "function" then error("enable_grad: expected a function, got " .. type(fn), 2) end
    return with_mode(true, fn, ...)
  end
  -- T.set_grad_enabled(b) sets the mode (and returns the old one);
  -- T.set_grad_enabled(b, fn, ...) runs fn under it.
  function T.set_grad_enabled(on, fn, ...)
    if fn ~= nil then
      if type(fn) ~= "function" then error("set_grad_enabled: expected a function", 2) end
      return with_mode(on, fn, ...)
    end
    return C.set_grad_enabled(on)
  end
  A.no_grad, A.enable_grad, A.set_grad_enabled = T.no_grad, T.enable_grad, T.set_grad_enabled
  A.is_grad_enabled = T.is_grad_enabled

  local ARGS = require "ember.args"
  -- only_inputs: deprecated in PyTorch (1.13 takes it and ignores it);
  -- grad never accumulates into other leaves' .grad, which is
  -- only_inputs = true, so true is honoured and false refused
  local grad_opts = { "grad_outputs", "retain_graph", "create_graph", "allow_unused", "is_grads_batched",
    "only_inputs" }
  -- the engine's errors at the user's line (called through pcall, the C
  -- function's errors come without a position); an error that has one (a
  -- hook's) passes as it is
  local function engine_call(f, ...)
    local r = pack(pcall(f, ...))
    if r[1] then return unpack(r, 2, r.n) end
    ARGS.rethrow(r[2])
  end
  local backward_opts = { "retain_graph", "create_graph", "inputs" }
  local gradcheck_opts = { "eps", "atol", "rtol", "raise", "raise_exception" }

  -- T.autograd.grad(outputs, inputs, {grad_outputs=, retain_graph=,
  -- create_graph=, allow_unused=}) -> list of gradients (a single tensor
  -- when inputs is a single tensor; nil for unused inputs with allow_unused)
  -- grad_outputs may also come third, as PyTorch's positional argument
  -- (grad(y, x, g [, opts])): a tensor, or a list (an [1] entry, or `n`)
  function A.grad(outputs, inputs, opts, ...)
    if T.is_tensor(opts) or (type(opts) == "table" and (rawget(opts, 1) ~= nil or rawget(opts, "n") ~= nil)) then
      local go, more = opts, ...
      ARGS.nomore("grad", 4, select(2, ...))
      opts = {}
      for k, v in pairs(ARGS.checkopts("grad", more, grad_opts)) do opts[k] = v end
      if opts.grad_outputs ~= nil then
        error("grad: grad_outputs given twice (argument #3 and the options table)", 2)
      end
      opts.grad_outputs = go
    else
      ARGS.nomore("grad", 3, ...)
      opts = ARGS.checkopts("grad", opts, grad_opts)
    end
    if opts.only_inputs == false then
      error("grad: only_inputs = false is not supported (grad computes the inputs' gradients only; "
        .. "use backward to accumulate into every leaf's .grad)", 2)
    end
    if opts.is_grads_batched then return A._grad_batched(outputs, inputs, opts) end
    local create = opts.create_graph and true or false
    local retain = opts.retain_graph
    if retain == nil then retain = create end
    -- a tensor listed twice gets its gradient twice (PyTorch's): the
    -- engine is asked for each distinct one once
    if type(inputs) == "table" and not T.is_tensor(inputs) and #inputs == 0 then
      error("grad: requires non-empty inputs", 2)
    end
    local list, slot, uniq = inputs, {}, nil
    if not T.is_tensor(inputs) and type(inputs) == "table" then
      local seen = {}
      for i = 1, #inputs do
        local t = inputs[i]
        if T.is_tensor(t) and seen[t] then
          uniq = uniq or {}
        end
        if T.is_tensor(t) and not seen[t] then seen[t] = true end
      end
      if uniq then
        local pos = {}
        for i = 1, #inputs do
          local t = inputs[i]
          if pos[t] == nil then
            uniq[#uniq + 1] = t
            pos[t] = #uniq
          end
          slot[i] = pos[t]
        end
        list = uniq
      end
    end
    local res = engine_call(C._autograd_grad, outputs, opts.grad_outputs, list, retain, create,
      opts.allow_unused and true or false)
    for i = 1, #res do
      if res[i] == false then res[i] = nil end
    end
    if T.is_tensor(inputs) then return res[1] end
    if uniq then
      local out = {}
      for i = 1, #inputs do out[i] = res[slot[i]] end
      return out
    end
    return res
  end

  -- is_grads_batched: the first dim of every grad_outputs tensor is a batch;
  -- one backward per row (PyTorch uses vmap; the results are the same),
  -- the gradients stacked along a new first dim
  function A._grad_batched(outputs, inputs, opts)
    local gos = opts.grad_outputs
    if gos == nil then error("grad: is_grads_batched = true needs grad_outputs", 3) end
    local one = T.is_tensor(gos)
    local list = one and { gos } or gos
    local n = list.n or #list
    local B
    for i = 1, n do
      local g = list[i]
      if T.is_tensor(g) then
        if g:dim() == 0 then
          error(("grad: with is_grads_batched = true, grad_outputs[%d] needs a batch dim (it is 0-d)"):format(i), 3)
        end
        local b = g.shape[1]
        if B == nil then B = b
        elseif b ~= B then
          error(("grad: with is_grads_batched = true, every grad_outputs tensor needs the same batch size "
            .. "(%d and %d)"):format(B, b), 3)
        end
      end
    end
    if B == nil then error("grad: is_grads_batched = true needs a tensor in grad_outputs", 3) end
    local create = opts.create_graph and true or false
    local retain = opts.retain_graph
    if retain == nil then retain = create end
    local ins = T.is_tensor(inputs) and { inputs } or inputs
    local rows = {}
    for b = 1, B do
      local gb = { n = n }
      for i = 1, n do gb[i] = T.is_tensor(list[i]) and list[i][b] or list[i] end
      rows[b] = A.grad(outputs, ins, { grad_outputs = one and gb[1] or gb, create_graph = create,
        retain_graph = (b < B) or retain, allow_unused = opts.allow_unused })
    end
    local res = {}
    for j = 1, #ins do
      local col = {}
      for b = 1, B do col[b] = rows[b][j] end
      if B > 0 and col[1] ~= nil then res[j] = T.stack(col) end
    end
    if T.is_tensor(inputs) then return res[1] end
    return res
  end

  -- T.autograd.backward(tensors, grad_tensors, {retain_graph=, create_graph=})
  function A.backward(tensors, grads, opts, ...)
    ARGS.nomore("backward", 3, ...)
    -- a plain table is the options table unless it lists gradients (a
    -- tensor or nil at [1], or an empty list): {g1, g2} is grad_tensors
    if ARGS.is_opts(grads) and opts == nil and next(grads) ~= nil and type(next(grads)) == "string"
      and grads.n == nil then
      grads, opts = nil, grads
    end
    opts = ARGS.checkopts("backward", opts, backward_opts)
    if T.is_tensor(tensors) then tensors = { tensors } end
    if T.is_tensor(grads) then grads = { grads } end
    if opts.inputs ~= nil then
      return A._backward_inputs("backward", tensors, grads, opts)
    end
    -- one pass from every root (their gradients summed; each hook once)
    local create = opts.create_graph and true or false
    local retain = opts.retain_graph
    if retain == nil then retain = create end
    engine_call(C._backward_many, tensors, grads, retain and true or false, create)
  end

  -- T.autograd.gradcheck(fn, inputs, {eps=1e-6, atol=1e-5, rtol=1e-3,
  -- raise=true}): compares the backward's gradients of every output with
  -- central finite differences in float64. inputs: a tensor or a list (the
  -- float64 and complex128 tensors that require grad are checked; others
  -- pass through). Complex inputs and outputs are checked as their real
  -- views (view_as_real), as PyTorch's gradcheck perturbs the real and the
  -- imaginary part: for PyTorch's convention (grad = dL/dRe + i dL/dIm) the
  -- gradient for grad_output 1 (i) at a complex output element is the row
  -- of the real Jacobian of its real (imaginary) part. Element numbers in
  -- messages count real-view elements for complex tensors.
  -- Returns true, or raises (or returns false, msg with raise=false).
  function A.gradcheck(fn, inputs, opts, ...)
    ARGS.nomore("gradcheck", 3, ...)
    opts = ARGS.checkopts("gradcheck", opts, gradcheck_opts)
    local eps, atol, rtol = opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
    -- raise_exception is PyTorch's name
    local raise = opts.raise ~= false and opts.raise_exception ~= false
    if T.is_tensor(inputs) then inputs = { inputs } end
    local function fail(msg)
      if raise then error("gradcheck: " .. msg, 3) end
      return false, msg
    end
    local function outputs_of()
      local out = { fn(unpack(inputs, 1, maxn(inputs))) }
      local list = {}
      for _, o in ipairs(out) do
        if T.is_tensor(o) then list[#list + 1] = o
        elseif type(o) == "table" then
          for _, v in ipairs(o) do if T.is_tensor(v) then list[#list + 1] = v end end
        end
      end
      return list
    end
    -- the real numbers of t (its real view when complex), flat
    local function reals(t)
      if t:is_complex() then t = T.view_as_real(t) end
      return t:reshape(-1)
    end
    local checked = {}
    for i = 1, maxn(inputs) do
      local x = inputs[i]
      if T.is_tensor(x) and x.requires_grad then
        if x.dtype ~= T.float64 and x.dtype ~= T.complex128 then
          return fail(string.format("input %d is %s; gradcheck needs float64 or complex128 " ..
            "inputs", i, tostring(x.dtype)))
        end
        checked[#checked + 1] = i
      end
    end
    if #checked == 0 then return fail("no input requires grad") end
    -- analytical Jacobians of every output first (the graph saved the
    -- inputs; the numerical pass below writes into them)
    local outs = outputs_of()
    local analytic, sizes = {}, {}
    for oi, y in ipairs(outs) do
      local dt = y.dtype
      if y.requires_grad and (dt == T.float64 or dt == T.float32 or dt == T.complex128 or
          dt == T.complex64) then
        local cx = y:is_complex()
        local ny = y:numel() * (cx and 2 or 1)
        sizes[oi] = ny
        analytic[oi] = {}
        for _, i in ipairs(checked) do
          analytic[oi][i] = T.zeros(ny, reals(inputs[i]):numel(), { dtype = T.float64 })
        end
        for r = 1, ny do
          local go = T.zeros(ny, { dtype = cx and (dt == T.complex64 and T.float32 or T.float64)
            or dt })
          go[r] = 1
          if cx then go = T.view_as_complex(go:view(-1, 2)) end
          local ins = {}
          for k, i in ipairs(checked) do ins[k] = inputs[i] end
          local gs = A.grad({ y }, ins, { grad_outputs = { go:view(y.shape) },
            retain_graph = true, allow_unused = true })
          for k, i in ipairs(checked) do
            if gs[k] then analytic[oi][i][r] = reals(gs[k]):double() end
          end
        end
      end
    end
    -- numerical: perturb each real number of each input in place
    for _, i in ipairs(checked) do
      local x = inputs[i]
      local base = x:detach()
      base = base:is_complex() and T.view_as_real(base) or base
      -- element c in row-major order: through a flat view, or (a
      -- non-contiguous input: geqrf's column-major factors, a transpose)
      -- through its multi-index
      local ok, flat = pcall(base.view, base, -1)
      local elem
      if ok then
        elem = function(c) return c end
      else
        flat = base
        local dims = base.shape:totable()
        elem = function(c)
          local ix, r = {}, c - 1
          for d = #dims, 1, -1 do
            ix[d] = r % dims[d] + 1
            r = (r - (ix[d] - 1)) / dims[d]
          end
          return ix
        end
      end
      for c = 1, base:numel() do
        local at_c = elem(c)
        local orig = flat[at_c]
        if T.is_tensor(orig) then orig = orig:item() end
        -- fn runs in grad mode (it may differentiate inside); only the
        -- writes into the leaf are under no_grad
        local function at(v)
          T.no_grad(function() flat[at_c] = v end)
          local o = outputs_of()
          local res = {}
          for oi in pairs(analytic) do res[oi] = reals(o[oi]:detach()):double():clone() end
          return res
        end
        local plus, minus = at(orig + eps), at(orig - eps)
        T.no_grad(function() flat[at_c] = orig end)
        for oi in pairs(analytic) do
          local num = (plus[oi] - minus[oi]) / (2 * eps)
          for r = 1, sizes[oi] do
            local a = analytic[oi][i][r][c]:item()
            local nv = num[r]:item()
            if math.abs(a - nv) > atol + rtol * math.abs(nv) then
              return fail(string.format(
                "Jacobian mismatch for output %d with respect to input %d, at output " ..
                "element %d, input element %d: numerical %.10g, analytical %.10g",
                oi, i, r, c, nv, a))
            end
          end
        end
      end
    end
    return true
  end

  -- T.autograd.gradgradcheck(fn, inputs [, grad_outputs] [, {eps, atol, rtol,
  -- raise}]): PyTorch's: gradcheck of the function (inputs..., grad_outputs...)
  -- -> the gradients of fn's outputs with respect to the inputs that require
  -- grad (taken with create_graph), so the second derivatives are checked.
  -- Without grad_outputs, random ones in [-1, 1) (float64, requiring grad).
  function A.gradgradcheck(fn, inputs, grad_outputs, opts, ...)
    ARGS.nomore("gradgradcheck", 4, ...)
    if opts == nil and type(grad_outputs) == "table" and not T.is_tensor(grad_outputs) and #grad_outputs == 0
        and next(grad_outputs) ~= nil then
      grad_outputs, opts = nil, grad_outputs
    end
    opts = ARGS.checkopts("gradgradcheck", opts, gradcheck_opts)
    if T.is_tensor(inputs) then inputs = { inputs } end
    local nin = maxn(inputs)
    local function diff_outputs(...)
      local out, list = { fn(...) }, {}
      for _, o in ipairs(out) do
        if T.is_tensor(o) then
          if o.requires_grad then list[#list + 1] = o end
        elseif type(o) == "table" then
          for _, v in ipairs(o) do if T.is_tensor(v) and v.requires_grad then list[#list + 1] = v end end
        end
      end
      return list
    end
    local gos
    if grad_outputs == nil then
      gos = {}
      for k, o in ipairs(diff_outputs(unpack(inputs, 1, nin))) do
        local r = T.rand(o.shape, { dtype = o:is_complex() and T.complex128 or T.float64 }) * 2 - 1
        gos[k] = r:detach():requires_grad_(true)
      end
    else
      gos = T.is_tensor(grad_outputs) and { grad_outputs } or grad_outputs
    end
    local all = {}
    for i = 1, nin do all[i] = inputs[i] end
    for k = 1, #gos do all[nin + k] = gos[k] end
    local function f(...)
      local args = pack(...)
      local ins = {}
      for i = 1, nin do
        local x = args[i]
        if T.is_tensor(x) and x.requires_grad then ins[#ins + 1] = x end
      end
      local outs = diff_outputs(unpack(args, 1, nin))
      local go = {}
      for k = 1, #gos do go[k] = args[nin + k] end
      if #outs ~= #go then
        error(("gradgradcheck: %d grad_outputs for %d differentiable outputs"):format(#go, #outs), 0)
      end
      local gs = A.grad(outs, ins, { grad_outputs = go, create_graph = true, allow_unused = true })
      local res = {}
      for i = 1, #ins do if gs[i] ~= nil then res[#res + 1] = gs[i] end end
      return res
    end
    return A.gradcheck(f, all, { eps = opts.eps, atol = opts.atol, rtol = opts.rtol, raise = opts.raise,
      raise_exception = opts.raise_exception })
  end

  -- A hook method over C's one-function-per-tensor slot (get/set): the slot
  -- holds a dispatcher, made by dispatch(list), over this tensor's list of
  -- hooks; each call appends one and returns a handle whose remove() takes
  -- it off.
  local function hook_method(name, get, set, dispatch)
    local lists = setmetatable({}, { __mode = "k" })
    return function(t, fn, ...)
      require("ember.args").nomore(name, 2, ...)
      if type(fn) ~= "function" then
        error(name .. ": expected a function, got " .. type(fn), 2)
      end
      local d = get(t)
      local list = d and lists[d]
      if not list then
        list = { n = 0 }
        d = dispatch(list)
        lists[d] = list
        local ok, err = pcall(set, t, d)
        if not ok then error(err, 2) end
      end
      list.n = list.n + 1
      list[list.n] = fn
      local i = list.n
      return { remove = function() list[i] = false end }
    end
  end

  -- t:register_post_accumulate_grad_hook(fn) (PyTorch 2): fn(t) runs once per
  -- backward, after every gradient of that backward has been added to the
  -- leaf t's .grad (the rest of the backward still to run).
  T.Tensor_methods.register_post_accumulate_grad_hook = hook_method("register_post_accumulate_grad_hook",
    C._get_grad_hook, C._set_grad_hook, function(list)
      return function(x)
        for i = 1, list.n do
          local f = list[i]
          if f then f(x) end
        end
      end
    end)
  -- t:register_hook(fn): fn(grad) runs on the gradient flowing to t in each
  -- backward (for a leaf, the sum of that backward's gradients, before it
  -- joins .grad); a tensor it returns replaces the gradient for the hooks
  -- after it and for the rest of the backward.
  T.Tensor_methods.register_hook = hook_method("register_hook", C._get_tensor_hook, C._set_tensor_hook,
    function(list)
      return function(g)
        for i = 1, list.n do
          local f = list[i]
          if f then
            local r = f(g)
            if r ~= nil then
              if not T.is_tensor(r) then
                error("register_hook: a hook must return a tensor or nil, got " .. type(r), 0)
              end
              g = r
            end
          end
        end
        return g
      end
    end)
  -- T.autograd._queue_callback(fn): during a backward, fn() runs once that
  -- backward has finished (PyTorch's Variable._execution_engine.queue_callback)
  A._queue_callback = C._queue_callback
end
