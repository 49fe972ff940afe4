-- T.nn.Module: the base of every layer. Parameters, buffers and submodules
-- are registered by assignment (self.weight = T.nn.Parameter(t)) or with
-- register_parameter / register_buffer / add_module, and kept in
-- registration order, which state_dict and parameters() follow.
--
-- A class is made with Module:extend(name); calling the class builds an
-- instance and runs its init(...). Calling an instance runs forward(...).
return function(T, C)
  local Module = { __name = "Module" }

  local function is_module(v)
    return type(v) == "table" and rawget(v, "_modules") ~= nil
  end

  -- Parameters are plain tensors; the ones made by nn.Parameter or held by
  -- a module (register_parameter, to()) carry a mark, kept here (weak keys),
  -- so that a frozen one (requires_grad false) is still told apart from a
  -- plain tensor field when it is assigned: self.w = nn.Parameter(t, false)
  -- registers w as a parameter, self.t = T.ones(2) is a plain field.
  local marked = setmetatable({}, { __mode = "k" })
  local function is_param(v)
    return T.is_tensor(v) and (marked[v] ~= nil or v.requires_grad)
  end

  -- an array that is also an iterator: `for p in m:parameters() do` (the
  -- items are distinct, so the previous item tells where to go on)
  local function iterlist(t)
    local pos = {}
    for i, v in ipairs(t) do pos[v] = i end
    return setmetatable(t, {
      __call = function(self, _, prev)
        if prev == nil then return self[1] end
        return self[pos[prev] + 1]
      end,
    })
  end

  local function add_name(list, name)
    for _, n in ipairs(list) do if n == name then return end end
    list[#list + 1] = name
  end
  local function remove_name(list, name)
    for i, n in ipairs(list) do
      if n == name then table.remove(list, i) return end
    end
  end

  local function make_mt(cls)
    return {
      __index = function(self, k)
        local p = rawget(self, "_parameters")[k]
        if p ~= nil then return p end
        local b = rawget(self, "_buffers")[k]
        if b ~= nil then return b end
        local m = rawget(self, "_modules")[k]
        if m ~= nil then return m end
        if type(k) == "number" then
          -- a list container's slots are read raw; what reaches here is a
          -- negative index (list[-1]: the last) or one out of range (nil)
          if k < 0 and (cls._slot_modules or cls._slot_params) then
            local names = rawget(self, cls._slot_modules and "_module_names" or "_param_names")
            return rawget(self, #names + 1 + k)
          end
          local key = tostring(k)
          return rawget(self, "_modules")[key] or rawget(self, "_parameters")[key]
        end
        return cls[k]
      end,
      __newindex = function(self, k, v)
        -- list[i] = m where slot i is not there (a negative i, or out of range)
        if type(k) == "number" and cls._set_index then return cls._set_index(self, k, v) end
        local params, bufs, mods = rawget(self, "_parameters"), rawget(self, "_buffers"), rawget(self, "_modules")
        -- PyTorch's __setattr__: a parameter (nn.Parameter) or a module
        -- assigned to a buffer's or a submodule's name replaces it
        if params[k] == nil and (bufs[k] ~= nil or mods[k] ~= nil)
            and (marked[v] ~= nil or is_module(v) and mods[k] == nil) then
          if bufs[k] ~= nil then
            bufs[k] = nil
            remove_name(rawget(self, "_buffer_names"), k)
            rawget(self, "_nonpersistent")[k] = nil
          end
          if mods[k] ~= nil then self:add_module(k, nil) end
        end
        if params[k] ~= nil or (bufs[k] == nil and is_param(v)) then
          return self:register_parameter(k, v)
        elseif bufs[k] ~= nil then
          if v ~= nil and not T.is_tensor(v) then
            error(string.format("cannot assign a %s as buffer '%s' (a tensor or nil expected)", type(v), k), 2)
          end
          bufs[k] = v
        elseif mods[k] ~= nil or is_module(v) then
          return self:add_module(k, v)
        else
          rawset(self, k, v)
        end
      end,
      __call = function(self, ...)
        if rawget(self, "_module_hooks") == nil then return self:forward(...) end
        return Module._call_hooked(self, ...)
      end,
      __tostring = function(self) return self:_repr() end,
      -- list containers: a + b and a * n (PyTorch's __add__/__mul__)
      __add = function(a, b)
        local f = is_module(a) and a._list_add
        if not f then error("attempt to perform arithmetic (+) on a module that is not a Sequential or ModuleList", 2) end
        return f(a, b)
      end,
      __mul = function(a, b)
        if type(a) == "number" then a, b = b, a end
        local f = is_module(a) and a._list_repeat
        if not f then error("attempt to perform arithmetic (*) on a module that is not a Sequential", 2) end
        return f(a, b)
      end,
    }
  end


  local A = require "ember.args"
  local nomore, nooptions, check_opts = A.nomore, A.nooptions, A.checkopts

  function Module:extend(name, ...)
    if is_module(self) then
      error(string.format("Module.extend: extend(name) makes a subclass and is called on a class "
        .. "(nn.%s:extend(\"Name\")), not on an instance of %s", self.__name, self.__name), 2)
    end
    if type(name) ~= "string" then
      error("Module.extend: expected a class name (a string), got " .. type(name), 2)
    end
    nomore("Module.extend", 1, ...)
    local cls = setmetatable({ __name = name, _parent = self }, {
      __index = self,
      __call = function(c, ...) return c:new(...) end,
      __tostring = function(c) return "nn." .. c.__name end,
    })
    cls._mt = make_mt(cls)
    return cls
  end
  Module._mt = make_mt(Module)

  -- -- Hooks (PyTorch's register_forward_pre_hook, register_forward_hook,
  -- register_full_backward_hook) -----------------------------------------------
  -- Each list is kept in registration order under self._hooks (nil until a
  -- hook is registered: a module without hooks is called as before). A
  -- handle's remove() takes its hook off.
  local unpack = table.unpack or unpack
  local function hook_list(self, kind, fn, what)
    if type(fn) ~= "function" then error(string.format("%s: expected a function, got %s", what, type(fn)), 3) end
    local hooks = rawget(self, "_module_hooks")
    if not hooks then
      hooks = { pre = {}, fwd = {}, bwd = {}, n = 0 }
      rawset(self, "_module_hooks", hooks)
    end
    hooks.n = hooks.n + 1
    local id = hooks.n
    local list = hooks[kind]
    list[#list + 1] = { id = id, fn = fn }
    return {
      id = id,
      remove = function()
        for i, h in ipairs(list) do
          if h.id == id then table.remove(list, i) break end
        end
        if #hooks.pre == 0 and #hooks.fwd == 0 and #hooks.bwd == 0 then rawset(self, "_module_hooks", nil) end
      end,
    }
  end
  -- hook(module, args) -> nil or the new arguments (a list; any other value
  -- is the single new argument)
  function Module:register_forward_pre_hook(hook, ...)
    nomore("register_forward_pre_hook", 2, ...)
    return hook_list(self, "pre", hook, "register_forward_pre_hook")
  end
  -- hook(module, args, output) -> nil or the new output
  function Module:register_forward_hook(hook, ...)
    nomore("register_forward_hook", 2, ...)
    return hook_list(self, "fwd", hook, "register_forward_hook")
  end
  -- hook(module, grad_input, grad_output) -> nil or the new grad_input
  -- (tables: one entry per tensor argument / tensor output; an entry with
  -- no gradient is nil, and .n holds the count)
  function Module:register_full_backward_hook(hook, ...)
    nomore("register_full_backward_hook", 2, ...)
    return hook_list(self, "bwd", hook, "register_full_backward_hook")
  end

  local function is_list(v) return type(v) == "table" and getmetatable(v) == nil end

  -- full backward hooks, as PyTorch 1.13's BackwardHook: grad_input has one
  -- entry per argument and grad_output one per output (a list's entries),
  -- nil for a non-tensor. The tensor arguments that require grad pass
  -- through one node (BackwardHookFunctionBackward), whose backward gets
  -- all their gradients at once (zeros for one the forward did not use)
  -- and runs the hooks; a tensor argument that does not require grad gets
  -- zeros there, as PyTorch's materialized gradient. The outputs pass
  -- through an identity (view_as) whose tensor hook keeps their gradients.
  local function nrets(r) return r.n or #r end

  -- the node over the arguments that require grad (idx: their positions):
  -- one argument is its own identity (view_as, its tensor hook), several
  -- are packed into one tensor whose pieces (views) replace them; several
  -- devices fall back to one identity each, the hooks running when the last
  -- gradient arrives (replacing grad_input is then refused)
  local function wrap_inputs(args, idx, state)
    local first = args[idx[1]]
    local dt, same_dev = first.dtype, true
    for j = 2, #idx do
      local a = args[idx[j]]
      dt = T.promote_types(dt, a.dtype)
      if tostring(a.device) ~= tostring(first.device) then same_dev = false end
    end
    if #idx == 1 then
      local i = idx[1]
      local id = first:view_as(first)
      id:register_hook(function(g) return state.fire({ [i] = g })[i] end)
      args[i] = id
    elseif same_dev and #idx <= 16 then
      local ins, pieces, shapes, sizes = {}, {}, {}, {}
      for j, i in ipairs(idx) do
        local a = args[i]
        ins[j], shapes[j], sizes[j] = a, a.shape:totable(), a:numel()
        pieces[j] = a:detach():reshape(-1):to(dt)
      end
      local function split(g, k)
        local at = 1
        for j = 1, k - 1 do at = at + sizes[j] end
        return g:narrow(1, at, sizes[k]):reshape(shapes[k])
      end
      local node = C._autograd_custom("BackwardHookFunctionBackward", ins, T.cat(pieces), function(g)
        local gs = {}
        for j, i in ipairs(idx) do gs[i] = split(g, j):to(ins[j].dtype) end
        local r = state.fire(gs)
        local res = {}
        for j, i in ipairs(idx) do res[j] = r[i] end
        return res
      end)
      for j, i in ipairs(idx) do args[i] = split(node, j):to(ins[j].dtype) end
    else
      local got, gs = 0, {}
      for _, i in ipairs(idx) do
        local id = args[i]:view_as(args[i])
        id:register_hook(function(g)
          gs[i], got = g, got + 1
          if got < #idx then return nil end
          local r = state.fire(gs, true)
          gs, got = {}, 0
          return r[i]
        end)
        args[i] = id
      end
    end
  end
  local function wrap_outputs(out, state)
    local gout, queued = {}, false
    local function wrap(t, k)
      if not (T.is_tensor(t) and t.requires_grad) then return t end
      local id = t:view_as(t)
      C._mark_hook_view(id)
      id:register_hook(function(g)
        gout[k] = g
        if not state.inputs and not queued then
          -- no argument needs a gradient: the hooks run once this backward
          -- is done (every output's gradient known), grad_input all nil
          queued = true
          C._queue_callback(function()
            queued = false
            state.fire({})
          end)
        end
        return nil
      end)
      return id
    end
    state.gout = function()
      local r = { n = state.nout }
      for k = 1, state.nout do r[k] = gout[k] end
      gout = {}
      return r
    end
    if T.is_tensor(out) then
      state.nout = 1
      return wrap(out, 1)
    end
    if is_list(out) then
      local r = {}
      for k, v in pairs(out) do r[k] = v end
      state.nout = #out
      for i = 1, #out do r[i] = wrap(out[i], i) end
      return r
    end
    state.nout = 0
    return out
  end

  function Module._call_hooked(self, ...)
    local hooks = rawget(self, "_module_hooks")
    local args = { n = select("#", ...), ... }
    for _, h in ipairs({ unpack(hooks.pre) }) do
      local r = h.fn(self, args)
      if r ~= nil then
        if is_list(r) then args = { n = nrets(r), unpack(r, 1, nrets(r)) } else args = { n = 1, r } end
      end
    end
    local bwd = hooks.bwd
    local state
    if #bwd > 0 and T.is_grad_enabled() then
      local fns = {}
      for i, h in ipairs(bwd) do fns[i] = h.fn end
      local n, idx, zeros = args.n, {}, {}
      for i = 1, n do
        local a = args[i]
        if T.is_tensor(a) then
          if a.requires_grad then idx[#idx + 1] = i else zeros[i] = a end
        end
      end
      state = { inputs = #idx > 0 }
      -- gs: the gradients of the arguments that require grad, by position;
      -- returns grad_input as the hooks left it
      state.fire = function(gs, fallback)
        local gin = { n = n }
        if state.inputs then
          for i = 1, n do
            if gs[i] ~= nil then gin[i] = gs[i] elseif zeros[i] then gin[i] = T.zeros_like(zeros[i]) end
          end
        end
        local gout = state.gout and state.gout() or { n = 0 }
        for _, f in ipairs(fns) do
          local r = f(self, gin, gout)
          if r ~= nil then
            if not is_list(r) then
              error("register_full_backward_hook: a hook must return nil or a table of gradients, got "
                .. type(r), 0)
            end
            if nrets(r) ~= n then
              error(string.format("register_full_backward_hook: a hook returned %d gradients, but grad_input "
                .. "has %d entries (one per argument)", nrets(r), n), 0)
            end
            if fallback then
              error("register_full_backward_hook: replacing grad_input is not supported when the arguments "
                .. "that require grad are on several devices", 0)
            end
            gin = { n = n, unpack(r, 1, n) }
          end
        end
        return gin
      end
      if state.inputs then wrap_inputs(args, idx, state) end
    end
    local out = self:forward(unpack(args, 1, args.n))
    for _, h in ipairs({ unpack(hooks.fwd) }) do
      local r = h.fn(self, { n = args.n, unpack(args, 1, args.n) }, out)
      if r ~= nil then out = r end
    end
    if state then out = wrap_outputs(out, state) end
    return out
  end

  -- A list container (Sequential, ModuleList: _slot_modules; ParameterList:
  -- _slot_params) keeps its entries in the array slots of the instance, so
  -- that ipairs(list), #list and list[i] are plain table reads; its
  -- _modules / _parameters store is a view of those slots under the names
  -- "1", "2", ... . An assignment list[i] = m to an existing slot is a raw
  -- write that the view sees at once (state_dict, parameters(), to()).
  local function slot_store(owner, what)
    local function index_of(k)
      if type(k) == "string" and k:match("^[1-9]%d*$") then return tonumber(k) end
    end
    local named = {} -- entries under other names (seq.extra = m)
    return setmetatable({}, {
      __index = function(_, k)
        local i = index_of(k)
        if i == nil then return named[k] end
        local v = rawget(owner, i)
        if v ~= nil and (what == "module" and not is_module(v) or what == "parameter" and not T.is_tensor(v)) then
          error(string.format("%s: entry %d is a %s, not a %s", owner.__name, i, type(v),
            what == "module" and "Module" or "tensor"), 0)
        end
        return v
      end,
      __newindex = function(_, k, v)
        local i = index_of(k)
        if i == nil then named[k] = v else rawset(owner, i, v) end
      end,
    })
  end

  function Module:new(...)
    local o = setmetatable({
      _parameters = {}, _param_names = {}, _buffers = {}, _buffer_names = {},
      _nonpersistent = {}, _modules = {}, _module_names = {}, training = true,
    }, self._mt)
    if self._slot_modules then rawset(o, "_modules", slot_store(o, "module")) end
    if self._slot_params then rawset(o, "_parameters", slot_store(o, "parameter")) end
    o:init(...)
    return o
  end
  function Module:init() end
  function Module:forward()
    error("nn." .. self.__name .. ": forward is not implemented", 2)
  end

  -- PyTorch's checks of a name given to register_parameter / register_buffer
  -- / add_module: a non-empty string without ".", and not already another
  -- kind of attribute (a buffer registered as a parameter, a plain field, a
  -- method: PyTorch's "attribute 'x' already exists")
  local function check_name(self, op, what, name, own)
    if type(name) ~= "string" then
      error(string.format("%s: %s name should be a string, got %s", op, what, type(name)), 3)
    end
    if name == "" then error(string.format("%s: %s name can't be empty string \"\"", op, what), 3) end
    if name:find(".", 1, true) then
      error(string.format("%s: %s name can't contain \".\", got: %s", op, what, name), 3)
    end
    if rawget(self, own)[name] == nil then
      local taken = rawget(self, name) ~= nil
      for _, store in ipairs { "_parameters", "_buffers", "_modules" } do
        if store ~= own and rawget(self, store)[name] ~= nil then taken = true end
      end
      if taken or getmetatable(self).__index(self, name) ~= nil then
        error(string.format("%s: attribute '%s' already exists", op, name), 3)
      end
    end
  end

  function Module:register_parameter(name, t, ...)
    nomore("register_parameter", 3, ...)
    check_name(self, "register_parameter", "parameter", name, "_parameters")
    if t ~= nil and not T.is_tensor(t) then
      error(string.format("register_parameter: %s must be a tensor or nil", name), 2)
    end
    -- a tensor marked as a parameter (nn.Parameter(t, false), a frozen
    -- parameter of a module) keeps its requires_grad; a plain tensor is made
    -- one, as nn.Parameter(t) would
    if t ~= nil then
      if marked[t] == nil and not t.requires_grad then t:requires_grad_(true) end
      marked[t] = true
    end
    self._parameters[name] = t
    if t == nil then remove_name(self._param_names, name) else add_name(self._param_names, name) end
  end
  -- persistent: a boolean, or {persistent = b} (PyTorch's keyword)
  function Module:register_buffer(name, t, persistent, ...)
    if type(persistent) == "table" and getmetatable(persistent) == nil then
      nomore("register_buffer", 4, ...)
      persistent = check_opts("register_buffer", persistent, { "persistent" }).persistent
    end
    nooptions("register_buffer", 4, 4, persistent, ...)
    if persistent ~= nil and type(persistent) ~= "boolean" then
      error("register_buffer: persistent must be a boolean, got " .. type(persistent), 2)
    end
    check_name(self, "register_buffer", "buffer", name, "_buffers")
    if t ~= nil and not T.is_tensor(t) then
      error(string.format("register_buffer: cannot assign a %s to buffer '%s' (a tensor or nil required)",
        type(t), name), 2)
    end
    self._buffers[name] = t
    add_name(self._buffer_names, name)
    self._nonpersistent[name] = persistent == false or nil
  end
  -- add_module and PyTorch's alias register_module: one body, whose errors
  -- name the one called
  local function add_module_named(op)
    return function(self, name, m, ...)
      nomore(op, 3, ...)
      check_name(self, op, "module", name, "_modules")
      if m ~= nil and not is_module(m) then
        error(string.format("%s: %s is not a Module", op, tostring(name)), 2)
      end
      self._modules[name] = m
      if m == nil then remove_name(self._module_names, name) else add_name(self._module_names, name) end
    end
  end
  Module.add_module = add_module_named("add_module")
  Module.register_module = add_module_named("register_module")

  -- -- traversal ---------------------------------------------------------------
  -- PyTorch numbers the children of a Sequential or ModuleList from 0; ember
  -- from 1 (m[1] is the first child). With torch_names, walk names them as
  -- PyTorch does (classes with _torch_zero_based: "1" -> "0").
  local function torch_name(parent, n)
    if parent._torch_zero_based and type(n) == "string" and n:match("^[1-9]%d*$") then
      return tostring(tonumber(n) - 1)
    end
    return n
  end

  -- every module under self, depth first in registration order. With memo
  -- (a table), a module reached twice (the same layer registered under two
  -- names) is visited once, as PyTorch's named_modules memo set does;
  -- state_dict and load_state_dict walk without it (PyTorch lists a shared
  -- layer's tensors under each of its names there).
  local function walk(self, prefix, fn, torch_names, memo)
    if memo then
      if memo[self] then return end
      memo[self] = true
    end
    fn(prefix, self)
    for _, n in ipairs(self._module_names) do
      local m = self._modules[n]
      local name = torch_names and torch_name(self, n) or n
      if m then walk(m, prefix == "" and name or prefix .. "." .. name, fn, torch_names, memo) end
    end
  end
  -- the distinct children, in registration order (PyTorch's named_children)
  local function child_items(self)
    local items, seen = {}, {}
    for _, n in ipairs(self._module_names) do
      local m = self._modules[n]
      if m ~= nil and not seen[m] then
        seen[m] = true
        items[#items + 1] = { n, m }
      end
    end
    return items
  end

  local function collect(self, kind, recurse)
    local out, seen = {}, {}
    local function add(prefix, m)
      local names = rawget(m, "_" .. kind .. "_names")
      local store = rawget(m, kind == "param" and "_parameters" or "_buffers")
      for _, n in ipairs(names) do
        local t = store[n]
        if t ~= nil and not seen[t] then
          seen[t] = true
          out[#out + 1] = { prefix == "" and n or prefix .. "." .. n, t, m, n }
        end
      end
    end
    if recurse == false then add("", self) else walk(self, "", add, nil, {}) end
    return out
  end

  local function named_iter(items)
    local i = 0
    return function()
      i = i + 1
      local it = items[i]
      if it then return it[1], it[2] end
    end
  end

  -- named_parameters / named_buffers take recurse, or {prefix=, recurse=}
  -- (PyTorch's keywords): prefix goes before every name ("root.1.weight")
  local NAMED = { "prefix", "recurse" }
  local function named_opts(op, recurse, ...)
    if type(recurse) == "table" and getmetatable(recurse) == nil then
      nomore(op, 2, ...)
      local o = check_opts(op, recurse, NAMED, 3)
      if o.prefix ~= nil and type(o.prefix) ~= "string" then
        error(string.format("%s: option 'prefix' must be a string, got %s", op, type(o.prefix)), 3)
      end
      return o.recurse, o.prefix
    end
    nooptions(op, 2, 2, recurse, ...)
    return recurse, nil
  end
  local function prefixed(items, prefix)
    if prefix == nil or prefix == "" then return items end
    for _, it in ipairs(items) do it[1] = it[1] == "" and prefix or prefix .. "." .. it[1] end
    return items
  end

  function Module:parameters(recurse, ...)
    nooptions("parameters", 2, 2, recurse, ...)
    local out = {}
    for i, it in ipairs(collect(self, "param", recurse)) do out[i] = it[2] end
    return iterlist(out)
  end
  function Module:named_parameters(recurse, ...)
    local prefix
    recurse, prefix = named_opts("named_parameters", recurse, ...)
    return named_iter(prefixed(collect(self, "param", recurse), prefix)) end
  function Module:buffers(recurse, ...)
    nooptions("buffers", 2, 2, recurse, ...)
    local out = {}
    for i, it in ipairs(collect(self, "buffer", recurse)) do out[i] = it[2] end
    return iterlist(out)
  end
  function Module:named_buffers(recurse, ...)
    local prefix
    recurse, prefix = named_opts("named_buffers", recurse, ...)
    return named_iter(prefixed(collect(self, "buffer", recurse), prefix)) end
  function Module:children(...)
    nomore("children", 1, ...)
    local out = {}
    for i, it in ipairs(child_items(self)) do out[i] = it[2] end
    return iterlist(out)
  end
  function Module:named_children(...)
    nomore("named_children", 1, ...)
    return named_iter(child_items(self))
  end
  function Module:modules(...)
    nomore("modules", 1, ...)
    local out = {}
    walk(self, "", function(_, m) out[#out + 1] = m end, nil, {})
    return iterlist(out)
  end
  -- named_modules([{prefix=, remove_duplicate=true}]): remove_duplicate =
  -- false lists a module registered under several names under each
  local NMOD = { "prefix", "remove_duplicate" }
  function Module:named_modules(o, ...)
    nomore("named_modules", 2, ...)
    o = check_opts("named_modules", o, NMOD)
    if o.prefix ~= nil and type(o.prefix) ~= "string" then
      error("named_modules: option 'prefix' must be a string, got " .. type(o.prefix), 2)
    end
    if o.remove_duplicate ~= nil and type(o.remove_duplicate) ~= "boolean" then
      error("named_modules: option 'remove_duplicate' must be a boolean, got " .. type(o.remove_duplicate), 2)
    end
    local items = {}
    walk(self, o.prefix or "", function(p, m) items[#items + 1] = { p, m } end, nil,
      o.remove_duplicate ~= false and {} or nil)
    return named_iter(items)
  end

  -- PyTorch's get_submodule / get_parameter / get_buffer: a dotted path of
  -- names as named_modules gives them ("3.1": a Sequential's children
  -- 1-based); "" is the module itself
  function Module:get_submodule(target, ...)
    nomore("get_submodule", 2, ...)
    if type(target) ~= "string" then
      error("get_submodule: expected a string target, got " .. type(target), 2)
    end
    local mod = self
    if target == "" then return mod end
    for item in (target .. "."):gmatch("(.-)%.") do
      local v = rawget(mod, "_modules")[item]
      if v == nil then
        local ok, any = pcall(function() return mod[item] end)
        if not ok or any == nil then
          error(string.format("get_submodule: %s has no attribute `%s`", mod.__name, item), 2)
        end
        error(string.format("get_submodule: `%s` is not an nn.Module", item), 2)
      end
      mod = v
    end
    return mod
  end
  local function get_tensor(self, target, op, store, what)
    if type(target) ~= "string" then error(string.format("%s: expected a string target, got %s", op, type(target)), 3) end
    local path, name = target:match("^(.*)%.([^.]*)$")
    if path == nil then path, name = "", target end
    local ok, mod = pcall(self.get_submodule, self, path)
    if not ok then error((tostring(mod):gsub("^get_submodule", op)), 3) end
    local t = rawget(mod, store)[name]
    if t == nil then
      local found, any = pcall(function() return mod[name] end)
      if not found or any == nil then
        error(string.format("%s: %s has no attribute `%s`", op, mod.__name, name), 3)
      end
      error(string.format("%s: `%s` is not %s", op, name, what), 3)
    end
    return t
  end
  function Module:get_parameter(target, ...)
    nomore("get_parameter", 2, ...)
    return get_tensor(self, target, "get_parameter", "_parameters", "an nn.Parameter")
  end
  function Module:get_buffer(target, ...)
    nomore("get_buffer", 2, ...)
    return get_tensor(self, target, "get_buffer", "_buffers", "a buffer")
  end
  -- fn on every child's subtree (each distinct child once), then on self
  function Module:apply(fn, ...)
    nomore("apply", 2, ...)
    local mt = type(fn) == "table" and getmetatable(fn)
    if type(fn) ~= "function" and not (mt and mt.__call) then
      error("apply: expected a function, got " .. type(fn), 2)
    end
    for _, it in ipairs(child_items(self)) do it[2]:apply(fn) end
    fn(self)
    return self
  end
  function Module:num_parameters(...)
    nomore("num_parameters", 1, ...)
    local n = 0
    for _, p in ipairs(self:parameters()) do n = n + p:numel() end
    return n
  end

  -- -- modes, gradients, conversion ---------------------------------------------
  function Module:train(mode, ...)
    nooptions("train", 2, 2, mode, ...)
    if mode == nil then mode = true end
    if type(mode) ~= "boolean" then
      error("train: expected mode to be a boolean, got " .. type(mode), 2)
    end
    -- each child's own train runs (a subclass's override included), as
    -- PyTorch's: self.training = mode; for each child: child.train(mode)
    rawset(self, "training", mode)
    for _, it in ipairs(child_items(self)) do it[2]:train(mode) end
    return self
  end
  function Module:eval(...)
    nomore("eval", 1, ...)
    return self:train(false)
  end

  -- requires_grad_([requires_grad=true]): sets requires_grad on every
  -- parameter (frozen layers: m:requires_grad_(false)); returns self
  function Module:requires_grad_(flag, ...)
    nooptions("requires_grad_", 2, 2, flag, ...)
    if flag == nil then flag = true end
    if type(flag) ~= "boolean" then
      error("requires_grad_: expected a boolean, got " .. type(flag), 2)
    end
    for _, p in ipairs(self:parameters()) do p:requires_grad_(flag) end
    return self
  end

  -- zero_grad([set_to_none=true] | {set_to_none=}): the parameters'
  -- gradients dropped (or zeroed in place), module by module, without
  -- building the parameters() list
  local ZERO = { "set_to_none" }
  function Module:zero_grad(set_to_none, ...)
    nomore("zero_grad", 2, ...)
    if type(set_to_none) == "table" then set_to_none = check_opts("zero_grad", set_to_none, ZERO).set_to_none end
    local zero = T.optim._zero_grads
    local list = {}
    walk(self, "", function(_, m)
      local names, store = rawget(m, "_param_names"), rawget(m, "_parameters")
      local n = 0
      for i = 1, #names do
        local p = store[names[i]]
        if p ~= nil then
          n = n + 1
          list[n] = p
        end
      end
      for i = n + 1, #list do list[i] = nil end
      if n > 0 then zero(list, set_to_none) end
    end)
  end

  local function no_grad(fn)
    if T.no_grad then return T.no_grad(fn) end
    return fn()
  end
  Module._no_grad = no_grad

  -- to(dtype) / to(device) / to(dtype, device) / to{dtype=, device=}:
  -- parameters and floating buffers are replaced by converted tensors
  -- (make optimizers after moving a model, as in PyTorch)
  local TO = { "dtype", "device", "non_blocking" }
  function Module:to(a, b, ...)
    nomore("to", 3, ...)
    local dtype, device, nb
    local function take(v)
      if v == nil then return end
      if type(v) == "table" and not T.is_dtype(v) and not T.is_tensor(v) and getmetatable(v) == nil then
        check_opts("to", v, TO, 4)
        dtype, device = v.dtype or dtype, v.device or device
        if v.non_blocking ~= nil then
          if type(v.non_blocking) ~= "boolean" then
            error("Module.to: option 'non_blocking' must be a boolean, got " .. type(v.non_blocking), 4)
          end
          nb = v.non_blocking
        end
      elseif T.is_dtype(v) then dtype = v
      elseif type(v) == "string" and T[v] and T.is_dtype(T[v]) then dtype = T[v]
      else device = v end
    end
    take(a)
    take(b)
    -- a bad device is refused here, as PyTorch parses it first (a module
    -- without tensors included)
    if device ~= nil and T.device and not T.is_tensor(device) then
      local ok, e = pcall(T.device, device)
      if not ok then error((tostring(e):gsub("^.-:%d+: ", ""):gsub("^device: ", "to: ")), 2) end
    end
    return Module._convert(self, dtype, device, nb, true)
  end
  -- the body of to(): complex tensors take dtype too when with_complex
  -- (to(), PyTorch's _apply), not for double()/float()/half()/bfloat16()
  -- (PyTorch's t.double() if t.is_floating_point() else t)
  function Module._convert(self, dtype, device, nb, with_complex)
    if dtype and not (dtype.is_floating_point or dtype.is_complex) then
      error(string.format("Module.to: only floating point or complex dtypes are accepted, got %s",
        tostring(dtype)), 3)
    end
    local function conv(t, floating_only)
      if floating_only and not (t.dtype.is_floating_point or with_complex and t.dtype.is_complex) then
        return device and t:to(device, nb ~= nil and { non_blocking = nb } or nil) or t
      end
      local o = nb ~= nil and { non_blocking = nb } or nil
      if dtype and device then return t:to(dtype, device, o) end
      if dtype then return t:to(dtype) end
      if device then return t:to(device, o) end
      return t
    end
    -- each distinct tensor is converted once (memo), so parameters tied
    -- between layers (and a layer registered twice) stay tied, as PyTorch's
    -- _apply converting each Parameter object; requires_grad is kept as it
    -- was (a frozen parameter stays frozen)
    local done = {}
    local function once(t)
      local q = done[t]
      if q == nil then
        q = conv(t, true)
        done[t] = q
      end
      return q
    end
    no_grad(function()
      walk(self, "", function(_, m)
        for _, n in ipairs(m._param_names) do
          local p = m._parameters[n]
          if p ~= nil then
            local q = once(p)
            if q ~= p then
              if q.requires_grad ~= p.requires_grad then q:requires_grad_(p.requires_grad) end
              -- the gradient is converted along, as PyTorch's _apply does
              local g = p.grad
              if g ~= nil and q.grad == nil then q.grad = once(g) end
              marked[q] = true
              m._parameters[n] = q
            end
          end
        end
        for _, n in ipairs(m._buffer_names) do
          local bf = m._buffers[n]
          if bf ~= nil then m._buffers[n] = once(bf) end
        end
      end, nil, {})
    end)
    return self
  end
  -- double(), float(), half(), bfloat16(): to() that dtype
  for name, dt in pairs { double = T.float64, float = T.float32, half = T.float16, bfloat16 = T.bfloat16 } do
    Module[name] = function(self, ...)
      nomore(name, 1, ...)
      return Module._convert(self, dt, nil, nil, false)
    end
  end

  -- -- state ---------------------------------------------------------------------
  local function detached(t)
    if t.detach then return t:detach() end
    return t
  end

  local state_opts = { "torch_names", "prefix", "keep_vars" }
  local load_opts = { "strict", "torch_names" }

  -- A table of name -> tensor (parameters then buffers, sharing memory with
  -- the module); keys() in the metatable lists the names in order.
  -- {torch_names = true}: PyTorch's names, the children of a Sequential or
  -- ModuleList numbered from 0 (T.save_torch of it loads into PyTorch).
  function Module:state_dict(o, ...)
    nomore("state_dict", 2, ...)
    o = check_opts("state_dict", o, state_opts)
    if o.prefix ~= nil and type(o.prefix) ~= "string" then
      error("state_dict: option 'prefix' must be a string, got " .. type(o.prefix), 2)
    end
    if o.keep_vars ~= nil and type(o.keep_vars) ~= "boolean" then
      error("state_dict: option 'keep_vars' must be a boolean, got " .. type(o.keep_vars), 2)
    end
    local sd, keys = {}, {}
    local top = o.prefix or ""
    walk(self, "", function(prefix, m)
      local function add(n, t)
        local k = top .. (prefix == "" and n or prefix .. "." .. n)
        sd[k] = o.keep_vars and t or detached(t)
        keys[#keys + 1] = k
      end
      for _, n in ipairs(m._param_names) do
        add(o.torch_names and torch_name(m, n) or n, m._parameters[n]) -- a ParameterList's from 0
      end
      for _, n in ipairs(m._buffer_names) do
        if m._buffers[n] ~= nil and not m._nonpersistent[n] then add(n, m._buffers[n]) end
      end
    end, o.torch_names)
    return setmetatable(sd, { __index = { keys = function() return keys end } })
  end

  -- the module's tensors by state_dict name: name -> {store, key}, and the
  -- names in module order. A parameter or buffer that is nil (register_buffer
  -- (name, nil)) has no entry, as in PyTorch's _load_from_state_dict.
  local function targets_of(self, torch_names)
    local targets, order = {}, {}
    walk(self, "", function(prefix, m)
      local function add(n, store, name)
        if store[n] == nil then return end
        name = name or n
        local k = prefix == "" and name or prefix .. "." .. name
        if targets[k] == nil then order[#order + 1] = k end
        targets[k] = { store, n }
      end
      for _, n in ipairs(m._param_names) do
        add(n, m._parameters, torch_names and torch_name(m, n) or n)
      end
      for _, n in ipairs(m._buffer_names) do
        if not m._nonpersistent[n] then add(n, m._buffers) end
      end
    end, torch_names)
    return targets, order
  end

  -- the keys of sd in order: a state_dict's own order (its keys()), else sorted
  local function keys_of(sd)
    local mt = getmetatable(sd)
    local kf = mt and type(mt.__index) == "table" and mt.__index.keys
    local out, seen = {}, {}
    if type(kf) == "function" then
      for _, k in ipairs(kf()) do
        if rawget(sd, k) ~= nil then out[#out + 1] = k; seen[k] = true end
      end
    end
    local rest = {}
    for k in pairs(sd) do
      if type(k) == "string" and not seen[k] then rest[#rest + 1] = k end
    end
    table.sort(rest)
    for _, k in ipairs(rest) do out[#out + 1] = k end
    return out
  end

  -- Copies the values of sd into the module's tensors. strict (default
  -- true) makes missing and unexpected keys an error; returns the lists
  -- of missing and unexpected keys (missing in the module's order,
  -- unexpected in sd's). {torch_names = true}: sd has PyTorch's
  -- names (a Sequential's children from 0), as T.load_torch returns them.
  -- A layer may supply defaults for keys an older state_dict lacks
  -- (_state_defaults(prefix): BatchNorm's num_batches_tracked, as
  -- PyTorch's _load_from_state_dict does for a dict without a version).
  function Module:load_state_dict(sd, strict, ...)
    nomore("load_state_dict", 3, ...)
    local o = {}
    if type(strict) == "table" then
      o = check_opts("load_state_dict", strict, load_opts)
      strict = o.strict
    end
    if strict == nil then strict = true end
    if type(sd) ~= "table" then
      error(string.format("load_state_dict: expected a table of name -> tensor, got %s", type(sd)), 2)
    end
    local defaults = {}
    walk(self, "", function(prefix, m)
      if m._state_defaults then
        for k, v in pairs(m:_state_defaults(prefix == "" and "" or prefix .. ".")) do
          if rawget(sd, k) == nil then defaults[k] = v end
        end
      end
    end, o.torch_names)
    local function get(k) local v = rawget(sd, k); if v == nil then v = defaults[k] end; return v end
    local missing, unexpected = {}, {}
    local targets, order = targets_of(self, o.torch_names)
    for _, k in ipairs(order) do if get(k) == nil then missing[#missing + 1] = k end end
    for _, k in ipairs(keys_of(sd)) do
      if targets[k] == nil and T.is_tensor(sd[k]) then unexpected[#unexpected + 1] = k end
    end
    if strict and (#missing > 0 or #unexpected > 0) then
      local hint = ""
      if not o.torch_names and #unexpected > 0 then
        local as_torch = targets_of(self, true)
        for _, k in ipairs(unexpected) do
          if as_torch[k] then
            hint = " (the keys are PyTorch's names, children numbered from 0: pass {torch_names = true})"
            break
          end
        end
      end
      error(string.format("load_state_dict: missing keys: {%s}; unexpected keys: {%s}%s",
        table.concat(missing, ", "), table.concat(unexpected, ", "), hint), 2)
    end
    -- every value is checked before any is copied (a failed load leaves the
    -- module as it was; PyTorch copies the others), and every bad one is
    -- named in the error, as PyTorch's error lists them all
    local bad, copies = {}, {}
    for _, k in ipairs(order) do
      local tgt = targets[k]
      local v = get(k)
      if v ~= nil then
        local dst = tgt[1][tgt[2]]
        if not T.is_tensor(v) then
          bad[#bad + 1] = string.format("%s is not a tensor (a %s)", k, type(v))
        elseif tostring(dst.shape) ~= tostring(v.shape) then
          bad[#bad + 1] = string.format("size mismatch for %s: copying a param with shape %s, "
            .. "the shape in the current model is %s", k, tostring(v.shape), tostring(dst.shape))
        else
          copies[#copies + 1] = { dst, v }
        end
      end
    end
    if #bad > 0 then error("load_state_dict: " .. table.concat(bad, "; "), 2) end
    no_grad(function()
      for _, c in ipairs(copies) do c[1]:copy_(c[2]) end
    end)
    return missing, unexpected
  end

  -- -- printing ------------------------------------------------------------------
  function Module:extra_repr() return "" end
  -- PyTorch's Module.__repr__: the extra_repr lines, then "(name): child"
  -- (a child's later lines indented by two); one extra_repr line and no
  -- children stay on the header line
  local function addindent(str)
    return (str:gsub("\n", "\n  "))
  end
  function Module:_repr()
    local lines, nextra = {}, 0
    local extra = self:extra_repr()
    if extra ~= nil and extra ~= "" then
      for line in (extra .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
      nextra = #lines
    end
    for _, n in ipairs(self._module_names) do
      local m = self._modules[n]
      if m ~= nil then lines[#lines + 1] = "(" .. n .. "): " .. addindent(m:_repr()) end
    end
    local head = self.__name .. "("
    if #lines == 0 then return head .. ")" end
    if nextra == 1 and #lines == 1 then return head .. lines[1] .. ")" end
    return head .. "\n  " .. table.concat(lines, "\n  ") .. "\n)"
  end

  Module._is_module = is_module
  Module._is_param = is_param
  -- _state_defaults of the norm layers (PyTorch's _NormBase): a state_dict
  -- without num_batches_tracked (one saved before it existed) loads, the
  -- count set to 0
  function Module._nbt_defaults(self, prefix)
    if not self.track_running_stats or rawget(self, "_buffers").num_batches_tracked == nil then return {} end
    return { [prefix .. "num_batches_tracked"] = T.tensor(0, { dtype = T.int64 }) }
  end
  Module._mark_param = function(t) marked[t] = true; return t end
  -- made by nn.Parameter or held by a module as a parameter (the printer's
  -- "Parameter containing:")
  Module._is_marked = function(t) return marked[t] ~= nil end
  Module._iterlist = iterlist
  return Module
end
