-- Tensor methods written in Lua on top of ember.core, and the tensor
-- metatable's __index/__newindex.
return function(T, C)
  local M = C._methods
  local mt, cindex, index_get = C._Tensor_mt, C._tensor_index, C._index_get
  local type = type

  -- t.name / t:name() / t[key]. ember.core's __index is a C closure (kept
  -- as C._tensor_index); LuaJIT cannot compile a call to it, so every
  -- method call paid it in the interpreter. This Lua function dispatches the
  -- same way and is compiled: methods first, then the property getters of
  -- C._props through the C closure (so a getter's error reads exactly as
  -- before), then indexing for every key that is not a string (a tail
  -- call: its errors name the caller's line, as before). __newindex stays
  -- the C closure (assignments are not a per-call hot path).
  mt.__index = function(t, k)
    if type(k) == "string" then
      local m = M[k]
      if m ~= nil then return m end
      return cindex(t, k)
    end
    return index_get(t, k)
  end

  -- for i, sub in t:iter() do ... end: sub-tensors along dim 1 (views).
  function M.iter(t)
    if t:dim() == 0 then error("iter: iteration over a 0-d tensor", 2) end
    local n, i = t:size(1), 0
    return function()
      i = i + 1
      if i <= n then return i, t[i] end
    end
  end

  T.newaxis = setmetatable({}, { __tostring = function() return "ember.newaxis" end })
end
