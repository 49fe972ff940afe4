-- Tensor methods written in Lua on top of ember.core.
return function(T, C)
  local M = C._methods

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
