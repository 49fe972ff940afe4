-- The index family and assembling (issue 4): the parts written in Lua.
-- The C module registers the kernels' entry points (index_select, gather,
-- scatter_, put_, masked_*, nonzero, where, cat/stack/split/...); here are
-- the out-of-place forms PyTorch offers next to its in-place ones (a clone
-- followed by the in-place op) and the method spelling of where.
return function(T, C)
  local M = C._methods

  -- masked_fill_/index_fill_ with a 0-d value tensor that requires grad: the
  -- C op reads the value as a number, which would cut the graph; as PyTorch,
  -- the value gets the sum of the gradient where it was written (a where)
  local function grad_value(v)
    return T.is_tensor(v) and v.requires_grad and v:dim() == 0 and T.is_grad_enabled()
  end
  local c_masked_fill_, c_index_fill_ = M.masked_fill_, M.index_fill_
  M.masked_fill_ = function(t, mask, v, ...)
    if select("#", ...) > 0 or not grad_value(v) or not T.is_tensor(t) or not T.is_tensor(mask) then
      return c_masked_fill_(t, mask, v, ...)
    end
    if mask.dtype ~= T.bool then return c_masked_fill_(t, mask, v) end -- its own error
    return t:copy_(T.where(mask, v:to(t.dtype), t))
  end
  T.masked_fill_ = M.masked_fill_
  M.index_fill_ = function(t, dim, idx, v, ...)
    if select("#", ...) > 0 or not grad_value(v) or not T.is_tensor(t) or type(dim) ~= "number"
      or not T.is_tensor(idx) then
      return c_index_fill_(t, dim, idx, v, ...)
    end
    local nd = math.max(t:dim(), 1)
    local d = dim < 0 and dim + nd + 1 or dim
    if d < 1 or d > nd then return c_index_fill_(t, dim, idx, v) end -- its own error
    local n = t:dim() == 0 and 1 or t:size(d)
    local m = T.zeros(n, { dtype = T.bool, device = t.device })
    c_index_fill_(m, 1, idx, true)
    if t:dim() > 0 then
      local shape = {}
      for i = 1, t:dim() do shape[i] = i == d and n or 1 end
      m = m:reshape(shape)
    else
      m = m:reshape({})
    end
    return t:copy_(T.where(m, v:to(t.dtype), t))
  end
  T.index_fill_ = M.index_fill_

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
