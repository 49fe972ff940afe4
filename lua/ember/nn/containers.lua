-- Containers of issue 18, item 4: nn.ModuleDict, nn.ParameterList,
-- nn.ParameterDict (docs/nn.md, "Containers"). Entries are registered as
-- submodules / parameters under their keys, so state_dict, parameters() and
-- to() see them with PyTorch's names (a ParameterList's are "0", "1", ...
-- with torch_names, as a ModuleList's children).
--
-- Lua tables have no order: a dict built from a map registers its keys in
-- sorted order; an array of {key, value} pairs keeps the order given (as a
-- Python dict literal does).
return function(T, C, nn)
  local Module = nn.Module
  local nomore = require("ember.args").nomore
  local is_module = Module._is_module

  -- PyTorch's ParameterList/ParameterDict keep a Parameter as it is (a
  -- frozen one stays frozen) and make any other tensor Parameter(t)
  local function as_param(p)
    if Module._is_marked(p) then return p end
    return nn.Parameter(p)
  end

  -- {key, value} entries of a dict's initialiser (map or array of pairs)
  local function entries(op, src)
    if src == nil then return {} end
    if type(src) ~= "table" or is_module(src) or T.is_tensor(src) then
      error(string.format("%s: expected a table of entries, got %s", op, type(src)), 4)
    end
    local out = {}
    if #src > 0 then
      for i, e in ipairs(src) do
        if type(e) ~= "table" or e[1] == nil or e[2] == nil then
          error(string.format("%s: entry %d must be a {key, value} pair", op, i), 4)
        end
        out[#out + 1] = { e[1], e[2] }
      end
      return out
    end
    local keys = {}
    for k in pairs(src) do
      if type(k) ~= "string" then
        error(string.format("%s: keys must be strings, got %s", op, type(k)), 4)
      end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for _, k in ipairs(keys) do out[#out + 1] = { k, src[k] } end
    return out
  end

  local function check_key(op, k)
    if type(k) ~= "string" then error(string.format("%s: keys must be strings, got %s", op, type(k)), 3) end
    if k:find(".", 1, true) then error(string.format("%s: key \"%s\" can't contain \".\"", op, k), 3) end
  end

  -- -- ModuleDict -----------------------------------------------------------------
  local ModuleDict = Module:extend("ModuleDict")
  function ModuleDict:init(mods, ...)
    nomore("ModuleDict", 1, ...)
    for _, e in ipairs(entries("ModuleDict", mods)) do self:set(e[1], e[2]) end
  end
  function ModuleDict:set(key, m)
    check_key("ModuleDict", key)
    if not is_module(m) then error(string.format("ModuleDict: %s is not a Module", tostring(key)), 2) end
    self:add_module(key, m)
    return self
  end
  function ModuleDict:get(key) return self._modules[key] end
  function ModuleDict:contains(key) return self._modules[key] ~= nil end
  function ModuleDict:keys()
    local out = {}
    for i, n in ipairs(self._module_names) do out[i] = n end
    return out
  end
  function ModuleDict:values()
    local out = {}
    for i, n in ipairs(self._module_names) do out[i] = self._modules[n] end
    return out
  end
  function ModuleDict:items()
    local out = {}
    for i, n in ipairs(self._module_names) do out[i] = { n, self._modules[n] } end
    return out
  end
  function ModuleDict:pop(key)
    local m = self._modules[key]
    if m == nil then error(string.format("ModuleDict: no module named %s", tostring(key)), 2) end
    self:add_module(key, nil)
    return m
  end
  function ModuleDict:clear()
    for _, n in ipairs(self:keys()) do self:add_module(n, nil) end
  end
  function ModuleDict:update(mods)
    for _, e in ipairs(entries("ModuleDict", mods)) do self:set(e[1], e[2]) end
    return self
  end
  function ModuleDict:len() return #self._module_names end
  function ModuleDict:forward() error("nn.ModuleDict: a ModuleDict has no forward; call its modules", 2) end
  nn.ModuleDict = ModuleDict

  -- -- ParameterList --------------------------------------------------------------
  local ParameterList = Module:extend("ParameterList")
  function ParameterList:init(params, ...)
    nomore("ParameterList", 1, ...)
    if params ~= nil and (type(params) ~= "table" or T.is_tensor(params)) then
      error("ParameterList: expected an array of tensors, got " .. type(params), 3)
    end
    for _, p in ipairs(params or {}) do self:append(p) end
  end
  function ParameterList:append(p)
    if not T.is_tensor(p) then error("ParameterList: expected a tensor, got " .. type(p), 2) end
    local i = #self._param_names + 1
    -- stored in slot i (ipairs(list), list[i]: Module's slot store)
    self:register_parameter(tostring(i), as_param(p))
    return self
  end
  function ParameterList:extend(params)
    for _, p in ipairs(params) do self:append(p) end
    return self
  end
  function ParameterList:len() return #self._param_names end
  function ParameterList:forward() error("nn.ParameterList: a ParameterList has no forward", 2) end
  function ParameterList:extra_repr()
    local lines = {}
    for i, n in ipairs(self._param_names) do
      local p = self._parameters[n]
      lines[i] = string.format("  (%d): Parameter containing: [%s of size %s]", i, tostring(p.dtype),
        table.concat(p.shape:totable(), "x"))
    end
    -- PyTorch's lines, "  (0): ..." each: Module's printout indents them
    -- again (ParameterList(\n    (1): ...\n)), one entry stays on the header line
    return table.concat(lines, "\n")
  end
  ParameterList._torch_zero_based = true
  ParameterList._slot_params = true
  nn.ParameterList = ParameterList

  -- -- ParameterDict --------------------------------------------------------------
  local ParameterDict = Module:extend("ParameterDict")
  function ParameterDict:init(params, ...)
    nomore("ParameterDict", 1, ...)
    for _, e in ipairs(entries("ParameterDict", params)) do self:set(e[1], e[2]) end
  end
  function ParameterDict:set(key, p)
    check_key("ParameterDict", key)
    if not T.is_tensor(p) then error(string.format("ParameterDict: %s is not a tensor", tostring(key)), 2) end
    self:register_parameter(key, as_param(p))
    return self
  end
  function ParameterDict:get(key) return self._parameters[key] end
  function ParameterDict:contains(key) return self._parameters[key] ~= nil end
  function ParameterDict:keys()
    local out = {}
    for i, n in ipairs(self._param_names) do out[i] = n end
    return out
  end
  function ParameterDict:values()
    local out = {}
    for i, n in ipairs(self._param_names) do out[i] = self._parameters[n] end
    return out
  end
  function ParameterDict:items()
    local out = {}
    for i, n in ipairs(self._param_names) do out[i] = { n, self._parameters[n] } end
    return out
  end
  function ParameterDict:pop(key)
    local p = self._parameters[key]
    if p == nil then error(string.format("ParameterDict: no parameter named %s", tostring(key)), 2) end
    self:register_parameter(key, nil)
    return p
  end
  function ParameterDict:update(params)
    for _, e in ipairs(entries("ParameterDict", params)) do self:set(e[1], e[2]) end
    return self
  end
  function ParameterDict:len() return #self._param_names end
  function ParameterDict:forward() error("nn.ParameterDict: a ParameterDict has no forward", 2) end
  function ParameterDict:extra_repr()
    local lines = {}
    for i, n in ipairs(self._param_names) do
      local p = self._parameters[n]
      lines[i] = string.format("  (%s): Parameter containing: [%s of size %s]", n, tostring(p.dtype),
        table.concat(p.shape:totable(), "x"))
    end
    return table.concat(lines, "\n")
  end
  nn.ParameterDict = ParameterDict
end
