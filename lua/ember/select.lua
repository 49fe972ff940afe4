-- The index family and assembling (issue 4): the parts written in Lua.
-- The C module registers the kernels' entry points (index_select, gather,
-- scatter_, put_, masked_*, nonzero, where, cat/stack/split/...); here are
-- the out-of-place forms PyTorch offers next to its in-place ones (a clone
-- followed by the in-place op) and the method spelling of where.
return function(T, C)
  local M = C._methods

  local function out_of_place(name)
    local inplace = M[name .. "_"]
    local f = function(t, ...)
      if not T.is_tensor(t) then
        error(name .. ": expected a tensor for argument #1, got " .. type(t), 2)
      end
      return inplace(t:clone(), ...)
    end
    M[name] = f
    T[name] = f
  end
  for _, name in ipairs { "scatter", "scatter_add", "scatter_reduce", "index_fill",
                          "index_copy", "index_add", "masked_fill", "masked_scatter",
                          "put" } do
    out_of_place(name)
  end

  -- t:where(cond, other) is T.where(cond, t, other), as in PyTorch.
  function M.where(t, cond, other, ...)
    return T.where(cond, t, other, ...)
  end
end
